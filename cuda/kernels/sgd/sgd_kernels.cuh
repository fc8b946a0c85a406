// Launchers of the SGD kernels (sgd_update.cu, sgd_objective.cu). Every launcher checks its
// launch; none synchronizes. Factor rows are `stride` entries of the storage type (float,
// __half or __nv_bfloat16, named by sfac_dtype), the first `rank` of them the factors and the
// rest zero; stride is a multiple of sgd_vector_width(dtype).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/sgd_chunks.h"
#include "sparsefac/sparsefac.h"

namespace sfac::cuda::kernels {

// Entries of a row one lane moves at a time (16 bytes).
constexpr int64_t sgd_vector_width(sfac_dtype dtype) { return dtype == SFAC_DTYPE_FLOAT32 ? 4 : 8; }

// The largest stride the update kernel takes.
int64_t sgd_max_stride(sfac_dtype dtype);

// Both sides' rows and biases, in training units (ratings divided by the rating scale).
struct SgdModel {
  sfac_dtype dtype;
  void* users;  // users x stride
  void* items;  // items x stride
  float* user_bias;  // null without biases
  float* item_bias;
  int64_t stride, rank;
  float global_mean;  // 0 without biases
};

// The chunks of one slab or more (core/sgd_chunks.h) on the device: chunk_begin and chunk_user
// for every chunk; `samples` holds samples [sample_base, ...) (a slab streamed into a buffer, or
// all of them with sample_base 0).
struct SgdChunkView {
  const SgdSample* samples;
  int64_t sample_base;
  const int64_t* chunk_begin;  // chunks + 1
  const int32_t* chunk_user;
  int64_t chunks;
  // Per user, 1 / (pieces it is split into), or null when no user is split: a split user's
  // pieces run at once on different workers, and each adds its chunk's change times this, so
  // that the row moves by the average of their steps, not their sum.
  const float* split_weight = nullptr;
};

// One launch of the update kernel: worker w runs chunks [part_begin[w], part_begin[w + 1]) (a
// slab's parts, SgdChunks::slab_parts), starting `rotation` chunks in and wrapping around, so
// that an epoch pairs different chunks in time than the one before (0 keeps the stored order:
// the deterministic grid).
struct SgdSchedule {
  int64_t workers;
  const int64_t* part_begin;
  uint64_t rotation = 0;
};

struct SgdStep {
  float gamma;             // learning rate of this epoch
  float lambda_p, lambda_q;  // in training units
};

// The wavefront schedule of one launch (cuMF_SGD section 5.2): worker w runs cells
// [part_cells[w], part_cells[w + 1]) (SgdChunks::part_cells of a slab), starting `rotation`
// cells in and wrapping around; cell x is chunks [cell_begin[x], cell_begin[x + 1]) of item range
// cell_range[x], run while the worker holds locks[cell_range[x]] (0 free, 1 held; all free
// before and after a launch).
struct SgdWavefront {
  int64_t workers;
  const int64_t* part_cells;
  const int64_t* cell_begin;
  const int32_t* cell_range;
  int* locks;
  uint64_t rotation = 0;
};

// Whether the update kernel takes users split between workers (chunk_user ~u) for rows of
// `stride` entries: it keeps the row as the chunk found it in registers, which only rows of up to
// 32 entries a lane leave room for.
__host__ __device__ constexpr bool sgd_splits_users(int64_t stride) { return stride <= 32 * 32; }

// Workers of the update kernel that fit the device at once (the persistent grid's size).
int64_t sgd_resident_workers(sfac_dtype dtype, int64_t stride);

// One pass of every scheduled worker over its chunks: for each rating r of user u and item i,
// e = r - (p_u . q_i + mean + b_u + b_i), then from the old values p_u += gamma (e q_i - lambda_p
// p_u), q_i += gamma (e p_u - lambda_q q_i), b_u += gamma (e - lambda_p b_u), b_i likewise. p_u
// and b_u stay in registers (float) for the whole chunk and are stored once at its end.
void launch_sgd_update(const SgdModel& model, const SgdChunkView& chunks,
                       const SgdSchedule& schedule, const SgdStep& step, cudaStream_t stream);

// The same pass under the wavefront schedule: a worker runs a cell only while it holds the lock
// of the cell's item range, so no two workers update one item at a time; it releases the lock
// when the cell is done and only then waits for its next range's.
void launch_sgd_wavefront(const SgdModel& model, const SgdChunkView& chunks,
                          const SgdWavefront& schedule, const SgdStep& step,
                          cudaStream_t stream);

// ---- Objective and checks (fp64 partial sums, one per block of a fixed grid, summed on the
// host in block order, so the same model always gives the same bits) ----

int sgd_objective_blocks();
// Per block: the sum over the samples of chunks [first, end) of (r - prediction)^2, in training
// units.
void launch_sgd_squared_errors(const SgdModel& model, const SgdChunkView& chunks, int64_t first,
                               int64_t end, double* partials, cudaStream_t stream);
// Per block: sum over the n rows of count[r] |row r|^2 (the per-sample regularization of
// Eq. 3 summed over the samples).
void launch_sgd_weighted_norms(sfac_dtype dtype, const void* rows, int64_t n, int64_t stride,
                               const int64_t* counts, double* partials, cudaStream_t stream);
// Per block: the sum of (v - scale (p_u . q_i + mean + b_u + b_i))^2 over the nonzeros v of a
// CSR matrix in the model's original units.
void launch_sgd_prediction_errors(const SgdModel& model, float scale, const int64_t* offsets,
                                  const int32_t* cols, const float* values, int64_t rows,
                                  double* partials, cudaStream_t stream);
// ---- Rows in and out of storage (sgd_rows.cu) ----

// rows (n x stride, storage type) = the n x rank floats `in`, rounded to nearest even, zero past
// rank.
void launch_sgd_narrow(sfac_dtype dtype, const float* in, int64_t n, int64_t rank,
                       int64_t stride, void* rows, cudaStream_t stream);
// *flag = 1 when an entry of the n rows or of the n biases (may be null) is not finite.
void launch_sgd_flag_non_finite(sfac_dtype dtype, const void* rows, int64_t n, int64_t stride,
                                const float* bias, int* flag, cudaStream_t stream);
// out (n x rank floats) = factor * the first rank entries of each row.
void launch_sgd_widen(sfac_dtype dtype, const void* rows, int64_t n, int64_t stride,
                      int64_t rank, float factor, float* out, cudaStream_t stream);

}  // namespace sfac::cuda::kernels
