// What the training benchmarks (bench_als, bench_sgd) share: their two contexts and the report's
// header, synthetic ratings of a target size, a copy into another context, the median of a
// run's times, and the time stamp and number formats of their reports.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "bench_check.h"
#include "sparsefac/sparsefac.h"

namespace bench {

// Explicit ratings (planted dot + noise) with the planted part multiplied by `signal`: each value
// becomes value - (1 - signal) p_u . q_i from the planted factors. The noise, and so the best
// achievable RMSE, stays; the mean predictor's RMSE becomes about sqrt(signal^2 + noise^2).
// Destroys `ratings` and returns the rescaled copy.
inline sfac_sparse* scale_signal(sfac_context* cpu, sfac_sparse* ratings,
                                 const sfac_dense* user_factors, const sfac_dense* item_factors,
                                 double signal) {
  int64_t rows = 0, cols = 0, nnz = 0, rank = 0;
  check(sfac_sparse_get_shape(ratings, &rows, &cols, &nnz), "shape");
  check(sfac_dense_get_shape(user_factors, nullptr, &rank), "planted rank");
  std::vector<float> p(static_cast<size_t>(rows * rank)), q(static_cast<size_t>(cols * rank));
  check(sfac_dense_download(user_factors, p.data(), static_cast<int64_t>(p.size())),
        "download planted user factors");
  check(sfac_dense_download(item_factors, q.data(), static_cast<int64_t>(q.size())),
        "download planted item factors");
  std::vector<int64_t> offsets(static_cast<size_t>(rows) + 1);
  std::vector<int32_t> columns(static_cast<size_t>(nnz));
  std::vector<float> values(static_cast<size_t>(nnz));
  check(
      sfac_sparse_download_csr(ratings, offsets.data(), static_cast<int64_t>(offsets.size()),
                               columns.data(), values.data(), static_cast<int64_t>(columns.size())),
      "download CSR");
  sfac_sparse_destroy(ratings);
  const auto k = static_cast<size_t>(rank);
  for (size_t u = 0; u < static_cast<size_t>(rows); ++u) {
    for (int64_t e = offsets[u]; e < offsets[u + 1]; ++e) {
      const float* pu = p.data() + u * k;
      const float* qi = q.data() + static_cast<size_t>(columns[static_cast<size_t>(e)]) * k;
      double dot = 0.0;
      for (size_t f = 0; f < k; ++f) dot += double{pu[f]} * qi[f];
      values[static_cast<size_t>(e)] -= static_cast<float>((1.0 - signal) * dot);
    }
  }
  sfac_sparse* out = nullptr;
  check(sfac_sparse_create_csr(cpu, rows, cols, offsets.data(), columns.data(), values.data(),
                               static_cast<int64_t>(columns.size()), SFAC_SPARSE_DEFAULT, &out),
        "rescaled ratings");
  return out;
}

// Ratings on the CPU context: `target` nonzeros as nearly as the generator gives them (duplicate
// draws, and for implicit data the kept third, make it fall short; one retry with proportionally
// more draws when it is more than 2% short). *runs = generator runs. Explicit feedback: the
// planted part times `signal` (scale_signal).
inline sfac_sparse* synthesize(sfac_context* cpu, sfac_feedback feedback, int64_t users,
                               int64_t items, int64_t target, int64_t planted_rank, double noise,
                               double skew, int* runs, double signal = 1.0) {
  int64_t request = target;
  const bool rescale = signal != 1.0 && feedback == SFAC_FEEDBACK_EXPLICIT;
  for (int attempt = 0;; ++attempt) {
    *runs = attempt + 1;
    sfac_sparse* ratings = nullptr;
    sfac_dense *user_factors = nullptr, *item_factors = nullptr;
    check(sfac_synthesize_ratings(cpu, feedback, users, items, request, planted_rank, noise, skew,
                                  &ratings, rescale ? &user_factors : nullptr,
                                  rescale ? &item_factors : nullptr),
          "synthesize ratings");
    int64_t got = 0;
    check(sfac_sparse_get_shape(ratings, nullptr, nullptr, &got), "shape");
    if (attempt == 1 || got >= target - target / 50 || got == 0 || request == users * items) {
      if (rescale) ratings = scale_signal(cpu, ratings, user_factors, item_factors, signal);
      sfac_dense_destroy(user_factors);
      sfac_dense_destroy(item_factors);
      return ratings;
    }
    sfac_dense_destroy(user_factors);
    sfac_dense_destroy(item_factors);
    sfac_sparse_destroy(ratings);
    const double more =
        static_cast<double>(request) * static_cast<double>(target) / static_cast<double>(got);
    request = std::min(users * items, static_cast<int64_t>(std::llround(more)));
  }
}

// A copy of `ratings` in `ctx` (through host CSR; the host arrays are freed on return).
inline sfac_sparse* copy_to(sfac_context* ctx, const sfac_sparse* ratings) {
  int64_t rows = 0, cols = 0, nnz = 0;
  check(sfac_sparse_get_shape(ratings, &rows, &cols, &nnz), "shape");
  std::vector<int64_t> offsets(static_cast<size_t>(rows) + 1);
  std::vector<int32_t> columns(static_cast<size_t>(nnz));
  std::vector<float> values(static_cast<size_t>(nnz));
  check(
      sfac_sparse_download_csr(ratings, offsets.data(), static_cast<int64_t>(offsets.size()),
                               columns.data(), values.data(), static_cast<int64_t>(columns.size())),
      "download CSR");
  sfac_sparse* out = nullptr;
  check(sfac_sparse_create_csr(ctx, rows, cols, offsets.data(), columns.data(), values.data(),
                               static_cast<int64_t>(columns.size()), SFAC_SPARSE_DEFAULT, &out),
        "copy the ratings to another context");
  return out;
}

inline double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  const size_t h = t.size() / 2;
  return t.size() % 2 ? t[h] : 0.5 * (t[h - 1] + t[h]);
}

inline std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

inline std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// The CPU context, and the CUDA context where a device is usable (else null).
struct Contexts {
  sfac_context* cpu = nullptr;
  sfac_context* gpu = nullptr;
};

// Opens both contexts and prints the report's first lines: the tool, the time, the library's
// version, the command line and the two devices (or why there is no CUDA one).
inline Contexts open_contexts(const char* tool, int argc, char** argv, int threads, int device,
                              uint64_t seed) {
  std::string command = argv[0];
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  Contexts c;
  check(sfac_context_create(SFAC_BACKEND_CPU, 0, threads, seed, &c.cpu), "CPU context");
  const char* cpu_name = nullptr;
  check(sfac_context_get_device_name(c.cpu, &cpu_name), "device name");
  std::string gpu_note;
  if (const sfac_status s = sfac_context_create(SFAC_BACKEND_CUDA, device, threads, seed, &c.gpu);
      s != SFAC_OK) {
    gpu_note = std::string(sfac_status_string(s)) + ": " + sfac_last_error();
    c.gpu = nullptr;
  }
  const char* gpu_name = nullptr;
  if (c.gpu) check(sfac_context_get_device_name(c.gpu, &gpu_name), "device name");
  std::printf("%s %s, libsparsefac %s\n", tool, utc_now().c_str(), sfac_version_string());
  std::printf("command: %s\n", command.c_str());
  std::printf("CUDA: %s\n",
              c.gpu ? gpu_name : ("unavailable, timing the CPU only (" + gpu_note + ")").c_str());
  std::printf("CPU:  %s\n", cpu_name);
  return c;
}

}  // namespace bench
