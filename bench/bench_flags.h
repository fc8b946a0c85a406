// Command-line flags of the benchmarks: "--name value" pairs. A run of the wrong suite is worse
// than no run (its numbers end up in BENCHMARKS.md), so an unknown flag, a flag without its
// value, a repeated flag or a value out of range stops the program with the usage line and exit
// status 2 before any work starts; --help prints the usage and exits 0.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace bench {

// The items of a comma-separated list ("" gives none).
inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) out.push_back(part);
  return out;
}

// The items joined by `separator`: the inverse of split for separator ",".
inline std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

class Flags {
 public:
  // usage: the text after "usage: <program> ", listing every flag with its default.
  Flags(int argc, char** argv, std::string usage) : program_(argv[0]), usage_(std::move(usage)) {
    for (int i = 1; i < argc; ++i) {
      const std::string name = argv[i];
      if (name == "--help" || name == "-h") {
        std::printf("usage: %s %s\n", program_.c_str(), usage_.c_str());
        std::exit(0);
      }
      if (name.rfind("--", 0) != 0) fail("expected a flag, got '" + name + "'");
      if (i + 1 == argc) fail("flag " + name + " needs a value");
      if (!values_.emplace(name, Value{argv[++i], false}).second) {
        fail("flag " + name + " given twice");
      }
    }
  }

  std::string text(const std::string& name, const std::string& fallback) {
    const Value* v = take(name);
    return v ? v->text : fallback;
  }

  // A whole number in [lo, hi].
  int64_t integer(const std::string& name, int64_t fallback, int64_t lo, int64_t hi) {
    const Value* v = take(name);
    return v ? parse_integer(name, v->text, lo, hi) : fallback;
  }

  // A number in (0, hi].
  double positive(const std::string& name, double fallback, double hi) {
    const Value* v = take(name);
    if (!v) return fallback;
    char* end = nullptr;
    errno = 0;
    const double x = std::strtod(v->text.c_str(), &end);
    if (end == v->text.c_str() || *end != '\0' || errno != 0 || !(x > 0.0) || !(x <= hi)) {
      char range[64];
      std::snprintf(range, sizeof range, "(0, %g]", hi);
      fail("flag " + name + ": '" + v->text + "' is not a number in " + range);
    }
    return x;
  }

  // One of the allowed words.
  std::string choice(const std::string& name, const std::string& fallback,
                     const std::vector<std::string>& allowed) {
    const Value* v = take(name);
    if (!v) return fallback;
    for (const std::string& word : allowed) {
      if (v->text == word) return v->text;
    }
    fail("flag " + name + ": '" + v->text + "' is not one of " + join(allowed, "|"));
  }

  // A comma-separated list of whole numbers in [lo, hi].
  std::vector<int64_t> integers(const std::string& name, const std::string& fallback, int64_t lo,
                                int64_t hi) {
    const Value* v = take(name);
    std::vector<int64_t> out;
    for (const std::string& part : split(v ? v->text : fallback)) {
      out.push_back(parse_integer(name, part, lo, hi));
    }
    if (out.empty()) fail("flag " + name + " needs at least one number");
    return out;
  }

  // The two flags every GPU benchmark takes, bounded once here: the factor rank K (a list, or
  // one value) and the timed repetitions per case. kMaxReps also bounds the CPU benchmark's --runs.
  static constexpr int64_t kMaxRank = 1 << 16;
  static constexpr int64_t kMaxReps = 100000;
  std::vector<int64_t> ranks(const std::string& fallback) {
    return integers("--k", fallback, 1, kMaxRank);
  }
  int64_t rank(int64_t fallback) { return integer("--k", fallback, 1, kMaxRank); }
  int reps(int fallback) { return static_cast<int>(integer("--reps", fallback, 1, kMaxReps)); }

  // Call after the last lookup: any flag given but never looked up is unknown.
  void done() const {
    for (const auto& [name, value] : values_) {
      if (!value.taken) fail("unknown flag " + name);
    }
  }

 private:
  struct Value {
    std::string text;
    bool taken;
  };

  Value* take(const std::string& name) {
    const auto it = values_.find(name);
    if (it == values_.end()) return nullptr;
    it->second.taken = true;
    return &it->second;
  }

  int64_t parse_integer(const std::string& name, const std::string& text, int64_t lo,
                        int64_t hi) const {
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '\0' || errno != 0 || x < lo || x > hi) {
      fail("flag " + name + ": '" + text + "' is not a whole number in [" + std::to_string(lo) +
           ", " + std::to_string(hi) + "]");
    }
    return x;
  }

  [[noreturn]] void fail(const std::string& why) const {
    std::fprintf(stderr, "%s: %s\nusage: %s %s\n", program_.c_str(), why.c_str(), program_.c_str(),
                 usage_.c_str());
    std::exit(2);
  }

  std::string program_;
  std::string usage_;
  std::map<std::string, Value> values_;
};

}  // namespace bench
