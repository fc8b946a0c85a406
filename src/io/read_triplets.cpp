// Entry point of the readers: picks the format (detecting it for SFAC_FORMAT_AUTO) and the id
// rules, runs the parser, and finishes the entries into Triplets.
#include <sys/stat.h>

#include <exception>
#include <optional>
#include <string>

#include "core/error.h"
#include "io/entry_builder.h"
#include "io/file_buffer.h"
#include "io/formats.h"
#include "io/line_scanner.h"
#include "io/readers.h"

namespace sfac::io {
namespace {

// Lower-case extension of the file name ("" when there is none).
std::string extension(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot + 1);
  for (char& c : ext) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return ext;
}

// First line that is neither blank nor a '#' comment; empty when there is none.
Field first_data_line(const InputFile& file) {
  LineScanner lines(file);
  Line line;
  while (lines.next(line)) {
    const char* p = skip_blanks(line.begin, line.end);
    if (p != line.end && *p != '#') return {line.begin, line.end};
  }
  return {};
}

// Extension first (cheap and what users expect), then content for the formats that have a
// recognisable signature.
sfac_file_format detect_format(const InputFile& file) {
  const std::string ext = extension(file.path());
  if (ext == "mtx" || ext == "mm" || has_matrix_market_banner(file)) {
    return SFAC_FORMAT_MATRIX_MARKET;
  }
  const Field first = first_data_line(file);
  // No data line: begin = end = null, and null + 1 would be undefined.
  if (first.begin == first.end) return ext == "csv" ? SFAC_FORMAT_CSV : SFAC_FORMAT_TRIPLETS;
  for (const char* p = first.begin; p + 1 < first.end; ++p) {
    if (p[0] == ':' && p[1] == ':') return SFAC_FORMAT_MOVIELENS_DAT;
  }
  if (ext == "csv") return SFAC_FORMAT_CSV;
  return SFAC_FORMAT_TRIPLETS;
}

sfac_file_format resolved_format(const InputFile& file, const ReadOptions& options) {
  return options.format == SFAC_FORMAT_AUTO ? detect_format(file) : options.format;
}

// Matrix Market is 1-based by definition; other formats only when the caller says so.
int64_t id_base(sfac_file_format format, const ReadOptions& options) {
  return format == SFAC_FORMAT_MATRIX_MARKET || options.one_based ? 1 : 0;
}

// Runs the format's parser; returns the shape for formats whose header declares one.
std::optional<Shape> parse(const InputFile& file, sfac_file_format format, EntryBuilder& out) {
  switch (format) {
    case SFAC_FORMAT_MATRIX_MARKET:
      return parse_matrix_market(file, out);
    case SFAC_FORMAT_TRIPLETS:
      parse_triplets(file, out);
      return std::nullopt;
    case SFAC_FORMAT_MOVIELENS_DAT:
      parse_movielens_dat(file, out);
      return std::nullopt;
    case SFAC_FORMAT_CSV:
      parse_csv(file, out);
      return std::nullopt;
    default:  // the C API rejects unknown formats; this guards internal callers
      fail(SFAC_ERR_INVALID_ARGUMENT, "unknown file format ", static_cast<int>(format));
  }
}

// Reads the file again to find where the duplicate's two entries come from. False when it
// cannot be read again, or no longer yields the entries the matrix was built from (it was
// changed in between), so that a message never names lines that do not hold the duplicate.
bool locate_duplicate(const std::string& path, const ReadOptions& options, int64_t entries,
                      const DuplicateEntryError& error, EntrySource& first, EntrySource& second) {
  // Opening a FIFO would wait for another writer; anything else that is not a regular file
  // may give different contents the second time.
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return false;
  try {
    const InputFile file(path);
    const sfac_file_format format = resolved_format(file, options);
    EntryBuilder locator(path, EntryBuilder::Locate{error.first(), error.second()});
    parse(file, format, locator);
    first = locator.source(0);
    second = locator.source(1);
    if (locator.entries_seen() != entries || first.line == 0 || second.line <= first.line ||
        first.row_id != second.row_id || first.col_id != second.col_id) {
      return false;
    }
    if (options.remap_ids) return true;  // the indices are ranks among ids not kept here
    const int64_t base = id_base(format, options);
    return first.row_id - base == error.row() && first.col_id - base == error.col();
  } catch (const std::exception&) {
    return false;  // the duplicate stays reported, by input position
  }
}

}  // namespace

Triplets read_triplets(const std::string& path, const ReadOptions& options) {
  std::optional<EntryBuilder> builder;
  std::optional<Shape> header_shape;
  {
    // Scoped so the file's text is released before the id remapping allocates.
    const InputFile file(path);
    const sfac_file_format format = resolved_format(file, options);
    builder.emplace(path, options.remap_ids, id_base(format, options));
    header_shape = parse(file, format, *builder);
  }
  return header_shape ? builder->finish(header_shape->rows, header_shape->cols) : builder->finish();
}

void fail_duplicate_in_file(const std::string& path, const ReadOptions& options, int64_t entries,
                            const DuplicateEntryError& error) {
  EntrySource first, second;
  if (error.first() < 0 || !locate_duplicate(path, options, entries, error, first, second)) {
    fail(SFAC_ERR_DUPLICATE_ENTRY, path, ": ", error.what());
  }
  // A symmetric file holds (i, j) for (j, i) too; a user searching for the line may not know.
  std::string mirror;
  if (first.mirrored && second.mirrored) {
    mirror =
        cat("; symmetric file: lines ", first.line, " and ", second.line, " give it as its mirror");
  } else if (first.mirrored || second.mirrored) {
    mirror = cat("; symmetric file: line ", first.mirrored ? first.line : second.line,
                 " gives it as its mirror");
  }
  if (!mirror.empty()) mirror += cat(" (row ", first.col_id, ", col ", first.row_id, ")");
  fail_at(SFAC_ERR_DUPLICATE_ENTRY, path, second.line, "duplicate entry (row ", second.row_id,
          ", col ", second.col_id, "), first given on line ", first.line, mirror,
          kSumDuplicatesHint);
}

}  // namespace sfac::io
