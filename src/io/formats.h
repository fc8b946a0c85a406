// One parser per file format. Each scans a whole in-memory file, reports problems as
// "PATH:LINE: ..." and hands every entry to an EntryBuilder, which owns the id -> index rules.
#pragma once

#include <cstdint>

#include "io/entry_builder.h"
#include "io/file_buffer.h"

namespace sfac::io {

struct Shape {
  int64_t rows = 0;
  int64_t cols = 0;
};

// "%%MatrixMarket matrix coordinate real|integer|pattern general|symmetric"; returns the
// header's shape. Symmetric files get their off-diagonal entries mirrored.
Shape parse_matrix_market(const InputFile& file, EntryBuilder& out);

// "row col value [ignored...]" separated by blanks/tabs (LIBMF, MovieLens u.data).
void parse_triplets(const InputFile& file, EntryBuilder& out);

// "user::item::rating[::timestamp]" (MovieLens ratings.dat).
void parse_movielens_dat(const InputFile& file, EntryBuilder& out);

// A header line, then "user,item,rating[,...]" (MovieLens ratings.csv).
void parse_csv(const InputFile& file, EntryBuilder& out);

// True when the first line is a Matrix Market banner.
bool has_matrix_market_banner(const InputFile& file);

}  // namespace sfac::io
