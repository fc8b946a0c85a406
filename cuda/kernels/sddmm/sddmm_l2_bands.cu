#include <algorithm>
#include <cub/device/device_radix_sort.cuh>

#include "cuda/cuda_check.h"
#include "cuda/kernels/common/device_scan.cuh"
#include "cuda/kernels/common/grid_stride.cuh"
#include "cuda/kernels/sddmm/sddmm_kernels.cuh"
#include "cuda/kernels/sddmm/sddmm_l2_bands.cuh"

namespace sfac::cuda::kernels {
namespace {

__global__ void band_keys(const int32_t* cols, int64_t nnz, int64_t band_cols, uint32_t* keys,
                          int64_t* index) {
  for_each_index(nnz, [&](int64_t e) {
    keys[e] = static_cast<uint32_t>(cols[e] / band_cols);
    index[e] = e;
  });
}

}  // namespace

void build_l2_band_order(const int32_t* cols, const int32_t* row_of, int64_t nnz, int64_t ncols,
                         int64_t band_cols, L2BandOrder& order, L2BandTables& tables,
                         cudaStream_t stream) {
  band_cols = std::max<int64_t>(band_cols, 1);
  const int64_t bands = std::max<int64_t>(1, (ncols + band_cols - 1) / band_cols);
  L2BandTables t;
  t.positions = DeviceBuffer<int64_t>(nnz, stream);
  t.cols = DeviceBuffer<int32_t>(nnz, stream);
  t.rows = DeviceBuffer<int32_t>(nnz, stream);
  if (nnz > 0) {
    DeviceBuffer<uint32_t> keys(nnz, stream), sorted_keys(nnz, stream);
    DeviceBuffer<int64_t> index(nnz, stream);
    band_keys<<<blocks_for(nnz), 256, 0, stream>>>(cols, nnz, band_cols, keys.data(), index.data());
    SFAC_CUDA_CHECK_LAUNCH();
    // A stable radix sort on the band alone keeps CSR order (rows, then columns) within a band.
    const int end_bit = significant_bits(static_cast<uint64_t>(bands - 1));
    run_with_temp_storage(
        "cub::DeviceRadixSort::SortPairs", stream, [&](void* temp, size_t& bytes) {
          return cub::DeviceRadixSort::SortPairs(temp, bytes, keys.data(), sorted_keys.data(),
                                                 index.data(), t.positions.data(), nnz, 0, end_bit,
                                                 stream);
        });
    launch_gather_entries(t.positions.data(), nnz, cols, row_of, t.cols.data(), t.rows.data(),
                          stream);
  }
  tables = std::move(t);
  order.positions = tables.positions.data();
  order.cols = tables.cols.data();
  order.rows = tables.rows.data();
}

}  // namespace sfac::cuda::kernels
