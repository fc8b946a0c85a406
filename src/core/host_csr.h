// Canonical host-side CSR: what every creation path (arrays, files) validates into before a
// backend takes ownership. Rows sorted by column, no duplicates, finite values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace sfac {

struct HostCsr {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<int64_t> offsets;  // rows + 1 entries
  std::vector<int32_t> indices;  // column of each nonzero
  std::vector<float> values;     // value of each nonzero

  int64_t nnz() const { return static_cast<int64_t>(indices.size()); }
};

enum class DuplicatePolicy { Error, Sum };

// SFAC_ERR_DUPLICATE_ENTRY with the entry's indices and its two lowest input positions (-1 when
// unknown) kept apart from the message: a caller that knows where its input came from (the file
// readers) can then name lines instead of positions.
class DuplicateEntryError : public Error {
 public:
  DuplicateEntryError(const std::string& message, int64_t row, int64_t col, int64_t first,
                      int64_t second)
      : Error(SFAC_ERR_DUPLICATE_ENTRY, message),
        row_(row),
        col_(col),
        first_(first),
        second_(second) {}
  int64_t row() const noexcept { return row_; }
  int64_t col() const noexcept { return col_; }
  int64_t first() const noexcept { return first_; }
  int64_t second() const noexcept { return second_; }

 private:
  int64_t row_, col_, first_, second_;
};

// How every duplicate-entry message ends.
inline constexpr const char* kSumDuplicatesHint =
    " (pass SFAC_SPARSE_SUM_DUPLICATES to sum duplicates)";

// Throws DuplicateEntryError for (row, col) under the error policy, naming the two lowest input
// positions of the entry when they are known (first >= 0). Every conversion (host or device)
// reports duplicates through it, so their messages agree and the readers can rephrase them.
[[noreturn]] void fail_duplicate_entry(int64_t row, int64_t col, int64_t first = -1,
                                       int64_t second = -1);

// Rows and cols must lie in [0, INT32_MAX]; names the argument in the message otherwise.
void check_sparse_shape(int64_t rows, int64_t cols);

// Validates (indices in range, values finite) and canonicalizes COO triplets in any order.
// values == nullptr means every value is 1. Throws sfac::Error naming the offending entry.
HostCsr csr_from_coo(int64_t rows, int64_t cols, int64_t nnz, const int32_t* row_indices,
                     const int32_t* col_indices, const float* values, DuplicatePolicy duplicates,
                     int num_threads);

// csr_from_coo's two halves: the checks (throwing sfac::Error naming the offending entry), and
// the canonicalization of triplets that passed them.
void check_coo(int64_t rows, int64_t cols, int64_t nnz, const int32_t* row_indices,
               const int32_t* col_indices, const float* values, int num_threads);
HostCsr csr_from_checked_coo(int64_t rows, int64_t cols, int64_t nnz, const int32_t* row_indices,
                             const int32_t* col_indices, const float* values,
                             DuplicatePolicy duplicates, int num_threads);

// Checks CSC input (offsets, row indices, values) and returns each nonzero's column: the CSC
// arrays are then COO triplets (row_indices, columns, values) with col_offsets[cols] entries.
std::vector<int32_t> checked_csc_columns(int64_t rows, int64_t cols, const int64_t* col_offsets,
                                         const int32_t* row_indices, const float* values,
                                         int num_threads);

// Same from CSR input (rows + 1 offsets, column indices; rows may come unsorted).
HostCsr csr_from_csr(int64_t rows, int64_t cols, const int64_t* offsets, const int32_t* indices,
                     const float* values, DuplicatePolicy duplicates, int num_threads);

}  // namespace sfac
