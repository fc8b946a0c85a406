// Host-side SDDMM planning: whether each tile kernel and the L2 band order pay for a pattern, and
// the band tiles' shape. Decisions on sizes only; the table builders stay beside their kernels.
#pragma once

#include <cstdint>

#include "cuda/kernels/sddmm/sddmm_tiled.cuh"

namespace sfac::cuda::kernels {

// Band tiles (kernels/sddmm/sddmm_tiled.cuh).

// Shape for a pattern (independent of K and of the factor element type, so one plan serves
// every call on the pattern).
BandTiling plan_band_tiling(int64_t rows, int64_t cols);

// The tables are worth building only when their seg_start table (band_table_entries) is no
// larger than the pattern's column indices (on average at least one nonzero per row and band).
bool band_tiling_pays(const BandTiling& tiling, int64_t rows, int64_t nnz);

// Cells (kernels/sddmm/sddmm_cells.cuh).

// Below this density a staged row meets too few nonzeros of its cell (256 x 2% ~ 5) to pay for
// its staging.
constexpr double kMinCellDensity = 0.02;
// AUTO runs float32 factors on cells from this K: below it a cell's fixed costs (layout loads,
// the first chunk's staging) outweigh the gathers saved.
constexpr int64_t kMinCellK = 192;

bool cells_pay(int64_t rows, int64_t cols, int64_t nnz);

// Dense tensor-core tiles (kernels/sddmm/sddmm_dense_tiles.cuh).

// Below this density the gather kernels move fewer bytes than a tile's arithmetic costs: the
// break-even is ~1.2% at peak tensor and L2 rates, and the tiles reach well below peak. The
// dense pattern measured (4%) and the power-law corners (docs/perf-notes.md) win from K = 256.
constexpr double kMinDenseTileDensity = 0.02;

// Whether dense tiles pay for this pattern (its density against the tensor-core break-even).
bool dense_tiles_pay(int64_t rows, int64_t cols, int64_t nnz);
int64_t dense_bands(int64_t cols);

// L2 band order (kernels/sddmm/sddmm_l2_bands.cuh).

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

}  // namespace sfac::cuda::kernels
