// Top-n by a cut and exact rescoring, for recommend over a whole catalogue. The scan scores a
// sample of the candidates first, which gives each query a cut that its n-th best score cannot
// be below, then every candidate, with 16-bit tensor-core products, and keeps per query the few
// whose scores reach the cut; the finish drops excluded survivors, scores the ones that can
// still rank exactly as the host does (core/ranking.cpp), and orders them. The scan has no lists
// and no merges: a block walks the candidates with one barrier pair a tile. Where the 16-bit
// scores are only approximations (factors rounded to bfloat16) the cut is lowered by a bound of
// the difference (the query's margin), so no candidate that ranks is lost; the listed scores
// are always the exact ones.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace sfac::cuda::kernels {

// Survivors a query keeps, in 1 or kTopNMaxSegments segments of equal size: one segment that
// all the scan's threads fill through a counter (the warp-mma scan), or one a thread with its
// own count, for the four threads that hold a query's candidates (the warpgroup scan: no
// atomics). A query with more survivors than a segment holds (many near-equal scores) is
// answered by the single-pass kernels instead.
constexpr int kTopNSurvivors = 512;
constexpr int kTopNMaxSegments = 4;
// The largest n the two passes take (the sample's cut and the finish's floor hold for n <= 32).
constexpr int kTopNTwoPassMaxN = 32;
// The longest 16-bit rows the scan takes (whole rows are staged in shared memory).
constexpr int64_t kTopNScanMaxStride = 128;

// Folded scores (bfloat16 rows): a tail of 16-bit columns after each row makes the tensor cores
// add the bias part and subtract the cut with the products, so that a score's pass bit is the
// sign of its accumulator. A candidate's tail is [1, 1, 1, b0, b1, b2, 0 ...] with b0 + b1 + b2
// its bias exactly (three bfloat16 values hold a float's 24 bits); a query's is
// [c0, c1, c2, 1, 1, 1, 0 ...] with c its offset (the sample) or minus its threshold (the scan).
// Tails start after the rank rounded up to 8 and end at a multiple of 16: 8 or 16 values.
constexpr int64_t kTopNFoldedTerms = 6;  // tail values that are not zero
__host__ __device__ inline int64_t top_n_folded_columns(int64_t rank) { return (rank + 7) / 8 * 8; }
__host__ __device__ inline int64_t top_n_folded_stride(int64_t rank) {
  return (top_n_folded_columns(rank) + 8 + 15) / 16 * 16;
}

// Finite x as x = parts[0] + parts[1] + parts[2] exactly, as bfloat16 bits (each rounding to
// nearest leaves a remainder of at most 16, then 8 significant bits; only remainders below
// float's normal range are lost).
__host__ __device__ inline void split_bfloat16x3(float x, uint16_t (&parts)[3]) {
  float rest = x;
  for (uint16_t& part : parts) {
    const __nv_bfloat16 rounded = __float2bfloat16_rn(rest);
    part = static_cast<__nv_bfloat16_raw>(rounded).x;
    rest -= __bfloat162float(rounded);
  }
}

// masks[q][0 .. (sample + 63) / 64): bit j set where query q (id query_ids[q]) excludes the
// candidate at sample position j (sample_position: by candidate id, -1 outside the sample).
void launch_top_n_sample_masks(const int32_t* query_ids, int64_t queries,
                               const int64_t* exclude_offsets, const int32_t* exclude_cols,
                               const int32_t* sample_position, int64_t sample, uint64_t* masks,
                               cudaStream_t stream);

struct TopNScanProblem {
  bool bf16;  // bfloat16 rows, else float16
  // Query i is row query_ids[i] of query_factors; candidate c is row c of candidate_factors.
  // Rows hold `stride` 16-bit values (a multiple of 16 up to kTopNScanMaxStride, zero past the
  // rank), 16-byte aligned.
  const uint16_t* query_factors;
  const int32_t* query_ids;
  int64_t queries;
  const uint16_t* candidate_factors;
  int64_t candidates;
  int64_t stride;
  // Score: dot + (query_offset[query id] + candidate_bias[c]) where both are given, else dot.
  const float* query_offset;
  const float* candidate_bias;
  // Folded scores (bf16 only; null: not folded): the candidates' rows of
  // top_n_folded_stride(rank) values, their tails after column top_n_folded_columns(rank) (see
  // above). The scan then reads these instead of candidate_factors and candidate_bias.
  const uint16_t* folded_candidates;
  int64_t rank;
  // The sample (candidate ids, any order) and the exclusions within it (as
  // launch_top_n_sample_masks makes them; null: none).
  const int32_t* sample_ids;
  int64_t sample;
  const uint64_t* sample_masks;
  const float* margins;  // by query id
  int n;                 // the list length the cut is for, 1 .. kTopNTwoPassMaxN
  // queries x kTopNSurvivors: the survivors' scores (16-bit products) and ids, in no order, in
  // `segments` segments of kTopNSurvivors / segments slots; counts[q * segments + s] is how
  // many survived into segment s (may exceed its slots: then only that many are stored).
  // segments: kTopNMaxSegments for the warpgroup scan, else 1.
  float* survivor_scores;
  int32_t* survivor_ids;
  int32_t* counts;
  int segments;
  // Folded scores by the warpgroup-mma scan (top_n_scan_warpgroup.cu): only where
  // top_n_scan_warpgroup_available() on the current device.
  bool warpgroup;
};

void launch_top_n_scan(const TopNScanProblem& problem, cudaStream_t stream);

// Whether the current device runs the warpgroup-mma scan (compute capability 9.0, whose
// arch-specific image the library holds).
bool top_n_scan_warpgroup_available();
void launch_top_n_scan_warpgroup(const TopNScanProblem& problem, cudaStream_t stream);

struct TopNFinishProblem {
  const int32_t* query_ids;
  int64_t queries;
  const float* survivor_scores;  // as the scan wrote them
  const int32_t* survivor_ids;
  const int32_t* counts;
  int segments;
  // float32 rows of `stride` floats, `rank` used: the exact scores are Model::predict's.
  const float* query_factors;
  const float* candidate_factors;
  int64_t stride, rank;
  const float* query_offset;    // global mean + user bias by query id; null: no biases
  const float* candidate_bias;  // by candidate id
  const float* margins;         // by query id, as for the cuts
  // Candidates never ranked for query id q: exclude_cols[exclude_offsets[q] ..
  // exclude_offsets[q + 1]), sorted. Null: none.
  const int64_t* exclude_offsets;
  const int32_t* exclude_cols;
  int n;  // 1 .. 32
  // queries x n: best first (higher score, then lower id), padded with -1 / -INFINITY. Rows of
  // queries with more survivors than a segment kept are not written; their positions go to
  // overflow[0 .. *overflow_count).
  int32_t* out_ids;
  float* out_scores;
  int32_t* overflow;
  int32_t* overflow_count;
};

void launch_top_n_finish(const TopNFinishProblem& problem, cudaStream_t stream);

}  // namespace sfac::cuda::kernels
