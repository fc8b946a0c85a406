// The group kernels' inner step, shared by the nonzero-split kernel and the L1-band kernel: G
// lanes per nonzero, V 16-byte vectors per lane, 32 nonzeros per warp step.
#pragma once

#include <type_traits>

#include "cuda/kernels/sddmm/sddmm_common.cuh"

namespace sfac::cuda::kernels::detail {

// A lane's V vectors of a K-row: vectors slot, slot + G, ...; zeros past the row's end (the
// check compiles out when K fills every lane's vectors).
template <int G, int V, bool kFull, typename T>
__device__ __forceinline__ void load_slice(const T* row, int slot, int64_t vecs, uint4 (&out)[V]) {
#pragma unroll
  for (int v = 0; v < V; ++v) {
    const int64_t t = slot + int64_t{v} * G;
    out[v] = kFull || t < vecs ? load_vec(row, t) : make_uint4(0, 0, 0, 0);
  }
}

// Element offset of row `index` (>= 0) of a K-wide matrix as one 32 x 32 -> 64-bit multiply: both
// fit 32 bits here (K <= 256 vectors), and the 64 x 64 product costs ~8 instructions per load.
__device__ __forceinline__ uint64_t row_offset(int index, int64_t k) {
  return static_cast<uint64_t>(static_cast<uint32_t>(index)) * static_cast<uint32_t>(k);
}

// Which of the warp's 32 nonzeros a lane holds the dot product of after group_dots: step s's
// nonzero in its group (the group computes nonzero s * 32 / G + group at step s, and every lane
// of the group ends the butterfly with the sum), for s = the lane's slot. Lanes hold a
// permutation of the 32, so stores by this index still cover 32 consecutive positions.
template <int G>
__device__ __forceinline__ int group_result_index(int lane) {
  return lane % G * (kWarp / G) + lane / G;
}

// The group's sums of the lanes' partial[s] (s < G), lane `slot` getting step slot's: at each
// level the lanes whose bit h is set keep the upper half of their values and trade the lower
// half with the partner lane (xor h), so G - 1 shuffles in all instead of log2(G) per step.
// Every lane runs every level, so the full mask is exact (xor offsets below G stay in the
// group) and spares the match and vote instructions a computed sub-warp mask costs.
template <int G>
__device__ __forceinline__ float transpose_sum(float (&partial)[G], int slot) {
#pragma unroll
  for (int h = G / 2; h > 0; h /= 2) {
    const bool upper = (slot & h) != 0;
#pragma unroll
    for (int i = 0; i < h; ++i) {
      const float send = upper ? partial[i] : partial[i + h];
      const float keep = upper ? partial[i + h] : partial[i];
      partial[i] = keep + __shfl_xor_sync(0xffffffffu, send, h);
    }
  }
  return partial[0];
}

// How a lane sums its vectors' products: 16-bit rows on groups of 4 lanes or more as FMA chains
// (dot_acc), fewer instructions than Elem::dot's multiply-add trees; on groups of 2 lanes (K =
// 32) the chains' latency outweighed that, and float32 rows gained nothing (docs/perf-notes.md).
template <typename T, int G>
constexpr bool kFmaChains = !std::is_same_v<T, float> && G >= 4;

// The dot products of a warp's 32 nonzeros: lane t holds the column and row of nonzero t (row
// -1: none, and a valid column such as 0), groups fetch them by shuffle, U steps of B loads are
// issued before any is used (loads in flight hide L2 latency), and each lane gets the dot
// product of nonzero group_result_index<G>(lane) back. Consecutive nonzeros mostly share a row,
// so a group keeps its slice of A_i in `av` and reloads it only when the row changes
// (`cached_row`).
// kOneRow: all 32 nonzeros lie in row `my_row` (the common case in CSR order): no row shuffles,
// and A's slice is checked once.
template <typename T, int G, int V, bool kFull, bool kOneRow>
__device__ __forceinline__ float group_dots(const T* a, const T* b, int64_t k, int my_col,
                                            int my_row, uint4 (&av)[V], int& cached_row) {
  constexpr int kGroups = kWarp / G;  // nonzeros per step
  constexpr int kSteps = G;           // steps per 32 nonzeros
  // B loads in flight per lane: 4 steps of one vector, 2 of several (more spills registers).
  constexpr int U = V == 1 ? (G >= 4 ? 4 : G) : (V <= 4 ? 2 : 1);
  static_assert(kSteps % U == 0, "U must divide the steps per 32 nonzeros");
  const int lane = threadIdx.x % kWarp;
  const int group = lane / G, slot = lane % G;
  const int64_t vecs = k / Elem<T>::kPerVec;
  if (kOneRow && my_row != cached_row) {
    load_slice<G, V, kFull>(a + row_offset(my_row, k), slot, vecs, av);
    cached_row = my_row;
  }
  // Groups of 4 lanes with 2 vectors each (float32 K = 32) keep their shares of every step's
  // dot product and sum them at the end (transpose_sum): 3-4% faster there on an H100, but
  // 2 lanes (bfloat16 K = 32) ran 15-25% slower, 4 x 4 and 8 x 4 were mixed within 5%, and a
  // whole-warp group would keep 32 shares in local memory (docs/perf-notes.md). The others sum
  // each step with a butterfly.
  constexpr bool kTranspose = G == 4 && V == 2;
  float partial[kTranspose ? kSteps : 1];
  float result = 0.0f;
#pragma unroll
  for (int s0 = 0; s0 < kSteps; s0 += U) {
    uint4 bv[U][V];
    int rows[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int j = (s0 + u) * kGroups + group;
      const int col = __shfl_sync(0xffffffffu, my_col, j);
      rows[u] = kOneRow ? my_row : __shfl_sync(0xffffffffu, my_row, j);
      load_slice<G, V, kFull>(b + row_offset(col, k), slot, vecs, bv[u]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (!kOneRow && rows[u] != cached_row && rows[u] >= 0) {
        load_slice<G, V, kFull>(a + row_offset(rows[u], k), slot, vecs, av);
        cached_row = rows[u];
      }
      float acc;
      if constexpr (kFmaChains<T, G>) {
        float part[V];  // one chain per vector: independent of each other
#pragma unroll
        for (int v = 0; v < V; ++v) part[v] = dot_acc<T>(av[v], bv[u][v], 0.0f);
        acc = part[0];
#pragma unroll
        for (int v = 1; v < V; ++v) acc += part[v];
      } else {
        acc = 0.0f;
#pragma unroll
        for (int v = 0; v < V; ++v) acc += Elem<T>::dot(av[v], bv[u][v]);
      }
      if constexpr (kTranspose) {
        partial[s0 + u] = acc;
      } else {
#pragma unroll
        for (int offset = G / 2; offset > 0; offset /= 2) {
          acc += __shfl_xor_sync(0xffffffffu, acc, offset);
        }
        if (slot == s0 + u) result = acc;  // see group_result_index
      }
    }
  }
  if constexpr (kTranspose) result = transpose_sum<G>(partial, slot);
  return result;
}

// Calls f(G, V) (as std::integral_constant) with the group shape for rows of `vecs` 16-byte
// vectors: G lanes (a power of two up to 32) times V vectors cover the row. Up to 32 vectors,
// few lanes with 2-4 vectors each beat one vector on many lanes: more B loads in flight per
// lane and fewer shuffles per nonzero (measured on an H100: bf16 K = 128 on the Netflix shape
// 4.47 -> 3.51 ms, float32 K = 128 on uniform 100k 7.35 -> 6.70; docs/perf-notes.md). Returns
// false for rows of more than 256 vectors.
template <typename F>
bool with_group_shape(int64_t vecs, F&& f) {
  using std::integral_constant;
  if (vecs <= 1)
    f(integral_constant<int, 1>{}, integral_constant<int, 1>{});
  else if (vecs <= 2)
    f(integral_constant<int, 2>{}, integral_constant<int, 1>{});
  else if (vecs <= 4)
    f(integral_constant<int, 2>{}, integral_constant<int, 2>{});
  else if (vecs <= 8)
    f(integral_constant<int, 4>{}, integral_constant<int, 2>{});
  else if (vecs <= 16)
    f(integral_constant<int, 4>{}, integral_constant<int, 4>{});
  else if (vecs <= 32)
    f(integral_constant<int, 8>{}, integral_constant<int, 4>{});
  else if (vecs <= 64)
    f(integral_constant<int, 32>{}, integral_constant<int, 2>{});
  else if (vecs <= 128)
    f(integral_constant<int, 32>{}, integral_constant<int, 4>{});
  else if (vecs <= 256)
    f(integral_constant<int, 32>{}, integral_constant<int, 8>{});
  else
    return false;
  return true;
}

}  // namespace sfac::cuda::kernels::detail
