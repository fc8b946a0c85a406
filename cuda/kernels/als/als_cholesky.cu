// Batched Cholesky solves of the ALS normal equations: systems whose tiles fit shared memory
// go to als_cholesky_mma.cu, larger ones whose packed triangle fits to
// als_cholesky_packed.cu; larger ones still are factored here, one thread block per system,
// right-looking, in place in global memory (the upper triangle, which the factorization never
// writes, keeps the original for the retry of a system that is not positive definite).
#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/kernels/als/als_kernels.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kThreads = 256;

__device__ inline void triangle_position(int64_t p, int64_t* i, int64_t* j) {
  int64_t r = static_cast<int64_t>((sqrt(8.0 * static_cast<double>(p) + 1.0) - 1.0) * 0.5);
  while ((r + 1) * (r + 2) / 2 <= p) ++r;
  while (r * (r + 1) / 2 > p) --r;
  *i = r;
  *j = p - r * (r + 1) / 2;
}

// Right-looking Cholesky of the lower triangle of m (d x d, row-major): L overwrites it.
// Returns false (the same in every thread) at a pivot that is not positive.
__device__ bool factor(float* m, int64_t d) {
  for (int64_t c = 0; c < d; ++c) {
    __syncthreads();
    const float pivot = m[c * d + c];
    if (!(pivot > 0.0f) || !isfinite(pivot)) return false;
    const float s = sqrtf(pivot), inv = 1.0f / s;
    for (int64_t i = c + 1 + threadIdx.x; i < d; i += blockDim.x) m[i * d + c] *= inv;
    __syncthreads();
    if (threadIdx.x == 0) m[c * d + c] = s;
    const int64_t rest = d - c - 1;
    const int64_t count = rest * (rest + 1) / 2;
    for (int64_t p = threadIdx.x; p < count; p += blockDim.x) {
      int64_t i, j;
      triangle_position(p, &i, &j);
      i += c + 1;
      j += c + 1;
      m[i * d + j] -= m[i * d + c] * m[j * d + c];
    }
  }
  __syncthreads();
  return true;
}

// x = L^-T L^-1 x.
__device__ void solve(const float* l, int64_t d, float* x) {
  for (int64_t c = 0; c < d; ++c) {
    if (threadIdx.x == 0) x[c] /= l[c * d + c];
    __syncthreads();
    for (int64_t i = c + 1 + threadIdx.x; i < d; i += blockDim.x) x[i] -= l[i * d + c] * x[c];
    __syncthreads();
  }
  for (int64_t c = d - 1; c >= 0; --c) {
    if (threadIdx.x == 0) x[c] /= l[c * d + c];
    __syncthreads();
    for (int64_t i = threadIdx.x; i < c; i += blockDim.x) x[i] -= l[c * d + i] * x[c];
    __syncthreads();
  }
}

__global__ void __launch_bounds__(kThreads)
    cholesky_solve_kernel(AlsHalfSweep s, AlsBatch batch, float* a, const float* b) {
  extern __shared__ __align__(16) float smem[];
  const int64_t d = s.d;
  const int64_t row = batch.row_begin + blockIdx.x;
  const int64_t local = s.first_segment[row] - batch.segment_base;  // the row's system
  const int64_t count = s.offsets[row + 1] - s.offsets[row];
  if (count == 0) {
    als_zero_row(s, row);
    return;
  }
  float* diag = smem;
  float* x = smem + d;
  float* original = a + local * d * d;
  float* m = original;
  for (int64_t t = threadIdx.x; t < d; t += blockDim.x) {
    diag[t] = original[t * d + t];
    x[t] = b[local * d + t];
  }
  bool ok = factor(m, d);
  if (!ok) {
    // Not positive definite: the CPU trainer's retry, A + 1e-6 max(trace(A - reg I) / d, 1) I.
    const float reg = als_regularization(s, count);
    float trace = 0.0f;
    for (int64_t t = 0; t < d; ++t) trace += diag[t] - reg;
    const float raise = 1e-6f * fmaxf(trace / static_cast<float>(d), 1.0f);
    for (int64_t p = threadIdx.x; p < d * d; p += blockDim.x) {
      const int64_t i = p / d, j = p % d;
      if (j < i) m[p] = original[j * d + i];
      if (j == i) m[p] = diag[i] + raise;
    }
    ok = factor(m, d);
  }
  if (ok) {
    solve(m, d, x);
  } else {
    for (int64_t t = threadIdx.x; t < d; t += blockDim.x) x[t] = 0.0f;
    __syncthreads();
  }
  float* out = s.solved + row * s.stride;
  for (int64_t t = threadIdx.x; t < s.rank; t += blockDim.x) out[t] = x[t];
  if (s.solved_bias && threadIdx.x == 0) s.solved_bias[row] = x[s.rank];
}

}  // namespace

void launch_als_cholesky_solve(const AlsHalfSweep& s, const AlsBatch& batch, float* a,
                               const float* b, cudaStream_t stream) {
  if (batch.row_end <= batch.row_begin) return;
  int device = 0, max_shared = 0;
  SFAC_CUDA_TRY(cudaGetDevice(&device));
  SFAC_CUDA_TRY(cudaDeviceGetAttribute(&max_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (launch_als_cholesky_solve_mma(s, batch, a, b, max_shared, stream) ||
      launch_als_cholesky_solve_packed(s, batch, a, b, max_shared, stream)) {
    return;
  }
  const size_t vectors = static_cast<size_t>(2 * s.d) * sizeof(float);
  const dim3 grid(static_cast<unsigned>(batch.row_end - batch.row_begin));
  cholesky_solve_kernel<<<grid, kThreads, vectors, stream>>>(s, batch, a, b);
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
