// Sparse format conversions on the device.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace sfac::cuda::kernels {

// CSC view of a CSR pattern: col_offsets (cols + 1), row_indices (nnz) and csr_position (nnz,
// the CSR slot of each CSC entry, so values are a gather). Entries of a column stay in row order.
// row_of is the COO row of every CSR nonzero.
void build_csc(const int32_t* cols, const int32_t* row_of, int64_t ncols, int64_t nnz,
               int64_t* col_offsets, int32_t* row_indices, int64_t* csr_position,
               cudaStream_t stream);

// out[e] = in[index[e]] for e < n.
void gather(const float* in, const int64_t* index, int64_t n, float* out, cudaStream_t stream);

}  // namespace sfac::cuda::kernels
