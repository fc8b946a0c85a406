// L2 band order for the gather kernels. In CSR order the nonzero-split kernel's B rows come
// from all of B at once; when B is larger than L2 they come from DRAM (on an H100, 1M x 625k with
// 250M nonzeros, the bench's Yahoo shape, at K = 128 reads 98 GB from DRAM for 128 GB of
// gathers). Taking the nonzeros band by band (bands of columns, rows in order within a band)
// keeps each band's slice of B in L2 while its nonzeros run; the plan stores that order (each
// entry's CSR position, column and row, so every per-nonzero read is contiguous) and the call
// runs the nonzero-split kernel over it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device_buffer.h"

namespace sfac::cuda::kernels {

struct L2BandOrder {
  const int64_t* positions = nullptr;  // nnz: CSR position of each entry, band-major
  const int32_t* cols = nullptr;       // nnz: its column
  const int32_t* rows = nullptr;       // nnz: its row
};

struct L2BandTables {
  DeviceBuffer<int64_t> positions;
  DeviceBuffer<int32_t> cols, rows;
};

// Fills `tables` with the band-major order of a CSR pattern (columns sorted within rows) and
// points `order` at them.
void build_l2_band_order(const int32_t* cols, const int32_t* row_of, int64_t nnz, int64_t ncols,
                         int64_t band_cols, L2BandOrder& order, L2BandTables& tables,
                         cudaStream_t stream);

}  // namespace sfac::cuda::kernels
