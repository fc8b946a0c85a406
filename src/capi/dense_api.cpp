#include <cmath>
#include <limits>
#include <string>

#include "capi/guard.h"
#include "capi/handles.h"
#include "core/reorder.h"

using sfac::capi::checked;
using sfac::capi::require_finite;
using sfac::capi::require_pointer;

namespace {

int64_t element_count(const sfac::DenseMatrix& m) { return m.rows() * m.cols(); }

}  // namespace

extern "C" {

sfac_status sfac_dense_create(sfac_context* ctx, int64_t rows, int64_t cols, sfac_dtype dtype,
                              const float* data, sfac_dense** out) {
  SFAC_API_BEGIN
  auto& backend = *checked(ctx, "ctx").impl.backend;
  require_pointer(out, "out");
  SFAC_REQUIRE(rows >= 0, SFAC_ERR_INVALID_ARGUMENT, "rows = ", rows, " must be >= 0");
  SFAC_REQUIRE(cols >= 1, SFAC_ERR_INVALID_ARGUMENT, "cols = ", cols, " must be >= 1");
  SFAC_REQUIRE(rows <= std::numeric_limits<int32_t>::max(), SFAC_ERR_OUT_OF_RANGE, "rows = ", rows,
               " exceeds the int32 index range");
  SFAC_REQUIRE(cols <= std::numeric_limits<int32_t>::max(), SFAC_ERR_OUT_OF_RANGE, "cols = ", cols,
               " exceeds the int32 index range");
  SFAC_REQUIRE(
      dtype == SFAC_DTYPE_FLOAT32 || dtype == SFAC_DTYPE_FLOAT16 || dtype == SFAC_DTYPE_BFLOAT16,
      SFAC_ERR_INVALID_ARGUMENT, "unknown dtype ", static_cast<int>(dtype));
  if (backend.kind() == SFAC_BACKEND_CPU) {
    sfac::require_host_memory(sfac::dense_build_bytes(rows, cols), backend.host_memory_limit(),
                              "a " + std::to_string(rows) + " x " + std::to_string(cols) +
                                  " dense matrix");
  }
  if (data) require_finite(data, rows * cols, "data");
  auto handle = std::make_unique<sfac_dense>();
  handle->impl = backend.make_dense(rows, cols, dtype, data);
  *out = handle.release();
  SFAC_API_END
}

sfac_status sfac_dense_destroy(sfac_dense* matrix) {
  SFAC_API_BEGIN
  sfac::capi::destroy(matrix, "matrix");
  SFAC_API_END
}

sfac_status sfac_dense_get_shape(const sfac_dense* matrix, int64_t* rows, int64_t* cols) {
  SFAC_API_BEGIN
  const auto& m = *checked(matrix, "matrix").impl;
  if (rows) *rows = m.rows();
  if (cols) *cols = m.cols();
  SFAC_API_END
}

sfac_status sfac_dense_get_dtype(const sfac_dense* matrix, sfac_dtype* out) {
  SFAC_API_BEGIN
  const auto& m = *checked(matrix, "matrix").impl;
  require_pointer(out, "out");
  *out = m.dtype();
  SFAC_API_END
}

sfac_status sfac_dense_upload(sfac_dense* matrix, const float* data) {
  SFAC_API_BEGIN
  auto& m = *checked(matrix, "matrix").impl;
  if (element_count(m) == 0) return SFAC_OK;
  require_pointer(data, "data");
  require_finite(data, element_count(m), "data");
  m.upload(data);
  SFAC_API_END
}

sfac_status sfac_dense_download(const sfac_dense* matrix, float* data, int64_t capacity) {
  SFAC_API_BEGIN
  const auto& m = *checked(matrix, "matrix").impl;
  sfac::capi::require_capacity(data, capacity, element_count(m), "data");
  if (element_count(m) == 0) return SFAC_OK;
  require_pointer(data, "data");
  m.download(data);
  SFAC_API_END
}

sfac_status sfac_dense_permute_rows(const sfac_dense* matrix, const int32_t* order,
                                    sfac_dense** out) {
  SFAC_API_BEGIN
  const auto& m = *checked(matrix, "matrix").impl;
  require_pointer(out, "out");
  sfac::check_permutation(order, m.rows(), "order");
  auto handle = std::make_unique<sfac_dense>();
  handle->impl = m.permuted_rows(order);
  *out = handle.release();
  SFAC_API_END
}

}  // extern "C"
