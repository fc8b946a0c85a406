// Pieces both scans of the two-pass top-n share (top_n_scan.cu with warp mma, and
// top_n_scan_warpgroup.cu with warpgroup mma): the queries' tails of folded scores, the cut from
// the threads' kept values, and a survivor's score out of a thread's accumulators.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/kernels/recommend/top_n_two_pass.cuh"

namespace sfac::cuda::kernels::detail {

// A query's tail (top_n_two_pass.cuh): c's three parts, then ones where `ones`, zeros after, in
// its first 8 values; `rest` (null: the tail has only 8 values) gets the 8 zeros after them.
__device__ __forceinline__ void store_query_tail(uint16_t* first, uint16_t* rest, float c,
                                                 bool ones) {
  uint16_t parts[3];
  split_bfloat16x3(c, parts);
  const uint32_t one = ones ? 0x3f80u : 0u;  // bfloat16 1
  *reinterpret_cast<uint4*>(first) =
      make_uint4(parts[0] | uint32_t{parts[1]} << 16, parts[2] | one << 16, one | one << 16, 0u);
  if (rest != nullptr) *reinterpret_cast<uint4*>(rest) = make_uint4(0u, 0u, 0u, 0u);
}

// acc[bit / 2][2 h + bit % 2] for a bit known only at run time: a tree of selects on the bits
// of `bit` (15 selects, no local memory). acc is an m16n8 accumulator fragment a 16 x 64 part
// (warp mma, or a warp's rows of warpgroup mma): h picks row g or g + 8.
__device__ __forceinline__ float select16(const float (&acc)[8][4], int h, int bit) {
  float e[8];
#pragma unroll
  for (int nt = 0; nt < 8; ++nt) e[nt] = (bit & 1) ? acc[nt][2 * h + 1] : acc[nt][2 * h];
#pragma unroll
  for (int i = 0; i < 4; ++i) e[i] = (bit & 2) ? e[2 * i + 1] : e[2 * i];
#pragma unroll
  for (int i = 0; i < 2; ++i) e[i] = (bit & 4) ? e[2 * i + 1] : e[2 * i];
  return (bit & 8) ? e[1] : e[0];
}

// The n-th best of a query's 32 kept sample scores (reordered in place; -infinity where fewer
// than n are finite or kept). They are real scores of distinct unexcluded candidates, so this
// is at most the query's n-th best score.
__device__ __forceinline__ float nth_kept(float* list, int n) {
  float nth = -INFINITY;
  for (int k = 0; k < n; ++k) {  // selection: the k-th best to the front
    int at = k;
    for (int i = k + 1; i < 32; ++i) at = list[i] > list[at] ? i : at;
    const float v = list[at];
    list[at] = list[k];
    list[k] = v;
    nth = v;
  }
  return nth;
}

// The cut of a query (valid: not past the launch's last) from the n-th best kept value: lowered
// by twice its margin, rounded down; -infinity where there is none, +infinity for no query.
__device__ __forceinline__ float query_cut(bool valid, float nth, float margin) {
  return !valid ? INFINITY : nth == -INFINITY ? -INFINITY : __fsub_rd(nth, 2.0f * margin);
}

// The cut of the launch's query q (past the last: +infinity) from the n-th best of its kept
// sample scores.
__device__ __forceinline__ float query_cut_at(const TopNScanProblem& p, int64_t q, float nth) {
  const bool valid = q < p.queries;
  return query_cut(valid, nth, valid ? p.margins[p.query_ids[q]] : 0.0f);
}

// The same from its 32 kept sample scores (reordered in place).
__device__ __forceinline__ float query_cut_of(const TopNScanProblem& p, int64_t q, float* kept) {
  return query_cut_at(p, q, nth_kept(kept, p.n));
}

// The n-th best of the kept values of a quad of lanes (4 (lane / 4) .. + 3), each lane's
// `kept` sorted best first (consumed), in every lane of the quad; -infinity where fewer than n
// are finite. n rounds of a quad maximum, the lowest lane holding it moving to its next value.
// All 32 lanes take part.
template <int kKept>
__device__ __forceinline__ float quad_nth(float (&kept)[kKept], int n, int lane) {
  float nth = -INFINITY;
  for (int r = 0; r < n; ++r) {
    float m = fmaxf(kept[0], __shfl_xor_sync(0xffffffffu, kept[0], 1));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
    nth = m;
    const unsigned holders = (__ballot_sync(0xffffffffu, kept[0] == m) >> (lane & ~3)) & 0xfu;
    const bool moves = (lane & 3) == __ffs(holders) - 1;
#pragma unroll
    for (int i = 0; i + 1 < kKept; ++i) kept[i] = moves ? kept[i + 1] : kept[i];
    kept[kKept - 1] = moves ? -INFINITY : kept[kKept - 1];
  }
  return nth;
}

// The offset (global mean + user bias) of the launch's query q; 0 without biases or past the
// last query.
__device__ __forceinline__ float query_offset_of(const TopNScanProblem& p, int64_t q) {
  return q < p.queries && p.query_offset != nullptr ? p.query_offset[p.query_ids[q]] : 0.0f;
}

// Folded scores after the sample: what the scan's tail of a query holds and how its accumulators
// read. The tail holds minus the threshold t = cut - offset (rounded down), so an accumulator is
// x y + b - t: not negative for a candidate that reaches the cut, up to the rounding the margins
// bound; `restore` (t + offset) turns a survivor's accumulator back into its score. Rule bits
// 0-15: pass whatever the accumulator; bits 16-31: may pass. A query without a cut keeps the
// sample's tail (accumulators are scores) and passes everything; no query passes nothing.
struct FoldedCut {
  uint32_t rule = 0;
  float restore = 0.0f;
  bool new_tail = false;  // write a tail of -threshold
  float threshold = 0.0f;
};

__device__ __forceinline__ FoldedCut folded_cut(bool valid, float cut, float offset) {
  FoldedCut f;
  if (valid && cut == -INFINITY) {
    f.rule = 0xffffffffu;
  } else if (valid) {
    f.threshold = __fsub_rd(cut, offset);
    f.restore = f.threshold + offset;
    f.new_tail = true;
    f.rule = 0xffff0000u;
  }
  return f;
}

// A query's 16 pass bits (bit 2 nt + j: candidate (nt, j)) from the signs of its accumulators
// acc[nt][2 h + j] under its rule.
__device__ __forceinline__ uint32_t folded_pass_bits(const float (&acc)[8][4], int h,
                                                     uint32_t rule) {
  uint32_t fails = 0;
#pragma unroll
  for (int k = 15; k >= 0; --k) {
    fails = (fails << 1) | (__float_as_uint(acc[k >> 1][2 * h + (k & 1)]) >> 31);
  }
  return (~fails | rule) & (rule >> 16);
}

// Stores a query's survivors: its pass bits `passed` (bit 2 nt + j: candidate c0 + 8 nt + j,
// whose score is acc[nt][2 h + j] plus `restore`), candidates from `candidates` on skipped,
// each in the next of the query's kTopNSurvivors slots (count: its shared counter; slots past
// the last are counted, not stored).
template <bool kRestore>
__device__ __forceinline__ void store_survivors(uint32_t passed, const float (&acc)[8][4], int h,
                                                int c0, int64_t candidates, float restore,
                                                int* count, int query, float* scores,
                                                int32_t* ids) {
  while (passed != 0) {
    const int bit = __ffs(passed) - 1;
    passed &= passed - 1;
    const int c = c0 + 8 * (bit >> 1) + (bit & 1);
    if (c >= candidates) continue;
    const float v = kRestore ? select16(acc, h, bit) + restore : select16(acc, h, bit);
    const int slot = atomicAdd(count, 1);
    if (slot < kTopNSurvivors) {
      const int at = query * kTopNSurvivors + slot;  // < 2^31: launches are bounded
      scores[at] = v;
      ids[at] = c;
    }
  }
}

// Stores a query's survivors into the segment of a thread that alone writes it (no atomics):
// pass bits `passed` as for store_survivors (all of them candidates), `count` the segment's
// count so far, `first` its first slot; slots past kSlots are counted, not stored.
template <int kSlots>
__device__ __forceinline__ void store_segment_survivors(uint32_t passed, const float (&acc)[8][4],
                                                        int h, int c0, float restore, int& count,
                                                        int first, float* scores, int32_t* ids) {
  while (passed != 0) {
    const int bit = __ffs(passed) - 1;
    passed &= passed - 1;
    if (count < kSlots) {
      scores[first + count] = select16(acc, h, bit) + restore;
      ids[first + count] = c0 + 8 * (bit >> 1) + (bit & 1);
    }
    ++count;
  }
}

}  // namespace sfac::cuda::kernels::detail
