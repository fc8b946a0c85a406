// How ALS stores factors between solves (SFAC_OPT_FACTOR_DTYPE): a solved row is rounded to the
// storage type, to nearest even as the CUDA conversions (__float2half_rn, __float2bfloat16_rn)
// round, so that every backend trains on the same stored values.
#pragma once

#include <cstdint>
#include <vector>

#include "sparsefac/sparsefac.h"

namespace sfac {

// x rounded to `dtype` and back to float: x itself for FLOAT32 and for non-finite x; +-infinity
// past the type's range (FLOAT16: |x| >= 65520).
float round_to_storage(float x, sfac_dtype dtype);

// Every entry of `values` rounded in place.
void round_to_storage(float* values, int64_t count, sfac_dtype dtype);
inline void round_to_storage(std::vector<float>& values, sfac_dtype dtype) {
  round_to_storage(values.data(), static_cast<int64_t>(values.size()), dtype);
}

}  // namespace sfac
