// The finish of the two-pass top-n (top_n_two_pass.cuh): one warp per query.
// 1. The query's survivors (at most kTopNSurvivors; its segments one after another), a lane
//    owning every 32nd, in shared memory; excluded ones dropped by binary search in the query's
//    sorted exclusion row (staged in shared memory where it is short).
// 2. A floor under the n-th best survivor score: the n-th largest of the 32 lanes' best scores
//    (n distinct survivors reach it), by one sort across the warp.
// 3. The survivors within twice the query's margin of that floor (no other survivor can rank:
//    the n at or above the floor are within a margin of their exact scores) are gathered into a
//    short list and scored again exactly as the host scores (core/ranking.cpp: eight partial
//    sums in a fixed order, no fused multiply-add), a lane per survivor.
// 4. The list in order: a bitonic sort across the warp by (higher score, lower id) where it
//    holds at most 32 survivors, else n rounds of a warp arg-max.
#include <cmath>

#include "cuda/cuda_check.h"
#include "cuda/kernels/recommend/top_n_lists.cuh"
#include "cuda/kernels/recommend/top_n_two_pass.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kWarps = 8;
constexpr int kCachedExclusions = 256;  // a warp's exclusion row staged in shared memory

// The better of (s, id) and each other lane's (id -1: none) into every lane.
__device__ __forceinline__ void warp_best(float& s, int32_t& id) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other_s = __shfl_xor_sync(0xffffffffu, s, offset);
    const int32_t other_id = __shfl_xor_sync(0xffffffffu, id, offset);
    if (other_id >= 0 && (id < 0 || detail::top_n_better(other_s, other_id, s, id))) {
      s = other_s;
      id = other_id;
    }
  }
}

// The lane's best entry of the `count` in score / id (every 32nd from the lane; id -1: none).
__device__ __forceinline__ void lane_best(const float* score, const int32_t* id, int count,
                                          int lane, float& best_s, int32_t& best_id,
                                          int& best_slot) {
  best_s = -INFINITY;
  best_id = -1;
  best_slot = -1;
  for (int e = lane; e < count; e += 32) {
    const int32_t c = id[e];
    if (c >= 0 && (best_id < 0 || detail::top_n_better(score[e], c, best_s, best_id))) {
      best_s = score[e];
      best_id = c;
      best_slot = e;
    }
  }
}

// x . y as core/ranking.cpp's dot() sums it: term t into partial sum t mod 8, each in order,
// then ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)); no fused multiply-add. Rows are
// 16-byte aligned and zero-padded to a multiple of 8 floats past the rank.
__device__ __forceinline__ float exact_dot(const float* x, const float* y, int64_t rank) {
  float s[8] = {};
  const int64_t whole = rank / 8 * 8;
  for (int64_t t = 0; t < whole; t += 8) {
    const float4 x0 = *reinterpret_cast<const float4*>(x + t);
    const float4 x1 = *reinterpret_cast<const float4*>(x + t + 4);
    const float4 y0 = __ldg(reinterpret_cast<const float4*>(y + t));
    const float4 y1 = __ldg(reinterpret_cast<const float4*>(y + t + 4));
    s[0] = __fadd_rn(s[0], __fmul_rn(x0.x, y0.x));
    s[1] = __fadd_rn(s[1], __fmul_rn(x0.y, y0.y));
    s[2] = __fadd_rn(s[2], __fmul_rn(x0.z, y0.z));
    s[3] = __fadd_rn(s[3], __fmul_rn(x0.w, y0.w));
    s[4] = __fadd_rn(s[4], __fmul_rn(x1.x, y1.x));
    s[5] = __fadd_rn(s[5], __fmul_rn(x1.y, y1.y));
    s[6] = __fadd_rn(s[6], __fmul_rn(x1.z, y1.z));
    s[7] = __fadd_rn(s[7], __fmul_rn(x1.w, y1.w));
  }
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    if (whole + j < rank) s[j] = __fadd_rn(s[j], __fmul_rn(x[whole + j], y[whole + j]));
  }
  return __fadd_rn(__fadd_rn(__fadd_rn(s[0], s[4]), __fadd_rn(s[2], s[6])),
                   __fadd_rn(__fadd_rn(s[1], s[5]), __fadd_rn(s[3], s[7])));
}

// Sorts one (score, id) a lane across the warp, best first (higher score, lower id; id -1
// last).
__device__ __forceinline__ void warp_sort(float& s, int32_t& id, int lane) {
#pragma unroll
  for (int k = 2; k <= 32; k <<= 1) {
#pragma unroll
    for (int j = k >> 1; j > 0; j >>= 1) {
      const float other_s = __shfl_xor_sync(0xffffffffu, s, j);
      const int32_t other_id = __shfl_xor_sync(0xffffffffu, id, j);
      const bool other_better =
          other_id >= 0 && (id < 0 || detail::top_n_better(other_s, other_id, s, id));
      // The lower lane of a pair keeps the better one in blocks sorted best first.
      const bool keep_better = ((lane & j) == 0) == ((lane & k) == 0);
      if (other_better == keep_better) {
        s = other_s;
        id = other_id;
      }
    }
  }
}

__global__ void __launch_bounds__(kWarps * 32) top_n_finish_kernel(TopNFinishProblem p) {
  __shared__ float entry_score[kWarps][kTopNSurvivors];
  __shared__ int32_t entry_id[kWarps][kTopNSurvivors];
  __shared__ int32_t excluded[kWarps][kCachedExclusions];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t q = int64_t{blockIdx.x} * kWarps + warp;
  if (q >= p.queries) return;  // whole warps: no block-wide barriers below
  const int32_t query = p.query_ids[q];
  const int slots = kTopNSurvivors / p.segments;
  int counts[kTopNMaxSegments];
  bool overflows = false;
  for (int s = 0; s < p.segments; ++s) {
    counts[s] = p.counts[q * p.segments + s];
    overflows = overflows || counts[s] > slots;
  }
  if (overflows) {
    if (lane == 0) p.overflow[atomicAdd(p.overflow_count, 1)] = static_cast<int32_t>(q);
    return;
  }
  float* score = entry_score[warp];
  int32_t* id = entry_id[warp];
  int count = 0;  // the segments' survivors one after another
  for (int s = 0; s < p.segments; ++s) {
    const int64_t base = q * kTopNSurvivors + s * slots;
    for (int e = lane; e < counts[s]; e += 32) {
      score[count + e] = p.survivor_scores[base + e];
      id[count + e] = p.survivor_ids[base + e];
    }
    count += counts[s];
  }
  __syncwarp();  // a lane reads below entries that other lanes wrote

  if (p.exclude_offsets != nullptr) {
    const int64_t lo = p.exclude_offsets[query];
    const int64_t len = p.exclude_offsets[query + 1] - lo;
    const int32_t* row = p.exclude_cols + lo;
    if (len <= kCachedExclusions) {
      for (int j = lane; j < len; j += 32) excluded[warp][j] = row[j];
      __syncwarp();
      row = excluded[warp];
    }
    for (int e = lane; e < count; e += 32) {
      const int32_t c = id[e];
      int64_t a = 0, b = len;
      while (a < b) {
        const int64_t mid = (a + b) / 2;
        if (row[mid] < c)
          a = mid + 1;
        else
          b = mid;
      }
      if (a < len && row[a] == c) id[e] = -1;
    }
  }

  // The floor: the n-th largest lane maximum (-INFINITY where fewer lanes hold survivors).
  float floor_score = -INFINITY;
  for (int e = lane; e < count; e += 32) {
    if (id[e] >= 0) floor_score = fmaxf(floor_score, score[e]);
  }
  int32_t holder = floor_score == -INFINITY ? -1 : lane;
  warp_sort(floor_score, holder, lane);
  floor_score = __shfl_sync(0xffffffffu, floor_score, p.n - 1);
  const float keep =
      floor_score == -INFINITY ? -INFINITY : __fsub_rd(floor_score, 2.0f * p.margins[query]);

  // The survivors that can rank, gathered at the front of the arrays (in place: a survivor
  // moves to a position at most its own, and each round reads before it writes).
  int kept = 0;
  for (int e0 = 0; e0 < count; e0 += 32) {
    const int e = e0 + lane;
    const bool ranks = e < count && id[e] >= 0 && score[e] >= keep;
    const int32_t c = ranks ? id[e] : -1;
    const unsigned ballot = __ballot_sync(0xffffffffu, ranks);
    __syncwarp();
    if (ranks) id[kept + __popc(ballot & ((1u << lane) - 1))] = c;
    kept += __popc(ballot);
  }
  __syncwarp();

  // Their exact scores, a lane per survivor.
  const float* x = p.query_factors + int64_t{query} * p.stride;
  const float offset = p.query_offset != nullptr ? p.query_offset[query] : 0.0f;
  for (int e = lane; e < kept; e += 32) {
    const int32_t c = id[e];
    float v = exact_dot(x, p.candidate_factors + int64_t{c} * p.stride, p.rank);
    if (p.query_offset != nullptr) v = __fadd_rn(v, __fadd_rn(offset, p.candidate_bias[c]));
    score[e] = isnan(v) ? -INFINITY : v;
  }
  __syncwarp();

  const int64_t out = q * p.n;
  if (kept <= 32) {
    float s = lane < kept ? score[lane] : -INFINITY;
    int32_t c = lane < kept ? id[lane] : -1;
    warp_sort(s, c, lane);
    if (lane < p.n) {
      p.out_ids[out + lane] = c;
      p.out_scores[out + lane] = c >= 0 ? s : -INFINITY;
    }
    return;
  }
  float best_s;
  int32_t best_id;
  int best_slot;
  lane_best(score, id, kept, lane, best_s, best_id, best_slot);
  for (int r = 0; r < p.n; ++r) {
    float s = best_s;
    int32_t c = best_id;
    warp_best(s, c);
    if (lane == 0) {
      p.out_ids[out + r] = c;
      p.out_scores[out + r] = c >= 0 ? s : -INFINITY;
    }
    if (c >= 0 && c == best_id) {  // this lane held it: its next best
      id[best_slot] = -1;
      lane_best(score, id, kept, lane, best_s, best_id, best_slot);
    }
  }
}

}  // namespace

void launch_top_n_finish(const TopNFinishProblem& problem, cudaStream_t stream) {
  if (problem.queries <= 0) return;
  const auto blocks = static_cast<unsigned>((problem.queries + kWarps - 1) / kWarps);
  top_n_finish_kernel<<<blocks, kWarps * 32, 0, stream>>>(problem);
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
