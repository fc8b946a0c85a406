// The batched normal equations of an ALS half-sweep (Gates et al.'s sparse syrk): one thread
// block per (row, NB x NB tile of the lower triangle of A). A block stages KB of the row's
// ratings at a time, the tile's two NB-slices of their factor rows, in shared memory, and each
// thread accumulates a TM x TM piece of the tile in registers. Diagonal tiles also accumulate
// their slice of the right-hand side.
#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/kernels/als/als_kernels.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kStage = 16;  // KB: ratings staged per pass

template <int TM>
struct Vec;
template <>
struct Vec<1> {
  __device__ static void load(const float* p, float* v) { v[0] = p[0]; }
};
template <>
struct Vec<2> {
  __device__ static void load(const float* p, float* v) {
    const float2 x = *reinterpret_cast<const float2*>(p);
    v[0] = x.x;
    v[1] = x.y;
  }
};
template <>
struct Vec<4> {
  __device__ static void load(const float* p, float* v) {
    const float4 x = *reinterpret_cast<const float4*>(p);
    v[0] = x.x;
    v[1] = x.y;
    v[2] = x.z;
    v[3] = x.w;
  }
};

// Tile (bi, bj), bi >= bj, of the lower triangle numbered row by row.
__device__ inline void lower_tile(int t, int* bi, int* bj) {
  int i = static_cast<int>((sqrtf(8.0f * static_cast<float>(t) + 1.0f) - 1.0f) * 0.5f);
  while ((i + 1) * (i + 2) / 2 <= t) ++i;
  while (i * (i + 1) / 2 > t) --i;
  *bi = i;
  *bj = t - i * (i + 1) / 2;
}

template <int NB, int TM>
__global__ void __launch_bounds__((NB / TM) * (NB / TM))
    normal_equations_kernel(AlsHalfSweep s, int64_t row_begin, float* a, float* b) {
  constexpr int TD = NB / TM;
  constexpr int kThreads = TD * TD;
  __shared__ __align__(16) float sy[kStage][NB];  // y_j, slice bi
  __shared__ __align__(16) float sw[kStage][NB];  // w_j y_j, slice bj
  __shared__ float sweight[kStage], starget[kStage];

  const int64_t local = blockIdx.x;
  const int64_t row = row_begin + local;
  int bi, bj;
  lower_tile(static_cast<int>(blockIdx.y), &bi, &bj);
  const int tx = static_cast<int>(threadIdx.x) % TD, ty = static_cast<int>(threadIdx.x) / TD;
  const int64_t d = s.d;
  const int64_t begin = s.offsets[row], end = s.offsets[row + 1];
  const bool diagonal = bi == bj;

  float acc[TM][TM] = {};
  float rhs = 0.0f;  // diagonal tiles: b[bi * NB + threadIdx.x]
  for (int64_t e0 = begin; e0 < end; e0 += kStage) {
    const int n = static_cast<int>(end - e0 < kStage ? end - e0 : kStage);
    if (threadIdx.x < kStage) {
      float w = 0.0f, c = 0.0f;
      if (static_cast<int>(threadIdx.x) < n) {
        const int64_t e = e0 + threadIdx.x;
        als_weight_target(s, s.values[e], s.others[e], &w, &c);
      }
      sweight[threadIdx.x] = w;
      starget[threadIdx.x] = c;
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < kStage * NB; idx += kThreads) {
      const int j = idx / NB, c = idx % NB;
      float yi = 0.0f, yj = 0.0f;
      if (j < n) {
        const float* y = s.fixed + int64_t{s.others[e0 + j]} * s.stride;
        const int64_t ci = int64_t{bi} * NB + c, cj = int64_t{bj} * NB + c;
        if (ci < d) yi = __ldg(y + ci);
        if (cj < d) yj = __ldg(y + cj) * sweight[j];
      }
      sy[j][c] = yi;
      sw[j][c] = yj;
    }
    __syncthreads();
    for (int j = 0; j < n; ++j) {
      float u[TM], v[TM];
      Vec<TM>::load(&sy[j][ty * TM], u);
      Vec<TM>::load(&sw[j][tx * TM], v);
#pragma unroll
      for (int p = 0; p < TM; ++p) {
#pragma unroll
        for (int q = 0; q < TM; ++q) acc[p][q] = fmaf(u[p], v[q], acc[p][q]);
      }
    }
    if (diagonal && threadIdx.x < NB) {
      for (int j = 0; j < n; ++j) rhs = fmaf(starget[j], sy[j][threadIdx.x], rhs);
    }
    __syncthreads();
  }

  const float reg = als_regularization(s, end - begin);
  float* A = a + local * d * d;
#pragma unroll
  for (int p = 0; p < TM; ++p) {
    const int64_t i = int64_t{bi} * NB + ty * TM + p;
#pragma unroll
    for (int q = 0; q < TM; ++q) {
      const int64_t j = int64_t{bj} * NB + tx * TM + q;
      if (i < d && j < d) {
        float v = acc[p][q];
        if (s.gram) v += s.gram[i * d + j];
        if (i == j) v += reg;
        A[i * d + j] = v;
        if (!diagonal) A[j * d + i] = v;  // the upper triangle keeps A for a retry
      }
    }
  }
  if (diagonal && threadIdx.x < NB) {
    const int64_t i = int64_t{bi} * NB + threadIdx.x;
    if (i < d) b[local * d + i] = rhs;
  }
}

template <int NB, int TM>
void launch(const AlsHalfSweep& s, int64_t row_begin, int64_t batch, float* a, float* b,
            cudaStream_t stream) {
  const int64_t tiles = (s.d + NB - 1) / NB;
  const dim3 grid(static_cast<unsigned>(batch), static_cast<unsigned>(tiles * (tiles + 1) / 2));
  normal_equations_kernel<NB, TM><<<grid, (NB / TM) * (NB / TM), 0, stream>>>(s, row_begin, a, b);
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_als_normal_equations(const AlsHalfSweep& s, int64_t row_begin, int64_t batch,
                                 float* a, float* b, cudaStream_t stream) {
  if (batch <= 0) return;
  // Tiles no wider than needed: a small d in a 64-wide tile would leave most threads idle.
  if (s.d <= 16) return launch<16, 1>(s, row_begin, batch, a, b, stream);
  if (s.d <= 32) return launch<32, 2>(s, row_begin, batch, a, b, stream);
  launch<64, 4>(s, row_begin, batch, a, b, stream);
}

}  // namespace sfac::cuda::kernels
