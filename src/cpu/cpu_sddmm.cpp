#include "cpu/cpu_sddmm.h"

#include <algorithm>

#include "core/error.h"
#include "cpu/cpu_dense.h"

namespace sfac::cpu {
namespace {

// Below this many multiply-adds (nnz * K) a call runs on the calling thread: waking a team
// costs more than the work.
constexpr int64_t kParallelWork = int64_t{1} << 15;

// float32 dot product of two K-vectors. kLanes independent partial sums let the compiler emit
// vector code (SLP: lane l of every block goes to accumulator l, no reassociation needed) at
// whatever width the target has, with several independent add chains; a 4-lane block and a
// scalar loop take the rest of K.
constexpr int kLanes = 16;
static_assert(kLanes == 16, "the reduction at the end of dot() is written out for 16 lanes");

inline float dot(const float* a, const float* b, int64_t k) {
  float acc[kLanes] = {};
  int64_t t = 0;
  for (; t + kLanes <= k; t += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += a[t + l] * b[t + l];
  }
  for (; t + 4 <= k; t += 4) {
    for (int l = 0; l < 4; ++l) acc[l] += a[t + l] * b[t + l];
  }
  float tail = 0.0f;
  for (; t < k; ++t) tail += a[t] * b[t];
  // Written out so that the accumulators stay in registers (a loop over halving widths is
  // not unrolled and goes through the stack).
  float quad[4];
  for (int l = 0; l < 4; ++l) quad[l] = (acc[l] + acc[l + 4]) + (acc[l + 8] + acc[l + 12]);
  return ((quad[0] + quad[2]) + (quad[1] + quad[3])) + tail;
}

// B rows are fetched in the order of S's column indices, which no hardware prefetcher can
// predict: the row of the nonzero kPrefetchDistance ahead is requested in software.
constexpr int64_t kPrefetchDistance = 8;

inline void prefetch_row(const float* row, int64_t k) {
#if defined(__GNUC__)
  for (int64_t t = 0; t < k; t += 16) __builtin_prefetch(row + t);  // 64-byte lines
  __builtin_prefetch(row + k - 1);  // rows need not start on a line boundary
#else
  (void)row, (void)k;
#endif
}

// Everything a work item reads; P's values may be S's (in place): every nonzero reads S_ij
// before it writes P_ij, and no other nonzero touches that slot.
struct Operands {
  const float* a;
  const float* b;
  int64_t k;
  const int32_t* cols;
  int64_t nnz;
  const float* s;
  float* p;
  float alpha, beta;
};

// Nonzeros [e0, e1) of row i. With beta == 0 the old P is never read.
template <sfac_sddmm_mode Mode, bool Accumulate>
void row_span(const Operands& op, int64_t i, int64_t e0, int64_t e1) {
  const float* ai = op.a + i * op.k;  // stays in L1 across the row's nonzeros
  for (int64_t e = e0; e < e1; ++e) {
    const int64_t ahead = std::min(e + kPrefetchDistance, op.nnz - 1);  // may be past e1
    prefetch_row(op.b + int64_t{op.cols[ahead]} * op.k, op.k);
    const float d = dot(ai, op.b + int64_t{op.cols[e]} * op.k, op.k);
    const float f = Mode == SFAC_SDDMM_SCALED    ? d * op.s[e]
                    : Mode == SFAC_SDDMM_PATTERN ? d
                                                 : op.s[e] - d;
    op.p[e] = Accumulate ? op.alpha * f + op.beta * op.p[e] : op.alpha * f;
  }
}

// alpha == 0: A * B^T is not referenced (BLAS convention), P = beta * P.
void scale_span(const Operands& op, int64_t, int64_t e0, int64_t e1) {
  for (int64_t e = e0; e < e1; ++e) op.p[e] = op.beta == 0.0f ? 0.0f : op.beta * op.p[e];
}

using SpanFn = void (*)(const Operands&, int64_t, int64_t, int64_t);

template <sfac_sddmm_mode Mode>
SpanFn pick_span(bool accumulate) {
  return accumulate ? row_span<Mode, true> : row_span<Mode, false>;
}

SpanFn pick_span(sfac_sddmm_mode mode, float alpha, float beta) {
  if (alpha == 0.0f) return scale_span;
  const bool accumulate = beta != 0.0f;
  switch (mode) {
    case SFAC_SDDMM_SCALED:
      return pick_span<SFAC_SDDMM_SCALED>(accumulate);
    case SFAC_SDDMM_PATTERN:
      return pick_span<SFAC_SDDMM_PATTERN>(accumulate);
    case SFAC_SDDMM_RESIDUAL:
      return pick_span<SFAC_SDDMM_RESIDUAL>(accumulate);
  }
  fail(SFAC_ERR_INTERNAL, "cpu sddmm: unknown mode ", static_cast<int>(mode));
}

}  // namespace

std::unique_ptr<SddmmPlan> make_cpu_sddmm_plan(const CpuSparseMatrix& pattern, int64_t k,
                                               sfac_sddmm_algorithm algorithm, int num_threads) {
  SFAC_REQUIRE(algorithm != SFAC_SDDMM_ALG_TILED, SFAC_ERR_UNSUPPORTED,
               "the CPU backend has no TILED sddmm algorithm");
  SFAC_REQUIRE(algorithm != SFAC_SDDMM_ALG_CUSPARSE, SFAC_ERR_UNSUPPORTED,
               "the CPU backend has no CUSPARSE sddmm algorithm");
  const CsrPattern& pat = pattern.pattern();
  const std::vector<int64_t>& off = pat.offsets();
  const int64_t rows = pat.rows(), nnz = pat.nnz();
  const int64_t threads = std::max(num_threads, 1);

  int64_t max_len = 0;
  for (int64_t i = 0; i < rows; ++i) max_len = std::max(max_len, off[i + 1] - off[i]);
  const double mean = rows > 0 ? static_cast<double>(nnz) / static_cast<double>(rows) : 0.0;

  if (algorithm == SFAC_SDDMM_ALG_AUTO) {
    // Dynamic scheduling over rows balances well unless one row is a large share of a
    // thread's work; split nonzeros instead when the longest row is far above the mean or
    // more than 1/8 of a thread's share. Rows under 64 nonzeros never matter.
    const bool skewed = max_len >= 64 &&
                        (static_cast<double>(max_len) > 32.0 * mean || max_len * 8 * threads > nnz);
    algorithm = skewed ? SFAC_SDDMM_ALG_NNZ_SPLIT : SFAC_SDDMM_ALG_ROW_SPLIT;
  }

  int64_t row_chunk = 1;
  std::vector<CpuSddmmPlan::Range> ranges;
  if (algorithm == SFAC_SDDMM_ALG_ROW_SPLIT) {
    // About 4096 nonzeros per chunk, but at least ~16 chunks per thread.
    row_chunk = static_cast<int64_t>(4096.0 / std::max(mean, 1.0));
    row_chunk = std::clamp<int64_t>(row_chunk, 1, std::max<int64_t>(rows / (16 * threads), 1));
  } else if (nnz > 0) {
    // 16 equal ranges per thread (fewer for small matrices, >= 1024 nonzeros each); the row
    // holding each range's first nonzero is found by binary search in the row offsets.
    const int64_t n = std::clamp<int64_t>(nnz / 1024, 1, 16 * threads);
    const int64_t q = nnz / n, rem = nnz % n;
    ranges.reserve(static_cast<size_t>(n));
    for (int64_t c = 0; c < n; ++c) {
      const int64_t begin = c * q + std::min(c, rem);
      const int64_t end = begin + q + (c < rem ? 1 : 0);
      const int64_t row = std::upper_bound(off.begin(), off.end(), begin) - off.begin() - 1;
      ranges.push_back({begin, end, row});
    }
  }
  return std::make_unique<CpuSddmmPlan>(pattern.pattern_id(), k, algorithm, rows, nnz, row_chunk,
                                        std::move(ranges));
}

void cpu_sddmm(const SddmmCall& call, int num_threads) {
  const auto& a = dynamic_cast<const CpuDenseMatrix&>(call.a);
  const auto& b = dynamic_cast<const CpuDenseMatrix&>(call.b);
  const auto& s = dynamic_cast<const CpuSparseMatrix&>(call.s);
  auto& p = dynamic_cast<CpuSparseMatrix&>(call.p);
  const auto& plan = dynamic_cast<const CpuSddmmPlan&>(call.plan);
  const CsrPattern& pat = s.pattern();
  const int64_t rows = pat.rows(), nnz = pat.nnz();
  SFAC_REQUIRE(plan.rows() == rows && plan.nnz() == nnz, SFAC_ERR_INVALID_ARGUMENT,
               "plan was made for a ", plan.rows(), "-row pattern with ", plan.nnz(),
               " nonzeros, s has ", rows, " rows and ", nnz);
  if (nnz == 0) return;

  Operands op{};
  op.a = a.data();
  op.b = b.data();
  op.k = a.cols();
  op.cols = pat.indices().data();
  op.nnz = nnz;
  op.s = s.values().data();
  op.p = p.values().data();  // may be op.s (in place)
  op.alpha = call.alpha;
  op.beta = call.beta;
  const SpanFn span = pick_span(call.mode, call.alpha, call.beta);
  const int64_t* off = pat.offsets().data();
  const bool parallel = num_threads > 1 && nnz * a.cols() >= kParallelWork;

  if (plan.algorithm() == SFAC_SDDMM_ALG_ROW_SPLIT) {
#pragma omp parallel for num_threads(num_threads) schedule(dynamic, plan.row_chunk()) if (parallel)
    for (int64_t i = 0; i < rows; ++i) span(op, i, off[i], off[i + 1]);
  } else {
    const auto& ranges = plan.ranges();
    const auto n = static_cast<int64_t>(ranges.size());
#pragma omp parallel for num_threads(num_threads) schedule(dynamic, 1) if (parallel)
    for (int64_t c = 0; c < n; ++c) {
      // A range starts inside row ranges[c].row and may end inside a later row: a huge row is
      // shared by several ranges. The bounds keep every access in range even for a stale plan.
      int64_t e = ranges[c].begin;
      const int64_t end = std::min(ranges[c].end, nnz);
      for (int64_t i = std::max<int64_t>(ranges[c].row, 0); i < rows && e < end; ++i) {
        const int64_t stop = std::min(off[i + 1], end);
        if (stop > e) {
          span(op, i, e, stop);
          e = stop;
        }
      }
    }
  }
}

}  // namespace sfac::cpu
