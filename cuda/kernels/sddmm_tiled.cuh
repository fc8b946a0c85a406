// Tiled SDDMM (cuSDDMM's column panels): the columns of S are cut into panels of W columns whose
// rows of B fit in shared memory. A persistent block loads a panel's B slice once and serves
// every (row, panel) segment of its share from it, so B is read from DRAM/L2 once per block and
// panel instead of once per nonzero; A is reloaded once per segment.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/sddmm_kernels.cuh"

namespace sfac::cuda::kernels {

// Segments of a CSR pattern in panel-major order (rows ascending within a panel).
struct PanelSegments {
  int64_t count = 0;
  int64_t panel_width = 0;
  const int32_t* panel = nullptr;       // panel of each segment (ascending)
  const int32_t* row = nullptr;         // row of each segment
  const int64_t* begin = nullptr;       // first CSR slot of each segment
  const int64_t* end = nullptr;         // one past the last CSR slot
  const int64_t* nnz_before = nullptr;  // exclusive prefix sum of segment lengths
};

// Columns per panel for K (sized for float32 storage within the shared-memory budget).
int64_t tiled_panel_width(int64_t k);

// Builds the segments into caller-owned device arrays of nnz capacity (count is returned).
// row_of: COO row of every nonzero. Scratch is allocated from the stream-ordered pool.
int64_t build_panel_segments(const int32_t* row_of, const int32_t* cols, int64_t nnz,
                             int64_t panel_width, int32_t* panel, int32_t* row, int64_t* begin,
                             int64_t* end, int64_t* nnz_before, cudaStream_t stream);

// Returns false (launching nothing) when K does not fill whole 16-byte vectors or is too large.
bool launch_sddmm_tiled(const SddmmArgs& args, const PanelSegments& segments, int64_t cols,
                        cudaStream_t stream);

}  // namespace sfac::cuda::kernels
