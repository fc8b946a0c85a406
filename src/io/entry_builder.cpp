#include "io/entry_builder.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "core/error.h"

namespace sfac::io {
namespace {

constexpr int64_t kMaxDistinct = std::numeric_limits<int32_t>::max();

// Sorts keys (and positions alongside) by an LSD radix sort with 11-bit digits: only as many
// passes as max_key has bits, and passes whose digit is the same for every key are skipped.
void radix_sort_pairs(std::vector<uint64_t>& keys, std::vector<uint32_t>& positions,
                      uint64_t max_key) {
  constexpr int kBits = 11;
  constexpr size_t kBuckets = size_t{1} << kBits;
  int passes = 0;
  while (passes * kBits < 64 && (max_key >> (passes * kBits)) != 0) ++passes;
  // All histograms in one read of the keys.
  std::vector<size_t> counts(static_cast<size_t>(passes) * kBuckets, 0);
  for (const uint64_t key : keys) {
    for (int p = 0; p < passes; ++p) {
      ++counts[p * kBuckets + ((key >> (p * kBits)) & (kBuckets - 1))];
    }
  }
  std::vector<uint64_t> key_buffer(keys.size());
  std::vector<uint32_t> position_buffer(positions.size());
  for (int p = 0; p < passes; ++p) {
    size_t* count = counts.data() + p * kBuckets;
    // One bucket holding every key: this digit is the same everywhere, nothing to reorder.
    if (std::find(count, count + kBuckets, keys.size()) != count + kBuckets) continue;
    size_t offset = 0;
    for (size_t b = 0; b < kBuckets; ++b) offset += std::exchange(count[b], offset);
    const int shift = p * kBits;
    for (size_t k = 0; k < keys.size(); ++k) {
      const size_t slot = count[(keys[k] >> shift) & (kBuckets - 1)]++;
      key_buffer[slot] = keys[k];
      position_buffer[slot] = positions[k];
    }
    keys.swap(key_buffer);
    positions.swap(position_buffer);
  }
}

// Replaces one side's ids by dense indices in ascending id order; returns the distinct ids.
std::vector<int64_t> remap_side(const std::vector<int64_t>& ids, std::vector<int32_t>& indices,
                                const char* side) {
  std::vector<int64_t> distinct;
  indices.resize(ids.size());
  if (ids.empty()) return distinct;
  const uint64_t max_id = static_cast<uint64_t>(*std::max_element(ids.begin(), ids.end()));
  if (max_id < 2 * static_cast<uint64_t>(ids.size()) + (1u << 16)) {
    // Ids this dense (the usual case: MovieLens, Netflix) fit a direct table no larger than the
    // id arrays themselves: two linear passes instead of a sort and a binary search per entry.
    std::vector<int32_t> table(static_cast<size_t>(max_id) + 1, 0);
    for (int64_t id : ids) table[static_cast<size_t>(id)] = 1;
    int64_t next = 0;
    for (size_t id = 0; id <= max_id; ++id) {
      if (table[id] != 0) {
        table[id] = static_cast<int32_t>(next++);
        distinct.push_back(static_cast<int64_t>(id));
      }
    }
    SFAC_REQUIRE(next <= kMaxDistinct, SFAC_ERR_OUT_OF_RANGE, next, " distinct ", side,
                 " ids exceed the int32 index range");
    for (size_t e = 0; e < ids.size(); ++e) indices[e] = table[static_cast<size_t>(ids[e])];
    return distinct;
  }
  // Sparse ids (hashes, 64-bit user ids): sort (id, position) pairs, then one linear pass
  // numbers the distinct ids and scatters each entry's index. A binary search per entry instead
  // costs a cache miss per level and was 10x slower on 10M random 64-bit ids.
  SFAC_REQUIRE(ids.size() <= std::numeric_limits<uint32_t>::max(), SFAC_ERR_OUT_OF_RANGE,
               ids.size(), " entries are too many to remap");
  std::vector<uint64_t> keys(ids.begin(), ids.end());
  std::vector<uint32_t> positions(ids.size());
  for (size_t e = 0; e < positions.size(); ++e) positions[e] = static_cast<uint32_t>(e);
  radix_sort_pairs(keys, positions, max_id);
  int64_t next = -1;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (k == 0 || keys[k] != keys[k - 1]) {
      distinct.push_back(static_cast<int64_t>(keys[k]));
      ++next;
    }
    indices[positions[k]] = static_cast<int32_t>(next);
  }
  SFAC_REQUIRE(next < kMaxDistinct, SFAC_ERR_OUT_OF_RANGE, next + 1, " distinct ", side,
               " ids exceed the int32 index range");
  return distinct;
}

}  // namespace

void EntryBuilder::reserve(size_t entries) {
  if (locating_) return;  // keeps no entries
  if (remap_) {
    row_ids_.reserve(entries);
    col_ids_.reserve(entries);
  } else {
    rows_.reserve(entries);
    cols_.reserve(entries);
  }
  values_.reserve(entries);
}

void EntryBuilder::fail_index(int64_t id, const char* side, int64_t line) const {
  if (id - base_ < 0) {
    fail(SFAC_ERR_OUT_OF_RANGE, path_, ":", line, ": ", side, " id ", id,
         " is invalid in a one-based file (SFAC_READ_ONE_BASED): ids start at 1");
  }
  fail(SFAC_ERR_OUT_OF_RANGE, path_, ":", line, ": ", side, " id ", id,
       " does not fit the int32 index range (largest index ", kIndexLimit - 1,
       "); SFAC_READ_REMAP_IDS maps sparse ids to dense indices");
}

Triplets EntryBuilder::finish() {
  if (remap_) return take(0, 0);
  // A (max + 1) shape cannot overflow: to_index() kept every index below INT32_MAX.
  const int64_t rows = rows_.empty() ? 0 : *std::max_element(rows_.begin(), rows_.end()) + 1;
  const int64_t cols = cols_.empty() ? 0 : *std::max_element(cols_.begin(), cols_.end()) + 1;
  return take(rows, cols);
}

Triplets EntryBuilder::finish(int64_t rows, int64_t cols) { return take(rows, cols); }

Triplets EntryBuilder::take(int64_t rows, int64_t cols) {
  Triplets t;
  t.value = std::move(values_);
  if (remap_) {
    // Release each side's 64-bit ids as soon as they are mapped: they are the largest arrays.
    t.row_ids = remap_side(std::exchange(row_ids_, {}), t.row, "row");
    t.col_ids = remap_side(std::exchange(col_ids_, {}), t.col, "column");
    t.rows = static_cast<int64_t>(t.row_ids.size());
    t.cols = static_cast<int64_t>(t.col_ids.size());
  } else {
    t.row = std::move(rows_);
    t.col = std::move(cols_);
    t.rows = rows;
    t.cols = cols;
  }
  return t;
}

}  // namespace sfac::io
