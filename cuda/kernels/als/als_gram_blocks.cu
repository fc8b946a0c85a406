// G = Y^T Y rearranged in the normal-equation kernels' accumulator order (als_kernels.cuh), once
// per half-sweep, so that each system's blocks start from two 16-byte loads a lane instead of
// eight scattered, bounds-checked ones.
#include "cuda/cuda_check.h"
#include "cuda/kernels/als/als_kernels.cuh"
#include "cuda/kernels/als/als_system_tiles.cuh"
#include "cuda/kernels/als/als_triangle_blocks.cuh"
#include "cuda/kernels/common/grid_stride.cuh"

namespace sfac::cuda::kernels {
namespace {

__global__ void gram_blocks_kernel(const float* gram, int d, int64_t floats, float* blocks) {
  for_each_index(floats, [&](int64_t o) {
    const int q = static_cast<int>(o / kAlsTileFloats);
    const int within = static_cast<int>(o % kAlsTileFloats);
    const int lane = within / kAlsGramBlockLaneFloats, k = within % kAlsGramBlockLaneFloats;
    const int g = lane >> 2, t = lane & 3, h = k >> 2, half = (k >> 1) & 1, e = k & 1;
    int bi, bj;
    lower_block(q, &bi, &bj);
    const int i = kAlsTile * bi + g + 8 * half, j = kAlsTile * bj + 8 * h + 2 * t + e;
    blocks[o] = i < d && j < d ? gram[int64_t{i} * d + j] : 0.0f;
  });
}

}  // namespace

int64_t als_gram_block_floats(int64_t d) {
  return als_tile_count(als_tile_rows(d) + 1) * kAlsTileFloats;
}

void launch_als_gram_blocks(const float* gram, int64_t d, float* blocks, cudaStream_t stream) {
  const int64_t floats = als_gram_block_floats(d);
  gram_blocks_kernel<<<blocks_for(floats), 256, 0, stream>>>(gram, static_cast<int>(d), floats,
                                                             blocks);
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
