// Tiled SDDMM (cuSDDMM's column panels): the columns of S are cut into panels of W columns whose
// rows of B fit in shared memory. The plan orders the nonzeros panel-major (CSR order within a
// panel); a persistent block owns a contiguous share of that order, stages each panel's B slice
// in shared memory once, and its warps walk the share like the group kernel: G lanes per
// nonzero, A's row slice cached in registers while consecutive nonzeros share a row.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/sddmm_kernels.cuh"

namespace sfac::cuda::kernels {

struct PanelOrder {
  int64_t panel_width = 0;
  int64_t panels = 0;
  const int64_t* order = nullptr;          // CSR slots, panel-major (nnz entries)
  const int64_t* panel_offsets = nullptr;  // panels + 1 offsets into `order`
};

// Columns per panel for K (sized for float32 storage within the shared-memory budget).
int64_t tiled_panel_width(int64_t k);

// Fills order (nnz) and panel_offsets (panels + 1) for cols / panel_width panels.
void build_panel_order(const int32_t* cols, int64_t nnz, int64_t ncols, int64_t panel_width,
                       int64_t* order, int64_t* panel_offsets, cudaStream_t stream);

// Returns false (launching nothing) when K does not fill whole 16-byte vectors or is too large.
bool launch_sddmm_tiled(const SddmmArgs& args, const PanelOrder& panels, int64_t cols,
                        cudaStream_t stream);

}  // namespace sfac::cuda::kernels
