// Degree orders and renumbering on the device. core/reorder.h holds the host versions, which
// these match bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device_buffer.h"

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

// Row r of out = row order[r] of in, for rows of row_bytes bytes (a multiple of 2; in and out
// aligned to 16 bytes).
void gather_rows(const void* in, const int32_t* order, int64_t rows, int64_t row_bytes, void* out,
                 cudaStream_t stream);

// A CSR matrix with rows and columns renumbered: row r of the result is row row_order[r] (row r
// when null), and column c becomes col_rank[c] (unchanged when null), each row's columns sorted
// again. A gather of whole rows and a segmented sort of each row's columns: no entry moves
// between rows, so nothing is sorted across them. Columns must be distinct within a row.
void permute_csr(const int64_t* offsets, const int32_t* cols, const float* values, int64_t rows,
                 int64_t nnz, const int32_t* row_order, const int32_t* col_rank,
                 DeviceBuffer<int64_t>& new_offsets, DeviceBuffer<int32_t>& new_cols,
                 DeviceBuffer<float>& new_values, cudaStream_t stream);

}  // namespace sfac::cuda::kernels
