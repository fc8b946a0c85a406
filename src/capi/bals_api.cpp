// BALS tiled layout entry points: validation and dispatch; the conversions live in core/bals.
#include <algorithm>
#include <vector>

#include "capi/guard.h"
#include "capi/handles.h"
#include "core/bals.h"
#include "core/host_csr.h"

using sfac::capi::adopt_sparse;
using sfac::capi::checked;
using sfac::capi::require_capacity;
using sfac::capi::require_pointer;

namespace {

bool reorder_flag(uint32_t flags) {
  SFAC_REQUIRE((flags & ~static_cast<uint32_t>(SFAC_BALS_REORDER)) == 0, SFAC_ERR_INVALID_ARGUMENT,
               "flags = ", flags, " has bits other than SFAC_BALS_REORDER");
  return (flags & SFAC_BALS_REORDER) != 0;
}

// Degree order of one side (as sfac_sparse_degree_order), or the identity.
std::vector<int32_t> side_order(const sfac::SparseMatrix& m, sfac_axis axis, bool reorder) {
  const int64_t n = axis == SFAC_AXIS_ROWS ? m.rows() : m.cols();
  std::vector<int32_t> order(static_cast<size_t>(n));
  if (reorder && n > 0) {
    m.degree_order(axis, order.data());
  } else {
    for (int64_t i = 0; i < n; ++i) order[i] = static_cast<int32_t>(i);
  }
  return order;
}

template <typename T>
void copy_out(const std::vector<T>& from, T* to) {
  if (to) std::copy(from.begin(), from.end(), to);
}

}  // namespace

extern "C" {

sfac_status sfac_sparse_bals_sizes(const sfac_sparse* matrix, int64_t tile_rows, int64_t tile_cols,
                                   uint32_t flags, int64_t* tile_rows_out, int64_t* tile_cols_out,
                                   int64_t* tiles, int64_t* tile_col_count) {
  SFAC_API_BEGIN
  const auto& m = *checked(matrix, "matrix").impl;
  const bool reorder = reorder_flag(flags);
  const sfac::BalsShape shape =
      sfac::bals_shape(m.rows(), m.cols(), m.nnz(), tile_rows, tile_cols, true);
  int64_t count = 0;
  if (tile_col_count) {
    const sfac::HostCsr csr = sfac::download_host_csr(m, false);
    const std::vector<int32_t> rows = side_order(m, SFAC_AXIS_ROWS, reorder);
    count = sfac::bals_tile_col_count(csr, shape, reorder ? rows.data() : nullptr);
  }
  if (tile_rows_out) *tile_rows_out = shape.tile_rows;
  if (tile_cols_out) *tile_cols_out = shape.tile_cols;
  if (tiles) *tiles = shape.tiles;
  if (tile_col_count) *tile_col_count = count;
  SFAC_API_END
}

sfac_status sfac_sparse_download_bals(const sfac_sparse* matrix, int64_t tile_rows,
                                      int64_t tile_cols, uint32_t flags, int64_t* tile_ptr,
                                      int64_t tile_ptr_capacity, int32_t* tile_col,
                                      int64_t tile_col_capacity, int64_t* seg_ptr,
                                      int64_t seg_ptr_capacity, int32_t* seg_col, float* values,
                                      int64_t capacity, int32_t* row_order,
                                      int64_t row_order_capacity, int32_t* col_order,
                                      int64_t col_order_capacity) {
  SFAC_API_BEGIN
  const auto& m = *checked(matrix, "matrix").impl;
  const bool reorder = reorder_flag(flags);
  const sfac::BalsShape shape =
      sfac::bals_shape(m.rows(), m.cols(), m.nnz(), tile_rows, tile_cols, true);
  const std::vector<int32_t> rows = side_order(m, SFAC_AXIS_ROWS, reorder);
  const std::vector<int32_t> cols = side_order(m, SFAC_AXIS_COLS, reorder);
  sfac::BalsLayout layout;
  if (tile_ptr || tile_col || seg_ptr || seg_col || values) {
    const sfac::HostCsr csr = sfac::download_host_csr(m);
    layout = sfac::to_bals(csr, shape, reorder ? rows.data() : nullptr,
                           reorder ? cols.data() : nullptr, m.backend().num_threads());
  }
  auto size = [](const auto& v) { return static_cast<int64_t>(v.size()); };
  require_capacity(tile_ptr, tile_ptr_capacity, size(layout.tile_ptr), "tile_ptr");
  require_capacity(tile_col, tile_col_capacity, size(layout.tile_col), "tile_col");
  require_capacity(seg_ptr, seg_ptr_capacity, size(layout.seg_ptr), "seg_ptr");
  require_capacity(seg_col, capacity, size(layout.seg_col), "seg_col");
  require_capacity(values, capacity, size(layout.values), "values");
  require_capacity(row_order, row_order_capacity, size(rows), "row_order");
  require_capacity(col_order, col_order_capacity, size(cols), "col_order");
  copy_out(rows, row_order);
  copy_out(cols, col_order);
  copy_out(layout.tile_ptr, tile_ptr);
  copy_out(layout.tile_col, tile_col);
  copy_out(layout.seg_ptr, seg_ptr);
  copy_out(layout.seg_col, seg_col);
  copy_out(layout.values, values);
  SFAC_API_END
}

sfac_status sfac_sparse_create_bals(sfac_context* ctx, int64_t rows, int64_t cols,
                                    int64_t tile_rows, int64_t tile_cols, const int64_t* tile_ptr,
                                    const int32_t* tile_col, int64_t tile_col_count,
                                    const int64_t* seg_ptr, const int32_t* seg_col,
                                    const float* values, int64_t nnz, const int32_t* row_order,
                                    const int32_t* col_order, sfac_sparse** out) {
  SFAC_API_BEGIN
  auto& backend = *checked(ctx, "ctx").impl.backend;
  require_pointer(out, "out");
  SFAC_REQUIRE(tile_col_count >= 0, SFAC_ERR_INVALID_ARGUMENT, "tile_col_count = ", tile_col_count,
               " must be >= 0");
  SFAC_REQUIRE(nnz >= 0, SFAC_ERR_INVALID_ARGUMENT, "nnz = ", nnz, " must be >= 0");
  // The shape first: the counts are read at positions it gives.
  sfac::check_sparse_shape(rows, cols);
  const sfac::BalsShape shape = sfac::bals_shape(rows, cols, nnz, tile_rows, tile_cols, false);
  if (tile_ptr) {
    SFAC_REQUIRE(tile_ptr[shape.tiles] == tile_col_count, SFAC_ERR_INVALID_ARGUMENT,
                 "tile_ptr[tiles] = ", tile_ptr[shape.tiles],
                 " but tile_col_count = ", tile_col_count, " (the length of tile_col)");
  }
  if (seg_ptr) {
    SFAC_REQUIRE(seg_ptr[shape.segments] == nnz, SFAC_ERR_INVALID_ARGUMENT,
                 "seg_ptr[tiles * tile_rows] = ", seg_ptr[shape.segments], " but nnz = ", nnz,
                 " (the length of seg_col and values)");
  }
  *out = adopt_sparse(backend, sfac::csr_from_bals(rows, cols, tile_rows, tile_cols, tile_ptr,
                                                   tile_col, seg_ptr, seg_col, values, row_order,
                                                   col_order, backend.num_threads()))
             .release();
  SFAC_API_END
}

}  // extern "C"
