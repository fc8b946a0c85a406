// SDDMM kernels: P_e = alpha * f(dot(A_i, B_j), S_e) + beta * P_e at every nonzero e = (i, j).
// Kernels know nothing of the API: plain pointers, the factor element type, compile-time tiles.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace sfac::cuda::kernels {

enum class SddmmOp : int { Scaled = 0, Pattern = 1, Residual = 2 };

// Storage type of the dense factors; arithmetic is always float32.
enum class ElemType : int { F32 = 0, F16 = 1, BF16 = 2 };

struct SddmmArgs {
  const void* a;  // M x K row-major, `elem` storage
  const void* b;  // N x K row-major, `elem` storage
  ElemType elem;
  SddmmOp op;
  const int64_t* row_offsets;
  const int32_t* row_of;  // row of every nonzero (nonzero-split kernels only)
  const int32_t* cols;
  const float* s;
  float* p;  // may alias s
  // Nonzero-split kernels only: when set, nonzero e (cols[e], row_of[e]) is S's and P's
  // position positions[e] (a subset of the pattern, such as the residual of dense corners).
  const int64_t* positions;
  int64_t rows;
  int64_t nnz;
  // Elements from one row of a or b to the next: a whole number of 16-byte vectors, every
  // kernel's precondition (a CudaDenseMatrix's stride; zeros past the caller's K add nothing).
  int64_t k;
  float alpha;
  float beta;
  // Launch the kernels that begin with overlap_launch_with_prior_grid as programmatic dependents
  // of the stream's previous kernel (the device must be of compute capability 9.0 or up).
  bool dependent_launch;
};

// Warp per row, the row's A vector reused across its nonzeros (in registers when K <= 256
// vectors, else from L1); no row_of array.
void launch_sddmm_row_split(const SddmmArgs& args, cudaStream_t stream);
// Nonzero-balanced (honours `positions`): sub-warp groups per nonzero with A cached in registers
// when K <= 256 vectors; otherwise a warp per nonzero.
void launch_sddmm_nnz_split(const SddmmArgs& args, cudaStream_t stream);
// row_of[e] = row of nonzero e, from CSR offsets.
void launch_expand_rows(const int64_t* row_offsets, int64_t rows, int32_t* row_of,
                        cudaStream_t stream);
// The column and row of each nonzero at `positions` (n of them): the cols / row_of arrays of a
// nonzero-split view that lists a subset or a reordering of the pattern (SddmmArgs::positions).
void launch_gather_entries(const int64_t* positions, int64_t n, const int32_t* cols,
                           const int32_t* row_of, int32_t* out_cols, int32_t* out_rows,
                           cudaStream_t stream);

}  // namespace sfac::cuda::kernels
