// One ALS half-sweep as the kernels see it: the rows being solved (their ratings grouped by
// row: CSR for users, CSC for items), the fixed side's factors, and how a rating becomes a weight
// w and a target c in each row's regularized normal equations
//   (G + sum_j w_j y_j y_j^T + reg I) x = sum_j c_j y_j
// Explicit feedback: w = 1, c = r - (global mean + fixed bias) with biases, r without.
// Implicit feedback (Hu, Koren, Volinsky): w = alpha r, c = 1 + alpha r where r > 0, else 0,
// and G = Y^T Y of the fixed side (Gates et al.); explicit feedback has no G.
#pragma once

#include <cstdint>

namespace sfac::cuda::kernels {

// The shortest segment length, and the quantum of the lengths the trainer picks per side (see
// AlsHalfSweep::segment_begin).
constexpr int64_t kAlsSegment = 1024;

struct AlsHalfSweep {
  // The solved side's ratings, grouped by its rows.
  const int64_t* offsets = nullptr;
  const int32_t* others = nullptr;  // the fixed side's index of each rating
  const float* values = nullptr;
  int64_t rows = 0;
  // The rows' ratings cut into segments (of a length per side), so that a long row is spread
  // over many thread blocks: segment g covers ratings [segment_begin[g], segment_begin[g + 1])
  // of row segment_row[g]; row r owns segments [first_segment[r], first_segment[r + 1]) (at
  // least one, empty for a row without ratings).
  const int64_t* segment_begin = nullptr;
  const int32_t* segment_row = nullptr;
  const int64_t* first_segment = nullptr;

  // Both sides store factors as n x stride row-major rows; with biases, column `rank` of every
  // row holds the constant 1, so the fixed side's 1 multiplies the solved side's bias.
  const float* fixed = nullptr;
  const float* fixed_bias = nullptr;  // null without biases
  float* solved = nullptr;
  float* solved_bias = nullptr;  // null without biases
  int64_t stride = 0;
  int64_t rank = 0;
  int64_t d = 0;  // unknowns per row: rank, plus the bias

  // With 16-bit factor storage (SFAC_OPT_FACTOR_DTYPE): the fixed side's rows as stored,
  // half_stride 16-bit values a row (a multiple of 8, above d: zero past d), `fixed` holding the
  // same values as floats, and (on the device) the largest magnitude among them and among the
  // fixed side's biases (two floats). Null for float32 storage.
  const uint16_t* fixed_half = nullptr;
  int64_t half_stride = 0;
  bool half_bf16 = false;  // bfloat16, else float16
  const float* fixed_half_max = nullptr;
  // float16 storage: the largest |rating| of each segment.
  const float* segment_largest = nullptr;

  bool implicit = false;
  float alpha = 0.0f;
  float global_mean = 0.0f;
  const float* gram = nullptr;  // d x d (implicit), or null
  const float* gram_blocks = nullptr;  // the same in accumulator order (als_gram_blocks), or null
  double lambda = 0.0;
  bool weighted = false;  // reg = lambda * (the row's rating count) instead of lambda
};

#ifdef __CUDACC__
__device__ inline float als_regularization(const AlsHalfSweep& s, int64_t count) {
  return static_cast<float>(s.weighted ? s.lambda * static_cast<double>(count) : s.lambda);
}

// The weight and target of rating `r` of the fixed side's row `other`.
__device__ inline void als_weight_target(const AlsHalfSweep& s, float r, int32_t other, float* w,
                                         float* c) {
  if (s.implicit) {
    *w = s.alpha * r;
    *c = r > 0.0f ? 1.0f + s.alpha * r : 0.0f;
  } else {
    *w = 1.0f;
    *c = s.fixed_bias ? r - (s.global_mean + s.fixed_bias[other]) : r;
  }
}

// Bounds of |w| and |c| (als_weight_target) over ratings of magnitude up to `largest`, with
// 16-bit storage (the fixed side's largest bias in s.fixed_half_max[1]).
__device__ inline void als_weight_target_bounds(const AlsHalfSweep& s, float largest, float* w,
                                                float* c) {
  if (s.implicit) {
    *w = fabsf(s.alpha) * largest;
    *c = 1.0f + *w;
  } else {
    *w = 1.0f;
    *c = s.fixed_bias ? largest + fabsf(s.global_mean) + s.fixed_half_max[1] : largest;
  }
}

// The solution of a row without ratings: zero (the regularized optimum; also for implicit
// feedback, whose right-hand side is then zero).
__device__ inline void als_zero_row(const AlsHalfSweep& s, int64_t row) {
  float* x = s.solved + row * s.stride;
  for (int64_t t = threadIdx.x; t < s.rank; t += blockDim.x) x[t] = 0.0f;
  if (s.solved_bias && threadIdx.x == 0) s.solved_bias[row] = 0.0f;
}
#endif

}  // namespace sfac::cuda::kernels
