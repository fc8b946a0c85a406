// Batched Cholesky solves of the ALS normal equations for systems whose packed triangle fits
// shared memory: one thread block per system, one thread per row. The lower triangle of
// [A; b^T] is packed column by column (column k holds rows k..d, row d being b), and factored
// left-looking, a panel of columns at a time (see factor_augmented), consecutive threads
// reading consecutive words. Row d, b, comes out as L^-1 b, so the
// forward substitution is free; one warp then does the backward one. A system that is not
// positive definite is reloaded with its diagonal raised and factored again, as in
// als_cholesky.cu.
#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/kernels/als/als_kernels.cuh"

namespace sfac::cuda::kernels {
namespace {

// Offset of column k in the packed lower triangle of an n x n matrix.
__device__ inline int column_start(int k, int n) { return k * n - k * (k - 1) / 2; }

// Packs the lower triangle of [A; b^T] (n = d + 1 rows), reading A along its rows' upper part
// (the same values, coalesced), the diagonal raised by `raise`.
__device__ void load_augmented(const float* a, const float* b, int d, float raise, float* l) {
  const int n = d + 1;
  for (int k = 0; k < d; ++k) {
    float* column = l + column_start(k, n) - k;
    for (int i = k + threadIdx.x; i < n; i += blockDim.x) {
      column[i] = i == d ? b[k] : a[int64_t{k} * d + i] + (i == k ? raise : 0.0f);
    }
  }
  __syncthreads();
}

constexpr int kPanel = 4;  // columns factored per pass over the finished ones

// Left-looking Cholesky of the packed [A; b^T] in place, kPanel columns at a time; false (in
// every thread) at a pivot that is not positive. For a panel of columns j0.., thread t works on
// row i = j0 + t (the block has a thread per row): one pass over the finished columns k < j0
// gives the dots of row i with all the panel's rows (each L[i][k] read once for kPanel
// multiply-adds), then the panel's columns are finished one by one with one barrier each, the
// corrections from the panel's earlier columns held in registers. `pivots`: kPanel floats.
__device__ bool factor_augmented(float* l, int d, float* pivots) {
  const int n = d + 1;
  for (int j0 = 0; j0 < d; j0 += kPanel) {
    const int width = min(kPanel, d - j0);
    const int t = static_cast<int>(threadIdx.x), i = j0 + t;
    float dot[kPanel] = {};
    if (i < n) {
      // Column k's base (its start less k) moves by n - k - 1 from one column to the next.
      int rows[kPanel];
#pragma unroll
      for (int m = 0; m < kPanel; ++m) rows[m] = min(j0 + m, d);
      const float* c = l;
      for (int k = 0; k < j0; ++k) {
        const float x = c[i];
#pragma unroll
        for (int m = 0; m < kPanel; ++m) dot[m] = fmaf(x, c[rows[m]], dot[m]);
        c += n - k - 1;
      }
    }
    float own[kPanel];  // L[i][j0 + m], once computed
#pragma unroll
    for (int m = 0; m < kPanel; ++m) {
      if (m >= width) break;
      float* column = l + column_start(j0 + m, n) - (j0 + m);  // column[r] = L[r][j0 + m]
      if (t == m) {
        float pivot = column[i] - dot[m];
#pragma unroll
        for (int q = 0; q < m; ++q) pivot = fmaf(-own[q], own[q], pivot);
        pivots[m] = pivot > 0.0f && isfinite(pivot) ? sqrtf(pivot) : -1.0f;
      }
      __syncthreads();
      const float s = pivots[m];
      if (!(s > 0.0f)) return false;
      if (t == m) column[i] = s;
      if (t > m && i < n) {
        float v = column[i] - dot[m];
#pragma unroll
        for (int q = 0; q < m; ++q) {
          const float* earlier = l + column_start(j0 + q, n) - (j0 + q);
          v = fmaf(-own[q], earlier[j0 + m], v);
        }
        own[m] = v / s;
        column[i] = own[m];
      }
    }
    __syncthreads();
  }
  return true;
}

__global__ void cholesky_packed_kernel(AlsHalfSweep s, AlsBatch batch, const float* a,
                                       const float* b) {
  extern __shared__ __align__(16) float smem[];
  const int d = static_cast<int>(s.d), n = d + 1;
  const int64_t row = batch.row_begin + blockIdx.x;
  const int64_t local = s.first_segment[row] - batch.segment_base;  // the row's system
  const int64_t count = s.offsets[row + 1] - s.offsets[row];
  float* out = s.solved + row * s.stride;
  if (count == 0) {
    als_zero_row(s, row);
    return;
  }
  float* l = smem;
  float* x = smem + n * (n + 1) / 2;
  const float* system = a + local * d * d;
  const float* rhs = b + local * d;
  load_augmented(system, rhs, d, 0.0f, l);
  bool ok = factor_augmented(l, d, x);
  if (!ok) {
    // Not positive definite: the CPU trainer's retry, A + 1e-6 max(trace(A - reg I) / d, 1) I.
    const float reg = als_regularization(s, count);
    float trace = 0.0f;
    for (int t = 0; t < d; ++t) trace += system[int64_t{t} * d + t] - reg;
    __syncthreads();
    load_augmented(system, rhs, d, 1e-6f * fmaxf(trace / static_cast<float>(d), 1.0f), l);
    ok = factor_augmented(l, d, x);
  }
  __syncthreads();  // a failed factorization returns with the pivots in x still being read
  if (threadIdx.x < 32) {
    // L^T x = z, z = L^-1 b in row d: one warp, a dot product per unknown.
    const int lane = threadIdx.x;
    for (int j = d - 1; j >= 0; --j) {
      const float* column_j = l + column_start(j, n) - j;
      float acc = 0.0f;
      for (int i = j + 1 + lane; i < d; i += 32) acc = fmaf(column_j[i], x[i], acc);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
      if (lane == 0) x[j] = ok ? (column_j[d] - acc) / column_j[j] : 0.0f;
      __syncwarp();
    }
    for (int t = lane; t < s.rank; t += 32) out[t] = x[t];
    if (s.solved_bias && lane == 0) s.solved_bias[row] = x[s.rank];
  }
}

}  // namespace

bool launch_als_cholesky_solve_packed(const AlsHalfSweep& s, const AlsBatch& batch,
                                      const float* a, const float* b, int max_shared_bytes,
                                      cudaStream_t stream) {
  const int64_t n = s.d + 1;
  const int64_t shared = (n * (n + 1) / 2 + s.d) * int64_t{sizeof(float)};
  // A thread per row: n <= 1024, far above what fits shared memory.
  if (shared > max_shared_bytes || n > 1024) return false;
  const int threads = static_cast<int>((n + 31) / 32 * 32);
  SFAC_CUDA_TRY(cudaFuncSetAttribute(cholesky_packed_kernel,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(shared)));
  cholesky_packed_kernel<<<static_cast<unsigned>(batch.row_end - batch.row_begin), threads,
                           static_cast<int>(shared), stream>>>(s, batch, a, b);
  SFAC_CUDA_CHECK_LAUNCH();
  return true;
}

}  // namespace sfac::cuda::kernels
