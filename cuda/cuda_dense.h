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
// even); kernels read the storage type and compute in float32.
class CudaDenseMatrix final : public DenseMatrix {
 public:
  CudaDenseMatrix(std::shared_ptr<Backend> backend, int64_t rows, int64_t cols, sfac_dtype dtype,
                  cudaStream_t stream)
      : DenseMatrix(std::move(backend), rows, cols, dtype),
        bytes_(static_cast<size_t>(rows * cols) * element_size(dtype), stream) {}
  ~CudaDenseMatrix() override;

  static size_t element_size(sfac_dtype dtype) { return dtype == SFAC_DTYPE_FLOAT32 ? 4 : 2; }

  const void* data() const { return bytes_.data(); }
  void* data() { return bytes_.data(); }

  void upload(const float* data) override;
  void download(float* data) const override;
  std::unique_ptr<DenseMatrix> permuted_rows(const int32_t* order) const override;

 private:
  const CudaBackend& cuda_backend() const { return static_cast<const CudaBackend&>(backend()); }

  DeviceBuffer<uint8_t> bytes_;
};

}  // namespace sfac::cuda
