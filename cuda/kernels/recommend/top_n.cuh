// Top-n selection over every candidate for a batch of queries, scores computed on the fly and
// never stored: recommend (users against items) and similar items (items against items) are both
// this with a different score epilogue.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace sfac::cuda::kernels {

// The largest n the kernel keeps per query (its lists live in shared memory).
constexpr int kTopNMax = 128;
// Factor rows are stored zero-padded to a multiple of this many floats (the kernel's k chunk).
constexpr int kTopNRankStep = 32;

enum class TopNScore {
  kDot,     // dot + (query_offset[q] + candidate_add[c]) where those are given, else dot
  kCosine,  // dot / (query_norm[q] * candidate_norm[c]), 0 where that product is 0
};

struct TopNProblem {
  // Query i is row query_ids[i] of query_factors; candidate c is row candidate_ids[c] of
  // candidate_factors (candidate_ids null: row c), candidate ids increasing. Rows hold `stride`
  // floats (a multiple of kTopNRankStep, zero past the rank), 16-byte aligned.
  const float* query_factors;
  const int32_t* query_ids;
  int64_t queries;
  const float* candidate_factors;
  const int32_t* candidate_ids;
  int64_t candidates;
  int64_t stride;

  TopNScore score;
  const float* query_offset;   // kDot, by query id; may be null (no biases)
  const float* candidate_add;  // kDot, by candidate id; null exactly when query_offset is
  const float* query_norm;     // kCosine, by query id
  const float* candidate_norm;  // kCosine, by candidate id
  bool exclude_self;           // the candidate whose id is the query's never ranks

  // Candidates never ranked for query id q: ids exclude_cols[exclude_offsets[q] ..
  // exclude_offsets[q + 1]), sorted. Null: none.
  const int64_t* exclude_offsets;
  const int32_t* exclude_cols;

  int n;  // 1 .. kTopNMax
  // queries x n: best first (higher score, then lower id), padded with -1 / -INFINITY.
  int32_t* out_ids;
  float* out_scores;
};

// Queues the selection on `stream`. Scores are fp32-accurate (3xTF32 products, fp32 sums); a NaN
// score ranks as -INFINITY, as on the host.
void launch_top_n(const TopNProblem& problem, cudaStream_t stream);

}  // namespace sfac::cuda::kernels

namespace sfac::cuda::kernels {

// norms[r] = sqrt(sum_t rows[r * stride + t]^2) for r < count (the cosine's denominators).
void launch_row_norms(const float* rows, int64_t count, int64_t stride, float* norms,
                      cudaStream_t stream);

}  // namespace sfac::cuda::kernels
