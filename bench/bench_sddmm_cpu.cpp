// CPU SDDMM benchmark through the public C API.
//
// Patterns: "ml20m", a power law with the shape of MovieLens-20M (138493 x 26744, 20M ratings)
// scaled by --scale, and "hugerow", where one dense row holds 8/9 of the nonzeros.
// For K in {32, 128} it times P = (A B^T) .* S with ROW_SPLIT, NNZ_SPLIT and the AUTO choice
// on all threads, ROW_SPLIT on one thread, and the naive single-threaded scalar loop (the
// peer), and prints the median (and min) of --runs runs, GFLOP/s (2 K nnz flops) and effective
// bandwidth against the memory floor (12 nnz + 4 K (M + N) bytes: column index, S and P values,
// A and B once).
//
//   bench_sddmm_cpu [--scale 0.2] [--threads 0] [--runs 7] [--seed 1]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench_check.h"
#include "bench_flags.h"
#include "sparsefac/sparsefac.h"

namespace {

using bench::check;

struct Csr {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> off;
  std::vector<int32_t> col;
  std::vector<float> val;
  int64_t nnz() const { return static_cast<int64_t>(col.size()); }
};

// Sorted distinct (row, col) keys -> CSR with values in [1, 5].
Csr csr_from_keys(int64_t rows, int64_t cols, std::vector<int64_t>& keys, std::mt19937_64& rng) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  Csr m;
  m.rows = rows;
  m.cols = cols;
  m.off.assign(static_cast<size_t>(rows) + 1, 0);
  m.col.reserve(keys.size());
  m.val.reserve(keys.size());
  std::uniform_real_distribution<float> rating(1.0f, 5.0f);
  for (int64_t key : keys) {
    ++m.off[static_cast<size_t>(key / cols) + 1];
    m.col.push_back(static_cast<int32_t>(key % cols));
    m.val.push_back(rating(rng));
  }
  std::partial_sum(m.off.begin(), m.off.end(), m.off.begin());
  return m;
}

// Ids in [0, n) with density ~ x^-skew, shuffled so heavy ids are spread out.
std::function<int64_t(std::mt19937_64&)> power_law(int64_t n, double skew, std::mt19937_64& rng) {
  auto perm = std::make_shared<std::vector<int64_t>>(static_cast<size_t>(n));
  std::iota(perm->begin(), perm->end(), 0);
  std::shuffle(perm->begin(), perm->end(), rng);
  return [n, perm, exponent = 1.0 / (1.0 - skew)](std::mt19937_64& g) {
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(g);
    const auto x = static_cast<int64_t>(static_cast<double>(n) * std::pow(u, exponent));
    return (*perm)[static_cast<size_t>(std::min(x, n - 1))];
  };
}

// MovieLens-20M-like: users (rows) skew 0.3, items (columns) skew 0.4; the heaviest row and
// column hold about as many ratings as MovieLens's heaviest user and movie.
Csr ml20m_like(double scale, std::mt19937_64& rng) {
  const auto rows = std::max<int64_t>(1, std::llround(138493 * scale));
  const auto cols = std::max<int64_t>(1, std::llround(26744 * scale));
  const auto nnz = std::max<int64_t>(1, std::llround(20000263 * scale));
  auto row = power_law(rows, 0.3, rng), col = power_law(cols, 0.4, rng);
  std::vector<int64_t> keys(static_cast<size_t>(nnz));
  for (auto& key : keys) key = row(rng) * cols + col(rng);
  return csr_from_keys(rows, cols, keys, rng);
}

// 1000 rows; row 0 is dense (N = 2e6 * scale columns), the others share N / 8 nonzeros.
Csr huge_row(double scale, std::mt19937_64& rng) {
  const int64_t rows = 1000;
  const auto cols = std::max<int64_t>(2, std::llround(2e6 * scale));
  std::vector<int64_t> keys(static_cast<size_t>(cols + cols / 8));
  for (int64_t c = 0; c < cols; ++c) keys[static_cast<size_t>(c)] = c;
  std::uniform_int_distribution<int64_t> r(1, rows - 1), c(0, cols - 1);
  for (size_t e = static_cast<size_t>(cols); e < keys.size(); ++e) keys[e] = r(rng) * cols + c(rng);
  return csr_from_keys(rows, cols, keys, rng);
}

// The peer: one thread, one scalar accumulator (no -ffast-math, so the compiler keeps the
// summation order and emits scalar code).
void naive_sddmm(const Csr& s, const float* a, const float* b, int64_t k, float* p) {
  for (int64_t i = 0; i < s.rows; ++i) {
    for (int64_t e = s.off[i]; e < s.off[i + 1]; ++e) {
      const float* bj = b + int64_t{s.col[e]} * k;
      float d = 0.0f;
      for (int64_t t = 0; t < k; ++t) d += a[i * k + t] * bj[t];
      p[e] = d * s.val[e];
    }
  }
}

struct Timing {
  double median, best;  // seconds
};

Timing time_runs(int runs, const std::function<void()>& fn) {
  fn();  // warm-up: page faults, caches, thread team
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front()};
}

const char* algorithm_name(sfac_sddmm_algorithm a) {
  switch (a) {
    case SFAC_SDDMM_ALG_AUTO:
      return "AUTO";
    case SFAC_SDDMM_ALG_ROW_SPLIT:
      return "ROW_SPLIT";
    case SFAC_SDDMM_ALG_NNZ_SPLIT:
      return "NNZ_SPLIT";
    case SFAC_SDDMM_ALG_TILED:
      return "TILED";
    case SFAC_SDDMM_ALG_CUSPARSE:
      return "CUSPARSE";
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  bench::Flags flags(argc, argv, "[--scale 0.2] [--threads 0 (all)] [--runs 7] [--seed 1]");
  const double scale = flags.positive("--scale", 0.2, 16.0);
  const int threads = static_cast<int>(flags.integer("--threads", 0, 0, 4096));
  const int runs = static_cast<int>(flags.integer("--runs", 7, 1, bench::Flags::kMaxReps));
  const uint64_t seed = static_cast<uint64_t>(flags.integer("--seed", 1, 0, INT64_MAX));
  flags.done();

  sfac_context *ctx = nullptr, *ctx1 = nullptr;
  check(sfac_context_create(SFAC_BACKEND_CPU, 0, threads, seed, &ctx), "context");
  check(sfac_context_create(SFAC_BACKEND_CPU, 0, 1, seed, &ctx1), "context (1 thread)");
  const char* device = nullptr;
  check(sfac_context_get_device_name(ctx, &device), "device name");
  int nthreads = 0;
  check(sfac_context_get_num_threads(ctx, &nthreads), "threads");
  std::printf(
      "bench_sddmm_cpu: %s, scale %g, median and min of %d runs, SCALED alpha=1 beta=0\n"
      "GFLOP/s, GB/s (memory floor / time) and vs_naive (naive time / ours) use the median\n\n",
      device, scale, runs);
  std::printf("%-7s %9s %9s %9s %4s %-21s %3s %9s %9s %8s %8s %8s\n", "pattern", "M", "N", "nnz",
              "K", "algorithm", "thr", "median_ms", "min_ms", "GFLOP/s", "GB/s", "vs_naive");

  std::mt19937_64 rng(seed);
  const struct {
    const char* name;
    Csr (*make)(double, std::mt19937_64&);
  } patterns[] = {{"ml20m", ml20m_like}, {"hugerow", huge_row}};
  for (const auto& pattern : patterns) {
    const Csr host = pattern.make(scale, rng);
    sfac_sparse* s = nullptr;
    sfac_sparse* s1 = nullptr;
    check(sfac_sparse_create_csr(ctx, host.rows, host.cols, host.off.data(), host.col.data(),
                                 host.val.data(), host.nnz(), SFAC_SPARSE_DEFAULT, &s),
          "create S");
    check(sfac_sparse_create_csr(ctx1, host.rows, host.cols, host.off.data(), host.col.data(),
                                 host.val.data(), host.nnz(), SFAC_SPARSE_DEFAULT, &s1),
          "create S (1 thread)");
    const double nnz = static_cast<double>(host.nnz());
    for (int64_t k : {32, 128}) {
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      std::vector<float> a(static_cast<size_t>(host.rows * k)),
          b(static_cast<size_t>(host.cols * k));
      for (auto& x : a) x = u(rng);
      for (auto& x : b) x = u(rng);
      std::vector<float> p_naive(static_cast<size_t>(host.nnz()));
      const Timing t_naive =
          time_runs(runs, [&] { naive_sddmm(host, a.data(), b.data(), k, p_naive.data()); });

      const double flops = 2.0 * static_cast<double>(k) * nnz;
      const double bytes =
          12.0 * nnz + 4.0 * static_cast<double>(k) * static_cast<double>(host.rows + host.cols);
      auto row = [&](const std::string& algorithm, int thr, Timing t) {
        std::printf("%-7s %9lld %9lld %9.0f %4lld %-21s %3d %9.3f %9.3f %8.2f %8.2f %8.2f\n",
                    pattern.name, static_cast<long long>(host.rows),
                    static_cast<long long>(host.cols), nnz, static_cast<long long>(k),
                    algorithm.c_str(), thr, t.median * 1e3, t.best * 1e3, flops / t.median * 1e-9,
                    bytes / t.median * 1e-9, t_naive.median / t.median);
      };
      row("naive scalar (peer)", 1, t_naive);

      struct Run {
        sfac_context* ctx;
        sfac_sparse* s;
        sfac_sddmm_algorithm algorithm;
        int threads;
      };
      const Run variants[] = {{ctx1, s1, SFAC_SDDMM_ALG_ROW_SPLIT, 1},
                              {ctx, s, SFAC_SDDMM_ALG_ROW_SPLIT, nthreads},
                              {ctx, s, SFAC_SDDMM_ALG_NNZ_SPLIT, nthreads},
                              {ctx, s, SFAC_SDDMM_ALG_AUTO, nthreads}};
      for (const Run& v : variants) {
        sfac_dense *da = nullptr, *db = nullptr;
        check(sfac_dense_create(v.ctx, host.rows, k, SFAC_DTYPE_FLOAT32, a.data(), &da), "A");
        check(sfac_dense_create(v.ctx, host.cols, k, SFAC_DTYPE_FLOAT32, b.data(), &db), "B");
        sfac_sparse* p = nullptr;
        check(sfac_sparse_create_like(v.s, nullptr, &p), "create P");
        sfac_sddmm_plan* plan = nullptr;
        check(sfac_sddmm_plan_create(v.ctx, v.s, k, v.algorithm, &plan), "plan");
        const Timing t = time_runs(runs, [&] {
          check(sfac_sddmm(v.ctx, SFAC_SDDMM_SCALED, 1.0f, da, db, v.s, 0.0f, p, plan), "sddmm");
        });
        // Same products, different summation order: compare relative to sum |a b| |s| <= K*5.
        std::vector<float> got(static_cast<size_t>(host.nnz()));
        check(sfac_sparse_download_csr(p, nullptr, 0, nullptr, got.data(),
                                       static_cast<int64_t>(got.size())),
              "download");
        double worst = 0.0;
        for (size_t e = 0; e < got.size(); ++e) {
          worst = std::max(worst, std::fabs(double{got[e]} - double{p_naive[e]}));
        }
        if (worst > 1e-5 * 5.0 * static_cast<double>(k)) {
          std::fprintf(stderr, "result differs from the naive loop by %g\n", worst);
          return 1;
        }
        sfac_sddmm_algorithm resolved = v.algorithm;
        check(sfac_sddmm_plan_get_algorithm(plan, &resolved), "get algorithm");
        std::string name = algorithm_name(resolved);
        if (v.algorithm == SFAC_SDDMM_ALG_AUTO) name = "AUTO -> " + name;
        row(name, v.threads, t);
        sfac_sddmm_plan_destroy(plan);
        sfac_sparse_destroy(p);
        sfac_dense_destroy(da);
        sfac_dense_destroy(db);
      }
    }
    sfac_sparse_destroy(s);
    sfac_sparse_destroy(s1);
  }
  sfac_context_destroy(ctx);
  sfac_context_destroy(ctx1);
  return 0;
}
