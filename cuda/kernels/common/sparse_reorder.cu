#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels/common/device_scan.cuh"
#include "cuda/kernels/common/grid_stride.cuh"
#include "cuda/kernels/common/sparse_reorder.cuh"

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

// lengths[r] = the length of row order[r] (row r without an order); lengths[rows] = 0.
__global__ void permuted_lengths(const int64_t* offsets, const int32_t* order, int64_t rows,
                                 int64_t* lengths) {
  for_each_index(rows + 1, [&](int64_t r) {
    if (r == rows) {
      lengths[r] = 0;
      return;
    }
    const int64_t o = order ? order[r] : r;
    lengths[r] = offsets[o + 1] - offsets[o];
  });
}

// A warp per new row: copies row order[r]'s entries to their new place, columns through
// col_rank when given.
__global__ void gather_csr_rows(const int64_t* offsets, const int32_t* cols, const float* values,
                                const int32_t* order, const int32_t* col_rank, int64_t rows,
                                const int64_t* new_offsets, int32_t* new_cols, float* new_values) {
  for_each_warp_index(rows, [&](int64_t r, int lane) {
    const int64_t o = order ? order[r] : r;
    const int64_t src = offsets[o], len = offsets[o + 1] - src, dst = new_offsets[r];
    for (int64_t i = lane; i < len; i += 32) {
      const int32_t c = cols[src + i];
      new_cols[dst + i] = col_rank ? col_rank[c] : c;
      new_values[dst + i] = values[src + i];
    }
  });
}

// Ids by degree, descending; ties keep id order because the radix sort is stable.
void sort_ids_by_degree(const int32_t* deg, const int32_t* ids_in, int64_t n, int32_t* ids,
                        int32_t* sorted_degrees, cudaStream_t stream) {
  DeviceBuffer<int32_t> sorted;
  if (sorted_degrees == nullptr) {
    sorted = DeviceBuffer<int32_t>(static_cast<size_t>(n), stream);
    sorted_degrees = sorted.data();
  }
  run_with_temp_storage("cub::DeviceRadixSort::SortPairsDescending", stream,
                        [&](void* temp, size_t& bytes) {
                          return cub::DeviceRadixSort::SortPairsDescending(
                              temp, bytes, deg, sorted_degrees, ids_in, ids, n, 0, 32, stream);
                        });
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

void permute_csr(const int64_t* offsets, const int32_t* cols, const float* values, int64_t rows,
                 int64_t nnz, const int32_t* row_order, const int32_t* col_rank,
                 DeviceBuffer<int64_t>& new_offsets, DeviceBuffer<int32_t>& new_cols,
                 DeviceBuffer<float>& new_values, cudaStream_t stream) {
  new_offsets = DeviceBuffer<int64_t>(static_cast<size_t>(rows + 1), stream);
  new_cols = DeviceBuffer<int32_t>(static_cast<size_t>(nnz), stream);
  new_values = DeviceBuffer<float>(static_cast<size_t>(nnz), stream);
  {
    DeviceBuffer<int64_t> lengths(static_cast<size_t>(rows + 1), stream);
    permuted_lengths<<<blocks_for(rows + 1), 256, 0, stream>>>(offsets, row_order, rows,
                                                               lengths.data());
    SFAC_CUDA_CHECK_LAUNCH();
    exclusive_sum(lengths.data(), new_offsets.data(), rows + 1, stream);
  }
  if (nnz == 0) return;
  // Without new column numbers each row keeps its (sorted) order: copy straight to the result.
  DeviceBuffer<int32_t> unsorted_cols;
  DeviceBuffer<float> unsorted_values;
  if (col_rank) {
    unsorted_cols = DeviceBuffer<int32_t>(static_cast<size_t>(nnz), stream);
    unsorted_values = DeviceBuffer<float>(static_cast<size_t>(nnz), stream);
  }
  int32_t* gathered_cols = col_rank ? unsorted_cols.data() : new_cols.data();
  float* gathered_values = col_rank ? unsorted_values.data() : new_values.data();
  gather_csr_rows<<<blocks_for(rows * 32), 256, 0, stream>>>(offsets, cols, values, row_order,
                                                             col_rank, rows, new_offsets.data(),
                                                             gathered_cols, gathered_values);
  SFAC_CUDA_CHECK_LAUNCH();
  if (!col_rank) return;
  // Columns are distinct within a row, so any sort gives the one sorted row.
  run_with_temp_storage(
      "cub::DeviceSegmentedSort::SortPairs", stream, [&](void* temp, size_t& bytes) {
        return cub::DeviceSegmentedSort::SortPairs(
            temp, bytes, gathered_cols, new_cols.data(), gathered_values, new_values.data(), nnz,
            rows, new_offsets.data(), new_offsets.data() + 1, stream);
      });
}

}  // namespace sfac::cuda::kernels
