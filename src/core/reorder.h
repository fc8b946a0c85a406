// Renumbering rows and columns (degree orders, permutations) on the host: the CPU backend's
// implementation and the reference the device versions must match bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "core/host_csr.h"

namespace sfac {

// Throws SFAC_ERR_INVALID_ARGUMENT unless order[0..n) holds each of 0..n-1 exactly once; the
// message names `name` and the first index out of range or repeated.
void check_permutation(const int32_t* order, int64_t n, const char* name);

// Ids 0..n-1 by count, largest first; equal counts in id order.
std::vector<int32_t> order_by_count(const std::vector<int64_t>& counts);

// Nonzeros per row (from CSR offsets) and per column (from the column indices).
std::vector<int64_t> row_counts(const std::vector<int64_t>& offsets);
std::vector<int64_t> column_counts(const std::vector<int32_t>& indices, int64_t cols);

// inverse[order[i]] = i.
std::vector<int32_t> inverse_permutation(const int32_t* order, int64_t n);

// The CSR pattern and values with row r taken from row row_order[r] and column c from column
// col_order[c] (null: that side unchanged), each row sorted by its new columns. The orders must
// be permutations (check_permutation).
HostCsr permute_csr(int64_t rows, int64_t cols, const std::vector<int64_t>& offsets,
                    const std::vector<int32_t>& indices, const float* values,
                    const int32_t* row_order, const int32_t* col_order, int num_threads);

}  // namespace sfac
