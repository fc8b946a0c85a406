// Collects the entries a parser finds and turns the file's ids into matrix indices: either
// directly (id - base, checked against the int32 range with the line at hand) or, with
// remap_ids, through each side's sorted distinct ids once the whole file has been read.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "io/readers.h"

namespace sfac::io {

class EntryBuilder {
 public:
  // id_base is subtracted from ids to form indices (1 for one-based files); unused with remap.
  EntryBuilder(const std::string& path, bool remap_ids, int64_t id_base)
      : path_(path), remap_(remap_ids), base_(id_base) {}

  void reserve(size_t entries);

  // Adds one entry with the file's (non-negative) ids; `line` is only for messages.
  void add(int64_t row_id, int64_t col_id, float value, int64_t line) {
    if (remap_) {
      row_ids_.push_back(row_id);
      col_ids_.push_back(col_id);
    } else {
      rows_.push_back(to_index(row_id, "row", line));
      cols_.push_back(to_index(col_id, "column", line));
    }
    values_.push_back(value);
  }

  // Shape (max index + 1 on each side) for triplet-style files. With remap_ids the shape is the
  // number of distinct ids instead, whatever the header says.
  Triplets finish();
  // Shape given by a header (Matrix Market); the parser has checked the indices against it.
  Triplets finish(int64_t rows, int64_t cols);

 private:
  // The largest index must leave rows = index + 1 within the int32 dimension limit.
  static constexpr int64_t kIndexLimit = std::numeric_limits<int32_t>::max();

  int32_t to_index(int64_t id, const char* side, int64_t line) const {
    const int64_t index = id - base_;
    if (index < 0 || index >= kIndexLimit) fail_index(id, side, line);
    return static_cast<int32_t>(index);
  }
  [[noreturn]] void fail_index(int64_t id, const char* side, int64_t line) const;
  Triplets take(int64_t rows, int64_t cols);

  std::string path_;
  bool remap_;
  int64_t base_;
  std::vector<int32_t> rows_, cols_;        // without remap
  std::vector<int64_t> row_ids_, col_ids_;  // with remap: ids as in the file
  std::vector<float> values_;
};

}  // namespace sfac::io
