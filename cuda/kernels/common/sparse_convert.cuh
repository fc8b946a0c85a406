// Sparse format conversions on the device.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device_buffer.h"

namespace sfac::cuda::kernels {

// The first duplicate (row, col) of a COO input in (row, col) order, with its two lowest input
// positions (what the host conversion reports).
struct DuplicateEntry {
  int64_t row = 0, col = 0, first = 0, second = 0;
};

// Canonical CSR from COO triplets on the device (indices already checked to lie in range): rows
// sorted by column, duplicates summed in input order (bit for bit what the host conversion
// computes) or, unless `sum_duplicates`, reported in `duplicate` with false returned and the
// outputs untouched. `values` null means every value is 1. Waits for the stream.
bool csr_from_coo(const int32_t* row_indices, const int32_t* col_indices, const float* values,
                  int64_t nnz, int64_t rows, bool sum_duplicates, DeviceBuffer<int64_t>& offsets,
                  DeviceBuffer<int32_t>& indices, DeviceBuffer<float>& csr_values,
                  DuplicateEntry& duplicate, cudaStream_t stream);

// CSC view of a CSR pattern: col_offsets (cols + 1), row_indices (nnz) and csr_position (nnz,
// the CSR slot of each CSC entry, so values are a gather). Entries of a column stay in row order.
// row_of is the COO row of every CSR nonzero.
void build_csc(const int32_t* cols, const int32_t* row_of, int64_t ncols, int64_t nnz,
               int64_t* col_offsets, int32_t* row_indices, int64_t* csr_position,
               cudaStream_t stream);

// Whether a[i] == b[i] for every i < n (device arrays). Waits for the stream.
bool equal_arrays(const int64_t* a, const int64_t* b, int64_t n, cudaStream_t stream);
bool equal_arrays(const int32_t* a, const int32_t* b, int64_t n, cudaStream_t stream);

// out[e] = in[index[e]] for e < n.
void gather(const float* in, const int64_t* index, int64_t n, float* out, cudaStream_t stream);

}  // namespace sfac::cuda::kernels
