// Shared by the libFuzzer targets: one CPU context for the whole run (created on first use), with
// a host memory budget so that a declared shape cannot make the fuzzer itself run out of memory
// or time (a matrix of a few million empty rows is valid, but its per-row work under coverage
// instrumentation passes the 10 s timeout), and a per-process scratch file for the targets that
// read files.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "sparsefac/sparsefac.h"

namespace sfac_fuzz {

inline sfac_context* context() {
  static sfac_context* ctx = [] {
    sfac_context* c = nullptr;
    if (sfac_context_create(SFAC_BACKEND_CPU, 0, 1, 7, &c) != SFAC_OK) std::abort();
    if (sfac_context_set_memory_limit(c, int64_t{16} << 20) != SFAC_OK) std::abort();
    return c;
  }();
  return ctx;
}

// Writes the bytes to this process's scratch file with the given extension; returns its path.
inline std::string write_scratch(const uint8_t* data, size_t size, const char* extension) {
  const std::string path = "/tmp/sfac-fuzz-" + std::to_string(::getpid()) + extension;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace sfac_fuzz
