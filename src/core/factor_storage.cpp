#include "core/factor_storage.h"

#include <algorithm>
#include <cmath>

namespace sfac {
namespace {

// Rounds |x| to a multiple of the type's spacing at x. Dividing and multiplying by a power of
// two is exact, and nearbyint rounds half to even in the default rounding mode.
float round_magnitude(float a, int mantissa_bits, int min_exponent) {
  int exponent = 0;
  std::frexp(a, &exponent);  // a = m 2^exponent, m in [0.5, 1)
  // Below the smallest normal number the spacing stays that of the subnormals.
  const int lead = std::max(exponent - 1, min_exponent);
  const float spacing = std::ldexp(1.0f, lead - mantissa_bits);
  return std::nearbyint(a / spacing) * spacing;
}

}  // namespace

float round_to_storage(float x, sfac_dtype dtype) {
  if (dtype == SFAC_DTYPE_FLOAT32 || !std::isfinite(x) || x == 0.0f) return x;
  const float a = std::fabs(x);
  float r = 0.0f;
  if (dtype == SFAC_DTYPE_FLOAT16) {
    // 10 stored mantissa bits, exponents down to -14; 65504 is the largest finite value and
    // 65520, halfway to the next power of two, rounds to infinity.
    r = a >= 65520.0f ? INFINITY : round_magnitude(a, 10, -14);
  } else {
    // bfloat16 keeps float's exponent range with 7 mantissa bits; past the largest finite
    // value the product overflows to infinity by itself.
    r = round_magnitude(a, 7, -126);
  }
  return std::copysign(r, x);
}

void round_to_storage(float* values, int64_t count, sfac_dtype dtype) {
  if (dtype == SFAC_DTYPE_FLOAT32) return;
  for (int64_t i = 0; i < count; ++i) values[i] = round_to_storage(values[i], dtype);
}

}  // namespace sfac
