// CPU SDDMM: OpenMP over rows or balanced nonzero ranges, vectorized inner products.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "cpu/cpu_sparse.h"

namespace sfac::cpu {

// What a repeated pattern reuses: the resolved algorithm and, for NNZ_SPLIT, the work items.
class CpuSddmmPlan final : public SddmmPlan {
 public:
  // NNZ_SPLIT work item: nonzeros [begin, end), the first of which lies in row `row`.
  struct Range {
    int64_t begin, end, row;
  };

  CpuSddmmPlan(const void* pattern_id, int64_t k, sfac_sddmm_algorithm algorithm, int64_t rows,
               int64_t nnz, int64_t row_chunk, std::vector<Range> ranges)
      : SddmmPlan(pattern_id, k, algorithm),
        rows_(rows),
        nnz_(nnz),
        row_chunk_(row_chunk),
        ranges_(std::move(ranges)) {}

  // Shape of the analysed pattern (a cheap consistency check at call time).
  int64_t rows() const { return rows_; }
  int64_t nnz() const { return nnz_; }
  // ROW_SPLIT: rows per dynamically scheduled chunk.
  int64_t row_chunk() const { return row_chunk_; }
  // NNZ_SPLIT: equal-size nonzero ranges covering [0, nnz) in order (empty when nnz == 0).
  const std::vector<Range>& ranges() const { return ranges_; }

 private:
  int64_t rows_, nnz_, row_chunk_;
  std::vector<Range> ranges_;
};

// ROW_SPLIT and NNZ_SPLIT are served; AUTO picks NNZ_SPLIT when row lengths are skewed (a row
// far longer than the mean, or a sizeable share of all nonzeros), else ROW_SPLIT; TILED is
// unsupported.
std::unique_ptr<SddmmPlan> make_cpu_sddmm_plan(const CpuSparseMatrix& pattern, int64_t k,
                                               sfac_sddmm_algorithm algorithm, int num_threads);

// The call has been validated (shapes, patterns, plan); operands are CPU objects.
void cpu_sddmm(const SddmmCall& call, int num_threads);

}  // namespace sfac::cpu
