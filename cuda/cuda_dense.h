// Dense matrices of the CUDA backend (float32, float16 or bfloat16 storage on the device) and
// the host conversions between float and the 16-bit types.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/backend.h"
#include "cuda/cuda_backend.h"
#include "cuda/device_buffer.h"

namespace sfac::cuda {

// Host conversions between float and the bits of float16 / bfloat16 (round to nearest even).
uint16_t to_half_bits(float x, sfac_dtype dtype);
float from_half_bits(uint16_t bits, sfac_dtype dtype);

// Dense factors stored as float32, float16 or bfloat16 (converted on upload, round to nearest
// even); kernels read the storage type and compute in float32. Rows are padded with zeros to a
// whole number of 16-byte vectors (`stride` elements), so that the kernels load every row by
// 16-byte vectors at any K (a bfloat16 row of K = 100 is 200 bytes, 13 vectors of which the
// last holds four zeros); the caller sees `cols` columns.
class CudaDenseMatrix final : public DenseMatrix {
 public:
  CudaDenseMatrix(std::shared_ptr<Backend> backend, int64_t rows, int64_t cols, sfac_dtype dtype,
                  cudaStream_t stream)
      : DenseMatrix(std::move(backend), rows, cols, dtype),
        stride_(padded_cols(cols, dtype)),
        bytes_(static_cast<size_t>(rows * stride_) * element_size(dtype), stream) {}
  ~CudaDenseMatrix() override;

  static size_t element_size(sfac_dtype dtype) { return dtype == SFAC_DTYPE_FLOAT32 ? 4 : 2; }
  // `cols` rounded up to whole 16-byte vectors of `dtype`.
  static int64_t padded_cols(int64_t cols, sfac_dtype dtype) {
    const int64_t per_vector = 16 / static_cast<int64_t>(element_size(dtype));
    return (cols + per_vector - 1) / per_vector * per_vector;
  }

  // Elements from one row to the next; those past cols() are zero.
  int64_t stride() const { return stride_; }
  size_t bytes() const { return bytes_.size(); }

  const void* data() const { return bytes_.data(); }
  void* data() { return bytes_.data(); }

  void upload(const float* data) override;
  void download(float* data) const override;
  std::unique_ptr<DenseMatrix> permuted_rows(const int32_t* order) const override;

 private:
  const CudaBackend& cuda_backend() const { return static_cast<const CudaBackend&>(backend()); }

  int64_t stride_;
  DeviceBuffer<uint8_t> bytes_;
};

}  // namespace sfac::cuda
