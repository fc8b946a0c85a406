// Entry point of the readers: picks the format (detecting it for SFAC_FORMAT_AUTO) and the id
// rules, runs the parser, and finishes the entries into Triplets.
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

}  // namespace

Triplets read_triplets(const std::string& path, const ReadOptions& options) {
  std::optional<EntryBuilder> builder;
  std::optional<Shape> header_shape;
  {
    // Scoped so the file's text is released before the id remapping allocates.
    const InputFile file(path);
    const sfac_file_format format =
        options.format == SFAC_FORMAT_AUTO ? detect_format(file) : options.format;
    // Matrix Market is 1-based by definition; other formats only when the caller says so.
    const int64_t base = format == SFAC_FORMAT_MATRIX_MARKET || options.one_based ? 1 : 0;
    builder.emplace(path, options.remap_ids, base);
    switch (format) {
      case SFAC_FORMAT_MATRIX_MARKET:
        header_shape = parse_matrix_market(file, *builder);
        break;
      case SFAC_FORMAT_TRIPLETS:
        parse_triplets(file, *builder);
        break;
      case SFAC_FORMAT_MOVIELENS_DAT:
        parse_movielens_dat(file, *builder);
        break;
      case SFAC_FORMAT_CSV:
        parse_csv(file, *builder);
        break;
      default:  // the C API rejects unknown formats; this guards internal callers
        fail(SFAC_ERR_INVALID_ARGUMENT, "unknown file format ", static_cast<int>(format));
    }
  }
  return header_shape ? builder->finish(header_shape->rows, header_shape->cols) : builder->finish();
}

}  // namespace sfac::io
