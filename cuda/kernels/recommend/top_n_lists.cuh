// The per-query lists of the top-n kernels (top_n.cu, top_n_half.cu): scores and ids in shared
// memory, best first by (higher score, lower id), a total order, so a list's content does not
// depend on the order in which candidates arrive.
#pragma once

#include <cmath>
#include <cstdint>

namespace sfac::cuda::kernels::detail {

__device__ __forceinline__ bool top_n_better(float score, int32_t id, float other_score,
                                             int32_t other_id) {
  return score > other_score || (score == other_score && id < other_id);
}

// Inserts m candidates (scores, ids) into a list of `filled` entries that holds at most n;
// returns the new count.
__device__ inline int top_n_insert(float* list_score, int32_t* list_id, int filled, int n,
                                   const float* scores, const int32_t* ids, int m) {
  for (int e = 0; e < m; ++e) {
    const float s = scores[e];
    const int32_t id = ids[e];
    int pos;
    if (filled < n) {
      pos = filled++;
    } else {
      if (!top_n_better(s, id, list_score[n - 1], list_id[n - 1])) continue;
      pos = n - 1;
    }
    while (pos > 0 && top_n_better(s, id, list_score[pos - 1], list_id[pos - 1])) {
      list_score[pos] = list_score[pos - 1];
      list_id[pos] = list_id[pos - 1];
      --pos;
    }
    list_score[pos] = s;
    list_id[pos] = id;
  }
  return filled;
}

// A list of `filled` entries written as n, padded with -1 / -INFINITY (the host's padding).
__device__ inline void top_n_write(const float* list_score, const int32_t* list_id, int filled,
                                   int n, int32_t* out_ids, float* out_scores) {
  for (int j = 0; j < n; ++j) {
    out_ids[j] = j < filled ? list_id[j] : -1;
    out_scores[j] = j < filled ? list_score[j] : -INFINITY;
  }
}

}  // namespace sfac::cuda::kernels::detail
