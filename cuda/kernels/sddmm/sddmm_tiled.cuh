// Tiled SDDMM (cuSDDMM's SM-L2 / GPU-Shared idea): the columns of S are cut into bands of W
// columns and the rows into blocks of R rows; a (row block, band) cell's nonzeros, taken row by
// row (each row's part of a band is a contiguous CSR range), are cut into tiles of equal
// nonzero count. A thread block owns one tile: it stages the band's rows of B in shared memory
// one 128-byte K-slice at a time and every thread computes a run of consecutive nonzeros of the
// tile, with A's slice of the run's current row in registers. B is read from L2 once per tile
// instead of once per nonzero, and no thread waits on another's longer row.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device_buffer.h"
#include "cuda/kernels/sddmm/sddmm_kernels.cuh"

namespace sfac::cuda::kernels {

struct BandTiling {
  int64_t band_width = 0;  // W columns per band
  int64_t bands = 0;
  int64_t row_block = 0;  // R rows per cell
  int64_t tiles = 0;
  const int32_t* seg_start = nullptr;        // (bands + 1) x rows: where band j starts in row r
  const int32_t* cell_first_tile = nullptr;  // cells (row block major, then band)
  const int32_t* tile_cell = nullptr;        // tiles
};

// The tables a BandTiling points into; owned by the plan.
struct BandTables {
  DeviceBuffer<int32_t> seg_start, cell_first_tile, tile_cell;
};

// The kernel's limits, which plan_band_tiling (cuda/sddmm_planning.h) sizes tilings within:
// bands of at most kBandWidth columns (a double-buffered B slice of 2 x 40 KB) and cells of at
// most kMaxRowBlock rows (per-row tables in shared memory).
constexpr int64_t kBandWidth = 320;
constexpr int kMaxRowBlock = 1024;

// Entries of the seg_start table (see band_tiling_pays in cuda/sddmm_planning.h).
int64_t band_table_entries(const BandTiling& tiling, int64_t rows);

// seg_start (band-major, (bands + 1) x rows): offset in row r of its first column >= j * W (the
// row's length for j = bands). Shared with the dense-tile kernel.
void build_seg_starts(const int64_t* row_offsets, const int32_t* cols, int64_t rows,
                      int64_t band_width, int64_t bands, int32_t* seg_start, cudaStream_t stream);

#ifdef __CUDACC__
// Nonzeros of cell c = (row block c / bands of `row_block` rows, band c % bands) from a
// seg_start table, summed by the calling warp; every lane gets the total.
__device__ inline int64_t warp_cell_nonzeros(const int32_t* seg_start, int64_t rows, int64_t bands,
                                             int64_t row_block, int64_t c) {
  const int64_t band = c % bands, row0 = c / bands * row_block;
  const int64_t row_end = min(row0 + row_block, rows);
  int64_t count = 0;
  for (int64_t r = row0 + threadIdx.x % 32; r < row_end; r += 32) {
    count += seg_start[(band + 1) * rows + r] - seg_start[band * rows + r];
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    count += __shfl_xor_sync(0xffffffffu, count, offset);
  }
  return count;
}
#endif

// Fills `tables` and points `tiling` at them. Waits for the stream once (the tile count).
void build_band_tables(const int64_t* row_offsets, const int32_t* cols, int64_t rows,
                       BandTiling& tiling, BandTables& tables, cudaStream_t stream);

void launch_sddmm_tiled(const SddmmArgs& args, const BandTiling& tiling, int64_t cols,
                        cudaStream_t stream);

}  // namespace sfac::cuda::kernels
