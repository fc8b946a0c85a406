#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/cuda_sparse.h"
#include "cuda/kernels/common/sparse_convert.cuh"
#include "cuda/kernels/common/sparse_reorder.cuh"
#include "cuda/kernels/sddmm/sddmm_kernels.cuh"

namespace sfac::cuda {

const int32_t* CudaPattern::rows_of_nonzeros(cudaStream_t stream) const {
  std::call_once(row_of_once_, [&] {
    DeviceBuffer<int32_t> r(static_cast<size_t>(nnz), stream);
    kernels::launch_expand_rows(offsets.data(), rows, r.data(), stream);
    row_of_ = std::move(r);
    rows_built_.store(true, std::memory_order_release);
  });
  return row_of_.data();
}

const CudaPattern::Csc& CudaPattern::csc(cudaStream_t stream) const {
  std::call_once(csc_once_, [&] {
    const int32_t* row_of = rows_of_nonzeros(stream);
    Csc c{DeviceBuffer<int64_t>(static_cast<size_t>(cols) + 1, stream),
          DeviceBuffer<int32_t>(static_cast<size_t>(nnz), stream),
          DeviceBuffer<int64_t>(static_cast<size_t>(nnz), stream)};
    kernels::build_csc(indices.data(), row_of, cols, nnz, c.offsets.data(), c.indices.data(),
                       c.csr_position.data(), stream);
    csc_ = std::move(c);
  });
  return csc_;
}

CudaSparseMatrix::~CudaSparseMatrix() { cuda_backend().own_waits_for_current_noexcept(); }

bool CudaSparseMatrix::same_pattern(const SparseMatrix& other) const {
  if (other.pattern_id() == pattern_id()) return true;
  if (other.rows() != rows() || other.cols() != cols() || other.nnz() != nnz()) return false;
  if (const auto* o = dynamic_cast<const CudaSparseMatrix*>(&other);
      o && o->backend().device() == backend().device()) {
    // Compared where the patterns live: no transfer to the host in an sddmm call.
    DeviceGuard guard(backend().device());
    const CudaPattern &x = *pattern_, &y = o->pattern();
    return kernels::equal_arrays(x.offsets.data(), y.offsets.data(), rows() + 1, stream()) &&
           kernels::equal_arrays(x.indices.data(), y.indices.data(), nnz(), stream());
  }
  std::vector<int64_t> a_off(rows() + 1), b_off(rows() + 1);
  std::vector<int32_t> a_idx(nnz()), b_idx(nnz());
  download_csr(a_off.data(), a_idx.data(), nullptr);
  other.download_csr(b_off.data(), b_idx.data(), nullptr);
  return a_off == b_off && a_idx == b_idx;
}

void CudaSparseMatrix::download_csr(int64_t* offsets, int32_t* col_indices, float* values) const {
  DeviceGuard guard(backend().device());
  OwnStreamWork order(cuda_backend());
  if (offsets) pattern_->offsets.download(offsets, rows() + 1);
  if (col_indices) pattern_->indices.download(col_indices, nnz());
  if (values) values_.download(values, nnz());
}

void CudaSparseMatrix::download_coo(int32_t* row_indices, int32_t* col_indices,
                                    float* values) const {
  DeviceGuard guard(backend().device());
  OwnStreamWork order(cuda_backend());
  if (row_indices) {
    const int32_t* row_of = pattern_->rows_of_nonzeros(stream());
    SFAC_CUDA_TRY(cudaMemcpyAsync(row_indices, row_of, nnz() * sizeof(int32_t),
                                  cudaMemcpyDeviceToHost, stream()));
    SFAC_CUDA_TRY(cudaStreamSynchronize(stream()));
  }
  download_csr(nullptr, col_indices, values);
}

void CudaSparseMatrix::download_csc(int64_t* offsets, int32_t* row_indices, float* values) const {
  DeviceGuard guard(backend().device());
  OwnStreamWork order(cuda_backend());
  const CudaPattern::Csc& csc = pattern_->csc(stream());
  if (offsets) csc.offsets.download(offsets, cols() + 1);
  if (row_indices) csc.indices.download(row_indices, nnz());
  if (values) {
    DeviceBuffer<float> permuted(static_cast<size_t>(nnz()), stream());
    kernels::gather(values_.data(), csc.csr_position.data(), nnz(), permuted.data(), stream());
    permuted.download(values, nnz());
  }
}

void CudaSparseMatrix::set_values(const float* values) {
  DeviceGuard guard(backend().device());
  OwnStreamWork order(cuda_backend());
  values_.upload(values, nnz());
}

std::unique_ptr<SparseMatrix> CudaSparseMatrix::create_like(const float* values) const {
  DeviceGuard guard(backend().device());
  OwnStreamWork order(cuda_backend());
  DeviceBuffer<float> v(static_cast<size_t>(nnz()), stream());
  if (values) {
    v.upload(values, nnz());
    SFAC_CUDA_TRY(cudaStreamSynchronize(stream()));  // `values` may die after the call
  } else if (nnz() > 0) {
    SFAC_CUDA_TRY(cudaMemsetAsync(v.data(), 0, nnz() * sizeof(float), stream()));
  }
  return std::make_unique<CudaSparseMatrix>(backend_ptr(), pattern_, std::move(v));
}

void CudaSparseMatrix::degree_order(sfac_axis axis, int32_t* order) const {
  DeviceGuard guard(backend().device());
  OwnStreamWork ordered(cuda_backend());
  const int64_t n = axis == SFAC_AXIS_ROWS ? rows() : cols();
  DeviceBuffer<int32_t> ids(static_cast<size_t>(n), stream());
  if (axis == SFAC_AXIS_ROWS) {
    kernels::order_rows_by_degree(pattern_->offsets.data(), n, ids.data(), nullptr, stream());
  } else {
    kernels::order_cols_by_degree(pattern_->indices.data(), nnz(), n, ids.data(), nullptr,
                                  stream());
  }
  ids.download(order, static_cast<size_t>(n));
}

std::unique_ptr<SparseMatrix> CudaSparseMatrix::permuted(const int32_t* row_order,
                                                         const int32_t* col_order) const {
  DeviceGuard guard(backend().device());
  OwnStreamWork ordered(cuda_backend());
  DeviceBuffer<int32_t> d_row_order, col_rank;
  if (row_order) {
    d_row_order = DeviceBuffer<int32_t>(static_cast<size_t>(rows()), stream());
    d_row_order.upload(row_order, static_cast<size_t>(rows()));
  }
  if (col_order) col_rank = ranks(col_order, cols());
  auto pattern = std::make_shared<CudaPattern>();
  pattern->rows = rows();
  pattern->cols = cols();
  pattern->nnz = nnz();
  DeviceBuffer<float> values;
  kernels::permute_csr(pattern_->offsets.data(), pattern_->indices.data(), values_.data(), rows(),
                       nnz(), row_order ? d_row_order.data() : nullptr,
                       col_order ? col_rank.data() : nullptr, pattern->offsets, pattern->indices,
                       values, stream());
  return std::make_unique<CudaSparseMatrix>(backend_ptr(), std::move(pattern), std::move(values));
}

DeviceBuffer<int32_t> CudaSparseMatrix::ranks(const int32_t* order, int64_t n) const {
  DeviceBuffer<int32_t> d_order(static_cast<size_t>(n), stream());
  DeviceBuffer<int32_t> rank(static_cast<size_t>(n), stream());
  d_order.upload(order, static_cast<size_t>(n));
  kernels::invert_permutation(d_order.data(), n, rank.data(), stream());
  return rank;
}

}  // namespace sfac::cuda
