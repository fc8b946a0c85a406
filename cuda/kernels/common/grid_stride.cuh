// Launch shape of the grid-stride helper kernels (plan builders, format conversions): 256
// threads per block, enough blocks for one item per thread up to 65536 (the loops do the rest),
// and the loop itself.
#pragma once

#include <algorithm>
#include <cstdint>

namespace sfac::cuda::kernels {

inline int blocks_for(int64_t n) {
  return static_cast<int>(std::clamp<int64_t>((n + 255) / 256, 1, 65536));
}

#ifdef __CUDACC__
// f(i) for every i < n, spread over the grid's threads.
template <typename F>
__device__ void for_each_index(int64_t n, F f) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    f(i);
  }
}

// f(i, lane) for every i < n, one index a warp, spread over the grid's warps (the lanes of a
// warp share its index).
template <typename F>
__device__ void for_each_warp_index(int64_t n, F f) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  for (int64_t i = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32; i < n;
       i += int64_t{gridDim.x} * (blockDim.x / 32)) {
    f(i, lane);
  }
}
#endif

}  // namespace sfac::cuda::kernels
