// Conjugate gradient on the ALS normal equations, one thread block per row, never forming the
// matrix: A v = (G + reg I) v + sum_j w_j (y_j . v) y_j, the sparse part one warp per rating
// (a shuffle-reduced dot, then an axpy into the warp's own partial vector), the partials summed
// in a fixed order so that results do not depend on scheduling. Same iteration as the CPU
// trainer's RowSolver::solve_cg. A row cannot be split between blocks (every step needs all of
// A p), so long rows get blocks of 16 warps and go first, longest first, where they would
// otherwise finish long after the rest of the grid.
#include "cuda/cuda_check.h"
#include "cuda/kernels/als/als_kernels.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kShortWarps = 4, kLongWarps = 16;

__device__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The sum of v over the block, in every thread.
template <int kWarps>
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

template <int kWarps>
__device__ float block_dot(const float* x, const float* y, int64_t d, float* scratch) {
  float v = 0.0f;
  for (int64_t t = threadIdx.x; t < d; t += kWarps * 32) v = fmaf(x[t], y[t], v);
  return block_sum<kWarps>(v, scratch);
}

// out = sign * ((G + reg I) v) + (residual ? sum_j (c_j - w_j y_j.v) y_j : sum_j w_j (y_j.v) y_j)
template <int kWarps>
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
  for (int64_t t = threadIdx.x; t < d; t += kWarps * 32) {
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

// Block b solves row rows[b].
template <int kWarps>
__global__ void __launch_bounds__(kWarps * 32)
    cg_kernel(AlsHalfSweep s, int64_t steps, const int32_t* rows) {
  constexpr int kThreads = kWarps * 32;
  extern __shared__ __align__(16) float smem[];
  __shared__ float scratch[kWarps];
  const int64_t d = s.d, row = rows[blockIdx.x];
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
  apply<kWarps>(s, begin, end, reg, x, true, r, partial);  // r = b - A x
  for (int64_t t = threadIdx.x; t < d; t += kThreads) p[t] = r[t];
  float rs_old = block_dot<kWarps>(r, r, d, scratch);
  for (int64_t step = 0; step < steps && rs_old > 1e-20f; ++step) {
    apply<kWarps>(s, begin, end, reg, p, false, ap, partial);
    const float p_ap = block_dot<kWarps>(p, ap, d, scratch);
    if (!(p_ap > 0.0f)) break;  // singular direction: keep what we have
    const float alpha = rs_old / p_ap;
    for (int64_t t = threadIdx.x; t < d; t += kThreads) {
      x[t] = fmaf(alpha, p[t], x[t]);
      r[t] = fmaf(-alpha, ap[t], r[t]);
    }
    const float rs_new = block_dot<kWarps>(r, r, d, scratch);
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

template <int kWarps>
void launch(const AlsHalfSweep& s, int64_t cg_steps, const int32_t* rows, int64_t count,
            cudaStream_t stream) {
  if (count <= 0) return;
  const size_t shared = static_cast<size_t>((4 + kWarps) * s.d) * sizeof(float);
  SFAC_CUDA_TRY(cudaFuncSetAttribute(cg_kernel<kWarps>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(shared)));
  cg_kernel<kWarps><<<static_cast<unsigned>(count), kWarps * 32, shared, stream>>>(s, cg_steps,
                                                                                    rows);
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_als_conjugate_gradient(const AlsHalfSweep& s, int64_t cg_steps, const AlsCgRows& rows,
                                   cudaStream_t stream) {
  if (s.rows <= 0) return;
  launch<kLongWarps>(s, cg_steps, rows.long_rows, rows.long_count, stream);
  launch<kShortWarps>(s, cg_steps, rows.short_rows, rows.short_count, stream);
}

}  // namespace sfac::cuda::kernels
