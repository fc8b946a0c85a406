#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/device_ptr.h>
#include <thrust/equal.h>
#include <thrust/execution_policy.h>
#include <thrust/find.h>
#include <thrust/gather.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/system_error.h>

#include <cstddef>
#include <cub/device/device_radix_sort.cuh>
#include <new>
#include <tuple>
#include <utility>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/device_pool.h"
#include "cuda/kernels/common/device_scan.cuh"
#include "cuda/kernels/common/grid_stride.cuh"
#include "cuda/kernels/common/sparse_convert.cuh"

namespace sfac::cuda::kernels {
namespace {

// Thrust's temporary storage from the library's pool that every other buffer here comes from,
// not from cudaMalloc: memory the pool keeps cached stays usable by the algorithms, and a full
// device is SFAC_ERR_OUT_OF_MEMORY, as anywhere else.
class PoolAllocator {
 public:
  using value_type = char;
  explicit PoolAllocator(cudaStream_t stream) : stream_(stream) {}
  char* allocate(std::ptrdiff_t bytes) {
    return static_cast<char*>(allocate_from_library_pool(static_cast<size_t>(bytes), stream_));
  }
  void deallocate(char* p, size_t) { (void)cudaFreeAsync(p, stream_); }

 private:
  cudaStream_t stream_;
};

// Runs f(policy) with thrust on `stream`; thrust reports failures by exception: give them the
// library's statuses.
template <typename F>
void with_thrust(cudaStream_t stream, const char* what, F&& f) {
  PoolAllocator allocator(stream);
  try {
    f(thrust::cuda::par(allocator).on(stream));
  } catch (const thrust::system_error& e) {
    fail(SFAC_ERR_DEVICE, what, ": ", e.what());
  } catch (const std::bad_alloc& e) {
    fail(SFAC_ERR_OUT_OF_MEMORY, what, ": out of device memory: ", e.what());
  }
}

// Key row << 32 | col per entry; its input position too where `order` is given.
template <typename Order>
__global__ void coo_keys(const int32_t* rows, const int32_t* cols, int64_t n, uint64_t* keys,
                         Order* order) {
  for_each_index(n, [&](int64_t e) {
    keys[e] = static_cast<uint64_t>(rows[e]) << 32 | static_cast<uint32_t>(cols[e]);
    if (order) order[e] = static_cast<Order>(e);
  });
}

// 1 where sorted entry j starts a new (row, col), 0 past the end (the appended total).
struct RunHead {
  const uint64_t* keys;
  int64_t n;
  __device__ int64_t operator()(int64_t j) const {
    return j < n && (j == 0 || keys[j] != keys[j - 1]) ? 1 : 0;
  }
};

struct SameAsNext {
  const uint64_t* keys;
  __device__ bool operator()(int64_t j) const { return keys[j] == keys[j + 1]; }
};

// One thread per run of equal keys: its column and the values summed in input order (the sort is
// stable), as the host conversion adds them; 1 per entry without values.
template <typename Order>
__global__ void run_sums(const uint64_t* keys, const Order* order, const int64_t* slot,
                         const float* values, int64_t n, int32_t* cols, float* sums) {
  for_each_index(n, [&](int64_t j) {
    if (j > 0 && keys[j] == keys[j - 1]) return;
    float sum = values ? values[order[j]] : 1.0f;
    for (int64_t t = j + 1; t < n && keys[t] == keys[j]; ++t) {
      sum += values ? values[order[t]] : 1.0f;
    }
    cols[slot[j]] = static_cast<int32_t>(static_cast<uint32_t>(keys[j]));
    sums[slot[j]] = sum;
  });
}

// offsets[i] = slot of the first sorted entry whose row is >= i (a binary search per row).
__global__ void row_offsets_from_keys(const uint64_t* keys, const int64_t* slot, int64_t n,
                                      int64_t rows, int64_t* offsets) {
  for_each_index(rows + 1, [&](int64_t i) {
    const uint64_t first = static_cast<uint64_t>(i) << 32;
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (keys[mid] < first) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    offsets[i] = slot[lo];
  });
}

template <typename T>
DeviceBuffer<T> upload_copy(const T* host, int64_t n, cudaStream_t stream) {
  DeviceBuffer<T> d(static_cast<size_t>(n), stream);
  d.upload(host, static_cast<size_t>(n));
  return d;
}

// Sorts the keys, and `order` with them where it is not empty, by (row, col): a stable radix
// sort of the 32 column bits and as many row bits as `rows` needs, with its buffers from the
// pool.
template <typename Order>
void sort_keys(DeviceBuffer<uint64_t>& keys, DeviceBuffer<Order>& order, int64_t n, int64_t rows,
               cudaStream_t stream) {
  const int end_bit = 32 + significant_bits(static_cast<uint64_t>(rows - 1));
  DeviceBuffer<uint64_t> keys_alt(static_cast<size_t>(n), stream);
  cub::DoubleBuffer<uint64_t> k(keys.data(), keys_alt.data());
  if (order.size() > 0) {
    DeviceBuffer<Order> order_alt(static_cast<size_t>(n), stream);
    cub::DoubleBuffer<Order> v(order.data(), order_alt.data());
    run_with_temp_storage(
        "cub::DeviceRadixSort::SortPairs", stream, [&](void* temp, size_t& bytes) {
          return cub::DeviceRadixSort::SortPairs(temp, bytes, k, v, n, 0, end_bit, stream);
        });
    if (v.Current() != order.data()) std::swap(order, order_alt);
  } else {
    run_with_temp_storage("cub::DeviceRadixSort::SortKeys", stream, [&](void* temp, size_t& bytes) {
      return cub::DeviceRadixSort::SortKeys(temp, bytes, k, n, 0, end_bit, stream);
    });
  }
  if (k.Current() != keys.data()) std::swap(keys, keys_alt);
}

// The first two input positions of entry (row, col) in host COO arrays.
std::pair<int64_t, int64_t> host_positions(const int32_t* rows, const int32_t* cols, int64_t n,
                                           int64_t row, int64_t col) {
  std::pair<int64_t, int64_t> found{-1, -1};
  for (int64_t e = 0; e < n; ++e) {
    if (rows[e] != row || cols[e] != col) continue;
    if (found.first < 0) {
      found.first = e;
    } else {
      found.second = e;
      break;
    }
  }
  return found;
}

template <typename Order>
bool csr_from_coo_as(const int32_t* row_indices, const int32_t* col_indices, const float* values,
                     int64_t nnz, int64_t rows, bool sum_duplicates, DeviceBuffer<int64_t>& offsets,
                     DeviceBuffer<int32_t>& indices, DeviceBuffer<float>& csr_values,
                     DuplicateEntry& duplicate, cudaStream_t stream) {
  DeviceBuffer<uint64_t> keys(static_cast<size_t>(nnz), stream);
  // Input positions, needed only to gather values in input order (32 bits where they fit).
  DeviceBuffer<Order> order(values ? static_cast<size_t>(nnz) : 0, stream);
  if (nnz > 0) {
    const DeviceBuffer<int32_t> r = upload_copy(row_indices, nnz, stream);
    const DeviceBuffer<int32_t> c = upload_copy(col_indices, nnz, stream);
    coo_keys<<<blocks_for(nnz), 256, 0, stream>>>(r.data(), c.data(), nnz, keys.data(),
                                                  values ? order.data() : nullptr);
    SFAC_CUDA_CHECK_LAUNCH();
  }
  DeviceBuffer<float> v;
  if (values && nnz > 0) v = upload_copy(values, nnz, stream);
  if (nnz > 0) sort_keys(keys, order, nnz, rows, stream);
  // Slot of each run: the exclusive sum of the run heads (the total at nnz).
  DeviceBuffer<int64_t> slot(static_cast<size_t>(nnz) + 1, stream);
  exclusive_sum(thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0),
                                                RunHead{keys.data(), nnz}),
                slot.data(), nnz + 1, stream);
  const int64_t unique = read_back(slot.data() + nnz, stream);
  if (unique < nnz && !sum_duplicates) {
    int64_t pair = 0;  // first sorted j with keys[j] == keys[j + 1]
    with_thrust(stream, "looking for duplicates", [&](auto policy) {
      const thrust::counting_iterator<int64_t> first(0);
      pair = *thrust::find_if(policy, first, first + (nnz - 1), SameAsNext{keys.data()});
    });
    const uint64_t key = read_back(keys.data() + pair, stream);
    duplicate.row = static_cast<int64_t>(key >> 32);
    duplicate.col = static_cast<int64_t>(static_cast<uint32_t>(key));
    if (values) {
      // The sort is stable: the run's first two entries are its two lowest input positions.
      duplicate.first = read_back(order.data() + pair, stream);
      duplicate.second = read_back(order.data() + pair + 1, stream);
    } else {
      std::tie(duplicate.first, duplicate.second) =
          host_positions(row_indices, col_indices, nnz, duplicate.row, duplicate.col);
    }
    return false;
  }
  DeviceBuffer<int32_t> out_cols(static_cast<size_t>(unique), stream);
  DeviceBuffer<float> out_vals(static_cast<size_t>(unique), stream);
  DeviceBuffer<int64_t> out_offsets(static_cast<size_t>(rows) + 1, stream);
  if (nnz > 0) {
    run_sums<<<blocks_for(nnz), 256, 0, stream>>>(keys.data(), order.data(), slot.data(), v.data(),
                                                  nnz, out_cols.data(), out_vals.data());
    SFAC_CUDA_CHECK_LAUNCH();
  }
  row_offsets_from_keys<<<blocks_for(rows + 1), 256, 0, stream>>>(keys.data(), slot.data(), nnz,
                                                                  rows, out_offsets.data());
  SFAC_CUDA_CHECK_LAUNCH();
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream));
  offsets = std::move(out_offsets);
  indices = std::move(out_cols);
  csr_values = std::move(out_vals);
  return true;
}

}  // namespace

// Device memory per entry at the peak: 24 bytes without values (the key, then the run slot and
// the output column and value; the row and column uploads and the sort's second key buffer are
// freed before those are made), 32 with values (a 4-byte input order, its sort buffer and the
// values on top; 8-byte orders past 2^32 entries: 44). 2^31 entries thus need ~52 GB (~69 GB
// with values) instead of the ~112 GB (~120 GB) that keeping the uploads, a run-head array, the
// output rows and 8-byte orders took.
bool csr_from_coo(const int32_t* row_indices, const int32_t* col_indices, const float* values,
                  int64_t nnz, int64_t rows, bool sum_duplicates, DeviceBuffer<int64_t>& offsets,
                  DeviceBuffer<int32_t>& indices, DeviceBuffer<float>& csr_values,
                  DuplicateEntry& duplicate, cudaStream_t stream) {
  return nnz <= int64_t{UINT32_MAX}
             ? csr_from_coo_as<uint32_t>(row_indices, col_indices, values, nnz, rows,
                                         sum_duplicates, offsets, indices, csr_values, duplicate,
                                         stream)
             : csr_from_coo_as<int64_t>(row_indices, col_indices, values, nnz, rows, sum_duplicates,
                                        offsets, indices, csr_values, duplicate, stream);
}

void build_csc(const int32_t* cols, const int32_t* row_of, int64_t ncols, int64_t nnz,
               int64_t* col_offsets, int32_t* row_indices, int64_t* csr_position,
               cudaStream_t stream) {
  DeviceBuffer<int32_t> keys(static_cast<size_t>(nnz), stream);
  with_thrust(stream, "building the CSC view", [&](auto policy) {
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
  with_thrust(stream, "comparing patterns", [&](auto policy) {
    same = thrust::equal(policy, thrust::device_ptr<const T>(a), thrust::device_ptr<const T>(a) + n,
                         thrust::device_ptr<const T>(b));
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
  with_thrust(stream, "gathering values", [&](auto policy) {
    thrust::gather(policy, thrust::device_ptr<const int64_t>(index),
                   thrust::device_ptr<const int64_t>(index) + n,
                   thrust::device_ptr<const float>(in), thrust::device_ptr<float>(out));
  });
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
