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

// Where one entry of a file came from: its line and its ids as the file has them.
struct EntrySource {
  int64_t line = 0;  // 0: not seen
  int64_t row_id = 0;
  int64_t col_id = 0;
  bool mirrored = false;  // the line has (col_id, row_id): the other half of a symmetric entry
};

class EntryBuilder {
 public:
  // id_base is subtracted from ids to form indices (1 for one-based files); unused with remap.
  EntryBuilder(const std::string& path, bool remap_ids, int64_t id_base)
      : path_(path), remap_(remap_ids), base_(id_base) {}

  // Keeps no entries, only counts them and notes where the entries at positions `first` and
  // `second` (in the order added) come from: a second pass over a file to name the lines of
  // entries that a later stage found fault with.
  struct Locate {
    int64_t first;
    int64_t second;
  };
  EntryBuilder(const std::string& path, Locate targets)
      : path_(path),
        remap_(false),
        base_(0),
        locating_(true),
        targets_{targets.first, targets.second} {}

  void reserve(size_t entries);

  // Adds one entry with the file's (non-negative) ids; `line` is only for messages.
  void add(int64_t row_id, int64_t col_id, float value, int64_t line) {
    if (locating_) {
      locate(row_id, col_id, line, false);
      return;
    }
    if (remap_) {
      row_ids_.push_back(row_id);
      col_ids_.push_back(col_id);
    } else {
      rows_.push_back(to_index(row_id, "row", line));
      cols_.push_back(to_index(col_id, "column", line));
    }
    values_.push_back(value);
  }

  // Adds the mirror (col, row) of the entry just added from the same line of a symmetric file.
  void add_mirror(int64_t row_id, int64_t col_id, float value, int64_t line) {
    if (locating_) {
      locate(row_id, col_id, line, true);
      return;
    }
    add(row_id, col_id, value, line);
  }

  // After a Locate pass: the entries added, and where the two targets came from.
  int64_t entries_seen() const { return seen_; }
  const EntrySource& source(int which) const { return sources_[which]; }

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
  void locate(int64_t row_id, int64_t col_id, int64_t line, bool mirrored) {
    for (int k = 0; k < 2; ++k) {
      if (seen_ == targets_[k]) sources_[k] = {line, row_id, col_id, mirrored};
    }
    ++seen_;
  }
  Triplets take(int64_t rows, int64_t cols);

  std::string path_;
  bool remap_;
  int64_t base_;
  std::vector<int32_t> rows_, cols_;        // without remap
  std::vector<int64_t> row_ids_, col_ids_;  // with remap: ids as in the file
  std::vector<float> values_;
  // Locate pass only.
  bool locating_ = false;
  int64_t targets_[2] = {-1, -1};
  EntrySource sources_[2];
  int64_t seen_ = 0;
};

}  // namespace sfac::io
