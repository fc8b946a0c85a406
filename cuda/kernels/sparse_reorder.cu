#include <cub/device/device_radix_sort.cuh>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels/grid_stride.cuh"
#include "cuda/kernels/sparse_reorder.cuh"

namespace sfac::cuda::kernels {
namespace {

__global__ void row_degrees(const int64_t* offsets, int64_t rows, int32_t* deg, int32_t* ids) {
  for_each_index(rows, [&](int64_t i) {
    deg[i] = static_cast<int32_t>(offsets[i + 1] - offsets[i]);
    ids[i] = static_cast<int32_t>(i);
  });
}

__global__ void column_degrees(const int32_t* cols, int64_t nnz, int32_t* deg) {
  for_each_index(nnz, [&](int64_t e) { atomicAdd(deg + cols[e], 1); });
}

__global__ void iota(int64_t n, int32_t* ids) {
  for_each_index(n, [&](int64_t i) { ids[i] = static_cast<int32_t>(i); });
}

__global__ void scatter_ranks(const int32_t* order, int64_t n, int32_t* rank) {
  for_each_index(n, [&](int64_t i) { rank[order[i]] = static_cast<int32_t>(i); });
}

__global__ void renumber_entries(const int32_t* in, const int32_t* rank, int64_t n, int32_t* out) {
  for_each_index(n, [&](int64_t e) { out[e] = rank[in[e]]; });
}

// Unit: the widest of 16, 8, 4 and 2 bytes that divides the row length.
template <typename Unit>
__global__ void gather_row_units(const Unit* in, const int32_t* order, int64_t rows,
                                 int64_t units_per_row, Unit* out) {
  for_each_index(rows * units_per_row, [&](int64_t u) {
    const int64_t r = u / units_per_row, j = u % units_per_row;
    out[u] = in[int64_t{order[r]} * units_per_row + j];
  });
}

template <typename Unit>
void launch_gather_rows(const void* in, const int32_t* order, int64_t rows, int64_t row_bytes,
                        void* out, cudaStream_t stream) {
  const int64_t units = row_bytes / static_cast<int64_t>(sizeof(Unit));
  gather_row_units<<<blocks_for(rows * units), 256, 0, stream>>>(
      static_cast<const Unit*>(in), order, rows, units, static_cast<Unit*>(out));
  SFAC_CUDA_CHECK_LAUNCH();
}

// Ids by degree, descending; ties keep id order because the radix sort is stable.
void sort_ids_by_degree(const int32_t* deg, const int32_t* ids_in, int64_t n, int32_t* ids,
                        int32_t* sorted_degrees, cudaStream_t stream) {
  DeviceBuffer<int32_t> sorted;
  if (sorted_degrees == nullptr) {
    sorted = DeviceBuffer<int32_t>(static_cast<size_t>(n), stream);
    sorted_degrees = sorted.data();
  }
  size_t bytes = 0;
  SFAC_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(nullptr, bytes, deg, sorted_degrees,
                                                          ids_in, ids, n, 0, 32, stream));
  DeviceBuffer<uint8_t> temp(bytes, stream);
  SFAC_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(temp.data(), bytes, deg, sorted_degrees,
                                                          ids_in, ids, n, 0, 32, stream));
}

}  // namespace

void order_rows_by_degree(const int64_t* offsets, int64_t rows, int32_t* ids,
                          int32_t* sorted_degrees, cudaStream_t stream) {
  if (rows == 0) return;
  DeviceBuffer<int32_t> deg(static_cast<size_t>(rows), stream);
  DeviceBuffer<int32_t> ids_in(static_cast<size_t>(rows), stream);
  row_degrees<<<blocks_for(rows), 256, 0, stream>>>(offsets, rows, deg.data(), ids_in.data());
  SFAC_CUDA_CHECK_LAUNCH();
  sort_ids_by_degree(deg.data(), ids_in.data(), rows, ids, sorted_degrees, stream);
}

void order_cols_by_degree(const int32_t* cols, int64_t nnz, int64_t ncols, int32_t* ids,
                          int32_t* sorted_degrees, cudaStream_t stream) {
  if (ncols == 0) return;
  DeviceBuffer<int32_t> deg(static_cast<size_t>(ncols), stream);
  DeviceBuffer<int32_t> ids_in(static_cast<size_t>(ncols), stream);
  SFAC_CUDA_TRY(cudaMemsetAsync(deg.data(), 0, ncols * sizeof(int32_t), stream));
  if (nnz > 0) {
    column_degrees<<<blocks_for(nnz), 256, 0, stream>>>(cols, nnz, deg.data());
    SFAC_CUDA_CHECK_LAUNCH();
  }
  iota<<<blocks_for(ncols), 256, 0, stream>>>(ncols, ids_in.data());
  SFAC_CUDA_CHECK_LAUNCH();
  sort_ids_by_degree(deg.data(), ids_in.data(), ncols, ids, sorted_degrees, stream);
}

void invert_permutation(const int32_t* order, int64_t n, int32_t* rank, cudaStream_t stream) {
  if (n == 0) return;
  scatter_ranks<<<blocks_for(n), 256, 0, stream>>>(order, n, rank);
  SFAC_CUDA_CHECK_LAUNCH();
}

void renumber(const int32_t* in, const int32_t* rank, int64_t n, int32_t* out,
              cudaStream_t stream) {
  if (n == 0) return;
  renumber_entries<<<blocks_for(n), 256, 0, stream>>>(in, rank, n, out);
  SFAC_CUDA_CHECK_LAUNCH();
}

void gather_rows(const void* in, const int32_t* order, int64_t rows, int64_t row_bytes, void* out,
                 cudaStream_t stream) {
  if (rows == 0 || row_bytes == 0) return;
  if (row_bytes % 16 == 0) {
    launch_gather_rows<uint4>(in, order, rows, row_bytes, out, stream);
  } else if (row_bytes % 8 == 0) {
    launch_gather_rows<uint2>(in, order, rows, row_bytes, out, stream);
  } else if (row_bytes % 4 == 0) {
    launch_gather_rows<uint32_t>(in, order, rows, row_bytes, out, stream);
  } else {
    launch_gather_rows<uint16_t>(in, order, rows, row_bytes, out, stream);
  }
}

}  // namespace sfac::cuda::kernels
