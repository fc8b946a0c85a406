// The batched normal equations of an ALS half-sweep: the dispatch to the tensor-core kernels
// (als_normal_equations_half.cu for 16-bit factor storage, als_normal_equations_mma.cu), and, for systems whose staged rows do not fit its shared
// memory (d above about 300), Gates et al.'s sparse syrk with long rows cut into segments on
// CUDA cores (normal_equations_kernel); the fold of a long row's segments serves both.
#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/kernels/als/als_kernels.cuh"
#include "cuda/kernels/als/als_triangle_blocks.cuh"
#include "cuda/kernels/common/cp_async.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kThreads = 256;  // at most; fewer for small systems

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
struct Vec<8> {
  __device__ static void load(const float* p, float* v) {
    const float4 x = *reinterpret_cast<const float4*>(p);
    const float4 y = *reinterpret_cast<const float4*>(p + 4);
    v[0] = x.x;
    v[1] = x.y;
    v[2] = x.z;
    v[3] = x.w;
    v[4] = y.x;
    v[5] = y.y;
    v[6] = y.z;
    v[7] = y.w;
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

// One block per (segment, chunk of kThreads sub-blocks): the segment's factor rows are staged
// whole in shared memory, `stage` ratings at a time, by asynchronous copies one stage ahead of
// the arithmetic (double buffered), and each thread accumulates one TM x TM sub-block of the
// lower triangle of A in registers; diagonal sub-blocks also accumulate their slice of b. Only
// sub-blocks on or below the diagonal are computed, so almost no multiply is spent on the upper
// triangle or on padding.
template <int TM>
__global__ void __launch_bounds__(kThreads)
    normal_equations_kernel(AlsHalfSweep s, int64_t segment_base, int padded, int stage,
                            float* a, float* b) {
  extern __shared__ __align__(16) float smem[];
  // Two buffers of each: y_j (zero past d), w_j and c_j.
  float* const rows_base = smem;
  float* const weights_base = smem + 2 * stage * padded;
  float* const targets_base = weights_base + 2 * stage;

  const int64_t local = blockIdx.x;
  const int64_t segment = segment_base + local;
  const int64_t row = s.segment_row[segment];
  // The row's first segment adds G, the regularization and the right-hand side's start.
  const bool first = s.first_segment[row] == segment;
  const int grid_side = padded / TM;
  const int q = static_cast<int>(blockIdx.y) * kThreads + static_cast<int>(threadIdx.x);
  const bool active = q < grid_side * (grid_side + 1) / 2;
  int bi = 0, bj = 0;
  if (active) lower_block(q, &bi, &bj);
  const bool diagonal = active && bi == bj;
  const int64_t d = s.d;
  const int64_t begin = s.segment_begin[segment], end = s.segment_begin[segment + 1];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int warps = static_cast<int>(blockDim.x) / 32;

  // Queues the copies of the ratings [e0, e0 + stage) into buffer `slot`: a warp per row.
  auto issue = [&](int64_t e0, int slot) {
    for (int j = warp; j < stage; j += warps) {
      const bool valid = e0 + j < end;
      const int32_t other = valid ? s.others[e0 + j] : 0;
      if (lane == 0) {
        float w = 0.0f, c = 0.0f;
        if (valid) als_weight_target(s, s.values[e0 + j], other, &w, &c);
        weights_base[slot * stage + j] = w;
        targets_base[slot * stage + j] = c;
      }
      const float* y = s.fixed + int64_t{other} * s.stride;
      float* dst = rows_base + (slot * stage + j) * padded;
      for (int t = lane; t < padded; t += 32) {
        detail::cp_async4(dst + t, y + (t < d ? t : 0), valid && t < d);
      }
    }
    detail::cp_async_commit();
  };

  float acc[TM][TM] = {};
  float rhs[TM] = {};
  if (begin < end) issue(begin, 0);
  int slot = 0;
  for (int64_t e0 = begin; e0 < end; e0 += stage, slot ^= 1) {
    const int n = static_cast<int>(end - e0 < stage ? end - e0 : stage);
    if (e0 + stage < end) {
      issue(e0 + stage, slot ^ 1);
      detail::cp_async_wait<1>();
    } else {
      detail::cp_async_wait<0>();
    }
    __syncthreads();
    if (active) {
      const float* ys = rows_base + slot * stage * padded;
      const float* ws = weights_base + slot * stage;
      const float* cs = targets_base + slot * stage;
      for (int j = 0; j < n; ++j) {
        float u[TM], v[TM];
        Vec<TM>::load(ys + j * padded + bi * TM, u);
        Vec<TM>::load(ys + j * padded + bj * TM, v);
        const float w = ws[j];
#pragma unroll
        for (int r = 0; r < TM; ++r) v[r] *= w;
#pragma unroll
        for (int p = 0; p < TM; ++p) {
#pragma unroll
          for (int r = 0; r < TM; ++r) acc[p][r] = fmaf(u[p], v[r], acc[p][r]);
        }
        if (diagonal) {
          const float c = cs[j];
#pragma unroll
          for (int p = 0; p < TM; ++p) rhs[p] = fmaf(c, u[p], rhs[p]);
        }
      }
    }
    __syncthreads();  // the buffer is refilled two passes on
  }
  if (!active) return;

  const float reg = first ? als_regularization(s, s.offsets[row + 1] - s.offsets[row]) : 0.0f;
  float* A = a + local * d * d;
#pragma unroll
  for (int p = 0; p < TM; ++p) {
    const int64_t i = int64_t{bi} * TM + p;
#pragma unroll
    for (int r = 0; r < TM; ++r) {
      const int64_t j = int64_t{bj} * TM + r;
      if (i < d && j < d) {
        float v = acc[p][r];
        if (s.gram && first) v += s.gram[i * d + j];
        if (i == j) v += reg;
        A[i * d + j] = v;
        if (!diagonal) A[j * d + i] = v;  // the upper triangle keeps A for a retry
      }
    }
  }
  if (diagonal) {
#pragma unroll
    for (int p = 0; p < TM; ++p) {
      const int64_t i = int64_t{bi} * TM + p;
      if (i < d) b[local * d + i] = rhs[p];
    }
  }
}

// Adds the systems of each row's later segments into its first, in segment order.
__global__ void fold_segments_kernel(AlsHalfSweep s, AlsBatch batch, int64_t system_floats,
                                     float* a, float* b) {
  const int64_t row = batch.row_begin + blockIdx.x;
  const int64_t first = s.first_segment[row], last = s.first_segment[row + 1];
  if (last - first < 2) return;
  const int64_t d = s.d;
  float* dst = a + (first - batch.segment_base) * system_floats;
  for (int64_t p = threadIdx.x; p < system_floats; p += blockDim.x) {
    float v = dst[p];
    for (int64_t g = first + 1; g < last; ++g) v += a[(g - batch.segment_base) * system_floats + p];
    dst[p] = v;
  }
  float* rhs = b + (first - batch.segment_base) * d;
  for (int64_t p = threadIdx.x; p < d; p += blockDim.x) {
    float v = rhs[p];
    for (int64_t g = first + 1; g < last; ++g) v += b[(g - batch.segment_base) * d + p];
    rhs[p] = v;
  }
}

template <int TM>
void launch(const AlsHalfSweep& s, const AlsBatch& batch, float* a, float* b,
            cudaStream_t stream) {
  const int grid_side = static_cast<int>((s.d + TM - 1) / TM);
  const int padded = grid_side * TM;
  const int blocks = grid_side * (grid_side + 1) / 2;
  // About 16 KB of factor rows per buffer.
  const int stage = std::clamp(4096 / padded, 4, 32);
  const size_t shared = (2 * static_cast<size_t>(stage) * padded + 4 * stage) * sizeof(float);
  SFAC_CUDA_TRY(cudaFuncSetAttribute(normal_equations_kernel<TM>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(shared)));
  const dim3 grid(static_cast<unsigned>(batch.segments),
                  static_cast<unsigned>((blocks + kThreads - 1) / kThreads));
  const int threads = std::min(kThreads, (blocks + 31) / 32 * 32);
  normal_equations_kernel<TM>
      <<<grid, threads, shared, stream>>>(s, batch.segment_base, padded, stage, a, b);
  SFAC_CUDA_CHECK_LAUNCH();
}

void fold(const AlsHalfSweep& s, const AlsBatch& batch, float* a, float* b, cudaStream_t stream) {
  if (batch.segments > batch.row_end - batch.row_begin) {
    fold_segments_kernel<<<static_cast<unsigned>(batch.row_end - batch.row_begin), 256, 0,
                           stream>>>(s, batch, als_system_floats(s.d), a, b);
    SFAC_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

void launch_als_normal_equations(const AlsHalfSweep& s, const AlsBatch& batch, float* a, float* b,
                                 cudaStream_t stream) {
  if (batch.segments <= 0) return;
  if (launch_als_normal_equations_half(s, batch, a, b, stream) ||
      launch_als_normal_equations_mma(s, batch, a, b, stream)) {
    fold(s, batch, a, b, stream);
    return;
  }
  // This kernel writes A row-major: it serves only systems past the tensor-core kernels' shared
  // memory, which the tiled Cholesky never takes.
  SFAC_REQUIRE(!als_cholesky_on_tensor_cores(s.d), SFAC_ERR_INTERNAL,
               "no normal-equations kernel writes the tiled systems of ", s.d, " unknowns");
  // Sub-blocks as large as keep at least ~100 threads busy per system: a 16 x 16 grid of them
  // up to d = 128; beyond, 8 x 8 sub-blocks over several thread blocks.
  if (s.d <= 16) {
    launch<1>(s, batch, a, b, stream);
  } else if (s.d <= 32) {
    launch<2>(s, batch, a, b, stream);
  } else if (s.d <= 64) {
    launch<4>(s, batch, a, b, stream);
  } else {
    launch<8>(s, batch, a, b, stream);
  }
  fold(s, batch, a, b, stream);
}

}  // namespace sfac::cuda::kernels
