// Dense tensor-core tiles for dense patterns with 16-bit factors: a block computes a whole
// 128 x 128 tile of A·Bᵀ with mma.sync (16-bit inputs, float32 accumulation, so each dot
// product is as exact as the gather kernels'), keeps it in shared memory, and writes the
// tile's nonzeros from there. It does 1/density times the arithmetic the pattern needs, but on
// tensor cores and with A and B read once per tile, which beats gathering B rows once the
// pattern is a few percent dense.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/sddmm_kernels.cuh"

namespace sfac::cuda::kernels {

constexpr int64_t kDenseTile = 128;

// Below this density the gather kernels move fewer bytes than a tile's arithmetic costs: the
// break-even is ~1.2% at peak tensor and L2 rates, and the tiles reach well below peak. The
// dense pattern measured (4%) and the power-law corners (docs/perf-notes.md) win from K = 256.
constexpr double kMinDenseTileDensity = 0.02;

struct DenseTiling {
  int64_t bands = 0;                   // column tiles
  const int32_t* seg_start = nullptr;  // (bands + 1) x rows, see build_seg_starts
};

// Whether dense tiles pay for this pattern (its density against the tensor-core break-even).
bool dense_tiles_pay(int64_t rows, int64_t cols, int64_t nnz);
int64_t dense_bands(int64_t cols);

// Lets the current device's dense-tile and corner-tile kernels take their staging buffers
// (beyond the 48 KB default). Once per plan that may launch them: per call it cost ~2 us of host
// time on an H100 host, half a launch.
void allow_tile_shared_memory();

// Returns false (launching nothing) unless the factors are 16-bit and K is a multiple of 8.
bool launch_sddmm_dense_tiles(const SddmmArgs& args, const DenseTiling& tiling, int64_t cols,
                              cudaStream_t stream);

}  // namespace sfac::cuda::kernels
