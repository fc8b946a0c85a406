// Batched Cholesky solves of the ALS normal equations with the O(d^3) part on tensor cores:
// one thread block (4 warps, 8 for the largest systems) per system, the lower triangle of A held
// in shared memory as 16 x 16 tiles and b beside it, factored right-looking a block column at
// a time:
//   1. one warp factors the diagonal tile in registers (a lane per row; each finished column
//      reaches the other lanes through shared memory; no block barrier);
//   2. a thread per row below solves its 16 entries of the block column against that tile, and
//      one more thread does the same for b's 16 entries of the block (forward substitution);
//   3. the warps update the trailing tiles, A_IJ -= L_IK L_JK^T, with 3xTF32 mma (fp32
//      accuracy, common/mma_tf32.cuh), and threads the rest of b, b_I -= L_IK z_K.
// Rows past d are zero and their pivots are taken as 1. b comes out as z = L^-1 b; one warp then
// does the backward substitution. A system that is not positive definite, or whose solution is
// not finite, is reloaded with its diagonal raised and solved again, as in als_cholesky.cu.
//
// The tiles are those the normal equations wrote (als_system_tiles.cuh), copied unchanged.
#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/kernels/als/als_kernels.cuh"
#include "cuda/kernels/als/als_system_tiles.cuh"
#include "cuda/kernels/als/als_triangle_blocks.cuh"
#include "cuda/kernels/common/cp_async.cuh"
#include "cuda/kernels/common/mma_tf32.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kTile = kAlsTile;
constexpr int kTileFloats = kAlsTileFloats;
constexpr int kMaxTiles = 17;  // block rows: d up to 272 (about 160 KB of tiles)
constexpr int kWideTiles = 12;  // from this many block rows on, 8 warps a system

__host__ __device__ constexpr int tile_count(int tiles) { return tiles * (tiles + 1) / 2; }

__device__ __forceinline__ int chunk_key(int r) { return als_tile_chunk_key(r); }
__device__ __forceinline__ int at(int r, int c) { return als_tile_offset(r, c); }
__device__ __forceinline__ float* tile(float* l, int bi, int bj) {
  return l + als_tile_start(bi, bj);
}

// The 16 entries of a row whose chunks are permuted by `key`, into / out of registers.
__device__ inline void load_row(const float* row, int key, float v[kTile]) {
#pragma unroll
  for (int c = 0; c < kTile; c += 4) {
    const float4 q = *reinterpret_cast<const float4*>(row + (((c >> 2) ^ key) << 2));
    v[c] = q.x, v[c + 1] = q.y, v[c + 2] = q.z, v[c + 3] = q.w;
  }
}
__device__ inline void store_row(float* row, int key, const float v[kTile]) {
#pragma unroll
  for (int c = 0; c < kTile; c += 4) {
    *reinterpret_cast<float4*>(row + (((c >> 2) ^ key) << 2)) =
        make_float4(v[c], v[c + 1], v[c + 2], v[c + 3]);
  }
}

// The tiles of A (as the normal equations wrote them) and b (zero-padded to the tiles) into
// shared memory, by 16-byte cp.async: every load in flight at once; the diagonal raised by
// `raise`.
__device__ void load_tiles(const float* a, const float* b, int d, int tiles, float raise, float* l,
                           float* z) {
  const int chunks = tile_count(tiles) * kTileFloats / 4;
  for (int q = threadIdx.x; q < chunks; q += blockDim.x) {
    detail::cp_async16(l + 4 * q, a + 4 * q, true);
  }
  detail::cp_async_commit();
  for (int j = threadIdx.x; j < kTile * tiles; j += blockDim.x) z[j] = j < d ? b[j] : 0.0f;
  detail::cp_async_wait<0>();
  __syncthreads();
  if (raise != 0.0f) {
    for (int i = threadIdx.x; i < d; i += blockDim.x) {
      tile(l, i / kTile, i / kTile)[at(i % kTile, i % kTile)] += raise;
    }
    __syncthreads();
  }
}

// Step 1: the diagonal tile of block column k by warp 0, lane r holding row r. Pivots of
// columns at and past d are 1. Writes L_kk's strictly lower part over the tile and 1 / pivot on
// its diagonal (L_kk's own diagonal is never read again); sets *failed at a pivot that is not
// positive. `scratch`: 32 floats.
__device__ void factor_diagonal(float* diag, int k, int d, float* scratch, int* failed) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int r = lane % kTile;
  float row[kTile];
  load_row(diag + r * kTile, chunk_key(r), row);
  bool ok = true;
#pragma unroll
  for (int j = 0; j < kTile; ++j) {
    const float pivot = __shfl_sync(0xffffffffu, row[j], j);
    float inv = 1.0f;
    if (kTile * k + j < d) {
      ok = ok && pivot > 0.0f && isfinite(pivot);
      if (ok) inv = rsqrtf(pivot);
    }
    if (r > j) row[j] *= inv;
    if (r == j) row[j] = inv;
    // Column j to every lane through shared memory (two buffers alternating, so one
    // __syncwarp a column orders both the writes before the reads and the reads before the
    // buffer's next writes): a store and up to four broadcast loads instead of 15 - j shuffles.
    float* column = scratch + kTile * (j & 1);
    if (lane < kTile) column[r] = row[j];
    __syncwarp();
#pragma unroll
    for (int q = (j + 1) / 4; q < kTile / 4; ++q) {
      const float4 v = *reinterpret_cast<const float4*>(column + 4 * q);
      const float below[4] = {v.x, v.y, v.z, v.w};  // L[4q + u][j]
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int c = 4 * q + u;
        if (c > j && r >= c) row[c] = fmaf(-row[j], below[u], row[c]);
      }
    }
  }
  __syncwarp();  // lanes 16-31 read the rows that lanes 0-15 now write
  // The entries right of the diagonal go back as they came: W's place (store_inverse_row).
  if (lane < kTile) store_row(diag + r * kTile, chunk_key(r), row);
  if (!ok && lane == 0) *failed = 1;
}

// Step 2's arithmetic: x = x L_kk^-T in registers, x_j = (x_j - sum_{m<j} x_m L_jm) / L_jj, row
// j of L_kk read from the diagonal tile (1 / L_jj on its diagonal). The full chunks left of the
// diagonal's are read 16 bytes at a time; the diagonal's chunk entry by entry up to the
// diagonal, since right of it lies W's row j, which store_inverse_row may be writing. The sums
// run in the order of the right-looking form (x_j gets x_0 L_j0 first).
__device__ __forceinline__ void solve_against_diagonal(float (&x)[kTile], const float* diag) {
  // Keeps the compiler from hoisting the tile's reads out of the caller's loop over rows into
  // registers (and spilling them).
  asm volatile("" ::: "memory");
#pragma unroll
  for (int j = 0; j < kTile; ++j) {
    float v = x[j];
#pragma unroll
    for (int q = 0; q < j / 4; ++q) {
      const float4 l =
          *reinterpret_cast<const float4*>(diag + j * kTile + ((q ^ chunk_key(j)) << 2));
      v = fmaf(-x[4 * q], l.x, v);
      v = fmaf(-x[4 * q + 1], l.y, v);
      v = fmaf(-x[4 * q + 2], l.z, v);
      v = fmaf(-x[4 * q + 3], l.w, v);
    }
#pragma unroll
    for (int m = j / 4 * 4; m < j; ++m) v = fmaf(-x[m], diag[at(j, m)], v);
    x[j] = v * diag[at(j, j)];
  }
}

// Step 2: a row of 16 entries (chunks permuted by `key`) below the diagonal, x = a L_kk^-T, in
// place; for b's block, z_k = L_kk^-1 b_k.
__device__ __forceinline__ void solve_panel_row(float* a_row, int key, const float* diag) {
  float x[kTile];
  load_row(a_row, key, x);
  solve_against_diagonal(x, diag);
  store_row(a_row, key, x);
}

// Also step 2: row c of W = L_kk^-T (upper triangular), e_c L_kk^-T, into the diagonal tile's
// upper part right of its diagonal, which the factorization no longer uses; W's diagonal is
// the tile's diagonal (1 / L_cc). The backward substitution then multiplies by W instead of solving
// the triangle one unknown after another.
__device__ __forceinline__ void store_inverse_row(float* diag, int c) {
  float x[kTile];
#pragma unroll
  for (int j = 0; j < kTile; ++j) x[j] = j == c ? 1.0f : 0.0f;
  solve_against_diagonal(x, diag);
#pragma unroll
  for (int m = 0; m < kTile; ++m) {
    if (m > c) diag[at(c, m)] = x[m];
  }
}

// Step 3, the left operand: L_ik negated (the products are subtracted) and split for 3xTF32,
// as the fragments of its two 8-column halves.
struct PanelFragment {
  uint32_t big[2][4], small[2][4];
};

__device__ __forceinline__ void load_panel_fragment(const float* l_ik, PanelFragment* f) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int ks = 0; ks < 2; ++ks) {
    const int col = 8 * ks + t;
    const float left[4] = {-l_ik[at(g, col)], -l_ik[at(g + 8, col)], -l_ik[at(g, col + 4)],
                           -l_ik[at(g + 8, col + 4)]};
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      const detail::SplitTf32 v = detail::split_tf32(left[p]);
      f->big[ks][p] = v.big;
      f->small[ks][p] = v.small;
    }
  }
}

// Step 3: C -= L_ik L_jk^T for one 16 x 16 tile, by one warp (`left` holds L_ik).
__device__ __forceinline__ void update_tile(float* c_tile, const PanelFragment& left, const float* l_jk) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane >> 2, t = lane & 3;
  float acc[2][4];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float2 top = *reinterpret_cast<const float2*>(c_tile + at(g, 8 * h + 2 * t));
    const float2 bottom = *reinterpret_cast<const float2*>(c_tile + at(g + 8, 8 * h + 2 * t));
    acc[h][0] = top.x, acc[h][1] = top.y, acc[h][2] = bottom.x, acc[h][3] = bottom.y;
  }
#pragma unroll
  for (int ks = 0; ks < 2; ++ks) {
    const int col = 8 * ks + t;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // Column n of L_jk^T is row n of L_jk.
      const int n = g + 8 * h;
      const detail::SplitTf32 y0 = detail::split_tf32(l_jk[at(n, col)]);
      const detail::SplitTf32 y1 = detail::split_tf32(l_jk[at(n, col + 4)]);
      const uint32_t b_big[2] = {y0.big, y1.big}, b_small[2] = {y0.small, y1.small};
      detail::mma_3xtf32(acc[h], left.big[ks], left.small[ks], b_big, b_small);
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    *reinterpret_cast<float2*>(c_tile + at(g, 8 * h + 2 * t)) = make_float2(acc[h][0], acc[h][1]);
    *reinterpret_cast<float2*>(c_tile + at(g + 8, 8 * h + 2 * t)) =
        make_float2(acc[h][2], acc[h][3]);
  }
}

// Step 3 for the tiles of block column k + 1 below block row k (rows k + 1 + i, i = first,
// first + step, ...): each warp its own tiles, C -= L_ik L_(k+1)k^T.
__device__ inline void update_next_column(float* l, int k, int tiles, int first, int step) {
  for (int i = first; i < tiles - k - 1; i += step) {
    PanelFragment left;
    load_panel_fragment(tile(l, k + 1 + i, k), &left);
    update_tile(tile(l, k + 1 + i, k + 1), left, tile(l, k + 1, k));
  }
}

// Step 3 for the trailing tiles right of block column k + 1 (rows and columns from k + 2), a
// run of consecutive ones per warp (`warp` of `warps`), row by row, so that tiles of one row
// share their left operand.
__device__ inline void update_trailing(float* l, int k, int tiles, int warp, int warps) {
  const int rest = tiles - k - 2;
  if (rest <= 0) return;
  const int q0 = warp * tile_count(rest) / warps, q1 = (warp + 1) * tile_count(rest) / warps;
  if (q0 >= q1) return;
  int bi, bj;
  lower_block(q0, &bi, &bj);
  PanelFragment left;
  load_panel_fragment(tile(l, k + 2 + bi, k), &left);
  for (int q = q0; q < q1; ++q) {
    update_tile(tile(l, k + 2 + bi, k + 2 + bj), left, tile(l, k + 2 + bj, k));
    if (++bj > bi && q + 1 < q1) {
      ++bi;
      bj = 0;
      load_panel_fragment(tile(l, k + 2 + bi, k), &left);
    }
  }
}

// Factors the tiles in place and turns z into L^-1 b; false (in every thread) at a pivot that
// is not positive. `scratch`: 32 floats; `failed`: a shared int. With look-ahead: once block column
// k is done, the warps first update block column k + 1 alone; then warp 0 factors its diagonal tile
// while the other warps update the tiles right of it, so the one-warp step overlaps the bulk of the
// updates instead of idling them.
__device__ bool factor_tiles(float* l, float* z, int d, int tiles, float* scratch, int* failed) {
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int warps = static_cast<int>(blockDim.x) / 32;
  if (threadIdx.x == 0) *failed = 0;
  if (warp == 0) factor_diagonal(tile(l, 0, 0), 0, d, scratch, failed);
  __syncthreads();
  for (int k = 0; k < tiles; ++k) {
    if (*failed) return false;
    // Block column k below its diagonal tile, and z_k.
    const int below = kTile * (tiles - k - 1);
    // Row 15 of W has nothing right of its diagonal: 15 rows of W.
    for (int p = threadIdx.x; p < below + kTile; p += blockDim.x) {
      const float* diag = tile(l, k, k);
      if (p < below) {
        const int r = p % kTile;
        solve_panel_row(tile(l, k + 1 + p / kTile, k) + r * kTile, chunk_key(r), diag);
      } else if (p == below) {
        solve_panel_row(z + kTile * k, 0, diag);
      } else {
        store_inverse_row(tile(l, k, k), p - below - 1);
      }
    }
    __syncthreads();
    if (k + 1 == tiles) break;
    // b below the block: b_i -= L_i,k z_k (reads block column k and z_k; the tile updates
    // below neither read z nor write block column k).
    for (int p = threadIdx.x; p < below; p += blockDim.x) {
      const int r = p % kTile;
      float row[kTile];
      load_row(tile(l, k + 1 + p / kTile, k) + r * kTile, chunk_key(r), row);
      float sum = 0.0f;
#pragma unroll
      for (int c = 0; c < kTile; ++c) sum = fmaf(row[c], z[kTile * k + c], sum);
      z[kTile * (k + 1) + p] -= sum;
    }
    update_next_column(l, k, tiles, warp, warps);
    __syncthreads();
    if (warp == 0) {
      factor_diagonal(tile(l, k + 1, k + 1), k + 1, d, scratch, failed);
    } else {
      update_trailing(l, k, tiles, warp - 1, warps - 1);
    }
    __syncthreads();
  }
  // Only the break above leaves the loop, after the last pivot check. (Reading `failed` here
  // would race with the backward solve's write of it.)
  return true;
}

// L^T x = z by warp 0, a block of 16 unknowns at a time from the last: lanes c and c + 16 take
// the dots of column 16k + c of the tiles below with the finished unknowns (half the rows
// each), then lane c multiplies the block's residual by row c of W = L_kk^-T (kept by step 2,
// its diagonal on the tile's). x overwrites z, a block once its z is read.
// Returns whether every unknown is finite (in every lane).
__device__ bool solve_backward(float* l, float* x, int d, int tiles) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int c = lane % kTile, half = lane / kTile;
  for (int k = tiles - 1; k >= 0; --k) {
    const int j = kTile * k + c;
    // Entries and unknowns past d are zero.
    float acc = 0.0f;
    for (int bi = k + 1; bi < tiles; ++bi) {
      const float* below = tile(l, bi, k);
      const float* xb = x + kTile * bi;
#pragma unroll
      for (int r = 0; r < kTile; r += 2) acc = fmaf(below[at(r + half, c)], xb[r + half], acc);
    }
    acc += __shfl_xor_sync(0xffffffffu, acc, kTile);
    // Unknowns at and past d stay 0 (their right-hand sides are 0).
    const float r = j < d ? x[j] - acc : 0.0f;
    const float* diag = tile(l, k, k);
    float v = 0.0f;
#pragma unroll
    for (int m = 0; m < kTile; ++m) {
      const float rm = __shfl_sync(0xffffffffu, r, m);
      if (m > c) v = fmaf(diag[at(c, m)], rm, v);
      if (m == c) v = fmaf(diag[at(c, c)], rm, v);
    }
    __syncwarp();  // lanes c + 16 read x[j], still z_j, above
    if (lane < kTile) x[j] = v;
    __syncwarp();
  }
  bool finite = true;
  for (int j = lane; j < d; j += 32) finite = finite && isfinite(x[j]);
  return __all_sync(0xffffffffu, finite);
}

// kThreads: 128, or 256 for kWideTiles block rows and more. The register bound lets the
// smaller systems keep 7 blocks an SM, as many as their tiles' shared memory allows.
template <int kThreads>
__global__ void __launch_bounds__(kThreads, kThreads == 128 ? 7 : 2)
    cholesky_mma_kernel(AlsHalfSweep s, AlsBatch batch, const float* a, const float* b) {
  extern __shared__ __align__(16) float smem[];
  __shared__ __align__(16) float scratch[2 * kTile];
  __shared__ int failed;
  const int d = static_cast<int>(s.d);
  const int tiles = (d + kTile - 1) / kTile;
  const int64_t row = batch.row_begin + blockIdx.x;
  const int64_t local = s.first_segment[row] - batch.segment_base;  // the row's system
  const int64_t count = s.offsets[row + 1] - s.offsets[row];
  if (count == 0) {
    als_zero_row(s, row);
    return;
  }
  float* l = smem;
  float* z = smem + tile_count(tiles) * kTileFloats;  // b, then L^-1 b, then the solution
  const float* system = a + local * int64_t{kTileFloats} * tile_count(tiles);
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
      for (int t = 0; t < d; ++t) {
        trace += system[als_tile_start(t / kTile, t / kTile) + at(t % kTile, t % kTile)] - reg;
      }
      raise = 1e-6f * fmaxf(trace / static_cast<float>(d), 1.0f);
      __syncthreads();  // the failed attempt's tiles may still be read
    }
    load_tiles(system, rhs, d, tiles, raise, l, z);
    ok = factor_tiles(l, z, d, tiles, scratch, &failed);
    if (ok) {
      if (threadIdx.x < 32) {
        const bool finite = solve_backward(l, z, d, tiles);
        if (threadIdx.x == 0) failed = !finite;
      }
      __syncthreads();
      ok = !failed;
    }
  }
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    float* out = s.solved + row * s.stride;
    for (int t = lane; t < s.rank; t += 32) out[t] = ok ? z[t] : 0.0f;
    if (s.solved_bias && lane == 0) s.solved_bias[row] = ok ? z[s.rank] : 0.0f;
  }
}

}  // namespace

bool als_cholesky_on_tensor_cores(int64_t d) { return als_tile_rows(d) <= kMaxTiles; }

int64_t als_system_floats(int64_t d) {
  return als_cholesky_on_tensor_cores(d) ? als_tile_count(als_tile_rows(d)) * kTileFloats : d * d;
}

bool launch_als_cholesky_solve_mma(const AlsHalfSweep& s, const AlsBatch& batch, const float* a,
                                   const float* b, int max_shared_bytes, cudaStream_t stream) {
  if (!als_cholesky_on_tensor_cores(s.d)) return false;
  const int tiles = static_cast<int>((s.d + kTile - 1) / kTile);
  // The tiles, then z.
  const int64_t shared =
      (tile_count(tiles) * int64_t{kTileFloats} + kTile * tiles) * int64_t{sizeof(float)};
  // The normal equations wrote A's tiles for this kernel: no fallback. Every
  // device the library is built for (sm_90 and later) has the shared memory.
  SFAC_REQUIRE(shared <= max_shared_bytes, SFAC_ERR_UNSUPPORTED, "the ALS Cholesky kernel needs ",
               shared, " bytes of shared memory per block; this device offers ",
               max_shared_bytes);
  auto kernel = tiles >= kWideTiles ? cholesky_mma_kernel<256> : cholesky_mma_kernel<128>;
  SFAC_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(shared)));
  SFAC_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                     cudaSharedmemCarveoutMaxShared));
  kernel<<<static_cast<unsigned>(batch.row_end - batch.row_begin), tiles >= kWideTiles ? 256 : 128,
           static_cast<size_t>(shared), stream>>>(s, batch, a, b);
  SFAC_CUDA_CHECK_LAUNCH();
  return true;
}

}  // namespace sfac::cuda::kernels
