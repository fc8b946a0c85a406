// Dense corners of power-law patterns. With rows and columns ranked by degree, the nonzeros of a
// power-law pattern crowd into the top-left of the reordered matrix, where 128 x 128 tiles are
// dense enough for the tensor-core tiles of sddmm_dense_tiles (on the bench's Netflix shape a
// third of the nonzeros lie in tiles at least 5% dense). The plan lists those tiles with their
// nonzeros, and the nonzeros outside them (the residual) in CSR order for the gather kernels.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device_buffer.h"
#include "cuda/kernels/sddmm/sddmm_kernels.cuh"

namespace sfac::cuda::kernels {

// A tile entry is position << kCornerPlace | local row * 128 + local column.
constexpr int kCornerPlace = 14;

struct CornerTiling {
  int64_t tiles = 0;
  const int32_t* row_ids = nullptr;        // rank -> row (rows by degree, descending)
  const int32_t* col_ids = nullptr;        // rank -> column
  const int32_t* tile_row_band = nullptr;  // per tile: its rows are ranks 128 b .. 128 b + 127
  const int32_t* tile_col_band = nullptr;
  const int64_t* entry_start = nullptr;  // tiles + 1
  const int64_t* entries = nullptr;      // per tile, by position
  // Nonzeros in no tile, in CSR order: their positions, columns and rows.
  int64_t residual = 0;
  const int64_t* residual_pos = nullptr;
  const int32_t* residual_cols = nullptr;
  const int32_t* residual_rows = nullptr;
};

struct CornerTables {
  DeviceBuffer<int32_t> row_ids, col_ids, tile_row_band, tile_col_band;
  DeviceBuffer<int64_t> entry_start, entries, residual_pos;
  DeviceBuffer<int32_t> residual_cols, residual_rows;
};

// Finds the tiles of the degree-ranked pattern with at least `min_density` of their cells set.
// Unless they hold a fifth of the nonzeros and are several times denser than the pattern as a
// whole (a real corner, not ranking noise), returns false and builds nothing;
// otherwise fills `tables` and points `tiling` at them. Waits for the stream (tile counts).
bool build_corner_tables(const int64_t* offsets, const int32_t* cols, const int32_t* row_of,
                         int64_t rows, int64_t ncols, int64_t nnz, double min_density,
                         CornerTiling& tiling, CornerTables& tables, cudaStream_t stream);

// The listed tiles only (the residual is the caller's, with the gather kernels). Returns false
// (launching nothing) unless the factors are 16-bit and K is a multiple of 8.
bool launch_sddmm_corner_tiles(const SddmmArgs& args, const CornerTiling& tiling, int64_t cols,
                               cudaStream_t stream);

}  // namespace sfac::cuda::kernels
