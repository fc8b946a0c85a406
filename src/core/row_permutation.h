// Host rows of `width` floats moved by a permutation of their n rows. Inline, so that the
// test binary's own copies of core files (factor_init.cpp) need no other object.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sfac {

// out row r = in row from[r].
inline std::vector<float> gather_rows(const std::vector<float>& in, const int32_t* from, int64_t n,
                                      int64_t width) {
  std::vector<float> out(in.size());
  for (int64_t r = 0; r < n; ++r) {
    std::copy_n(in.begin() + int64_t{from[r]} * width, width, out.begin() + r * width);
  }
  return out;
}

// out row to[r] = in row r: the inverse move.
inline std::vector<float> scatter_rows(const std::vector<float>& in, const int32_t* to, int64_t n,
                                       int64_t width) {
  std::vector<float> out(in.size());
  for (int64_t r = 0; r < n; ++r) {
    std::copy_n(in.begin() + r * width, width, out.begin() + int64_t{to[r]} * width);
  }
  return out;
}

}  // namespace sfac
