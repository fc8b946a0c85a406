#include "cpu/cpu_sddmm.h"

#include "core/error.h"
#include "cpu/cpu_dense.h"

namespace sfac::cpu {

std::unique_ptr<SddmmPlan> make_cpu_sddmm_plan(const CpuSparseMatrix& pattern, int64_t k,
                                               sfac_sddmm_algorithm algorithm, int num_threads) {
  SFAC_REQUIRE(algorithm != SFAC_SDDMM_ALG_TILED, SFAC_ERR_UNSUPPORTED,
               "the CPU backend has no TILED sddmm algorithm");
  (void)num_threads;
  return std::make_unique<CpuSddmmPlan>(pattern.pattern_id(), k, SFAC_SDDMM_ALG_ROW_SPLIT,
                                        std::vector<int64_t>{});
}

void cpu_sddmm(const SddmmCall& call, int num_threads) {
  const auto& a = dynamic_cast<const CpuDenseMatrix&>(call.a);
  const auto& b = dynamic_cast<const CpuDenseMatrix&>(call.b);
  const auto& s = dynamic_cast<const CpuSparseMatrix&>(call.s);
  auto& p = dynamic_cast<CpuSparseMatrix&>(call.p);
  const CsrPattern& pat = s.pattern();
  const int64_t k = a.cols();
  const float* sv = s.values().data();
  float* pv = p.values().data();
#pragma omp parallel for num_threads(num_threads) schedule(dynamic, 64)
  for (int64_t i = 0; i < pat.rows(); ++i) {
    const float* ai = a.row(i);
    for (int64_t e = pat.offsets()[i]; e < pat.offsets()[i + 1]; ++e) {
      const float* bj = b.row(pat.indices()[e]);
      float d = 0.0f;
      for (int64_t t = 0; t < k; ++t) d += ai[t] * bj[t];
      float r = call.mode == SFAC_SDDMM_SCALED     ? d * sv[e]
                : call.mode == SFAC_SDDMM_RESIDUAL ? sv[e] - d
                                                   : d;
      pv[e] = call.alpha * r + (call.beta == 0.0f ? 0.0f : call.beta * pv[e]);
    }
  }
}

}  // namespace sfac::cpu
