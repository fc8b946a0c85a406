// The training objective, prediction errors and the finiteness check, on the device: one warp
// per row, fp64 sums, one partial per block (a fixed grid, so the same data always sums in the
// same order) that the host adds up.
#include "cuda/cuda_check.h"
#include "cuda/kernels/als/als_kernels.cuh"
#include "cuda/kernels/common/block_partial.cuh"
#include "cuda/kernels/common/grid_stride.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kBlocks = 1024;

__device__ double warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ double dot(const float* x, const float* y, int64_t rank, int lane) {
  double v = 0.0;
  for (int64_t t = lane; t < rank; t += 32) v += double{x[t]} * y[t];
  return warp_sum(v);
}

__global__ void __launch_bounds__(kThreads) user_objective_kernel(AlsHalfSweep s, double* partials) {
  __shared__ double scratch[kWarps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  double data = 0.0, reg = 0.0;
  for (int64_t u = blockIdx.x * int64_t{kWarps} + warp; u < s.rows;
       u += int64_t{gridDim.x} * kWarps) {
    const float* x = s.solved + u * s.stride;
    const int64_t begin = s.offsets[u], end = s.offsets[u + 1];
    for (int64_t e = begin; e < end; ++e) {
      const int32_t i = s.others[e];
      double d = dot(x, s.fixed + int64_t{i} * s.stride, s.rank, lane);
      const double r = s.values[e];
      if (s.implicit) {
        const double c = 1.0 + double{s.alpha} * r, p = r > 0 ? 1.0 : 0.0;
        data += c * (p - d) * (p - d) - d * d;
      } else {
        if (s.solved_bias) d += double{s.global_mean} + s.solved_bias[u] + s.fixed_bias[i];
        data += (r - d) * (r - d);
      }
    }
    double norm = dot(x, x, s.rank, lane);
    if (s.solved_bias) norm += double{s.solved_bias[u]} * s.solved_bias[u];
    reg += double{als_regularization(s, end - begin)} * norm;
  }
  // Every lane holds the warp's sums.
  block_partial<kWarps>(data, scratch, partials, 0, 2);
  block_partial<kWarps>(reg, scratch, partials, 1, 2);
}

__global__ void __launch_bounds__(kThreads) side_regularization_kernel(AlsHalfSweep s,
                                                                        double* partials) {
  __shared__ double scratch[kWarps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  double reg = 0.0;
  for (int64_t i = blockIdx.x * int64_t{kWarps} + warp; i < s.rows;
       i += int64_t{gridDim.x} * kWarps) {
    const float* y = s.solved + i * s.stride;
    double norm = dot(y, y, s.rank, lane);
    if (s.solved_bias) norm += double{s.solved_bias[i]} * s.solved_bias[i];
    reg += double{als_regularization(s, s.offsets[i + 1] - s.offsets[i])} * norm;
  }
  block_partial<kWarps>(reg, scratch, partials, 0, 1);
}

__global__ void __launch_bounds__(kThreads)
    all_cells_kernel(const float* factors, int64_t users, int64_t stride, int64_t rank,
                     const float* gram, double* partials) {
  __shared__ double scratch[kWarps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  double sum = 0.0;
  for (int64_t u = blockIdx.x * int64_t{kWarps} + warp; u < users;
       u += int64_t{gridDim.x} * kWarps) {
    const float* x = factors + u * stride;
    double v = 0.0;
    for (int64_t a = lane; a < rank; a += 32) {
      double row = 0.0;
      for (int64_t b = 0; b < rank; ++b) row += double{gram[a * rank + b]} * x[b];
      v += row * x[a];
    }
    sum += warp_sum(v);
  }
  block_partial<kWarps>(sum, scratch, partials, 0, 1);
}

__global__ void __launch_bounds__(kThreads)
    prediction_errors_kernel(PredictionSides m, const int64_t* offsets, const int32_t* cols,
                             const float* values, int64_t rows, double* partials) {
  __shared__ double scratch[kWarps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  double sq = 0.0, abs_sum = 0.0;
  for (int64_t u = blockIdx.x * int64_t{kWarps} + warp; u < rows;
       u += int64_t{gridDim.x} * kWarps) {
    const float* x = m.user_factors + u * m.stride;
    // A lane per rating, each prediction computed as Model::predict computes it on the host
    // (sequential float products and sums, no fused multiply-add), so the device's error is
    // the host's to the last bit of each prediction.
    for (int64_t e = offsets[u] + lane; e < offsets[u + 1]; e += 32) {
      const int32_t i = cols[e];
      const float* y = m.item_factors + int64_t{i} * m.stride;
      float p = 0.0f;
      for (int64_t t = 0; t < m.rank; ++t) p = __fadd_rn(p, __fmul_rn(x[t], y[t]));
      if (m.user_bias) {
        p = __fadd_rn(p, __fadd_rn(__fadd_rn(m.global_mean, m.user_bias[u]), m.item_bias[i]));
      }
      const double err = double{values[e]} - p;
      sq += err * err;
      abs_sum += fabs(err);
    }
  }
  sq = warp_sum(sq);
  abs_sum = warp_sum(abs_sum);
  block_partial<kWarps>(sq, scratch, partials, 0, 2);
  block_partial<kWarps>(abs_sum, scratch, partials, 1, 2);
}

// One warp a row, a lane a column.
__global__ void flag_non_finite_kernel(const float* factors, int64_t n, int64_t stride,
                                       int64_t cols, const float* bias, int* flag) {
  bool bad = false;
  for_each_warp_index(n, [&](int64_t row, int lane) {
    for (int64_t col = lane; col < cols; col += 32) {
      if (!isfinite(factors[row * stride + col])) bad = true;
    }
    if (bias && lane == 0 && !isfinite(bias[row])) bad = true;
  });
  if (bad) *flag = 1;
}

}  // namespace

int als_objective_blocks() { return kBlocks; }

void launch_als_user_objective(const AlsHalfSweep& users, double* partials, cudaStream_t stream) {
  user_objective_kernel<<<kBlocks, kThreads, 0, stream>>>(users, partials);
  SFAC_CUDA_CHECK_LAUNCH();
}

void launch_als_side_regularization(const AlsHalfSweep& items, double* partials,
                                    cudaStream_t stream) {
  side_regularization_kernel<<<kBlocks, kThreads, 0, stream>>>(items, partials);
  SFAC_CUDA_CHECK_LAUNCH();
}

void launch_als_all_cells(const float* user_factors, int64_t users, int64_t stride, int64_t rank,
                          const float* gram, double* partials, cudaStream_t stream) {
  all_cells_kernel<<<kBlocks, kThreads, 0, stream>>>(user_factors, users, stride, rank, gram,
                                                     partials);
  SFAC_CUDA_CHECK_LAUNCH();
}

void launch_prediction_errors(const PredictionSides& model, const int64_t* offsets,
                              const int32_t* cols, const float* values, int64_t rows,
                              double* partials, cudaStream_t stream) {
  prediction_errors_kernel<<<kBlocks, kThreads, 0, stream>>>(model, offsets, cols, values, rows,
                                                             partials);
  SFAC_CUDA_CHECK_LAUNCH();
}

void launch_flag_non_finite(const float* factors, int64_t n, int64_t stride, int64_t cols,
                            const float* bias, int* flag, cudaStream_t stream) {
  if (n <= 0) return;
  flag_non_finite_kernel<<<blocks_for(n * 32), 256, 0, stream>>>(factors, n, stride, cols, bias,
                                                                 flag);
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
