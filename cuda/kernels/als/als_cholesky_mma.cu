// Batched Cholesky solves of the ALS normal equations with the O(d^3) part on tensor cores:
// one thread block (4 warps) per system, the lower triangle of the augmented [A; b^T] held in
// shared memory as 16 x 16 tiles, factored right-looking a block column at a time:
//   1. one warp factors the diagonal tile in registers (a lane per row, shuffles, no barrier);
//   2. a thread per row below solves its 16 entries of the block column against that tile;
//   3. the warps update the trailing tiles, A_IJ -= L_IK L_JK^T, with 3xTF32 mma (fp32
//      accuracy, common/mma_tf32.cuh).
// Rows past d are zero and the extra row d holds b, so it comes out as L^-1 b (the forward
// substitution is free); pivots at and past d are taken as 1. One warp then does the backward
// substitution. A system that is not positive definite, or whose solution is not finite, is
// reloaded with its diagonal raised and solved again, as in als_cholesky.cu.
#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/kernels/als/als_kernels.cuh"
#include "cuda/kernels/als/als_triangle_blocks.cuh"
#include "cuda/kernels/common/cp_async.cuh"
#include "cuda/kernels/common/mma_tf32.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kThreads = 128;
constexpr int kTile = 16;
// Floats per tile row: 20 = 20 mod 32 puts the fragment loads of a warp (rows g, columns t)
// on 32 distinct banks and keeps rows 16-byte aligned.
constexpr int kLead = 20;
constexpr int kTileFloats = kTile * kLead;
constexpr int kMaxTiles = 12;  // block rows: d + 1 up to 192 (about 100 KB of tiles)

__host__ __device__ constexpr int tile_count(int tiles) { return tiles * (tiles + 1) / 2; }

// Tile (I, J), I >= J, of the packed lower triangle of tiles.
__device__ inline float* tile(float* l, int bi, int bj) {
  return l + (bi * (bi + 1) / 2 + bj) * kTileFloats;
}

// The lower tiles of [A; b^T] (padded with zeros to `tiles` block rows), the diagonal of A
// raised by `raise`. A is read along the rows of its lower triangle (the upper part of the
// diagonal tiles is loaded too, and never used), by cp.async: every load in flight at once,
// where plain loads would wait one by one.
__device__ void load_tiles(const float* a, const float* b, int d, int tiles, float raise,
                           float* l) {
  // Thread t loads entries (t / 16 + 8 m, t % 16), m = 0, 1, of every tile (128 threads).
  const int c = static_cast<int>(threadIdx.x) % kTile;
  float* t = l;
  for (int bi = 0; bi < tiles; ++bi) {
    for (int bj = 0; bj <= bi; ++bj, t += kTileFloats) {
      const int j = kTile * bj + c;
      for (int r = static_cast<int>(threadIdx.x) / kTile; r < kTile; r += kThreads / kTile) {
        const int i = kTile * bi + r;
        if (i < d && j < d) {
          detail::cp_async4(t + r * kLead + c, a + int64_t{i} * d + j, true);
        } else {
          t[r * kLead + c] = i == d && j < d ? b[j] : 0.0f;
        }
      }
    }
  }
  detail::cp_async_commit();
  detail::cp_async_wait<0>();
  __syncthreads();
  if (raise != 0.0f) {
    for (int i = threadIdx.x; i < d; i += blockDim.x) {
      tile(l, i / kTile, i / kTile)[(i % kTile) * (kLead + 1)] += raise;
    }
    __syncthreads();
  }
}

// Step 1: the diagonal tile of block column k by warp 0, lane r holding row r. Pivots of
// columns at and past d are 1. Writes L_kk over the tile and 1 / pivot to `inverse`; sets
// *failed at a pivot that is not positive.
__device__ void factor_diagonal(float* diag, int k, int d, float* inverse, int* failed) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int r = lane % kTile;
  float row[kTile];
#pragma unroll
  for (int c = 0; c < kTile; c += 4) {
    const float4 v = *reinterpret_cast<const float4*>(diag + r * kLead + c);
    row[c] = v.x, row[c + 1] = v.y, row[c + 2] = v.z, row[c + 3] = v.w;
  }
  bool ok = true;
#pragma unroll
  for (int j = 0; j < kTile; ++j) {
    const float pivot = __shfl_sync(0xffffffffu, row[j], j);
    float s = 1.0f;
    if (kTile * k + j < d) {
      ok = ok && pivot > 0.0f && isfinite(pivot);
      s = ok ? sqrtf(pivot) : 1.0f;
    }
    const float inv = 1.0f / s;
    if (r > j) row[j] *= inv;
    if (r == j) {
      row[j] = s;
      if (lane == j) inverse[j] = inv;
    }
#pragma unroll
    for (int c = j + 1; c < kTile; ++c) {
      const float below = __shfl_sync(0xffffffffu, row[j], c);  // L[c][j]
      if (r >= c) row[c] = fmaf(-row[j], below, row[c]);
    }
  }
  __syncwarp();  // lanes 16-31 read the rows that lanes 0-15 now write
  if (lane < kTile) {
#pragma unroll
    for (int c = 0; c < kTile; c += 4) {
      *reinterpret_cast<float4*>(diag + r * kLead + c) =
          make_float4(row[c], row[c + 1], row[c + 2], row[c + 3]);
    }
  }
  if (!ok && lane == 0) *failed = 1;
}

// Step 2: row `r` of a tile below the diagonal, x = a L_kk^-T, in place.
__device__ void solve_panel_row(float* a_row, const float* diag, const float* inverse) {
  float x[kTile];
#pragma unroll
  for (int c = 0; c < kTile; c += 4) {
    const float4 v = *reinterpret_cast<const float4*>(a_row + c);
    x[c] = v.x, x[c + 1] = v.y, x[c + 2] = v.z, x[c + 3] = v.w;
  }
#pragma unroll
  for (int j = 0; j < kTile; ++j) {
    x[j] *= inverse[j];
#pragma unroll
    for (int c = j + 1; c < kTile; ++c) x[c] = fmaf(-x[j], diag[c * kLead + j], x[c]);
  }
#pragma unroll
  for (int c = 0; c < kTile; c += 4) {
    *reinterpret_cast<float4*>(a_row + c) = make_float4(x[c], x[c + 1], x[c + 2], x[c + 3]);
  }
}

// Step 3: C -= L_ik L_jk^T for one 16 x 16 tile, by one warp.
__device__ void update_tile(float* c_tile, const float* l_ik, const float* l_jk) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane >> 2, t = lane & 3;
  float acc[2][4];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float2 top = *reinterpret_cast<const float2*>(c_tile + g * kLead + 8 * h + 2 * t);
    const float2 bottom =
        *reinterpret_cast<const float2*>(c_tile + (g + 8) * kLead + 8 * h + 2 * t);
    acc[h][0] = top.x, acc[h][1] = top.y, acc[h][2] = bottom.x, acc[h][3] = bottom.y;
  }
#pragma unroll
  for (int ks = 0; ks < 2; ++ks) {
    const int col = 8 * ks + t;
    // The left operand negated: the products are subtracted.
    const float left[4] = {-l_ik[g * kLead + col], -l_ik[(g + 8) * kLead + col],
                           -l_ik[g * kLead + col + 4], -l_ik[(g + 8) * kLead + col + 4]};
    uint32_t a_big[4], a_small[4];
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      const detail::SplitTf32 v = detail::split_tf32(left[p]);
      a_big[p] = v.big;
      a_small[p] = v.small;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // Column n of L_jk^T is row n of L_jk.
      const int n = g + 8 * h;
      const detail::SplitTf32 y0 = detail::split_tf32(l_jk[n * kLead + col]);
      const detail::SplitTf32 y1 = detail::split_tf32(l_jk[n * kLead + col + 4]);
      const uint32_t b_big[2] = {y0.big, y1.big}, b_small[2] = {y0.small, y1.small};
      detail::mma_3xtf32(acc[h], a_big, a_small, b_big, b_small);
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    *reinterpret_cast<float2*>(c_tile + g * kLead + 8 * h + 2 * t) =
        make_float2(acc[h][0], acc[h][1]);
    *reinterpret_cast<float2*>(c_tile + (g + 8) * kLead + 8 * h + 2 * t) =
        make_float2(acc[h][2], acc[h][3]);
  }
}

// Factors the tiles in place; false (in every thread) at a pivot that is not positive.
// `inverse`: 16 floats; `failed`: a shared int.
__device__ bool factor_tiles(float* l, int d, int tiles, float* inverse, int* failed) {
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int warps = static_cast<int>(blockDim.x) / 32;
  if (threadIdx.x == 0) *failed = 0;
  for (int k = 0; k < tiles; ++k) {
    if (warp == 0) factor_diagonal(tile(l, k, k), k, d, inverse, failed);
    __syncthreads();
    if (*failed) return false;
    const int below = kTile * (tiles - k - 1);
    for (int p = threadIdx.x; p < below; p += blockDim.x) {
      solve_panel_row(tile(l, k + 1 + p / kTile, k) + (p % kTile) * kLead, tile(l, k, k),
                      inverse);
    }
    __syncthreads();
    const int rest = tiles - k - 1;
    for (int q = warp; q < tile_count(rest); q += warps) {
      int bi, bj;
      lower_block(q, &bi, &bj);
      bi += k + 1;
      bj += k + 1;
      update_tile(tile(l, bi, bj), tile(l, bi, k), tile(l, bj, k));
    }
    __syncthreads();
  }
  return true;
}

// L[i][j] of the factored tiles.
__device__ inline float entry(float* l, int i, int j) {
  return tile(l, i / kTile, j / kTile)[(i % kTile) * kLead + j % kTile];
}

// L^T x = z, z = L^-1 b in row d, by warp 0, a block of 16 unknowns at a time from the last:
// lanes c and c + 16 take the dots of column 16k + c of the tiles below with the finished
// unknowns (half the rows each), then the 16 x 16 triangle is solved with shuffles. Returns
// whether every unknown is finite (in every lane).
__device__ bool solve_backward(float* l, int d, int tiles, float* x) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int c = lane % kTile, half = lane / kTile;
  for (int k = tiles - 1; k >= 0; --k) {
    const int j = kTile * k + c;
    float acc = 0.0f;
    for (int i = kTile * (k + 1) + half; i < d; i += 2) {
      acc = fmaf(tile(l, i / kTile, k)[(i % kTile) * kLead + c], x[i], acc);
    }
    acc += __shfl_xor_sync(0xffffffffu, acc, kTile);
    float r = j < d ? entry(l, d, j) - acc : 0.0f;
    const float* diag = tile(l, k, k);
#pragma unroll
    for (int m = kTile - 1; m >= 0; --m) {
      // Unknowns at and past d stay 0 (their right-hand sides are 0).
      const float z = __shfl_sync(0xffffffffu, r / diag[m * kLead + m], m);
      if (c < m) r = fmaf(-diag[m * kLead + c], z, r);
      if (c == m) r = z;
    }
    if (lane < kTile) x[j] = r;
    __syncwarp();
  }
  bool finite = true;
  for (int j = lane; j < d; j += 32) finite = finite && isfinite(x[j]);
  return __all_sync(0xffffffffu, finite);
}

__global__ void __launch_bounds__(kThreads)
    cholesky_mma_kernel(AlsHalfSweep s, AlsBatch batch, const float* a, const float* b) {
  extern __shared__ __align__(16) float smem[];
  __shared__ float inverse[kTile];
  __shared__ int failed;
  const int d = static_cast<int>(s.d);
  const int tiles = (d + 1 + kTile - 1) / kTile;
  const int64_t row = batch.row_begin + blockIdx.x;
  const int64_t local = s.first_segment[row] - batch.segment_base;  // the row's system
  const int64_t count = s.offsets[row + 1] - s.offsets[row];
  if (count == 0) {
    als_zero_row(s, row);
    return;
  }
  float* l = smem;
  float* x = smem + tile_count(tiles) * kTileFloats;
  const float* system = a + local * d * d;
  const float* rhs = b + local * d;
  // A system that is not positive definite, or whose solution is not finite (a pivot barely
  // above zero in a nearly singular system), takes the CPU trainer's retry with the diagonal
  // raised by 1e-6 max(trace(A - reg I) / d, 1); if that fails too, the row becomes zero.
  bool ok = false;
  for (int attempt = 0; attempt < 2 && !ok; ++attempt) {
    float raise = 0.0f;
    if (attempt > 0) {
      const float reg = als_regularization(s, count);
      float trace = 0.0f;
      for (int t = 0; t < d; ++t) trace += system[int64_t{t} * d + t] - reg;
      raise = 1e-6f * fmaxf(trace / static_cast<float>(d), 1.0f);
      __syncthreads();  // the failed attempt's tiles may still be read
    }
    load_tiles(system, rhs, d, tiles, raise, l);
    ok = factor_tiles(l, d, tiles, inverse, &failed);
    if (ok) {
      if (threadIdx.x < 32) {
        const bool finite = solve_backward(l, d, tiles, x);
        if (threadIdx.x == 0) failed = !finite;
      }
      __syncthreads();
      ok = !failed;
    }
  }
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    float* out = s.solved + row * s.stride;
    for (int t = lane; t < s.rank; t += 32) out[t] = ok ? x[t] : 0.0f;
    if (s.solved_bias && lane == 0) s.solved_bias[row] = ok ? x[s.rank] : 0.0f;
  }
}

}  // namespace

bool als_cholesky_on_tensor_cores(int64_t d) { return (d + 1 + kTile - 1) / kTile <= kMaxTiles; }

bool launch_als_cholesky_solve_mma(const AlsHalfSweep& s, const AlsBatch& batch, const float* a,
                                   const float* b, int max_shared_bytes, cudaStream_t stream) {
  if (!als_cholesky_on_tensor_cores(s.d)) return false;
  const int64_t tiles = (s.d + 1 + kTile - 1) / kTile;
  const int64_t shared =
      (tile_count(static_cast<int>(tiles)) * int64_t{kTileFloats} + kTile * tiles) *
      int64_t{sizeof(float)};
  // The normal equations left A's upper triangle unwritten for this kernel: no fallback. Every
  // device the library is built for (sm_90 and later) has the shared memory.
  SFAC_REQUIRE(shared <= max_shared_bytes, SFAC_ERR_UNSUPPORTED, "the ALS Cholesky kernel needs ",
               shared, " bytes of shared memory per block; this device offers ",
               max_shared_bytes);
  SFAC_CUDA_TRY(cudaFuncSetAttribute(cholesky_mma_kernel,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(shared)));
  cholesky_mma_kernel<<<static_cast<unsigned>(batch.row_end - batch.row_begin), kThreads,
                        static_cast<size_t>(shared), stream>>>(s, batch, a, b);
  SFAC_CUDA_CHECK_LAUNCH();
  return true;
}

}  // namespace sfac::cuda::kernels
