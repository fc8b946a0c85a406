// L2 bands for the gather kernels. When B is larger than L2, the nonzero-split kernel's B rows
// come from DRAM: on an H100, 1M x 625k with 250M nonzeros (the bench's Yahoo shape) at K = 128
// reads 98 GB from DRAM for 128 GB of gathers, and runs at the DRAM rate. Taking the nonzeros
// band by band (bands of columns whose B rows fit in a part of L2, rows in order within a band)
// keeps each band's slice of B in L2 while its nonzeros run; the plan stores that order (each
// entry's CSR position, column and row, so every per-nonzero read is contiguous) and the call
// runs the nonzero-split kernel over it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device_buffer.h"

namespace sfac::cuda::kernels {

struct L2BandOrder {
  int64_t bands = 0;
  int64_t band_cols = 0;
  const int64_t* positions = nullptr;  // nnz: CSR position of each entry, band-major
  const int32_t* cols = nullptr;       // nnz: its column
  const int32_t* rows = nullptr;       // nnz: its row
};

struct L2BandTables {
  DeviceBuffer<int64_t> positions;
  DeviceBuffer<int32_t> cols, rows;
};

// AUTO takes the band order only where each row meets each band at least this many times on
// average (nonzeros >= this x rows x bands): every band reads again the A rows it meets, so with
// fewer nonzeros per (row, band) those reads cost what the B gathers saved (a 1M x 1M graph with
// 10 nonzeros per row, float32 K = 128: 3.0 against 1.8 ms).
constexpr int64_t kMinL2BandReuse = 2;

// The band order pays once B is larger than about seven eighths of L2: L2 also holds the index
// and output streams (measured on an H100, 50 MB L2: uniform 100k x 100k at 1%, float32 K = 128,
// B of 51 MB: 6.4-6.5 ms against 6.8; Yahoo shape, bfloat16 K = 32, B of 40 MB: 4.3 against 3.95).
// A band's slice of B takes a third of L2.
inline int64_t l2_band_min_b_bytes(int64_t l2_bytes) { return l2_bytes / 8 * 7; }
inline int64_t l2_band_slice_bytes(int64_t l2_bytes) { return l2_bytes / 3; }

// Columns per band for B rows of `row_bytes`, so that a band's slice of B takes `slice_bytes`.
int64_t l2_band_columns(int64_t row_bytes, int64_t slice_bytes);

// Fills `tables` with the band-major order of a CSR pattern (columns sorted within rows) and
// points `order` at them.
void build_l2_band_order(const int32_t* cols, const int32_t* row_of, int64_t nnz, int64_t ncols,
                         int64_t band_cols, L2BandOrder& order, L2BandTables& tables,
                         cudaStream_t stream);

}  // namespace sfac::cuda::kernels
