// Matrix Market coordinate files: reading (real/integer/pattern, general/symmetric) and
// writing (real general).
#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>

#include "io/formats.h"
#include "io/line_scanner.h"
#include "io/readers.h"

namespace sfac::io {
namespace {

constexpr const char* kBanner = "%%MatrixMarket";

struct Header {
  bool pattern = false;
  bool symmetric = false;
};

// Comments may appear anywhere before, between or after entries; so may blank lines.
bool is_skipped(const Line& line) {
  const char* p = skip_blanks(line.begin, line.end);
  return p == line.end || *p == '%';
}

Header parse_banner(const std::string& path, const Line& line) {
  Field words[6];
  const int n = split_blank_fields(line.begin, line.end, words, 5);
  if (n == 0 || !equals_ignore_case(words[0], kBanner)) {
    fail_at(SFAC_ERR_PARSE, path, line.number, "missing '", kBanner,
            "' header line (this does not look like a Matrix Market file)");
  }
  if (n < 5) {
    fail_at(SFAC_ERR_PARSE, path, line.number, "incomplete header: expected '", kBanner,
            " matrix coordinate <real|integer|pattern> <general|symmetric>'");
  }
  const Field object = words[1], format = words[2], field = words[3], symmetry = words[4];
  if (!equals_ignore_case(object, "matrix")) {
    fail_at(SFAC_ERR_UNSUPPORTED, path, line.number, "Matrix Market object ", quoted(object),
            " is not supported (only 'matrix')");
  }
  if (equals_ignore_case(format, "array")) {
    fail_at(SFAC_ERR_UNSUPPORTED, path, line.number,
            "dense 'array' Matrix Market files are not supported (only 'coordinate')");
  }
  if (!equals_ignore_case(format, "coordinate")) {
    fail_at(SFAC_ERR_PARSE, path, line.number, "unknown Matrix Market format ", quoted(format),
            " (expected 'coordinate')");
  }
  Header header;
  if (equals_ignore_case(field, "pattern")) {
    header.pattern = true;
  } else if (equals_ignore_case(field, "complex")) {
    fail_at(SFAC_ERR_UNSUPPORTED, path, line.number,
            "'complex' Matrix Market files are not supported (only real, integer, pattern)");
  } else if (!equals_ignore_case(field, "real") && !equals_ignore_case(field, "integer") &&
             !equals_ignore_case(field, "double")) {
    fail_at(SFAC_ERR_PARSE, path, line.number, "unknown Matrix Market field ", quoted(field),
            " (expected real, integer or pattern)");
  }
  if (equals_ignore_case(symmetry, "symmetric")) {
    header.symmetric = true;
  } else if (equals_ignore_case(symmetry, "skew-symmetric") ||
             equals_ignore_case(symmetry, "hermitian")) {
    fail_at(SFAC_ERR_UNSUPPORTED, path, line.number, quoted(symmetry),
            " Matrix Market files are not supported (only general and symmetric)");
  } else if (!equals_ignore_case(symmetry, "general")) {
    fail_at(SFAC_ERR_PARSE, path, line.number, "unknown Matrix Market symmetry ", quoted(symmetry),
            " (expected general or symmetric)");
  }
  return header;
}

// "rows cols entries".
struct SizeLine {
  int64_t rows = 0, cols = 0, entries = 0;
  int64_t number = 0;  // line number, for messages about the declared counts
};

SizeLine parse_size_line(const std::string& path, const Line& line) {
  Field f[3];
  const int n = split_blank_fields(line.begin, line.end, f, 3);
  if (n != 3) {
    fail_at(SFAC_ERR_PARSE, path, line.number, "expected the size line 'rows cols entries', found ",
            count_blank_fields(line.begin, line.end), " fields");
  }
  SizeLine size;
  size.number = line.number;
  const char* names[3] = {"row count", "column count", "entry count"};
  int64_t* targets[3] = {&size.rows, &size.cols, &size.entries};
  for (int i = 0; i < 3; ++i) {
    const IntParse result = parse_int64(f[i], *targets[i]);
    if (result == IntParse::kNegative) {
      fail_at(SFAC_ERR_PARSE, path, line.number, names[i], " ", f[i].str(), " is negative");
    }
    if (result != IntParse::kOk) fail_integer(result, f[i], names[i], i + 1, path, line.number);
  }
  constexpr int64_t kMaxDim = std::numeric_limits<int32_t>::max();
  if (size.rows > kMaxDim || size.cols > kMaxDim) {
    fail_at(SFAC_ERR_OUT_OF_RANGE, path, line.number, "shape ", size.rows, " x ", size.cols,
            " exceeds the int32 index range (", kMaxDim, ")");
  }
  return size;
}

[[noreturn]] [[gnu::cold]] void fail_outside(const std::string& path, int64_t line,
                                             const char* what, int64_t index, int64_t bound,
                                             const SizeLine& size) {
  fail_at(SFAC_ERR_OUT_OF_RANGE, path, line, what, " ", index, " is outside 1..", bound,
          " (the shape declared on line ", size.number, " is ", size.rows, " x ", size.cols, ")");
}

}  // namespace

bool has_matrix_market_banner(const InputFile& file) {
  const size_t n = std::strlen(kBanner);
  if (static_cast<size_t>(file.end() - file.begin()) < n) return false;
  return equals_ignore_case(Field{file.begin(), file.begin() + n}, kBanner);
}

Shape parse_matrix_market(const InputFile& file, EntryBuilder& out) {
  const std::string& path = file.path();
  LineScanner lines(file);
  Line line;
  lines.next(line);  // an InputFile has at least one line
  const Header header = parse_banner(path, line);

  bool have_size = false;
  while (lines.next(line)) {
    if (!is_skipped(line)) {
      have_size = true;
      break;
    }
  }
  if (!have_size) {
    fail_at(SFAC_ERR_PARSE, path, lines.line_number(),
            "missing size line 'rows cols entries' after the header");
  }
  const SizeLine size = parse_size_line(path, line);
  if (header.symmetric && size.rows != size.cols) {
    fail_at(SFAC_ERR_PARSE, path, line.number,
            "a symmetric matrix must be square, but the shape is ", size.rows, " x ", size.cols);
  }
  // The header's count may be absurd; never reserve more than the lines actually present.
  const int64_t expected =
      std::min<int64_t>(size.entries, static_cast<int64_t>(lines.remaining_lines()));
  out.reserve(static_cast<size_t>(header.symmetric ? 2 * expected : expected));

  const int fields_per_entry = header.pattern ? 2 : 3;
  int64_t count = 0;
  Field f[3];
  while (lines.next(line)) {
    if (is_skipped(line)) continue;
    if (count == size.entries) {
      fail_at(SFAC_ERR_PARSE, path, line.number, "more entries than the ", size.entries,
              " declared on line ", size.number);
    }
    const int n = split_blank_fields(line.begin, line.end, f, fields_per_entry);
    if (n != fields_per_entry) {
      fail_at(SFAC_ERR_PARSE, path, line.number, "expected ", fields_per_entry, " fields, found ",
              count_blank_fields(line.begin, line.end));
    }
    const int64_t i = parse_id(f[0], "row index", 1, path, line.number);
    const int64_t j = parse_id(f[1], "column index", 2, path, line.number);
    if (i < 1 || i > size.rows) fail_outside(path, line.number, "row index", i, size.rows, size);
    if (j < 1 || j > size.cols) {
      fail_outside(path, line.number, "column index", j, size.cols, size);
    }
    const float value = header.pattern ? 1.0f : parse_value(f[2], 3, path, line.number);
    out.add(i, j, value, line.number);
    // Symmetric files store one triangle; the matrix has both.
    if (header.symmetric && i != j) out.add_mirror(j, i, value, line.number);
    ++count;
  }
  if (count < size.entries) {
    fail_at(SFAC_ERR_PARSE, path, lines.line_number(), "the file ends after ", count, " of the ",
            size.entries, " entries declared on line ", size.number);
  }
  return {size.rows, size.cols};
}

void write_matrix_market(const std::string& path, int64_t rows, int64_t cols,
                         const int64_t* row_offsets, const int32_t* col_indices,
                         const float* values) {
  OutputFile out(path);
  const std::string head = cat(kBanner, " matrix coordinate real general\n",
                               "% written by libsparsefac " SFAC_VERSION_STRING "\n", rows, " ",
                               cols, " ", row_offsets[rows], "\n");
  out.write(head.data(), head.size());
  // Per entry: two int32 indices (<= 10 digits each) and a float in shortest round-trip form
  // (<= 15 characters), plus separators.
  constexpr size_t kMaxEntryChars = 64;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t e = row_offsets[r]; e < row_offsets[r + 1]; ++e) {
      char* const start = out.reserve(kMaxEntryChars);
      char* const limit = start + kMaxEntryChars;
      char* p = std::to_chars(start, limit, r + 1).ptr;
      *p++ = ' ';
      p = std::to_chars(p, limit, static_cast<int64_t>(col_indices[e]) + 1).ptr;
      *p++ = ' ';
      // Shortest representation that reads back as the same float: exact round trips, and
      // files no longer than necessary.
      p = std::to_chars(p, limit, values[e]).ptr;
      *p++ = '\n';
      out.advance(static_cast<size_t>(p - start));
    }
  }
  out.commit();
}

}  // namespace sfac::io
