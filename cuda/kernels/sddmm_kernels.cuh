// SDDMM kernels: P_e = alpha * f(dot(A_i, B_j), S_e) + beta * P_e at every nonzero e = (i, j).
// Kernels know nothing of the API: plain pointers and a Policy of compile-time knobs.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace sfac::cuda::kernels {

enum class SddmmOp : int { Scaled = 0, Pattern = 1, Residual = 2 };

struct SddmmArgs {
  const float* a;  // M x K row-major
  const float* b;  // N x K row-major
  const int64_t* row_offsets;
  const int32_t* row_of;  // row of every nonzero (NNZ_SPLIT only)
  const int32_t* cols;
  const float* s;
  float* p;  // may alias s
  int64_t rows;
  int64_t nnz;
  int64_t k;
  float alpha;
  float beta;
};

// Launches the warp-per-row kernel (a row's A vector stays in L1 across its nonzeros).
void launch_sddmm_row_split(const SddmmArgs& args, SddmmOp op, cudaStream_t stream);
// Launches the warp-per-nonzero kernel over the COO view: balanced whatever the row lengths.
void launch_sddmm_nnz_split(const SddmmArgs& args, SddmmOp op, cudaStream_t stream);
// Sub-warp groups per nonzero with A cached in registers (needs row_of). Returns false, launching
// nothing, when K is not a multiple of 4 or exceeds 1024: the caller then uses the warp kernels.
bool launch_sddmm_grouped(const SddmmArgs& args, SddmmOp op, cudaStream_t stream);
// row_of[e] = row of nonzero e, from CSR offsets.
void launch_expand_rows(const int64_t* row_offsets, int64_t rows, int32_t* row_of,
                        cudaStream_t stream);

}  // namespace sfac::cuda::kernels
