// The SGD trainer's objective and validation error on the device: a warp per chunk or row, fp64 sums, one partial per block of a fixed grid (so the same
// model always sums in the same order) that the host adds up.
#include "cuda/cuda_check.h"
#include "cuda/kernels/common/block_partial.cuh"
#include "cuda/kernels/sgd/sgd_kernels.cuh"
#include "cuda/kernels/sgd/sgd_vector.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kBlocks = 1024;

// A row of any stride read a lane vector at a time: the dot of two rows and a row's square norm
// in double, in every lane.
template <typename T>
__device__ double row_dot(const T* x, const T* y, int64_t stride, int lane) {
  using V = SgdVector<T>;
  using Bits = typename V::Bits;
  double v = 0.0;
  for (int64_t at = int64_t{lane} * V::kWidth; at < stride; at += 32 * V::kWidth) {
    float a[V::kWidth], b[V::kWidth];
    V::widen(*reinterpret_cast<const Bits*>(x + at), a);
    V::widen(*reinterpret_cast<const Bits*>(y + at), b);
#pragma unroll
    for (int w = 0; w < V::kWidth; ++w) v += double{a[w]} * b[w];
  }
  return sgd_warp_sum(v);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    squared_errors_kernel(SgdModel m, SgdChunkView c, int64_t first, int64_t end,
                          double* partials) {
  __shared__ double scratch[kWarps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const T* users = static_cast<const T*>(m.users);
  const T* items = static_cast<const T*>(m.items);
  double sum = 0.0;
  for (int64_t chunk = first + blockIdx.x * int64_t{kWarps} + warp; chunk < end;
       chunk += int64_t{gridDim.x} * kWarps) {
    const int32_t id = c.chunk_user[chunk];
    const int32_t u = id < 0 ? ~id : id;  // ~u: a user split between workers
    const T* p = users + int64_t{u} * m.stride;
    for (int64_t s = c.chunk_begin[chunk]; s < c.chunk_begin[chunk + 1]; ++s) {
      const SgdSample x = c.samples[s - c.sample_base];
      double pred = row_dot(p, items + int64_t{x.item} * m.stride, m.stride, lane);
      if (m.user_bias) pred += double{m.global_mean} + m.user_bias[u] + m.item_bias[x.item];
      const double e = double{x.rating} - pred;
      sum += e * e;
    }
  }
  block_partial<kWarps>(sum, scratch, partials, 0, 1);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    weighted_norms_kernel(const T* rows, int64_t n, int64_t stride, const int64_t* counts,
                          double* partials) {
  __shared__ double scratch[kWarps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  double sum = 0.0;
  for (int64_t r = blockIdx.x * int64_t{kWarps} + warp; r < n;
       r += int64_t{gridDim.x} * kWarps) {
    const T* x = rows + r * stride;
    sum += static_cast<double>(counts[r]) * row_dot(x, x, stride, lane);
  }
  block_partial<kWarps>(sum, scratch, partials, 0, 1);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    prediction_errors_kernel(SgdModel m, float scale, const int64_t* offsets, const int32_t* cols,
                             const float* values, int64_t rows, double* partials) {
  __shared__ double scratch[kWarps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const T* users = static_cast<const T*>(m.users);
  const T* items = static_cast<const T*>(m.items);
  double sum = 0.0;
  for (int64_t u = blockIdx.x * int64_t{kWarps} + warp; u < rows;
       u += int64_t{gridDim.x} * kWarps) {
    const T* p = users + u * m.stride;
    for (int64_t e = offsets[u]; e < offsets[u + 1]; ++e) {
      const int32_t i = cols[e];
      double pred = row_dot(p, items + int64_t{i} * m.stride, m.stride, lane);
      if (m.user_bias) pred += double{m.global_mean} + m.user_bias[u] + m.item_bias[i];
      const double err = double{values[e]} - double{scale} * pred;
      sum += err * err;
    }
  }
  block_partial<kWarps>(sum, scratch, partials, 0, 1);
}

}  // namespace

int sgd_objective_blocks() { return kBlocks; }

void launch_sgd_squared_errors(const SgdModel& model, const SgdChunkView& chunks, int64_t first,
                               int64_t end, double* partials, cudaStream_t stream) {
  sgd_with_storage(model.dtype, [&](auto tag) {
    squared_errors_kernel<decltype(tag)>
        <<<kBlocks, kThreads, 0, stream>>>(model, chunks, first, end, partials);
    SFAC_CUDA_CHECK_LAUNCH();
  });
}

void launch_sgd_weighted_norms(sfac_dtype dtype, const void* rows, int64_t n, int64_t stride,
                               const int64_t* counts, double* partials,
                               cudaStream_t stream) {
  sgd_with_storage(dtype, [&](auto tag) {
    using T = decltype(tag);
    weighted_norms_kernel<T><<<kBlocks, kThreads, 0, stream>>>(static_cast<const T*>(rows), n,
                                                               stride, counts, partials);
    SFAC_CUDA_CHECK_LAUNCH();
  });
}

void launch_sgd_prediction_errors(const SgdModel& model, float scale, const int64_t* offsets,
                                  const int32_t* cols, const float* values, int64_t rows,
                                  double* partials, cudaStream_t stream) {
  sgd_with_storage(model.dtype, [&](auto tag) {
    prediction_errors_kernel<decltype(tag)><<<kBlocks, kThreads, 0, stream>>>(
        model, scale, offsets, cols, values, rows, partials);
    SFAC_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sfac::cuda::kernels
