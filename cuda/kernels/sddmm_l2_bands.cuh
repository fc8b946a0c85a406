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

// Where the band order pays (measured on an H100 with 50 MB of L2, float32, docs/perf-notes.md):
// - B beyond L2: the gathers run at the DRAM rate in CSR order; in band order at the L2 rate
//   (Yahoo shape, K = 128: 34.8 -> 17.1 ms). B counts as beyond once it exceeds 7/8 of L2 (L2
//   also holds the index and output streams: uniform 100k x 100k at 1%, K = 128, B of 51 MB,
//   still gains).
// - B within L2 and factor rows of at least 512 bytes: bands of 1-2 MB of B are faster than
//   CSR order too (Netflix shape, K = 128: 5.79 -> 4.71 ms; MovieLens shape 1.24 -> 1.17),
//   though not with shorter rows (K = 32: 1.33 -> 1.63) nor for 16-bit factors.
// - Only where rows meet each band many times: every band reads again the A rows it meets (a 1M
//   x 1M graph with 10 nonzeros per row, K = 128: 1.8 -> 3.0 ms).
// With rows of at least kL2BandMinRowBytes, bands are sized for about kL2BandTargetReuse nonzeros
// per (row, band) on average, with B's slice between kL2BandMinSlice and a third of L2; with
// shorter rows (only B beyond L2 gets here) a slice is a third of L2 (Yahoo shape, K = 32: 5.02 ms
// with 16.7 MB slices, 5.41 with 6.7 MB). The order is taken only when that leaves at least two
// bands with at least kMinL2BandReuse nonzeros per (row, band).
constexpr int64_t kL2BandTargetReuse = 20;
constexpr int64_t kMinL2BandReuse = 2;
constexpr int64_t kL2BandMinSlice = int64_t{1} << 20;
constexpr int64_t kL2BandMinRowBytes = 512;

// B larger than this counts as beyond L2.
inline int64_t l2_band_min_b_bytes(int64_t l2_bytes) { return l2_bytes / 8 * 7; }

// Columns per band for a pattern with float32 factor rows of `row_bytes` on a device with
// `l2_bytes` of L2, or 0 where the band order does not pay for float32 factors.
int64_t l2_band_columns(int64_t rows, int64_t cols, int64_t nnz, int64_t row_bytes,
                        int64_t l2_bytes);

// Whether a call runs the order its plan built: float32 factors with rows of at least
// kL2BandMinRowBytes, or any factors whose B (`b_bytes`) is beyond L2.
bool l2_band_order_runs(bool float32, int64_t row_bytes, int64_t b_bytes, int64_t l2_bytes);

// Fills `tables` with the band-major order of a CSR pattern (columns sorted within rows) and
// points `order` at them.
void build_l2_band_order(const int32_t* cols, const int32_t* row_of, int64_t nnz, int64_t ncols,
                         int64_t band_cols, L2BandOrder& order, L2BandTables& tables,
                         cudaStream_t stream);

}  // namespace sfac::cuda::kernels
