// Caller buffer capacities (0.2.0). Every call that writes into caller arrays takes their
// capacity in elements: a capacity below what the call must write is SFAC_ERR_BUFFER_TOO_SMALL
// naming the array and the elements it needs, with nothing written; a negative one is
// SFAC_ERR_INVALID_ARGUMENT; a NULL array ignores its capacity. The constructors from
// compressed arrays (CSR, CSC, BALS) take the lengths of their index and value arrays, which
// must match the pointer arrays, checked before anything else about the arrays.
#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sfac_test.h"

using namespace sfac_test;

namespace {

// What a failed call must leave in a caller's array and in *out.
template <typename T>
constexpr T kSentinel = static_cast<T>(-777);
sfac_sparse* const kSparseSentinel = reinterpret_cast<sfac_sparse*>(uintptr_t{0x5f5f});

template <typename T>
int64_t len(const std::vector<T>& v) {
  return static_cast<int64_t>(v.size());
}

// "<array> needs <n> elements": the message of a short buffer.
std::string needs(const std::string& array, int64_t n) {
  return array + " needs " + std::to_string(n) + " elements";
}

// How a call treats its array when it is NULL (with a short or negative capacity, which it must
// then ignore).
enum class NullArray {
  kSkipped,   // the array is optional: SFAC_OK
  kRejected,  // the array is required: SFAC_ERR_INVALID_ARGUMENT "<array> is NULL"
  kNotTried,  // the caller of the helper checks NULL itself
};

// Checks a call that writes `needed` (>= 1) elements into one caller array, given as
// call(array, capacity) with the call's other arguments fixed by the lambda:
//   one element short, and 0: SFAC_ERR_BUFFER_TOO_SMALL naming the array, `needed` and the
//     capacity, and the array untouched (all `needed` elements, not just the first capacity);
//   negative: SFAC_ERR_INVALID_ARGUMENT naming the array, and the array untouched;
//   exact: SFAC_OK; more than needed: SFAC_OK, the same contents and nothing written past them;
//   NULL with capacity -1 or 0: as `null_array` says, never a capacity error.
// Returns what the exact call wrote.
template <typename T, typename Call>
std::vector<T> expect_capacity_checked(const std::string& name, int64_t needed, Call call,
                                       NullArray null_array) {
  SCOPED_TRACE(name + " of " + std::to_string(needed) + " elements");
  EXPECT_GE(needed, 1);
  const std::vector<T> untouched(static_cast<size_t>(needed), kSentinel<T>);
  std::vector<T> buffer = untouched;
  for (const int64_t short_capacity : {needed - 1, int64_t{0}}) {
    SFAC_EXPECT_ERROR(SFAC_ERR_BUFFER_TOO_SMALL, needs(name, needed),
                      call(buffer.data(), short_capacity));
    EXPECT_NE(std::string(sfac_last_error()).find("capacity is " + std::to_string(short_capacity)),
              std::string::npos)
        << sfac_last_error();
    EXPECT_EQ(buffer, untouched) << "a short buffer was written";
  }
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "the capacity of " + name + " = -1",
                    call(buffer.data(), -1));
  EXPECT_EQ(buffer, untouched) << "a buffer of negative capacity was written";
  SFAC_EXPECT_STATUS(SFAC_OK, call(buffer.data(), needed));
  std::vector<T> larger(static_cast<size_t>(needed) + 3, kSentinel<T>);
  SFAC_EXPECT_STATUS(SFAC_OK, call(larger.data(), len(larger)));
  EXPECT_TRUE(std::equal(buffer.begin(), buffer.end(), larger.begin()));
  EXPECT_EQ(std::vector<T>(larger.begin() + needed, larger.end()), std::vector<T>(3, kSentinel<T>))
      << "written past the elements the call needs";
  for (const int64_t capacity : {int64_t{-1}, int64_t{0}}) {
    if (null_array == NullArray::kSkipped) {
      SFAC_EXPECT_STATUS(SFAC_OK, call(nullptr, capacity));
    } else if (null_array == NullArray::kRejected) {
      SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, name + " is NULL", call(nullptr, capacity));
    }
  }
  return buffer;
}

// A random matrix with distinct entries; its last row and column stay empty.
Triplets random_matrix(uint64_t seed, int64_t rows, int64_t cols, int64_t draws) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> row(0, static_cast<int32_t>(rows - 2));
  std::uniform_int_distribution<int32_t> col(0, static_cast<int32_t>(cols - 2));
  std::uniform_real_distribution<float> value(1.0f, 5.0f);
  Triplets t;
  t.rows = rows;
  t.cols = cols;
  std::set<std::pair<int32_t, int32_t>> seen;
  for (int64_t e = 0; e < draws; ++e) {
    const int32_t r = row(rng), c = col(rng);
    if (!seen.insert({r, c}).second) continue;
    t.r.push_back(r);
    t.c.push_back(c);
    t.v.push_back(value(rng));
  }
  return t;
}

struct Csr {
  std::vector<int64_t> offsets;
  std::vector<int32_t> indices;
  std::vector<float> values;
  bool operator==(const Csr& o) const {
    return offsets == o.offsets && indices == o.indices && values == o.values;
  }
};

// Downloads CSR (by_row) or CSC (!by_row) with buffers of exactly the needed sizes.
Csr download_compressed(const sfac_sparse* m, bool by_row) {
  int64_t rows = 0, cols = 0, nnz = 0;
  EXPECT_EQ(sfac_sparse_get_shape(m, &rows, &cols, &nnz), SFAC_OK);
  Csr c;
  c.offsets.resize(static_cast<size_t>(by_row ? rows : cols) + 1);
  c.indices.resize(static_cast<size_t>(nnz));
  c.values.resize(static_cast<size_t>(nnz));
  const auto download = by_row ? sfac_sparse_download_csr : sfac_sparse_download_csc;
  EXPECT_EQ(download(m, c.offsets.data(), len(c.offsets), c.indices.data(), c.values.data(),
                     len(c.indices)),
            SFAC_OK)
      << sfac_last_error();
  return c;
}

// A small trained model (ALS, rank 3) of `ratings`.
Model train_small(sfac_context* ctx, const sfac_sparse* ratings, bool biases) {
  sfac_train_options* raw_options = nullptr;
  EXPECT_EQ(sfac_train_options_create(SFAC_ALGO_ALS, &raw_options), SFAC_OK);
  Options o(raw_options);
  EXPECT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_RANK, 3), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_ITERATIONS, 2), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_USE_BIASES, biases ? 1 : 0), SFAC_OK);
  sfac_model* raw = nullptr;
  EXPECT_EQ(sfac_train(ctx, ratings, o.get(), &raw), SFAC_OK) << sfac_last_error();
  return Model(raw);
}

// Everything a model holds, to check that a failed call changed nothing.
struct ModelState {
  std::vector<float> users, items, user_bias, item_bias;
  int has_biases = -1;
  float mean = 0.0f;
  bool operator==(const ModelState& o) const {
    return users == o.users && items == o.items && user_bias == o.user_bias &&
           item_bias == o.item_bias && has_biases == o.has_biases && mean == o.mean;
  }
};

ModelState state_of(const sfac_model* m) {
  int64_t users = 0, items = 0, rank = 0;
  EXPECT_EQ(sfac_model_get_shape(m, &users, &items, &rank), SFAC_OK);
  ModelState s;
  s.users.resize(static_cast<size_t>(users * rank));
  s.items.resize(static_cast<size_t>(items * rank));
  s.user_bias.resize(static_cast<size_t>(users));
  s.item_bias.resize(static_cast<size_t>(items));
  EXPECT_EQ(sfac_model_get_user_factors(m, s.users.data(), len(s.users)), SFAC_OK);
  EXPECT_EQ(sfac_model_get_item_factors(m, s.items.data(), len(s.items)), SFAC_OK);
  EXPECT_EQ(sfac_model_get_biases(m, &s.has_biases, &s.mean, s.user_bias.data(), len(s.user_bias),
                                  s.item_bias.data(), len(s.item_bias)),
            SFAC_OK);
  return s;
}

// A CPU context and a 23 x 17 random matrix (its last row and column empty).
class Capacities : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = make_cpu_context(2, test_seed());
    triplets_ = random_matrix(test_seed() + 11, 23, 17, 120);
    matrix_ = create_sparse(ctx_.get(), triplets_);
    ASSERT_TRUE(matrix_);
    SFAC_ASSERT_OK(sfac_sparse_get_shape(matrix_.get(), &rows_, &cols_, &nnz_));
    ASSERT_GE(nnz_, 50);
  }

  Context ctx_;
  Triplets triplets_;
  Sparse matrix_;
  int64_t rows_ = 0, cols_ = 0, nnz_ = 0;
};

}  // namespace

// ---- Sparse downloads -------------------------------------------------------------------------

TEST_F(Capacities, DownloadCooChecksEachArrayAgainstNnz) {
  const sfac_sparse* m = matrix_.get();
  const auto rows = expect_capacity_checked<int32_t>(
      "row_indices", nnz_,
      [&](int32_t* a, int64_t capacity) {
        return sfac_sparse_download_coo(m, a, nullptr, nullptr, capacity);
      },
      NullArray::kSkipped);
  const auto cols = expect_capacity_checked<int32_t>(
      "col_indices", nnz_,
      [&](int32_t* a, int64_t capacity) {
        return sfac_sparse_download_coo(m, nullptr, a, nullptr, capacity);
      },
      NullArray::kSkipped);
  const auto values = expect_capacity_checked<float>(
      "values", nnz_,
      [&](float* a, int64_t capacity) {
        return sfac_sparse_download_coo(m, nullptr, nullptr, a, capacity);
      },
      NullArray::kSkipped);
  // The three together: one short capacity writes none of them.
  std::vector<int32_t> r(static_cast<size_t>(nnz_), kSentinel<int32_t>), c = r;
  std::vector<float> v(static_cast<size_t>(nnz_), kSentinel<float>);
  SFAC_EXPECT_ERROR(SFAC_ERR_BUFFER_TOO_SMALL, needs("row_indices", nnz_),
                    sfac_sparse_download_coo(m, r.data(), c.data(), v.data(), nnz_ - 1));
  EXPECT_EQ(r, std::vector<int32_t>(r.size(), kSentinel<int32_t>));
  EXPECT_EQ(c, std::vector<int32_t>(c.size(), kSentinel<int32_t>));
  EXPECT_EQ(v, std::vector<float>(v.size(), kSentinel<float>));
  SFAC_ASSERT_OK(sfac_sparse_download_coo(m, r.data(), c.data(), v.data(), len(r)));
  EXPECT_EQ(r, rows);
  EXPECT_EQ(c, cols);
  EXPECT_EQ(v, values);
  SFAC_EXPECT_STATUS(SFAC_OK, sfac_sparse_download_coo(m, nullptr, nullptr, nullptr, -5));
}

TEST_F(Capacities, DownloadCsrAndCscCheckTheOffsetsAndTheEntriesSeparately) {
  const sfac_sparse* m = matrix_.get();
  for (const bool by_row : {true, false}) {
    SCOPED_TRACE(by_row ? "CSR" : "CSC");
    const auto download = by_row ? sfac_sparse_download_csr : sfac_sparse_download_csc;
    const std::string offsets_name = by_row ? "row_offsets" : "col_offsets";
    const std::string indices_name = by_row ? "col_indices" : "row_indices";
    const int64_t offsets_needed = (by_row ? rows_ : cols_) + 1;
    const Csr want = download_compressed(m, by_row);
    // The capacity of the entries does not matter for the offsets, nor the other way round.
    EXPECT_EQ(expect_capacity_checked<int64_t>(
                  offsets_name, offsets_needed,
                  [&](int64_t* a, int64_t capacity) {
                    return download(m, a, capacity, nullptr, nullptr, -1);
                  },
                  NullArray::kSkipped),
              want.offsets);
    EXPECT_EQ(expect_capacity_checked<int32_t>(
                  indices_name, nnz_,
                  [&](int32_t* a, int64_t capacity) {
                    return download(m, nullptr, -1, a, nullptr, capacity);
                  },
                  NullArray::kSkipped),
              want.indices);
    EXPECT_EQ(expect_capacity_checked<float>(
                  "values", nnz_,
                  [&](float* a, int64_t capacity) {
                    return download(m, nullptr, -1, nullptr, a, capacity);
                  },
                  NullArray::kSkipped),
              want.values);

    // All three arrays: when one capacity is short, none of them is written.
    Csr got;
    got.offsets.assign(static_cast<size_t>(offsets_needed), kSentinel<int64_t>);
    got.indices.assign(static_cast<size_t>(nnz_), kSentinel<int32_t>);
    got.values.assign(static_cast<size_t>(nnz_), kSentinel<float>);
    const Csr untouched = got;
    SFAC_EXPECT_ERROR(SFAC_ERR_BUFFER_TOO_SMALL, needs(offsets_name, offsets_needed),
                      download(m, got.offsets.data(), offsets_needed - 1, got.indices.data(),
                               got.values.data(), nnz_));
    EXPECT_TRUE(got == untouched);
    SFAC_EXPECT_ERROR(SFAC_ERR_BUFFER_TOO_SMALL, needs(indices_name, nnz_),
                      download(m, got.offsets.data(), offsets_needed, got.indices.data(),
                               got.values.data(), nnz_ - 1));
    EXPECT_TRUE(got == untouched);
    SFAC_EXPECT_ERROR(
        SFAC_ERR_INVALID_ARGUMENT, "the capacity of " + offsets_name + " = -2",
        download(m, got.offsets.data(), -2, got.indices.data(), got.values.data(), nnz_));
    EXPECT_TRUE(got == untouched);
    SFAC_ASSERT_OK(download(m, got.offsets.data(), len(got.offsets), got.indices.data(),
                            got.values.data(), len(got.indices)));
    EXPECT_TRUE(got == want);
  }
}

TEST_F(Capacities, DegreeOrderChecksTheOrderAgainstTheAxisLength) {
  for (const sfac_axis axis : {SFAC_AXIS_ROWS, SFAC_AXIS_COLS}) {
    const int64_t n = axis == SFAC_AXIS_ROWS ? rows_ : cols_;
    const auto order = expect_capacity_checked<int32_t>(
        "order", n,
        [&](int32_t* a, int64_t capacity) {
          return sfac_sparse_degree_order(matrix_.get(), axis, a, capacity);
        },
        NullArray::kRejected);
    std::vector<int32_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(sorted[i], i);
  }
}

TEST_F(Capacities, DownloadBalsChecksEveryArray) {
  const sfac_sparse* m = matrix_.get();
  const int64_t tile_rows = 4, tile_cols = 5;
  for (const uint32_t flags : {uint32_t{SFAC_BALS_DEFAULT}, uint32_t{SFAC_BALS_REORDER}}) {
    SCOPED_TRACE("flags " + std::to_string(flags));
    int64_t tr = 0, tc = 0, tiles = 0, tile_col_count = 0;
    SFAC_ASSERT_OK(
        sfac_sparse_bals_sizes(m, tile_rows, tile_cols, flags, &tr, &tc, &tiles, &tile_col_count));
    ASSERT_EQ(tr, tile_rows);
    ASSERT_EQ(tc, tile_cols);
    ASSERT_GE(tile_col_count, 1);
    const int64_t seg_ptr_needed = tiles * tile_rows + 1;
    // Each array alone (the others NULL, their capacities -1: ignored).
    auto one = [&](int64_t* tile_ptr, int64_t tile_ptr_capacity, int32_t* tile_col,
                   int64_t tile_col_capacity, int64_t* seg_ptr, int64_t seg_ptr_capacity,
                   int32_t* seg_col, float* values, int64_t capacity, int32_t* row_order,
                   int64_t row_order_capacity, int32_t* col_order, int64_t col_order_capacity) {
      return sfac_sparse_download_bals(m, tile_rows, tile_cols, flags, tile_ptr, tile_ptr_capacity,
                                       tile_col, tile_col_capacity, seg_ptr, seg_ptr_capacity,
                                       seg_col, values, capacity, row_order, row_order_capacity,
                                       col_order, col_order_capacity);
    };
    const auto tile_ptr = expect_capacity_checked<int64_t>(
        "tile_ptr", tiles + 1,
        [&](int64_t* a, int64_t cap) {
          return one(a, cap, nullptr, -1, nullptr, -1, nullptr, nullptr, -1, nullptr, -1, nullptr,
                     -1);
        },
        NullArray::kSkipped);
    const auto tile_col = expect_capacity_checked<int32_t>(
        "tile_col", tile_col_count,
        [&](int32_t* a, int64_t cap) {
          return one(nullptr, -1, a, cap, nullptr, -1, nullptr, nullptr, -1, nullptr, -1, nullptr,
                     -1);
        },
        NullArray::kSkipped);
    const auto seg_ptr = expect_capacity_checked<int64_t>(
        "seg_ptr", seg_ptr_needed,
        [&](int64_t* a, int64_t cap) {
          return one(nullptr, -1, nullptr, -1, a, cap, nullptr, nullptr, -1, nullptr, -1, nullptr,
                     -1);
        },
        NullArray::kSkipped);
    const auto seg_col = expect_capacity_checked<int32_t>(
        "seg_col", nnz_,
        [&](int32_t* a, int64_t cap) {
          return one(nullptr, -1, nullptr, -1, nullptr, -1, a, nullptr, cap, nullptr, -1, nullptr,
                     -1);
        },
        NullArray::kSkipped);
    const auto values = expect_capacity_checked<float>(
        "values", nnz_,
        [&](float* a, int64_t cap) {
          return one(nullptr, -1, nullptr, -1, nullptr, -1, nullptr, a, cap, nullptr, -1, nullptr,
                     -1);
        },
        NullArray::kSkipped);
    const auto row_order = expect_capacity_checked<int32_t>(
        "row_order", rows_,
        [&](int32_t* a, int64_t cap) {
          return one(nullptr, -1, nullptr, -1, nullptr, -1, nullptr, nullptr, -1, a, cap, nullptr,
                     -1);
        },
        NullArray::kSkipped);
    const auto col_order = expect_capacity_checked<int32_t>(
        "col_order", cols_,
        [&](int32_t* a, int64_t cap) {
          return one(nullptr, -1, nullptr, -1, nullptr, -1, nullptr, nullptr, -1, nullptr, -1, a,
                     cap);
        },
        NullArray::kSkipped);
    EXPECT_EQ(tile_ptr.back(), tile_col_count);
    EXPECT_EQ(seg_ptr.back(), nnz_);

    // All arrays: one capacity short, each in turn, writes none of them.
    std::vector<int64_t> tp(static_cast<size_t>(tiles) + 1, kSentinel<int64_t>);
    std::vector<int32_t> tcol(static_cast<size_t>(tile_col_count), kSentinel<int32_t>);
    std::vector<int64_t> sp(static_cast<size_t>(seg_ptr_needed), kSentinel<int64_t>);
    std::vector<int32_t> sc(static_cast<size_t>(nnz_), kSentinel<int32_t>);
    std::vector<float> v(static_cast<size_t>(nnz_), kSentinel<float>);
    std::vector<int32_t> ro(static_cast<size_t>(rows_), kSentinel<int32_t>);
    std::vector<int32_t> co(static_cast<size_t>(cols_), kSentinel<int32_t>);
    const auto all_untouched = [&] {
      EXPECT_EQ(tp, std::vector<int64_t>(tp.size(), kSentinel<int64_t>));
      EXPECT_EQ(tcol, std::vector<int32_t>(tcol.size(), kSentinel<int32_t>));
      EXPECT_EQ(sp, std::vector<int64_t>(sp.size(), kSentinel<int64_t>));
      EXPECT_EQ(sc, std::vector<int32_t>(sc.size(), kSentinel<int32_t>));
      EXPECT_EQ(v, std::vector<float>(v.size(), kSentinel<float>));
      EXPECT_EQ(ro, std::vector<int32_t>(ro.size(), kSentinel<int32_t>));
      EXPECT_EQ(co, std::vector<int32_t>(co.size(), kSentinel<int32_t>));
    };
    const std::vector<std::pair<std::string, int64_t>> arrays = {
        {"tile_ptr", tiles + 1}, {"tile_col", tile_col_count}, {"seg_ptr", seg_ptr_needed},
        {"seg_col", nnz_},       {"row_order", rows_},         {"col_order", cols_}};
    for (size_t shorter = 0; shorter < arrays.size(); ++shorter) {
      std::vector<int64_t> cap = {len(tp), len(tcol), len(sp), len(sc), len(ro), len(co)};
      --cap[shorter];
      SFAC_EXPECT_ERROR(SFAC_ERR_BUFFER_TOO_SMALL,
                        needs(arrays[shorter].first, arrays[shorter].second),
                        one(tp.data(), cap[0], tcol.data(), cap[1], sp.data(), cap[2], sc.data(),
                            v.data(), cap[3], ro.data(), cap[4], co.data(), cap[5]));
      all_untouched();
    }
    SFAC_ASSERT_OK(one(tp.data(), len(tp), tcol.data(), len(tcol), sp.data(), len(sp), sc.data(),
                       v.data(), len(sc), ro.data(), len(ro), co.data(), len(co)));
    EXPECT_EQ(tp, tile_ptr);
    EXPECT_EQ(tcol, tile_col);
    EXPECT_EQ(sp, seg_ptr);
    EXPECT_EQ(sc, seg_col);
    EXPECT_EQ(v, values);
    EXPECT_EQ(ro, row_order);
    EXPECT_EQ(co, col_order);
  }
}

TEST_F(Capacities, EmptyOutputsTakeACapacityOfZeroButNeverANegativeOne) {
  sfac_sparse* raw = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_coo(ctx_.get(), 3, 4, 0, nullptr, nullptr, nullptr, 0, &raw));
  const Sparse empty(raw);
  int32_t index = kSentinel<int32_t>;
  float value = kSentinel<float>;
  SFAC_EXPECT_STATUS(SFAC_OK, sfac_sparse_download_coo(empty.get(), &index, &index, &value, 0));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "the capacity of row_indices = -1",
                    sfac_sparse_download_coo(empty.get(), &index, nullptr, nullptr, -1));
  EXPECT_EQ(index, kSentinel<int32_t>);
  EXPECT_EQ(value, kSentinel<float>);
  std::vector<int64_t> offsets(4, kSentinel<int64_t>);
  SFAC_EXPECT_ERROR(SFAC_ERR_BUFFER_TOO_SMALL, needs("row_offsets", 4),
                    sfac_sparse_download_csr(empty.get(), offsets.data(), 3, &index, &value, 0));
  EXPECT_EQ(offsets, std::vector<int64_t>(4, kSentinel<int64_t>));
  SFAC_ASSERT_OK(
      sfac_sparse_download_csr(empty.get(), offsets.data(), len(offsets), &index, &value, 0));
  EXPECT_EQ(offsets, std::vector<int64_t>(4, 0));

  sfac_dense* d = nullptr;
  SFAC_ASSERT_OK(sfac_dense_create(ctx_.get(), 0, 5, SFAC_DTYPE_FLOAT32, nullptr, &d));
  const Dense none(d);
  SFAC_EXPECT_STATUS(SFAC_OK, sfac_dense_download(none.get(), &value, 0));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "the capacity of data = -1",
                    sfac_dense_download(none.get(), &value, -1));
  EXPECT_EQ(value, kSentinel<float>);
}

// ---- Dense and id maps ------------------------------------------------------------------------

TEST_F(Capacities, DenseDownloadChecksRowsTimesCols) {
  std::vector<float> data(7 * 5);
  for (size_t i = 0; i < data.size(); ++i) data[i] = 0.5f * static_cast<float>(i);
  sfac_dense* raw = nullptr;
  SFAC_ASSERT_OK(sfac_dense_create(ctx_.get(), 7, 5, SFAC_DTYPE_FLOAT32, data.data(), &raw));
  const Dense dense(raw);
  EXPECT_EQ(
      expect_capacity_checked<float>(
          "data", 35,
          [&](float* a, int64_t capacity) { return sfac_dense_download(dense.get(), a, capacity); },
          NullArray::kRejected),
      data);
}

TEST_F(Capacities, IdMapGetIdsChecksTheMapSize) {
  ScratchDir dir("sfac_capacities");
  const std::string path = dir.file("ids.txt");
  std::ofstream(path) << "10 20 3\n30 40 1\n50 20 2\n70 40 1\n";
  sfac_sparse* raw = nullptr;
  sfac_idmap *rows = nullptr, *cols = nullptr;
  SFAC_ASSERT_OK(sfac_read_sparse(ctx_.get(), path.c_str(), SFAC_FORMAT_TRIPLETS,
                                  SFAC_READ_REMAP_IDS, &raw, &rows, &cols));
  const Sparse matrix(raw);
  const IdMap row_map(rows), col_map(cols);
  EXPECT_EQ(expect_capacity_checked<int64_t>(
                "original_ids", 4,
                [&](int64_t* a, int64_t capacity) {
                  return sfac_idmap_get_ids(row_map.get(), a, capacity);
                },
                NullArray::kRejected),
            (std::vector<int64_t>{10, 30, 50, 70}));
  EXPECT_EQ(expect_capacity_checked<int64_t>(
                "original_ids", 2,
                [&](int64_t* a, int64_t capacity) {
                  return sfac_idmap_get_ids(col_map.get(), a, capacity);
                },
                NullArray::kRejected),
            (std::vector<int64_t>{20, 40}));
}

// ---- Models -----------------------------------------------------------------------------------

TEST_F(Capacities, ModelFactorsAndBiasesCheckTheirShapes) {
  const Model model = train_small(ctx_.get(), matrix_.get(), true);
  ASSERT_TRUE(model);
  const sfac_model* m = model.get();
  int64_t users = 0, items = 0, rank = 0;
  SFAC_ASSERT_OK(sfac_model_get_shape(m, &users, &items, &rank));
  ASSERT_EQ(users, rows_);
  ASSERT_EQ(items, cols_);
  ASSERT_EQ(rank, 3);
  expect_capacity_checked<float>(
      "out", users * rank,
      [&](float* a, int64_t capacity) { return sfac_model_get_user_factors(m, a, capacity); },
      NullArray::kRejected);
  expect_capacity_checked<float>(
      "out", items * rank,
      [&](float* a, int64_t capacity) { return sfac_model_get_item_factors(m, a, capacity); },
      NullArray::kRejected);
  int has_biases = -1;
  expect_capacity_checked<float>(
      "user_biases", users,
      [&](float* a, int64_t capacity) {
        return sfac_model_get_biases(m, &has_biases, nullptr, a, capacity, nullptr, -1);
      },
      NullArray::kSkipped);
  expect_capacity_checked<float>(
      "item_biases", items,
      [&](float* a, int64_t capacity) {
        return sfac_model_get_biases(m, &has_biases, nullptr, nullptr, -1, a, capacity);
      },
      NullArray::kSkipped);
  EXPECT_EQ(has_biases, 1);

  // Both bias arrays: one short writes neither, nor has_biases or the global mean.
  std::vector<float> bu(static_cast<size_t>(users), kSentinel<float>);
  std::vector<float> bi(static_cast<size_t>(items), kSentinel<float>);
  int has = -1;
  float mean = kSentinel<float>;
  SFAC_EXPECT_ERROR(
      SFAC_ERR_BUFFER_TOO_SMALL, needs("item_biases", items),
      sfac_model_get_biases(m, &has, &mean, bu.data(), len(bu), bi.data(), len(bi) - 1));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_BUFFER_TOO_SMALL, needs("user_biases", users),
      sfac_model_get_biases(m, &has, &mean, bu.data(), len(bu) - 1, bi.data(), len(bi)));
  EXPECT_EQ(has, -1);
  EXPECT_EQ(mean, kSentinel<float>);
  EXPECT_EQ(bu, std::vector<float>(bu.size(), kSentinel<float>));
  EXPECT_EQ(bi, std::vector<float>(bi.size(), kSentinel<float>));
  SFAC_ASSERT_OK(sfac_model_get_biases(m, &has, &mean, bu.data(), len(bu), bi.data(), len(bi)));
  EXPECT_EQ(has, 1);
  EXPECT_NE(mean, kSentinel<float>);

  // Without biases the call writes no bias: any non-negative capacity will do.
  const Model plain = train_small(ctx_.get(), matrix_.get(), false);
  ASSERT_TRUE(plain);
  std::fill(bu.begin(), bu.end(), kSentinel<float>);
  SFAC_ASSERT_OK(sfac_model_get_biases(plain.get(), &has, &mean, bu.data(), 0, bi.data(), 0));
  EXPECT_EQ(has, 0);
  EXPECT_EQ(bu, std::vector<float>(bu.size(), kSentinel<float>));
}

TEST_F(Capacities, RecommendAndSimilarItemsCheckCountTimesN) {
  const Model model = train_small(ctx_.get(), matrix_.get(), true);
  ASSERT_TRUE(model);
  const sfac_model* m = model.get();
  const std::vector<int32_t> users = {0, 5, 9, 5};
  const std::vector<int32_t> queries = {1, 4, 15};
  const int n = 6;
  for (const bool similar : {false, true}) {
    SCOPED_TRACE(similar ? "similar_items" : "recommend");
    const int64_t count = similar ? len(queries) : len(users);
    const int64_t needed = count * n;
    const auto call = [&](int32_t* out_items, float* out_scores, int64_t capacity) {
      return similar ? sfac_model_similar_items(m, count, queries.data(), n, out_items, out_scores,
                                                capacity)
                     : sfac_model_recommend(m, count, users.data(), n, matrix_.get(), 0, nullptr,
                                            out_items, out_scores, capacity);
    };
    // out_items and out_scores share the capacity; both are required.
    // (scores as long as the longest out_items the helper passes, the capacity being shared)
    std::vector<float> scores(static_cast<size_t>(needed) + 3, kSentinel<float>);
    const auto items = expect_capacity_checked<int32_t>(
        "out_items", needed,
        [&](int32_t* a, int64_t capacity) {
          std::fill(scores.begin(), scores.end(), kSentinel<float>);
          const sfac_status status = call(a, scores.data(), capacity);
          if (status != SFAC_OK) {
            EXPECT_EQ(scores, std::vector<float>(scores.size(), kSentinel<float>));
          }
          return status;
        },
        NullArray::kNotTried);
    EXPECT_EQ(std::count(items.begin(), items.end(), kSentinel<int32_t>), 0);
    // A short out_scores is named too (out_items NULL: its own check is then the NULL one).
    std::fill(scores.begin(), scores.end(), kSentinel<float>);
    SFAC_EXPECT_ERROR(SFAC_ERR_BUFFER_TOO_SMALL, needs("out_scores", needed),
                      call(nullptr, scores.data(), needed - 1));
    EXPECT_EQ(scores, std::vector<float>(scores.size(), kSentinel<float>));
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "the capacity of out_scores = -1",
                      call(nullptr, scores.data(), -1));
    // NULL arrays ignore the capacity: the NULL is what is reported.
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out_items is NULL", call(nullptr, nullptr, -1));
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out_items is NULL",
                      call(nullptr, scores.data(), needed));
  }
}

TEST_F(Capacities, RecalculateUserChecksTheRankAndKeepsTheModel) {
  Model model = train_small(ctx_.get(), matrix_.get(), true);
  ASSERT_TRUE(model);
  sfac_model* m = model.get();
  const ModelState before = state_of(m);
  const std::vector<int32_t> items = {0, 3, 7, 11};
  const std::vector<float> ratings = {4.0f, 2.0f, 5.0f, 1.0f};
  float bias = kSentinel<float>;
  // user = -1 computes without changing the model.
  const auto factors = expect_capacity_checked<float>(
      "factors", 3,
      [&](float* a, int64_t capacity) {
        return sfac_model_recalculate_user(m, -1, len(items), items.data(), ratings.data(), a,
                                           capacity, &bias);
      },
      NullArray::kRejected);
  EXPECT_TRUE(state_of(m) == before);
  // user >= 0 with a short buffer: neither the buffer, the bias nor the model's row is written.
  std::vector<float> x(3, kSentinel<float>);
  bias = kSentinel<float>;
  SFAC_EXPECT_ERROR(SFAC_ERR_BUFFER_TOO_SMALL, needs("factors", 3),
                    sfac_model_recalculate_user(m, 2, len(items), items.data(), ratings.data(),
                                                x.data(), 2, &bias));
  EXPECT_EQ(x, std::vector<float>(3, kSentinel<float>));
  EXPECT_EQ(bias, kSentinel<float>);
  EXPECT_TRUE(state_of(m) == before);
  SFAC_ASSERT_OK(sfac_model_recalculate_user(m, 2, len(items), items.data(), ratings.data(),
                                             x.data(), len(x), &bias));
  EXPECT_EQ(x, factors);
  const ModelState after = state_of(m);
  EXPECT_TRUE(std::equal(x.begin(), x.end(), after.users.begin() + 2 * 3));
}

// ---- Input lengths ----------------------------------------------------------------------------

TEST_F(Capacities, CreateCsrAndCscTakeTheLengthOfTheirEntries) {
  for (const bool by_row : {true, false}) {
    SCOPED_TRACE(by_row ? "CSR" : "CSC");
    const auto create = by_row ? sfac_sparse_create_csr : sfac_sparse_create_csc;
    const std::string offsets_end = by_row ? "row_offsets[rows] = " : "col_offsets[cols] = ";
    Csr c = download_compressed(matrix_.get(), by_row);
    const int64_t nnz = len(c.indices);
    ASSERT_EQ(c.offsets.back(), nnz);
    const auto make = [&](const Csr& arrays, int64_t count, sfac_sparse** out) {
      return create(ctx_.get(), rows_, cols_, arrays.offsets.data(), arrays.indices.data(),
                    arrays.values.data(), count, SFAC_SPARSE_DEFAULT, out);
    };
    sfac_sparse* out = kSparseSentinel;
    for (const int64_t wrong : {nnz - 1, nnz + 1, int64_t{0}}) {
      SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT,
                        offsets_end + std::to_string(nnz) + " but nnz = " + std::to_string(wrong),
                        make(c, wrong, &out));
      EXPECT_EQ(out, kSparseSentinel);
    }
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "nnz = -1 must be >= 0", make(c, -1, &out));
    EXPECT_EQ(out, kSparseSentinel);
    // The count is checked before the entries: an index out of range with a wrong count is
    // reported as the count.
    Csr bad = c;
    bad.indices[0] = 1000;
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT,
                      offsets_end + std::to_string(nnz) + " but nnz = " + std::to_string(nnz - 1),
                      make(bad, nnz - 1, &out));
    SFAC_EXPECT_STATUS(SFAC_ERR_OUT_OF_RANGE, make(bad, nnz, &out));
    EXPECT_EQ(out, kSparseSentinel);
    // The right count builds the same matrix.
    SFAC_ASSERT_OK(make(c, nnz, &out));
    const Sparse built(out);
    EXPECT_TRUE(download_compressed(built.get(), by_row) == c);
  }
}

TEST_F(Capacities, CreateBalsTakesTheLengthsOfTileColAndTheEntries) {
  const sfac_sparse* m = matrix_.get();
  const int64_t tile_rows = 4, tile_cols = 5;
  int64_t tiles = 0, tile_col_count = 0;
  SFAC_ASSERT_OK(sfac_sparse_bals_sizes(m, tile_rows, tile_cols, SFAC_BALS_REORDER, nullptr,
                                        nullptr, &tiles, &tile_col_count));
  std::vector<int64_t> tile_ptr(static_cast<size_t>(tiles) + 1);
  std::vector<int32_t> tile_col(static_cast<size_t>(tile_col_count));
  std::vector<int64_t> seg_ptr(static_cast<size_t>(tiles * tile_rows) + 1);
  std::vector<int32_t> seg_col(static_cast<size_t>(nnz_));
  std::vector<float> values(static_cast<size_t>(nnz_));
  std::vector<int32_t> row_order(static_cast<size_t>(rows_)), col_order(static_cast<size_t>(cols_));
  SFAC_ASSERT_OK(sfac_sparse_download_bals(
      m, tile_rows, tile_cols, SFAC_BALS_REORDER, tile_ptr.data(), len(tile_ptr), tile_col.data(),
      len(tile_col), seg_ptr.data(), len(seg_ptr), seg_col.data(), values.data(), len(seg_col),
      row_order.data(), len(row_order), col_order.data(), len(col_order)));
  const auto make = [&](const std::vector<int32_t>& seg_cols, int64_t tile_col_length, int64_t nnz,
                        sfac_sparse** out) {
    return sfac_sparse_create_bals(ctx_.get(), rows_, cols_, tile_rows, tile_cols, tile_ptr.data(),
                                   tile_col.data(), tile_col_length, seg_ptr.data(),
                                   seg_cols.data(), values.data(), nnz, row_order.data(),
                                   col_order.data(), out);
  };
  const std::string tiles_end =
      "tile_ptr[tiles] = " + std::to_string(tile_col_count) + " but tile_col_count = ";
  const std::string segments_end =
      "seg_ptr[tiles * tile_rows] = " + std::to_string(nnz_) + " but nnz = ";
  sfac_sparse* out = kSparseSentinel;
  for (const int64_t wrong : {tile_col_count - 1, tile_col_count + 1}) {
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, tiles_end + std::to_string(wrong),
                      make(seg_col, wrong, nnz_, &out));
  }
  for (const int64_t wrong : {nnz_ - 1, nnz_ + 1, int64_t{0}}) {
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, segments_end + std::to_string(wrong),
                      make(seg_col, tile_col_count, wrong, &out));
  }
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "tile_col_count = -1 must be >= 0",
                    make(seg_col, -1, nnz_, &out));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "nnz = -1 must be >= 0",
                    make(seg_col, tile_col_count, -1, &out));
  EXPECT_EQ(out, kSparseSentinel);
  // The counts are checked before the arrays' contents.
  std::vector<int32_t> bad = seg_col;
  bad[0] = -3;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, segments_end + std::to_string(nnz_ + 1),
                    make(bad, tile_col_count, nnz_ + 1, &out));
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "seg_col[0] = -3",
                    make(bad, tile_col_count, nnz_, &out));
  EXPECT_EQ(out, kSparseSentinel);
  // The right counts give the matrix back.
  SFAC_ASSERT_OK(make(seg_col, len(tile_col), len(seg_col), &out));
  const Sparse built(out);
  EXPECT_TRUE(download_compressed(built.get(), true) == download_compressed(m, true));
}
