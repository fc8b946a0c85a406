#include "core/host_csr.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "core/error.h"
#include "host/parallel_errors.h"

namespace sfac {
namespace {

constexpr int64_t kMaxDim = std::numeric_limits<int32_t>::max();
constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

// Lowest position e in [0, n) where bad(e) holds, or kNone. Parallel, deterministic result.
template <typename Pred>
int64_t first_where(int64_t n, int num_threads, Pred bad) {
  int64_t first = kNone;
#pragma omp parallel for num_threads(num_threads) reduction(min : first) schedule(static)
  for (int64_t e = 0; e < n; ++e) {
    if (e < first && bad(e)) first = e;
  }
  return first;
}

void check_indices(const char* name, const int32_t* indices, int64_t n, int64_t bound,
                   const char* bound_name, int num_threads) {
  const int64_t bad =
      first_where(n, num_threads, [&](int64_t e) { return indices[e] < 0 || indices[e] >= bound; });
  SFAC_REQUIRE(bad == kNone, SFAC_ERR_OUT_OF_RANGE, name, "[", bad,
               "] = ", bad == kNone ? 0 : indices[bad], " is out of range for a matrix with ",
               bound, " ", bound_name);
}

void check_values(const float* values, int64_t n, int num_threads) {
  if (values == nullptr) return;
  const int64_t bad =
      first_where(n, num_threads, [&](int64_t e) { return !std::isfinite(values[e]); });
  SFAC_REQUIRE(bad == kNone, SFAC_ERR_INVALID_VALUE, "values[", bad,
               "] = ", bad == kNone ? 0.0f : values[bad], " is not finite");
}

// Sorts every row by column (stable, so duplicates keep input order) and resolves duplicates.
// `input_position` maps each CSR slot to its index in the caller's arrays, for messages.
void canonicalize_rows(HostCsr& csr, std::vector<int64_t>& input_position,
                       DuplicatePolicy duplicates, int num_threads) {
  const int64_t rows = csr.rows;
  std::vector<int64_t> kept(static_cast<size_t>(rows), 0);
  int64_t first_duplicate_row = kNone;
  host::ParallelErrors errors;  // the scratch vectors grow inside the region
#pragma omp parallel num_threads(num_threads)
  {
    std::vector<std::pair<int32_t, int64_t>> order;  // (column, slot)
    std::vector<int32_t> cols;
    std::vector<float> vals;
    std::vector<int64_t> positions;
#pragma omp for schedule(dynamic, 256) reduction(min : first_duplicate_row)
    for (int64_t r = 0; r < rows; ++r) {
      errors.run([&] {
        const int64_t begin = csr.offsets[r], end = csr.offsets[r + 1];
        int32_t* c = csr.indices.data() + begin;
        float* v = csr.values.data() + begin;
        const int64_t len = end - begin;
        if (!std::is_sorted(c, c + len)) {
          order.resize(static_cast<size_t>(len));
          for (int64_t i = 0; i < len; ++i) order[i] = {c[i], i};
          std::stable_sort(order.begin(), order.end(),
                           [](const auto& x, const auto& y) { return x.first < y.first; });
          cols.resize(static_cast<size_t>(len));
          vals.resize(static_cast<size_t>(len));
          for (int64_t i = 0; i < len; ++i) {
            cols[i] = order[i].first;
            vals[i] = v[order[i].second];
          }
          std::copy(cols.begin(), cols.end(), c);
          std::copy(vals.begin(), vals.end(), v);
          if (!input_position.empty()) {
            int64_t* pos = input_position.data() + begin;
            positions.resize(static_cast<size_t>(len));
            for (int64_t i = 0; i < len; ++i) positions[i] = pos[order[i].second];
            std::copy(positions.begin(), positions.end(), pos);
          }
        }
        int64_t out = 0;
        for (int64_t i = 0; i < len; ++i) {
          if (out > 0 && c[out - 1] == c[i]) {
            if (duplicates == DuplicatePolicy::Error) {
              first_duplicate_row = std::min(first_duplicate_row, r);
              break;
            }
            v[out - 1] += v[i];
          } else {
            c[out] = c[i];
            v[out] = v[i];
            ++out;
          }
        }
        kept[r] = out;
      });
    }
  }
  errors.rethrow();
  if (first_duplicate_row != kNone) {
    const int64_t r = first_duplicate_row;
    // Find the pair again (the row is small) to name both input positions.
    std::vector<std::pair<int32_t, int64_t>> entries;
    for (int64_t e = csr.offsets[r]; e < csr.offsets[r + 1]; ++e) {
      entries.push_back({csr.indices[e], input_position.empty() ? 0 : input_position[e]});
    }
    std::sort(entries.begin(), entries.end());
    for (size_t i = 1; i < entries.size(); ++i) {
      if (entries[i].first == entries[i - 1].first) {
        if (input_position.empty()) fail_duplicate_entry(r, entries[i].first);
        fail_duplicate_entry(r, entries[i].first,
                             std::min(entries[i - 1].second, entries[i].second),
                             std::max(entries[i - 1].second, entries[i].second));
      }
    }
    fail(SFAC_ERR_DUPLICATE_ENTRY, "duplicate entry in row ", r);
  }
  // Compact rows that lost duplicates.
  int64_t write = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t begin = csr.offsets[r];
    if (write != begin) {
      std::copy(csr.indices.begin() + begin, csr.indices.begin() + begin + kept[r],
                csr.indices.begin() + write);
      std::copy(csr.values.begin() + begin, csr.values.begin() + begin + kept[r],
                csr.values.begin() + write);
    }
    csr.offsets[r] = write;
    write += kept[r];
  }
  csr.offsets[rows] = write;
  csr.indices.resize(static_cast<size_t>(write));
  csr.values.resize(static_cast<size_t>(write));
}

void check_nnz_fits(int64_t nnz) {
  SFAC_REQUIRE(nnz >= 0, SFAC_ERR_INVALID_ARGUMENT, "nnz = ", nnz, " must be >= 0");
  // A vector of int32 with nnz entries must be addressable.
  SFAC_REQUIRE(static_cast<uint64_t>(nnz) <= std::numeric_limits<size_t>::max() / 16,
               SFAC_ERR_OUT_OF_RANGE, "nnz = ", nnz, " is too large");
}

// Offsets start at 0 and never decrease, indices lie in [0, minor), values are finite.
void check_compressed(int64_t major, int64_t minor, const char* offsets_name,
                      const char* indices_name, const char* minor_name, const int64_t* offsets,
                      const int32_t* indices, const float* values, int num_threads) {
  SFAC_REQUIRE(offsets != nullptr, SFAC_ERR_INVALID_ARGUMENT, offsets_name, " is NULL");
  SFAC_REQUIRE(offsets[0] == 0, SFAC_ERR_INVALID_ARGUMENT, offsets_name, "[0] = ", offsets[0],
               " must be 0");
  for (int64_t i = 0; i < major; ++i) {
    SFAC_REQUIRE(offsets[i] <= offsets[i + 1], SFAC_ERR_INVALID_ARGUMENT, offsets_name, "[", i,
                 "] = ", offsets[i], " > ", offsets_name, "[", i + 1, "] = ", offsets[i + 1],
                 ": offsets must not decrease");
  }
  const int64_t nnz = offsets[major];
  check_nnz_fits(nnz);
  if (nnz > 0) {
    SFAC_REQUIRE(indices != nullptr, SFAC_ERR_INVALID_ARGUMENT, indices_name,
                 " is NULL but nnz = ", nnz);
  }
  check_indices(indices_name, indices, nnz, minor, minor_name, num_threads);
  check_values(values, nnz, num_threads);
}

}  // namespace

void fail_duplicate_entry(int64_t row, int64_t col, int64_t first, int64_t second) {
  const std::string where =
      first < 0 ? std::string() : cat(" at input positions ", first, " and ", second);
  throw DuplicateEntryError(
      cat("duplicate entry (row ", row, ", col ", col, ")", where, kSumDuplicatesHint), row, col,
      first, second);
}

void check_sparse_shape(int64_t rows, int64_t cols) {
  SFAC_REQUIRE(rows >= 0, SFAC_ERR_INVALID_ARGUMENT, "rows = ", rows, " must be >= 0");
  SFAC_REQUIRE(cols >= 0, SFAC_ERR_INVALID_ARGUMENT, "cols = ", cols, " must be >= 0");
  SFAC_REQUIRE(rows <= kMaxDim, SFAC_ERR_OUT_OF_RANGE, "rows = ", rows,
               " exceeds the int32 index range (", kMaxDim, ")");
  SFAC_REQUIRE(cols <= kMaxDim, SFAC_ERR_OUT_OF_RANGE, "cols = ", cols,
               " exceeds the int32 index range (", kMaxDim, ")");
}

void check_coo(int64_t rows, int64_t cols, int64_t nnz, const int32_t* row_indices,
               const int32_t* col_indices, const float* values, int num_threads) {
  check_sparse_shape(rows, cols);
  check_nnz_fits(nnz);
  if (nnz > 0) {
    SFAC_REQUIRE(row_indices != nullptr, SFAC_ERR_INVALID_ARGUMENT,
                 "row_indices is NULL but nnz = ", nnz);
    SFAC_REQUIRE(col_indices != nullptr, SFAC_ERR_INVALID_ARGUMENT,
                 "col_indices is NULL but nnz = ", nnz);
  }
  check_indices("row_indices", row_indices, nnz, rows, "rows", num_threads);
  check_indices("col_indices", col_indices, nnz, cols, "columns", num_threads);
  check_values(values, nnz, num_threads);
}

HostCsr csr_from_checked_coo(int64_t rows, int64_t cols, int64_t nnz, const int32_t* row_indices,
                             const int32_t* col_indices, const float* values,
                             DuplicatePolicy duplicates, int num_threads) {
  HostCsr csr;
  csr.rows = rows;
  csr.cols = cols;
  csr.offsets.assign(static_cast<size_t>(rows) + 1, 0);
  for (int64_t e = 0; e < nnz; ++e) ++csr.offsets[static_cast<size_t>(row_indices[e]) + 1];
  std::partial_sum(csr.offsets.begin(), csr.offsets.end(), csr.offsets.begin());
  csr.indices.resize(static_cast<size_t>(nnz));
  csr.values.resize(static_cast<size_t>(nnz));
  std::vector<int64_t> input_position(static_cast<size_t>(nnz));
  std::vector<int64_t> next(csr.offsets.begin(), csr.offsets.end() - 1);
  for (int64_t e = 0; e < nnz; ++e) {
    const int64_t slot = next[row_indices[e]]++;
    csr.indices[slot] = col_indices[e];
    csr.values[slot] = values ? values[e] : 1.0f;
    input_position[slot] = e;
  }
  canonicalize_rows(csr, input_position, duplicates, num_threads);
  return csr;
}

HostCsr csr_from_coo(int64_t rows, int64_t cols, int64_t nnz, const int32_t* row_indices,
                     const int32_t* col_indices, const float* values, DuplicatePolicy duplicates,
                     int num_threads) {
  check_coo(rows, cols, nnz, row_indices, col_indices, values, num_threads);
  return csr_from_checked_coo(rows, cols, nnz, row_indices, col_indices, values, duplicates,
                              num_threads);
}

std::vector<int32_t> checked_csc_columns(int64_t rows, int64_t cols, const int64_t* col_offsets,
                                         const int32_t* row_indices, const float* values,
                                         int num_threads) {
  check_sparse_shape(rows, cols);
  check_compressed(cols, rows, "col_offsets", "row_indices", "rows", col_offsets, row_indices,
                   values, num_threads);
  const int64_t nnz = col_offsets[cols];
  std::vector<int32_t> col_of(static_cast<size_t>(nnz));
  for (int64_t c = 0; c < cols; ++c) {
    std::fill(col_of.begin() + col_offsets[c], col_of.begin() + col_offsets[c + 1],
              static_cast<int32_t>(c));
  }
  return col_of;
}

HostCsr csr_from_csr(int64_t rows, int64_t cols, const int64_t* offsets, const int32_t* indices,
                     const float* values, DuplicatePolicy duplicates, int num_threads) {
  check_sparse_shape(rows, cols);
  check_compressed(rows, cols, "row_offsets", "col_indices", "columns", offsets, indices, values,
                   num_threads);
  const int64_t nnz = offsets[rows];
  HostCsr csr;
  csr.rows = rows;
  csr.cols = cols;
  csr.offsets.assign(offsets, offsets + rows + 1);
  csr.indices.assign(indices, indices + nnz);
  if (values) {
    csr.values.assign(values, values + nnz);
  } else {
    csr.values.assign(static_cast<size_t>(nnz), 1.0f);
  }
  std::vector<int64_t> no_positions;
  canonicalize_rows(csr, no_positions, duplicates, num_threads);
  return csr;
}

}  // namespace sfac
