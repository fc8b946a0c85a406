// Fused scoring and top-n selection: one thread block per 64 queries walks every candidate in
// tiles of 64, computing the 64 x 64 scores of a tile on tensor cores (3xTF32, so fp32-accurate)
// into registers, and keeps each query's best n in shared memory. The score matrix never reaches
// global memory, which is what a GEMM followed by a selection pays for (a queries x candidates
// write and read).
//
// Per tile: the factor rows come in k chunks of 32 floats by cp.async, double-buffered over the
// (tile, chunk) sequence, rows padded to 36 floats so that the fragment reads of a warp fall on
// distinct banks. After a tile's last chunk each query's excluded candidates in the tile become
// a 64-bit mask (one thread a query walks its sorted exclusion list, which only moves forward
// since tiles go by increasing id), every thread filters its scores against its queries' current
// n-th best and appends the survivors to the query's candidate buffer (16 entries; a tile that
// overflows one is filtered again against the raised thresholds until every score was offered),
// and one thread a query inserts them into its sorted list. Once a list is full few scores pass the filter, so the
// selection costs little beside the products.
//
// Ties: a list is ordered by (higher score, lower id), a total order, so its content does not
// depend on the order in which candidates arrive. The filter keeps scores equal to the n-th
// (one of the same tile offered in a later pass may have a lower id) and the merge decides.
#include <cmath>

#include "cuda/cuda_check.h"
#include "cuda/kernels/common/cp_async.cuh"
#include "cuda/kernels/common/mma_tf32.cuh"
#include "cuda/kernels/recommend/top_n_lists.cuh"
#include "cuda/kernels/recommend/top_n.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kQueries = 64;     // queries a block
constexpr int kTile = 64;        // candidates a tile (one mask word a query)
constexpr int kChunk = kTopNRankStep;
constexpr int kLead = kChunk + 4;  // floats a staged row
constexpr int kThreads = 256;      // 8 warps: 4 x 16 queries by 2 x 32 candidates
// Candidates a query's buffer holds between merges. A tile whose survivors overflow it (the
// first tiles, while lists fill) is filtered again against the raised thresholds, for the
// scores not yet taken, until none is left: a small buffer keeps 3 blocks an SM.
constexpr int kBuffered = 16;
// Query rows stay in shared memory for the whole walk up to this stride (floats a row); longer
// ones are staged chunk by chunk beside the candidates'.
constexpr int kMaxResidentStride = 128;

// Floats of one staging buffer: the candidates' chunk rows, and the queries' unless resident.
__host__ __device__ constexpr int stage_floats(bool resident) { return (resident ? kTile : kQueries + kTile) * kLead; }

// Bytes of shared memory for lists of n.
constexpr size_t shared_bytes(int n, int64_t stride, bool resident) {
  return sizeof(float) * (resident ? kQueries * (stride + 4) : 0)  // resident query rows
         + sizeof(float) * 2 * stage_floats(resident)              // staged rows
         + (sizeof(float) + sizeof(int32_t)) * kQueries * kBuffered  // candidate buffers
         + (sizeof(float) + sizeof(int32_t)) * kQueries * size_t(n)  // lists
         + (2 * sizeof(int64_t) + sizeof(uint64_t) + 5 * 4) * kQueries;  // per-query state
}

// kResident: the block's query rows are staged once (stride <= kMaxResidentStride), only the
// candidates' rows per step.
template <TopNScore kScore, bool kResident>
__global__ void __launch_bounds__(kThreads, 3) top_n_kernel(TopNProblem p) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int kStageFloats = stage_floats(kResident);
  const int n = p.n;
  const int query_lead = kResident ? static_cast<int>(p.stride) + 4 : kLead;
  float* resident_queries = reinterpret_cast<float*>(smem);
  float* stage = resident_queries + (kResident ? kQueries * query_lead : 0);
  float* cand_score = stage + 2 * kStageFloats;
  auto* cand_id = reinterpret_cast<int32_t*>(cand_score + kQueries * kBuffered);
  float* list_score = reinterpret_cast<float*>(cand_id + kQueries * kBuffered);
  auto* list_id = reinterpret_cast<int32_t*>(list_score + kQueries * n);
  // 8-byte state after the lists: kQueries * n * 8 bytes keeps it aligned.
  auto* cursor = reinterpret_cast<int64_t*>(list_id + kQueries * n);
  int64_t* cursor_end = cursor + kQueries;
  auto* mask = reinterpret_cast<uint64_t*>(cursor_end + kQueries);
  auto* threshold = reinterpret_cast<float*>(mask + kQueries);
  auto* count = reinterpret_cast<int*>(threshold + kQueries);
  int* pending = count + kQueries;
  auto* query_id = reinterpret_cast<int32_t*>(pending + kQueries);
  auto* query_value = reinterpret_cast<float*>(query_id + kQueries);  // offset or norm

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, g = lane >> 2, t = lane & 3;
  const int64_t first_query = int64_t{blockIdx.x} * kQueries;

  if (tid < kQueries) {
    const int64_t q = first_query + tid;
    const int32_t id = q < p.queries ? p.query_ids[q] : -1;
    query_id[tid] = id;
    count[tid] = 0;
    pending[tid] = 0;
    threshold[tid] = -INFINITY;
    mask[tid] = 0;
    const bool excludes = id >= 0 && p.exclude_offsets != nullptr;
    cursor[tid] = excludes ? p.exclude_offsets[id] : 0;
    cursor_end[tid] = excludes ? p.exclude_offsets[id + 1] : 0;
    float value = 0.0f;
    if (id >= 0) {
      if constexpr (kScore == TopNScore::kCosine) {
        value = p.query_norm[id];
      } else {
        if (p.query_offset != nullptr) value = p.query_offset[id];
      }
    }
    query_value[tid] = value;
  }
  __syncthreads();

  const int64_t tiles = (p.candidates + kTile - 1) / kTile;
  const int64_t chunks = p.stride / kChunk;
  const int64_t steps = tiles * chunks;

  // The resident query rows, whole, in their own commit group (waited for with the first step's).
  if constexpr (kResident) {
    const int pieces = static_cast<int>(p.stride) / 4;
    for (int piece = tid; piece < kQueries * pieces; piece += kThreads) {
      const int row = piece / pieces, part = piece % pieces;
      const int32_t id = query_id[row];
      const float* from = p.query_factors + (id >= 0 ? int64_t{id} : 0) * p.stride;
      detail::cp_async16(resident_queries + row * query_lead + 4 * part, from + 4 * part, id >= 0);
    }
    detail::cp_async_commit();
  }

  // Stages step s (tile s / chunks, chunk s % chunks) into buffer `slot`: 64 query rows (unless
  // resident), then 64 candidate rows, 8 pieces of 16 bytes each; rows past the queries or
  // candidates read zeros.
  auto issue = [&](int64_t s, int slot) {
    const int64_t c0 = (s / chunks) * kTile;
    const int64_t k0 = (s % chunks) * kChunk;
    float* to = stage + slot * kStageFloats;
    constexpr int kFirstRow = kResident ? kQueries : 0;  // buffer row 0 is this row
#pragma unroll
    for (int piece = kFirstRow * 8 + tid; piece < (kQueries + kTile) * 8; piece += kThreads) {
      const int row = piece / 8, part = piece % 8;
      const float* from;
      bool valid;
      if (row < kQueries) {
        const int32_t id = query_id[row];
        valid = id >= 0;
        from = p.query_factors + (valid ? int64_t{id} : 0) * p.stride;
      } else {
        const int64_t c = c0 + (row - kQueries);
        valid = c < p.candidates;
        const int64_t id = !valid ? 0 : p.candidate_ids ? p.candidate_ids[c] : c;
        from = p.candidate_factors + id * p.stride;
      }
      detail::cp_async16(to + (row - kFirstRow) * kLead + 4 * part, from + k0 + 4 * part, valid);
    }
    detail::cp_async_commit();
  };

  // Bit j of mask[q]: candidate c0 + j is excluded for query q.
  auto build_mask = [&](int64_t c0) {
    const int q = tid;
    if (query_id[q] < 0 || p.exclude_offsets == nullptr) return;
    const int in_tile = static_cast<int>(p.candidates - c0 < kTile ? p.candidates - c0 : kTile);
    uint64_t bits = 0;
    int64_t cur = cursor[q];
    const int64_t end = cursor_end[q];
    if (p.candidate_ids == nullptr) {
      while (cur < end && p.exclude_cols[cur] < c0 + in_tile) {
        bits |= uint64_t{1} << (p.exclude_cols[cur] - c0);
        ++cur;
      }
    } else {
      const int32_t* ids = p.candidate_ids + c0;
      const int32_t last = ids[in_tile - 1];
      int j = 0;
      while (cur < end && p.exclude_cols[cur] <= last) {
        const int32_t e = p.exclude_cols[cur++];
        while (ids[j] < e) ++j;  // stops at in_tile - 1 at the latest: e <= last
        if (ids[j] == e) bits |= uint64_t{1} << j;
      }
    }
    cursor[q] = cur;
    mask[q] = bits;
  };

  const int warp_query = 16 * (warp & 3), warp_cand = 32 * (warp >> 2);
  float acc[4][4] = {};

  // The tile's scores against the queries' thresholds; survivors to the candidate buffers.
  // A thread's scores belong to two queries (rows g and g + 8 of its warp's 16), whose state it
  // reads once a tile.
  // Scores of the tile still to be offered, bit 4 nt + i for acc[nt][i]; returns whether one
  // found its query's buffer full (it stays in `offered` for the next pass).
  auto filter = [&](int64_t c0, uint32_t& offered) {
    bool overflow = false;
    int32_t qids[2];
    uint64_t masks[2];
    float thresholds[2], values[2];
    bool open[2];  // lists not yet full take any score, -INFINITY too
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int q = warp_query + g + 8 * h;
      qids[h] = query_id[q];
      masks[h] = mask[q];
      open[h] = count[q] < n;
      thresholds[h] = threshold[q];
      values[h] = query_value[q];
    }
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int h = i >> 1;
        const int q = warp_query + g + 8 * h;  // for the buffer
        const int col = warp_cand + 8 * nt + 2 * t + (i & 1);
        const int64_t c = c0 + col;
        const uint32_t bit = uint32_t{1} << (4 * nt + i);
        if (!(offered & bit)) continue;
        offered &= ~bit;
        if (c >= p.candidates || qids[h] < 0 || ((masks[h] >> col) & 1)) continue;
        const int32_t id = p.candidate_ids ? p.candidate_ids[c] : static_cast<int32_t>(c);
        if (p.exclude_self && id == qids[h]) continue;
        const float dot = acc[nt][i];
        float v;
        if constexpr (kScore == TopNScore::kCosine) {
          const float denominator = values[h] * p.candidate_norm[id];
          v = denominator > 0.0f ? dot / denominator : 0.0f;
        } else {
          v = p.query_offset != nullptr ? dot + (values[h] + p.candidate_add[id]) : dot;
        }
        if (isnan(v)) v = -INFINITY;
        if (open[h] || v >= thresholds[h]) {
          const int slot = atomicAdd(&pending[q], 1);
          if (slot < kBuffered) {
            cand_score[q * kBuffered + slot] = v;
            cand_id[q * kBuffered + slot] = id;
          } else {
            offered |= bit;
            overflow = true;
          }
        }
      }
    }
    return overflow;
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

  if (steps > 0) {
    issue(0, 0);
  } else {
    detail::cp_async_wait<0>();  // the resident rows (nothing to score)
  }
  for (int64_t s = 0; s < steps; ++s) {
    const int slot = static_cast<int>(s & 1);
    if (s + 1 < steps) {
      issue(s + 1, slot ^ 1);
      detail::cp_async_wait<1>();
    } else {
      detail::cp_async_wait<0>();
    }
    const int64_t c0 = (s / chunks) * kTile;
    const bool last_chunk = s % chunks == chunks - 1;
    if (last_chunk && tid < kQueries) build_mask(c0);
    __syncthreads();

    const float* b = stage + slot * kStageFloats + (kResident ? 0 : kQueries * kLead);
    const float* a = kResident ? resident_queries + (s % chunks) * kChunk
                               : stage + slot * kStageFloats;
#pragma unroll
    for (int kk = 0; kk < kChunk; kk += 8) {
      const float* ar = a + (warp_query + g) * query_lead + kk + t;
      const detail::SplitTf32 a0 = detail::split_tf32(ar[0]);
      const detail::SplitTf32 a1 = detail::split_tf32(ar[8 * query_lead]);
      const detail::SplitTf32 a2 = detail::split_tf32(ar[4]);
      const detail::SplitTf32 a3 = detail::split_tf32(ar[8 * query_lead + 4]);
      const uint32_t a_big[4] = {a0.big, a1.big, a2.big, a3.big};
      const uint32_t a_small[4] = {a0.small, a1.small, a2.small, a3.small};
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const float* br = b + (warp_cand + 8 * nt + g) * kLead + kk + t;
        const detail::SplitTf32 b0 = detail::split_tf32(br[0]);
        const detail::SplitTf32 b1 = detail::split_tf32(br[4]);
        const uint32_t b_big[2] = {b0.big, b1.big};
        const uint32_t b_small[2] = {b0.small, b1.small};
        detail::mma_3xtf32(acc[nt], a_big, a_small, b_big, b_small);
      }
    }

    if (last_chunk) {
      uint32_t offered = 0xffffu;
      bool again = true;
      while (again) {
        const bool overflow = filter(c0, offered);
        __syncthreads();
        if (tid < kQueries) merge(tid);
        again = __syncthreads_or(overflow) != 0;  // also orders the merge before the next pass
      }
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
      }
    }
    __syncthreads();  // the buffer is refilled, the lists read, by the next step
  }

  if (tid < kQueries && query_id[tid] >= 0) {
    const int64_t out = (first_query + tid) * n;
    detail::top_n_write(list_score + tid * n, list_id + tid * n, count[tid], n, p.out_ids + out,
                        p.out_scores + out);
  }
}

template <TopNScore kScore, bool kResident>
void launch_with(const TopNProblem& problem, cudaStream_t stream) {
  const size_t bytes = shared_bytes(problem.n, problem.stride, kResident);
  SFAC_CUDA_TRY(cudaFuncSetAttribute(top_n_kernel<kScore, kResident>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(bytes)));
  const auto blocks = static_cast<unsigned>((problem.queries + kQueries - 1) / kQueries);
  top_n_kernel<kScore, kResident><<<blocks, kThreads, bytes, stream>>>(problem);
}

template <TopNScore kScore>
void launch(const TopNProblem& problem, cudaStream_t stream) {
  if (problem.stride <= kMaxResidentStride) {
    launch_with<kScore, true>(problem, stream);
  } else {
    launch_with<kScore, false>(problem, stream);
  }
}

__global__ void row_norms_kernel(const float* rows, int64_t count, int64_t stride, float* norms) {
  const int64_t r = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (r >= count) return;
  const float* x = rows + r * stride;
  float sum = 0.0f;
  for (int64_t t = 0; t < stride; ++t) sum = fmaf(x[t], x[t], sum);
  norms[r] = sqrtf(sum);
}

}  // namespace

void launch_row_norms(const float* rows, int64_t count, int64_t stride, float* norms,
                      cudaStream_t stream) {
  if (count <= 0) return;
  row_norms_kernel<<<static_cast<unsigned>((count + 255) / 256), 256, 0, stream>>>(rows, count,
                                                                                 stride, norms);
  SFAC_CUDA_CHECK_LAUNCH();
}

void launch_top_n(const TopNProblem& problem, cudaStream_t stream) {
  if (problem.queries <= 0) return;
  if (problem.score == TopNScore::kCosine) {
    launch<TopNScore::kCosine>(problem, stream);
  } else {
    launch<TopNScore::kDot>(problem, stream);
  }
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
