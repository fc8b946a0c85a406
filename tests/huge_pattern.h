// Patterns past 32-bit offsets for the tests that check 64-bit sizes end to end (CPU and GPU),
// and the host memory check that lets them skip on small machines.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "sfac_test.h"

namespace sfac_test {

// Free memory the host can still give (MemAvailable), in bytes; 0 where /proc is unreadable.
inline int64_t host_available_bytes() {
  FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  long long kb = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
  }
  std::fclose(f);
  return static_cast<int64_t>(kb) * 1024;
}

// The huge tests' pattern, past 32-bit offsets: 2,048 nonzeros per row (the columns of the row's
// parity) over 1,049,600 rows, 2^31 + 2^21 in all.
constexpr int64_t kHugePerRow = 2048, kHugeCols = 2 * kHugePerRow;
constexpr int64_t kHugeRows = (int64_t{1} << 20) + 1024, kHugeNnz = kHugeRows * kHugePerRow;
static_assert(kHugeNnz > (int64_t{1} << 31), "past 32-bit offsets");

inline int32_t huge_col(int64_t row, int64_t slot) {
  return static_cast<int32_t>(row % 2 + 2 * slot);
}
// Exact in float32: small integers and halves.
inline float huge_value(int64_t row, int64_t slot) {
  return float(row % 1000) + 0.5f * float(slot % 7);
}

// The rows checked entry by entry: all from the one holding entry 2^31 - 2^20 on, every 997th
// before it.
constexpr int64_t kHugeFirstFull = ((int64_t{1} << 31) - (int64_t{1} << 20)) / kHugePerRow;
inline int64_t next_checked_row(int64_t row) {
  return row < kHugeFirstFull ? std::min(row + 997, kHugeFirstFull) : row + 1;
}

// The pattern as COO in reverse order: entry kHugeNnz - 1 - (i * kHugePerRow + t) is row i's
// slot t, with huge_value where `v` is not null.
inline void fill_huge_coo_reversed(int32_t* r, int32_t* c, float* v) {
  for (int64_t i = 0; i < kHugeRows; ++i) {
    for (int64_t t = 0; t < kHugePerRow; ++t) {
      const int64_t e = kHugeNnz - 1 - (i * kHugePerRow + t);
      r[e] = static_cast<int32_t>(i);
      c[e] = huge_col(i, t);
      if (v) v[e] = huge_value(i, t);
    }
  }
}

// The pattern with huge_value values, uploaded as COO in reverse order; null (the test failed)
// if the upload fails.
inline Sparse upload_huge_coo_with_values(sfac_context* ctx) {
  std::vector<int32_t> r(kHugeNnz), c(kHugeNnz);
  std::vector<float> v(kHugeNnz);
  fill_huge_coo_reversed(r.data(), c.data(), v.data());
  sfac_sparse* raw = nullptr;
  EXPECT_EQ(sfac_sparse_create_coo(ctx, kHugeRows, kHugeCols, kHugeNnz, r.data(), c.data(),
                                   v.data(), 0, &raw),
            SFAC_OK)
      << sfac_last_error();
  return Sparse(raw);
}

// `s` downloaded is the huge pattern: every row offset, and on the checked rows every column and,
// with `values`, every value.
inline void expect_huge_csr(const sfac_sparse* s, bool values) {
  int64_t nnz = 0;
  SFAC_ASSERT_OK(sfac_sparse_get_shape(s, nullptr, nullptr, &nnz));
  ASSERT_EQ(nnz, kHugeNnz);
  std::vector<int64_t> off(kHugeRows + 1);
  std::vector<int32_t> cols(kHugeNnz);
  std::vector<float> vals(values ? kHugeNnz : 0);
  SFAC_ASSERT_OK(sfac_sparse_download_csr(s, off.data(), static_cast<int64_t>(off.size()),
                                          cols.data(), values ? vals.data() : nullptr,
                                          static_cast<int64_t>(cols.size())));
  for (int64_t i = 0; i <= kHugeRows; ++i) ASSERT_EQ(off[i], i * kHugePerRow) << "row " << i;
  for (int64_t i = 0; i < kHugeRows; i = next_checked_row(i)) {
    for (int64_t t = 0; t < kHugePerRow; ++t) {
      const int64_t e = i * kHugePerRow + t;
      ASSERT_EQ(cols[e], huge_col(i, t)) << "row " << i << " slot " << t;
      if (values) {
        ASSERT_EQ(vals[e], huge_value(i, t)) << "row " << i << " slot " << t;
      }
    }
  }
}

}  // namespace sfac_test
