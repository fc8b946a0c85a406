// The CUDA backend against the CPU backend and an fp64 reference. Skipped without a device.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "huge_pattern.h"
#include "sfac_test.h"

#ifdef SFAC_TEST_CUDART
#include <cuda_runtime.h>
#endif

using namespace sfac_test;

namespace {

// Skips the test (with the reason) on machines without a usable CUDA device.
#define SFAC_REQUIRE_CUDA_DEVICE()                                                  \
  do {                                                                              \
    int devices_ = 0;                                                               \
    ASSERT_EQ(sfac_cuda_device_count(&devices_), SFAC_OK);                          \
    if (devices_ == 0) GTEST_SKIP() << "no CUDA device (or no CUDA in this build)"; \
  } while (0)

Context make_cuda_context() {
  sfac_context* ctx = nullptr;
  EXPECT_EQ(sfac_context_create(SFAC_BACKEND_CUDA, 0, 2, 7, &ctx), SFAC_OK) << sfac_last_error();
  return Context(ctx);
}

using Pattern = Triplets;

// Power-law rows with empty rows, optionally one row holding most nonzeros.
Pattern make_pattern(int64_t rows, int64_t cols, int64_t nnz, bool huge_row, std::mt19937_64& g) {
  Pattern p{rows, cols, {}, {}, {}};
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<float> val;
  std::vector<char> seen(static_cast<size_t>(rows * cols), 0);
  for (int64_t n = 0; n < nnz; ++n) {
    int32_t i = huge_row && u(g) < 0.7 ? 0 : static_cast<int32_t>(rows * std::pow(u(g), 2.0));
    int32_t j = static_cast<int32_t>(cols * u(g));
    i = std::min<int32_t>(i, rows - 1);
    j = std::min<int32_t>(j, cols - 1);
    if (i == rows / 2) continue;  // a guaranteed empty row
    if (seen[size_t(i) * cols + j]++) continue;
    p.r.push_back(i);
    p.c.push_back(j);
    p.v.push_back(val(g));
  }
  return p;
}

Dense dense(sfac_context* ctx, int64_t rows, int64_t cols, const std::vector<float>& data) {
  sfac_dense* d = nullptr;
  EXPECT_EQ(sfac_dense_create(ctx, rows, cols, SFAC_DTYPE_FLOAT32, data.data(), &d), SFAC_OK)
      << sfac_last_error();
  return Dense(d);
}

std::vector<float> values_of(const sfac_sparse* m) {
  int64_t nnz = 0;
  EXPECT_EQ(sfac_sparse_get_shape(m, nullptr, nullptr, &nnz), SFAC_OK);
  std::vector<float> v(nnz);
  EXPECT_EQ(
      sfac_sparse_download_csr(m, nullptr, 0, nullptr, v.data(), static_cast<int64_t>(v.size())),
      SFAC_OK);
  return v;
}

// The pattern as stored (CSR order, duplicates merged) with its values.
struct StoredCsr {
  std::vector<int64_t> off;
  std::vector<int32_t> cols;
  std::vector<float> values;
};

StoredCsr download(const sfac_sparse* s) {
  int64_t rows = 0, nnz = 0;
  EXPECT_EQ(sfac_sparse_get_shape(s, &rows, nullptr, &nnz), SFAC_OK);
  StoredCsr c{std::vector<int64_t>(rows + 1), std::vector<int32_t>(nnz), std::vector<float>(nnz)};
  EXPECT_EQ(
      sfac_sparse_download_csr(s, c.off.data(), static_cast<int64_t>(c.off.size()), c.cols.data(),
                               c.values.data(), static_cast<int64_t>(c.cols.size())),
      SFAC_OK);
  return c;
}

// Factors uploaded with `dtype` storage, and the values they hold (rounded for 16-bit types):
// the reference must use those.
struct Factors {
  Dense a, b;
  std::vector<float> stored_a, stored_b;
};

Factors upload_factors(sfac_context* ctx, int64_t rows, int64_t cols, int64_t k, sfac_dtype dtype,
                       const std::vector<float>& a, const std::vector<float>& b) {
  sfac_dense *ra = nullptr, *rb = nullptr;
  EXPECT_EQ(sfac_dense_create(ctx, rows, k, dtype, a.data(), &ra), SFAC_OK) << sfac_last_error();
  EXPECT_EQ(sfac_dense_create(ctx, cols, k, dtype, b.data(), &rb), SFAC_OK) << sfac_last_error();
  Factors f{Dense(ra), Dense(rb), std::vector<float>(a.size()), std::vector<float>(b.size())};
  EXPECT_EQ(sfac_dense_download(ra, f.stored_a.data(), static_cast<int64_t>(f.stored_a.size())),
            SFAC_OK);
  EXPECT_EQ(sfac_dense_download(rb, f.stored_b.data(), static_cast<int64_t>(f.stored_b.size())),
            SFAC_OK);
  return f;
}

// sfac_sddmm with `plan` in every mode (pattern; scaled with alpha and beta; residual; scaled in
// place), each value against the fp64 reference on the stored factors `a` and `b`. P starts
// poisoned where beta is 0, as `old` where it is not, and as S (and is S) in place.
void expect_every_mode_matches(sfac_context* ctx, const sfac_sparse* s, const StoredCsr& csr,
                               const sfac_dense* da, const sfac_dense* db,
                               const std::vector<float>& a, const std::vector<float>& b, int64_t k,
                               const std::vector<float>& old, const sfac_sddmm_plan* plan) {
  const std::vector<float>& sv = csr.values;
  const int64_t rows = static_cast<int64_t>(csr.off.size()) - 1;
  struct Call {
    sfac_sddmm_mode mode;
    float alpha, beta;
    bool in_place;
  };
  for (Call c :
       {Call{SFAC_SDDMM_PATTERN, 1.0f, 0.0f, false}, Call{SFAC_SDDMM_SCALED, -0.5f, 2.0f, false},
        Call{SFAC_SDDMM_RESIDUAL, 1.0f, 0.0f, false}, Call{SFAC_SDDMM_SCALED, 2.0f, 0.0f, true}}) {
    const std::vector<float> init = c.in_place       ? sv
                                    : c.beta == 0.0f ? std::vector<float>(sv.size(), 1e30f)
                                                     : old;
    sfac_sparse* raw_p = nullptr;
    SFAC_ASSERT_OK(sfac_sparse_create_like(s, init.data(), &raw_p));
    Sparse out(raw_p);
    SFAC_ASSERT_OK(sfac_sddmm(ctx, c.mode, c.alpha, da, db, c.in_place ? out.get() : s, c.beta,
                              out.get(), plan));
    const std::vector<float> got = values_of(out.get());
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t e = csr.off[i]; e < csr.off[i + 1]; ++e) {
        const Dot ref = reference_dot(a, b, i, csr.cols[e], k);
        const double dot = ref.value, mag = ref.magnitude;
        const double f = c.mode == SFAC_SDDMM_SCALED    ? dot * sv[e]
                         : c.mode == SFAC_SDDMM_PATTERN ? dot
                                                        : sv[e] - dot;
        const double want = c.alpha * f + c.beta * double(init[e]);
        const double tol =
            1e-5 * (mag * (1 + std::abs(sv[e])) + std::abs(c.beta * init[e]) + std::abs(sv[e])) +
            1e-6;
        ASSERT_NEAR(got[e], want, tol)
            << "mode=" << c.mode << " in_place=" << c.in_place << " row=" << i << " e=" << e;
      }
    }
  }
}

// Fresh normal factors (rows x k and cols x k) and old values, uploaded with each storage type of
// `dtypes`: every mode on `plan` against the fp64 reference (expect_every_mode_matches).
void expect_plan_matches(sfac_context* ctx, const sfac_sparse* s, const StoredCsr& csr,
                         int64_t rows, int64_t cols, int64_t k,
                         std::initializer_list<sfac_dtype> dtypes, const sfac_sddmm_plan* plan,
                         std::mt19937_64& g) {
  std::normal_distribution<float> d;
  std::vector<float> a(rows * k), b(cols * k), old(csr.cols.size());
  for (float& x : a) x = d(g);
  for (float& x : b) x = d(g);
  for (float& x : old) x = d(g);
  for (sfac_dtype dtype : dtypes) {
    const Factors f = upload_factors(ctx, rows, cols, k, dtype, a, b);
    SCOPED_TRACE(testing::Message() << "dtype=" << dtype);
    expect_every_mode_matches(ctx, s, csr, f.a.get(), f.b.get(), f.stored_a, f.stored_b, k, old,
                              plan);
  }
}

}  // namespace

TEST(Cuda, ContextReportsTheDevice) {
  SFAC_REQUIRE_CUDA_DEVICE();
  Context ctx = make_cuda_context();
  sfac_backend backend = SFAC_BACKEND_AUTO;
  SFAC_ASSERT_OK(sfac_context_get_backend(ctx.get(), &backend));
  EXPECT_EQ(backend, SFAC_BACKEND_CUDA);
  const char* name = nullptr;
  SFAC_ASSERT_OK(sfac_context_get_device_name(ctx.get(), &name));
  EXPECT_GT(std::string(name).size(), 0u);
  sfac_context* raw = nullptr;
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "device = 64",
                    sfac_context_create(SFAC_BACKEND_CUDA, 64, 1, 0, &raw));
}

TEST(Cuda, SparseAndDenseMatricesRoundTripLikeOnTheCpu) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed());
  Context gpu = make_cuda_context(), cpu = make_cpu_context(2);
  const Pattern p = make_pattern(300, 200, 5000, true, g);
  Sparse a = create_sparse(gpu.get(), p), b = create_sparse(cpu.get(), p);
  const int64_t nnz = static_cast<int64_t>(p.r.size());
  int64_t got_nnz = 0;
  SFAC_ASSERT_OK(sfac_sparse_get_shape(a.get(), nullptr, nullptr, &got_nnz));
  ASSERT_LE(got_nnz, nnz);
  std::vector<int64_t> o1(p.cols + 1), o2(p.cols + 1);
  std::vector<int32_t> i1(got_nnz), i2(got_nnz);
  std::vector<float> v1(got_nnz), v2(got_nnz);
  SFAC_ASSERT_OK(sfac_sparse_download_csc(a.get(), o1.data(), static_cast<int64_t>(o1.size()),
                                          i1.data(), v1.data(), static_cast<int64_t>(i1.size())));
  SFAC_ASSERT_OK(sfac_sparse_download_csc(b.get(), o2.data(), static_cast<int64_t>(o2.size()),
                                          i2.data(), v2.data(), static_cast<int64_t>(i2.size())));
  EXPECT_EQ(o1, o2);
  EXPECT_EQ(i1, i2);
  EXPECT_EQ(v1, v2);
  std::vector<int32_t> r1(got_nnz), r2(got_nnz);
  SFAC_ASSERT_OK(sfac_sparse_download_coo(a.get(), r1.data(), i1.data(), v1.data(),
                                          static_cast<int64_t>(r1.size())));
  SFAC_ASSERT_OK(sfac_sparse_download_coo(b.get(), r2.data(), i2.data(), v2.data(),
                                          static_cast<int64_t>(r2.size())));
  EXPECT_EQ(r1, r2);
  EXPECT_EQ(i1, i2);
  EXPECT_EQ(v1, v2);

  std::vector<float> data(37 * 5);
  std::normal_distribution<float> d;
  for (float& x : data) x = d(g);
  Dense m = dense(gpu.get(), 37, 5, data);
  std::vector<float> back(data.size(), -1.0f);
  SFAC_ASSERT_OK(sfac_dense_download(m.get(), back.data(), static_cast<int64_t>(back.size())));
  EXPECT_EQ(back, data);
}

// Device rows are padded to whole 16-byte vectors (K = 5 float32: 8 floats; K = 100 bfloat16:
// 104 halves): the caller still sees exactly K columns through upload, download, zero
// creation and row permutation.
TEST(Cuda, DenseRowsOfAnyWidthRoundTripThroughTheirPadding) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 5);
  Context gpu = make_cuda_context();
  std::normal_distribution<float> d;
  for (const sfac_dtype dtype : {SFAC_DTYPE_FLOAT32, SFAC_DTYPE_FLOAT16, SFAC_DTYPE_BFLOAT16}) {
    for (const int64_t k : {1, 3, 5, 8, 9, 100, 129}) {
      const int64_t rows = 23;
      std::vector<float> data(rows * k);
      for (float& x : data) x = d(g);
      sfac_dense* raw = nullptr;
      SFAC_ASSERT_OK(sfac_dense_create(gpu.get(), rows, k, dtype, data.data(), &raw));
      Dense m(raw);
      std::vector<float> back(data.size() + 1, -7.0f);
      SFAC_ASSERT_OK(sfac_dense_download(m.get(), back.data(), static_cast<int64_t>(back.size())));
      EXPECT_EQ(back.back(), -7.0f) << "wrote past rows x K";
      back.pop_back();
      const double eps = dtype == SFAC_DTYPE_FLOAT32   ? 0.0
                         : dtype == SFAC_DTYPE_FLOAT16 ? 1.0 / 2048
                                                       : 1.0 / 256;
      // float16 values below 2^-14 are subnormal: spaced 2^-24 apart, not relatively.
      const double tiny = dtype == SFAC_DTYPE_FLOAT16 ? std::ldexp(1.0, -25) : 0.0;
      for (size_t i = 0; i < data.size(); ++i)
        ASSERT_NEAR(back[i], data[i], eps * std::abs(data[i]) + tiny)
            << "dtype " << dtype << " k " << k;
      // Stored values go back unchanged, and a row permutation moves whole rows.
      std::vector<int32_t> order(rows);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), g);
      sfac_dense* raw_permuted = nullptr;
      SFAC_ASSERT_OK(sfac_dense_permute_rows(m.get(), order.data(), &raw_permuted));
      Dense permuted(raw_permuted);
      std::vector<float> moved(data.size());
      SFAC_ASSERT_OK(
          sfac_dense_download(permuted.get(), moved.data(), static_cast<int64_t>(moved.size())));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < k; ++c) ASSERT_EQ(moved[r * k + c], back[order[r] * k + c]);
      }
      sfac_dense* raw_zero = nullptr;
      SFAC_ASSERT_OK(sfac_dense_create(gpu.get(), rows, k, dtype, nullptr, &raw_zero));
      Dense zero(raw_zero);
      std::vector<float> zeros(data.size(), 1.0f);
      SFAC_ASSERT_OK(
          sfac_dense_download(zero.get(), zeros.data(), static_cast<int64_t>(zeros.size())));
      EXPECT_EQ(zeros, std::vector<float>(data.size(), 0.0f));
    }
  }
}

TEST(Cuda, SddmmMatchesTheFp64ReferenceForEveryAlgorithmModeAndK) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 11);
  Context ctx = make_cuda_context();
  std::normal_distribution<float> d;
  for (bool huge_row : {false, true}) {
    const Pattern p = make_pattern(400, 300, 12000, huge_row, g);
    Sparse s = create_sparse(ctx.get(), p);
    const auto [off, cols, sv] = download(s.get());
    const int64_t nnz = static_cast<int64_t>(cols.size());
    for (int64_t k : {1, 3, 32, 100, 128, 512}) {
      std::vector<float> a(p.rows * k), b(p.cols * k), old(nnz);
      for (float& x : a) x = d(g);
      for (float& x : b) x = d(g);
      for (float& x : old) x = d(g);
      Dense da = dense(ctx.get(), p.rows, k, a), db = dense(ctx.get(), p.cols, k, b);
      for (sfac_sddmm_algorithm alg :
           {SFAC_SDDMM_ALG_AUTO, SFAC_SDDMM_ALG_ROW_SPLIT, SFAC_SDDMM_ALG_NNZ_SPLIT,
            SFAC_SDDMM_ALG_TILED, SFAC_SDDMM_ALG_CUSPARSE}) {
        Plan plan = make_plan(ctx.get(), s.get(), k, alg);
        ASSERT_TRUE(plan);
        for (sfac_sddmm_mode mode : {SFAC_SDDMM_SCALED, SFAC_SDDMM_PATTERN, SFAC_SDDMM_RESIDUAL}) {
          for (auto [alpha, beta] : {std::pair<float, float>{1.0f, 0.0f}, {-0.5f, 2.0f}}) {
            // Poison: with beta = 0 every entry must be overwritten.
            std::vector<float> init = beta == 0.0f ? std::vector<float>(nnz, 1e30f) : old;
            sfac_sparse* raw_p = nullptr;
            SFAC_ASSERT_OK(sfac_sparse_create_like(s.get(), init.data(), &raw_p));
            Sparse out(raw_p);
            SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), mode, alpha, da.get(), db.get(), s.get(), beta,
                                      out.get(), plan.get()));
            const std::vector<float> got = values_of(out.get());
            for (int64_t i = 0; i < p.rows; ++i) {
              for (int64_t e = off[i]; e < off[i + 1]; ++e) {
                const Dot ref = reference_dot(a, b, i, cols[e], k);
                const double dot = ref.value, mag = ref.magnitude;
                const double f = mode == SFAC_SDDMM_SCALED    ? dot * sv[e]
                                 : mode == SFAC_SDDMM_PATTERN ? dot
                                                              : sv[e] - dot;
                const double want = alpha * f + beta * double(init[e]);
                const double tol = 1e-5 * (mag * (1 + std::abs(sv[e])) + std::abs(beta * init[e]) +
                                           std::abs(sv[e])) +
                                   1e-6;
                ASSERT_NEAR(got[e], want, tol)
                    << "k=" << k << " alg=" << alg << " mode=" << mode << " e=" << e;
              }
            }
          }
        }
      }
    }
  }
}

// The band-tiled kernel on a pattern wider than one band and taller than one row block: cells cut
// into several tiles, tile boundaries inside a long row, K cut into several slices (the last one
// partial), every mode, and the in-place call (S read and P written by the same tile).
TEST(Cuda, SddmmTiledAcrossBandsRowBlocksAndKSlices) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 23);
  Context ctx = make_cuda_context();
  std::normal_distribution<float> d;
  const Pattern p = make_pattern(3000, 2500, 90000, true, g);
  Sparse s = create_sparse(ctx.get(), p);
  const StoredCsr csr = download(s.get());
  struct Run {
    int64_t k;
    sfac_dtype dtype;
  };
  for (Run run : {Run{4, SFAC_DTYPE_FLOAT32}, Run{32, SFAC_DTYPE_FLOAT32},
                  Run{100, SFAC_DTYPE_FLOAT32}, Run{512, SFAC_DTYPE_FLOAT32},
                  Run{32, SFAC_DTYPE_BFLOAT16}, Run{104, SFAC_DTYPE_BFLOAT16}}) {
    const int64_t k = run.k;
    Plan plan = make_plan(ctx.get(), s.get(), k, SFAC_SDDMM_ALG_TILED);
    ASSERT_TRUE(plan);
    SCOPED_TRACE(testing::Message() << "k=" << k);
    expect_plan_matches(ctx.get(), s.get(), csr, p.rows, p.cols, k, {run.dtype}, plan.get(), g);
  }
}

// AUTO keeps the nonzero split for a sparse pattern whose B fits in L2 and picks a tiled plan (the
// L2 band order) when B is far larger (B here: 200,000 x 512, 410 MB in float32, 205 MB in
// bfloat16; ~720 nonzeros per row, so each row meets each band many times). Both element types
// must give the reference values.
TEST(Cuda, SddmmAutoPicksTilesOnlyWhenBOutgrowsL2) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 31);
  Context ctx = make_cuda_context();
  {
    const Pattern small = make_pattern(400, 3000, 12000, false, g);  // 1%: no dense tiles
    Sparse s = create_sparse(ctx.get(), small);
    EXPECT_EQ(algorithm_of(make_plan(ctx.get(), s.get(), 512, SFAC_SDDMM_ALG_AUTO).get()),
              SFAC_SDDMM_ALG_NNZ_SPLIT);
  }
  const int64_t rows = 600, cols = 200000, k = 512;
  Pattern p{rows, cols, {}, {}, {}};
  std::uniform_int_distribution<int32_t> col(0, cols - 1);
  for (int32_t i = 0; i < rows; ++i) {
    std::vector<int32_t> picked(720);
    for (int32_t& c : picked) c = col(g);
    std::sort(picked.begin(), picked.end());
    picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
    for (int32_t c : picked) {
      p.r.push_back(i);
      p.c.push_back(c);
      p.v.push_back(1.0f);
    }
  }
  Sparse s = create_sparse(ctx.get(), p);
  Plan plan = make_plan(ctx.get(), s.get(), k, SFAC_SDDMM_ALG_AUTO);
  ASSERT_TRUE(plan);
  EXPECT_EQ(algorithm_of(plan.get()), SFAC_SDDMM_ALG_TILED);
  std::normal_distribution<float> d;
  std::vector<float> a(rows * k), b(cols * k);
  for (float& x : a) x = d(g);
  for (float& x : b) x = d(g);
  for (sfac_dtype dtype : {SFAC_DTYPE_FLOAT32, SFAC_DTYPE_BFLOAT16}) {
    const Factors f = upload_factors(ctx.get(), rows, cols, k, dtype, a, b);
    sfac_sparse* raw_p = nullptr;
    SFAC_ASSERT_OK(
        sfac_sparse_create_like(s.get(), std::vector<float>(p.r.size(), 1e30f).data(), &raw_p));
    Sparse out(raw_p);
    SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_PATTERN, 1.0f, f.a.get(), f.b.get(), s.get(),
                              0.0f, out.get(), plan.get()));
    const std::vector<float> got = values_of(out.get());
    for (size_t e = 0; e < p.r.size(); ++e) {
      const Dot ref = reference_dot(f.stored_a, f.stored_b, p.r[e], p.c[e], k);
      ASSERT_NEAR(got[e], ref.value, 1e-5 * ref.magnitude + 1e-6)
          << "dtype=" << dtype << " e=" << e;
    }
  }
}

// The L2 band order against the reference, every mode, both element types, rows of mixed length
// (one huge) and empty rows:
// - B beyond any current GPU's L2 (300 x 250,000, K = 256: 256 MB in float32, 128 MB in
//   bfloat16), from an explicit TILED plan and from AUTO: both element types run the order;
// - B within L2 (2,000 x 16,384, K = 128: 8 MB; 300 nonzeros per row, so AUTO cuts it into 1 MB
//   bands): float32 runs the order, bfloat16 the nonzero split in CSR order.
TEST(Cuda, SddmmL2BandOrderMatchesTheReferenceInEveryMode) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 37);
  Context ctx = make_cuda_context();
  struct Case {
    int64_t rows, cols, nnz, k;
    std::vector<sfac_sddmm_algorithm> algorithms;
  };
  for (const Case& c : {Case{300, 250000, 120000, 256, {SFAC_SDDMM_ALG_TILED, SFAC_SDDMM_ALG_AUTO}},
                        Case{2000, 16384, 600000, 128, {SFAC_SDDMM_ALG_AUTO}}}) {
    const Pattern p = make_pattern(c.rows, c.cols, c.nnz, true, g);
    Sparse s = create_sparse(ctx.get(), p);
    const StoredCsr csr = download(s.get());
    for (sfac_sddmm_algorithm alg : c.algorithms) {
      Plan plan = make_plan(ctx.get(), s.get(), c.k, alg);
      ASSERT_TRUE(plan);
      EXPECT_EQ(algorithm_of(plan.get()), SFAC_SDDMM_ALG_TILED);
      SCOPED_TRACE(testing::Message() << "cols=" << c.cols << " alg=" << alg);
      expect_plan_matches(ctx.get(), s.get(), csr, c.rows, c.cols, c.k,
                          {SFAC_DTYPE_FLOAT32, SFAC_DTYPE_BFLOAT16}, plan.get(), g);
    }
  }
}

TEST(Cuda, SddmmInPlaceAndEmptyMatrices) {
  SFAC_REQUIRE_CUDA_DEVICE();
  Context ctx = make_cuda_context();
  const Pattern p{3, 2, {0, 2, 2}, {1, 0, 1}, {2.0f, 3.0f, 4.0f}};
  Sparse s = create_sparse(ctx.get(), p);
  Dense a = dense(ctx.get(), 3, 2, {1, 1, 0, 0, 1, 2}), b = dense(ctx.get(), 2, 2, {1, 0, 0, 1});
  SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_SCALED, 1.0f, a.get(), b.get(), s.get(), 0.0f,
                            s.get(), nullptr));
  EXPECT_EQ(values_of(s.get()), std::vector<float>({2.0f * 1, 3.0f * 1, 4.0f * 2}));
  sfac_sparse* raw = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_coo(ctx.get(), 3, 2, 0, nullptr, nullptr, nullptr, 0, &raw));
  Sparse empty(raw);
  std::vector<int64_t> col_offsets(3, -1);
  SFAC_ASSERT_OK(sfac_sparse_download_csc(empty.get(), col_offsets.data(),
                                          static_cast<int64_t>(col_offsets.size()), nullptr,
                                          nullptr, 0));
  EXPECT_EQ(col_offsets, std::vector<int64_t>({0, 0, 0}));
  SFAC_EXPECT_STATUS(SFAC_OK, sfac_sddmm(ctx.get(), SFAC_SDDMM_PATTERN, 1.0f, a.get(), b.get(),
                                         empty.get(), 0.0f, empty.get(), nullptr));
}

// The CUSPARSE algorithm (cusparseSDDMM): every mode, in place and with beta, against the fp64
// reference; 16-bit factors on its plan run the library's kernels. beta = 0 overwrites NaN (the
// SCALED product of overflowing factors with zeros); the plan keeps the pattern of a matrix
// destroyed after it was made, and serves outputs at several addresses (cuSPARSE's buffer is
// made active for one sparse descriptor, whose values each call replaces). AUTO picks it for a
// small pattern 10% dense from K = 48, not at K = 32 nor for a sparse pattern; an empty pattern
// runs nothing.
TEST(Cuda, SddmmCusparseMatchesTheReferenceInEveryMode) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 37);
  Context ctx = make_cuda_context();
  Pattern p = make_pattern(600, 500, 32000, false, g);
  Sparse s = create_sparse(ctx.get(), p);
  const StoredCsr csr = download(s.get());
  for (const int64_t k : {1, 7, 64, 100}) {
    Plan plan = make_plan(ctx.get(), s.get(), k, SFAC_SDDMM_ALG_CUSPARSE);
    ASSERT_TRUE(plan);
    EXPECT_EQ(algorithm_of(plan.get()), SFAC_SDDMM_ALG_CUSPARSE);
    SCOPED_TRACE(testing::Message() << "k=" << k);
    expect_plan_matches(ctx.get(), s.get(), csr, p.rows, p.cols, k,
                        {SFAC_DTYPE_FLOAT32, SFAC_DTYPE_BFLOAT16}, plan.get(), g);
  }
  const int64_t nnz = static_cast<int64_t>(csr.cols.size());
  EXPECT_EQ(algorithm_of(make_plan(ctx.get(), s.get(), 64, SFAC_SDDMM_ALG_AUTO).get()),
            SFAC_SDDMM_ALG_CUSPARSE)
      << nnz << " nonzeros in 600 x 500";
  EXPECT_NE(algorithm_of(make_plan(ctx.get(), s.get(), 32, SFAC_SDDMM_ALG_AUTO).get()),
            SFAC_SDDMM_ALG_CUSPARSE);
  {
    Sparse sparse = create_sparse(ctx.get(), make_pattern(3000, 3000, 20000, false, g));
    EXPECT_NE(algorithm_of(make_plan(ctx.get(), sparse.get(), 64, SFAC_SDDMM_ALG_AUTO).get()),
              SFAC_SDDMM_ALG_CUSPARSE);
  }
  // A plan of a matrix destroyed after it was made, used on matrices sharing its pattern: P,
  // NaN everywhere (overflowing factors, 1e20^2 = inf, times S = 0), and S with csr's values.
  Sparse base = create_sparse(ctx.get(), p);
  sfac_sparse* raw_p = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_like(base.get(), std::vector<float>(nnz, 0.0f).data(), &raw_p));
  Sparse poisoned(raw_p);
  sfac_sparse* raw_s = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_like(base.get(), csr.values.data(), &raw_s));
  Sparse s_like(raw_s);
  {
    Dense big_a = dense(ctx.get(), p.rows, 1, std::vector<float>(p.rows, 1e20f));
    Dense big_b = dense(ctx.get(), p.cols, 1, std::vector<float>(p.cols, 1e20f));
    SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_SCALED, 1.0f, big_a.get(), big_b.get(),
                              poisoned.get(), 0.0f, poisoned.get(), nullptr));
    for (float v : values_of(poisoned.get())) ASSERT_TRUE(std::isnan(v)) << v;
  }
  const int64_t k = 8;
  std::normal_distribution<float> d;
  std::vector<float> a(p.rows * k), b(p.cols * k);
  for (float& x : a) x = d(g);
  for (float& x : b) x = d(g);
  Dense da = dense(ctx.get(), p.rows, k, a), db = dense(ctx.get(), p.cols, k, b);
  Plan plan = make_plan(ctx.get(), base.get(), k, SFAC_SDDMM_ALG_CUSPARSE);
  base.reset();
  for (const sfac_sddmm_mode mode : {SFAC_SDDMM_PATTERN, SFAC_SDDMM_RESIDUAL}) {
    SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), mode, 1.0f, da.get(), db.get(), s_like.get(), 0.0f,
                              poisoned.get(), plan.get()));
    const std::vector<float> got = values_of(poisoned.get());
    for (int64_t i = 0; i < p.rows; ++i) {
      for (int64_t e = csr.off[i]; e < csr.off[i + 1]; ++e) {
        const Dot ref = reference_dot(a, b, i, csr.cols[e], k);
        const double want = mode == SFAC_SDDMM_PATTERN ? ref.value : csr.values[e] - ref.value;
        ASSERT_NEAR(got[e], want, 1e-5 * (ref.magnitude + std::abs(csr.values[e])) + 1e-6)
            << "mode=" << mode << " e=" << e;
      }
    }
  }
  sfac_sparse* raw_empty = nullptr;
  SFAC_ASSERT_OK(
      sfac_sparse_create_coo(ctx.get(), 3, 2, 0, nullptr, nullptr, nullptr, 0, &raw_empty));
  Sparse empty(raw_empty);
  Plan empty_plan = make_plan(ctx.get(), empty.get(), 2, SFAC_SDDMM_ALG_CUSPARSE);
  Dense a2 = dense(ctx.get(), 3, 2, std::vector<float>(6, 1.0f));
  Dense b2 = dense(ctx.get(), 2, 2, std::vector<float>(4, 1.0f));
  SFAC_EXPECT_STATUS(SFAC_OK, sfac_sddmm(ctx.get(), SFAC_SDDMM_SCALED, 1.0f, a2.get(), b2.get(),
                                         empty.get(), 0.0f, empty.get(), empty_plan.get()));
}

// Calls queued back to back, each reading what the previous one wrote (residual in place: S -
// dot, 32 times): on devices that launch the nonzero-split and cell kernels as programmatic
// dependents of the previous kernel (TILED runs cells here; AUTO runs cuSPARSE from K = 48, with
// its elementwise pass), a call that started
// reading before its predecessor finished would see stale values. The pattern is a few percent
// dense, with rows long and short, so that a call takes tens of microseconds and several blocks
// per SM. The window is short: with the nonzero-split kernel's wait removed, this test failed in
// 1 of 8 runs on an H100 (docs/perf-notes.md).
TEST(Cuda, SddmmCallsBackToBackSeeEachOthersWrites) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 23);
  Context ctx = make_cuda_context();
  const Pattern p = make_pattern(2000, 2000, 200000, false, g);
  Sparse s = create_sparse(ctx.get(), p);
  const StoredCsr stored = download(s.get());
  std::normal_distribution<float> d;
  constexpr int kCalls = 32;
  for (int64_t k : {32, 128, 512}) {
    std::vector<float> a(p.rows * k), b(p.cols * k);
    for (float& x : a) x = d(g);
    for (float& x : b) x = d(g);
    Dense da = dense(ctx.get(), p.rows, k, a), db = dense(ctx.get(), p.cols, k, b);
    for (sfac_sddmm_algorithm alg :
         {SFAC_SDDMM_ALG_NNZ_SPLIT, SFAC_SDDMM_ALG_TILED, SFAC_SDDMM_ALG_AUTO}) {
      sfac_sparse* raw = nullptr;
      SFAC_ASSERT_OK(sfac_sparse_create_like(s.get(), stored.values.data(), &raw));
      Sparse chain(raw);
      Plan plan = make_plan(ctx.get(), s.get(), k, alg);
      for (int call = 0; call < kCalls; ++call) {
        SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_RESIDUAL, 1.0f, da.get(), db.get(),
                                  chain.get(), 0.0f, chain.get(), plan.get()));
      }
      const std::vector<float> got = values_of(chain.get());
      for (int64_t i = 0; i < p.rows; ++i) {
        for (int64_t e = stored.off[i]; e < stored.off[i + 1]; ++e) {
          const Dot dot = reference_dot(a, b, i, stored.cols[e], k);
          const double want = stored.values[e] - kCalls * dot.value;
          const double tol = 1e-5 * (std::abs(stored.values[e]) + kCalls * dot.magnitude) + 1e-6;
          ASSERT_NEAR(got[e], want, tol) << "k=" << k << " alg=" << alg << " e=" << e;
        }
      }
    }
  }
}

TEST(Cuda, OutOfMemoryIsAStatusAndTheContextStaysUsable) {
  SFAC_REQUIRE_CUDA_DEVICE();
  Context ctx = make_cuda_context();
  sfac_dense* raw = reinterpret_cast<sfac_dense*>(0x1234);
  // 2^31 x 2^14 floats = 128 TiB: more than any device.
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_MEMORY, "cudaMallocFromPoolAsync",
                    sfac_dense_create(ctx.get(), int64_t{1} << 30, int64_t{1} << 15,
                                      SFAC_DTYPE_FLOAT32, nullptr, &raw));
  EXPECT_EQ(raw, reinterpret_cast<sfac_dense*>(0x1234));
  Dense small = dense(ctx.get(), 4, 4, std::vector<float>(16, 1.0f));
  std::vector<float> back(16);
  SFAC_ASSERT_OK(sfac_dense_download(small.get(), back.data(), static_cast<int64_t>(back.size())));
  EXPECT_EQ(back, std::vector<float>(16, 1.0f));
  SFAC_EXPECT_STATUS(SFAC_OK, sfac_context_synchronize(ctx.get()));
}

// Objects of a CPU context cannot be mixed into a CUDA call.
TEST(Cuda, ObjectsOfACpuContextAreRejected) {
  SFAC_REQUIRE_CUDA_DEVICE();
  Context ctx = make_cuda_context();
  const Pattern p{3, 2, {0, 2}, {1, 0}, {2.0f, 3.0f}};
  Context cpu = make_cpu_context(1);
  Sparse on_cpu = create_sparse(cpu.get(), p);
  Dense a = dense(ctx.get(), 3, 4, std::vector<float>(12, 1.0f));
  Dense b = dense(ctx.get(), 2, 4, std::vector<float>(8, 1.0f));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "another backend",
                    sfac_sddmm(ctx.get(), SFAC_SDDMM_PATTERN, 1.0f, a.get(), b.get(), on_cpu.get(),
                               0.0f, on_cpu.get(), nullptr));
}

// Half-precision storage: results must match an fp64 reference computed from the stored
// (rounded) factors, since arithmetic is float32.
TEST(Cuda, SddmmWithHalfPrecisionFactorsMatchesTheReferenceOnStoredValues) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 23);
  Context ctx = make_cuda_context();
  std::normal_distribution<float> d;
  const Pattern p = make_pattern(300, 250, 9000, true, g);
  Sparse s = create_sparse(ctx.get(), p);
  const auto [off, cols, sv] = download(s.get());
  const int64_t nnz = static_cast<int64_t>(cols.size());
  for (sfac_dtype dtype : {SFAC_DTYPE_FLOAT16, SFAC_DTYPE_BFLOAT16}) {
    for (int64_t k : {3, 8, 32, 100, 128, 512}) {
      std::vector<float> a(p.rows * k), b(p.cols * k);
      for (float& x : a) x = d(g);
      for (float& x : b) x = d(g);
      const Factors f = upload_factors(ctx.get(), p.rows, p.cols, k, dtype, a, b);
      sfac_dtype got_dtype = SFAC_DTYPE_FLOAT32;
      SFAC_ASSERT_OK(sfac_dense_get_dtype(f.a.get(), &got_dtype));
      EXPECT_EQ(got_dtype, dtype);
      // The stored values: rounded, within the type's relative precision of the input.
      const double eps = dtype == SFAC_DTYPE_FLOAT16 ? 1.0 / 2048 : 1.0 / 256;
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_NEAR(f.stored_a[i], a[i], eps * std::abs(a[i]) + 1e-7);
      for (sfac_sddmm_algorithm alg :
           {SFAC_SDDMM_ALG_ROW_SPLIT, SFAC_SDDMM_ALG_NNZ_SPLIT, SFAC_SDDMM_ALG_TILED}) {
        Plan plan = make_plan(ctx.get(), s.get(), k, alg);
        ASSERT_TRUE(plan);
        sfac_sparse* raw_p = nullptr;
        SFAC_ASSERT_OK(
            sfac_sparse_create_like(s.get(), std::vector<float>(nnz, 1e30f).data(), &raw_p));
        Sparse out(raw_p);
        SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_RESIDUAL, 1.0f, f.a.get(), f.b.get(),
                                  s.get(), 0.0f, out.get(), plan.get()));
        const std::vector<float> got = values_of(out.get());
        for (int64_t i = 0; i < p.rows; ++i) {
          for (int64_t e = off[i]; e < off[i + 1]; ++e) {
            const Dot ref = reference_dot(f.stored_a, f.stored_b, i, cols[e], k);
            const double dot = ref.value, mag = ref.magnitude;
            ASSERT_NEAR(got[e], sv[e] - dot, 1e-5 * (mag + std::abs(sv[e])) + 1e-6)
                << "dtype=" << dtype << " k=" << k << " alg=" << alg << " e=" << e;
          }
        }
      }
    }
  }
}

// A dense pattern (~6%, 333 x 290: partial tiles in both directions, an empty row, a full
// row): AUTO keeps the nonzero split at K = 72 and picks TILED at K = 264, whose 16-bit calls
// run the tensor-core tiles (four full 64-wide slices and a partial one) in every mode, in
// place too; float32 on the same plan runs the cells. All against the fp64 reference on the
// stored factors.
TEST(Cuda, SddmmDenseTilesMatchTheReferenceOnDensePatterns) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 41);
  Context ctx = make_cuda_context();
  const int64_t rows = 333, cols = 290, k = 264;
  Pattern p{rows, cols, {}, {}, {}};
  std::bernoulli_distribution keep(0.06);
  std::normal_distribution<float> d;
  for (int32_t i = 0; i < rows; ++i) {
    for (int32_t c = 0; c < cols; ++c) {
      if (i == 7) continue;  // empty row
      if (i == 100 || keep(g)) {
        p.r.push_back(i);
        p.c.push_back(c);
        p.v.push_back(d(g));
      }
    }
  }
  Sparse s = create_sparse(ctx.get(), p);
  const StoredCsr csr = download(s.get());
  // AUTO hands float32 factors on this small pattern 6% dense to cuSPARSE; its 16-bit calls run
  // the dense tiles (from K = 256) of the TILED plan AUTO makes beside it.
  EXPECT_EQ(algorithm_of(make_plan(ctx.get(), s.get(), 72, SFAC_SDDMM_ALG_AUTO).get()),
            SFAC_SDDMM_ALG_CUSPARSE);
  Plan plan = make_plan(ctx.get(), s.get(), k, SFAC_SDDMM_ALG_AUTO);
  ASSERT_TRUE(plan);
  EXPECT_EQ(algorithm_of(plan.get()), SFAC_SDDMM_ALG_CUSPARSE);
  expect_plan_matches(ctx.get(), s.get(), csr, rows, cols, k,
                      {SFAC_DTYPE_FLOAT16, SFAC_DTYPE_BFLOAT16, SFAC_DTYPE_FLOAT32}, plan.get(), g);
}

// Uniform pattern of the given density with an empty row (9), an empty column (300) and a full
// row (260), where the shape has them.
Pattern dense_ish_pattern(int64_t rows, int64_t cols, double density, std::mt19937_64& g) {
  Pattern p{rows, cols, {}, {}, {}};
  std::bernoulli_distribution keep(density);
  std::normal_distribution<float> d;
  for (int32_t i = 0; i < rows; ++i) {
    for (int32_t c = 0; c < cols; ++c) {
      if (i == 9 || c == 300) continue;
      if (i == 260 || keep(g)) {
        p.r.push_back(i);
        p.c.push_back(c);
        p.v.push_back(d(g));
      }
    }
  }
  return p;
}

// Cells (sddmm_cells.cuh), which explicit TILED runs for every element type and K on patterns at
// least 2% dense: a 700 x 600 pattern at ~5% (3 x 3 cells, the last row block and band partial,
// an empty row, a full row and an empty column) with K split over clusters of up to 8 parts
// (the last chunk partial at K = 100 and 136), and a 40% dense 300 x 280 pattern whose cells
// need several passes of shared-memory slots (explicit TILED; AUTO hands such patterns to
// cuSPARSE). Every mode, in place too, against the fp64 reference.
TEST(Cuda, SddmmCellsMatchTheReferenceAcrossPartsAndPasses) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 45);
  Context ctx = make_cuda_context();
  struct Shape {
    int64_t rows, cols;
    double density;
  };
  for (Shape shape : {Shape{700, 600, 0.05}, Shape{300, 280, 0.4}}) {
    Sparse s =
        create_sparse(ctx.get(), dense_ish_pattern(shape.rows, shape.cols, shape.density, g));
    const StoredCsr csr = download(s.get());
    struct Run {
      int64_t k;
      sfac_dtype dtype;
    };
    for (Run run :
         {Run{4, SFAC_DTYPE_FLOAT32}, Run{32, SFAC_DTYPE_FLOAT32}, Run{100, SFAC_DTYPE_FLOAT32},
          Run{512, SFAC_DTYPE_FLOAT32}, Run{8, SFAC_DTYPE_BFLOAT16}, Run{136, SFAC_DTYPE_FLOAT16},
          Run{128, SFAC_DTYPE_BFLOAT16}}) {
      Plan plan = make_plan(ctx.get(), s.get(), run.k, SFAC_SDDMM_ALG_TILED);
      ASSERT_TRUE(plan);
      SCOPED_TRACE(testing::Message() << "rows=" << shape.rows << " k=" << run.k);
      expect_plan_matches(ctx.get(), s.get(), csr, shape.rows, shape.cols, run.k, {run.dtype},
                          plan.get(), g);
    }
    // AUTO hands float32 factors on these small dense patterns to cuSPARSE (16-bit calls run
    // the plan AUTO makes beside it) from K = 48.
    for (auto [k, want] : {std::pair{int64_t{32}, SFAC_SDDMM_ALG_NNZ_SPLIT},
                           std::pair{int64_t{200}, SFAC_SDDMM_ALG_CUSPARSE}}) {
      Plan plan = make_plan(ctx.get(), s.get(), k, SFAC_SDDMM_ALG_AUTO);
      ASSERT_TRUE(plan);
      EXPECT_EQ(algorithm_of(plan.get()), want) << "k=" << k;
      if (k == 200) {
        SCOPED_TRACE(testing::Message() << "auto rows=" << shape.rows << " k=" << k);
        expect_plan_matches(ctx.get(), s.get(), csr, shape.rows, shape.cols, k,
                            {SFAC_DTYPE_FLOAT32, SFAC_DTYPE_BFLOAT16}, plan.get(), g);
      }
    }
  }
}

// The smallest case with every part of the cell kernel (a cluster of 4 parts adding their
// sums through distributed shared memory, three chunks in flight, several passes of slots), for
// racecheck, which the test above would keep busy for many minutes.
TEST(Cuda, SddmmCellsOnAClusterWithPasses) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 46);
  Context ctx = make_cuda_context();
  Sparse s = create_sparse(ctx.get(), dense_ish_pattern(300, 280, 0.4, g));
  const StoredCsr csr = download(s.get());
  Plan plan = make_plan(ctx.get(), s.get(), 100, SFAC_SDDMM_ALG_TILED);
  ASSERT_TRUE(plan);
  expect_plan_matches(ctx.get(), s.get(), csr, 300, 280, 100, {SFAC_DTYPE_FLOAT32}, plan.get(), g);
}

// A power-law pattern (rows and columns both skewed, ids shuffled so that the dense corner is
// scattered over the id space, plus an empty row and an empty column) at ~1%: too sparse for
// the dense grid, but the top tiles of the degree-ranked matrix are dense, so AUTO builds
// corner tables at K = 256 and its 16-bit calls run the corner tiles plus the nonzero split
// on the residual; float32 on the same plan runs the nonzero split. Explicit TILED builds them
// at K = 136 (a partial 64-wide slice). Every mode, in place too, against the fp64 reference.
TEST(Cuda, SddmmCornerTilesMatchTheReferenceOnPowerLawPatterns) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 43);
  Context ctx = make_cuda_context();
  const int64_t rows = 2500, cols = 1800;
  std::vector<int32_t> row_id(rows), col_id(cols);
  std::iota(row_id.begin(), row_id.end(), 0);
  std::iota(col_id.begin(), col_id.end(), 0);
  std::shuffle(row_id.begin(), row_id.end(), g);
  std::shuffle(col_id.begin(), col_id.end(), g);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<float> d;
  Pattern p{rows, cols, {}, {}, {}};
  std::vector<char> seen(static_cast<size_t>(rows * cols), 0);
  for (int n = 0; n < 45000; ++n) {
    const int32_t i = row_id[std::min<int64_t>(rows - 1, int64_t(rows * std::pow(u(g), 2.5)))];
    const int32_t j = col_id[std::min<int64_t>(cols - 1, int64_t(cols * std::pow(u(g), 2.5)))];
    if (i == row_id[0] || j == col_id[1] || seen[size_t(i) * cols + j]++) continue;
    p.r.push_back(i);
    p.c.push_back(j);
    p.v.push_back(d(g));
  }
  Sparse s = create_sparse(ctx.get(), p);
  const StoredCsr csr = download(s.get());
  for (auto [k, alg] : {std::pair{int64_t{256}, SFAC_SDDMM_ALG_AUTO},
                        std::pair{int64_t{136}, SFAC_SDDMM_ALG_TILED}}) {
    Plan plan = make_plan(ctx.get(), s.get(), k, alg);
    ASSERT_TRUE(plan);
    EXPECT_EQ(algorithm_of(plan.get()), SFAC_SDDMM_ALG_TILED) << "k=" << k;
    SCOPED_TRACE(testing::Message() << "k=" << k);
    expect_plan_matches(ctx.get(), s.get(), csr, rows, cols, k,
                        {SFAC_DTYPE_BFLOAT16, SFAC_DTYPE_FLOAT16, SFAC_DTYPE_FLOAT32}, plan.get(),
                        g);
  }
}

// A pattern that is one dense 128 x 128 block at scattered rows and columns of a 1000 x 1000
// matrix (1.6%: too sparse for the dense grid): the block is one corner tile holding every
// nonzero, so nothing is left for the residual.
TEST(Cuda, SddmmCornerTilesWithoutResidual) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 47);
  Context ctx = make_cuda_context();
  const int64_t n = 1000, k = 64;
  std::vector<int32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), g);
  std::vector<int32_t> rows(ids.begin(), ids.begin() + 128), cols(ids.end() - 128, ids.end());
  std::normal_distribution<float> d;
  Pattern p{n, n, {}, {}, {}};
  for (int32_t i : rows) {
    for (int32_t j : cols) {
      p.r.push_back(i);
      p.c.push_back(j);
      p.v.push_back(d(g));
    }
  }
  Sparse s = create_sparse(ctx.get(), p);
  const StoredCsr csr = download(s.get());
  Plan plan = make_plan(ctx.get(), s.get(), k, SFAC_SDDMM_ALG_TILED);
  ASSERT_TRUE(plan);
  expect_plan_matches(ctx.get(), s.get(), csr, n, n, k, {SFAC_DTYPE_BFLOAT16}, plan.get(), g);
}

#ifdef SFAC_TEST_CUDART
// A caller's stream: sfac_sddmm is queued on it (captured into a CUDA graph, so a kernel queued
// anywhere else would leave P poisoned), objects made and destroyed while it is set stay
// ordered with it, and NULL restores the context's own stream.
TEST(Cuda, SddmmRunsOnTheCallersStream) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 59);
  Context ctx = make_cuda_context();
  void* own = nullptr;
  SFAC_ASSERT_OK(sfac_context_get_stream(ctx.get(), &own));
  ASSERT_NE(own, nullptr);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  SFAC_ASSERT_OK(sfac_context_set_stream(ctx.get(), stream));
  void* current = nullptr;
  SFAC_ASSERT_OK(sfac_context_get_stream(ctx.get(), &current));
  EXPECT_EQ(current, static_cast<void*>(stream));

  const Pattern p = make_pattern(300, 200, 6000, false, g);
  Sparse s = create_sparse(ctx.get(), p);
  const StoredCsr csr = download(s.get());
  const int64_t nnz = static_cast<int64_t>(csr.cols.size()), k = 32;
  std::normal_distribution<float> d;
  std::vector<float> a(p.rows * k), b(p.cols * k);
  for (float& x : a) x = d(g);
  for (float& x : b) x = d(g);
  Dense da = dense(ctx.get(), p.rows, k, a), db = dense(ctx.get(), p.cols, k, b);
  Plan plan = make_plan(ctx.get(), s.get(), k, SFAC_SDDMM_ALG_NNZ_SPLIT);
  ASSERT_TRUE(plan);
  const std::vector<float> poison(nnz, 1e30f);
  sfac_sparse* raw_p = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_like(s.get(), poison.data(), &raw_p));
  Sparse out(raw_p);

  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const sfac_status status = sfac_sddmm(ctx.get(), SFAC_SDDMM_PATTERN, 1.0f, da.get(), db.get(),
                                        s.get(), 0.0f, out.get(), plan.get());
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(status, SFAC_OK) << sfac_last_error();
  // Captured, not run: P is still poisoned.
  EXPECT_EQ(values_of(out.get())[0], 1e30f);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  const std::vector<float> got = values_of(out.get());  // ordered after the stream's work
  for (int64_t i = 0; i < p.rows; ++i) {
    for (int64_t e = csr.off[i]; e < csr.off[i + 1]; ++e) {
      const Dot ref = reference_dot(a, b, i, csr.cols[e], k);
      ASSERT_NEAR(got[e], ref.value, 1e-5 * ref.magnitude + 1e-6) << "e=" << e;
    }
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);

  // Objects made, used and destroyed while the stream is set (their memory is freed after the
  // stream's work), then the own stream again, the caller's stream destroyed.
  {
    sfac_sparse* raw_q = nullptr;
    SFAC_ASSERT_OK(sfac_sparse_create_like(s.get(), nullptr, &raw_q));
    Sparse q(raw_q);
    SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_PATTERN, 2.0f, da.get(), db.get(), s.get(),
                              0.0f, q.get(), nullptr));
  }
  SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_PATTERN, -1.0f, da.get(), db.get(), s.get(), 0.0f,
                            out.get(), plan.get()));
  SFAC_ASSERT_OK(sfac_context_set_stream(ctx.get(), nullptr));
  SFAC_ASSERT_OK(sfac_context_get_stream(ctx.get(), &current));
  EXPECT_EQ(current, own);
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  const std::vector<float> negated = values_of(out.get());
  for (int64_t e = 0; e < nnz; ++e) ASSERT_EQ(negated[e], -got[e]) << "e=" << e;
  SFAC_ASSERT_OK(sfac_context_synchronize(ctx.get()));
}
#endif

// COO and CSC input is sorted and deduplicated on the device for CUDA contexts: the CSR must
// be bit for bit the host's (duplicates summed in input order, runs of up to 5 with values of
// mixed magnitude so another summation order would show), with the same duplicate message.
TEST(Cuda, CooAndCscInputBuildTheSameCsrAsTheHost) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 61);
  Context gpu = make_cuda_context();
  Context cpu = make_cpu_context(2);
  const int64_t rows = 700, cols = 500;
  std::uniform_int_distribution<int32_t> row(0, rows - 1), col(0, cols - 1), copies(1, 5);
  std::uniform_real_distribution<float> mag(-8.0f, 8.0f);
  std::vector<int32_t> r, c;
  std::vector<float> v;
  for (int n = 0; n < 20000; ++n) {
    const int32_t i = row(g), j = col(g);
    if (i == 3) continue;  // an empty row
    for (int t = copies(g) == 5 ? 5 : 1; t > 0; --t) {
      r.push_back(i);
      c.push_back(j);
      v.push_back(std::ldexp(mag(g), static_cast<int>(mag(g) * 2)));
    }
  }
  // Shuffle, so rows and copies arrive in any order.
  std::vector<size_t> perm(r.size());
  std::iota(perm.begin(), perm.end(), size_t{0});
  std::shuffle(perm.begin(), perm.end(), g);
  std::vector<int32_t> rs(r.size()), cs(r.size());
  std::vector<float> vs(r.size());
  for (size_t e = 0; e < perm.size(); ++e) {
    rs[e] = r[perm[e]];
    cs[e] = c[perm[e]];
    vs[e] = v[perm[e]];
  }
  const int64_t nnz = static_cast<int64_t>(rs.size());
  auto build = [&](sfac_context* ctx, const float* values, uint32_t flags, sfac_sparse** out) {
    return sfac_sparse_create_coo(ctx, rows, cols, nnz, rs.data(), cs.data(), values, flags, out);
  };
  auto same = [&](const sfac_sparse* x, const sfac_sparse* y) {
    const StoredCsr a = download(x), b = download(y);
    EXPECT_EQ(a.off, b.off);
    EXPECT_EQ(a.cols, b.cols);
    ASSERT_EQ(a.values.size(), b.values.size());
    for (size_t e = 0; e < a.values.size(); ++e) {
      ASSERT_EQ(a.values[e], b.values[e]) << "e=" << e;  // bit for bit, not within a tolerance
    }
  };
  for (const float* values :
       {static_cast<const float*>(vs.data()), static_cast<const float*>(nullptr)}) {
    sfac_sparse *x = nullptr, *y = nullptr;
    SFAC_ASSERT_OK(build(gpu.get(), values, SFAC_SPARSE_SUM_DUPLICATES, &x));
    SFAC_ASSERT_OK(build(cpu.get(), values, SFAC_SPARSE_SUM_DUPLICATES, &y));
    Sparse sx(x), sy(y);
    same(sx.get(), sy.get());
  }
  // Duplicates under the error policy: same status, same message, no matrix.
  sfac_sparse* none = nullptr;
  SFAC_EXPECT_STATUS(SFAC_ERR_DUPLICATE_ENTRY, build(cpu.get(), vs.data(), 0, &none));
  const std::string host_message = sfac_last_error();
  SFAC_EXPECT_STATUS(SFAC_ERR_DUPLICATE_ENTRY, build(gpu.get(), vs.data(), 0, &none));
  EXPECT_EQ(std::string(sfac_last_error()), host_message);
  EXPECT_EQ(none, nullptr);
  // CSC input: the host's CSR of the summed matrix, given back column by column.
  sfac_sparse* summed = nullptr;
  SFAC_ASSERT_OK(build(cpu.get(), vs.data(), SFAC_SPARSE_SUM_DUPLICATES, &summed));
  Sparse host(summed);
  int64_t unique = 0;
  SFAC_ASSERT_OK(sfac_sparse_get_shape(host.get(), nullptr, nullptr, &unique));
  std::vector<int64_t> coff(cols + 1);
  std::vector<int32_t> crow(unique);
  std::vector<float> cval(unique);
  SFAC_ASSERT_OK(sfac_sparse_download_csc(host.get(), coff.data(),
                                          static_cast<int64_t>(coff.size()), crow.data(),
                                          cval.data(), static_cast<int64_t>(crow.size())));
  sfac_sparse* from_csc = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_csc(gpu.get(), rows, cols, coff.data(), crow.data(),
                                        cval.data(), static_cast<int64_t>(crow.size()), 0,
                                        &from_csc));
  Sparse device_csc(from_csc);
  same(device_csc.get(), host.get());
  // Empty input and an empty matrix.
  for (auto [m, n] : {std::pair<int64_t, int64_t>{5, 4}, {0, 0}}) {
    sfac_sparse* empty = nullptr;
    SFAC_ASSERT_OK(
        sfac_sparse_create_coo(gpu.get(), m, n, 0, nullptr, nullptr, nullptr, 0, &empty));
    Sparse e(empty);
    const StoredCsr d = download(e.get());
    EXPECT_EQ(d.off, std::vector<int64_t>(m + 1, 0));
    EXPECT_TRUE(d.cols.empty());
  }
}

// Degree orders and permutations computed on the device: bit for bit the host's, for skewed
// patterns with many equal degrees, an empty row and one huge row, and for factor rows of every
// gather width (16, 8, 4 and 2 bytes).
TEST(Cuda, DegreeOrdersAndPermutationsMatchTheHost) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 71);
  Context gpu = make_cuda_context();
  Context cpu = make_cpu_context(2);
  for (const auto& [rows, cols, draws] : {std::tuple{300, 40, 3000}, {20000, 5000, 400000}}) {
    const Pattern p = make_pattern(rows, cols, draws, true, g);
    const Sparse on_gpu = create_sparse(gpu.get(), p), on_cpu = create_sparse(cpu.get(), p);
    std::vector<int32_t> orders[2];
    for (const sfac_axis axis : {SFAC_AXIS_ROWS, SFAC_AXIS_COLS}) {
      const int64_t n = axis == SFAC_AXIS_ROWS ? rows : cols;
      std::vector<int32_t> device(n, -1), host(n, -2);
      SFAC_ASSERT_OK(sfac_sparse_degree_order(on_gpu.get(), axis, device.data(),
                                              static_cast<int64_t>(device.size())));
      SFAC_ASSERT_OK(sfac_sparse_degree_order(on_cpu.get(), axis, host.data(),
                                              static_cast<int64_t>(host.size())));
      EXPECT_EQ(device, host) << "axis " << axis;
      orders[axis] = host;
    }
    std::vector<int32_t> shuffled_rows(rows), shuffled_cols(cols);
    std::iota(shuffled_rows.begin(), shuffled_rows.end(), 0);
    std::iota(shuffled_cols.begin(), shuffled_cols.end(), 0);
    std::shuffle(shuffled_rows.begin(), shuffled_rows.end(), g);
    std::shuffle(shuffled_cols.begin(), shuffled_cols.end(), g);
    const std::pair<const int32_t*, const int32_t*> cases[] = {
        {orders[0].data(), orders[1].data()},
        {shuffled_rows.data(), shuffled_cols.data()},
        {shuffled_rows.data(), nullptr},
        {nullptr, shuffled_cols.data()},
        {nullptr, nullptr}};
    for (const auto& [row_order, col_order] : cases) {
      sfac_sparse *x = nullptr, *y = nullptr;
      SFAC_ASSERT_OK(sfac_sparse_permute(on_gpu.get(), row_order, col_order, &x));
      SFAC_ASSERT_OK(sfac_sparse_permute(on_cpu.get(), row_order, col_order, &y));
      const Sparse px(x), py(y);
      const StoredCsr a = download(px.get()), b = download(py.get());
      EXPECT_EQ(a.off, b.off);
      EXPECT_EQ(a.cols, b.cols);
      EXPECT_EQ(a.values, b.values);  // moved, never recomputed: exact
    }
  }
  for (const sfac_dtype dtype : {SFAC_DTYPE_FLOAT32, SFAC_DTYPE_BFLOAT16}) {
    for (const int64_t cols : {1, 3, 4, 8, 33}) {
      const int64_t rows = 1001;
      std::normal_distribution<float> d;
      std::vector<float> data(rows * cols), stored(rows * cols);
      for (float& x : data) x = d(g);
      sfac_dense* raw = nullptr;
      SFAC_ASSERT_OK(sfac_dense_create(gpu.get(), rows, cols, dtype, data.data(), &raw));
      const Dense source(raw);
      SFAC_ASSERT_OK(
          sfac_dense_download(source.get(), stored.data(), static_cast<int64_t>(stored.size())));
      std::vector<int32_t> order(rows);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), g);
      SFAC_ASSERT_OK(sfac_dense_permute_rows(source.get(), order.data(), &raw));
      const Dense permuted(raw);
      sfac_dtype got_dtype = SFAC_DTYPE_FLOAT32;
      SFAC_ASSERT_OK(sfac_dense_get_dtype(permuted.get(), &got_dtype));
      EXPECT_EQ(got_dtype, dtype);
      std::vector<float> got(rows * cols, std::nanf(""));
      SFAC_ASSERT_OK(
          sfac_dense_download(permuted.get(), got.data(), static_cast<int64_t>(got.size())));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          ASSERT_EQ(got[r * cols + c], stored[order[r] * cols + c])
              << "dtype " << dtype << " cols " << cols << " row " << r;
        }
      }
    }
  }
}

// Degenerate and reordered shapes for every algorithm and the K values: a matrix of one
// column (every other row holding its one nonzero), a wide matrix whose nonzeros all sit in one
// column, and a pattern whose rows were renumbered by a random permutation after keeping every
// third row (the non-contiguous row ids a degree reordering leaves), in float32 and bfloat16.
TEST(Cuda, SddmmOnSingleColumnsAndReorderedRows) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 67);
  Context ctx = make_cuda_context();
  std::bernoulli_distribution half(0.5), keep(0.08);
  std::normal_distribution<float> d;
  std::vector<Pattern> patterns;
  Pattern one{900, 1, {}, {}, {}};
  for (int32_t i = 0; i < one.rows; i += 2) {
    one.r.push_back(i);
    one.c.push_back(0);
    one.v.push_back(d(g));
  }
  patterns.push_back(one);
  Pattern column{700, 400, {}, {}, {}};
  for (int32_t i = 0; i < column.rows; ++i) {
    if (half(g)) continue;
    column.r.push_back(i);
    column.c.push_back(257);
    column.v.push_back(d(g));
  }
  patterns.push_back(column);
  const int64_t rows = 1500, cols = 300;
  std::vector<int32_t> renumber(rows);
  std::iota(renumber.begin(), renumber.end(), 0);
  std::shuffle(renumber.begin(), renumber.end(), g);
  Pattern reordered{rows, cols, {}, {}, {}};
  for (int32_t i = 0; i < rows; i += 3) {
    for (int32_t j = 0; j < cols; ++j) {
      if (!keep(g)) continue;
      reordered.r.push_back(renumber[i]);
      reordered.c.push_back(j);
      reordered.v.push_back(d(g));
    }
  }
  patterns.push_back(reordered);
  for (const Pattern& p : patterns) {
    Sparse s = create_sparse(ctx.get(), p);
    const StoredCsr csr = download(s.get());
    for (int64_t k : {1, 3, 32, 100, 128, 512}) {
      for (sfac_sddmm_algorithm alg : {SFAC_SDDMM_ALG_AUTO, SFAC_SDDMM_ALG_ROW_SPLIT,
                                       SFAC_SDDMM_ALG_NNZ_SPLIT, SFAC_SDDMM_ALG_TILED}) {
        Plan plan = make_plan(ctx.get(), s.get(), k, alg);
        ASSERT_TRUE(plan);
        SCOPED_TRACE(testing::Message()
                     << p.rows << " x " << p.cols << " k=" << k << " alg=" << alg);
        expect_plan_matches(ctx.get(), s.get(), csr, p.rows, p.cols, k,
                            {SFAC_DTYPE_FLOAT32, SFAC_DTYPE_BFLOAT16}, plan.get(), g);
      }
    }
  }
}

// Rows long on average (the nonzero split then skips row_of inside a row) but of every length:
// long rows that start and end inside a warp's pass and inside a chunk, empty rows and rows of
// one to a few nonzeros between them, so warps cross rows at every offset. Over a million
// nonzeros, so that each warp's chunk spans several passes (the skip needs a previous pass).
TEST(Cuda, SddmmNonzeroSplitOnLongRowsOfMixedLengths) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 53);
  Context ctx = make_cuda_context();
  const int64_t rows = 800, cols = 8000;
  std::uniform_int_distribution<int> kind(0, 5), long_len(150, 6000), short_len(1, 5);
  std::normal_distribution<float> d;
  Pattern p{rows, cols, {}, {}, {}};
  for (int32_t i = 0; i < rows; ++i) {
    const int k = kind(g);
    const int len = k == 0 ? 0 : k <= 2 ? short_len(g) : long_len(g);
    std::vector<int32_t> picked(cols);
    std::iota(picked.begin(), picked.end(), 0);
    std::shuffle(picked.begin(), picked.end(), g);
    picked.resize(len);
    std::sort(picked.begin(), picked.end());
    for (int32_t c : picked) {
      p.r.push_back(i);
      p.c.push_back(c);
      p.v.push_back(d(g));
    }
  }
  ASSERT_GE(static_cast<int64_t>(p.r.size()), std::max<int64_t>(128 * rows, 1 << 20));
  Sparse s = create_sparse(ctx.get(), p);
  const StoredCsr csr = download(s.get());
  std::vector<float> old(csr.cols.size());
  for (float& x : old) x = d(g);
  struct Run {
    int64_t k;
    sfac_dtype dtype;
  };
  for (Run run :
       {Run{32, SFAC_DTYPE_FLOAT32}, Run{100, SFAC_DTYPE_FLOAT32}, Run{128, SFAC_DTYPE_FLOAT32},
        Run{32, SFAC_DTYPE_BFLOAT16}, Run{512, SFAC_DTYPE_FLOAT16}}) {
    std::vector<float> a(rows * run.k), b(cols * run.k);
    for (float& x : a) x = d(g);
    for (float& x : b) x = d(g);
    const Factors f = upload_factors(ctx.get(), rows, cols, run.k, run.dtype, a, b);
    Plan plan = make_plan(ctx.get(), s.get(), run.k, SFAC_SDDMM_ALG_NNZ_SPLIT);
    ASSERT_TRUE(plan);
    SCOPED_TRACE(testing::Message() << "k=" << run.k << " dtype=" << run.dtype);
    expect_every_mode_matches(ctx.get(), s.get(), csr, f.a.get(), f.b.get(), f.stored_a, f.stored_b,
                              run.k, old, plan.get());
  }
}

// P made separately (not with sfac_sparse_create_like) is accepted when its pattern equals S's,
// which the backend checks on the device, and rejected with P untouched when one column differs.
TEST(Cuda, SddmmComparesSeparatelyMadePatternsOnTheDevice) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 71);
  Context ctx = make_cuda_context();
  Pattern p = make_pattern(200, 150, 3000, false, g);
  Sparse s = create_sparse(ctx.get(), p);
  Sparse equal = create_sparse(ctx.get(), p);
  const StoredCsr csr = download(s.get());
  // One nonzero moved to a column its row does not hold: same shape and count, other pattern.
  Pattern q = p;
  for (int32_t j = 0; j < q.cols; ++j) {
    bool taken = false;
    for (size_t e = 0; e < q.r.size(); ++e) taken |= q.r[e] == q.r[0] && q.c[e] == j;
    if (!taken) {
      q.c[0] = j;
      break;
    }
  }
  Sparse other = create_sparse(ctx.get(), q);
  const int64_t k = 16;
  std::normal_distribution<float> d;
  std::vector<float> a(p.rows * k), b(p.cols * k);
  for (float& x : a) x = d(g);
  for (float& x : b) x = d(g);
  Dense da = dense(ctx.get(), p.rows, k, a), db = dense(ctx.get(), p.cols, k, b);
  SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_PATTERN, 1.0f, da.get(), db.get(), s.get(), 0.0f,
                            equal.get(), nullptr));
  const std::vector<float> got = values_of(equal.get());
  for (int64_t i = 0; i < p.rows; ++i) {
    for (int64_t e = csr.off[i]; e < csr.off[i + 1]; ++e) {
      const Dot ref = reference_dot(a, b, i, csr.cols[e], k);
      ASSERT_NEAR(got[e], ref.value, 1e-5 * ref.magnitude + 1e-6) << "e=" << e;
    }
  }
  const std::vector<float> before = values_of(other.get());
  SFAC_EXPECT_STATUS(SFAC_ERR_SHAPE_MISMATCH,
                     sfac_sddmm(ctx.get(), SFAC_SDDMM_PATTERN, 1.0f, da.get(), db.get(), s.get(),
                                0.0f, other.get(), nullptr));
  EXPECT_EQ(values_of(other.get()), before);
}

TEST(Cuda, HalfPrecisionOverflowAndMixedTypesAreRejected) {
  SFAC_REQUIRE_CUDA_DEVICE();
  Context ctx = make_cuda_context();
  sfac_dense* raw = reinterpret_cast<sfac_dense*>(0x1234);
  const std::vector<float> big = {1.0f, 70000.0f};
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "overflows float16",
                    sfac_dense_create(ctx.get(), 1, 2, SFAC_DTYPE_FLOAT16, big.data(), &raw));
  EXPECT_EQ(raw, reinterpret_cast<sfac_dense*>(0x1234));
  SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), 1, 2, SFAC_DTYPE_BFLOAT16, big.data(), &raw));
  Dense ok(raw);  // 70000 fits bfloat16's range
  const Pattern p{3, 2, {0, 2}, {1, 0}, {2.0f, 3.0f}};
  Sparse s = create_sparse(ctx.get(), p);
  Dense a = dense(ctx.get(), 3, 8, std::vector<float>(24, 1.0f));
  sfac_dense* rb = nullptr;
  SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), 2, 8, SFAC_DTYPE_BFLOAT16,
                                   std::vector<float>(16, 1.0f).data(), &rb));
  Dense b(rb);
  SFAC_EXPECT_ERROR(SFAC_ERR_UNSUPPORTED, "same dtype",
                    sfac_sddmm(ctx.get(), SFAC_SDDMM_PATTERN, 1.0f, a.get(), b.get(), s.get(), 0.0f,
                               s.get(), nullptr));
}

TEST(Cuda, MatricesAndPlansOutliveTheirContext) {
  SFAC_REQUIRE_CUDA_DEVICE();
  sfac_context* ctx = nullptr;
  SFAC_ASSERT_OK(sfac_context_create(SFAC_BACKEND_CUDA, 0, 1, 0, &ctx));
  const Pattern p{3, 2, {0, 2, 2}, {1, 0, 1}, {2.0f, 3.0f, 4.0f}};
  Sparse s = create_sparse(ctx, p);
  Dense a = dense(ctx, 3, 4, std::vector<float>(12, 1.0f));
  Dense b = dense(ctx, 2, 4, std::vector<float>(8, 0.5f));
  Plan plan = make_plan(ctx, s.get(), 4, SFAC_SDDMM_ALG_TILED);
  ASSERT_TRUE(plan);
  SFAC_ASSERT_OK(sfac_context_destroy(ctx));
  // A new context of the same device can still use them.
  Context again = make_cuda_context();
  SFAC_ASSERT_OK(sfac_sddmm(again.get(), SFAC_SDDMM_PATTERN, 1.0f, a.get(), b.get(), s.get(), 0.0f,
                            s.get(), plan.get()));
  EXPECT_EQ(values_of(s.get()), std::vector<float>({2.0f, 2.0f, 2.0f}));
}

#ifdef SFAC_TEST_CUDART
namespace {

// Free device memory after the work queued so far (the library's pool returns what it caches
// when a context is destroyed).
size_t free_device_bytes() {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaDeviceSynchronize() != cudaSuccess ||
      cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    return 0;
  }
  return free_bytes;
}

}  // namespace

// A pattern of 2^31 + 2^21 nonzeros (2,048 per row over 1,049,600 rows, past any 32-bit offset):
// uploaded as CSR, run through every algorithm in float32 and bfloat16, downloaded, and checked
// against the fp64 reference on every nonzero of the rows around entry 2^31 and after it, plus a
// sample of the rest. P is poisoned (1e30) before each call. Needs ~60 GB of device memory and
// ~24 GB of host memory; skipped where either is short.
TEST(Cuda, NonzerosPastTwoToThe31) {
  SFAC_REQUIRE_CUDA_DEVICE();
  if (free_device_bytes() < (size_t{64} << 30)) GTEST_SKIP() << "needs 64 GB of free device memory";
  if (host_available_bytes() < (int64_t{24} << 30)) GTEST_SKIP() << "needs 24 GB of host memory";
  constexpr int64_t kK = 8;
  Context ctx = make_cuda_context();
  Sparse s;
  {
    std::vector<int64_t> off(kHugeRows + 1);
    std::vector<int32_t> cols(kHugeNnz);
    for (int64_t i = 0; i <= kHugeRows; ++i) off[i] = i * kHugePerRow;
    for (int64_t i = 0; i < kHugeRows; ++i) {
      for (int64_t t = 0; t < kHugePerRow; ++t) cols[i * kHugePerRow + t] = huge_col(i, t);
    }
    sfac_sparse* raw = nullptr;
    SFAC_ASSERT_OK(sfac_sparse_create_csr(ctx.get(), kHugeRows, kHugeCols, off.data(), cols.data(),
                                          nullptr, static_cast<int64_t>(cols.size()), 0, &raw));
    s = Sparse(raw);
  }
  int64_t nnz = 0;
  SFAC_ASSERT_OK(sfac_sparse_get_shape(s.get(), nullptr, nullptr, &nnz));
  ASSERT_EQ(nnz, kHugeNnz);
  {
    std::vector<int64_t> off(kHugeRows + 1);
    SFAC_ASSERT_OK(sfac_sparse_download_csr(s.get(), off.data(), static_cast<int64_t>(off.size()),
                                            nullptr, nullptr, 0));
    for (int64_t i = 0; i <= kHugeRows; i += 4099)
      ASSERT_EQ(off[i], i * kHugePerRow) << "row " << i;
    ASSERT_EQ(off[kHugeRows], kHugeNnz);
  }
  std::mt19937_64 g(test_seed() + 61);
  std::normal_distribution<float> d;
  std::vector<float> a(kHugeRows * kK), b(kHugeCols * kK);
  for (float& x : a) x = d(g);
  for (float& x : b) x = d(g);
  // Zero factors and RESIDUAL with alpha = 1e30 fill P with 1e30 (S is all ones).
  const Dense zero_a = dense(ctx.get(), kHugeRows, kK, std::vector<float>(kHugeRows * kK, 0.0f));
  const Dense zero_b = dense(ctx.get(), kHugeCols, kK, std::vector<float>(kHugeCols * kK, 0.0f));
  sfac_sparse* raw_p = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_like(s.get(), nullptr, &raw_p));
  Sparse p(raw_p);
  Plan poison_plan = make_plan(ctx.get(), s.get(), kK, SFAC_SDDMM_ALG_NNZ_SPLIT);
  ASSERT_TRUE(poison_plan);
  // cuSPARSE's SDDMM takes 32-bit offsets: an explicit CUSPARSE plan is declined, naming the
  // count (AUTO, below, never asks for it on a pattern this large).
  sfac_sddmm_plan* declined = nullptr;
  SFAC_EXPECT_ERROR(
      SFAC_ERR_UNSUPPORTED, "this one has " + std::to_string(kHugeNnz),
      sfac_sddmm_plan_create(ctx.get(), s.get(), kK, SFAC_SDDMM_ALG_CUSPARSE, &declined));
  EXPECT_EQ(declined, nullptr);
  // Every nonzero of the checked rows (next_checked_row) against the reference.
  std::vector<float> got(kHugeNnz);
  for (sfac_dtype dtype : {SFAC_DTYPE_FLOAT32, SFAC_DTYPE_BFLOAT16}) {
    const Factors f = upload_factors(ctx.get(), kHugeRows, kHugeCols, kK, dtype, a, b);
    for (sfac_sddmm_algorithm alg : {SFAC_SDDMM_ALG_AUTO, SFAC_SDDMM_ALG_ROW_SPLIT,
                                     SFAC_SDDMM_ALG_NNZ_SPLIT, SFAC_SDDMM_ALG_TILED}) {
      SCOPED_TRACE(testing::Message() << "dtype=" << dtype << " alg=" << alg);
      SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_RESIDUAL, 1e30f, zero_a.get(), zero_b.get(),
                                s.get(), 0.0f, p.get(), poison_plan.get()));
      Plan plan = make_plan(ctx.get(), s.get(), kK, alg);
      ASSERT_TRUE(plan);
      SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_PATTERN, 1.0f, f.a.get(), f.b.get(), s.get(),
                                0.0f, p.get(), plan.get()));
      SFAC_ASSERT_OK(sfac_sparse_download_csr(p.get(), nullptr, 0, nullptr, got.data(),
                                              static_cast<int64_t>(got.size())));
      for (int64_t i = 0; i < kHugeRows; i = next_checked_row(i)) {
        for (int64_t t = 0; t < kHugePerRow; ++t) {
          const int64_t e = i * kHugePerRow + t;
          const Dot ref = reference_dot(f.stored_a, f.stored_b, i, huge_col(i, t), kK);
          ASSERT_NEAR(got[e], ref.value, 1e-5 * ref.magnitude + 1e-6) << "row " << i << " e=" << e;
        }
      }
    }
  }
}

// The same pattern as COO triplets in reverse order, without values: sorted and deduplicated on
// the device into the CSR the formula gives (every row's offset, every column of the rows around
// and past entry 2^31, a sample of the rest). First with one duplicate entry appended, which must
// fail naming its input positions. Needs ~52 GB of device memory (52 bytes per entry before the
// conversion was trimmed: it then failed for lack of memory on an 80 GB device) and ~32 GB of
// host memory.
TEST(Cuda, HugeCooInputPastTwoToThe31BuildsTheCsrOnTheDevice) {
  SFAC_REQUIRE_CUDA_DEVICE();
  if (free_device_bytes() < (size_t{64} << 30)) GTEST_SKIP() << "needs 64 GB of free device memory";
  if (host_available_bytes() < (int64_t{32} << 30)) GTEST_SKIP() << "needs 32 GB of host memory";
  Context ctx = make_cuda_context();
  Sparse s;
  {
    // One more entry repeats entry 5.
    std::vector<int32_t> r(kHugeNnz + 1), c(kHugeNnz + 1);
    fill_huge_coo_reversed(r.data(), c.data(), nullptr);
    r[kHugeNnz] = r[5];
    c[kHugeNnz] = c[5];
    sfac_sparse* raw = nullptr;
    SFAC_EXPECT_ERROR(SFAC_ERR_DUPLICATE_ENTRY,
                      "at input positions 5 and " + std::to_string(kHugeNnz),
                      sfac_sparse_create_coo(ctx.get(), kHugeRows, kHugeCols, kHugeNnz + 1,
                                             r.data(), c.data(), nullptr, 0, &raw));
    SFAC_ASSERT_OK(sfac_sparse_create_coo(ctx.get(), kHugeRows, kHugeCols, kHugeNnz, r.data(),
                                          c.data(), nullptr, 0, &raw));
    s = Sparse(raw);
  }
  expect_huge_csr(s.get(), false);
}

// The same entries with values (rated data): the conversion then carries each entry's input
// position (4 bytes while they fit) to gather the values; ~69 GB of device memory and ~40 GB of
// host memory.
TEST(Cuda, HugeCooInputWithValuesPastTwoToThe31BuildsTheCsrOnTheDevice) {
  SFAC_REQUIRE_CUDA_DEVICE();
  if (free_device_bytes() < (size_t{72} << 30)) GTEST_SKIP() << "needs 72 GB of free device memory";
  if (host_available_bytes() < (int64_t{40} << 30)) GTEST_SKIP() << "needs 40 GB of host memory";
  Context ctx = make_cuda_context();
  const Sparse s = upload_huge_coo_with_values(ctx.get());
  ASSERT_TRUE(s);
  expect_huge_csr(s.get(), true);
}

// The library caches device memory in a pool of its own: freed blocks stay with it while a
// context lives (training loops reuse them), the device's default pool keeps its settings for
// other code in the process, and destroying the context gives the cached memory back.
TEST(Cuda, MemoryCacheIsTheLibrarysOwnAndGoesBackWithTheContext) {
  SFAC_REQUIRE_CUDA_DEVICE();
  cudaMemPool_t default_pool = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&default_pool, 0), cudaSuccess);
  // CUDA's default threshold (0), whatever ran before in this process.
  uint64_t threshold_before = 0, threshold_after = 1;
  ASSERT_EQ(
      cudaMemPoolSetAttribute(default_pool, cudaMemPoolAttrReleaseThreshold, &threshold_before),
      cudaSuccess);
  constexpr int64_t kSide = 16384;  // a 1 GiB float32 matrix
  constexpr size_t kBytes = size_t{kSide} * kSide * sizeof(float);
  const size_t free_before = free_device_bytes();
  if (free_before < 4 * kBytes) GTEST_SKIP() << "needs 4 GiB of free device memory";
  {
    Context ctx = make_cuda_context();
    {
      sfac_dense* raw = nullptr;
      SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), kSide, kSide, SFAC_DTYPE_FLOAT32, nullptr, &raw));
      Dense big(raw);
    }
    // Freed, but cached for the next allocation.
    EXPECT_LT(free_device_bytes(), free_before - kBytes * 9 / 10);
    sfac_dense* raw = nullptr;
    SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), kSide, kSide, SFAC_DTYPE_FLOAT32, nullptr, &raw));
    Dense again(raw);
    EXPECT_GT(free_device_bytes(), free_before - kBytes * 3 / 2)
        << "the cached block was not reused";
  }
  EXPECT_GT(free_device_bytes(), free_before - kBytes / 10);
  ASSERT_EQ(
      cudaMemPoolGetAttribute(default_pool, cudaMemPoolAttrReleaseThreshold, &threshold_after),
      cudaSuccess);
  EXPECT_EQ(threshold_after, threshold_before);
}

// With the device filled by someone else's allocations (another library in the process), every
// call that needs new device memory answers SFAC_ERR_OUT_OF_MEMORY and leaves its output alone,
// calls that need none still run and give the same result, and once the memory is free again
// the failed calls succeed.
TEST(Cuda, FullDeviceIsAStatusAndObjectsStayUsable) {
  SFAC_REQUIRE_CUDA_DEVICE();
  std::mt19937_64 g(test_seed() + 67);
  Context ctx = make_cuda_context();
  const Pattern p = make_pattern(300, 200, 6000, false, g);
  Sparse s = create_sparse(ctx.get(), p);
  const StoredCsr csr = download(s.get());
  constexpr int64_t kK = 32;
  std::normal_distribution<float> d;
  std::vector<float> a(300 * kK), b(200 * kK);
  for (float& x : a) x = d(g);
  for (float& x : b) x = d(g);
  const Dense da = dense(ctx.get(), 300, kK, a), db = dense(ctx.get(), 200, kK, b);
  sfac_sparse* raw_p = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_like(s.get(), nullptr, &raw_p));
  Sparse out(raw_p);
  Plan plan = make_plan(ctx.get(), s.get(), kK, SFAC_SDDMM_ALG_NNZ_SPLIT);
  ASSERT_TRUE(plan);
  SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_PATTERN, 1.0f, da.get(), db.get(), s.get(), 0.0f,
                            out.get(), plan.get()));
  const std::vector<float> before = values_of(out.get());
  for (int64_t i = 0; i < 300; ++i) {
    for (int64_t e = csr.off[i]; e < csr.off[i + 1]; ++e) {
      const Dot ref = reference_dot(a, b, i, csr.cols[e], kK);
      ASSERT_NEAR(before[e], ref.value, 1e-5 * ref.magnitude + 1e-6);
    }
  }
  // 256 MiB of dense matrix and 16M COO entries: beyond what the library's pool has cached.
  constexpr int64_t kBigRows = 16384, kBigCols = 4096, kEntries = int64_t{1} << 24;
  std::vector<int32_t> rows(kEntries), cols(kEntries);
  for (int64_t e = 0; e < kEntries; ++e) {
    rows[e] = static_cast<int32_t>(e >> 12);
    cols[e] = static_cast<int32_t>(e & 4095);
  }
  struct Hog {
    std::vector<void*> blocks;
    ~Hog() {
      for (void* block : blocks) (void)cudaFree(block);
    }
  } hog;
  for (size_t chunk = size_t{1} << 30; chunk >= (size_t{1} << 20);) {
    void* block = nullptr;
    if (cudaMalloc(&block, chunk) == cudaSuccess) {
      hog.blocks.push_back(block);
    } else {
      (void)cudaGetLastError();
      chunk /= 2;
    }
  }
  sfac_dense* raw_dense = reinterpret_cast<sfac_dense*>(0x1234);
  SFAC_EXPECT_ERROR(
      SFAC_ERR_OUT_OF_MEMORY, "cudaMallocFromPoolAsync",
      sfac_dense_create(ctx.get(), kBigRows, kBigCols, SFAC_DTYPE_FLOAT32, nullptr, &raw_dense));
  EXPECT_EQ(raw_dense, reinterpret_cast<sfac_dense*>(0x1234));
  sfac_sparse* raw_sparse = reinterpret_cast<sfac_sparse*>(0x1234);
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_MEMORY, "cudaMallocFromPoolAsync",
                    sfac_sparse_create_coo(ctx.get(), kEntries >> 12, 4096, kEntries, rows.data(),
                                           cols.data(), nullptr, 0, &raw_sparse));
  EXPECT_EQ(raw_sparse, reinterpret_cast<sfac_sparse*>(0x1234));
  // The existing plan needs no new memory: the same call still runs, bit for bit.
  SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_PATTERN, 1.0f, da.get(), db.get(), s.get(), 0.0f,
                            out.get(), plan.get()));
  EXPECT_EQ(values_of(out.get()), before);
  for (void* block : hog.blocks) ASSERT_EQ(cudaFree(block), cudaSuccess);
  hog.blocks.clear();
  SFAC_ASSERT_OK(
      sfac_dense_create(ctx.get(), kBigRows, kBigCols, SFAC_DTYPE_FLOAT32, nullptr, &raw_dense));
  Dense big(raw_dense);
  SFAC_ASSERT_OK(sfac_sparse_create_coo(ctx.get(), kEntries >> 12, 4096, kEntries, rows.data(),
                                        cols.data(), nullptr, 0, &raw_sparse));
  Sparse full(raw_sparse);
  int64_t nnz = 0;
  SFAC_ASSERT_OK(sfac_sparse_get_shape(full.get(), nullptr, nullptr, &nnz));
  EXPECT_EQ(nnz, kEntries);
  EXPECT_EQ(values_of(out.get()), before);
}
#endif
