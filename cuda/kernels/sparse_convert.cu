#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>
#include <thrust/gather.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/system_error.h>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels/sparse_convert.cuh"

namespace sfac::cuda::kernels {
namespace {

// Thrust reports failures by exception: give them the library's statuses.
template <typename F>
void with_thrust_errors(const char* what, F&& f) {
  try {
    f();
  } catch (const thrust::system_error& e) {
    fail(SFAC_ERR_DEVICE, what, ": ", e.what());
  }
}

}  // namespace

void build_csc(const int32_t* cols, const int32_t* row_of, int64_t ncols, int64_t nnz,
               int64_t* col_offsets, int32_t* row_indices, int64_t* csr_position,
               cudaStream_t stream) {
  DeviceBuffer<int32_t> keys(static_cast<size_t>(nnz), stream);
  with_thrust_errors("building the CSC view", [&] {
    const auto policy = thrust::cuda::par.on(stream);
    thrust::device_ptr<const int32_t> c(cols);
    thrust::device_ptr<int32_t> k(keys.data());
    thrust::device_ptr<int64_t> pos(csr_position);
    thrust::copy(policy, c, c + nnz, k);
    thrust::sequence(policy, pos, pos + nnz);
    // Stable: equal columns keep CSR (row) order.
    thrust::stable_sort_by_key(policy, k, k + nnz, pos);
    thrust::gather(policy, pos, pos + nnz, thrust::device_ptr<const int32_t>(row_of),
                   thrust::device_ptr<int32_t>(row_indices));
    // col_offsets[c] = first CSC slot whose column is >= c.
    thrust::lower_bound(policy, k, k + nnz, thrust::counting_iterator<int32_t>(0),
                        thrust::counting_iterator<int32_t>(static_cast<int32_t>(ncols + 1)),
                        thrust::device_ptr<int64_t>(col_offsets));
  });
  SFAC_CUDA_CHECK_LAUNCH();
}

void gather(const float* in, const int64_t* index, int64_t n, float* out, cudaStream_t stream) {
  with_thrust_errors("gathering values", [&] {
    thrust::gather(thrust::cuda::par.on(stream), thrust::device_ptr<const int64_t>(index),
                   thrust::device_ptr<const int64_t>(index) + n,
                   thrust::device_ptr<const float>(in), thrust::device_ptr<float>(out));
  });
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
