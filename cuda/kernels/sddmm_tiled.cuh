// Tiled SDDMM (cuSDDMM's SM-L2 / GPU-Shared idea): the columns of S are cut into bands of W
// columns and the rows into blocks of R rows. A thread block owns one (row block, band) tile,
// stages the band's rows of B in shared memory one K-slice at a time, and computes the tile's
// nonzeros from there: B is read from L2 once per tile instead of once per nonzero.
//
// Within a row, one band's nonzeros are a contiguous CSR range, so column loads and result
// stores stay coalesced and P keeps CSR order; the plan stores where each (row, band) range
// starts. K-slices after the first accumulate in a float buffer (P itself when nothing else
// reads it), the last slice applies the output rule.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/sddmm_kernels.cuh"

namespace sfac::cuda::kernels {

struct BandTiling {
  int64_t band_width = 0;  // W columns per band
  int64_t bands = 0;
  int64_t row_block = 0;                 // R rows per tile
  const int32_t* band_starts = nullptr;  // rows x (bands + 1): offset of each band within a row
};

// Shape for a pattern and K (independent of the factor element type, so one plan serves
// float32 and 16-bit factors).
BandTiling plan_band_tiling(int64_t k, int64_t rows, int64_t cols, int64_t nnz, int sms);

// Entries of band_starts; the table is worth building only when it is no larger than the
// pattern's column indices (on average at least one nonzero per row and band).
int64_t band_table_entries(const BandTiling& tiling, int64_t rows);
bool band_tiling_pays(const BandTiling& tiling, int64_t rows, int64_t nnz);

void build_band_starts(const int64_t* row_offsets, const int32_t* cols, int64_t rows,
                       int64_t band_width, int64_t bands, int32_t* band_starts,
                       cudaStream_t stream);

// Returns false (launching nothing) when K does not fill whole 16-byte vectors. With several
// K-slices the partial sums go to P when op is Pattern and beta == 0 (nothing then reads P's
// old values or S), else to a scratch buffer from the stream's pool.
bool launch_sddmm_tiled(const SddmmArgs& args, const BandTiling& tiling, int64_t cols,
                        cudaStream_t stream);

}  // namespace sfac::cuda::kernels
