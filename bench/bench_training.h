// What the training benchmarks (bench_als, bench_sgd) share: synthetic ratings of a target size,
// a copy into another context, the median of a run's times, and the time stamp and number
// formats of their reports.
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

// Ratings on the CPU context: `target` nonzeros as nearly as the generator gives them (duplicate
// draws, and for implicit data the kept third, make it fall short; one retry with proportionally
// more draws when it is more than 2% short). *runs = generator runs.
inline sfac_sparse* synthesize(sfac_context* cpu, sfac_feedback feedback, int64_t users,
                               int64_t items, int64_t target, int64_t planted_rank, double noise,
                               double skew, int* runs) {
  int64_t request = target;
  for (int attempt = 0;; ++attempt) {
    *runs = attempt + 1;
    sfac_sparse* ratings = nullptr;
    check(sfac_synthesize_ratings(cpu, feedback, users, items, request, planted_rank, noise, skew,
                                  &ratings, nullptr, nullptr),
          "synthesize ratings");
    int64_t got = 0;
    check(sfac_sparse_get_shape(ratings, nullptr, nullptr, &got), "shape");
    if (attempt == 1 || got >= target - target / 50 || got == 0 || request == users * items) {
      return ratings;
    }
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
  check(sfac_sparse_download_csr(ratings, offsets.data(), columns.data(), values.data()),
        "download CSR");
  sfac_sparse* out = nullptr;
  check(sfac_sparse_create_csr(ctx, rows, cols, offsets.data(), columns.data(), values.data(),
                               SFAC_SPARSE_DEFAULT, &out),
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

}  // namespace bench
