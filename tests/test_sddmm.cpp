// SDDMM on the CPU backend, through the public C API, against an fp64 reference.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "huge_pattern.h"
#include "sfac_test.h"

using namespace sfac_test;

namespace {

constexpr sfac_sddmm_mode kModes[] = {SFAC_SDDMM_SCALED, SFAC_SDDMM_PATTERN, SFAC_SDDMM_RESIDUAL};
constexpr sfac_sddmm_algorithm kAlgorithms[] = {SFAC_SDDMM_ALG_ROW_SPLIT, SFAC_SDDMM_ALG_NNZ_SPLIT,
                                                SFAC_SDDMM_ALG_AUTO};

// Host CSR with sorted, distinct columns per row.
struct Csr {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> off{0};
  std::vector<int32_t> col;
  std::vector<float> val;
  int64_t nnz() const { return static_cast<int64_t>(col.size()); }
};

// Row i gets min(lengths[i], cols) distinct random columns; values uniform in [-2, 2].
Csr csr_from_lengths(int64_t cols, const std::vector<int64_t>& lengths, std::mt19937_64& rng) {
  Csr m;
  m.rows = static_cast<int64_t>(lengths.size());
  m.cols = cols;
  std::vector<int32_t> pool(static_cast<size_t>(cols));
  std::iota(pool.begin(), pool.end(), 0);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  for (int64_t len : lengths) {
    len = std::min(len, cols);
    for (int64_t t = 0; t < len; ++t) {  // partial Fisher-Yates: len distinct columns
      std::uniform_int_distribution<int64_t> pick(t, cols - 1);
      std::swap(pool[static_cast<size_t>(t)], pool[static_cast<size_t>(pick(rng))]);
    }
    std::vector<int32_t> row(pool.begin(), pool.begin() + len);
    std::sort(row.begin(), row.end());
    for (int32_t c : row) {
      m.col.push_back(c);
      m.val.push_back(value(rng));
    }
    m.off.push_back(m.nnz());
  }
  return m;
}

// Log-uniform row lengths in [0, max_len): a power law (density ~ 1/length) with empty rows.
std::vector<int64_t> power_law_lengths(int64_t rows, int64_t max_len, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, std::log(static_cast<double>(max_len)));
  std::vector<int64_t> lengths(static_cast<size_t>(rows));
  for (auto& len : lengths) len = static_cast<int64_t>(std::exp(u(rng))) - 1;
  return lengths;
}

std::vector<int64_t> uniform_lengths(int64_t rows, int64_t lo, int64_t hi, std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> u(lo, hi);
  std::vector<int64_t> lengths(static_cast<size_t>(rows));
  for (auto& len : lengths) len = u(rng);
  return lengths;
}

// Row `huge` holds most nonzeros; the others have 0 or 1.
std::vector<int64_t> huge_row_lengths(int64_t rows, int64_t huge, int64_t huge_len,
                                      std::mt19937_64& rng) {
  std::vector<int64_t> lengths = uniform_lengths(rows, 0, 1, rng);
  lengths[static_cast<size_t>(huge)] = huge_len;
  return lengths;
}

std::vector<float> random_floats(int64_t n, float lo, float hi, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(rng);
  return v;
}

Sparse make_sparse(sfac_context* ctx, const Csr& m) {
  sfac_sparse* out = nullptr;
  EXPECT_EQ(sfac_sparse_create_csr(ctx, m.rows, m.cols, m.off.data(), m.col.data(), m.val.data(),
                                   m.nnz(), SFAC_SPARSE_DEFAULT, &out),
            SFAC_OK)
      << sfac_last_error();
  return Sparse(out);
}

Sparse make_like(const sfac_sparse* pattern, const std::vector<float>& values) {
  sfac_sparse* out = nullptr;
  EXPECT_EQ(sfac_sparse_create_like(pattern, values.empty() ? nullptr : values.data(), &out),
            SFAC_OK)
      << sfac_last_error();
  return Sparse(out);
}

Dense make_dense(sfac_context* ctx, int64_t rows, int64_t cols, const std::vector<float>& data) {
  sfac_dense* out = nullptr;
  EXPECT_EQ(sfac_dense_create(ctx, rows, cols, SFAC_DTYPE_FLOAT32,
                              data.empty() ? nullptr : data.data(), &out),
            SFAC_OK)
      << sfac_last_error();
  return Dense(out);
}

std::vector<float> values_of(const sfac_sparse* m) {
  int64_t nnz = 0;
  EXPECT_EQ(sfac_sparse_get_shape(m, nullptr, nullptr, &nnz), SFAC_OK);
  std::vector<float> v(static_cast<size_t>(nnz));
  EXPECT_EQ(
      sfac_sparse_download_csr(m, nullptr, 0, nullptr, v.data(), static_cast<int64_t>(v.size())),
      SFAC_OK);
  return v;
}

// Dense factors A (rows x k) and B (cols x k), entries uniform in [-1, 1], host and library.
struct Factors {
  int64_t k = 0;
  std::vector<float> a, b;
  Dense da, db;
};

Factors make_factors(sfac_context* ctx, int64_t rows, int64_t cols, int64_t k,
                     std::mt19937_64& rng) {
  Factors f;
  f.k = k;
  f.a = random_floats(rows * k, -1.0f, 1.0f, rng);
  f.b = random_floats(cols * k, -1.0f, 1.0f, rng);
  f.da = make_dense(ctx, rows, k, f.a);
  f.db = make_dense(ctx, cols, k, f.b);
  return f;
}

// A matrix with the pattern of s whose every value is NaN. create_like and set_values only
// accept finite values, so the NaNs come from the library itself: with A = B = 1e20 every dot
// product overflows to inf, and SCALED multiplies it by S_ij = 0.
Sparse nan_like(sfac_context* ctx, const sfac_sparse* s) {
  int64_t rows = 0, cols = 0;
  EXPECT_EQ(sfac_sparse_get_shape(s, &rows, &cols, nullptr), SFAC_OK);
  Sparse zeros = make_like(s, {});
  Sparse p = make_like(s, {});
  Dense a = make_dense(ctx, rows, 1, std::vector<float>(static_cast<size_t>(rows), 1e20f));
  Dense b = make_dense(ctx, cols, 1, std::vector<float>(static_cast<size_t>(cols), 1e20f));
  EXPECT_EQ(sfac_sddmm(ctx, SFAC_SDDMM_SCALED, 1.0f, a.get(), b.get(), zeros.get(), 0.0f, p.get(),
                       nullptr),
            SFAC_OK)
      << sfac_last_error();
  for (float v : values_of(p.get())) EXPECT_TRUE(std::isnan(v)) << v;
  return p;
}

// Checks P (new values) against the fp64 reference computed from S's values, the factors and
// P's old values (ignored when beta == 0). The bound holds for any summation order of the K
// float products: |error of d| <= (K - 1) u sum_t |a_it b_jt| to first order; the few
// roundings after it (times S_ij, minus S_ij, alpha, beta, the final add) are covered by K + 8.
void expect_matches_reference(const Csr& pattern, const std::vector<float>& s_values,
                              const Factors& f, sfac_sddmm_mode mode, float alpha, float beta,
                              const std::vector<float>& p_old, const std::vector<float>& p_new,
                              const std::string& what) {
  ASSERT_EQ(p_new.size(), static_cast<size_t>(pattern.nnz())) << what;
  const double rel = static_cast<double>(f.k + 8) * std::ldexp(1.0, -24);
  int64_t bad = 0;
  std::string first;
  for (int64_t i = 0; i < pattern.rows; ++i) {
    for (int64_t e = pattern.off[i]; e < pattern.off[i + 1]; ++e) {
      const int64_t j = pattern.col[e];
      const Dot dot = reference_dot(f.a, f.b, i, j, f.k);
      const double d = dot.value, magnitude = dot.magnitude;
      const double s = s_values[e];
      double value = 0.0, bound = 0.0;
      switch (mode) {
        case SFAC_SDDMM_SCALED:
          value = d * s, bound = magnitude * std::fabs(s);
          break;
        case SFAC_SDDMM_PATTERN:
          value = d, bound = magnitude;
          break;
        case SFAC_SDDMM_RESIDUAL:
          value = s - d, bound = magnitude + std::fabs(s);
          break;
      }
      double ref = double{alpha} * value;
      bound *= std::fabs(double{alpha});
      if (beta != 0.0f) {
        ref += double{beta} * p_old[e];
        bound += std::fabs(double{beta} * p_old[e]);
      }
      const double got = p_new[e];
      if (!(std::fabs(got - ref) <= rel * bound + 1e-30)) {  // NaN fails too
        if (bad++ == 0) {
          first = "(" + std::to_string(i) + ", " + std::to_string(j) + "): got " +
                  std::to_string(got) + ", expected " + std::to_string(ref) + " +- " +
                  std::to_string(rel * bound);
        }
      }
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " wrong entries, first at " << first;
}

// One call: P (s itself when p is null) gets f(A B^T, S); checked against the reference.
void run_and_check(sfac_context* ctx, const Csr& pattern, sfac_sparse* s, sfac_sparse* p,
                   const Factors& f, sfac_sddmm_mode mode, float alpha, float beta,
                   const sfac_sddmm_plan* plan, const std::string& what) {
  if (p == nullptr) p = s;
  const std::vector<float> s_values = values_of(s);
  const std::vector<float> p_old = values_of(p);
  SFAC_ASSERT_OK(sfac_sddmm(ctx, mode, alpha, f.da.get(), f.db.get(), s, beta, p, plan));
  expect_matches_reference(pattern, s_values, f, mode, alpha, beta, p_old, values_of(p), what);
}

std::string describe(int64_t k, sfac_sddmm_mode mode, float alpha, float beta,
                     sfac_sddmm_algorithm algorithm) {
  return "k=" + std::to_string(k) + " mode=" + std::to_string(mode) +
         " alpha=" + std::to_string(alpha) + " beta=" + std::to_string(beta) +
         " algorithm=" + std::to_string(algorithm);
}

}  // namespace

TEST(SddmmCpu, MatchesReferenceForEveryKModeScalingAndAlgorithm) {
  std::mt19937_64 rng(test_seed());
  Context ctx = make_cpu_context(3);
  const Csr host = csr_from_lengths(200, power_law_lengths(150, 200, rng), rng);
  Sparse s = make_sparse(ctx.get(), host);
  const struct {
    float alpha, beta;
  } scalings[] = {{1.0f, 0.0f}, {-0.75f, 0.0f}, {1.0f, 1.0f}, {0.5f, -1.25f}};
  // beta == 0 must overwrite everything without reading it: P starts as NaN or as a huge
  // finite sentinel. Otherwise P accumulates onto random old values.
  int poison = 0;
  auto fresh_p = [&](float beta) {
    if (beta != 0.0f) return make_like(s.get(), random_floats(host.nnz(), -1, 1, rng));
    if (poison++ % 2 == 0) return nan_like(ctx.get(), s.get());
    return make_like(s.get(), std::vector<float>(host.val.size(), 1e30f));
  };
  for (int64_t k : {1, 3, 32, 129, 512}) {
    const Factors f = make_factors(ctx.get(), host.rows, host.cols, k, rng);
    for (sfac_sddmm_algorithm algorithm : kAlgorithms) {
      Plan plan = make_plan(ctx.get(), s.get(), k, algorithm);
      EXPECT_NE(algorithm_of(plan.get()), SFAC_SDDMM_ALG_AUTO);
      if (algorithm != SFAC_SDDMM_ALG_AUTO) {
        EXPECT_EQ(algorithm_of(plan.get()), algorithm);
      }
      for (sfac_sddmm_mode mode : kModes) {
        for (const auto& [alpha, beta] : scalings) {
          Sparse p = fresh_p(beta);
          run_and_check(ctx.get(), host, s.get(), p.get(), f, mode, alpha, beta, plan.get(),
                        describe(k, mode, alpha, beta, algorithm));
        }
      }
    }
    // No plan: the call analyses the pattern itself.
    Sparse p = nan_like(ctx.get(), s.get());
    run_and_check(ctx.get(), host, s.get(), p.get(), f, SFAC_SDDMM_RESIDUAL, 1.0f, 0.0f, nullptr,
                  "no plan, k=" + std::to_string(k));
  }
}

TEST(SddmmCpu, AlphaZeroOnlyScalesP) {
  std::mt19937_64 rng(test_seed() + 1);
  Context ctx = make_cpu_context(2);
  const Csr host = csr_from_lengths(50, uniform_lengths(40, 0, 20, rng), rng);
  Sparse s = make_sparse(ctx.get(), host);
  const Factors f = make_factors(ctx.get(), host.rows, host.cols, 7, rng);
  for (float beta : {0.0f, 0.5f}) {
    Sparse p = make_like(s.get(), random_floats(host.nnz(), -1, 1, rng));
    run_and_check(ctx.get(), host, s.get(), p.get(), f, SFAC_SDDMM_SCALED, 0.0f, beta, nullptr,
                  "alpha=0 beta=" + std::to_string(beta));
  }
}

TEST(SddmmCpu, SkewedAndDegeneratePatternsWithEveryAlgorithm) {
  std::mt19937_64 rng(test_seed() + 2);
  Context ctx = make_cpu_context(4);
  struct Case {
    std::string name;
    Csr host;
  };
  std::vector<Case> cases;
  cases.push_back({"power law", csr_from_lengths(3000, power_law_lengths(2000, 300, rng), rng)});
  cases.push_back(
      {"huge row", csr_from_lengths(4000, huge_row_lengths(3000, 1234, 4000, rng), rng)});
  cases.push_back({"huge first and last rows", [&] {
                     std::vector<int64_t> lengths = huge_row_lengths(500, 0, 3000, rng);
                     lengths.back() = 3000;
                     return csr_from_lengths(3000, lengths, rng);
                   }()});
  cases.push_back({"single column", csr_from_lengths(1, uniform_lengths(5000, 0, 1, rng), rng)});
  cases.push_back({"single dense row", csr_from_lengths(6000, {6000}, rng)});
  for (const Case& c : cases) {
    Sparse s = make_sparse(ctx.get(), c.host);
    int round = 0;
    for (int64_t k : {3, 40}) {
      const Factors f = make_factors(ctx.get(), c.host.rows, c.host.cols, k, rng);
      for (sfac_sddmm_algorithm algorithm : kAlgorithms) {
        Plan plan = make_plan(ctx.get(), s.get(), k, algorithm);
        const sfac_sddmm_mode mode = kModes[round++ % 3];
        Sparse p = nan_like(ctx.get(), s.get());
        run_and_check(ctx.get(), c.host, s.get(), p.get(), f, mode, 1.5f, 0.0f, plan.get(),
                      c.name + " " + describe(k, mode, 1.5f, 0.0f, algorithm));
        run_and_check(ctx.get(), c.host, s.get(), p.get(), f, mode, -1.0f, 0.25f, plan.get(),
                      c.name + " " + describe(k, mode, -1.0f, 0.25f, algorithm));
      }
    }
  }
}

TEST(SddmmCpu, AutoPicksNnzSplitForAHugeRowAndRowSplitForUniformRows) {
  std::mt19937_64 rng(test_seed() + 3);
  Context ctx = make_cpu_context(4);
  Sparse huge =
      make_sparse(ctx.get(), csr_from_lengths(5000, huge_row_lengths(2000, 7, 5000, rng), rng));
  Sparse uniform =
      make_sparse(ctx.get(), csr_from_lengths(3000, uniform_lengths(3000, 12, 20, rng), rng));
  for (int64_t k : {1, 64}) {
    EXPECT_EQ(algorithm_of(make_plan(ctx.get(), huge.get(), k, SFAC_SDDMM_ALG_AUTO).get()),
              SFAC_SDDMM_ALG_NNZ_SPLIT);
    EXPECT_EQ(algorithm_of(make_plan(ctx.get(), uniform.get(), k, SFAC_SDDMM_ALG_AUTO).get()),
              SFAC_SDDMM_ALG_ROW_SPLIT);
    // An explicit choice is kept whatever the pattern.
    EXPECT_EQ(algorithm_of(make_plan(ctx.get(), huge.get(), k, SFAC_SDDMM_ALG_ROW_SPLIT).get()),
              SFAC_SDDMM_ALG_ROW_SPLIT);
    EXPECT_EQ(algorithm_of(make_plan(ctx.get(), uniform.get(), k, SFAC_SDDMM_ALG_NNZ_SPLIT).get()),
              SFAC_SDDMM_ALG_NNZ_SPLIT);
  }
}

TEST(SddmmCpu, ResultsAreBitwiseIndependentOfAlgorithmAndThreads) {
  // Every nonzero's dot product is summed the same way whoever computes it.
  std::mt19937_64 rng(test_seed() + 4);
  const Csr host = csr_from_lengths(2000, huge_row_lengths(1500, 100, 2000, rng), rng);
  std::vector<float> a = random_floats(host.rows * 33, -1, 1, rng);
  std::vector<float> b = random_floats(host.cols * 33, -1, 1, rng);
  std::vector<float> first;
  for (int threads : {1, 2, 7}) {
    Context ctx = make_cpu_context(threads);
    Sparse s = make_sparse(ctx.get(), host);
    Dense da = make_dense(ctx.get(), host.rows, 33, a),
          db = make_dense(ctx.get(), host.cols, 33, b);
    for (sfac_sddmm_algorithm algorithm : kAlgorithms) {
      Plan plan = make_plan(ctx.get(), s.get(), 33, algorithm);
      Sparse p = make_like(s.get(), {});
      SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_RESIDUAL, 1.0f, da.get(), db.get(), s.get(),
                                0.0f, p.get(), plan.get()));
      const std::vector<float> got = values_of(p.get());
      if (first.empty()) {
        first = got;
      } else {
        EXPECT_EQ(0, std::memcmp(first.data(), got.data(), got.size() * sizeof(float)))
            << "threads=" << threads << " algorithm=" << algorithm;
      }
    }
  }
}

TEST(SddmmCpu, EmptyMatrices) {
  std::mt19937_64 rng(test_seed() + 5);
  Context ctx = make_cpu_context(2);
  const Csr no_nonzeros = csr_from_lengths(40, std::vector<int64_t>(50, 0), rng);
  const Csr no_rows = csr_from_lengths(10, {}, rng);
  const Csr no_cols = csr_from_lengths(0, std::vector<int64_t>(6, 3), rng);
  for (const Csr* host : {&no_nonzeros, &no_rows, &no_cols}) {
    ASSERT_EQ(host->nnz(), 0);
    Sparse s = make_sparse(ctx.get(), *host);
    const Factors f = make_factors(ctx.get(), host->rows, host->cols, 5, rng);
    for (sfac_sddmm_algorithm algorithm : kAlgorithms) {
      Plan plan = make_plan(ctx.get(), s.get(), 5, algorithm);
      EXPECT_NE(algorithm_of(plan.get()), SFAC_SDDMM_ALG_AUTO);
      Sparse p = make_like(s.get(), {});
      for (sfac_sddmm_mode mode : kModes) {
        SFAC_EXPECT_STATUS(SFAC_OK, sfac_sddmm(ctx.get(), mode, 1.0f, f.da.get(), f.db.get(),
                                               s.get(), 0.5f, p.get(), plan.get()));
      }
      SFAC_EXPECT_STATUS(SFAC_OK, sfac_sddmm(ctx.get(), SFAC_SDDMM_SCALED, 1.0f, f.da.get(),
                                             f.db.get(), s.get(), 0.0f, s.get(), nullptr));
    }
  }
}

TEST(SddmmCpu, PlanIsReusableAcrossCallsAndMatricesSharingThePattern) {
  std::mt19937_64 rng(test_seed() + 6);
  Context ctx = make_cpu_context(2);
  const Csr host = csr_from_lengths(700, power_law_lengths(900, 400, rng), rng);
  Sparse s = make_sparse(ctx.get(), host);
  for (sfac_sddmm_algorithm algorithm : kAlgorithms) {
    Plan plan = make_plan(ctx.get(), s.get(), 24, algorithm);
    Factors f = make_factors(ctx.get(), host.rows, host.cols, 24, rng);
    // S made by create_like from the planned matrix, and P made from that one.
    Sparse s2 = make_like(s.get(), random_floats(host.nnz(), -3, 3, rng));
    Sparse p = make_like(s2.get(), {});
    for (int call = 0; call < 4; ++call) {
      const sfac_sddmm_mode mode = kModes[call % 3];
      const std::string what =
          "call " + std::to_string(call) + " " + describe(24, mode, 1.0f, 0.5f, algorithm);
      run_and_check(ctx.get(), host, s.get(), p.get(), f, mode, 1.0f, 0.5f, plan.get(), what);
      run_and_check(ctx.get(), host, s2.get(), p.get(), f, mode, -2.0f, 0.0f, plan.get(), what);
      // New factors and new S values between calls; the plan stays valid.
      f.a = random_floats(host.rows * 24, -1, 1, rng);
      f.b = random_floats(host.cols * 24, -1, 1, rng);
      SFAC_ASSERT_OK(sfac_dense_upload(f.da.get(), f.a.data()));
      SFAC_ASSERT_OK(sfac_dense_upload(f.db.get(), f.b.data()));
      SFAC_ASSERT_OK(
          sfac_sparse_set_values(s2.get(), random_floats(host.nnz(), -3, 3, rng).data()));
    }
  }
}

TEST(SddmmCpu, OutputMayBeTheSampledMatrixItself) {
  std::mt19937_64 rng(test_seed() + 7);
  Context ctx = make_cpu_context(2);
  const Csr host = csr_from_lengths(300, power_law_lengths(400, 300, rng), rng);
  Sparse s = make_sparse(ctx.get(), host);
  const Factors f = make_factors(ctx.get(), host.rows, host.cols, 19, rng);
  for (sfac_sddmm_algorithm algorithm : kAlgorithms) {
    Plan plan = make_plan(ctx.get(), s.get(), 19, algorithm);
    for (sfac_sddmm_mode mode : kModes) {
      for (float beta : {0.0f, 0.5f}) {
        SFAC_ASSERT_OK(sfac_sparse_set_values(s.get(), host.val.data()));
        run_and_check(ctx.get(), host, s.get(), nullptr, f, mode, 0.75f, beta, plan.get(),
                      "in place " + describe(19, mode, 0.75f, beta, algorithm));
      }
    }
  }
}

TEST(SddmmCpu, RejectsBadCallsAndLeavesPUnchanged) {
  std::mt19937_64 rng(test_seed() + 8);
  Context ctx = make_cpu_context(2);
  const Csr host = csr_from_lengths(20, uniform_lengths(30, 1, 6, rng), rng);
  Sparse s = make_sparse(ctx.get(), host);
  Sparse same_pattern_copy = make_sparse(ctx.get(), host);  // equal, but not shared
  Csr other_host = host;  // row 0 swaps its first column for one it does not have
  {
    const auto row0 = other_host.col.begin(), row0_end = row0 + other_host.off[1];
    int32_t free_col = 0;
    while (std::find(row0, row0_end, free_col) != row0_end) ++free_col;
    *row0 = free_col;
    std::sort(row0, row0_end);
  }
  Sparse other_pattern = make_sparse(ctx.get(), other_host);
  const Csr bigger_host = csr_from_lengths(20, uniform_lengths(31, 1, 6, rng), rng);
  Sparse bigger = make_sparse(ctx.get(), bigger_host);

  Factors f = make_factors(ctx.get(), 30, 20, 8, rng);
  Dense a5 = make_dense(ctx.get(), 30, 5, random_floats(150, -1, 1, rng));
  Dense b5 = make_dense(ctx.get(), 20, 5, random_floats(100, -1, 1, rng));
  Dense a29 = make_dense(ctx.get(), 29, 8, random_floats(29 * 8, -1, 1, rng));
  Dense b21 = make_dense(ctx.get(), 21, 8, random_floats(21 * 8, -1, 1, rng));
  Plan plan8 = make_plan(ctx.get(), s.get(), 8, SFAC_SDDMM_ALG_AUTO);
  Plan plan5 = make_plan(ctx.get(), s.get(), 5, SFAC_SDDMM_ALG_AUTO);
  Plan foreign_plan = make_plan(ctx.get(), same_pattern_copy.get(), 8, SFAC_SDDMM_ALG_AUTO);

  Sparse p = make_like(s.get(), random_floats(host.nnz(), -1, 1, rng));
  const std::vector<float> p_before = values_of(p.get());
  const std::vector<float> s_before = values_of(s.get());
  auto unchanged = [&](const char* what) {
    EXPECT_EQ(
        0, std::memcmp(p_before.data(), values_of(p.get()).data(), p_before.size() * sizeof(float)))
        << "P changed by a failed call: " << what;
    EXPECT_EQ(
        0, std::memcmp(s_before.data(), values_of(s.get()).data(), s_before.size() * sizeof(float)))
        << "S changed by a failed call: " << what;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  sfac_context* c = ctx.get();
  sfac_dense *a = f.da.get(), *b = f.db.get();
  const auto scaled = SFAC_SDDMM_SCALED;

  SFAC_EXPECT_ERROR(SFAC_ERR_SHAPE_MISMATCH, "same number of columns K",
                    sfac_sddmm(c, scaled, 1, a5.get(), b, s.get(), 0, p.get(), nullptr));
  unchanged("a and b with different K");
  SFAC_EXPECT_ERROR(SFAC_ERR_SHAPE_MISMATCH, "a has 29 rows but s has 30",
                    sfac_sddmm(c, scaled, 1, a29.get(), b, s.get(), 0, p.get(), nullptr));
  unchanged("a rows != s rows");
  SFAC_EXPECT_ERROR(SFAC_ERR_SHAPE_MISMATCH, "b has 21 rows but s has 20 columns",
                    sfac_sddmm(c, scaled, 1, a, b21.get(), s.get(), 0, p.get(), nullptr));
  unchanged("b rows != s cols");
  SFAC_EXPECT_ERROR(SFAC_ERR_SHAPE_MISMATCH, "sparsity pattern of s",
                    sfac_sddmm(c, scaled, 1, a, b, other_pattern.get(), 0, p.get(), nullptr));
  unchanged("p with another pattern (p is the checked output)");
  SFAC_EXPECT_ERROR(SFAC_ERR_SHAPE_MISMATCH, "sparsity pattern of s",
                    sfac_sddmm(c, scaled, 1, a, b, s.get(), 0, other_pattern.get(), nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_SHAPE_MISMATCH, "sparsity pattern of s",
                    sfac_sddmm(c, scaled, 1, a, b, s.get(), 0, bigger.get(), nullptr));
  unchanged("p with another shape");
  SFAC_EXPECT_ERROR(SFAC_ERR_SHAPE_MISMATCH, "plan was made for k = 5",
                    sfac_sddmm(c, scaled, 1, a, b, s.get(), 0, p.get(), plan5.get()));
  unchanged("plan for another k");
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "another sparsity pattern",
                    sfac_sddmm(c, scaled, 1, a, b, s.get(), 0, p.get(), foreign_plan.get()));
  unchanged("plan for an equal but separately created pattern");
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "alpha",
                    sfac_sddmm(c, scaled, nan, a, b, s.get(), 0, p.get(), plan8.get()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "alpha",
                    sfac_sddmm(c, scaled, -inf, a, b, s.get(), 0, p.get(), plan8.get()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "beta",
                    sfac_sddmm(c, scaled, 1, a, b, s.get(), nan, p.get(), plan8.get()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "beta",
                    sfac_sddmm(c, scaled, 1, a, b, s.get(), inf, p.get(), plan8.get()));
  unchanged("non-finite alpha or beta");
  SFAC_EXPECT_ERROR(
      SFAC_ERR_INVALID_ARGUMENT, "unknown sddmm mode",
      sfac_sddmm(c, static_cast<sfac_sddmm_mode>(3), 1, a, b, s.get(), 0, p.get(), plan8.get()));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_INVALID_ARGUMENT, "unknown sddmm mode",
      sfac_sddmm(c, static_cast<sfac_sddmm_mode>(-1), 1, a, b, s.get(), 0, p.get(), plan8.get()));
  unchanged("unknown mode");
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "ctx is NULL",
                    sfac_sddmm(nullptr, scaled, 1, a, b, s.get(), 0, p.get(), plan8.get()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "a is NULL",
                    sfac_sddmm(c, scaled, 1, nullptr, b, s.get(), 0, p.get(), plan8.get()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "b is NULL",
                    sfac_sddmm(c, scaled, 1, a, nullptr, s.get(), 0, p.get(), plan8.get()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "s is NULL",
                    sfac_sddmm(c, scaled, 1, a, b, nullptr, 0, p.get(), plan8.get()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "p is NULL",
                    sfac_sddmm(c, scaled, 1, a, b, s.get(), 0, nullptr, plan8.get()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "not a live sfac_sddmm_plan",
                    sfac_sddmm(c, scaled, 1, a, b, s.get(), 0, p.get(),
                               reinterpret_cast<const sfac_sddmm_plan*>(a)));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "not a live sfac_dense",
                    sfac_sddmm(c, scaled, 1, a, reinterpret_cast<const sfac_dense*>(s.get()),
                               s.get(), 0, p.get(), plan8.get()));
  unchanged("null or foreign handles");

  // The same call with valid arguments works and does change P.
  SFAC_ASSERT_OK(sfac_sddmm(c, scaled, 1, a, b, s.get(), 0, p.get(), plan8.get()));
  EXPECT_NE(
      0, std::memcmp(p_before.data(), values_of(p.get()).data(), p_before.size() * sizeof(float)));
}

TEST(SddmmCpu, RejectsBadPlans) {
  std::mt19937_64 rng(test_seed() + 9);
  Context ctx = make_cpu_context(2);
  Sparse s = make_sparse(ctx.get(), csr_from_lengths(10, uniform_lengths(10, 1, 3, rng), rng));
  sfac_sddmm_plan* plan = nullptr;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "k = 0 must be >= 1",
                    sfac_sddmm_plan_create(ctx.get(), s.get(), 0, SFAC_SDDMM_ALG_AUTO, &plan));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "k = -4 must be >= 1",
                    sfac_sddmm_plan_create(ctx.get(), s.get(), -4, SFAC_SDDMM_ALG_AUTO, &plan));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_INVALID_ARGUMENT, "unknown sddmm algorithm 9",
      sfac_sddmm_plan_create(ctx.get(), s.get(), 4, static_cast<sfac_sddmm_algorithm>(9), &plan));
  SFAC_EXPECT_ERROR(SFAC_ERR_UNSUPPORTED, "no TILED",
                    sfac_sddmm_plan_create(ctx.get(), s.get(), 4, SFAC_SDDMM_ALG_TILED, &plan));
  SFAC_EXPECT_ERROR(SFAC_ERR_UNSUPPORTED, "no CUSPARSE",
                    sfac_sddmm_plan_create(ctx.get(), s.get(), 4, SFAC_SDDMM_ALG_CUSPARSE, &plan));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "ctx is NULL",
                    sfac_sddmm_plan_create(nullptr, s.get(), 4, SFAC_SDDMM_ALG_AUTO, &plan));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "pattern is NULL",
                    sfac_sddmm_plan_create(ctx.get(), nullptr, 4, SFAC_SDDMM_ALG_AUTO, &plan));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out is NULL",
                    sfac_sddmm_plan_create(ctx.get(), s.get(), 4, SFAC_SDDMM_ALG_AUTO, nullptr));
  EXPECT_EQ(plan, nullptr);  // no failed call wrote the output handle

  sfac_sddmm_algorithm algorithm = SFAC_SDDMM_ALG_TILED;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "plan is NULL",
                    sfac_sddmm_plan_get_algorithm(nullptr, &algorithm));
  EXPECT_EQ(algorithm, SFAC_SDDMM_ALG_TILED);
  Plan good = make_plan(ctx.get(), s.get(), 4, SFAC_SDDMM_ALG_ROW_SPLIT);
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out is NULL",
                    sfac_sddmm_plan_get_algorithm(good.get(), nullptr));
  SFAC_EXPECT_STATUS(SFAC_OK, sfac_sddmm_plan_destroy(nullptr));
}

TEST(SddmmCpu, DenseFactorsMustBeFinite) {
  Context ctx = make_cpu_context(1);
  std::vector<float> data(12, 0.5f);
  data[4] = std::numeric_limits<float>::quiet_NaN();
  sfac_dense* out = nullptr;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "data[4]",
                    sfac_dense_create(ctx.get(), 3, 4, SFAC_DTYPE_FLOAT32, data.data(), &out));
  EXPECT_EQ(out, nullptr);
  data[4] = 0.5f;
  data[11] = -std::numeric_limits<float>::infinity();
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "data[11]",
                    sfac_dense_create(ctx.get(), 3, 4, SFAC_DTYPE_FLOAT32, data.data(), &out));
  EXPECT_EQ(out, nullptr);
}

// 2^31 + 2^21 nonzeros (huge_pattern.h) on the CPU backend: COO input with values in reverse
// order becomes the CSR the formula gives, then each algorithm's SDDMM (scaled by S) matches an
// fp64 reference on every nonzero of the checked rows, with P poisoned before each call. Needs
// ~80 GB of host memory; skipped where that is short (as on CI's machine).
TEST(SddmmCpu, NonzerosPastTwoToThe31) {
  if (host_available_bytes() < (int64_t{80} << 30)) GTEST_SKIP() << "needs 80 GB of host memory";
  Context ctx = make_cpu_context(0);
  const Sparse s = upload_huge_coo_with_values(ctx.get());
  ASSERT_TRUE(s);
  expect_huge_csr(s.get(), true);
  constexpr int64_t kK = 8;
  std::mt19937_64 g(test_seed() + 71);
  std::normal_distribution<float> d;
  std::vector<float> a(kHugeRows * kK), b(kHugeCols * kK);
  for (float& x : a) x = d(g);
  for (float& x : b) x = d(g);
  const Dense da = make_dense(ctx.get(), kHugeRows, kK, a);
  const Dense db = make_dense(ctx.get(), kHugeCols, kK, b);
  // No data: zeros.
  const Dense zero_a = make_dense(ctx.get(), kHugeRows, kK, {});
  const Dense zero_b = make_dense(ctx.get(), kHugeCols, kK, {});
  sfac_sparse* raw_p = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_like(s.get(), nullptr, &raw_p));
  Sparse p(raw_p);
  std::vector<float> got(kHugeNnz);
  for (sfac_sddmm_algorithm alg : kAlgorithms) {
    SCOPED_TRACE(testing::Message() << "alg=" << alg);
    Plan plan = make_plan(ctx.get(), s.get(), kK, alg);
    ASSERT_TRUE(plan);
    // Zero factors: P = 1e30 * S.
    SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_RESIDUAL, 1e30f, zero_a.get(), zero_b.get(),
                              s.get(), 0.0f, p.get(), plan.get()));
    SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_SCALED, 1.0f, da.get(), db.get(), s.get(), 0.0f,
                              p.get(), plan.get()));
    SFAC_ASSERT_OK(sfac_sparse_download_csr(p.get(), nullptr, 0, nullptr, got.data(),
                                            static_cast<int64_t>(got.size())));
    for (int64_t i = 0; i < kHugeRows; i = next_checked_row(i)) {
      for (int64_t t = 0; t < kHugePerRow; ++t) {
        const Dot ref = reference_dot(a, b, i, huge_col(i, t), kK);
        const double sv = huge_value(i, t);
        ASSERT_NEAR(got[i * kHugePerRow + t], ref.value * sv,
                    (1e-5 * ref.magnitude + 1e-6) * (sv + 1.0))
            << "row " << i << " slot " << t;
      }
    }
  }
}
