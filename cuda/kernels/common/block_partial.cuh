// The fixed-order reductions of the objective kernels: every block writes one partial sum per
// slot (its warps' values added in warp order), and the host adds the blocks' partials in block
// order, so the same data always sums to the same bits.
#pragma once

namespace sfac::cuda::kernels {

// Adds the block's per-warp values `v` (every lane holds its warp's; kWarps warps, `scratch` of
// kWarps doubles in shared memory) in warp order and writes them as the block's partial `slot`
// of `slots`. Every thread of the block must call it.
template <int kWarps>
__device__ void block_partial(double v, double* scratch, double* partials, int slot, int slots) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int w = 0; w < kWarps; ++w) total += scratch[w];
    partials[blockIdx.x * slots + slot] = total;
  }
  __syncthreads();
}

}  // namespace sfac::cuda::kernels
