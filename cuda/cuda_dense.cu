#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_dense.h"
#include "cuda/kernels/common/sparse_reorder.cuh"

namespace sfac::cuda {

uint16_t to_half_bits(float x, sfac_dtype dtype) {
  if (dtype == SFAC_DTYPE_FLOAT16) return static_cast<__half_raw>(__float2half_rn(x)).x;
  return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(x)).x;
}

float from_half_bits(uint16_t bits, sfac_dtype dtype) {
  if (dtype == SFAC_DTYPE_FLOAT16) {
    __half_raw raw;
    raw.x = bits;
    return __half2float(__half(raw));
  }
  __nv_bfloat16_raw raw;
  raw.x = bits;
  return __bfloat162float(__nv_bfloat16(raw));
}

CudaDenseMatrix::~CudaDenseMatrix() { cuda_backend().own_waits_for_current_noexcept(); }

void CudaDenseMatrix::upload(const float* data) {
  DeviceGuard guard(backend().device());
  OwnStreamWork order(cuda_backend());
  const cudaStream_t stream = cuda_backend().own_stream();
  if (rows() == 0 || cols() == 0) return;
  if (dtype() == SFAC_DTYPE_FLOAT32) {
    if (stride_ != cols()) SFAC_CUDA_TRY(cudaMemsetAsync(bytes_.data(), 0, bytes_.size(), stream));
    SFAC_CUDA_TRY(cudaMemcpy2DAsync(bytes_.data(), stride_ * sizeof(float), data,
                                    cols() * sizeof(float), cols() * sizeof(float), rows(),
                                    cudaMemcpyHostToDevice, stream));
    SFAC_CUDA_TRY(cudaStreamSynchronize(stream));  // `data` is the caller's, pageable
    return;
  }
  std::vector<uint16_t> half(bytes_.size() / sizeof(uint16_t), 0);  // zeros past cols()
  for (int64_t r = 0; r < rows(); ++r) {
    for (int64_t c = 0; c < cols(); ++c) {
      const int64_t i = r * cols() + c;
      uint16_t& bits = half[r * stride_ + c];
      bits = to_half_bits(data[i], dtype());
      SFAC_REQUIRE(std::isfinite(from_half_bits(bits, dtype())), SFAC_ERR_INVALID_VALUE, "data[", i,
                   "] = ", data[i], " overflows ",
                   dtype() == SFAC_DTYPE_FLOAT16 ? "float16" : "bfloat16");
    }
  }
  bytes_.upload(reinterpret_cast<const uint8_t*>(half.data()), bytes_.size());
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream));
}

void CudaDenseMatrix::download(float* data) const {
  DeviceGuard guard(backend().device());
  OwnStreamWork order(cuda_backend());
  const cudaStream_t stream = cuda_backend().own_stream();
  if (rows() == 0 || cols() == 0) return;
  if (dtype() == SFAC_DTYPE_FLOAT32) {
    SFAC_CUDA_TRY(cudaMemcpy2DAsync(data, cols() * sizeof(float), bytes_.data(),
                                    stride_ * sizeof(float), cols() * sizeof(float), rows(),
                                    cudaMemcpyDeviceToHost, stream));
    SFAC_CUDA_TRY(cudaStreamSynchronize(stream));
    return;
  }
  std::vector<uint16_t> half(bytes_.size() / sizeof(uint16_t));
  bytes_.download(reinterpret_cast<uint8_t*>(half.data()), bytes_.size());
  for (int64_t r = 0; r < rows(); ++r) {
    for (int64_t c = 0; c < cols(); ++c) {
      data[r * cols() + c] = from_half_bits(half[r * stride_ + c], dtype());
    }
  }
}

std::unique_ptr<DenseMatrix> CudaDenseMatrix::permuted_rows(const int32_t* order) const {
  DeviceGuard guard(backend().device());
  OwnStreamWork ordered(cuda_backend());
  cudaStream_t stream = cuda_backend().own_stream();
  auto out = std::make_unique<CudaDenseMatrix>(backend().shared_from_this(), rows(), cols(),
                                               dtype(), stream);
  DeviceBuffer<int32_t> d_order(static_cast<size_t>(rows()), stream);
  d_order.upload(order, static_cast<size_t>(rows()));
  kernels::gather_rows(data(), d_order.data(), rows(),
                       stride_ * static_cast<int64_t>(element_size(dtype())), out->data(), stream);
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream));  // `order` may die after the call
  return out;
}

}  // namespace sfac::cuda
