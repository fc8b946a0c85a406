// How the warps of a normal-equations thread block share the 16 x 16 blocks of the lower
// triangle (numbered row by row, als_triangle_blocks.cuh): a thread block takes a chunk of them
// (blockIdx.y), each warp a run of consecutive blocks. The runs are planned on the host so that
// the warps finish together where a warp's first block of a block row costs more than the
// others (the left operand of a row is loaded, and with weights converted, once per warp).
#pragma once

#include <cstdint>

namespace sfac::cuda::kernels {

constexpr int kMaxShareChunks = 8;
constexpr int kMaxShareWarps = 8;

// Warp w of chunk c holds blocks [first[c][w], first[c][w + 1]).
struct WarpShares {
  int16_t first[kMaxShareChunks][kMaxShareWarps + 1];
};

// The shares of `blocks` blocks in chunks of `per_chunk` (at most kMaxShareChunks of them), each
// chunk over `warps` warps of at most `per_warp` blocks, that make the costliest warp's cost
// least: block_cost a block, plus row_cost for each block row a warp's run touches.
WarpShares plan_warp_shares(int blocks, int per_chunk, int warps, int per_warp, int row_cost,
                            int block_cost);

}  // namespace sfac::cuda::kernels
