#include "core/bals.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/reorder.h"

namespace sfac {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

int64_t ceil_div(int64_t a, int64_t b) { return a == 0 ? 0 : (a - 1) / b + 1; }

// One past the last column (reordered numbering) of column tile bj, without overflow.
int64_t column_tile_end(const BalsShape& shape, int64_t cols, int64_t bj) {
  const int64_t begin = bj * shape.tile_cols;  // <= cols since bj < col_tiles
  return cols - begin <= shape.tile_cols ? cols : begin + shape.tile_cols;
}

// Where segment s lies: its tile and its row within the tile.
struct SegmentPlace {
  int64_t tile, row;
};
SegmentPlace place(const BalsShape& shape, int64_t s) {
  return {s / shape.tile_rows, s % shape.tile_rows};
}

}  // namespace

int64_t bals_segment_limit(int64_t rows, int64_t cols, int64_t nnz) {
  // rows, cols <= INT32_MAX and nnz <= SIZE_MAX / 16, so the sum cannot overflow.
  const int64_t base = rows + cols;
  if (nnz > (kInt64Max - (int64_t{1} << 20)) / 4 - base) return kInt64Max;
  return 4 * (base + nnz) + (int64_t{1} << 20);
}

BalsShape bals_shape(int64_t rows, int64_t cols, int64_t nnz, int64_t tile_rows, int64_t tile_cols,
                     bool allow_default) {
  const int64_t least = allow_default ? 0 : 1;
  const char* hint = allow_default ? " must be >= 1 (or 0 for the default)" : " must be >= 1";
  SFAC_REQUIRE(tile_rows >= least, SFAC_ERR_INVALID_ARGUMENT, "tile_rows = ", tile_rows, hint);
  SFAC_REQUIRE(tile_cols >= least, SFAC_ERR_INVALID_ARGUMENT, "tile_cols = ", tile_cols, hint);
  BalsShape shape;
  shape.tile_rows = tile_rows > 0 ? tile_rows : std::max<int64_t>(1, std::min<int64_t>(1024, rows));
  shape.tile_cols = tile_cols > 0 ? tile_cols : std::max<int64_t>(1, std::min<int64_t>(256, cols));
  shape.row_tiles = ceil_div(rows, shape.tile_rows);
  shape.col_tiles = ceil_div(cols, shape.tile_cols);
  shape.tiles = shape.row_tiles * shape.col_tiles;  // each factor <= INT32_MAX
  const int64_t limit = nnz < 0 ? kInt64Max - 1 : bals_segment_limit(rows, cols, nnz);
  const bool overflow = shape.tiles > 0 && shape.tile_rows > kInt64Max / shape.tiles;
  shape.segments = overflow ? kInt64Max : shape.tiles * shape.tile_rows;
  SFAC_REQUIRE(!overflow && shape.segments <= limit, SFAC_ERR_INVALID_ARGUMENT, "tiles of ",
               shape.tile_rows, " x ", shape.tile_cols, " on a ", rows, " x ", cols, " matrix",
               nnz < 0 ? std::string() : cat(" with ", nnz, " nonzeros"), " give ", shape.tiles,
               " tiles and ", overflow ? std::string("more than INT64_MAX") : cat(shape.segments),
               " segments (tiles * tile_rows), more than the limit ",
               nnz < 0 ? std::string("INT64_MAX - 1")
                       : cat("4 * (rows + cols + nnz) + 2^20 = ", limit),
               ": choose tiles nearer the matrix's size");
  return shape;
}

int64_t bals_tile_col_count(const HostCsr& csr, const BalsShape& shape, const int32_t* row_order) {
  std::vector<int64_t> seen_in(static_cast<size_t>(csr.cols), -1);  // last row block per column
  int64_t count = 0;
  for (int64_t bi = 0; bi < shape.row_tiles; ++bi) {
    const int64_t r0 = bi * shape.tile_rows;
    const int64_t r1 = csr.rows - r0 <= shape.tile_rows ? csr.rows : r0 + shape.tile_rows;
    for (int64_t rr = r0; rr < r1; ++rr) {
      const int64_t r = row_order ? row_order[rr] : rr;
      for (int64_t e = csr.offsets[r]; e < csr.offsets[r + 1]; ++e) {
        int64_t& seen = seen_in[csr.indices[e]];
        if (seen != bi) {
          seen = bi;
          ++count;
        }
      }
    }
  }
  return count;
}

BalsLayout to_bals(const HostCsr& csr, const BalsShape& shape, const int32_t* row_order,
                   const int32_t* col_order, int num_threads) {
  HostCsr permuted;
  const HostCsr* p = &csr;
  if (row_order || col_order) {
    permuted = permute_csr(csr.rows, csr.cols, csr.offsets, csr.indices, csr.values.data(),
                           row_order, col_order, num_threads);
    p = &permuted;
  }
  const HostCsr& m = *p;
  const int64_t nnz = m.nnz();
  BalsLayout out;
  out.tile_ptr.assign(static_cast<size_t>(shape.tiles) + 1, 0);
  out.seg_ptr.assign(static_cast<size_t>(shape.segments) + 1, 0);
  out.seg_col.resize(static_cast<size_t>(nnz));
  out.values.resize(static_cast<size_t>(nnz));
  out.tile_col.reserve(static_cast<size_t>(bals_tile_col_count(m, shape, nullptr)));

  std::vector<int32_t> slot(static_cast<size_t>(m.cols), -1);  // local column in the current tile
  std::vector<int64_t> cursor(static_cast<size_t>(std::min(shape.tile_rows, std::max<int64_t>(m.rows, 1))));
  int64_t written = 0;
  for (int64_t bi = 0; bi < shape.row_tiles; ++bi) {
    const int64_t r0 = bi * shape.tile_rows;
    const int64_t present = std::min(shape.tile_rows, m.rows - r0);  // rows of the block in range
    for (int64_t lr = 0; lr < present; ++lr) cursor[lr] = m.offsets[r0 + lr];
    for (int64_t bj = 0; bj < shape.col_tiles; ++bj) {
      const int64_t t = bi * shape.col_tiles + bj;
      const int64_t c_end = column_tile_end(shape, m.cols, bj);
      const int64_t tile_begin = static_cast<int64_t>(out.tile_col.size());
      for (int64_t lr = 0; lr < shape.tile_rows; ++lr) {
        const int64_t s = t * shape.tile_rows + lr;
        out.seg_ptr[s] = written;
        if (lr >= present) continue;
        const int64_t row_end = m.offsets[r0 + lr + 1];
        int64_t& e = cursor[lr];
        for (; e < row_end && m.indices[e] < c_end; ++e) {
          const int32_t c = m.indices[e];
          if (slot[c] < 0) {
            slot[c] = static_cast<int32_t>(static_cast<int64_t>(out.tile_col.size()) - tile_begin);
            out.tile_col.push_back(c);
          }
          out.seg_col[written] = slot[c];
          out.values[written] = m.values[e];
          ++written;
        }
      }
      for (size_t k = static_cast<size_t>(tile_begin); k < out.tile_col.size(); ++k) {
        slot[out.tile_col[k]] = -1;
      }
      out.tile_ptr[t + 1] = static_cast<int64_t>(out.tile_col.size());
    }
  }
  out.seg_ptr[shape.segments] = written;
  SFAC_REQUIRE(written == nnz, SFAC_ERR_INTERNAL, "BALS conversion placed ", written, " of ", nnz,
               " nonzeros");
  return out;
}

HostCsr csr_from_bals(int64_t rows, int64_t cols, int64_t tile_rows, int64_t tile_cols,
                      const int64_t* tile_ptr, const int32_t* tile_col, const int64_t* seg_ptr,
                      const int32_t* seg_col, const float* values, const int32_t* row_order,
                      const int32_t* col_order, int num_threads) {
  (void)num_threads;
  check_sparse_shape(rows, cols);
  SFAC_REQUIRE(tile_rows >= 1, SFAC_ERR_INVALID_ARGUMENT, "tile_rows = ", tile_rows,
               " must be >= 1");
  SFAC_REQUIRE(tile_cols >= 1, SFAC_ERR_INVALID_ARGUMENT, "tile_cols = ", tile_cols,
               " must be >= 1");
  SFAC_REQUIRE(tile_ptr != nullptr, SFAC_ERR_INVALID_ARGUMENT, "tile_ptr is NULL");
  SFAC_REQUIRE(seg_ptr != nullptr, SFAC_ERR_INVALID_ARGUMENT, "seg_ptr is NULL");
  // The grid without the nnz-dependent limit first: seg_ptr's length is needed to read nnz,
  // which is then checked against the limit before the rest of seg_ptr is read.
  const BalsShape grid = bals_shape(rows, cols, -1, tile_rows, tile_cols, false);
  SFAC_REQUIRE(seg_ptr[0] == 0, SFAC_ERR_INVALID_ARGUMENT, "seg_ptr[0] = ", seg_ptr[0],
               " must be 0");
  const int64_t nnz = seg_ptr[grid.segments];
  SFAC_REQUIRE(nnz >= 0, SFAC_ERR_INVALID_ARGUMENT, "seg_ptr[", grid.segments, "] = ", nnz,
               " (nnz) must be >= 0");
  SFAC_REQUIRE(static_cast<uint64_t>(nnz) <= std::numeric_limits<size_t>::max() / 16,
               SFAC_ERR_OUT_OF_RANGE, "nnz = seg_ptr[", grid.segments, "] = ", nnz,
               " is too large");
  const BalsShape shape = bals_shape(rows, cols, nnz, tile_rows, tile_cols, false);

  // seg_ptr: starts at 0, never decreases.
  for (int64_t s = 0; s < shape.segments; ++s) {
    if (seg_ptr[s] > seg_ptr[s + 1]) {
      const SegmentPlace at = place(shape, s + 1);
      fail(SFAC_ERR_INVALID_ARGUMENT, "seg_ptr[", s + 1, "] = ", seg_ptr[s + 1], " < seg_ptr[",
           s, "] = ", seg_ptr[s], " (segment ", s + 1, ": tile ", at.tile, ", row ", at.row,
           "): offsets must not decrease");
    }
  }

  // tile_ptr: starts at 0, never decreases, ends at most at nnz.
  SFAC_REQUIRE(tile_ptr[0] == 0, SFAC_ERR_INVALID_ARGUMENT, "tile_ptr[0] = ", tile_ptr[0],
               " must be 0");
  for (int64_t t = 0; t < shape.tiles; ++t) {
    SFAC_REQUIRE(tile_ptr[t] <= tile_ptr[t + 1], SFAC_ERR_INVALID_ARGUMENT, "tile_ptr[", t + 1,
                 "] = ", tile_ptr[t + 1], " < tile_ptr[", t, "] = ", tile_ptr[t], " (tile ", t,
                 "): offsets must not decrease");
  }
  const int64_t listed = tile_ptr[shape.tiles];
  SFAC_REQUIRE(listed <= nnz, SFAC_ERR_INVALID_ARGUMENT, "tile_ptr[", shape.tiles, "] = ", listed,
               " exceeds nnz = seg_ptr[", shape.segments, "] = ", nnz,
               ": a tile lists each column it uses once");
  if (listed > 0) SFAC_REQUIRE(tile_col != nullptr, SFAC_ERR_INVALID_ARGUMENT,
                               "tile_col is NULL but tile_ptr[", shape.tiles, "] = ", listed);
  if (nnz > 0) SFAC_REQUIRE(seg_col != nullptr, SFAC_ERR_INVALID_ARGUMENT,
                            "seg_col is NULL but nnz = seg_ptr[", shape.segments, "] = ", nnz);
  if (row_order) check_permutation(row_order, rows, "row_order");
  if (col_order) check_permutation(col_order, cols, "col_order");

  // Pass 1: per tile, its columns (range, distinctness, count) and its segments (rows in range,
  // local columns, duplicates, values); counts nonzeros per original row.
  HostCsr csr;
  csr.rows = rows;
  csr.cols = cols;
  csr.offsets.assign(static_cast<size_t>(rows) + 1, 0);
  std::vector<int64_t> slot_of(static_cast<size_t>(cols), -1);  // tile_col position, this tile
  std::vector<int64_t> used_at;  // per local column: seg_col position of its use in this segment
  for (int64_t t = 0; t < shape.tiles; ++t) {
    const int64_t bi = t / shape.col_tiles, bj = t % shape.col_tiles;
    const int64_t c_begin = bj * shape.tile_cols, c_end = column_tile_end(shape, cols, bj);
    const int64_t k0 = tile_ptr[t], k1 = tile_ptr[t + 1];
    const int64_t s0 = t * shape.tile_rows;
    const int64_t tile_nnz = seg_ptr[s0 + shape.tile_rows] - seg_ptr[s0];
    SFAC_REQUIRE(k1 - k0 <= tile_nnz, SFAC_ERR_INVALID_ARGUMENT, "tile_ptr: tile ", t, " lists ",
                 k1 - k0, " columns (tile_col[", k0, " .. ", k1, ")) but holds only ", tile_nnz,
                 " nonzeros");
    for (int64_t k = k0; k < k1; ++k) {
      const int32_t c = tile_col[k];
      SFAC_REQUIRE(c >= c_begin && c < c_end, SFAC_ERR_OUT_OF_RANGE, "tile_col[", k, "] = ", c,
                   " (tile ", t, ", position ", k - k0, ") is outside the tile's columns [",
                   c_begin, ", ", c_end, ")");
      SFAC_REQUIRE(slot_of[c] < 0, SFAC_ERR_INVALID_ARGUMENT, "tile_col[", k, "] = ", c,
                   " (tile ", t, ", position ", k - k0, ") repeats tile_col[", slot_of[c],
                   "]: a tile lists each column once");
      slot_of[c] = k;
    }
    used_at.assign(static_cast<size_t>(k1 - k0), -1);
    for (int64_t lr = 0; lr < shape.tile_rows; ++lr) {
      const int64_t s = s0 + lr;
      const int64_t r = bi * shape.tile_rows + lr;  // reordered row
      const int64_t e0 = seg_ptr[s], e1 = seg_ptr[s + 1];
      if (r >= rows) {
        SFAC_REQUIRE(e0 == e1, SFAC_ERR_INVALID_ARGUMENT, "seg_ptr: segment ", s, " (tile ", t,
                     ", row ", lr, ") lies past the matrix's last row ", rows - 1, " but holds ",
                     e1 - e0, " entries (seg_col[", e0, " .. ", e1, "))");
        continue;
      }
      for (int64_t e = e0; e < e1; ++e) {
        const int32_t local = seg_col[e];
        SFAC_REQUIRE(local >= 0 && local < k1 - k0, SFAC_ERR_OUT_OF_RANGE, "seg_col[", e,
                     "] = ", local, " (tile ", t, ", segment ", s, ", row ", lr,
                     ") is outside the tile's ", k1 - k0, " columns in tile_col");
        if (used_at[local] >= e0) {
          const int64_t orig_row = row_order ? row_order[r] : r;
          const int64_t c = tile_col[k0 + local];
          const int64_t orig_col = col_order ? col_order[c] : c;
          fail(SFAC_ERR_DUPLICATE_ENTRY, "duplicate entry (row ", orig_row, ", col ", orig_col,
               "): seg_col[", used_at[local], "] and seg_col[", e, "] = ", local, " (tile ", t,
               ", segment ", s, ", row ", lr, ")");
        }
        used_at[local] = e;
        if (values) {
          SFAC_REQUIRE(std::isfinite(values[e]), SFAC_ERR_INVALID_VALUE, "values[", e, "] = ",
                       values[e], " (tile ", t, ", segment ", s, ", row ", lr,
                       ") is not finite");
        }
      }
      const int64_t orig_row = row_order ? row_order[r] : r;
      csr.offsets[orig_row + 1] += e1 - e0;
    }
    for (int64_t k = k0; k < k1; ++k) slot_of[tile_col[k]] = -1;
  }
  for (int64_t r = 0; r < rows; ++r) csr.offsets[r + 1] += csr.offsets[r];

  // Pass 2: scatter into original rows, then sort each row by column.
  csr.indices.resize(static_cast<size_t>(nnz));
  csr.values.resize(static_cast<size_t>(nnz));
  std::vector<int64_t> next(csr.offsets.begin(), csr.offsets.end() - 1);
  for (int64_t t = 0; t < shape.tiles; ++t) {
    const int64_t bi = t / shape.col_tiles;
    const int64_t k0 = tile_ptr[t];
    const int64_t s0 = t * shape.tile_rows;
    for (int64_t lr = 0; lr < shape.tile_rows; ++lr) {
      const int64_t r = bi * shape.tile_rows + lr;
      if (r >= rows) break;
      const int64_t orig_row = row_order ? row_order[r] : r;
      for (int64_t e = seg_ptr[s0 + lr]; e < seg_ptr[s0 + lr + 1]; ++e) {
        const int32_t c = tile_col[k0 + seg_col[e]];
        const int64_t slot = next[orig_row]++;
        csr.indices[slot] = col_order ? col_order[c] : c;
        csr.values[slot] = values ? values[e] : 1.0f;
      }
    }
  }
  std::vector<std::pair<int32_t, float>> row;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = csr.offsets[r], e = csr.offsets[r + 1];
    if (std::is_sorted(csr.indices.begin() + b, csr.indices.begin() + e)) continue;
    row.clear();
    for (int64_t i = b; i < e; ++i) row.emplace_back(csr.indices[i], csr.values[i]);
    std::sort(row.begin(), row.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    for (int64_t i = b; i < e; ++i) {
      csr.indices[i] = row[i - b].first;
      csr.values[i] = row[i - b].second;
    }
  }
  return csr;
}

}  // namespace sfac
