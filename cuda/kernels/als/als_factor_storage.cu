// 16-bit factor storage of the ALS trainer: a solved side is rounded in place and written out
// as the 16-bit rows the next half-sweep's normal equations read.
#include "cuda/cuda_check.h"
#include "cuda/kernels/als/als_kernels.cuh"
#include "cuda/kernels/common/grid_stride.cuh"
#include "cuda/kernels/common/mma_half.cuh"

namespace sfac::cuda::kernels {
namespace {

template <bool kBf16>
__global__ void round_to_storage_kernel(float* factors, int64_t n, int64_t stride, int64_t rank,
                                        int64_t d, uint16_t* half, int64_t half_stride,
                                        unsigned* largest) {
  float m = 0.0f;
  for_each_index(n * half_stride, [&](int64_t i) {
    const int64_t row = i / half_stride, col = i % half_stride;
    const float x = col < d ? factors[row * stride + col] : 0.0f;
    const uint16_t bits = detail::to_16bit<kBf16>(x);
    const float stored = detail::from_16bit<kBf16>(bits);
    if (col < rank) factors[row * stride + col] = stored;
    half[i] = bits;
    if (isfinite(stored)) m = fmaxf(m, fabsf(stored));
  });
  for (int offset = 16; offset > 0; offset /= 2) {
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  }
  // Non-negative floats order as their bit patterns: an integer maximum, no float atomics.
  if (threadIdx.x % 32 == 0) atomicMax(largest, __float_as_uint(m));
}

}  // namespace

void launch_round_to_storage(float* factors, int64_t n, int64_t stride, int64_t rank, int64_t d,
                             bool bf16, uint16_t* half, int64_t half_stride, float* largest,
                             cudaStream_t stream) {
  SFAC_CUDA_TRY(cudaMemsetAsync(largest, 0, sizeof(float), stream));
  if (n <= 0) return;
  auto* bits = reinterpret_cast<unsigned*>(largest);
  if (bf16) {
    round_to_storage_kernel<true><<<blocks_for(n * half_stride), 256, 0, stream>>>(
        factors, n, stride, rank, d, half, half_stride, bits);
  } else {
    round_to_storage_kernel<false><<<blocks_for(n * half_stride), 256, 0, stream>>>(
        factors, n, stride, rank, d, half, half_stride, bits);
  }
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
