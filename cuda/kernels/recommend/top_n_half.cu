// Fused scoring and top-n selection on 16-bit factors: one thread block of 8 warps per 64
// queries walks the candidates in tiles of 128; a warp computes a 16 x 64 part of a tile's scores
// with m16n8k16 mma (one instruction per 16 x 8 x 16 products, fp32 accumulators) from rows
// staged whole in shared memory: the block's query rows once, each tile's candidate rows by
// cp.async, double-buffered, while the previous tile is scored.
//
// The selection follows top_n.cu (thresholds, 16-entry candidate buffers filtered again on
// overflow, one thread a query inserting into its sorted list; ties by the lower id), with two
// changes that keep the per-tile work small once the products cost little:
// - a thread first compares the best of its 16 scores of a query with the query's threshold,
//   and looks at single scores only when that one passes (after the first tiles, rarely);
// - exclusions as masks built a tile ahead by warps, not threads: each warp owns 8 queries and,
//   per query, loads the next 32 entries of its sorted exclusion list with one coalesced load,
//   so the loads of the 8 queries are in flight together while the current tile is scored;
// - the filter's per-candidate values (bias or norm) and ids come with the tile's rows, so a
//   score costs a few register and shared-memory operations and no global load.
#include <climits>
#include <cmath>

#include "cuda/cuda_check.h"
#include "cuda/kernels/common/cp_async.cuh"
#include "cuda/kernels/common/mma_half.cuh"
#include "cuda/kernels/recommend/top_n_lists.cuh"
#include "cuda/kernels/recommend/top_n_half.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kQueries = 64;   // queries a block
constexpr int kTile = 128;     // candidates a tile (two 64-bit mask words a query)
constexpr int kThreads = 256;  // 8 warps: 4 x 16 queries by 2 x 64 candidates
constexpr int kWarps = kThreads / 32;
constexpr int kQueriesPerWarp = kQueries / kWarps;  // exclusion masks a warp builds
constexpr int kBuffered = 16;  // as in top_n.cu
// 16-bit values after each staged row: rows then start 16 bytes apart modulo 128, so the eight
// rows an ldmatrix phase reads fall on distinct banks.
constexpr int kPad = 8;

size_t shared_bytes(int n, int64_t stride) {
  const size_t lead = static_cast<size_t>(stride) + kPad;
  return sizeof(uint16_t) * kQueries * lead                      // query rows
         + sizeof(uint16_t) * 2 * kTile * lead                   // candidate rows, two buffers
         + (sizeof(float) + sizeof(int32_t)) * 2 * kTile         // their values and ids
         + sizeof(uint64_t) * 2 * kQueries * 2                   // exclusion masks, two tiles
         + 2 * sizeof(int64_t) * kQueries                        // exclusion cursors
         + (sizeof(float) + sizeof(int32_t)) * kQueries * kBuffered  // candidate buffers
         + (sizeof(float) + sizeof(int32_t)) * kQueries * size_t(n)  // lists
         + 3 * sizeof(int32_t) * kQueries;                       // thresholds, counts, pending
}

template <TopNScore kScore, bool kBf16>
__global__ void __launch_bounds__(kThreads, 2) top_n_half_kernel(TopNHalfProblem p) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int n = p.n;
  const int stride = static_cast<int>(p.stride);
  const int lead = stride + kPad;
  auto* query_rows = reinterpret_cast<uint16_t*>(smem);
  uint16_t* stage = query_rows + kQueries * lead;
  auto* masks = reinterpret_cast<uint64_t*>(stage + 2 * kTile * lead);  // [2][kQueries][2]
  auto* cursor = reinterpret_cast<int64_t*>(masks + 2 * kQueries * 2);
  int64_t* cursor_end = cursor + kQueries;
  auto* tile_value = reinterpret_cast<float*>(cursor_end + kQueries);  // [2][kTile]
  auto* tile_id = reinterpret_cast<int32_t*>(tile_value + 2 * kTile);  // [2][kTile]
  auto* cand_score = reinterpret_cast<float*>(tile_id + 2 * kTile);
  auto* cand_id = reinterpret_cast<int32_t*>(cand_score + kQueries * kBuffered);
  auto* list_score = reinterpret_cast<float*>(cand_id + kQueries * kBuffered);
  auto* list_id = reinterpret_cast<int32_t*>(list_score + kQueries * n);
  auto* threshold = reinterpret_cast<float*>(list_id + kQueries * n);
  auto* count = reinterpret_cast<int*>(threshold + kQueries);
  int* pending = count + kQueries;

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, g = lane >> 2, t = lane & 3;
  const int64_t first_query = int64_t{blockIdx.x} * kQueries;
  const int warp_query = 16 * (warp & 3), half = warp >> 2, warp_cand = 64 * half;
  auto query_id_of = [&](int row) {
    const int64_t q = first_query + row;
    return q < p.queries ? p.query_ids[q] : -1;
  };

  // This thread's two queries (rows g and g + 8 of its warp's 16), fixed for the whole walk.
  int32_t qid[2];
  float qvalue[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    qid[h] = query_id_of(warp_query + g + 8 * h);
    qvalue[h] = qid[h] >= 0 && p.query_value != nullptr ? p.query_value[qid[h]] : 0.0f;
  }
  if (tid < kQueries) {
    const int32_t id = query_id_of(tid);
    count[tid] = 0;
    pending[tid] = 0;
    threshold[tid] = -INFINITY;
    const bool excludes = id >= 0 && p.exclude_offsets != nullptr;
    cursor[tid] = excludes ? p.exclude_offsets[id] : 0;
    cursor_end[tid] = excludes ? p.exclude_offsets[id + 1] : 0;
  }

  // The query rows, once, in their own commit group (waited for with the first tile's).
  const int pieces = stride / 8;  // 16-byte pieces a row
  for (int piece = tid; piece < kQueries * pieces; piece += kThreads) {
    const int row = piece / pieces, part = piece % pieces;
    const int32_t id = query_id_of(row);
    detail::cp_async16(query_rows + row * lead + 8 * part,
                       p.query_factors + (id >= 0 ? int64_t{id} : 0) * p.stride + 8 * part,
                       id >= 0);
  }
  detail::cp_async_commit();

  const int64_t tiles = (p.candidates + kTile - 1) / kTile;

  // Stages tile s into buffer `slot`: its candidate rows, values and ids; rows past the
  // candidates read zeros.
  auto issue = [&](int64_t s, int slot) {
    const int64_t c0 = s * kTile;
    uint16_t* to = stage + slot * kTile * lead;
    {  // two threads a row, alternate pieces: the row's address is computed once
      const int row = tid >> 1;
      const int64_t c = c0 + row;
      const bool valid = c < p.candidates;
      const int64_t id = !valid ? 0 : p.candidate_ids ? p.candidate_ids[c] : c;
      const uint16_t* from = p.candidate_factors + id * p.stride;
      uint16_t* row_to = to + row * lead;
      for (int part = tid & 1; part < pieces; part += 2) {
        detail::cp_async16(row_to + 8 * part, from + 8 * part, valid);
      }
    }
    if (tid < kTile) {
      const int64_t c = c0 + tid;
      const bool valid = c < p.candidates;
      if (p.candidate_value != nullptr) {
        detail::cp_async4(tile_value + slot * kTile + tid, p.candidate_value + (valid ? c : 0),
                          valid);
      }
      if (p.candidate_ids != nullptr) {
        detail::cp_async4(tile_id + slot * kTile + tid, p.candidate_ids + (valid ? c : 0), valid);
      }
    }
    detail::cp_async_commit();
  };

  // Exclusion masks of tile s into mask buffer `slot`: bit j of word w of query q is candidate
  // c0 + 64 w + j. Each of the warp's 8 queries takes a window of 32 entries of its sorted
  // exclusion list: load_windows issues the 8 loads (independent, so in flight together, and
  // while the current tile is scored), finish_masks turns them into bits. Entries up to the
  // tile's last id are the tile's (the cursors passed the earlier tiles' already); a query with
  // 32 of them in the tile takes the next window.
  auto load_windows = [&](int32_t (&window)[kQueriesPerWarp]) {
#pragma unroll
    for (int i = 0; i < kQueriesPerWarp; ++i) {
      const int q = warp * kQueriesPerWarp + i;
      const int64_t j = cursor[q] + lane;
      window[i] = j < cursor_end[q] ? p.exclude_cols[j] : INT_MAX;
    }
  };
  auto finish_masks = [&](int64_t s, int slot, const int32_t (&window)[kQueriesPerWarp]) {
    const int64_t c0 = s * kTile;
    const int in_tile = static_cast<int>(p.candidates - c0 < kTile ? p.candidates - c0 : kTile);
    const int64_t last_id = p.candidate_ids ? p.candidate_ids[c0 + in_tile - 1] : c0 + in_tile - 1;
#pragma unroll
    for (int i = 0; i < kQueriesPerWarp; ++i) {
      const int q = warp * kQueriesPerWarp + i;
      int64_t cur = cursor[q];
      const int64_t end = cursor_end[q];
      uint64_t* mask = masks + (slot * kQueries + q) * 2;
      if (lane < 2) mask[lane] = 0;
      __syncwarp();
      int32_t e = window[i];
      while (true) {
        const bool mine = e <= last_id;
        if (mine) {  // rare: the set bits are the query's exclusions in this tile
          int pos = -1;
          if (p.candidate_ids == nullptr) {
            pos = static_cast<int>(e - c0);
          } else {  // the entry's position among the tile's ids, if it is one of them
            int lo = 0, hi = in_tile;
            const int32_t* ids = p.candidate_ids + c0;
            while (lo < hi) {
              const int mid = (lo + hi) / 2;
              if (ids[mid] < e) lo = mid + 1; else hi = mid;
            }
            if (lo < in_tile && ids[lo] == e) pos = lo;
          }
          if (pos >= 0) {
            atomicOr(reinterpret_cast<unsigned long long*>(mask + (pos >> 6)),
                     1ull << (pos & 63));
          }
        }
        const int taken = __popc(__ballot_sync(0xffffffffu, mine));
        cur += taken;
        if (taken < 32) break;
        e = cur + lane < end ? p.exclude_cols[cur + lane] : INT_MAX;
      }
      if (lane == 0) cursor[q] = cur;
    }
  };

  float acc[8][4] = {};

  // The tile's scores against the queries' thresholds; survivors to the candidate buffers.
  // `offered`: the thread's scores of this tile not yet offered (bit 4 nt + i for acc[nt][i]).
  // Sets *overflow when a score found its query's buffer full (it stays in `offered`) and
  // *pushed when one entered a buffer. The best of the thread's 16 scores of a query is
  // compared first; single scores only where it passes. A score that fails the threshold keeps
  // its bit: it fails every later pass too (thresholds only rise).
  auto score = [&](int nt, int i, float value) {
    const int h = i >> 1;
    const float dot = acc[nt][i];
    float v;
    if constexpr (kScore == TopNScore::kCosine) {
      const float denominator = qvalue[h] * value;
      v = denominator > 0.0f ? dot / denominator : 0.0f;
    } else {
      v = p.candidate_value != nullptr ? dot + (qvalue[h] + value) : dot;
    }
    return isnan(v) ? -INFINITY : v;
  };
  auto filter = [&](int64_t c0, int slot, uint32_t& offered, bool* overflow, bool* pushed) {
    float values[16];  // the thread's 16 candidates' values
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        values[2 * nt + j] = p.candidate_value != nullptr
                                 ? tile_value[slot * kTile + warp_cand + 8 * nt + 2 * t + j]
                                 : 0.0f;
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int q = warp_query + g + 8 * h;
      const bool open = count[q] < n;
      const float threshold_h = threshold[q];
      float best = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
        for (int j = 0; j < 2; ++j) best = fmaxf(best, score(nt, 2 * h + j, values[2 * nt + j]));
      }
      if (qid[h] < 0 || !(open || best >= threshold_h)) continue;
      const uint64_t excluded = p.exclude_offsets ? masks[(slot * kQueries + q) * 2 + half] : 0;
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int i = 2 * h + j;
          const uint32_t bit = uint32_t{1} << (4 * nt + i);
          const float v = score(nt, i, values[2 * nt + j]);
          if (!(offered & bit) || !(open || v >= threshold_h)) continue;
          offered &= ~bit;
          const int col = 8 * nt + 2 * t + j;  // within the warp's 64 candidates
          const int tile_col = warp_cand + col;
          const int64_t c = c0 + tile_col;
          if (c >= p.candidates || ((excluded >> col) & 1)) continue;
          const int32_t id =
              p.candidate_ids ? tile_id[slot * kTile + tile_col] : static_cast<int32_t>(c);
          if (p.exclude_self && id == qid[h]) continue;
          const int entry = atomicAdd(&pending[q], 1);
          if (entry < kBuffered) {
            cand_score[q * kBuffered + entry] = v;
            cand_id[q * kBuffered + entry] = id;
            *pushed = true;
          } else {
            offered |= bit;
            *overflow = true;
          }
        }
      }
    }
  };

  // Query q's pending candidates into its list (sorted, at most n).
  auto merge = [&](int q) {
    const int m = pending[q] < kBuffered ? pending[q] : kBuffered;
    const int filled = detail::top_n_insert(list_score + q * n, list_id + q * n, count[q], n,
                                            cand_score + q * kBuffered, cand_id + q * kBuffered, m);
    count[q] = filled;
    pending[q] = 0;
    threshold[q] = filled == n ? list_score[q * n + n - 1] : -INFINITY;
  };

  const bool excludes = p.exclude_offsets != nullptr;
  int32_t window[kQueriesPerWarp];
  __syncthreads();  // the cursors
  if (tiles > 0) {
    issue(0, 0);
    if (excludes) {
      load_windows(window);
      finish_masks(0, 0, window);
    }
  } else {
    detail::cp_async_wait<0>();  // the query rows (nothing to score)
  }
  for (int64_t s = 0; s < tiles; ++s) {
    const int slot = static_cast<int>(s & 1);
    const int64_t c0 = s * kTile;
    if (s + 1 < tiles) {
      issue(s + 1, slot ^ 1);
      detail::cp_async_wait<1>();
    } else {
      detail::cp_async_wait<0>();
    }
    __syncthreads();  // tile s staged and its masks built; the lists merged

    // The next tile's exclusion windows: loaded while this tile is scored, used after.
    const bool next_masks = excludes && s + 1 < tiles;
    if (next_masks) load_windows(window);

#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
    }
    const uint16_t* b = stage + slot * kTile * lead;
    const int m = lane >> 3, r = lane & 7;
    const uint16_t* a_row = query_rows + (warp_query + r + 8 * (m & 1)) * lead + 8 * (m >> 1);
    const uint16_t* b_row = b + (warp_cand + r + 8 * (m >> 1)) * lead + 8 * (m & 1);
#pragma unroll 2
    for (int kk = 0; kk < stride; kk += 16) {
      uint32_t a[4];
      detail::ldmatrix_x4(a, a_row + kk);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        uint32_t pair[4];
        detail::ldmatrix_x4(pair, b_row + 16 * j * lead + kk);
        const uint32_t b0[2] = {pair[0], pair[1]}, b1[2] = {pair[2], pair[3]};
        detail::mma_16bit<kBf16>(acc[2 * j], a, b0);
        detail::mma_16bit<kBf16>(acc[2 * j + 1], a, b1);
      }
    }

    if (next_masks) finish_masks(s + 1, slot ^ 1, window);

    uint32_t offered = 0xffffffffu;
    while (true) {
      bool overflow = false, pushed = false;
      filter(c0, slot, offered, &overflow, &pushed);
      if (__syncthreads_or(pushed) == 0) break;  // also: every warp is done with this slot
      if (tid < kQueries && pending[tid] > 0) merge(tid);
      if (__syncthreads_or(overflow) == 0) break;  // also orders the merges before the next pass
    }
  }

  if (tid < kQueries && query_id_of(tid) >= 0) {
    const int64_t out = (first_query + tid) * n;
    detail::top_n_write(list_score + tid * n, list_id + tid * n, count[tid], n, p.out_ids + out,
                        p.out_scores + out);
  }
}

template <TopNScore kScore, bool kBf16>
void launch_with(const TopNHalfProblem& problem, cudaStream_t stream) {
  const size_t bytes = shared_bytes(problem.n, problem.stride);
  SFAC_CUDA_TRY(cudaFuncSetAttribute(top_n_half_kernel<kScore, kBf16>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(bytes)));
  const auto blocks = static_cast<unsigned>((problem.queries + kQueries - 1) / kQueries);
  top_n_half_kernel<kScore, kBf16><<<blocks, kThreads, bytes, stream>>>(problem);
}

template <TopNScore kScore>
void launch(const TopNHalfProblem& problem, cudaStream_t stream) {
  if (problem.bf16) {
    launch_with<kScore, true>(problem, stream);
  } else {
    launch_with<kScore, false>(problem, stream);
  }
}

__global__ void gather_values_kernel(const float* values, const int32_t* ids, int64_t count,
                                     float* out) {
  const int64_t c = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (c < count) out[c] = values[ids[c]];
}

}  // namespace

void launch_top_n_half(const TopNHalfProblem& problem, cudaStream_t stream) {
  if (problem.queries <= 0) return;
  if (problem.score == TopNScore::kCosine) {
    launch<TopNScore::kCosine>(problem, stream);
  } else {
    launch<TopNScore::kDot>(problem, stream);
  }
  SFAC_CUDA_CHECK_LAUNCH();
}

void launch_gather_values(const float* values, const int32_t* ids, int64_t count, float* out,
                          cudaStream_t stream) {
  if (count <= 0) return;
  gather_values_kernel<<<static_cast<unsigned>((count + 255) / 256), 256, 0, stream>>>(
      values, ids, count, out);
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
