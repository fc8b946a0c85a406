#include "core/reorder.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "core/error.h"
#include "host/parallel_errors.h"

namespace sfac {

void check_permutation(const int32_t* order, int64_t n, const char* name) {
  SFAC_REQUIRE(n == 0 || order != nullptr, SFAC_ERR_INVALID_ARGUMENT, name, " is NULL");
  std::vector<int64_t> seen_at(static_cast<size_t>(n), -1);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t v = order[i];
    SFAC_REQUIRE(v >= 0 && v < n, SFAC_ERR_INVALID_ARGUMENT, name, "[", i, "] = ", v,
                 " is outside [0, ", n, ")");
    SFAC_REQUIRE(seen_at[v] < 0, SFAC_ERR_INVALID_ARGUMENT, name, "[", i, "] = ", v, " repeats ",
                 name, "[", seen_at[v], "]: not a permutation");
    seen_at[v] = i;
  }
}

std::vector<int32_t> order_by_count(const std::vector<int64_t>& counts) {
  std::vector<int32_t> ids(counts.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(),
                   [&](int32_t a, int32_t b) { return counts[a] > counts[b]; });
  return ids;
}

std::vector<int64_t> row_counts(const std::vector<int64_t>& offsets) {
  std::vector<int64_t> counts(offsets.empty() ? 0 : offsets.size() - 1);
  for (size_t r = 0; r < counts.size(); ++r) counts[r] = offsets[r + 1] - offsets[r];
  return counts;
}

std::vector<int64_t> column_counts(const std::vector<int32_t>& indices, int64_t cols) {
  std::vector<int64_t> counts(static_cast<size_t>(cols), 0);
  for (int32_t c : indices) ++counts[c];
  return counts;
}

std::vector<int32_t> inverse_permutation(const int32_t* order, int64_t n) {
  std::vector<int32_t> inverse(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) inverse[order[i]] = static_cast<int32_t>(i);
  return inverse;
}

HostCsr permute_csr(int64_t rows, int64_t cols, const std::vector<int64_t>& offsets,
                    const std::vector<int32_t>& indices, const float* values,
                    const int32_t* row_order, const int32_t* col_order, int num_threads) {
  HostCsr out;
  out.rows = rows;
  out.cols = cols;
  out.offsets.assign(static_cast<size_t>(rows) + 1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src = row_order ? row_order[r] : r;
    out.offsets[r + 1] = out.offsets[r] + (offsets[src + 1] - offsets[src]);
  }
  out.indices.resize(indices.size());
  out.values.resize(indices.size());
  const std::vector<int32_t> col_rank =
      col_order ? inverse_permutation(col_order, cols) : std::vector<int32_t>{};
  host::ParallelErrors errors;  // each thread's row buffer grows inside the region
#pragma omp parallel num_threads(num_threads)
  {
    std::vector<std::pair<int32_t, float>> row;  // (new column, value), sorted per row
#pragma omp for schedule(dynamic, 256)
    for (int64_t r = 0; r < rows; ++r) {
      errors.run([&] {
        const int64_t src = row_order ? row_order[r] : r;
        row.clear();
        for (int64_t e = offsets[src]; e < offsets[src + 1]; ++e) {
          row.emplace_back(col_order ? col_rank[indices[e]] : indices[e], values[e]);
        }
        // New columns are distinct, so sorting by them alone is deterministic.
        if (col_order) {
          std::sort(row.begin(), row.end(),
                    [](const auto& x, const auto& y) { return x.first < y.first; });
        }
        int64_t slot = out.offsets[r];
        for (const auto& [c, v] : row) {
          out.indices[slot] = c;
          out.values[slot] = v;
          ++slot;
        }
      });
    }
  }
  errors.rethrow();
  return out;
}

}  // namespace sfac
