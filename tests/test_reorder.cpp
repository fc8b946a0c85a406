// Degree orders and permutations of sparse and dense matrices (CPU backend; the CUDA backend is
// compared with it in test_cuda_backend.cpp).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "sfac_test.h"

using namespace sfac_test;

namespace {

// Distinct cells with skewed row and column degrees (many equal counts, some empty lines).
Triplets skewed_triplets(int64_t rows, int64_t cols, int64_t draws, std::mt19937_64& g) {
  Triplets t{rows, cols, {}, {}, {}};
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<float> value;
  std::set<std::pair<int32_t, int32_t>> seen;
  for (int64_t n = 0; n < draws; ++n) {
    const auto i = std::min<int32_t>(static_cast<int32_t>(rows * u(g) * u(g)), rows - 1);
    const auto j = std::min<int32_t>(static_cast<int32_t>(cols * std::pow(u(g), 3.0)), cols - 1);
    if (!seen.insert({i, j}).second) continue;
    t.r.push_back(i);
    t.c.push_back(j);
    t.v.push_back(value(g));
  }
  return t;
}

std::vector<int32_t> random_permutation(int64_t n, std::mt19937_64& g) {
  std::vector<int32_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  std::shuffle(p.begin(), p.end(), g);
  return p;
}

std::vector<int32_t> degree_order(const sfac_sparse* m, sfac_axis axis) {
  int64_t rows = 0, cols = 0;
  EXPECT_EQ(sfac_sparse_get_shape(m, &rows, &cols, nullptr), SFAC_OK);
  std::vector<int32_t> order(static_cast<size_t>(axis == SFAC_AXIS_ROWS ? rows : cols), -1);
  EXPECT_EQ(sfac_sparse_degree_order(m, axis, order.data(), static_cast<int64_t>(order.size())),
            SFAC_OK)
      << sfac_last_error();
  return order;
}

using Entry = std::tuple<int32_t, int32_t, float>;

std::vector<Entry> entries(const sfac_sparse* m) {
  int64_t nnz = 0;
  EXPECT_EQ(sfac_sparse_get_shape(m, nullptr, nullptr, &nnz), SFAC_OK);
  std::vector<int32_t> r(nnz), c(nnz);
  std::vector<float> v(nnz);
  EXPECT_EQ(
      sfac_sparse_download_coo(m, r.data(), c.data(), v.data(), static_cast<int64_t>(r.size())),
      SFAC_OK);
  std::vector<Entry> out;
  for (int64_t e = 0; e < nnz; ++e) out.emplace_back(r[e], c[e], v[e]);
  return out;
}

std::vector<int32_t> inverse(const std::vector<int32_t>& order) {
  std::vector<int32_t> inv(order.size());
  for (size_t i = 0; i < order.size(); ++i) inv[order[i]] = static_cast<int32_t>(i);
  return inv;
}

}  // namespace

TEST(Reorder, DegreeOrderIsByCountDescendingWithTiesInIndexOrder) {
  auto ctx = make_cpu_context();
  // Row counts 1, 3, 0, 3, 1; column counts 2, 1, 2, 3.
  const Triplets t{
      5, 4, {0, 1, 1, 1, 3, 3, 3, 4}, {3, 0, 2, 3, 0, 1, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8}};
  const Sparse m = create_sparse(ctx.get(), t);
  EXPECT_EQ(degree_order(m.get(), SFAC_AXIS_ROWS), (std::vector<int32_t>{1, 3, 0, 4, 2}));
  EXPECT_EQ(degree_order(m.get(), SFAC_AXIS_COLS), (std::vector<int32_t>{3, 0, 2, 1}));
}

TEST(Reorder, DegreeOrderOfRandomSkewedMatrices) {
  std::mt19937_64 g(test_seed());
  auto ctx = make_cpu_context(3);
  for (const auto& [rows, cols, draws] :
       {std::tuple{1, 1, 1}, {300, 40, 2000}, {2000, 700, 20000}}) {
    const Triplets t = skewed_triplets(rows, cols, draws, g);
    const Sparse m = create_sparse(ctx.get(), t);
    std::vector<int64_t> row_count(rows, 0), col_count(cols, 0);
    for (size_t e = 0; e < t.r.size(); ++e) {
      ++row_count[t.r[e]];
      ++col_count[t.c[e]];
    }
    for (const auto& [axis, count] :
         {std::pair{SFAC_AXIS_ROWS, row_count}, {SFAC_AXIS_COLS, col_count}}) {
      const std::vector<int32_t> order = degree_order(m.get(), axis);
      std::vector<int32_t> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      std::vector<int32_t> ids(count.size());
      std::iota(ids.begin(), ids.end(), 0);
      ASSERT_EQ(sorted, ids) << "not a permutation";
      for (size_t i = 1; i < order.size(); ++i) {
        const int64_t before = count[order[i - 1]], here = count[order[i]];
        ASSERT_GE(before, here) << "axis " << axis << " position " << i;
        if (before == here) {
          ASSERT_LT(order[i - 1], order[i]) << "ties keep index order";
        }
      }
    }
  }
}

TEST(Reorder, PermuteMovesEveryEntryWithItsValue) {
  std::mt19937_64 g(test_seed());
  auto ctx = make_cpu_context(2);
  const Triplets t = skewed_triplets(500, 300, 6000, g);
  const Sparse m = create_sparse(ctx.get(), t);
  const std::vector<int32_t> row_order = random_permutation(t.rows, g);
  const std::vector<int32_t> col_order = random_permutation(t.cols, g);
  const std::vector<int32_t> row_rank = inverse(row_order), col_rank = inverse(col_order);
  for (const bool rows_too : {true, false}) {
    for (const bool cols_too : {true, false}) {
      sfac_sparse* raw = nullptr;
      SFAC_ASSERT_OK(sfac_sparse_permute(m.get(), rows_too ? row_order.data() : nullptr,
                                         cols_too ? col_order.data() : nullptr, &raw));
      const Sparse p(raw);
      int64_t rows = 0, cols = 0, nnz = 0;
      SFAC_ASSERT_OK(sfac_sparse_get_shape(p.get(), &rows, &cols, &nnz));
      EXPECT_EQ(rows, t.rows);
      EXPECT_EQ(cols, t.cols);
      std::vector<Entry> expected;
      for (size_t e = 0; e < t.r.size(); ++e) {
        expected.emplace_back(rows_too ? row_rank[t.r[e]] : t.r[e],
                              cols_too ? col_rank[t.c[e]] : t.c[e], t.v[e]);
      }
      std::sort(expected.begin(), expected.end());
      EXPECT_EQ(entries(p.get()), expected) << "rows " << rows_too << " cols " << cols_too;
    }
  }
  // The source is untouched.
  std::vector<Entry> original;
  for (size_t e = 0; e < t.r.size(); ++e) original.emplace_back(t.r[e], t.c[e], t.v[e]);
  std::sort(original.begin(), original.end());
  EXPECT_EQ(entries(m.get()), original);
}

TEST(Reorder, DegreeOrderedMatrixHasNonIncreasingRowAndColumnCounts) {
  std::mt19937_64 g(test_seed());
  auto ctx = make_cpu_context();
  const Triplets t = skewed_triplets(800, 200, 9000, g);
  const Sparse m = create_sparse(ctx.get(), t);
  const auto rows = degree_order(m.get(), SFAC_AXIS_ROWS);
  const auto cols = degree_order(m.get(), SFAC_AXIS_COLS);
  sfac_sparse* raw = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_permute(m.get(), rows.data(), cols.data(), &raw));
  const Sparse p(raw);
  std::vector<int64_t> off(t.rows + 1), col_off(t.cols + 1);
  SFAC_ASSERT_OK(sfac_sparse_download_csr(p.get(), off.data(), static_cast<int64_t>(off.size()),
                                          nullptr, nullptr, 0));
  SFAC_ASSERT_OK(sfac_sparse_download_csc(
      p.get(), col_off.data(), static_cast<int64_t>(col_off.size()), nullptr, nullptr, 0));
  for (int64_t r = 1; r < t.rows; ++r) ASSERT_GE(off[r] - off[r - 1], off[r + 1] - off[r]);
  for (int64_t c = 1; c < t.cols; ++c) {
    ASSERT_GE(col_off[c] - col_off[c - 1], col_off[c + 1] - col_off[c]);
  }
  // Already in degree order: the orders are the identity now.
  std::vector<int32_t> identity(t.rows);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(degree_order(p.get(), SFAC_AXIS_ROWS), identity);
}

TEST(Reorder, SddmmOnPermutedOperandsIsThePermutedProduct) {
  std::mt19937_64 g(test_seed());
  auto ctx = make_cpu_context(2);
  const int64_t k = 13;
  const Triplets t = skewed_triplets(120, 90, 2500, g);
  const Sparse s = create_sparse(ctx.get(), t);
  std::normal_distribution<float> nd;
  std::vector<float> a(t.rows * k), b(t.cols * k);
  for (float& x : a) x = nd(g);
  for (float& x : b) x = nd(g);
  sfac_dense *da = nullptr, *db = nullptr;
  SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), t.rows, k, SFAC_DTYPE_FLOAT32, a.data(), &da));
  SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), t.cols, k, SFAC_DTYPE_FLOAT32, b.data(), &db));
  const Dense A(da), B(db);
  const auto row_order = random_permutation(t.rows, g), col_order = random_permutation(t.cols, g);
  sfac_sparse* raw = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_permute(s.get(), row_order.data(), col_order.data(), &raw));
  const Sparse sp(raw);
  SFAC_ASSERT_OK(sfac_dense_permute_rows(A.get(), row_order.data(), &da));
  const Dense Ap(da);
  SFAC_ASSERT_OK(sfac_dense_permute_rows(B.get(), col_order.data(), &db));
  const Dense Bp(db);
  SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_SCALED, 1.0f, A.get(), B.get(), s.get(), 0.0f,
                            s.get(), nullptr));
  SFAC_ASSERT_OK(sfac_sddmm(ctx.get(), SFAC_SDDMM_SCALED, 1.0f, Ap.get(), Bp.get(), sp.get(), 0.0f,
                            sp.get(), nullptr));
  // Entry (i, j) of the product is entry (rank[i], rank[j]) of the permuted one.
  const auto row_rank = inverse(row_order), col_rank = inverse(col_order);
  std::vector<Entry> moved;
  for (const auto& [i, j, v] : entries(s.get())) moved.emplace_back(row_rank[i], col_rank[j], v);
  std::sort(moved.begin(), moved.end());
  const auto got = entries(sp.get());
  ASSERT_EQ(got.size(), moved.size());
  for (size_t e = 0; e < got.size(); ++e) {
    EXPECT_EQ(std::get<0>(got[e]), std::get<0>(moved[e]));
    EXPECT_EQ(std::get<1>(got[e]), std::get<1>(moved[e]));
    EXPECT_NEAR(std::get<2>(got[e]), std::get<2>(moved[e]),
                1e-5f * (1.0f + std::abs(std::get<2>(moved[e]))));
  }
}

TEST(Reorder, DensePermuteRowsAndItsInverse) {
  std::mt19937_64 g(test_seed());
  auto ctx = make_cpu_context();
  const int64_t rows = 37, cols = 5;
  std::vector<float> data(rows * cols);
  std::normal_distribution<float> nd;
  for (float& x : data) x = nd(g);
  sfac_dense* raw = nullptr;
  SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), rows, cols, SFAC_DTYPE_FLOAT32, data.data(), &raw));
  const Dense d(raw);
  const auto order = random_permutation(rows, g);
  SFAC_ASSERT_OK(sfac_dense_permute_rows(d.get(), order.data(), &raw));
  const Dense p(raw);
  std::vector<float> got(rows * cols);
  SFAC_ASSERT_OK(sfac_dense_download(p.get(), got.data(), static_cast<int64_t>(got.size())));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(got[r * cols + c], data[order[r] * cols + c]);
  }
  const auto back = inverse(order);
  SFAC_ASSERT_OK(sfac_dense_permute_rows(p.get(), back.data(), &raw));
  const Dense q(raw);
  SFAC_ASSERT_OK(sfac_dense_download(q.get(), got.data(), static_cast<int64_t>(got.size())));
  EXPECT_EQ(got, data);
}

TEST(Reorder, EmptyMatricesAndEmptyLines) {
  auto ctx = make_cpu_context();
  sfac_sparse* raw = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_coo(ctx.get(), 0, 0, 0, nullptr, nullptr, nullptr, 0, &raw));
  const Sparse empty(raw);
  SFAC_ASSERT_OK(sfac_sparse_degree_order(empty.get(), SFAC_AXIS_ROWS, nullptr, 0));
  SFAC_ASSERT_OK(sfac_sparse_permute(empty.get(), nullptr, nullptr, &raw));
  Sparse(raw).reset();
  // Rows and columns without nonzeros come last, in index order.
  const Triplets t{4, 3, {2}, {1}, {5.0f}};
  const Sparse m = create_sparse(ctx.get(), t);
  EXPECT_EQ(degree_order(m.get(), SFAC_AXIS_ROWS), (std::vector<int32_t>{2, 0, 1, 3}));
  EXPECT_EQ(degree_order(m.get(), SFAC_AXIS_COLS), (std::vector<int32_t>{1, 0, 2}));
  const std::vector<int32_t> rows{3, 2, 1, 0};
  SFAC_ASSERT_OK(sfac_sparse_permute(m.get(), rows.data(), nullptr, &raw));
  const Sparse p(raw);
  EXPECT_EQ(entries(p.get()), (std::vector<Entry>{{1, 1, 5.0f}}));
}

TEST(Reorder, BadArgumentsNameTheProblemAndLeaveOutputsAlone) {
  auto ctx = make_cpu_context();
  const Triplets t{3, 2, {0, 1, 2}, {0, 1, 1}, {1, 2, 3}};
  const Sparse m = create_sparse(ctx.get(), t);
  std::vector<int32_t> order(3, -7);
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "matrix",
                    sfac_sparse_degree_order(nullptr, SFAC_AXIS_ROWS, order.data(),
                                             static_cast<int64_t>(order.size())));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "axis",
                    sfac_sparse_degree_order(m.get(), static_cast<sfac_axis>(2), order.data(),
                                             static_cast<int64_t>(order.size())));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "order",
                    sfac_sparse_degree_order(m.get(), SFAC_AXIS_COLS, nullptr, 0));
  EXPECT_EQ(order, std::vector<int32_t>(3, -7));

  sfac_sparse* out = reinterpret_cast<sfac_sparse*>(&order);  // must stay as it is
  sfac_sparse* const sentinel = out;
  const std::vector<int32_t> repeat{0, 2, 0}, outside{0, 3, 1}, negative{-1, 0, 1}, cols_bad{1, 1};
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "row_order[2] = 0 repeats row_order[0]",
                    sfac_sparse_permute(m.get(), repeat.data(), nullptr, &out));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "row_order[1] = 3 is outside [0, 3)",
                    sfac_sparse_permute(m.get(), outside.data(), nullptr, &out));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "row_order[0] = -1",
                    sfac_sparse_permute(m.get(), negative.data(), nullptr, &out));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "col_order[1] = 1 repeats col_order[0]",
                    sfac_sparse_permute(m.get(), nullptr, cols_bad.data(), &out));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out",
                    sfac_sparse_permute(m.get(), nullptr, nullptr, nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "matrix",
                    sfac_sparse_permute(nullptr, nullptr, nullptr, &out));
  EXPECT_EQ(out, sentinel);
  EXPECT_EQ(entries(m.get()), (std::vector<Entry>{{0, 0, 1.0f}, {1, 1, 2.0f}, {2, 1, 3.0f}}));

  const std::vector<float> data{1, 2, 3, 4, 5, 6};
  sfac_dense* d = nullptr;
  SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), 3, 2, SFAC_DTYPE_FLOAT32, data.data(), &d));
  const Dense dense(d);
  sfac_dense* dout = reinterpret_cast<sfac_dense*>(&order);
  sfac_dense* const dsentinel = dout;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "order[2] = 0 repeats order[0]",
                    sfac_dense_permute_rows(dense.get(), repeat.data(), &dout));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "order is NULL",
                    sfac_dense_permute_rows(dense.get(), nullptr, &dout));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out",
                    sfac_dense_permute_rows(dense.get(), outside.data(), nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "matrix",
                    sfac_dense_permute_rows(nullptr, repeat.data(), &dout));
  EXPECT_EQ(dout, dsentinel);
  std::vector<float> got(6);
  SFAC_ASSERT_OK(sfac_dense_download(dense.get(), got.data(), static_cast<int64_t>(got.size())));
  EXPECT_EQ(got, data);
}
