// The lower triangle of a grid of 16 x 16 blocks (of a system's matrix, or of its tiles), as the
// ALS kernels walk it: blocks numbered row by row, a thread block's share handed to its warps,
// the store of a system's entries, and the launch of the normal-equation kernels whose grid
// that share assumes.
#pragma once

#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/kernels/als/als_kernels.cuh"
#include "cuda/kernels/als/als_system_tiles.cuh"
#include "cuda/kernels/als/als_warp_shares.h"

namespace sfac::cuda::kernels {

#ifdef __CUDACC__
// Block q of the lower triangle, numbered row by row: (0,0), (1,0), (1,1), (2,0), ...
__device__ inline void lower_block(int q, int* bi, int* bj) {
  int i = static_cast<int>((sqrtf(8.0f * static_cast<float>(q) + 1.0f) - 1.0f) * 0.5f);
  while ((i + 1) * (i + 2) / 2 <= q) ++i;
  while (i * (i + 1) / 2 > q) --i;
  *bi = i;
  *bj = q - i * (i + 1) / 2;
}

// The blocks one warp holds in accumulators: its run of its thread block's chunk (blockIdx.y)
// as `shares` gives it, `count` consecutive blocks in the row-by-row order from `first`, at
// (row[p], col[p]).
template <int kBlocksPerWarp>
struct WarpBlocks {
  int first;
  int count;
  int row[kBlocksPerWarp], col[kBlocksPerWarp];

  __device__ WarpBlocks(const WarpShares& shares, int warp) {
    first = shares.first[blockIdx.y][warp];
    count = shares.first[blockIdx.y][warp + 1] - first;
    int bi, bj;
    lower_block(first, &bi, &bj);
#pragma unroll
    for (int p = 0; p < kBlocksPerWarp; ++p) {
      row[p] = bi;
      col[p] = bj;
      if (++bj > bi) {
        ++bi;
        bj = 0;
      }
    }
  }
};

// Adds scale * G to a warp's accumulators of its blocks: acc[p][h][2 * half + e] holds entry
// (16 row[p] + g + 8 half, 16 col[p] + 8 h + 2 t + e), g = lane / 4, t = lane % 4 (the mma
// layout), and `gram_blocks` holds G in that order (als_gram_blocks): two 16-byte loads a block,
// all issued before the first is used. Done before the sums rather than at the stores: there,
// each load of G would wait behind the stores before it (they may alias).
template <int kBlocksPerWarp, typename Blocks>
__device__ inline void add_gram_to_blocks(const float* gram_blocks, float scale, const Blocks& mine,
                                          float (&acc)[kBlocksPerWarp][2][4]) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const auto* src = reinterpret_cast<const float4*>(gram_blocks) +
                    (int64_t{mine.first} * 32 + lane) * (kAlsGramBlockLaneFloats / 4);
  float4 v[kBlocksPerWarp][2];
#pragma unroll
  for (int p = 0; p < kBlocksPerWarp; ++p) {
    if (p < mine.count) {
      v[p][0] = __ldg(src + p * (kAlsTileFloats / 4));
      v[p][1] = __ldg(src + p * (kAlsTileFloats / 4) + 1);
    }
  }
#pragma unroll
  for (int p = 0; p < kBlocksPerWarp; ++p) {
    if (p < mine.count) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        acc[p][h][0] = fmaf(scale, v[p][h].x, acc[p][h][0]);
        acc[p][h][1] = fmaf(scale, v[p][h].y, acc[p][h][1]);
        acc[p][h][2] = fmaf(scale, v[p][h].z, acc[p][h][2]);
        acc[p][h][3] = fmaf(scale, v[p][h].w, acc[p][h][3]);
      }
    }
  }
}

// Stores entries (i, j) and (i, j + 1) of a system's A, at (r, c) and (r, c + 1) of its 16 x 16
// block (bi, bj), as `entry(i, j, v)` makes them from their sums v0 and v1, row-major with both
// triangles (the Cholesky kernels that read them), lower entries only.
template <typename Entry>
__device__ inline void store_row_major_pair(float* A, int d, int bi, int bj, int r, int c, float v0,
                                            float v1, Entry entry) {
  const int i = 16 * bi + r, j = 16 * bj + c;
  if (i >= d) return;
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int jj = j + u;
    if (jj <= i) {
      const float v = entry(i, jj, u == 0 ? v0 : v1);
      A[int64_t{i} * d + jj] = v;
      A[int64_t{jj} * d + i] = v;
    }
  }
}

// Stores a warp's 16 x 16 block (bi, bj) of A from its accumulators (acc[h][2 * half + e] holds
// entry (16 bi + g + 8 half, 16 bj + 8 h + 2 t + e), the mma layout), as `entry(i, j, v)` makes
// the entries from their sums: in the tile layout (als_system_tiles.cuh; zeros past d, blocks
// from `tiles` on left out) when `tiled`, else as store_row_major_pair does. In the tile layout a
// lane's offsets within the tile are the same for every block, and a block that lies inside d
// (bj <= bi) needs no bounds.
template <typename Entry>
__device__ inline void store_system_block(float* A, bool tiled, int d, int tiles, int bi, int bj,
                                          const float (&acc)[2][4], Entry entry) {
  const int lane = static_cast<int>(threadIdx.x) % 32, g = lane >> 2, t = lane & 3;
  if (!tiled) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        store_row_major_pair(A, d, bi, bj, g + 8 * half, 8 * h + 2 * t, acc[h][2 * half],
                             acc[h][2 * half + 1], entry);
      }
    }
    return;
  }
  if (bi >= tiles) return;
  float* tile = A + als_tile_start(bi, bj);
  const bool inside = kAlsTile * (bi + 1) <= d;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = g + 8 * half, c = 8 * h + 2 * t;
      const int i = kAlsTile * bi + r, j = kAlsTile * bj + c;
      float v0 = entry(i, j, acc[h][2 * half]), v1 = entry(i, j + 1, acc[h][2 * half + 1]);
      if (!inside) {
        v0 = i < d && j < d ? v0 : 0.0f;
        v1 = i < d && j + 1 < d ? v1 : 0.0f;
      }
      *reinterpret_cast<float2*>(tile + als_tile_offset(r, c)) = make_float2(v0, v1);
    }
  }
}

// Launches a normal-equations kernel over the batch: one thread block per (segment, chunk of
// kMaxWarps * kBlocksPerWarp blocks), with as many warps as the blocks need, each warp's blocks
// planned by plan_warp_shares with the kernel's costs of a block and of a block row (in any
// unit), `shared` bytes of dynamic shared memory, and A in the layout the Cholesky kernel that
// follows reads (`tiled`: als_system_tiles.cuh, else both triangles row-major).
template <int kMaxWarps, int kBlocksPerWarp, typename Kernel>
void launch_over_segments(Kernel kernel, const AlsHalfSweep& s, const AlsBatch& batch, int padded,
                          int blocks, int row_cost, int block_cost, int shared, float* a, float* b,
                          cudaStream_t stream) {
  const int per_chunk = kMaxWarps * kBlocksPerWarp;
  const int warps =
      std::min(kMaxWarps, (std::min(blocks, per_chunk) + kBlocksPerWarp - 1) / kBlocksPerWarp);
  const WarpShares shares = plan_warp_shares(blocks, std::min(blocks, per_chunk), warps,
                                             kBlocksPerWarp, row_cost, block_cost);
  SFAC_CUDA_TRY(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  SFAC_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                     cudaSharedmemCarveoutMaxShared));
  const dim3 grid(static_cast<unsigned>(batch.segments),
                  static_cast<unsigned>((blocks + per_chunk - 1) / per_chunk));
  const bool tiled = als_cholesky_on_tensor_cores(s.d);
  kernel<<<grid, warps * 32, static_cast<size_t>(shared), stream>>>(s, batch.segment_base, padded,
                                                                    shares, tiled, a, b);
}
#endif

}  // namespace sfac::cuda::kernels
