// CPU SDDMM: OpenMP over rows or balanced nonzero ranges, vectorized inner products.
#pragma once

#include <memory>
#include <vector>

#include "core/backend.h"
#include "cpu/cpu_sparse.h"

namespace sfac::cpu {

// The preprocessing a repeated pattern reuses: the row ranges each work item covers.
class CpuSddmmPlan final : public SddmmPlan {
 public:
  CpuSddmmPlan(const void* pattern_id, int64_t k, sfac_sddmm_algorithm algorithm,
               std::vector<int64_t> nnz_bounds)
      : SddmmPlan(pattern_id, k, algorithm), nnz_bounds_(std::move(nnz_bounds)) {}

  // For NNZ_SPLIT: nonzero ranges [bounds[t], bounds[t+1]) of roughly equal size.
  const std::vector<int64_t>& nnz_bounds() const { return nnz_bounds_; }

 private:
  std::vector<int64_t> nnz_bounds_;
};

// ROW_SPLIT and NNZ_SPLIT are served; AUTO picks by row-length skew; TILED is unsupported.
std::unique_ptr<SddmmPlan> make_cpu_sddmm_plan(const CpuSparseMatrix& pattern, int64_t k,
                                               sfac_sddmm_algorithm algorithm, int num_threads);

// The call has been validated (shapes, patterns, plan); operands are CPU objects.
void cpu_sddmm(const SddmmCall& call, int num_threads);

}  // namespace sfac::cpu
