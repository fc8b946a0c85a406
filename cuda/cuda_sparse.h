// Sparse matrices of the CUDA backend: an immutable device CSR pattern, shared by the matrices
// made from it (its COO row array and CSC view built on first use), plus each matrix's values.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "core/backend.h"
#include "cuda/cuda_backend.h"
#include "cuda/device_buffer.h"

namespace sfac::cuda {

// An immutable CSR pattern on the device, plus the COO row array and the CSC view, each built
// on the device on first use.
struct CudaPattern {
  int64_t rows = 0, cols = 0, nnz = 0;
  DeviceBuffer<int64_t> offsets;
  DeviceBuffer<int32_t> indices;

  const int32_t* rows_of_nonzeros(cudaStream_t stream) const;
  bool rows_built() const { return rows_built_.load(std::memory_order_acquire); }

  struct Csc {
    DeviceBuffer<int64_t> offsets;
    DeviceBuffer<int32_t> indices;
    DeviceBuffer<int64_t> csr_position;
  };
  const Csc& csc(cudaStream_t stream) const;

 private:
  mutable std::once_flag row_of_once_, csc_once_;
  mutable std::atomic<bool> rows_built_{false};
  mutable DeviceBuffer<int32_t> row_of_;
  mutable Csc csc_;
};

class CudaSparseMatrix final : public SparseMatrix {
 public:
  CudaSparseMatrix(std::shared_ptr<Backend> backend, std::shared_ptr<const CudaPattern> pattern,
                   DeviceBuffer<float> values)
      : SparseMatrix(std::move(backend), pattern->rows, pattern->cols, pattern->nnz),
        pattern_(std::move(pattern)),
        values_(std::move(values)) {}
  ~CudaSparseMatrix() override;

  const CudaPattern& pattern() const { return *pattern_; }
  // For objects that must keep the pattern alive beyond this matrix (plans).
  std::shared_ptr<const CudaPattern> shared_pattern() const { return pattern_; }
  const float* values() const { return values_.data(); }
  float* values() { return values_.data(); }

  const void* pattern_id() const override { return pattern_.get(); }
  bool same_pattern(const SparseMatrix& other) const override;
  void download_csr(int64_t* offsets, int32_t* col_indices, float* values) const override;
  void download_coo(int32_t* row_indices, int32_t* col_indices, float* values) const override;
  void download_csc(int64_t* offsets, int32_t* row_indices, float* values) const override;
  void set_values(const float* values) override;
  std::unique_ptr<SparseMatrix> create_like(const float* values) const override;
  void degree_order(sfac_axis axis, int32_t* order) const override;
  // Whole rows gathered in the new order with their columns renumbered, then each row's columns
  // sorted again (kernels::permute_csr): no sort across rows.
  std::unique_ptr<SparseMatrix> permuted(const int32_t* row_order,
                                         const int32_t* col_order) const override;

 private:
  const CudaBackend& cuda_backend() const { return static_cast<const CudaBackend&>(backend()); }
  // The matrix's own work (transfers, conversions) runs on the backend's own stream.
  cudaStream_t stream() const { return cuda_backend().own_stream(); }

  // rank[order[i]] = i on the device, for a host permutation `order` of n entries.
  DeviceBuffer<int32_t> ranks(const int32_t* order, int64_t n) const;

  std::shared_ptr<const CudaPattern> pattern_;
  DeviceBuffer<float> values_;
};

// `m` as a matrix on CUDA device `device`, or null where it lives elsewhere (another backend or
// device): what a trainer asks before evaluating on its own device.
inline const CudaSparseMatrix* on_device(const SparseMatrix& m, int device) {
  const auto* cuda = dynamic_cast<const CudaSparseMatrix*>(&m);
  return cuda != nullptr && cuda->backend().device() == device ? cuda : nullptr;
}

}  // namespace sfac::cuda
