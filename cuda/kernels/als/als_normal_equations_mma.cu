// The batched normal equations of an ALS half-sweep on tensor cores at fp32 accuracy (3xTF32,
// see common/mma_tf32.cuh): one thread block per segment (and chunk of 16 x 16 blocks of the
// lower triangle), each warp a few of those blocks in mma accumulators.
//
// Per segment the product is A = Z_w^T Z over its ratings, where Z holds the fixed side's rows
// y_j (padded with zeros to a multiple of 16 columns) and Z_w the same rows scaled by w_j.
// Column d of Z holds the targets c_j and is left unscaled on the left, so row d of the product
// is b^T = sum_j c_j y_j^T: the right-hand side comes out of the same tiles.
//
// Staging: the segment's rows are copied by cp.async, 32 ratings at a time, one buffer ahead of
// the arithmetic, transposed (dimension-major, `kLead` floats per dimension), so that the
// fragment a thread needs for two consecutive ratings is one 8-byte load. Within each k-step of
// 8 ratings, fragment position k = t holds rating 2t and k = t + 4 rating 2t + 1; the sum over
// ratings does not depend on that order.
#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/kernels/als/als_kernels.cuh"
#include "cuda/kernels/als/als_system_tiles.cuh"
#include "cuda/kernels/als/als_triangle_blocks.cuh"
#include "cuda/kernels/common/cp_async.cuh"
#include "cuda/kernels/common/mma_tf32.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kStage = 32;          // ratings per staged buffer
constexpr int kLead = kStage + 8;   // a dimension's stride: = 8 mod 32, no bank conflicts
static_assert(kLead % 32 == 8);
constexpr int kMaxWarps = 8;
constexpr int kMaxSharedBytes = 100 * 1024;

// Floats of one staged buffer: the transposed rows, kStage weights, kStage row indices (-1 past
// the segment).
__host__ __device__ constexpr int buffer_floats(int padded) {
  return padded * kLead + 2 * kStage;
}

__device__ inline void split4(const float (&x)[4], uint32_t (&big)[4], uint32_t (&small)[4]) {
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const detail::SplitTf32 v = detail::split_tf32(x[p]);
    big[p] = v.big;
    small[p] = v.small;
  }
}

// kBlocksPerWarp: 16 x 16 blocks a warp holds (8 accumulators a thread each).
template <int kBlocksPerWarp>
__global__ void __launch_bounds__(kMaxWarps * 32)
    normal_equations_mma_kernel(AlsHalfSweep s, int64_t segment_base, int padded, WarpShares shares,
                                bool tiled, float* a, float* b) {
  extern __shared__ __align__(16) float smem[];
  const int buffer = buffer_floats(padded);
  const int64_t local = blockIdx.x;
  const int64_t segment = segment_base + local;
  const int64_t row = s.segment_row[segment];
  const bool first = s.first_segment[row] == segment;
  const int d = static_cast<int>(s.d);
  const int64_t begin = s.segment_begin[segment], end = s.segment_begin[segment + 1];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int warps = static_cast<int>(blockDim.x) / 32;
  const int g = lane >> 2, t = lane & 3;

  const WarpBlocks<kBlocksPerWarp> mine(shares, warp);  // this warp's blocks
  const int count = mine.count;

  // Dimensions past d stay zero in both buffers.
  for (int p = d + 1; p < padded; ++p) {
    for (int j = threadIdx.x; j < kStage; j += blockDim.x) {
      smem[p * kLead + j] = 0.0f;
      smem[buffer + p * kLead + j] = 0.0f;
    }
  }

  // Queues ratings [e0, e0 + kStage) into buffer `slot`: weights, targets and row indices
  // directly, then (after a barrier) the factor rows by cp.async, a warp instruction covering 8
  // ratings x 4 dimensions. The indices go through shared memory so that each thread waits for
  // one round of global loads, not one per group (a load cannot pass the cp.async before it).
  auto issue = [&](int64_t e0, int slot) {
    float* zt = smem + slot * buffer;
    float* w = zt + padded * kLead;
    auto* other = reinterpret_cast<int32_t*>(w + kStage);
    for (int j = threadIdx.x; j < kStage; j += blockDim.x) {
      float wj = 0.0f, cj = 0.0f;
      int32_t o = -1;
      if (e0 + j < end) {
        o = s.others[e0 + j];
        als_weight_target(s, s.values[e0 + j], o, &wj, &cj);
      }
      other[j] = o;
      w[j] = wj;
      zt[d * kLead + j] = cj;
    }
    __syncthreads();
    const int dim_groups = (d + 3) / 4;
    for (int group = 0; group < kStage / 8; ++group) {
      const int rating = group * 8 + (lane & 7);
      const int32_t o = other[rating];
      const bool valid = o >= 0;
      const float* y = s.fixed + (valid ? int64_t{o} * s.stride : 0);
      for (int dim = 4 * warp + (lane >> 3); dim < 4 * dim_groups; dim += 4 * warps) {
        if (dim < d) detail::cp_async4(zt + dim * kLead + rating, y + dim, valid);
      }
    }
    detail::cp_async_commit();
  };

  float acc[kBlocksPerWarp][2][4] = {};
  if (begin < end) issue(begin, 0);
  if (s.gram_blocks && first)
    add_gram_to_blocks(s.gram_blocks, 1.0f, mine, acc);  // a row starts from G
  int slot = 0;
  for (int64_t e0 = begin; e0 < end; e0 += kStage, slot ^= 1) {
    const int n = static_cast<int>(end - e0 < kStage ? end - e0 : kStage);
    if (e0 + kStage < end) {
      issue(e0 + kStage, slot ^ 1);
      detail::cp_async_wait<1>();
    } else {
      detail::cp_async_wait<0>();
    }
    __syncthreads();
    const float* zt = smem + slot * buffer;
    const float* w = zt + padded * kLead;
    for (int k0 = 0; k0 < n; k0 += 8) {
      const int column = k0 + 2 * t;
      const float2 wk = *reinterpret_cast<const float2*>(w + column);
      uint32_t a_big[4], a_small[4];
      int loaded_row = -1;
#pragma unroll
      for (int p = 0; p < kBlocksPerWarp; ++p) {
        if (p < count) {
          if (mine.row[p] != loaded_row) {
            loaded_row = mine.row[p];
            const int i0 = 16 * loaded_row + g;
            const float2 top = *reinterpret_cast<const float2*>(zt + i0 * kLead + column);
            const float2 bottom =
                *reinterpret_cast<const float2*>(zt + (i0 + 8) * kLead + column);
            // Row d (the targets) is not weighted.
            const float x[4] = {i0 == d ? top.x : top.x * wk.x,
                                i0 + 8 == d ? bottom.x : bottom.x * wk.x,
                                i0 == d ? top.y : top.y * wk.y,
                                i0 + 8 == d ? bottom.y : bottom.y * wk.y};
            split4(x, a_big, a_small);
          }
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int j0 = 16 * mine.col[p] + 8 * h + g;
            const float2 y = *reinterpret_cast<const float2*>(zt + j0 * kLead + column);
            const detail::SplitTf32 y0 = detail::split_tf32(y.x), y1 = detail::split_tf32(y.y);
            const uint32_t b_big[2] = {y0.big, y1.big}, b_small[2] = {y0.small, y1.small};
            detail::mma_3xtf32(acc[p][h], a_big, a_small, b_big, b_small);
          }
        }
      }
    }
    __syncthreads();  // the buffer is refilled two passes on
  }

  const float reg = first ? als_regularization(s, s.offsets[row + 1] - s.offsets[row]) : 0.0f;
  // Entry (i, j) of A from its sum v.
  auto entry = [&](int i, int j, float v) { return i == j ? v + reg : v; };
  const int tiles = static_cast<int>(als_tile_rows(d));
  float* A = a + local * (tiled ? als_tile_count(tiles) * kAlsTileFloats : int64_t{d} * d);
#pragma unroll
  for (int p = 0; p < kBlocksPerWarp; ++p) {
    if (p >= count) break;
    if (16 * mine.row[p] + 15 >= d) {  // row d (b) may be in this block
#pragma unroll
      for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int i = 16 * mine.row[p] + g + 8 * half, j = 16 * mine.col[p] + 8 * h + 2 * t;
          if (i == d) {
            if (j < d) b[local * d + j] = acc[p][h][2 * half];
            if (j + 1 < d) b[local * d + j + 1] = acc[p][h][2 * half + 1];
          }
        }
      }
    }
    store_system_block(A, tiled, d, tiles, mine.row[p], mine.col[p], acc[p], entry);
  }
}

template <int kBlocksPerWarp>
void launch(const AlsHalfSweep& s, const AlsBatch& batch, int padded, int blocks, int shared,
            float* a, float* b, cudaStream_t stream) {
  // A block row's left operand (weighted and split) costs a warp about as much as a block's
  // right operands and mma.
  launch_over_segments<kMaxWarps, kBlocksPerWarp>(normal_equations_mma_kernel<kBlocksPerWarp>, s,
                                                  batch, padded, blocks, 1, 1, shared, a, b,
                                                  stream);
}

}  // namespace

bool launch_als_normal_equations_mma(const AlsHalfSweep& s, const AlsBatch& batch, float* a,
                                     float* b, cudaStream_t stream) {
  const int64_t side = (s.d + 1 + 15) / 16;  // row d holds the right-hand side
  const int64_t padded = 16 * side;
  // padded <= kAlsMaxUnknowns + 16, so buffer_floats stays far inside int.
  const int64_t shared =
      2 * int64_t{buffer_floats(static_cast<int>(padded))} * int64_t{sizeof(float)};
  if (shared > kMaxSharedBytes) return false;
  const int blocks = static_cast<int>(side * (side + 1) / 2);
  // Fewer blocks a warp (more warps) for small systems; more for large ones, where a warp's
  // blocks share their rows' fragments.
  if (blocks <= 21) {
    launch<4>(s, batch, static_cast<int>(padded), blocks, static_cast<int>(shared), a, b, stream);
  } else {
    launch<8>(s, batch, static_cast<int>(padded), blocks, static_cast<int>(shared), a, b, stream);
  }
  SFAC_CUDA_CHECK_LAUNCH();
  return true;
}

}  // namespace sfac::cuda::kernels
