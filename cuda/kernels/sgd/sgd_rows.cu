// Factor rows of the SGD trainer in and out of their storage type, and the finiteness check:
// grid-stride loops, an entry per thread.
#include "cuda/cuda_check.h"
#include "cuda/kernels/common/grid_stride.cuh"
#include "cuda/kernels/sgd/sgd_kernels.cuh"
#include "cuda/kernels/sgd/sgd_vector.cuh"

namespace sfac::cuda::kernels {
namespace {

template <typename T>
__global__ void narrow_kernel(const float* in, int64_t n, int64_t rank, int64_t stride, T* rows) {
  for_each_index(n * stride, [&](int64_t x) {
    const int64_t r = x / stride, t = x % stride;
    rows[x] = static_cast<T>(t < rank ? in[r * rank + t] : 0.0f);
  });
}

template <typename T>
__global__ void flag_non_finite_kernel(const T* rows, int64_t entries, const float* bias,
                                       int64_t n, int* flag) {
  for_each_index(entries, [&](int64_t x) {
    if (!isfinite(static_cast<float>(rows[x]))) *flag = 1;
  });
  if (bias == nullptr) return;
  for_each_index(n, [&](int64_t x) {
    if (!isfinite(bias[x])) *flag = 1;
  });
}

template <typename T>
__global__ void widen_kernel(const T* rows, int64_t n, int64_t stride, int64_t rank, float factor,
                             float* out) {
  for_each_index(n * rank, [&](int64_t x) {
    out[x] = factor * static_cast<float>(rows[x / rank * stride + x % rank]);
  });
}

}  // namespace

void launch_sgd_narrow(sfac_dtype dtype, const float* in, int64_t n, int64_t rank,
                       int64_t stride, void* rows, cudaStream_t stream) {
  if (n == 0) return;
  sgd_with_storage(dtype, [&](auto tag) {
    using T = decltype(tag);
    narrow_kernel<T><<<blocks_for(n * stride), 256, 0, stream>>>(in, n, rank, stride,
                                                                 static_cast<T*>(rows));
    SFAC_CUDA_CHECK_LAUNCH();
  });
}

void launch_sgd_flag_non_finite(sfac_dtype dtype, const void* rows, int64_t n, int64_t stride,
                                const float* bias, int* flag, cudaStream_t stream) {
  if (n == 0) return;
  sgd_with_storage(dtype, [&](auto tag) {
    using T = decltype(tag);
    flag_non_finite_kernel<T><<<blocks_for(n * stride), 256, 0, stream>>>(
        static_cast<const T*>(rows), n * stride, bias, n, flag);
    SFAC_CUDA_CHECK_LAUNCH();
  });
}

void launch_sgd_widen(sfac_dtype dtype, const void* rows, int64_t n, int64_t stride,
                      int64_t rank, float factor, float* out, cudaStream_t stream) {
  if (n == 0 || rank == 0) return;
  sgd_with_storage(dtype, [&](auto tag) {
    using T = decltype(tag);
    widen_kernel<T><<<blocks_for(n * rank), 256, 0, stream>>>(
        static_cast<const T*>(rows), n, stride, rank, factor, out);
    SFAC_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sfac::cuda::kernels
