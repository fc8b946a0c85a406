// The scan of the two-pass top-n (top_n_two_pass.cuh): one block of 8 warps per 128 queries
// walks every candidate in tiles of 128; a warp computes a 32 x 64 part of a tile's scores with
// m16n8k16 mma (two query fragments and eight candidate fragments a k step, so a fragment feeds
// four or eight products), from rows staged whole in shared memory: the block's query rows once,
// each tile's candidate rows by cp.async, double-buffered. A thread compares the best of its 16
// scores of a query with the query's fixed cut and looks at single scores only where that
// passes; survivors take a slot by a shared-memory counter and go straight to global memory.
// 128 queries a block halve the candidate rows each block reads (from L2) against 64.
// With folded scores (bfloat16 rows, top_n_two_pass.cuh) the rows' tails make the tensor cores
// add the bias part and subtract the cut, which leaves a score's pass bit one shift from its
// accumulator: no additions or comparisons a score.
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "cuda/cuda_check.h"
#include "cuda/kernels/common/cp_async.cuh"
#include "cuda/kernels/common/mma_half.cuh"
#include "cuda/kernels/recommend/top_n_scan_parts.cuh"
#include "cuda/kernels/recommend/top_n_two_pass.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kQueries = 128;  // queries a block
constexpr int kTile = 128;     // candidates a tile
constexpr int kThreads = 256;  // 8 warps: 4 x 32 queries by 2 x 64 candidates
// 16-bit values after each staged row: rows then start 16 bytes apart modulo 128, so the eight
// rows an ldmatrix phase reads fall on distinct banks.
constexpr int kPad = 8;

// The stage buffers (two tiles of candidate rows) also hold the sample's per-thread lists once
// the sample is walked: 32 floats a query.
__host__ __device__ size_t stage_bytes(int64_t stride) {
  const size_t rows = sizeof(uint16_t) * 2 * kTile * (static_cast<size_t>(stride) + kPad);
  const size_t lists = sizeof(float) * kQueries * 32;
  return rows > lists ? rows : lists;
}

size_t shared_bytes(int64_t stride) {
  const size_t lead = static_cast<size_t>(stride) + kPad;
  return sizeof(uint16_t) * kQueries * lead  // query rows
         + stage_bytes(stride)               // candidate rows, two buffers
         + sizeof(float) * 2 * kTile         // their biases
         + sizeof(int32_t) * kQueries        // survivor counts
         + sizeof(float) * kQueries          // cuts
         + sizeof(uint32_t) * kQueries;      // folded scores: which candidates may pass
}

// The staged rows' values: with folded scores their columns and tails.
int64_t scan_stride(const TopNScanProblem& p) {
  return p.folded_candidates != nullptr ? top_n_folded_stride(p.rank) : p.stride;
}

// kFold: folded scores (kBf16 only; kBias is then unused: the tails hold the bias part).
template <bool kBf16, bool kBias, bool kFold>
__global__ void __launch_bounds__(kThreads, 2) top_n_scan_kernel(TopNScanProblem p) {
  static_assert(kBf16 || !kFold, "folded scores need bfloat16 rows");
  extern __shared__ __align__(16) unsigned char smem[];
  const int stride = static_cast<int>(kFold ? top_n_folded_stride(p.rank) : p.stride);
  // Values a staged row takes from the factors (the rest is the tail).
  const int columns = static_cast<int>(kFold ? top_n_folded_columns(p.rank) : p.stride);
  const int lead = stride + kPad;
  auto* query_rows = reinterpret_cast<uint16_t*>(smem);
  uint16_t* stage = query_rows + kQueries * lead;
  auto* tile_bias =
      reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(stage) + stage_bytes(stride));
  auto* counts = reinterpret_cast<int*>(tile_bias + 2 * kTile);
  auto* cuts = reinterpret_cast<float*>(counts + kQueries);
  auto* rules = reinterpret_cast<uint32_t*>(cuts + kQueries);

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, g = lane >> 2, t = lane & 3;
  const int64_t first_query = int64_t{blockIdx.x} * kQueries;
  const int warp_query = 32 * (warp & 3), warp_half = warp >> 2, warp_cand = 64 * warp_half;

  // This thread's four queries: rows g and g + 8 of its warp's two 16-row fragments.
  float offset[2][2];
#pragma unroll
  for (int mb = 0; mb < 2; ++mb) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t q = first_query + warp_query + 16 * mb + g + 8 * h;
      offset[mb][h] = !kFold && kBias && q < p.queries ? p.query_offset[p.query_ids[q]] : 0.0f;
    }
  }
  if (tid < kQueries) counts[tid] = 0;

  // The query rows, once, in their own commit group (waited for with the first tile's).
  const int pieces = columns / 8;  // 16-byte pieces a row takes from the factors
  for (int piece = tid; piece < kQueries * pieces; piece += kThreads) {
    const int row = piece / pieces, part = piece % pieces;
    const int64_t q = first_query + row;
    const int64_t id = q < p.queries ? p.query_ids[q] : 0;
    detail::cp_async16(query_rows + row * lead + 8 * part,
                       p.query_factors + id * p.stride + 8 * part, q < p.queries);
  }
  detail::cp_async_commit();
  // A query row's tail (folded scores): 8 or 16 values after its columns.
  auto write_tail = [&](int row, float c, bool ones) {
    uint16_t* tail = query_rows + row * lead + columns;
    detail::store_query_tail(tail, stride - columns > 8 ? tail + 8 : nullptr, c, ones);
  };
  // Folded: the sample's query tails add the offsets (zero rows for queries past the last).
  if (kFold && tid < kQueries) {
    const int64_t q = first_query + tid;
    write_tail(tid, detail::query_offset_of(p, q), q < p.queries);
  }

  // Stages tile s of a walk over `count` candidates (sample: ids sample_ids[c], else c) into
  // buffer `slot`: two threads a candidate row (alternate pieces), rows past the candidates
  // zeros, and the tile's biases.
  const int row_bytes = stride * 2;
  const auto* candidates =
      reinterpret_cast<const char*>(kFold ? p.folded_candidates : p.candidate_factors);
  auto issue = [&](bool sample, int64_t count, int64_t s, int slot) {
    const int row = tid >> 1;
    const int64_t c = s * kTile + row;
    const bool valid = c < count;
    const int64_t id = !valid ? 0 : sample ? p.sample_ids[c] : c;
    const char* from = candidates + id * row_bytes;
    char* to = reinterpret_cast<char*>(stage + (slot * kTile + row) * lead);
    for (int at = (tid & 1) * 16; at < row_bytes; at += 32) {
      detail::cp_async16(to + at, from + at, valid);
    }
    if (kBias && !kFold && tid < kTile) {
      const int64_t cb = s * kTile + tid;
      const bool valid_b = cb < count;
      const int64_t id_b = !valid_b ? 0 : sample ? p.sample_ids[cb] : cb;
      detail::cp_async4(tile_bias + slot * kTile + tid, p.candidate_bias + id_b, valid_b);
    }
    detail::cp_async_commit();
  };

  // Walks `count` candidates in tiles, double-buffered; per tile, the warp's 32 x 64 scores
  // (acc) and the thread's 16 candidates' biases go to epilogue(s, acc, bias).
  const int m = lane >> 3, r = lane & 7;
  const uint16_t* a_row = query_rows + (warp_query + r + 8 * (m & 1)) * lead + 8 * (m >> 1);
  auto walk = [&](bool sample, int64_t count, auto&& epilogue) {
    const int64_t tiles = (count + kTile - 1) / kTile;
    if (tiles > 0) issue(sample, count, 0, 0);
    for (int64_t s = 0; s < tiles; ++s) {
      const int slot = static_cast<int>(s & 1);
      if (s + 1 < tiles) {
        issue(sample, count, s + 1, slot ^ 1);
        detail::cp_async_wait<1>();
      } else {
        detail::cp_async_wait<0>();
      }
      __syncthreads();  // tile s staged

      float acc[2][8][4];
      const uint16_t* b_row =
          stage + (slot * kTile + warp_cand + r + 8 * (m >> 1)) * lead + 8 * (m & 1);
      // One k step of the warp's 32 x 64 products; the first writes the accumulators.
      auto k_step = [&](int kk, auto first) {
        uint32_t a[2][4];
        detail::ldmatrix_x4(a[0], a_row + kk);
        detail::ldmatrix_x4(a[1], a_row + 16 * lead + kk);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          uint32_t pair[4];
          detail::ldmatrix_x4(pair, b_row + 16 * j * lead + kk);
          const uint32_t b0[2] = {pair[0], pair[1]}, b1[2] = {pair[2], pair[3]};
#pragma unroll
          for (int mb = 0; mb < 2; ++mb) {
            if constexpr (decltype(first)::value) {
              detail::mma_16bit_first<kBf16>(acc[mb][2 * j], a[mb], b0);
              detail::mma_16bit_first<kBf16>(acc[mb][2 * j + 1], a[mb], b1);
            } else {
              detail::mma_16bit<kBf16>(acc[mb][2 * j], a[mb], b0);
              detail::mma_16bit<kBf16>(acc[mb][2 * j + 1], a[mb], b1);
            }
          }
        }
      };
      k_step(0, std::true_type{});
#pragma unroll(kFold ? 1 : 2)
      for (int kk = 16; kk < stride; kk += 16) k_step(kk, std::false_type{});

      // The thread's 16 candidates (columns 8 nt + 2 t + j of the warp's 64) and their biases.
      float bias[8][2];
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        if constexpr (kBias && !kFold) {
          const float2 b2 = *reinterpret_cast<const float2*>(tile_bias + slot * kTile + warp_cand +
                                                             8 * nt + 2 * t);
          bias[nt][0] = b2.x;
          bias[nt][1] = b2.y;
        } else {
          bias[nt][0] = bias[nt][1] = 0.0f;
        }
      }
      epilogue(s, acc, bias);
      __syncthreads();  // every warp is done with this slot before it is staged again
    }
  };
  // The score as the host forms it from a dot product: dot + (offset + bias); folded, the
  // accumulator holds it.
  auto score = [&](float dot, float offset_q, float bias_c) {
    return kBias && !kFold ? dot + (offset_q + bias_c) : dot;
  };

  // 1. The sample: each thread keeps, per query, the four best scores of its candidates that
  //    the query does not exclude. The n-th best of the 32 kept for a query (8 threads hold
  //    its candidates) is at most its n-th best sample score, so at most its n-th best score:
  //    lowered by twice the query's margin, no candidate that ranks scores below it.
  float best[2][2][4];
#pragma unroll
  for (int mb = 0; mb < 2; ++mb) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int i = 0; i < 4; ++i) best[mb][h][i] = -INFINITY;
    }
  }
  const int64_t mask_words = (p.sample + 63) / 64;
  walk(true, p.sample, [&](int64_t s, float(&acc)[2][8][4], float(&bias)[8][2]) {
    const int64_t word = (s * kTile + warp_cand) / 64;  // the warp's 64 candidates: one word
#pragma unroll
    for (int mb = 0; mb < 2; ++mb) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t q = first_query + warp_query + 16 * mb + g + 8 * h;
        if (q >= p.queries) continue;
        const uint64_t excluded =
            p.sample_masks != nullptr ? p.sample_masks[q * mask_words + word] : 0;
        float* kept = best[mb][h];
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const int col = 8 * nt + 2 * t + j;
            const float v = score(acc[mb][nt][2 * h + j], offset[mb][h], bias[nt][j]);
            if (!(v > kept[3]) || ((excluded >> col) & 1) ||
                s * kTile + warp_cand + col >= p.sample) {
              continue;
            }
            kept[3] = v;  // insertion into the sorted four
#pragma unroll
            for (int i = 3; i > 0; --i) {
              if (kept[i] > kept[i - 1]) {
                const float swap = kept[i];
                kept[i] = kept[i - 1];
                kept[i - 1] = swap;
              }
            }
          }
        }
      }
    }
  });

  // The cuts: the thread lists through the (now idle) stage buffer, one thread a query.
  auto* lists = reinterpret_cast<float*>(stage);  // [kQueries][2 halves x 4 threads x 4]
#pragma unroll
  for (int mb = 0; mb < 2; ++mb) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = warp_query + 16 * mb + g + 8 * h;
#pragma unroll
      for (int i = 0; i < 4; ++i) lists[row * 32 + (warp_half * 4 + t) * 4 + i] = best[mb][h][i];
    }
  }
  __syncthreads();
  if (tid < kQueries) {
    const int64_t q = first_query + tid;
    const float cut = detail::query_cut_of(p, q, lists + tid * 32);
    cuts[tid] = cut;
    if constexpr (kFold) {
      const detail::FoldedCut f =
          detail::folded_cut(q < p.queries, cut, detail::query_offset_of(p, q));
      if (f.new_tail) write_tail(tid, -f.threshold, true);
      cuts[tid] = f.restore;
      rules[tid] = f.rule;
    }
  }
  __syncthreads();
  // Folded, the cuts and rules stay in shared memory (registers hold the accumulators).
  float cut[2][2];
#pragma unroll
  for (int mb = 0; mb < 2; ++mb) {
#pragma unroll
    for (int h = 0; h < 2; ++h) cut[mb][h] = kFold ? 0.0f : cuts[warp_query + 16 * mb + g + 8 * h];
  }

  // 2. Every candidate against the cuts. A score v reaches cut exactly when the difference from
  // the float just below the cut is negative: its sign bit, shifted in, is the pass bit (two
  // instructions a score). Folded, the accumulator's own sign bit is the fail bit.
  float below[2][2];
#pragma unroll
  for (int mb = 0; mb < 2; ++mb) {
#pragma unroll
    for (int h = 0; h < 2; ++h) below[mb][h] = nextafterf(cut[mb][h], -INFINITY);
  }
  walk(false, p.candidates, [&](int64_t s, float (&acc)[2][8][4], float (&bias)[8][2]) {
    const int c0 = static_cast<int>(s * kTile) + warp_cand + 2 * t;
    // Folded: the four queries' pass words first, four independent chains (bit 2 nt + j:
    // candidate (nt, j) passes).
    uint32_t words[2][2] = {};
    if constexpr (kFold) {
#pragma unroll
      for (int mb = 0; mb < 2; ++mb) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          words[mb][h] =
              detail::folded_pass_bits(acc[mb], h, rules[warp_query + 16 * mb + g + 8 * h]);
        }
      }
    }
#pragma unroll
    for (int mb = 0; mb < 2; ++mb) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // Unfolded, the scores replace their dot products. Only the few set bits cost more.
        uint32_t passed = words[mb][h];
        if constexpr (!kFold) {
#pragma unroll
          for (int k = 15; k >= 0; --k) {
            const int nt = k >> 1, j = k & 1;
            float& v = acc[mb][nt][2 * h + j];
            v = score(v, offset[mb][h], bias[nt][j]);
            passed = (passed << 1) | (__float_as_uint(below[mb][h] - v) >> 31);
          }
        }
        if (passed == 0) continue;
        const int row = warp_query + 16 * mb + g + 8 * h;
        detail::store_survivors<kFold>(
            passed, acc[mb], h, c0, p.candidates, kFold ? cuts[row] : 0.0f, &counts[row],
            static_cast<int>(first_query) + row, p.survivor_scores, p.survivor_ids);
      }
    }
  });
  detail::cp_async_wait<0>();  // the query rows, where there was nothing to walk
  __syncthreads();             // the counts
  if (tid < kQueries && first_query + tid < p.queries) p.counts[first_query + tid] = counts[tid];
}

template <bool kBf16, bool kBias, bool kFold = false>
void launch_with(const TopNScanProblem& problem, cudaStream_t stream) {
  const size_t bytes = shared_bytes(scan_stride(problem));
  SFAC_CUDA_TRY(cudaFuncSetAttribute(top_n_scan_kernel<kBf16, kBias, kFold>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(bytes)));
  const auto blocks = static_cast<unsigned>((problem.queries + kQueries - 1) / kQueries);
  top_n_scan_kernel<kBf16, kBias, kFold><<<blocks, kThreads, bytes, stream>>>(problem);
}

__global__ void sample_masks_kernel(const int32_t* query_ids, int64_t queries,
                                    const int64_t* exclude_offsets, const int32_t* exclude_cols,
                                    const int32_t* sample_position, int64_t words,
                                    uint64_t* masks) {
  const int64_t q = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (q >= queries) return;
  const int32_t id = query_ids[q];
  const int64_t end = exclude_offsets[id + 1];
  auto* row = reinterpret_cast<unsigned long long*>(masks + q * words);
  // kAhead entries a lane in flight: their ids, then their sample positions, then the bits
  // (a lane's entries are a chain of dependent loads otherwise).
  constexpr int kAhead = 4;
  for (int64_t e0 = exclude_offsets[id] + lane; e0 < end; e0 += 32 * kAhead) {
    int32_t col[kAhead];
#pragma unroll
    for (int i = 0; i < kAhead; ++i) {
      col[i] = e0 + 32 * i < end ? __ldg(exclude_cols + e0 + 32 * i) : -1;
    }
    int32_t pos[kAhead];
#pragma unroll
    for (int i = 0; i < kAhead; ++i) pos[i] = col[i] >= 0 ? __ldg(sample_position + col[i]) : -1;
#pragma unroll
    for (int i = 0; i < kAhead; ++i) {
      if (pos[i] >= 0) atomicOr(row + pos[i] / 64, 1ull << (pos[i] % 64));
    }
  }
}

}  // namespace

void launch_top_n_sample_masks(const int32_t* query_ids, int64_t queries,
                               const int64_t* exclude_offsets, const int32_t* exclude_cols,
                               const int32_t* sample_position, int64_t sample, uint64_t* masks,
                               cudaStream_t stream) {
  if (queries <= 0) return;
  const int64_t words = (sample + 63) / 64;
  SFAC_CUDA_TRY(cudaMemsetAsync(masks, 0, sizeof(uint64_t) * queries * words, stream));
  sample_masks_kernel<<<static_cast<unsigned>((queries * 32 + 255) / 256), 256, 0, stream>>>(
      query_ids, queries, exclude_offsets, exclude_cols, sample_position, words, masks);
  SFAC_CUDA_CHECK_LAUNCH();
}

void launch_top_n_scan(const TopNScanProblem& problem, cudaStream_t stream) {
  if (problem.queries <= 0) return;
  const bool bias = problem.query_offset != nullptr && problem.candidate_bias != nullptr;
  if (problem.folded_candidates != nullptr) {
    if (!problem.bf16 || top_n_folded_stride(problem.rank) > kTopNScanMaxStride) {
      throw std::invalid_argument("top-n scan: folded scores need bfloat16 rows of rank <= 120");
    }
    if (problem.warpgroup) return launch_top_n_scan_warpgroup(problem, stream);
  }
  if (problem.segments != 1) {
    throw std::invalid_argument("top-n scan: the warp-mma scan fills one survivor segment");
  }
  if (problem.folded_candidates != nullptr) {
    launch_with<true, false, true>(problem, stream);
  } else if (problem.bf16) {
    bias ? launch_with<true, true>(problem, stream) : launch_with<true, false>(problem, stream);
  } else {
    bias ? launch_with<false, true>(problem, stream) : launch_with<false, false>(problem, stream);
  }
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
