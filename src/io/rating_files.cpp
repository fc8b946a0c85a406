// Rating files: one "user item rating [more...]" entry per line, in three spellings that differ
// only in how fields are separated (blanks, "::", ',') and whether a header line comes first.
#include <cstring>

#include "io/formats.h"
#include "io/line_scanner.h"

namespace sfac::io {
namespace {

constexpr int kFields = 3;  // user, item, rating; later fields (timestamps) are ignored

// Each splitter stores up to kFields fields of a line and returns how many it found (exact
// when fewer than kFields, which is all an error message needs).
struct BlankSplitter {
  int operator()(const char* p, const char* end, Field* fields) const {
    const int n = split_blank_fields(p, end, fields, kFields);
    return n > kFields ? kFields : n;
  }
};

// Fields separated by a fixed string, blanks around each field trimmed.
struct TextSplitter {
  const char* separator;
  size_t length;
  bool strip_quotes;  // CSV writers may quote every field: "1","31","2.5"

  int operator()(const char* p, const char* end, Field* fields) const {
    const char first = separator[0];
    for (int n = 0;;) {
      const char* start = p;
      for (;;) {
        p = static_cast<const char*>(std::memchr(p, first, static_cast<size_t>(end - p)));
        if (p == nullptr) {
          p = end;
          break;
        }
        if (static_cast<size_t>(end - p) >= length && std::memcmp(p, separator, length) == 0) {
          break;
        }
        ++p;
      }
      Field field = trim_blanks(start, p);
      if (strip_quotes && field.end - field.begin >= 2 && *field.begin == '"' &&
          field.end[-1] == '"') {
        field = {field.begin + 1, field.end - 1};
      }
      fields[n++] = field;
      if (n == kFields || p == end) return n;
      p += length;
    }
  }
};

bool is_skipped(const char* p, const char* end) {
  p = skip_blanks(p, end);
  return p == end || *p == '#';
}

[[noreturn]] [[gnu::cold]] void fail_field_count(const InputFile& file, const Line& line, int n,
                                                 const char* separator) {
  if (separator == nullptr) {
    fail_at(SFAC_ERR_PARSE, file.path(), line.number, "expected ", kFields, " fields, found ",
            count_blank_fields(line.begin, line.end));
  }
  fail_at(SFAC_ERR_PARSE, file.path(), line.number, "expected ", kFields, " fields, found ", n,
          " (fields are separated by '", separator, "')");
}

// The shared loop. Blank lines and lines starting with '#' are skipped in every format.
template <typename Split>
void parse_rating_lines(const InputFile& file, EntryBuilder& out, const Split& split,
                        const char* separator, bool has_header) {
  const std::string& path = file.path();
  LineScanner lines(file);
  out.reserve(lines.remaining_lines());
  Line line;
  bool header_pending = has_header;
  Field fields[kFields];
  while (lines.next(line)) {
    if (is_skipped(line.begin, line.end)) continue;
    const int n = split(line.begin, line.end, fields);
    if (header_pending) {
      header_pending = false;
      // A file without its header would silently lose its first rating; refuse it instead.
      int64_t id;
      if (n == kFields && parse_int64(fields[0], id) == IntParse::kOk &&
          parse_int64(fields[1], id) == IntParse::kOk) {
        fail_at(SFAC_ERR_PARSE, path, line.number,
                "expected a header line (e.g. 'userId,movieId,rating,timestamp'), found data");
      }
      continue;
    }
    if (n < kFields) fail_field_count(file, line, n, separator);
    const int64_t row = parse_id(fields[0], "row id", 1, path, line.number);
    const int64_t col = parse_id(fields[1], "column id", 2, path, line.number);
    const float value = parse_value(fields[2], 3, path, line.number);
    out.add(row, col, value, line.number);
  }
}

}  // namespace

void parse_triplets(const InputFile& file, EntryBuilder& out) {
  parse_rating_lines(file, out, BlankSplitter{}, nullptr, false);
}

void parse_movielens_dat(const InputFile& file, EntryBuilder& out) {
  parse_rating_lines(file, out, TextSplitter{"::", 2, false}, "::", false);
}

void parse_csv(const InputFile& file, EntryBuilder& out) {
  parse_rating_lines(file, out, TextSplitter{",", 1, true}, ",", true);
}

}  // namespace sfac::io
