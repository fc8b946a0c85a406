// Launch shape of the grid-stride helper kernels (plan builders, format conversions): 256
// threads per block, enough blocks for one item per thread up to 65536 (the loops do the rest).
#pragma once

#include <algorithm>
#include <cstdint>

namespace sfac::cuda::kernels {

inline int blocks_for(int64_t n) {
  return static_cast<int>(std::clamp<int64_t>((n + 255) / 256, 1, 65536));
}

}  // namespace sfac::cuda::kernels
