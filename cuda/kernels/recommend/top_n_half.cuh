// Top-n selection over every candidate for a batch of queries, on factors stored as 16-bit
// values (float16 or bfloat16): the same answers as launch_top_n (top_n.cuh) where the factors
// are exactly those values, since every product of two 16-bit values is exact in fp32.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/recommend/top_n.cuh"

namespace sfac::cuda::kernels {

// Rows of 16-bit factors are stored zero-padded to a multiple of this many values (the mma's k).
constexpr int kTopNHalfRankStep = 16;
// The longest rows (16-bit values) the kernel takes: whole rows are staged in shared memory.
constexpr int64_t kTopNHalfMaxStride = 128;

struct TopNHalfProblem {
  bool bf16;  // bfloat16 values, else float16
  // Query i is row query_ids[i] of query_factors; candidate c is row candidate_ids[c] of
  // candidate_factors (candidate_ids null: row c), candidate ids increasing. Rows hold `stride`
  // 16-bit values (a multiple of kTopNHalfRankStep up to kTopNHalfMaxStride, zero past the
  // rank), 16-byte aligned.
  const uint16_t* query_factors;
  const int32_t* query_ids;
  int64_t queries;
  const uint16_t* candidate_factors;
  const int32_t* candidate_ids;
  int64_t candidates;
  int64_t stride;

  // kDot: dot + (query_value[q] + candidate_value[c]) where both are given, else dot.
  // kCosine: dot / (query_value[q] * candidate_value[c]), 0 where that product is 0.
  // query_value is indexed by query id, candidate_value by candidate position c (not id).
  TopNScore score;
  const float* query_value;
  const float* candidate_value;
  bool exclude_self;  // the candidate whose id is the query's never ranks

  // Candidates never ranked for query id q: ids exclude_cols[exclude_offsets[q] ..
  // exclude_offsets[q + 1]), sorted. Null: none.
  const int64_t* exclude_offsets;
  const int32_t* exclude_cols;

  int n;  // 1 .. kTopNMax
  // queries x n: best first (higher score, then lower id), padded with -1 / -INFINITY.
  int32_t* out_ids;
  float* out_scores;
};

// Queues the selection on `stream`; a NaN score ranks as -INFINITY, as on the host.
void launch_top_n_half(const TopNHalfProblem& problem, cudaStream_t stream);

// out[c] = values[ids[c]] for c < count (per-candidate values by position, for allow-lists).
void launch_gather_values(const float* values, const int32_t* ids, int64_t count, float* out,
                          cudaStream_t stream);

}  // namespace sfac::cuda::kernels
