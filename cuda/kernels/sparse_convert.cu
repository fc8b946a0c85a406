#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/device_ptr.h>
#include <thrust/equal.h>
#include <thrust/execution_policy.h>
#include <thrust/find.h>
#include <thrust/gather.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/system_error.h>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels/device_scan.cuh"
#include "cuda/kernels/grid_stride.cuh"
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

__global__ void coo_keys(const int32_t* rows, const int32_t* cols, int64_t n, uint64_t* keys,
                         int64_t* order) {
  for_each_index(n, [&](int64_t e) {
    keys[e] = static_cast<uint64_t>(rows[e]) << 32 | static_cast<uint32_t>(cols[e]);
    order[e] = e;
  });
}

// heads[j] = 1 where sorted entry j starts a new (row, col).
__global__ void run_heads(const uint64_t* keys, int64_t n, int64_t* heads) {
  for_each_index(n, [&](int64_t j) { heads[j] = j == 0 || keys[j] != keys[j - 1] ? 1 : 0; });
}

// One thread per run of equal keys: its column, row, and the values summed in input order
// (the sort is stable), as the host conversion adds them.
__global__ void run_sums(const uint64_t* keys, const int64_t* order, const int64_t* heads,
                         const int64_t* slot, const float* values, int64_t n, int32_t* cols,
                         int32_t* rows, float* sums) {
  for_each_index(n, [&](int64_t j) {
    if (!heads[j]) return;
    float sum = values ? values[order[j]] : 1.0f;
    for (int64_t t = j + 1; t < n && !heads[t]; ++t) sum += values ? values[order[t]] : 1.0f;
    const int64_t o = slot[j];
    cols[o] = static_cast<int32_t>(static_cast<uint32_t>(keys[j]));
    rows[o] = static_cast<int32_t>(keys[j] >> 32);
    sums[o] = sum;
  });
}

template <typename T>
DeviceBuffer<T> upload_copy(const T* host, int64_t n, cudaStream_t stream) {
  DeviceBuffer<T> d(static_cast<size_t>(n), stream);
  d.upload(host, static_cast<size_t>(n));
  return d;
}

}  // namespace

bool csr_from_coo(const int32_t* row_indices, const int32_t* col_indices, const float* values,
                  int64_t nnz, int64_t rows, bool sum_duplicates, DeviceBuffer<int64_t>& offsets,
                  DeviceBuffer<int32_t>& indices, DeviceBuffer<float>& csr_values,
                  DuplicateEntry& duplicate, cudaStream_t stream) {
  DeviceBuffer<int32_t> r, c;
  DeviceBuffer<float> v;
  if (nnz > 0) {
    r = upload_copy(row_indices, nnz, stream);
    c = upload_copy(col_indices, nnz, stream);
    if (values) v = upload_copy(values, nnz, stream);
  }
  return csr_from_device_coo(r.data(), c.data(), values ? v.data() : nullptr, nnz, rows,
                             sum_duplicates, offsets, indices, csr_values, duplicate, stream);
}

bool csr_from_device_coo(const int32_t* row_indices, const int32_t* col_indices,
                         const float* values, int64_t nnz, int64_t rows, bool sum_duplicates,
                         DeviceBuffer<int64_t>& offsets, DeviceBuffer<int32_t>& indices,
                         DeviceBuffer<float>& csr_values, DuplicateEntry& duplicate,
                         cudaStream_t stream) {
  DeviceBuffer<uint64_t> keys(static_cast<size_t>(nnz), stream);
  DeviceBuffer<int64_t> order(static_cast<size_t>(nnz), stream);
  if (nnz > 0) {
    coo_keys<<<blocks_for(nnz), 256, 0, stream>>>(row_indices, col_indices, nnz, keys.data(),
                                                  order.data());
    SFAC_CUDA_CHECK_LAUNCH();
  }
  with_thrust_errors("sorting COO entries", [&] {
    // Stable: equal (row, col) keep input order, so sums and reported positions match the host.
    thrust::device_ptr<uint64_t> k(keys.data());
    thrust::stable_sort_by_key(thrust::cuda::par.on(stream), k, k + nnz,
                               thrust::device_ptr<int64_t>(order.data()));
  });
  // heads[j] = 1 where sorted entry j starts a new (row, col); one zero appended for the total.
  DeviceBuffer<int64_t> heads(static_cast<size_t>(nnz) + 1, stream);
  SFAC_CUDA_TRY(cudaMemsetAsync(heads.data() + nnz, 0, sizeof(int64_t), stream));
  if (nnz > 0) {
    run_heads<<<blocks_for(nnz), 256, 0, stream>>>(keys.data(), nnz, heads.data());
    SFAC_CUDA_CHECK_LAUNCH();
  }
  int64_t pair = -1;  // first sorted j with keys[j] == keys[j + 1]
  if (!sum_duplicates && nnz > 1) {
    with_thrust_errors("looking for duplicates", [&] {
      thrust::device_ptr<int64_t> h(heads.data());
      const auto found = thrust::find(thrust::cuda::par.on(stream), h + 1, h + nnz, int64_t{0});
      if (found != h + nnz) pair = (found - h) - 1;
    });
  }
  if (pair >= 0) {
    uint64_t key = 0;
    int64_t positions[2] = {0, 0};
    SFAC_CUDA_TRY(
        cudaMemcpyAsync(&key, keys.data() + pair, sizeof(key), cudaMemcpyDeviceToHost, stream));
    SFAC_CUDA_TRY(cudaMemcpyAsync(positions, order.data() + pair, sizeof(positions),
                                  cudaMemcpyDeviceToHost, stream));
    SFAC_CUDA_TRY(cudaStreamSynchronize(stream));
    duplicate = DuplicateEntry{static_cast<int64_t>(key >> 32),
                               static_cast<int64_t>(static_cast<uint32_t>(key)), positions[0],
                               positions[1]};
    return false;
  }
  // Slot of each run: the exclusive sum of the heads (the total at nnz).
  DeviceBuffer<int64_t> slot(static_cast<size_t>(nnz) + 1, stream);
  exclusive_sum(heads.data(), slot.data(), nnz + 1, stream);
  const int64_t unique = read_back(slot.data() + nnz, stream);
  DeviceBuffer<int32_t> out_cols(static_cast<size_t>(unique), stream);
  DeviceBuffer<int32_t> out_rows(static_cast<size_t>(unique), stream);
  DeviceBuffer<float> out_vals(static_cast<size_t>(unique), stream);
  DeviceBuffer<int64_t> out_offsets(static_cast<size_t>(rows) + 1, stream);
  if (nnz > 0) {
    run_sums<<<blocks_for(nnz), 256, 0, stream>>>(keys.data(), order.data(), heads.data(),
                                                  slot.data(), values, nnz, out_cols.data(),
                                                  out_rows.data(), out_vals.data());
    SFAC_CUDA_CHECK_LAUNCH();
  }
  with_thrust_errors("building CSR offsets", [&] {
    // offsets[i] = first slot whose row is >= i.
    thrust::device_ptr<int32_t> r(out_rows.data());
    thrust::lower_bound(thrust::cuda::par.on(stream), r, r + unique,
                        thrust::counting_iterator<int64_t>(0),
                        thrust::counting_iterator<int64_t>(rows + 1),
                        thrust::device_ptr<int64_t>(out_offsets.data()));
  });
  SFAC_CUDA_CHECK_LAUNCH();
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream));
  offsets = std::move(out_offsets);
  indices = std::move(out_cols);
  csr_values = std::move(out_vals);
  return true;
}

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

namespace {

template <typename T>
bool equal_on_device(const T* a, const T* b, int64_t n, cudaStream_t stream) {
  bool same = true;
  with_thrust_errors("comparing patterns", [&] {
    same = thrust::equal(thrust::cuda::par.on(stream), thrust::device_ptr<const T>(a),
                         thrust::device_ptr<const T>(a) + n, thrust::device_ptr<const T>(b));
  });
  return same;
}

}  // namespace

bool equal_arrays(const int64_t* a, const int64_t* b, int64_t n, cudaStream_t stream) {
  return equal_on_device(a, b, n, stream);
}

bool equal_arrays(const int32_t* a, const int32_t* b, int64_t n, cudaStream_t stream) {
  return equal_on_device(a, b, n, stream);
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
