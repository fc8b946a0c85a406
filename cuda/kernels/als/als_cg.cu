// Conjugate gradient on the ALS normal equations, one thread block per row, never forming the
// matrix: A v = (G + reg I) v + sum_j w_j (y_j . v) y_j, the sparse part one warp per rating
// (a shuffle-reduced dot, then an axpy into the warp's own partial vector), the partials summed
// in a fixed order so that results do not depend on scheduling. Same iteration as the CPU
// trainer's RowSolver::solve_cg.
#include "cuda/cuda_check.h"
#include "cuda/kernels/als/als_kernels.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;

__device__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The sum of v over the block, in every thread.
__device__ float block_sum(float v, float* scratch) {
  v = warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) total += scratch[w];
  return total;
}

__device__ float block_dot(const float* x, const float* y, int64_t d, float* scratch) {
  float v = 0.0f;
  for (int64_t t = threadIdx.x; t < d; t += kThreads) v = fmaf(x[t], y[t], v);
  return block_sum(v, scratch);
}

// out = sign * ((G + reg I) v) + (residual ? sum_j (c_j - w_j y_j.v) y_j : sum_j w_j (y_j.v) y_j)
__device__ void apply(const AlsHalfSweep& s, int64_t begin, int64_t end, float reg, const float* v,
                      bool residual, float* out, float* partial) {
  const int64_t d = s.d;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* mine = partial + warp * d;
  for (int64_t t = lane; t < d; t += 32) mine[t] = 0.0f;
  __syncwarp();
  for (int64_t e = begin + warp; e < end; e += kWarps) {
    const int32_t other = s.others[e];
    float w, c;
    als_weight_target(s, s.values[e], other, &w, &c);
    const float* y = s.fixed + int64_t{other} * s.stride;
    float dot = 0.0f;
    for (int64_t t = lane; t < d; t += 32) dot = fmaf(__ldg(y + t), v[t], dot);
    dot = warp_sum(dot);
    const float coef = residual ? c - w * dot : w * dot;
    for (int64_t t = lane; t < d; t += 32) mine[t] = fmaf(coef, __ldg(y + t), mine[t]);
  }
  __syncthreads();
  for (int64_t t = threadIdx.x; t < d; t += kThreads) {
    float dense = reg * v[t];
    if (s.gram) {
      // Row t of G read as column t (G is symmetric): consecutive threads, consecutive words.
      for (int64_t u = 0; u < d; ++u) dense = fmaf(s.gram[u * d + t], v[u], dense);
    }
    float sparse = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sparse += partial[w * d + t];
    out[t] = residual ? sparse - dense : sparse + dense;
  }
  __syncthreads();
}

__global__ void __launch_bounds__(kThreads) cg_kernel(AlsHalfSweep s, int64_t steps) {
  extern __shared__ __align__(16) float smem[];
  __shared__ float scratch[kWarps];
  const int64_t d = s.d, row = blockIdx.x;
  const int64_t begin = s.offsets[row], end = s.offsets[row + 1];
  if (begin == end) {
    als_zero_row(s, row);
    return;
  }
  float* x = smem;
  float* r = x + d;
  float* p = r + d;
  float* ap = p + d;
  float* partial = ap + d;  // kWarps x d
  float* row_x = s.solved + row * s.stride;
  for (int64_t t = threadIdx.x; t < d; t += kThreads) {
    x[t] = t < s.rank ? row_x[t] : s.solved_bias[row];
  }
  __syncthreads();
  const float reg = als_regularization(s, end - begin);
  apply(s, begin, end, reg, x, true, r, partial);  // r = b - A x
  for (int64_t t = threadIdx.x; t < d; t += kThreads) p[t] = r[t];
  float rs_old = block_dot(r, r, d, scratch);
  for (int64_t step = 0; step < steps && rs_old > 1e-20f; ++step) {
    apply(s, begin, end, reg, p, false, ap, partial);
    const float p_ap = block_dot(p, ap, d, scratch);
    if (!(p_ap > 0.0f)) break;  // singular direction: keep what we have
    const float alpha = rs_old / p_ap;
    for (int64_t t = threadIdx.x; t < d; t += kThreads) {
      x[t] = fmaf(alpha, p[t], x[t]);
      r[t] = fmaf(-alpha, ap[t], r[t]);
    }
    const float rs_new = block_dot(r, r, d, scratch);
    const float beta = rs_new / rs_old;
    for (int64_t t = threadIdx.x; t < d; t += kThreads) p[t] = fmaf(beta, p[t], r[t]);
    __syncthreads();
    rs_old = rs_new;
  }
  __syncthreads();
  for (int64_t t = threadIdx.x; t < d; t += kThreads) {
    if (t < s.rank) {
      row_x[t] = x[t];
    } else {
      s.solved_bias[row] = x[t];
    }
  }
}

}  // namespace

void launch_als_conjugate_gradient(const AlsHalfSweep& s, int64_t cg_steps, cudaStream_t stream) {
  if (s.rows <= 0) return;
  const size_t shared = static_cast<size_t>((4 + kWarps) * s.d) * sizeof(float);
  SFAC_CUDA_TRY(cudaFuncSetAttribute(cg_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(shared)));
  cg_kernel<<<static_cast<unsigned>(s.rows), kThreads, shared, stream>>>(s, cg_steps);
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
