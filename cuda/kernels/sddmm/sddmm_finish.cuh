// Elementwise steps around an SDDMM computed elsewhere (cusparseSDDMM): the output rule applied
// to precomputed dot products, and the narrowing of 64-bit row offsets that cuSPARSE reads as
// 32-bit ones.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/sddmm/sddmm_kernels.cuh"

namespace sfac::cuda::kernels {

// P_e = alpha * f(dots[e], S_e) + beta * P_e for every nonzero e < args.nnz (args.p may alias
// args.s; args.a, args.b, rows, cols and row_of are not read).
void launch_sddmm_finish(const SddmmArgs& args, const float* dots, cudaStream_t stream);

// out[i] = in[i] for i < n; every in[i] fits 32 bits.
void launch_narrow_offsets(const int64_t* in, int64_t n, int32_t* out, cudaStream_t stream);

}  // namespace sfac::cuda::kernels
