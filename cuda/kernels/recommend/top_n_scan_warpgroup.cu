// The scan of the two-pass top-n (top_n_two_pass.cuh) with warpgroup mma, for folded scores on
// sm_90a (this file is compiled for that target only; top_n_scan.cu serves other devices). One
// block of four warpgroups per 256 queries walks every candidate in tiles of 128; a warpgroup
// computes its 64 queries' scores of a tile as two 64 x 64 halves, each issued as one
// asynchronous group of m64n64k16 mma on rows staged in shared memory, into two sets of
// accumulators: while the tensor cores compute one half, the warpgroup forms the other half's
// pass bits and stores its survivors. A thread's part of a half is the same m16n8 fragment as a
// warp mma's (two queries, 16 candidates each), so the sample's kept scores, the cuts and the
// survivors work as in top_n_scan.cu.
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "cuda/cuda_check.h"
#include "cuda/kernels/common/cp_async.cuh"
#include "cuda/kernels/common/wgmma.cuh"
#include "cuda/kernels/recommend/top_n_scan_parts.cuh"
#include "cuda/kernels/recommend/top_n_two_pass.cuh"

namespace sfac::cuda::kernels {
namespace {

// Warpgroups a block. Every block reads all candidates from L2, which bounds the scan: a tile
// staged once serves 64 kGroups queries (one block an SM, as many warps as two blocks of two).
constexpr int kGroups = 4;
constexpr int kQueries = 64 * kGroups;  // queries a block: a warpgroup's 64 each
constexpr int kTile = 128;              // candidates a tile: two halves of 64
constexpr int kThreads = 128 * kGroups;
constexpr int kStageSplit = kThreads / (2 * kTile);  // thread pairs that stage a candidate row
constexpr int kKept = 8;  // sample scores a thread keeps of each of its two queries (x 4 threads)

// Rows are staged as the mma read them: 8 x 8 core matrices of 128 bytes, the row's 16-byte
// pieces 128 bytes apart, 8-row groups `chunks` pieces apart.
__host__ __device__ constexpr int piece_offset(int row, int piece, int chunks) {
  return ((row >> 3) * chunks + piece) * 128 + (row & 7) * 16;
}

__host__ __device__ size_t rows_bytes(int rows, int64_t stride) {
  return sizeof(uint16_t) * rows * static_cast<size_t>(stride);
}

size_t shared_bytes(int64_t stride) {
  // query rows, then two tiles of candidate rows
  return rows_bytes(kQueries, stride) + 2 * rows_bytes(kTile, stride);
}

// f(h) for h = 0, 1 as constants: a thread's two queries, whose accumulators and kept scores
// must stay registers (a loop the compiler leaves rolled would index them at run time).
template <typename F>
__device__ __forceinline__ void for_both_queries(F&& f) {
  f(std::integral_constant<int, 0>{});
  f(std::integral_constant<int, 1>{});
}

// kSteps: k16 steps a row (its top_n_folded_stride / 16), a constant so that each half's mma
// are one unbroken sequence.
template <int kSteps>
__global__ void __launch_bounds__(kThreads, 4 / kGroups)
    top_n_scan_warpgroup_kernel(TopNScanProblem p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int stride = 16 * kSteps;
  constexpr int chunks = stride / 8;  // 16-byte pieces a row
  const int columns = static_cast<int>(top_n_folded_columns(p.rank));
  unsigned char* query_rows = smem;
  unsigned char* stage = query_rows + rows_bytes(kQueries, stride);
  const size_t tile_bytes = rows_bytes(kTile, stride);

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, g = lane >> 2, t = lane & 3;
  const int group = warp >> 2;  // warpgroup: queries 64 group ..
  const int64_t first_query = int64_t{blockIdx.x} * kQueries;
  // This thread's two queries (h = 0, 1): rows of the block.
  const int rows[2] = {64 * group + 16 * (warp & 3) + g, 64 * group + 16 * (warp & 3) + g + 8};

  // The query rows, once, in their own commit group (waited for with the first tile's).
  const int pieces = columns / 8;  // pieces a row takes from the factors
  for (int piece = tid; piece < kQueries * pieces; piece += kThreads) {
    const int row = piece / pieces, part = piece % pieces;
    const int64_t q = first_query + row;
    const int64_t id = q < p.queries ? p.query_ids[q] : 0;
    detail::cp_async16(query_rows + piece_offset(row, part, chunks),
                       p.query_factors + id * p.stride + 8 * part, q < p.queries);
  }
  detail::cp_async_commit();
  auto write_tail = [&](int row, float c, bool ones) {
    auto* first = reinterpret_cast<uint16_t*>(query_rows + piece_offset(row, pieces, chunks));
    auto* rest =
        stride - columns > 8
            ? reinterpret_cast<uint16_t*>(query_rows + piece_offset(row, pieces + 1, chunks))
            : nullptr;
    detail::store_query_tail(first, rest, c, ones);
  };
  // The sample's query tails add the offsets (zero rows for queries past the last).
  if (tid < kQueries) {
    const int64_t q = first_query + tid;
    write_tail(tid, detail::query_offset_of(p, q), q < p.queries);
  }

  // Stages tile s of a walk over `count` candidates (sample: ids sample_ids[c], else c) into
  // buffer `slot`: a pair of threads a 32-byte piece pair of a candidate row (a sector), the
  // block's kStageSplit parts of kTile pairs taking every kStageSplit-th piece pair of each
  // row (four threads a row each taking 64 contiguous bytes read more sectors from L2); rows
  // past the candidates zeros.
  const int stage_row = (tid >> 1) % kTile, first_piece = tid & 1, first_step = tid / (2 * kTile);
  unsigned char* const stage_to = stage + piece_offset(stage_row, first_piece, chunks);
  auto issue = [&](bool sample, int64_t count, int64_t s, int slot) {
    const int64_t c = s * kTile + stage_row;
    const bool valid = c < count;
    const int64_t id = !valid ? 0 : sample ? p.sample_ids[c] : c;
    const uint16_t* from = p.folded_candidates + id * stride + 8 * first_piece;
    unsigned char* to = stage_to + slot * tile_bytes;
#pragma unroll
    for (int i = 0; i < kSteps; i += kStageSplit) {
      if (i + first_step < kSteps) {
        detail::cp_async16(to + 256 * (i + first_step), from + 16 * (i + first_step), valid);
      }
    }
    detail::cp_async_commit();
  };

  // The warpgroup's 64 x 64 half `half` of the tile in buffer `slot`, as one committed group.
  const uint32_t sbo = static_cast<uint32_t>(chunks) * 128;
  const uint64_t a_desc = detail::wgmma_descriptor(query_rows + 8 * group * sbo, 128, sbo);
  auto mma = [&](float(&acc)[8][4], int slot, int half) {
    const uint64_t b_desc =
        detail::wgmma_descriptor(stage + slot * tile_bytes + 8 * half * sbo, 128, sbo);
    detail::wgmma_fence_operands(acc);
    detail::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kSteps; ++k) {
      detail::wgmma_64x64x16_bf16(acc, detail::wgmma_advance(a_desc, 256 * k),
                                  detail::wgmma_advance(b_desc, 256 * k), k > 0);
    }
    detail::wgmma_commit();
  };

  // Walks `count` candidates in tiles, double-buffered; each half's accumulators go to
  // epilogue(s, half, acc) while the tensor cores compute the next half.
  auto walk = [&](bool sample, int64_t count, auto&& epilogue) {
    const int64_t tiles = (count + kTile - 1) / kTile;
    if (tiles == 0) return;
    issue(sample, count, 0, 0);
    if (tiles > 1) {
      issue(sample, count, 1, 1);
      detail::cp_async_wait<1>();
    } else {
      detail::cp_async_wait<0>();
    }
    detail::fence_shared_to_async_proxy();
    __syncthreads();  // tile 0 and the query rows staged
    float acc[2][8][4];
    mma(acc[0], 0, 0);
    // One group (tile s's first half) is in flight at the top of each step, none at the exit.
    for (int64_t s = 0;; ++s) {
      const int slot = static_cast<int>(s & 1);
      mma(acc[1], slot, 1);
      detail::wgmma_wait<1>();
      detail::wgmma_fence_operands(acc[0]);
      epilogue(s, 0, acc[0]);
      detail::wgmma_wait<0>();
      detail::wgmma_fence_operands(acc[1]);
      if (s + 1 == tiles) {
        epilogue(s, 1, acc[1]);
        break;
      }
      detail::cp_async_wait<0>();
      detail::fence_shared_to_async_proxy();
      // Tile s + 1 is staged, and no mma reads tile s any more: its buffer takes tile s + 2.
      __syncthreads();
      if (s + 2 < tiles) issue(sample, count, s + 2, slot);
      mma(acc[0], slot ^ 1, 0);
      epilogue(s, 1, acc[1]);
    }
    __syncthreads();  // the buffers are free for the next walk
  };

  // 1. The sample: each thread keeps, per query, the kKept best of the maxima of its 16
  //    candidates of each half tile that the query does not exclude (the accumulators are
  //    scores: the tails add the offsets and biases). These are scores of distinct unexcluded
  //    candidates, so the n-th best of the 32 kept for a query (4 threads hold its candidates)
  //    is at most its n-th best score and sets the cut (top_n_scan_parts.cuh). One insertion a
  //    half tile instead of one a score: where a bucket holds two of the n best, the cut is
  //    only a little lower.
  float kept[2][kKept];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
#pragma unroll
    for (int i = 0; i < kKept; ++i) kept[h][i] = -INFINITY;
  }
  const int64_t mask_words = (p.sample + 63) / 64;
  walk(true, p.sample, [&](int64_t s, int half, float(&acc)[8][4]) {
    const int64_t word = 2 * s + half;          // the half's 64 candidates: one mask word
    const int64_t past = p.sample - 64 * word;  // candidates of the half in the sample
    // Bits of the half's candidates that take no part: excluded, or past the sample.
    const uint64_t inside = past >= 64 ? ~uint64_t{0} : past <= 0 ? 0 : (uint64_t{1} << past) - 1;
    for_both_queries([&](auto h_constant) {
      constexpr int h = decltype(h_constant)::value;
      const int64_t q = first_query + rows[h];
      if (q >= p.queries) return;
      const uint64_t excluded = p.sample_masks != nullptr && word < mask_words
                                    ? p.sample_masks[q * mask_words + word]
                                    : 0;
      // This thread's 16 columns 8 nt + 2 t + j, bit 2 nt + j.
      const uint64_t out = (excluded | ~inside) >> (2 * t);
      float m = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const bool skip = (out >> (8 * nt + j)) & 1;
          m = fmaxf(m, skip ? -INFINITY : acc[nt][2 * h + j]);
        }
      }
      float(&best)[kKept] = kept[h];
      if (!(m > best[kKept - 1])) return;  // also NaN
      best[kKept - 1] = m;                 // insertion into the sorted kKept
#pragma unroll
      for (int i = kKept - 1; i > 0; --i) {
        if (best[i] > best[i - 1]) {
          const float swap = best[i];
          best[i] = best[i - 1];
          best[i - 1] = swap;
        }
      }
    });
  });

  // The cuts, in registers: the 4 threads that hold a query's candidates (a quad) take the n-th
  // best of their kept values together, each then has the query's rule and restore; one of
  // them writes its tail (read by the scan's first mma, after the walk's first barrier).
  uint32_t rules[2];
  float restores[2];
  for_both_queries([&](auto h_constant) {
    constexpr int h = decltype(h_constant)::value;
    const int64_t q = first_query + rows[h];
    const float cut = detail::query_cut_at(p, q, detail::quad_nth(kept[h], p.n, lane));
    const detail::FoldedCut f =
        detail::folded_cut(q < p.queries, cut, detail::query_offset_of(p, q));
    if (t == 0 && f.new_tail) write_tail(rows[h], -f.threshold, true);
    rules[h] = f.rule;
    restores[h] = f.restore;
  });

  // 2. Every candidate against the cuts: a pass bit is an accumulator's sign (folded scores).
  //    A thread stores its survivors of a query into the query's segment t, of which it is the
  //    only writer.
  constexpr int kSegment = kTopNSurvivors / kTopNMaxSegments;
  int stored[2] = {0, 0};
  int first_slot[2];
  for_both_queries([&](auto h_constant) {
    constexpr int h = decltype(h_constant)::value;
    // < 2^31: launches are bounded
    first_slot[h] = static_cast<int>(first_query + rows[h]) * kTopNSurvivors + t * kSegment;
  });
  walk(false, p.candidates, [&](int64_t s, int half, float(&acc)[8][4]) {
    const int64_t half_first = s * kTile + 64 * half;
    const int c0 = static_cast<int>(half_first) + 2 * t;
    // The pass bits of candidates past the last (zero rows: they would pass) are cleared.
    uint32_t inside = 0xffffu;
    if (p.candidates - half_first < 64) {
      const int left = static_cast<int>(p.candidates - half_first) - 2 * t;
      inside = 0;
#pragma unroll
      for (int bit = 0; bit < 16; ++bit) inside |= (8 * (bit >> 1) + (bit & 1) < left) << bit;
    }
    uint32_t words[2];
    for_both_queries([&](auto h_constant) {
      constexpr int h = decltype(h_constant)::value;
      words[h] = detail::folded_pass_bits(acc, h, rules[h]) & inside;
    });
    for_both_queries([&](auto h_constant) {
      constexpr int h = decltype(h_constant)::value;
      if (words[h] == 0) return;
      detail::store_segment_survivors<kSegment>(words[h], acc, h, c0, restores[h], stored[h],
                                                first_slot[h], p.survivor_scores, p.survivor_ids);
    });
  });
  detail::cp_async_wait<0>();  // the query rows, where there was nothing to walk
  for_both_queries([&](auto h_constant) {
    constexpr int h = decltype(h_constant)::value;
    const int64_t q = first_query + rows[h];
    if (q < p.queries) p.counts[q * kTopNMaxSegments + t] = stored[h];
  });
#else
  (void)p;
  __trap();  // built for sm_90a only: top_n_scan_warpgroup_available() is false elsewhere
#endif
}

template <int kSteps>
void launch_with(const TopNScanProblem& problem, cudaStream_t stream) {
  const size_t bytes = shared_bytes(16 * kSteps);
  SFAC_CUDA_TRY(cudaFuncSetAttribute(top_n_scan_warpgroup_kernel<kSteps>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(bytes)));
  const auto blocks = static_cast<unsigned>((problem.queries + kQueries - 1) / kQueries);
  top_n_scan_warpgroup_kernel<kSteps><<<blocks, kThreads, bytes, stream>>>(problem);
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool top_n_scan_warpgroup_available() {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  if (major != 9 || minor != 0) return false;
  cudaFuncAttributes attributes{};
  if (cudaFuncGetAttributes(&attributes, top_n_scan_warpgroup_kernel<1>) != cudaSuccess) {
    cudaGetLastError();  // no image for this device
    return false;
  }
  return true;
}

void launch_top_n_scan_warpgroup(const TopNScanProblem& problem, cudaStream_t stream) {
  if (problem.queries <= 0) return;
  if (problem.folded_candidates == nullptr || !problem.bf16 ||
      top_n_folded_stride(problem.rank) > kTopNScanMaxStride) {
    throw std::invalid_argument("top-n warpgroup scan: folded bfloat16 rows of rank <= 120 only");
  }
  if (problem.segments != kTopNMaxSegments) {
    throw std::invalid_argument("top-n warpgroup scan: survivors in kTopNMaxSegments segments");
  }
  switch (top_n_folded_stride(problem.rank) / 16) {
    case 1:
      return launch_with<1>(problem, stream);
    case 2:
      return launch_with<2>(problem, stream);
    case 3:
      return launch_with<3>(problem, stream);
    case 4:
      return launch_with<4>(problem, stream);
    case 5:
      return launch_with<5>(problem, stream);
    case 6:
      return launch_with<6>(problem, stream);
    case 7:
      return launch_with<7>(problem, stream);
    default:
      return launch_with<8>(problem, stream);
  }
}

}  // namespace sfac::cuda::kernels
