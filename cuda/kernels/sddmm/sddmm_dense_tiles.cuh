// Dense tensor-core tiles for dense patterns with 16-bit factors: a block computes a whole
// 128 x 128 tile of A·Bᵀ with mma.sync (16-bit inputs, float32 accumulation, so each dot
// product is as exact as the gather kernels'), keeps it in shared memory, and writes the
// tile's nonzeros from there. It does 1/density times the arithmetic the pattern needs, but on
// tensor cores and with A and B read once per tile, which beats gathering B rows once the
// pattern is a few percent dense.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/sddmm/sddmm_kernels.cuh"

namespace sfac::cuda::kernels {

constexpr int64_t kDenseTile = 128;

struct DenseTiling {
  int64_t bands = 0;                   // column tiles
  const int32_t* seg_start = nullptr;  // (bands + 1) x rows, see build_seg_starts
};

// Lets the current device's dense-tile and corner-tile kernels take their staging buffers
// (beyond the 48 KB default). Once per plan that may launch them: per call it cost ~2 us of host
// time on an H100 host, half a launch.
void allow_tile_shared_memory();

// Returns false (launching nothing) unless the factors are 16-bit.
bool launch_sddmm_dense_tiles(const SddmmArgs& args, const DenseTiling& tiling, int64_t cols,
                              cudaStream_t stream);

}  // namespace sfac::cuda::kernels
