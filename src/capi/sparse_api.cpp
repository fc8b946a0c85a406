#include <vector>

#include "capi/guard.h"
#include "capi/handles.h"
#include "core/host_csr.h"
#include "core/reorder.h"

using sfac::capi::adopt_sparse;
using sfac::capi::checked;
using sfac::capi::require_capacity;
using sfac::capi::require_finite;
using sfac::capi::require_pointer;

namespace {

sfac::DuplicatePolicy duplicate_policy(uint32_t flags) {
  SFAC_REQUIRE((flags & ~static_cast<uint32_t>(SFAC_SPARSE_SUM_DUPLICATES)) == 0,
               SFAC_ERR_INVALID_ARGUMENT, "flags = ", flags,
               " has bits other than SFAC_SPARSE_SUM_DUPLICATES");
  return (flags & SFAC_SPARSE_SUM_DUPLICATES) ? sfac::DuplicatePolicy::Sum
                                              : sfac::DuplicatePolicy::Error;
}

}  // namespace

extern "C" {

sfac_status sfac_sparse_create_coo(sfac_context* ctx, int64_t rows, int64_t cols, int64_t nnz,
                                   const int32_t* row_indices, const int32_t* col_indices,
                                   const float* values, uint32_t flags, sfac_sparse** out) {
  SFAC_API_BEGIN
  auto& backend = *checked(ctx, "ctx").impl.backend;
  require_pointer(out, "out");
  const auto policy = duplicate_policy(flags);
  sfac::check_coo(rows, cols, nnz, row_indices, col_indices, values, backend.num_threads());
  *out = sfac::capi::adopt_sparse_from_coo(backend, rows, cols, nnz, row_indices, col_indices,
                                           values, policy)
             .release();
  SFAC_API_END
}

sfac_status sfac_sparse_create_csr(sfac_context* ctx, int64_t rows, int64_t cols,
                                   const int64_t* row_offsets, const int32_t* col_indices,
                                   const float* values, int64_t nnz, uint32_t flags,
                                   sfac_sparse** out) {
  SFAC_API_BEGIN
  auto& backend = *checked(ctx, "ctx").impl.backend;
  require_pointer(out, "out");
  const auto policy = duplicate_policy(flags);
  sfac::capi::require_offsets_total(rows, cols, row_offsets, rows, nnz, "row_offsets", "rows");
  *out = adopt_sparse(backend, sfac::csr_from_csr(rows, cols, row_offsets, col_indices, values,
                                                  policy, backend.num_threads()))
             .release();
  SFAC_API_END
}

sfac_status sfac_sparse_create_csc(sfac_context* ctx, int64_t rows, int64_t cols,
                                   const int64_t* col_offsets, const int32_t* row_indices,
                                   const float* values, int64_t nnz, uint32_t flags,
                                   sfac_sparse** out) {
  SFAC_API_BEGIN
  auto& backend = *checked(ctx, "ctx").impl.backend;
  require_pointer(out, "out");
  const auto policy = duplicate_policy(flags);
  sfac::capi::require_offsets_total(rows, cols, col_offsets, cols, nnz, "col_offsets", "cols");
  const std::vector<int32_t> col_of = sfac::checked_csc_columns(
      rows, cols, col_offsets, row_indices, values, backend.num_threads());
  *out = sfac::capi::adopt_sparse_from_coo(backend, rows, cols, col_offsets[cols], row_indices,
                                           col_of.data(), values, policy)
             .release();
  SFAC_API_END
}

sfac_status sfac_sparse_create_like(const sfac_sparse* pattern, const float* values,
                                    sfac_sparse** out) {
  SFAC_API_BEGIN
  const auto& source = *checked(pattern, "pattern").impl;
  require_pointer(out, "out");
  if (values) require_finite(values, source.nnz(), "values");
  auto handle = std::make_unique<sfac_sparse>();
  handle->impl = source.create_like(values);
  *out = handle.release();
  SFAC_API_END
}

sfac_status sfac_sparse_destroy(sfac_sparse* matrix) {
  SFAC_API_BEGIN
  sfac::capi::destroy(matrix, "matrix");
  SFAC_API_END
}

sfac_status sfac_sparse_get_shape(const sfac_sparse* matrix, int64_t* rows, int64_t* cols,
                                  int64_t* nnz) {
  SFAC_API_BEGIN
  const auto& m = *checked(matrix, "matrix").impl;
  if (rows) *rows = m.rows();
  if (cols) *cols = m.cols();
  if (nnz) *nnz = m.nnz();
  SFAC_API_END
}

sfac_status sfac_sparse_download_coo(const sfac_sparse* matrix, int32_t* row_indices,
                                     int32_t* col_indices, float* values, int64_t capacity) {
  SFAC_API_BEGIN
  const auto& m = *checked(matrix, "matrix").impl;
  require_capacity(row_indices, capacity, m.nnz(), "row_indices");
  require_capacity(col_indices, capacity, m.nnz(), "col_indices");
  require_capacity(values, capacity, m.nnz(), "values");
  m.download_coo(row_indices, col_indices, values);
  SFAC_API_END
}

sfac_status sfac_sparse_download_csr(const sfac_sparse* matrix, int64_t* row_offsets,
                                     int64_t offsets_capacity, int32_t* col_indices, float* values,
                                     int64_t capacity) {
  SFAC_API_BEGIN
  const auto& m = *checked(matrix, "matrix").impl;
  require_capacity(row_offsets, offsets_capacity, m.rows() + 1, "row_offsets");
  require_capacity(col_indices, capacity, m.nnz(), "col_indices");
  require_capacity(values, capacity, m.nnz(), "values");
  m.download_csr(row_offsets, col_indices, values);
  SFAC_API_END
}

sfac_status sfac_sparse_download_csc(const sfac_sparse* matrix, int64_t* col_offsets,
                                     int64_t offsets_capacity, int32_t* row_indices, float* values,
                                     int64_t capacity) {
  SFAC_API_BEGIN
  const auto& m = *checked(matrix, "matrix").impl;
  require_capacity(col_offsets, offsets_capacity, m.cols() + 1, "col_offsets");
  require_capacity(row_indices, capacity, m.nnz(), "row_indices");
  require_capacity(values, capacity, m.nnz(), "values");
  m.download_csc(col_offsets, row_indices, values);
  SFAC_API_END
}

sfac_status sfac_sparse_set_values(sfac_sparse* matrix, const float* values) {
  SFAC_API_BEGIN
  auto& m = *checked(matrix, "matrix").impl;
  if (m.nnz() > 0) require_pointer(values, "values");
  require_finite(values, m.nnz(), "values");
  m.set_values(values);
  SFAC_API_END
}

sfac_status sfac_sparse_degree_order(const sfac_sparse* matrix, sfac_axis axis, int32_t* order,
                                     int64_t capacity) {
  SFAC_API_BEGIN
  const auto& m = *checked(matrix, "matrix").impl;
  SFAC_REQUIRE(axis == SFAC_AXIS_ROWS || axis == SFAC_AXIS_COLS, SFAC_ERR_INVALID_ARGUMENT,
               "unknown axis ", static_cast<int>(axis));
  const int64_t n = axis == SFAC_AXIS_ROWS ? m.rows() : m.cols();
  if (n > 0) require_pointer(order, "order");
  require_capacity(order, capacity, n, "order");
  m.degree_order(axis, order);
  SFAC_API_END
}

sfac_status sfac_sparse_permute(const sfac_sparse* matrix, const int32_t* row_order,
                                const int32_t* col_order, sfac_sparse** out) {
  SFAC_API_BEGIN
  const auto& m = *checked(matrix, "matrix").impl;
  require_pointer(out, "out");
  if (row_order) sfac::check_permutation(row_order, m.rows(), "row_order");
  if (col_order) sfac::check_permutation(col_order, m.cols(), "col_order");
  *out = adopt_sparse(m.permuted(row_order, col_order)).release();
  SFAC_API_END
}

}  // extern "C"
