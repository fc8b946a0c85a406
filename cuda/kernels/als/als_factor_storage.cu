// 16-bit factor storage of the ALS trainer: a solved side is rounded in place and written out
// as the 16-bit rows the next half-sweep's normal equations read.
#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/kernels/als/als_kernels.cuh"
#include "cuda/kernels/common/grid_stride.cuh"
#include "cuda/kernels/common/mma_half.cuh"

namespace sfac::cuda::kernels {
namespace {

// The largest of m over the warp, in every lane.
__device__ inline float warp_max(float m) {
  for (int offset = 16; offset > 0; offset /= 2) {
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  }
  return m;
}

constexpr int kRoundThreads = 256;
// Enough blocks to keep the device's memory busy; each adds its maxima with one atomic each, not
// one a warp, since atomics on one address are serialized.
constexpr int kRoundMaxBlocks = 2048;

// The largest of m over the thread block, added to *largest (non-negative floats order as their
// bit patterns: an integer maximum, no float atomics). Every thread of the block calls it.
__device__ inline void block_max_into(float m, unsigned* largest) {
  __shared__ float warps[kRoundThreads / 32];
  m = warp_max(m);
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x < 32) {
    m = warp_max(threadIdx.x < blockDim.x / 32 ? warps[threadIdx.x] : 0.0f);
    if (threadIdx.x == 0) atomicMax(largest, __float_as_uint(m));
  }
  __syncthreads();  // warps[] is reused by the next call
}

// One warp a row, a lane a column (rows are a few hundred values at most).
template <bool kBf16>
__global__ void __launch_bounds__(kRoundThreads)
    round_to_storage_kernel(float* factors, int64_t n, int64_t stride, int64_t rank, int64_t d,
                            const float* bias, uint16_t* half, int64_t half_stride,
                            unsigned* largest) {
  float m = 0.0f, bias_m = 0.0f;
  for_each_warp_index(n, [&](int64_t row, int lane) {
    float* x = factors + row * stride;
    uint16_t* h = half + row * half_stride;
    for (int64_t col = lane; col < half_stride; col += 32) {
      const uint16_t bits = detail::to_16bit<kBf16>(col < d ? x[col] : 0.0f);
      const float stored = detail::from_16bit<kBf16>(bits);
      if (col < rank) x[col] = stored;
      h[col] = bits;
      if (isfinite(stored)) m = fmaxf(m, fabsf(stored));
    }
    if (bias && lane == 0 && isfinite(bias[row])) bias_m = fmaxf(bias_m, fabsf(bias[row]));
  });
  block_max_into(m, largest);
  block_max_into(bias_m, largest + 1);
}

// One warp per segment.
__global__ void segment_largest_kernel(const float* values, const int64_t* segment_begin,
                                       int64_t segments, unsigned* largest) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t warps = int64_t{gridDim.x} * blockDim.x / 32;
  for (int64_t g = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32; g < segments;
       g += warps) {
    float m = 0.0f;
    for (int64_t e = segment_begin[g] + lane; e < segment_begin[g + 1]; e += 32) {
      if (isfinite(values[e])) m = fmaxf(m, fabsf(values[e]));
    }
    m = warp_max(m);
    if (lane == 0) largest[g] = __float_as_uint(m);
  }
}

}  // namespace

void launch_round_to_storage(float* factors, int64_t n, int64_t stride, int64_t rank, int64_t d,
                             const float* bias, bool bf16, uint16_t* half, int64_t half_stride,
                             float* largest, cudaStream_t stream) {
  SFAC_CUDA_TRY(cudaMemsetAsync(largest, 0, 2 * sizeof(float), stream));
  if (n <= 0) return;
  auto* bits = reinterpret_cast<unsigned*>(largest);
  const int blocks = static_cast<int>(
      std::min<int64_t>((n + kRoundThreads / 32 - 1) / (kRoundThreads / 32), kRoundMaxBlocks));
  if (bf16) {
    round_to_storage_kernel<true><<<blocks, kRoundThreads, 0, stream>>>(
        factors, n, stride, rank, d, bias, half, half_stride, bits);
  } else {
    round_to_storage_kernel<false><<<blocks, kRoundThreads, 0, stream>>>(
        factors, n, stride, rank, d, bias, half, half_stride, bits);
  }
  SFAC_CUDA_CHECK_LAUNCH();
}

void launch_segment_largest_values(const float* values, const int64_t* segment_begin,
                                   int64_t segments, float* largest, cudaStream_t stream) {
  if (segments <= 0) return;
  segment_largest_kernel<<<blocks_for(segments * 32), 256, 0, stream>>>(
      values, segment_begin, segments, reinterpret_cast<unsigned*>(largest));
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
