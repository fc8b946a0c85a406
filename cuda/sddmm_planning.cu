#include <algorithm>
#include <climits>

#include "cuda/kernels/sddmm/sddmm_dense_tiles.cuh"
#include "cuda/sddmm_planning.h"

namespace sfac::cuda::kernels {

BandTiling plan_band_tiling(int64_t rows, int64_t cols) {
  BandTiling bt;
  bt.band_width = std::clamp<int64_t>(cols, 1, kBandWidth);
  bt.bands = std::max<int64_t>(1, (cols + bt.band_width - 1) / bt.band_width);
  bt.row_block = std::clamp<int64_t>(rows, 1, kMaxRowBlock);
  return bt;
}

bool band_tiling_pays(const BandTiling& tiling, int64_t rows, int64_t nnz) {
  // Cell and tile numbers are int32 (both are at most the table's size).
  const int64_t entries = band_table_entries(tiling, rows);
  return entries <= std::max<int64_t>(nnz, 1) && entries <= INT32_MAX;
}

bool cells_pay(int64_t rows, int64_t cols, int64_t nnz) {
  return rows > 0 && cols > 0 &&
         static_cast<double>(nnz) >=
             kMinCellDensity * static_cast<double>(rows) * static_cast<double>(cols);
}

int64_t dense_bands(int64_t cols) {
  return std::max<int64_t>(1, (cols + kDenseTile - 1) / kDenseTile);
}

bool dense_tiles_pay(int64_t rows, int64_t cols, int64_t nnz) {
  if (rows <= 0 || cols <= 0) return false;
  const int64_t tiles = (rows + kDenseTile - 1) / kDenseTile * dense_bands(cols);
  return static_cast<double>(nnz) / (double(rows) * double(cols)) >= kMinDenseTileDensity &&
         tiles <= INT32_MAX;
}

int64_t l2_band_columns(int64_t rows, int64_t cols, int64_t nnz, int64_t row_bytes,
                        int64_t l2_bytes) {
  if (rows <= 0 || cols <= 0 || row_bytes <= 0 || l2_bytes <= 0) return 0;
  const bool beyond = static_cast<double>(cols) * static_cast<double>(row_bytes) >
                      static_cast<double>(l2_band_min_b_bytes(l2_bytes));
  if (!beyond && row_bytes < kL2BandMinRowBytes) return 0;
  const int64_t target_bands = std::max<int64_t>(1, nnz / (kL2BandTargetReuse * rows));
  const int64_t min_cols = (kL2BandMinSlice + row_bytes - 1) / row_bytes;
  const int64_t max_cols = std::max(min_cols, l2_bytes / 3 / row_bytes);
  const int64_t band_cols =
      row_bytes >= kL2BandMinRowBytes
          ? std::clamp<int64_t>((cols + target_bands - 1) / target_bands, min_cols, max_cols)
          : max_cols;
  const int64_t bands = (cols + band_cols - 1) / band_cols;
  const bool reused =
      static_cast<double>(nnz) >=
      static_cast<double>(kMinL2BandReuse) * static_cast<double>(rows) * static_cast<double>(bands);
  return bands >= 2 && reused ? band_cols : 0;
}

bool l2_band_order_runs(bool float32, int64_t row_bytes, int64_t b_bytes, int64_t l2_bytes) {
  return (float32 && row_bytes >= kL2BandMinRowBytes) || b_bytes > l2_band_min_b_bytes(l2_bytes);
}

}  // namespace sfac::cuda::kernels
