// Launchers of the ALS kernels (als_normal_equations.cu, als_cholesky.cu, als_cg.cu,
// als_objective.cu). Every launcher checks its launch; none synchronizes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/als/als_half_sweep.cuh"

namespace sfac::cuda::kernels {

// A batch of a half-sweep: rows [row_begin, row_end), whose segments are [segment_base,
// segment_base + segments). The batch's systems are stored one per segment (als_system_floats(d)
// floats of `a`, and d right-hand side entries of `b`); a row's system is its first segment's.
struct AlsBatch {
  int64_t row_begin = 0, row_end = 0;
  int64_t segment_base = 0, segments = 0;
};

// The batch's normal equations a = G + sum_j w_j y_j y_j^T + reg I and b = sum_j c_j y_j:
// per segment, then the segments of each row added into its first (in segment order). The
// lower triangle of a, and the upper one too unless als_cholesky_on_tensor_cores(d) (the other
// Cholesky kernels read it).
void launch_als_normal_equations(const AlsHalfSweep& s, const AlsBatch& batch, float* a, float* b,
                                 cudaStream_t stream);

// The path of launch_als_normal_equations on tensor cores (als_normal_equations_mma.cu), per
// segment; false (nothing launched) where the staged rows do not fit shared memory.
bool launch_als_normal_equations_mma(const AlsHalfSweep& s, const AlsBatch& batch, float* a,
                                     float* b, cudaStream_t stream);

// The path of launch_als_normal_equations for 16-bit factor storage (s.fixed_half set), on
// 16-bit tensor cores (als_normal_equations_half.cu), per segment; false (nothing launched)
// without 16-bit storage or where the staged rows do not fit shared memory.
bool launch_als_normal_equations_half(const AlsHalfSweep& s, const AlsBatch& batch, float* a,
                                      float* b, cudaStream_t stream);

// 16-bit factor storage (als_factor_storage.cu): rounds the first `rank` entries of the n rows
// (of `stride` floats) in place to float16 (bf16 false) or bfloat16, writes the first d entries
// of each row (the rest zero) as 16-bit values to `half` (n x half_stride), and sets largest[0]
// to the largest finite magnitude among them and largest[1] to that of the n biases (0 for
// none: `bias` null).
void launch_round_to_storage(float* factors, int64_t n, int64_t stride, int64_t rank, int64_t d,
                             const float* bias, bool bf16, uint16_t* half, int64_t half_stride,
                             float* largest, cudaStream_t stream);

// largest[g] = the largest finite |values[e]| of segment g (0 if none), for the float16 normal
// equations' range scales (AlsHalfSweep::segment_largest).
void launch_segment_largest_values(const float* values, const int64_t* segment_begin,
                                   int64_t segments, float* largest, cudaStream_t stream);

// Solves the batch's systems by Cholesky into the solved side's rows (and biases). A system
// that is not positive definite (no regularization and fewer ratings than unknowns) is solved
// again with its diagonal raised by 1e-6 of its mean (as the CPU trainer does); if that fails
// too, the row becomes zero. Rows without ratings become zero. `a` may be overwritten.
void launch_als_cholesky_solve(const AlsHalfSweep& s, const AlsBatch& batch, float* a,
                               const float* b, cudaStream_t stream);

// The path of launch_als_cholesky_solve for systems whose packed triangle fits shared memory
// (als_cholesky_packed.cu); false (nothing launched) for larger ones.
bool launch_als_cholesky_solve_packed(const AlsHalfSweep& s, const AlsBatch& batch,
                                      const float* a, const float* b, int max_shared_bytes,
                                      cudaStream_t stream);

// The path of launch_als_cholesky_solve with the factorization's updates on tensor cores
// (als_cholesky_mma.cu), for d up to 272 where the tiles fit shared memory; false (nothing
// launched) otherwise.
bool launch_als_cholesky_solve_mma(const AlsHalfSweep& s, const AlsBatch& batch, const float* a,
                                   const float* b, int max_shared_bytes, cudaStream_t stream);

// Whether launch_als_cholesky_solve takes systems of d unknowns to the tensor-core kernel. The
// normal equations then write A in that kernel's tiled layout (als_system_tiles.cuh), else
// d x d row-major, both triangles.
bool als_cholesky_on_tensor_cores(int64_t d);

// Floats of one system's slot of `a` (its matrix, in the layout above).
int64_t als_system_floats(int64_t d);

// G = Y^T Y (d x d, row-major) rearranged in the accumulator order of the normal-equation
// kernels (add_gram_to_blocks): block q of the lower triangle of 16 x 16 blocks, numbered row by
// row, is kAlsTileFloats floats, lane l's eight at l * kAlsGramBlockLaneFloats, entry (16 bi + g
// + 8 half, 16 bj + 8 h + 2 t + e) at 4 h + 2 half + e (g = l / 4, t = l % 4); zero past d. The
// triangle has als_tile_rows(d) + 1 block rows, since the kernels pad d by up to a block for the
// targets' columns: als_gram_block_floats(d) floats.
constexpr int kAlsGramBlockLaneFloats = 8;
int64_t als_gram_block_floats(int64_t d);
void launch_als_gram_blocks(const float* gram, int64_t d, float* blocks, cudaStream_t stream);

// The rows of a half-sweep split for the conjugate-gradient kernel (device arrays): those with
// more than kAlsCgLongRow ratings, longest first, and the others.
constexpr int64_t kAlsCgLongRow = 1024;
struct AlsCgRows {
  const int32_t* long_rows = nullptr;
  int64_t long_count = 0;
  const int32_t* short_rows = nullptr;
  int64_t short_count = 0;
};

// cg_steps of conjugate gradient on every row, from the row's current value (warm start),
// never forming the matrices.
void launch_als_conjugate_gradient(const AlsHalfSweep& s, int64_t cg_steps, const AlsCgRows& rows,
                                   cudaStream_t stream);

// The largest d the Cholesky and CG kernels take.
constexpr int64_t kAlsMaxUnknowns = 2048;

// ---- Objective and checks (fp64 partial sums, one per block, summed on the host in order) ----

// Per block: [data, reg] over the users (rows of `users`), where data sums, over each user's
// ratings, (r - prediction)^2 for explicit feedback and c (p - x.y)^2 - (x.y)^2 for implicit
// (the correction to the all-cells term below), and reg sums reg(count) |x|^2 (+ bias^2).
// `users` is the user half-sweep (solved = user factors, fixed = item factors).
int als_objective_blocks();
void launch_als_user_objective(const AlsHalfSweep& users, double* partials, cudaStream_t stream);
// Per block: reg(count) |y|^2 (+ bias^2) over the items; `items` is the item half-sweep.
void launch_als_side_regularization(const AlsHalfSweep& items, double* partials,
                                    cudaStream_t stream);
// Per block: sum_u x_u^T G x_u with G = Y^T Y of the items (rank x rank), for implicit feedback.
void launch_als_all_cells(const float* user_factors, int64_t users, int64_t stride, int64_t rank,
                          const float* gram, double* partials, cudaStream_t stream);

// Per block: [squared error, absolute error] of the predictions x_u.y_i (+ mean + biases) on
// the nonzeros of a CSR matrix.
struct PredictionSides {
  const float* user_factors;
  const float* item_factors;
  const float* user_bias;  // null without biases
  const float* item_bias;
  int64_t stride, rank;
  float global_mean;
};
void launch_prediction_errors(const PredictionSides& model, const int64_t* offsets,
                              const int32_t* cols, const float* values, int64_t rows,
                              double* partials, cudaStream_t stream);

// *flag = 1 when any of the first `cols` entries of the n rows (of `stride`) or any of the
// n biases (may be null) is not finite; *flag is not cleared.
void launch_flag_non_finite(const float* factors, int64_t n, int64_t stride, int64_t cols,
                            const float* bias, int* flag, cudaStream_t stream);

}  // namespace sfac::cuda::kernels
