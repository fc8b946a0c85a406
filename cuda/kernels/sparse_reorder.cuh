// Degree orders and renumbering on the device. core/reorder.h holds the host versions, which
// these match bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace sfac::cuda::kernels {

// Row ids by nonzero count, largest first, equal counts in id order (a stable radix sort), into
// ids (rows entries); the counts in that order into sorted_degrees unless it is null.
void order_rows_by_degree(const int64_t* offsets, int64_t rows, int32_t* ids,
                          int32_t* sorted_degrees, cudaStream_t stream);

// The same for the columns of a pattern with column indices cols (nnz entries).
void order_cols_by_degree(const int32_t* cols, int64_t nnz, int64_t ncols, int32_t* ids,
                          int32_t* sorted_degrees, cudaStream_t stream);

// rank[order[i]] = i for i < n (order a permutation of 0..n-1).
void invert_permutation(const int32_t* order, int64_t n, int32_t* rank, cudaStream_t stream);

// out[e] = rank[in[e]] for e < n.
void renumber(const int32_t* in, const int32_t* rank, int64_t n, int32_t* out, cudaStream_t stream);

// Row r of out = row order[r] of in, for rows of row_bytes bytes (a multiple of 2; in and out
// aligned to 16 bytes).
void gather_rows(const void* in, const int32_t* order, int64_t rows, int64_t row_bytes, void* out,
                 cudaStream_t stream);

}  // namespace sfac::cuda::kernels
