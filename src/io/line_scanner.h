// Hot-path text scanning shared by all readers: lines, fields, numbers, and the
// "PATH:LINE: what is wrong" messages. Everything here works on [begin, end) pointer ranges of
// an InputFile; nothing allocates unless an error is being reported.
#pragma once

#include <fast_float/fast_float.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <system_error>
#include <utility>

#include "core/error.h"
#include "io/file_buffer.h"

namespace sfac::io {

// One physical line without its "\n" or "\r\n" terminator; number is 1-based.
struct Line {
  const char* begin = nullptr;
  const char* end = nullptr;
  int64_t number = 0;
};

class LineScanner {
 public:
  explicit LineScanner(const InputFile& file) : next_(file.begin()), end_(file.end()) {}

  bool next(Line& line) {
    if (next_ == end_) return false;
    // Never NULL: an InputFile always ends with '\n'.
    const char* newline =
        static_cast<const char*>(std::memchr(next_, '\n', static_cast<size_t>(end_ - next_)));
    line.begin = next_;
    line.end = (newline > next_ && newline[-1] == '\r') ? newline - 1 : newline;
    line.number = ++number_;
    next_ = newline + 1;
    return true;
  }

  // Lines not yet returned: an upper bound on the entries still to come, for reserve().
  size_t remaining_lines() const { return static_cast<size_t>(std::count(next_, end_, '\n')); }

  // Number of the last line returned (0 before the first); at the end, the file's last line.
  int64_t line_number() const { return number_; }

 private:
  const char* next_;
  const char* end_;
  int64_t number_ = 0;
};

inline bool is_blank(char c) { return c == ' ' || c == '\t'; }

inline const char* skip_blanks(const char* p, const char* end) {
  while (p != end && is_blank(*p)) ++p;
  return p;
}

// A field of a line: [begin, end).
struct Field {
  const char* begin = nullptr;
  const char* end = nullptr;
  bool empty() const { return begin == end; }
  std::string str() const { return std::string(begin, end); }
};

inline Field trim_blanks(const char* begin, const char* end) {
  begin = skip_blanks(begin, end);
  while (end != begin && is_blank(end[-1])) --end;
  return {begin, end};
}

// Splits at runs of blanks (spaces/tabs). Stores the first `max` fields; returns how many fields
// the line has, counting at most max + 1 so the rest of a long line is not scanned.
inline int split_blank_fields(const char* p, const char* end, Field* fields, int max) {
  int n = 0;
  for (;;) {
    p = skip_blanks(p, end);
    if (p == end) return n;
    const char* start = p;
    while (p != end && !is_blank(*p)) ++p;
    if (n == max) return n + 1;
    fields[n++] = {start, p};
  }
}

// Exact number of blank-separated fields, for error messages.
inline int count_blank_fields(const char* p, const char* end) {
  int n = 0;
  for (;;) {
    p = skip_blanks(p, end);
    if (p == end) return n;
    while (p != end && !is_blank(*p)) ++p;
    ++n;
  }
}

// Field text for a message: quoted, bytes outside printable ASCII (and the quote and backslash)
// written as \xNN, and cut short, so that a binary file can make neither a huge message, nor
// one cut at a NUL byte, nor one that sends control sequences to the caller's terminal.
inline std::string quoted(Field field) {
  constexpr ptrdiff_t kMax = 40;
  static constexpr char kHex[] = "0123456789abcdef";
  const char* const stop = field.end - field.begin <= kMax ? field.end : field.begin + kMax;
  std::string out = "'";
  for (const char* p = field.begin; p != stop; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  out += stop == field.end ? "'" : "...'";
  return out;
}

// Throws sfac::Error(status, "PATH:LINE: parts...").
template <typename... Parts>
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] void fail_at(sfac_status status,
                                                          const std::string& path, int64_t line,
                                                          Parts&&... parts) {
  fail(status, path, ":", line, ": ", std::forward<Parts>(parts)...);
}

enum class IntParse { kOk, kInvalid, kNegative, kTooLarge };

// A non-negative decimal integer that must fill the whole field (int64 range). Hand-written:
// ids are two thirds of every rating line, and std::from_chars/strtoll cost more per call.
inline IntParse parse_int64(Field field, int64_t& out) {
  const char* p = field.begin;
  const char* end = field.end;
  if (p != end && (*p == '+' || *p == '-')) {
    const bool negative = *p == '-';
    ++p;
    if (negative && p != end && std::all_of(p, end, [](char c) { return c >= '0' && c <= '9'; })) {
      return IntParse::kNegative;
    }
  }
  if (p == end) return IntParse::kInvalid;
  uint64_t value = 0;
  if (end - p <= 18) {  // 18 digits cannot overflow int64: no per-digit overflow checks
    for (; p != end; ++p) {
      const unsigned digit = static_cast<unsigned>(*p) - '0';
      if (digit > 9) return IntParse::kInvalid;
      value = value * 10 + digit;
    }
  } else {
    bool overflow = false;
    for (; p != end; ++p) {
      const unsigned digit = static_cast<unsigned>(*p) - '0';
      if (digit > 9) return IntParse::kInvalid;
      overflow |= __builtin_mul_overflow(value, 10u, &value);
      overflow |= __builtin_add_overflow(value, digit, &value);
    }
    if (overflow || value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return IntParse::kTooLarge;
    }
  }
  out = static_cast<int64_t>(value);
  return IntParse::kOk;
}

// Reports a field that parse_int64 rejected; `what` is e.g. "row id" or "column index".
[[noreturn]] [[gnu::cold]] inline void fail_integer(IntParse result, Field field, const char* what,
                                                    int field_number, const std::string& path,
                                                    int64_t line) {
  if (result == IntParse::kNegative) {
    fail_at(SFAC_ERR_OUT_OF_RANGE, path, line, what, " ", field.str(), " in field ", field_number,
            " is negative");
  }
  if (result == IntParse::kTooLarge) {
    fail_at(SFAC_ERR_OUT_OF_RANGE, path, line, what, " ", field.str(), " in field ", field_number,
            " does not fit in 64 bits");
  }
  fail_at(SFAC_ERR_PARSE, path, line, "invalid ", what, " ", quoted(field), " in field ",
          field_number, " (expected a non-negative integer)");
}

inline int64_t parse_id(Field field, const char* what, int field_number, const std::string& path,
                        int64_t line) {
  int64_t value;
  const IntParse result = parse_int64(field, value);
  if (result != IntParse::kOk) fail_integer(result, field, what, field_number, path, line);
  return value;
}

// A finite float that must fill the whole field. fast_float rounds correctly, so a value
// written with enough digits reads back bit-exact.
inline float parse_value(Field field, int field_number, const std::string& path, int64_t line) {
  const char* p = field.begin;
  // fast_float 3.x rejects a leading '+', which some writers emit.
  if (field.end - p >= 2 && *p == '+' && p[1] != '-' && p[1] != '+') ++p;
  float value;
  const fast_float::from_chars_result result = fast_float::from_chars(p, field.end, value);
  if (p == field.end || result.ec != std::errc() || result.ptr != field.end) {
    fail_at(SFAC_ERR_PARSE, path, line, "invalid number ", quoted(field), " in field ",
            field_number);
  }
  if (!std::isfinite(value)) {
    // "nan", "inf" and "infinity" all contain an 'n'; anything else became infinite because
    // its magnitude is beyond the float range.
    const bool spelled =
        std::any_of(field.begin, field.end, [](char c) { return (c | 32) == 'n'; });
    fail_at(SFAC_ERR_INVALID_VALUE, path, line, "value ", quoted(field), " in field ", field_number,
            spelled ? " is not finite" : " is beyond the float range");
  }
  return value;
}

// ASCII case-insensitive equality ("%%matrixmarket" is as valid as "%%MatrixMarket").
inline bool equals_ignore_case(Field field, const char* word) {
  const size_t n = std::strlen(word);
  if (static_cast<size_t>(field.end - field.begin) != n) return false;
  for (size_t i = 0; i < n; ++i) {
    char c = field.begin[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    char w = word[i];
    if (w >= 'A' && w <= 'Z') w = static_cast<char>(w - 'A' + 'a');
    if (c != w) return false;
  }
  return true;
}

}  // namespace sfac::io
