// Sparse matrix creation, validation, canonical order, conversions and downloads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <thread>
#include <tuple>
#include <vector>

#include "sfac_test.h"

using namespace sfac_test;

namespace {

using Coo = Triplets;

// Random COO with distinct (row, col) pairs in shuffled order.
Coo random_coo(int64_t rows, int64_t cols, int64_t nnz, std::mt19937_64& rng) {
  std::map<std::pair<int32_t, int32_t>, float> cells;
  std::uniform_int_distribution<int32_t> rd(0, static_cast<int32_t>(rows - 1));
  std::uniform_int_distribution<int32_t> cd(0, static_cast<int32_t>(cols - 1));
  std::normal_distribution<float> vd(0.0f, 1.0f);
  while (static_cast<int64_t>(cells.size()) < nnz) cells[{rd(rng), cd(rng)}] = vd(rng);
  Coo coo{rows, cols, {}, {}, {}};
  for (const auto& [rc, value] : cells) {
    coo.r.push_back(rc.first);
    coo.c.push_back(rc.second);
    coo.v.push_back(value);
  }
  std::vector<size_t> order(coo.r.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  Coo shuffled{rows, cols, {}, {}, {}};
  for (size_t i : order) {
    shuffled.r.push_back(coo.r[i]);
    shuffled.c.push_back(coo.c[i]);
    shuffled.v.push_back(coo.v[i]);
  }
  return shuffled;
}

// (row, col, value) sorted by (row, col): what every download must reproduce.
std::vector<std::tuple<int32_t, int32_t, float>> canonical(const Coo& coo) {
  std::vector<std::tuple<int32_t, int32_t, float>> t;
  for (size_t i = 0; i < coo.r.size(); ++i) t.emplace_back(coo.r[i], coo.c[i], coo.v[i]);
  std::sort(t.begin(), t.end());
  return t;
}

void expect_matches(const sfac_sparse* m, const Coo& coo) {
  const auto ref = canonical(coo);
  const int64_t nnz = static_cast<int64_t>(ref.size());
  int64_t rows = -1, cols = -1, got_nnz = -1;
  SFAC_ASSERT_OK(sfac_sparse_get_shape(m, &rows, &cols, &got_nnz));
  ASSERT_EQ(rows, coo.rows);
  ASSERT_EQ(cols, coo.cols);
  ASSERT_EQ(got_nnz, nnz);

  std::vector<int32_t> r(nnz), c(nnz);
  std::vector<float> v(nnz);
  SFAC_ASSERT_OK(
      sfac_sparse_download_coo(m, r.data(), c.data(), v.data(), static_cast<int64_t>(r.size())));
  for (int64_t e = 0; e < nnz; ++e) {
    ASSERT_EQ(std::make_tuple(r[e], c[e], v[e]), ref[e]) << "COO entry " << e;
  }

  std::vector<int64_t> offsets(rows + 1);
  SFAC_ASSERT_OK(sfac_sparse_download_csr(m, offsets.data(), static_cast<int64_t>(offsets.size()),
                                          c.data(), v.data(), static_cast<int64_t>(c.size())));
  ASSERT_EQ(offsets[0], 0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t e = offsets[i]; e < offsets[i + 1]; ++e) {
      ASSERT_EQ(std::make_tuple(static_cast<int32_t>(i), c[e], v[e]), ref[e]) << "CSR " << e;
    }
  }
  ASSERT_EQ(offsets[rows], nnz);

  // CSC: the same entries ordered by (col, row).
  auto by_col = ref;
  std::sort(by_col.begin(), by_col.end(), [](const auto& x, const auto& y) {
    return std::tie(std::get<1>(x), std::get<0>(x)) < std::tie(std::get<1>(y), std::get<0>(y));
  });
  std::vector<int64_t> col_offsets(cols + 1);
  SFAC_ASSERT_OK(sfac_sparse_download_csc(m, col_offsets.data(),
                                          static_cast<int64_t>(col_offsets.size()), r.data(),
                                          v.data(), static_cast<int64_t>(r.size())));
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t e = col_offsets[j]; e < col_offsets[j + 1]; ++e) {
      ASSERT_EQ(std::make_tuple(r[e], static_cast<int32_t>(j), v[e]), by_col[e]) << "CSC " << e;
    }
  }
  ASSERT_EQ(col_offsets[cols], nnz);
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

sfac_sparse* const kSentinel = reinterpret_cast<sfac_sparse*>(0x1234);

}  // namespace

TEST(Sparse, CooInAnyOrderIsStoredSortedAndConvertsToCsrAndCsc) {
  std::mt19937_64 rng(test_seed());
  Context ctx = make_cpu_context(2);
  for (auto [rows, cols, nnz] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                                 {7, 5, 20},
                                 {300, 200, 4000},
                                 {1000, 3, 2000},
                                 {3, 1000, 2000}}) {
    const Coo coo = random_coo(rows, cols, nnz, rng);
    Sparse m = create_sparse(ctx.get(), coo);
    ASSERT_TRUE(m);
    expect_matches(m.get(), coo);
  }
}

TEST(Sparse, CsrAndCscInputsGiveTheSameMatrixAsCoo) {
  std::mt19937_64 rng(test_seed() + 1);
  Context ctx = make_cpu_context(2);
  const Coo coo = random_coo(150, 90, 1500, rng);
  Sparse from_coo = create_sparse(ctx.get(), coo);
  const int64_t nnz = static_cast<int64_t>(coo.r.size());

  std::vector<int64_t> ro(coo.rows + 1), co(coo.cols + 1);
  std::vector<int32_t> ci(nnz), ri(nnz);
  std::vector<float> rv(nnz), cv(nnz);
  SFAC_ASSERT_OK(sfac_sparse_download_csr(from_coo.get(), ro.data(),
                                          static_cast<int64_t>(ro.size()), ci.data(), rv.data(),
                                          static_cast<int64_t>(ci.size())));
  SFAC_ASSERT_OK(sfac_sparse_download_csc(from_coo.get(), co.data(),
                                          static_cast<int64_t>(co.size()), ri.data(), cv.data(),
                                          static_cast<int64_t>(ri.size())));
  // Shuffle columns inside each CSR row: the library must sort them back.
  for (int64_t i = 0; i < coo.rows; ++i) {
    std::vector<std::pair<int32_t, float>> row;
    for (int64_t e = ro[i]; e < ro[i + 1]; ++e) row.push_back({ci[e], rv[e]});
    std::shuffle(row.begin(), row.end(), rng);
    for (int64_t e = ro[i]; e < ro[i + 1]; ++e) std::tie(ci[e], rv[e]) = row[e - ro[i]];
  }
  sfac_sparse* raw = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_csr(ctx.get(), coo.rows, coo.cols, ro.data(), ci.data(),
                                        rv.data(), static_cast<int64_t>(ci.size()), 0, &raw));
  Sparse from_csr(raw);
  expect_matches(from_csr.get(), coo);
  SFAC_ASSERT_OK(sfac_sparse_create_csc(ctx.get(), coo.rows, coo.cols, co.data(), ri.data(),
                                        cv.data(), static_cast<int64_t>(ri.size()), 0, &raw));
  Sparse from_csc(raw);
  expect_matches(from_csc.get(), coo);
}

TEST(Sparse, NullValuesMeanAPatternOfOnes) {
  Context ctx = make_cpu_context(1);
  const int32_t r[] = {2, 0, 1}, c[] = {1, 0, 2};
  sfac_sparse* raw = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_coo(ctx.get(), 3, 3, 3, r, c, nullptr, 0, &raw));
  Sparse m(raw);
  EXPECT_EQ(values_of(m.get()), std::vector<float>({1, 1, 1}));
}

TEST(Sparse, EmptyMatricesAndEmptyRowsAreValid) {
  Context ctx = make_cpu_context(1);
  sfac_sparse* raw = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_coo(ctx.get(), 0, 0, 0, nullptr, nullptr, nullptr, 0, &raw));
  Sparse zero(raw);
  expect_matches(zero.get(), Coo{0, 0, {}, {}, {}});
  SFAC_ASSERT_OK(sfac_sparse_create_coo(ctx.get(), 5, 4, 0, nullptr, nullptr, nullptr, 0, &raw));
  Sparse empty(raw);
  expect_matches(empty.get(), Coo{5, 4, {}, {}, {}});
  // Rows 0, 2 and 4 empty.
  const Coo holes{5, 4, {3, 1, 3}, {0, 2, 3}, {1.5f, -2.0f, 3.0f}};
  expect_matches(create_sparse(ctx.get(), holes).get(), holes);
  // Far more rows than entries (the COO download then bisects the row offsets), first and last
  // rows included.
  const Coo sparse_rows{100000, 3, {99999, 0, 51234, 51234, 7}, {1, 2, 0, 2, 1},
                        {1.0f, 2.0f, 3.0f, 4.0f, 5.0f}};
  expect_matches(create_sparse(ctx.get(), sparse_rows).get(), sparse_rows);
}

TEST(Sparse, DuplicatesAreAnErrorByDefaultAndSummedOnRequest) {
  Context ctx = make_cpu_context(2);
  const Coo dup{4, 4, {1, 3, 1, 0, 1}, {2, 0, 2, 0, 2}, {1.0f, 2.0f, 0.5f, 4.0f, 0.25f}};
  sfac_sparse* raw = kSentinel;
  SFAC_EXPECT_ERROR(SFAC_ERR_DUPLICATE_ENTRY, "(row 1, col 2) at input positions 0 and 2",
                    sfac_sparse_create_coo(ctx.get(), 4, 4, 5, dup.r.data(), dup.c.data(),
                                           dup.v.data(), 0, &raw));
  EXPECT_EQ(raw, kSentinel);
  Sparse summed = create_sparse(ctx.get(), dup, SFAC_SPARSE_SUM_DUPLICATES);
  expect_matches(summed.get(), Coo{4, 4, {0, 1, 3}, {0, 2, 0}, {4.0f, 1.75f, 2.0f}});

  const int64_t offsets[] = {0, 0, 3, 3, 3};
  const int32_t cols[] = {2, 1, 2};
  const float vals[] = {1, 2, 3};
  SFAC_EXPECT_ERROR(SFAC_ERR_DUPLICATE_ENTRY, "(row 1, col 2)",
                    sfac_sparse_create_csr(ctx.get(), 4, 4, offsets, cols, vals,
                                           static_cast<int64_t>(std::size(cols)), 0, &raw));
  SFAC_ASSERT_OK(sfac_sparse_create_csr(ctx.get(), 4, 4, offsets, cols, vals,
                                        static_cast<int64_t>(std::size(cols)),
                                        SFAC_SPARSE_SUM_DUPLICATES, &raw));
  Sparse csr_summed(raw);
  expect_matches(csr_summed.get(), Coo{4, 4, {1, 1}, {1, 2}, {2.0f, 4.0f}});
}

TEST(Sparse, OutOfRangeIndicesNameTheEntry) {
  Context ctx = make_cpu_context(2);
  const int32_t r[] = {0, 1, 5, 2}, c[] = {0, 1, 1, 9};
  const float v[] = {1, 2, 3, 4};
  sfac_sparse* raw = kSentinel;
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "row_indices[2] = 5 is out of range",
                    sfac_sparse_create_coo(ctx.get(), 3, 3, 4, r, c, v, 0, &raw));
  const int32_t r_ok[] = {0, 1, 2, 2};
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "col_indices[3] = 9",
                    sfac_sparse_create_coo(ctx.get(), 3, 3, 4, r_ok, c, v, 0, &raw));
  const int32_t negative[] = {0, -1, 0, 0};
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "row_indices[1] = -1",
                    sfac_sparse_create_coo(ctx.get(), 3, 3, 4, negative, c, v, 0, &raw));
  const int64_t offsets[] = {0, 1, 2};
  const int32_t bad_cols[] = {0, 3};
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "col_indices[1] = 3",
                    sfac_sparse_create_csr(ctx.get(), 2, 3, offsets, bad_cols, v,
                                           static_cast<int64_t>(std::size(bad_cols)), 0, &raw));
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "row_indices[1] = 3",
                    sfac_sparse_create_csc(ctx.get(), 3, 2, offsets, bad_cols, v,
                                           static_cast<int64_t>(std::size(bad_cols)), 0, &raw));
  EXPECT_EQ(raw, kSentinel);
}

TEST(Sparse, NonFiniteValuesAreRejected) {
  Context ctx = make_cpu_context(1);
  const int32_t r[] = {0, 1, 2}, c[] = {0, 1, 2};
  sfac_sparse* raw = kSentinel;
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    const float v[] = {1.0f, bad, 3.0f};
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "values[1]",
                      sfac_sparse_create_coo(ctx.get(), 3, 3, 3, r, c, v, 0, &raw));
  }
  EXPECT_EQ(raw, kSentinel);
}

TEST(Sparse, MalformedCompressedOffsetsAreRejected) {
  Context ctx = make_cpu_context(1);
  const int32_t idx[] = {0, 1, 0};
  const float v[] = {1, 2, 3};
  sfac_sparse* raw = kSentinel;
  const int64_t decreasing[] = {0, 2, 1, 3};
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "row_offsets[1] = 2 > row_offsets[2] = 1",
                    sfac_sparse_create_csr(ctx.get(), 3, 2, decreasing, idx, v,
                                           static_cast<int64_t>(std::size(idx)), 0, &raw));
  const int64_t not_zero[] = {1, 2, 3, 3};
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "row_offsets[0] = 1 must be 0",
                    sfac_sparse_create_csr(ctx.get(), 3, 2, not_zero, idx, v,
                                           static_cast<int64_t>(std::size(idx)), 0, &raw));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "col_offsets is NULL",
                    sfac_sparse_create_csc(ctx.get(), 3, 2, nullptr, idx, v,
                                           static_cast<int64_t>(std::size(idx)), 0, &raw));
  EXPECT_EQ(raw, kSentinel);
}

TEST(Sparse, BadShapesPointersAndFlagsAreRejected) {
  Context ctx = make_cpu_context(1);
  const int32_t r[] = {0}, c[] = {0};
  const float v[] = {1};
  sfac_sparse* raw = kSentinel;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "rows = -1",
                    sfac_sparse_create_coo(ctx.get(), -1, 3, 1, r, c, v, 0, &raw));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "nnz = -5",
                    sfac_sparse_create_coo(ctx.get(), 3, 3, -5, r, c, v, 0, &raw));
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "cols = 4294967296 exceeds the int32 index range",
                    sfac_sparse_create_coo(ctx.get(), 3, int64_t{1} << 32, 1, r, c, v, 0, &raw));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "row_indices is NULL",
                    sfac_sparse_create_coo(ctx.get(), 3, 3, 1, nullptr, c, v, 0, &raw));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "flags = 64",
                    sfac_sparse_create_coo(ctx.get(), 3, 3, 1, r, c, v, 64, &raw));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out is NULL",
                    sfac_sparse_create_coo(ctx.get(), 3, 3, 1, r, c, v, 0, nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "ctx is NULL",
                    sfac_sparse_create_coo(nullptr, 3, 3, 1, r, c, v, 0, &raw));
  EXPECT_EQ(raw, kSentinel);
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "matrix is NULL",
                    sfac_sparse_get_shape(nullptr, nullptr, nullptr, nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "matrix is NULL",
                    sfac_sparse_download_coo(nullptr, nullptr, nullptr, nullptr, 0));
  SFAC_EXPECT_STATUS(SFAC_OK, sfac_sparse_destroy(nullptr));
}

TEST(Sparse, CreateLikeSharesThePatternWithOwnValues) {
  std::mt19937_64 rng(test_seed() + 2);
  Context ctx = make_cpu_context(2);
  const Coo coo = random_coo(40, 30, 300, rng);
  Sparse s = create_sparse(ctx.get(), coo);
  sfac_sparse* raw = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_like(s.get(), nullptr, &raw));
  Sparse zeros(raw);
  EXPECT_EQ(values_of(zeros.get()), std::vector<float>(coo.r.size(), 0.0f));

  std::vector<float> mine(coo.r.size());
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<float>(i);
  SFAC_ASSERT_OK(sfac_sparse_create_like(s.get(), mine.data(), &raw));
  Sparse like(raw);
  EXPECT_EQ(values_of(like.get()), mine);
  Coo expected = coo;
  const auto ref = canonical(coo);
  for (size_t i = 0; i < ref.size(); ++i) {
    expected.r[i] = std::get<0>(ref[i]);
    expected.c[i] = std::get<1>(ref[i]);
    expected.v[i] = mine[i];
  }
  expect_matches(like.get(), expected);
  expect_matches(s.get(), coo);  // the source keeps its values

  mine[3] = std::numeric_limits<float>::quiet_NaN();
  raw = kSentinel;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "values[3]",
                    sfac_sparse_create_like(s.get(), mine.data(), &raw));
  EXPECT_EQ(raw, kSentinel);
}

TEST(Sparse, SetValuesReplacesValuesAndRejectsNaNWithoutChangingThem) {
  Context ctx = make_cpu_context(1);
  const Coo coo{2, 2, {0, 1}, {1, 0}, {1.0f, 2.0f}};
  Sparse m = create_sparse(ctx.get(), coo);
  const float fresh[] = {5.0f, 6.0f};
  SFAC_ASSERT_OK(sfac_sparse_set_values(m.get(), fresh));
  EXPECT_EQ(values_of(m.get()), std::vector<float>({5.0f, 6.0f}));
  const float bad[] = {7.0f, std::numeric_limits<float>::infinity()};
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "values[1]", sfac_sparse_set_values(m.get(), bad));
  EXPECT_EQ(values_of(m.get()), std::vector<float>({5.0f, 6.0f}));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "values is NULL",
                    sfac_sparse_set_values(m.get(), nullptr));
}

TEST(Sparse, ConcurrentReadersSeeOneConsistentCsc) {
  std::mt19937_64 rng(test_seed() + 3);
  Context ctx = make_cpu_context(1);
  const Coo coo = random_coo(500, 400, 20000, rng);
  Sparse m = create_sparse(ctx.get(), coo);
  std::vector<std::vector<int32_t>> results(4, std::vector<int32_t>(coo.r.size()));
  std::vector<std::thread> threads;
  for (auto& out : results) {
    threads.emplace_back([&m, &out] {
      EXPECT_EQ(sfac_sparse_download_csc(m.get(), nullptr, 0, out.data(), nullptr,
                                         static_cast<int64_t>(out.size())),
                SFAC_OK);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& out : results) EXPECT_EQ(out, results[0]);
  expect_matches(m.get(), coo);
}

// The generator draws its random numbers in one sequence and spreads only the arithmetic over
// threads, so a seed gives the same data on any thread count (benchmarks rely on it). Sizes
// past the generator's chunk of 2^20 keys; the implicit case's candidates make three sorted
// runs on three threads.
TEST(Synthesize, SameRatingsAndFactorsOnAnyThreadCount) {
  struct Data {
    int64_t nnz = 0;
    std::vector<int64_t> offsets;
    std::vector<int32_t> cols;
    std::vector<float> values, user_factors, item_factors;
  };
  auto synthesize = [](sfac_feedback feedback, int threads, int64_t users, int64_t items,
                       int64_t nnz) {
    Context ctx = make_cpu_context(threads, test_seed() + 11);
    sfac_sparse* raw = nullptr;
    sfac_dense *raw_users = nullptr, *raw_items = nullptr;
    EXPECT_EQ(sfac_synthesize_ratings(ctx.get(), feedback, users, items, nnz, 6, 0.5, 0.6, &raw,
                                      &raw_users, &raw_items),
              SFAC_OK)
        << sfac_last_error();
    Sparse m(raw);
    Dense u(raw_users), v(raw_items);
    Data d;
    EXPECT_EQ(sfac_sparse_get_shape(m.get(), nullptr, nullptr, &d.nnz), SFAC_OK);
    d.offsets.resize(static_cast<size_t>(users) + 1);
    d.cols.resize(static_cast<size_t>(d.nnz));
    d.values.resize(static_cast<size_t>(d.nnz));
    EXPECT_EQ(sfac_sparse_download_csr(m.get(), d.offsets.data(), users + 1, d.cols.data(),
                                       d.values.data(), d.nnz),
              SFAC_OK);
    d.user_factors.resize(static_cast<size_t>(users * 6));
    d.item_factors.resize(static_cast<size_t>(items * 6));
    EXPECT_EQ(sfac_dense_download(u.get(), d.user_factors.data(), users * 6), SFAC_OK);
    EXPECT_EQ(sfac_dense_download(v.get(), d.item_factors.data(), items * 6), SFAC_OK);
    return d;
  };
  // Implicit feedback draws three candidates a rating: 3.3M.
  const struct {
    sfac_feedback feedback;
    int64_t users, items, nnz;
  } cases[] = {{SFAC_FEEDBACK_IMPLICIT, 30000, 4000, 1100000},
               {SFAC_FEEDBACK_EXPLICIT, 20000, 3000, 1200000}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.feedback == SFAC_FEEDBACK_IMPLICIT ? "implicit" : "explicit");
    const Data one = synthesize(c.feedback, 1, c.users, c.items, c.nnz);
    EXPECT_GT(one.nnz, c.nnz / 2);
    const Data many = synthesize(c.feedback, 3, c.users, c.items, c.nnz);
    EXPECT_EQ(many.nnz, one.nnz);
    EXPECT_TRUE(many.offsets == one.offsets && many.cols == one.cols && many.values == one.values);
    EXPECT_TRUE(many.user_factors == one.user_factors && many.item_factors == one.item_factors);
  }
}
