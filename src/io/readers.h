// File readers and writers. They produce and consume plain host arrays; building the matrix
// (validation, sorting, duplicates) is the core's job.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/host_csr.h"
#include "sparsefac/sparsefac.h"

namespace sfac::io {

struct ReadOptions {
  sfac_file_format format = SFAC_FORMAT_AUTO;
  bool remap_ids = false;  // map each side's distinct ids to 0..n-1 in ascending id order
  bool one_based = false;  // triplet-style formats: subtract 1 from ids (Matrix Market always)
};

// Entries as read, in file order (duplicates kept; the core applies the policy).
struct Triplets {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<int32_t> row;
  std::vector<int32_t> col;
  std::vector<float> value;
  // With remap_ids: original id of each dense index, ascending. Empty otherwise.
  std::vector<int64_t> row_ids;
  std::vector<int64_t> col_ids;
};

// Throws sfac::Error: SFAC_ERR_IO (cannot open/read, message has the path and strerror),
// SFAC_ERR_PARSE ("path:line: what is wrong"), SFAC_ERR_UNSUPPORTED (e.g. Matrix Market
// complex/array/skew-symmetric), SFAC_ERR_OUT_OF_RANGE (id outside int32 / header shape),
// SFAC_ERR_INVALID_VALUE (NaN/Inf rating, with the line).
Triplets read_triplets(const std::string& path, const ReadOptions& options);

// Rethrows `error`, raised while building a matrix from the `entries` entries that
// read_triplets(path, options) returned, as SFAC_ERR_DUPLICATE_ENTRY "PATH:LINE: duplicate entry
// (row R, col C), first given on line L ..." with both lines and the ids as the file has them.
// The entries keep no lines (memory on every read for the sake of one error), so the file is
// read again. When that cannot be done (not a regular file: a pipe cannot be read twice) or the
// file no longer yields those entries, the message keeps the input positions, prefixed "PATH: ".
[[noreturn]] void fail_duplicate_in_file(const std::string& path, const ReadOptions& options,
                                         int64_t entries, const DuplicateEntryError& error);

// Writes "%%MatrixMarket matrix coordinate real general", 1-based, values with enough digits
// to round-trip float32. Throws SFAC_ERR_IO.
void write_matrix_market(const std::string& path, int64_t rows, int64_t cols,
                         const int64_t* row_offsets, const int32_t* col_indices,
                         const float* values);

}  // namespace sfac::io
