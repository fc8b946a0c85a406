// BALS tiled layout: the hand-checked example, round trips, validation, and training.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "sfac_test.h"

using namespace sfac_test;

namespace {

// The arrays of a BALS layout.
struct Bals {
  int64_t tile_rows = 0, tile_cols = 0, tiles = 0, tile_col_count = 0;
  std::vector<int64_t> tile_ptr;
  std::vector<int32_t> tile_col;
  std::vector<int64_t> seg_ptr;
  std::vector<int32_t> seg_col;
  std::vector<float> values;
  std::vector<int32_t> row_order, col_order;
};

struct Csr {
  std::vector<int64_t> offsets;
  std::vector<int32_t> indices;
  std::vector<float> values;
};

Csr download_csr(const sfac_sparse* m) {
  int64_t rows = 0, cols = 0, nnz = 0;
  EXPECT_EQ(sfac_sparse_get_shape(m, &rows, &cols, &nnz), SFAC_OK);
  Csr c;
  c.offsets.resize(static_cast<size_t>(rows) + 1);
  c.indices.resize(static_cast<size_t>(nnz));
  c.values.resize(static_cast<size_t>(nnz));
  EXPECT_EQ(sfac_sparse_download_csr(m, c.offsets.data(), static_cast<int64_t>(c.offsets.size()),
                                     c.indices.data(), c.values.data(),
                                     static_cast<int64_t>(c.indices.size())),
            SFAC_OK)
      << sfac_last_error();
  return c;
}

// sizes + download_bals; a failure fails the test.
Bals download_bals(const sfac_sparse* m, int64_t tile_rows, int64_t tile_cols, uint32_t flags) {
  int64_t rows = 0, cols = 0, nnz = 0;
  EXPECT_EQ(sfac_sparse_get_shape(m, &rows, &cols, &nnz), SFAC_OK);
  Bals b;
  EXPECT_EQ(sfac_sparse_bals_sizes(m, tile_rows, tile_cols, flags, &b.tile_rows, &b.tile_cols,
                                   &b.tiles, &b.tile_col_count),
            SFAC_OK)
      << sfac_last_error();
  b.tile_ptr.assign(static_cast<size_t>(b.tiles) + 1, -7);
  b.tile_col.assign(static_cast<size_t>(b.tile_col_count), -7);
  b.seg_ptr.assign(static_cast<size_t>(b.tiles * b.tile_rows) + 1, -7);
  b.seg_col.assign(static_cast<size_t>(nnz), -7);
  b.values.assign(static_cast<size_t>(nnz), -7.0f);
  b.row_order.assign(static_cast<size_t>(rows), -7);
  b.col_order.assign(static_cast<size_t>(cols), -7);
  EXPECT_EQ(sfac_sparse_download_bals(m, tile_rows, tile_cols, flags, b.tile_ptr.data(),
                                      static_cast<int64_t>(b.tile_ptr.size()), b.tile_col.data(),
                                      static_cast<int64_t>(b.tile_col.size()), b.seg_ptr.data(),
                                      static_cast<int64_t>(b.seg_ptr.size()), b.seg_col.data(),
                                      b.values.data(), static_cast<int64_t>(b.seg_col.size()),
                                      b.row_order.data(), static_cast<int64_t>(b.row_order.size()),
                                      b.col_order.data(), static_cast<int64_t>(b.col_order.size())),
            SFAC_OK)
      << sfac_last_error();
  return b;
}

sfac_status create_bals(sfac_context* ctx, int64_t rows, int64_t cols, const Bals& b,
                        sfac_sparse** out, bool with_orders = true) {
  return sfac_sparse_create_bals(
      ctx, rows, cols, b.tile_rows, b.tile_cols, b.tile_ptr.data(), b.tile_col.data(),
      static_cast<int64_t>(b.tile_col.size()), b.seg_ptr.data(), b.seg_col.data(), b.values.data(),
      static_cast<int64_t>(b.seg_col.size()), with_orders ? b.row_order.data() : nullptr,
      with_orders ? b.col_order.data() : nullptr, out);
}

// The 5 x 6 example of docs/bals-format.md:
//   row 0: (0,0)=1 (0,2)=2 (0,4)=3     row 1: (1,0)=4 (1,1)=5 (1,3)=6     row 2: (2,5)=7
//   row 3: empty                       row 4: (4,1)=8 (4,2)=9 (4,3)=10
Triplets example() {
  Triplets t;
  t.rows = 5;
  t.cols = 6;
  t.r = {0, 0, 0, 1, 1, 1, 2, 4, 4, 4};
  t.c = {0, 2, 4, 0, 1, 3, 5, 1, 2, 3};
  t.v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  return t;
}

// The example's layout with 2 x 3 tiles, no reordering (worked out by hand).
Bals example_layout() {
  Bals b;
  b.tile_rows = 2;
  b.tile_cols = 3;
  b.tiles = 6;
  b.tile_col_count = 9;
  b.tile_ptr = {0, 3, 5, 5, 6, 8, 9};
  b.tile_col = {0, 2, 1, /**/ 4, 3, /**/ /**/ 5, /**/ 1, 2, /**/ 3};
  b.seg_ptr = {0, 2, 4, 5, 6, 6, 6, 7, 7, 9, 9, 10, 10};
  b.seg_col = {0, 1, 0, 2, /**/ 0, 1, /**/ 0, /**/ 0, 1, /**/ 0};
  b.values = {1, 2, 4, 5, 3, 6, 7, 8, 9, 10};
  b.row_order = {0, 1, 2, 3, 4};
  b.col_order = {0, 1, 2, 3, 4, 5};
  return b;
}

void expect_same_layout(const Bals& got, const Bals& want) {
  EXPECT_EQ(got.tile_rows, want.tile_rows);
  EXPECT_EQ(got.tile_cols, want.tile_cols);
  EXPECT_EQ(got.tiles, want.tiles);
  EXPECT_EQ(got.tile_col_count, want.tile_col_count);
  EXPECT_EQ(got.tile_ptr, want.tile_ptr);
  EXPECT_EQ(got.tile_col, want.tile_col);
  EXPECT_EQ(got.seg_ptr, want.seg_ptr);
  EXPECT_EQ(got.seg_col, want.seg_col);
  EXPECT_EQ(got.values, want.values);
  EXPECT_EQ(got.row_order, want.row_order);
  EXPECT_EQ(got.col_order, want.col_order);
}

void expect_same_csr(const Csr& got, const Csr& want) {
  EXPECT_EQ(got.offsets, want.offsets);
  EXPECT_EQ(got.indices, want.indices);
  EXPECT_EQ(got.values, want.values);
}

// A random matrix with distinct entries; rows and columns past 3/4 of each side stay empty
// except for a few, so there are empty rows, columns and tiles.
Triplets random_matrix(std::mt19937_64& rng, int64_t rows, int64_t cols, int64_t nnz) {
  Triplets t;
  t.rows = rows;
  t.cols = cols;
  std::set<std::pair<int32_t, int32_t>> seen;
  std::uniform_int_distribution<int32_t> row(0, static_cast<int32_t>(rows * 3 / 4));
  std::uniform_int_distribution<int32_t> col(0, static_cast<int32_t>(cols * 3 / 4));
  std::uniform_real_distribution<float> value(-2.0f, 5.0f);
  for (int64_t e = 0; e < nnz; ++e) {
    // Skew rows towards low ids for uneven degrees.
    const int32_t r = std::min(row(rng), row(rng));
    const int32_t c = col(rng);
    if (!seen.insert({r, c}).second) continue;
    t.r.push_back(r);
    t.c.push_back(c);
    t.v.push_back(value(rng));
  }
  return t;
}

}  // namespace

TEST(Bals, HandCheckedExample) {
  Context ctx = make_cpu_context();
  Sparse m = create_sparse(ctx.get(), example());
  expect_same_layout(download_bals(m.get(), 2, 3, SFAC_BALS_DEFAULT), example_layout());
  // Redundancy: nnz - tile_ptr[tiles] = 1 (column 0 in rows 0 and 1 of tile 0).
}

TEST(Bals, HandCheckedExampleReordered) {
  Context ctx = make_cpu_context();
  Sparse m = create_sparse(ctx.get(), example());
  // Row degrees 3, 3, 1, 0, 3 -> rows 0, 1, 4, 2, 3; column degrees 2, 2, 2, 2, 1, 1 -> identity.
  Bals want;
  want.tile_rows = 2;
  want.tile_cols = 3;
  want.tiles = 6;
  want.tile_col_count = 9;
  want.tile_ptr = {0, 3, 5, 7, 9, 9, 9};
  want.tile_col = {0, 2, 1, /**/ 4, 3, /**/ 1, 2, /**/ 3, 5};
  want.seg_ptr = {0, 2, 4, 5, 6, 8, 8, 9, 10, 10, 10, 10, 10};
  want.seg_col = {0, 1, 0, 2, /**/ 0, 1, /**/ 0, 1, /**/ 0, 1};
  want.values = {1, 2, 4, 5, 3, 6, 8, 9, 10, 7};
  want.row_order = {0, 1, 4, 2, 3};
  want.col_order = {0, 1, 2, 3, 4, 5};
  expect_same_layout(download_bals(m.get(), 2, 3, SFAC_BALS_REORDER), want);
}

TEST(Bals, DefaultTileSizesAndNullOutputs) {
  Context ctx = make_cpu_context();
  Sparse m = create_sparse(ctx.get(), example());
  int64_t tr = 0, tc = 0, tiles = 0, count = 0;
  SFAC_ASSERT_OK(sfac_sparse_bals_sizes(m.get(), 0, 0, SFAC_BALS_DEFAULT, &tr, &tc, &tiles,
                                        &count));
  EXPECT_EQ(tr, 5);
  EXPECT_EQ(tc, 6);
  EXPECT_EQ(tiles, 1);
  EXPECT_EQ(count, 6);
  SFAC_ASSERT_OK(sfac_sparse_bals_sizes(m.get(), 0, 0, SFAC_BALS_DEFAULT, nullptr, nullptr,
                                        nullptr, nullptr));
  SFAC_ASSERT_OK(sfac_sparse_download_bals(m.get(), 2, 3, SFAC_BALS_REORDER, nullptr, 0, nullptr, 0,
                                           nullptr, 0, nullptr, nullptr, 0, nullptr, 0, nullptr,
                                           0));
  std::vector<int64_t> tile_ptr(7);
  SFAC_ASSERT_OK(sfac_sparse_download_bals(
      m.get(), 2, 3, SFAC_BALS_DEFAULT, tile_ptr.data(), static_cast<int64_t>(tile_ptr.size()),
      nullptr, 0, nullptr, 0, nullptr, nullptr, 0, nullptr, 0, nullptr, 0));
  EXPECT_EQ(tile_ptr, example_layout().tile_ptr);

  // An empty matrix: no tiles, one seg_ptr entry.
  Triplets empty;
  Sparse e = create_sparse(ctx.get(), empty);
  const Bals b = download_bals(e.get(), 0, 0, SFAC_BALS_REORDER);
  EXPECT_EQ(b.tile_rows, 1);
  EXPECT_EQ(b.tile_cols, 1);
  EXPECT_EQ(b.tiles, 0);
  EXPECT_EQ(b.tile_ptr, std::vector<int64_t>{0});
  EXPECT_EQ(b.seg_ptr, std::vector<int64_t>{0});
  sfac_sparse* raw = nullptr;
  SFAC_ASSERT_OK(create_bals(ctx.get(), 0, 0, b, &raw));
  Sparse back(raw);
  int64_t rows = -1, cols = -1, nnz = -1;
  SFAC_ASSERT_OK(sfac_sparse_get_shape(back.get(), &rows, &cols, &nnz));
  EXPECT_EQ(rows + cols + nnz, 0);
}

TEST(Bals, RoundTripRandom) {
  Context ctx = make_cpu_context();
  std::mt19937_64 rng(test_seed());
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {7, 3}, {40, 30}, {97, 61}, {13, 200}};
  for (const auto& [rows, cols] : shapes) {
    const Triplets t = random_matrix(rng, rows, cols, rows * cols / 4 + 1);
    Sparse m = create_sparse(ctx.get(), t);
    const Csr source = download_csr(m.get());
    const std::pair<int64_t, int64_t> tiles[] = {
        {0, 0}, {1, 1}, {2, 3}, {3, 2}, {7, 5}, {rows + 3, cols + 5}, {1, cols + 1}, {rows, 1}};
    for (const auto& [tr, tc] : tiles) {
      for (uint32_t flags : {uint32_t{SFAC_BALS_DEFAULT}, uint32_t{SFAC_BALS_REORDER}}) {
        SCOPED_TRACE(::testing::Message() << rows << " x " << cols << ", tiles " << tr << " x "
                                          << tc << ", flags " << flags);
        const Bals b = download_bals(m.get(), tr, tc, flags);
        EXPECT_EQ(b.tile_rows, tr ? tr : std::min<int64_t>(1024, rows));
        EXPECT_EQ(b.tile_cols, tc ? tc : std::min<int64_t>(256, cols));
        const int64_t grid = ((rows + b.tile_rows - 1) / b.tile_rows) *
                             ((cols + b.tile_cols - 1) / b.tile_cols);
        EXPECT_EQ(b.tiles, grid);
        EXPECT_EQ(b.tile_ptr.front(), 0);
        EXPECT_EQ(b.tile_ptr.back(), b.tile_col_count);
        EXPECT_EQ(b.seg_ptr.front(), 0);
        EXPECT_EQ(b.seg_ptr.back(), static_cast<int64_t>(source.indices.size()));
        EXPECT_LE(b.tile_col_count, static_cast<int64_t>(source.indices.size()));
        std::vector<int32_t> rows_want(static_cast<size_t>(rows)), cols_want(static_cast<size_t>(cols));
        if (flags & SFAC_BALS_REORDER) {
          SFAC_ASSERT_OK(sfac_sparse_degree_order(m.get(), SFAC_AXIS_ROWS, rows_want.data(),
                                                  static_cast<int64_t>(rows_want.size())));
          SFAC_ASSERT_OK(sfac_sparse_degree_order(m.get(), SFAC_AXIS_COLS, cols_want.data(),
                                                  static_cast<int64_t>(cols_want.size())));
        } else {
          for (int64_t i = 0; i < rows; ++i) rows_want[i] = static_cast<int32_t>(i);
          for (int64_t i = 0; i < cols; ++i) cols_want[i] = static_cast<int32_t>(i);
        }
        EXPECT_EQ(b.row_order, rows_want);
        EXPECT_EQ(b.col_order, cols_want);

        sfac_sparse* raw = nullptr;
        SFAC_ASSERT_OK(create_bals(ctx.get(), rows, cols, b, &raw));
        Sparse back(raw);
        expect_same_csr(download_csr(back.get()), source);
        if (!(flags & SFAC_BALS_REORDER)) {
          // Identity orders may be passed as NULL.
          SFAC_ASSERT_OK(create_bals(ctx.get(), rows, cols, b, &raw, false));
          Sparse back2(raw);
          expect_same_csr(download_csr(back2.get()), source);
        }
      }
    }
  }
}

TEST(Bals, NullValuesMeanOnes) {
  Context ctx = make_cpu_context();
  const Bals b = example_layout();
  sfac_sparse* raw = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_bals(
      ctx.get(), 5, 6, 2, 3, b.tile_ptr.data(), b.tile_col.data(),
      static_cast<int64_t>(b.tile_col.size()), b.seg_ptr.data(), b.seg_col.data(), nullptr,
      static_cast<int64_t>(b.seg_col.size()), nullptr, nullptr, &raw));
  Sparse m(raw);
  const Csr c = download_csr(m.get());
  EXPECT_EQ(c.values, std::vector<float>(10, 1.0f));
  EXPECT_EQ(c.indices, (std::vector<int32_t>{0, 2, 4, 0, 1, 3, 5, 1, 2, 3}));
}

TEST(Bals, SizesRejectBadArguments) {
  Context ctx = make_cpu_context();
  Sparse m = create_sparse(ctx.get(), example());
  int64_t tiles = 0;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "tile_rows = -1",
                    sfac_sparse_bals_sizes(m.get(), -1, 3, 0, nullptr, nullptr, &tiles, nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "tile_cols = -2",
                    sfac_sparse_bals_sizes(m.get(), 2, -2, 0, nullptr, nullptr, &tiles, nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "flags = 2",
                    sfac_sparse_bals_sizes(m.get(), 2, 3, 2, nullptr, nullptr, &tiles, nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "more than the limit",
                    sfac_sparse_bals_sizes(m.get(), int64_t{1} << 40, 3, 0, nullptr, nullptr,
                                           &tiles, nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "more than INT64_MAX",
                    sfac_sparse_bals_sizes(m.get(), std::numeric_limits<int64_t>::max(), 1, 0,
                                           nullptr, nullptr, &tiles, nullptr));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_INVALID_ARGUMENT, "more than the limit",
      sfac_sparse_download_bals(m.get(), int64_t{1} << 40, 3, 0, nullptr, 0, nullptr, 0, nullptr, 0,
                                nullptr, nullptr, 0, nullptr, 0, nullptr, 0));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "matrix",
                    sfac_sparse_bals_sizes(nullptr, 2, 3, 0, nullptr, nullptr, &tiles, nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "matrix",
                    sfac_sparse_download_bals(nullptr, 2, 3, 0, nullptr, 0, nullptr, 0, nullptr, 0,
                                              nullptr, nullptr, 0, nullptr, 0, nullptr, 0));
}

namespace {

// create_bals on a (mutated) example layout: expects `status` with `needle` and *out untouched.
void expect_rejected(const Bals& b, sfac_status status, const char* needle,
                     const int32_t* row_order = nullptr, const int32_t* col_order = nullptr,
                     int64_t tile_rows = 2, int64_t tile_cols = 3) {
  Context ctx = make_cpu_context();
  static int sentinel_target = 0;
  sfac_sparse* const kSentinel = reinterpret_cast<sfac_sparse*>(&sentinel_target);
  sfac_sparse* out = kSentinel;
  SFAC_EXPECT_ERROR(
      status, needle,
      sfac_sparse_create_bals(ctx.get(), 5, 6, tile_rows, tile_cols, b.tile_ptr.data(),
                              b.tile_col.data(), static_cast<int64_t>(b.tile_col.size()),
                              b.seg_ptr.data(), b.seg_col.data(), b.values.data(),
                              static_cast<int64_t>(b.seg_col.size()), row_order, col_order, &out));
  EXPECT_EQ(out, kSentinel);
}

}  // namespace

TEST(Bals, CreateRejectsBadTilePtr) {
  Bals b = example_layout();
  b.tile_ptr[0] = 1;
  expect_rejected(b, SFAC_ERR_INVALID_ARGUMENT, "tile_ptr[0] = 1 must be 0");
  b = example_layout();
  b.tile_ptr[6] = 11;  // past nnz = 10, and past the 9 entries of tile_col: the count check first
  expect_rejected(b, SFAC_ERR_INVALID_ARGUMENT, "tile_ptr[tiles] = 11 but tile_col_count = 9");
  b.tile_col.resize(11, 5);  // tile_col as long as tile_ptr says: the structural check
  expect_rejected(b, SFAC_ERR_INVALID_ARGUMENT, "tile_ptr[6] = 11 exceeds nnz");
  b = example_layout();
  b.tile_ptr[2] = 2;  // 0, 3, 2, ...
  expect_rejected(b, SFAC_ERR_INVALID_ARGUMENT, "tile_ptr[2] = 2 < tile_ptr[1] = 3 (tile 1)");
  b = example_layout();
  b.tile_ptr = {0, 3, 5, 5, 6, 8, 10};  // tile 5 lists 2 columns for its 1 nonzero
  b.tile_col.push_back(4);
  expect_rejected(b, SFAC_ERR_INVALID_ARGUMENT, "tile 5 lists 2 columns");
}

TEST(Bals, CreateRejectsBadSegPtr) {
  Bals b = example_layout();
  b.seg_ptr[0] = 2;
  expect_rejected(b, SFAC_ERR_INVALID_ARGUMENT, "seg_ptr[0] = 2 must be 0");
  b = example_layout();
  b.seg_ptr[3] = 3;  // 0, 2, 4, 3, 6, ...
  expect_rejected(b, SFAC_ERR_INVALID_ARGUMENT, "seg_ptr[3] = 3 < seg_ptr[2] = 4 (segment 3");
  b = example_layout();
  b.seg_ptr[12] = -1;  // the last entry: the count check against nnz = 10 comes first
  expect_rejected(b, SFAC_ERR_INVALID_ARGUMENT, "seg_ptr[tiles * tile_rows] = -1 but nnz = 10");
  b = example_layout();
  b.seg_ptr[10] = 10;  // segment 9 (row 5: past the end) gets the entry of segment 10
  expect_rejected(b, SFAC_ERR_INVALID_ARGUMENT, "segment 9 (tile 4, row 1) lies past");
}

TEST(Bals, CreateRejectsBadTileColumns) {
  Bals b = example_layout();
  b.tile_col[0] = 3;  // tile 0 covers columns [0, 3)
  expect_rejected(b, SFAC_ERR_OUT_OF_RANGE, "tile_col[0] = 3 (tile 0, position 0) is outside");
  b = example_layout();
  b.tile_col[4] = 99;
  expect_rejected(b, SFAC_ERR_OUT_OF_RANGE, "tile_col[4] = 99 (tile 1, position 1)");
  b = example_layout();
  b.tile_col[6] = -1;
  expect_rejected(b, SFAC_ERR_OUT_OF_RANGE, "tile_col[6] = -1 (tile 4, position 0)");
  b = example_layout();
  b.tile_col[2] = 0;  // tile 0: 0, 2, 0
  expect_rejected(b, SFAC_ERR_INVALID_ARGUMENT,
                  "tile_col[2] = 0 (tile 0, position 2) repeats tile_col[0]");
}

TEST(Bals, CreateRejectsBadLocalColumnsAndDuplicates) {
  Bals b = example_layout();
  b.seg_col[4] = 2;  // tile 1 has 2 columns
  expect_rejected(b, SFAC_ERR_OUT_OF_RANGE, "seg_col[4] = 2 (tile 1, segment 2, row 0)");
  b = example_layout();
  b.seg_col[9] = -3;
  expect_rejected(b, SFAC_ERR_OUT_OF_RANGE, "seg_col[9] = -3 (tile 5");
  b = example_layout();
  b.seg_col[1] = 0;  // row 0: column 0 twice
  expect_rejected(b, SFAC_ERR_DUPLICATE_ENTRY,
                  "duplicate entry (row 0, col 0): seg_col[0] and seg_col[1]");
}

TEST(Bals, CreateRejectsBadOrdersAndValues) {
  const Bals b = example_layout();
  const int32_t bad_rows[] = {0, 1, 1, 3, 4};
  expect_rejected(b, SFAC_ERR_INVALID_ARGUMENT, "row_order[2] = 1 repeats", bad_rows);
  const int32_t bad_cols[] = {0, 1, 2, 3, 4, 6};
  expect_rejected(b, SFAC_ERR_INVALID_ARGUMENT, "col_order[5] = 6 is outside", nullptr, bad_cols);
  Bals nan = example_layout();
  nan.values[3] = std::numeric_limits<float>::quiet_NaN();
  expect_rejected(nan, SFAC_ERR_INVALID_VALUE, "values[3] = nan (tile 0, segment 1, row 1)");
  Bals inf = example_layout();
  inf.values[9] = std::numeric_limits<float>::infinity();
  expect_rejected(inf, SFAC_ERR_INVALID_VALUE, "values[9] = inf");
}

TEST(Bals, CreateRejectsNullsAndBadSizes) {
  const Bals b = example_layout();
  expect_rejected(b, SFAC_ERR_INVALID_ARGUMENT, "tile_rows = 0 must be >= 1", nullptr, nullptr, 0,
                  3);
  expect_rejected(b, SFAC_ERR_INVALID_ARGUMENT, "tile_rows = -2 must be >= 1", nullptr, nullptr,
                  -2, 3);
  expect_rejected(b, SFAC_ERR_INVALID_ARGUMENT, "tile_cols = 0 must be >= 1", nullptr, nullptr, 2,
                  0);

  Context ctx = make_cpu_context();
  static int sentinel_target = 0;
  sfac_sparse* const kSentinel = reinterpret_cast<sfac_sparse*>(&sentinel_target);
  sfac_sparse* out = kSentinel;
  const auto* tp = b.tile_ptr.data();
  const auto* tc = b.tile_col.data();
  const auto* sp = b.seg_ptr.data();
  const auto* sc = b.seg_col.data();
  const auto* v = b.values.data();
  const auto tn = static_cast<int64_t>(b.tile_col.size());
  const auto n = static_cast<int64_t>(b.seg_col.size());
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "tile_ptr is NULL",
                    sfac_sparse_create_bals(ctx.get(), 5, 6, 2, 3, nullptr, tc, tn, sp, sc, v, n,
                                            nullptr, nullptr, &out));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "tile_col is NULL",
                    sfac_sparse_create_bals(ctx.get(), 5, 6, 2, 3, tp, nullptr, tn, sp, sc, v, n,
                                            nullptr, nullptr, &out));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "seg_ptr is NULL",
                    sfac_sparse_create_bals(ctx.get(), 5, 6, 2, 3, tp, tc, tn, nullptr, sc, v, n,
                                            nullptr, nullptr, &out));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "seg_col is NULL",
                    sfac_sparse_create_bals(ctx.get(), 5, 6, 2, 3, tp, tc, tn, sp, nullptr, v, n,
                                            nullptr, nullptr, &out));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out is NULL",
                    sfac_sparse_create_bals(ctx.get(), 5, 6, 2, 3, tp, tc, tn, sp, sc, v, n,
                                            nullptr, nullptr, nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "ctx",
                    sfac_sparse_create_bals(nullptr, 5, 6, 2, 3, tp, tc, tn, sp, sc, v, n, nullptr,
                                            nullptr, &out));
  // A negative shape has no tile grid to check the counts against: counts 0 keep the call off
  // the count check, so that it is the shape that is rejected.
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "rows = -1",
                    sfac_sparse_create_bals(ctx.get(), -1, 6, 2, 3, tp, tc, 0, sp, sc, v, 0,
                                            nullptr, nullptr, &out));
  EXPECT_EQ(out, kSentinel);
}

namespace {

// Training from BALS inputs (in order and reordered) gives the same model as from plain CSR.
void expect_bals_trains_as_csr(sfac_backend backend, sfac_algorithm algorithm, const Triplets& t,
                               uint64_t seed) {
  auto train = [&](bool via_bals, uint32_t flags) {
    Context ctx = make_context(backend, 2, seed);
    Sparse m = create_sparse(ctx.get(), t);
    Sparse input;
    if (via_bals) {
      const Bals b = download_bals(m.get(), 7, 5, flags);
      sfac_sparse* raw = nullptr;
      EXPECT_EQ(create_bals(ctx.get(), t.rows, t.cols, b, &raw), SFAC_OK) << sfac_last_error();
      input.reset(raw);
    } else {
      input = std::move(m);
    }
    sfac_train_options* raw_opts = nullptr;
    EXPECT_EQ(sfac_train_options_create(algorithm, &raw_opts), SFAC_OK);
    Options opts(raw_opts);
    EXPECT_EQ(sfac_train_options_set_int(opts.get(), SFAC_OPT_RANK, 4), SFAC_OK);
    EXPECT_EQ(sfac_train_options_set_int(opts.get(), SFAC_OPT_ITERATIONS, 3), SFAC_OK);
    EXPECT_EQ(sfac_train_options_set_int(opts.get(), SFAC_OPT_DETERMINISTIC, 1), SFAC_OK);
    sfac_model* raw_model = nullptr;
    EXPECT_EQ(sfac_train(ctx.get(), input.get(), opts.get(), &raw_model), SFAC_OK)
        << sfac_last_error();
    Model model(raw_model);
    std::vector<float> users(static_cast<size_t>(t.rows) * 4, -1.0f);
    std::vector<float> items(static_cast<size_t>(t.cols) * 4, -1.0f);
    if (model) {
      EXPECT_EQ(sfac_model_get_user_factors(model.get(), users.data(),
                                            static_cast<int64_t>(users.size())),
                SFAC_OK);
      EXPECT_EQ(sfac_model_get_item_factors(model.get(), items.data(),
                                            static_cast<int64_t>(items.size())),
                SFAC_OK);
    }
    return std::make_pair(users, items);
  };

  const auto csr = train(false, 0);
  const auto bals = train(true, SFAC_BALS_DEFAULT);
  const auto reordered = train(true, SFAC_BALS_REORDER);
  for (float x : csr.first) ASSERT_TRUE(std::isfinite(x));
  EXPECT_EQ(std::memcmp(csr.first.data(), bals.first.data(), csr.first.size() * sizeof(float)), 0);
  EXPECT_EQ(
      std::memcmp(csr.first.data(), reordered.first.data(), csr.first.size() * sizeof(float)), 0);
  EXPECT_EQ(bals.second, csr.second);
  EXPECT_EQ(reordered.second, csr.second);
}

}  // namespace

class BalsTraining : public ::testing::TestWithParam<sfac_backend> {
 protected:
  void SetUp() override {
    const std::string missing = backend_missing(GetParam());
    if (!missing.empty()) GTEST_SKIP() << missing;
  }
};

TEST_P(BalsTraining, ExplicitAlsMatchesCsr) {
  std::mt19937_64 rng(test_seed());
  expect_bals_trains_as_csr(GetParam(), SFAC_ALGO_ALS, random_matrix(rng, 60, 40, 700),
                            test_seed() + 1);
}

TEST_P(BalsTraining, ImplicitAlsMatchesCsr) {
  std::mt19937_64 rng(test_seed());
  Triplets t = random_matrix(rng, 60, 40, 700);
  for (float& v : t.v) v = std::fabs(v);  // implicit feedback takes no negative ratings
  expect_bals_trains_as_csr(GetParam(), SFAC_ALGO_IALS, t, test_seed() + 1);
}

INSTANTIATE_TEST_SUITE_P(Backends, BalsTraining,
                         ::testing::Values(SFAC_BACKEND_CPU, SFAC_BACKEND_CUDA), backend_name);
