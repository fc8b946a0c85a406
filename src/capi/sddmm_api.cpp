#include "capi/guard.h"
#include "capi/handles.h"
#include "core/sddmm.h"

using sfac::capi::checked;
using sfac::capi::require_pointer;

extern "C" {

sfac_status sfac_sddmm_plan_create(sfac_context* ctx, const sfac_sparse* pattern, int64_t k,
                                   sfac_sddmm_algorithm algorithm, sfac_sddmm_plan** out) {
  SFAC_API_BEGIN
  auto& backend = *checked(ctx, "ctx").impl.backend;
  const auto& s = *checked(pattern, "pattern").impl;
  require_pointer(out, "out");
  auto handle = std::make_unique<sfac_sddmm_plan>();
  handle->impl = sfac::make_sddmm_plan(backend, s, k, algorithm);
  *out = handle.release();
  SFAC_API_END
}

sfac_status sfac_sddmm_plan_destroy(sfac_sddmm_plan* plan) {
  SFAC_API_BEGIN
  sfac::capi::destroy(plan, "plan");
  SFAC_API_END
}

sfac_status sfac_sddmm_plan_get_algorithm(const sfac_sddmm_plan* plan, sfac_sddmm_algorithm* out) {
  SFAC_API_BEGIN
  const auto& p = *checked(plan, "plan").impl;
  require_pointer(out, "out");
  *out = p.algorithm();
  SFAC_API_END
}

sfac_status sfac_sddmm(sfac_context* ctx, sfac_sddmm_mode mode, float alpha, const sfac_dense* a,
                       const sfac_dense* b, const sfac_sparse* s, float beta, sfac_sparse* p,
                       const sfac_sddmm_plan* plan) {
  SFAC_API_BEGIN
  auto& backend = *checked(ctx, "ctx").impl.backend;
  const auto& a_m = *checked(a, "a").impl;
  const auto& b_m = *checked(b, "b").impl;
  const auto& s_m = *checked(s, "s").impl;
  auto& p_m = *checked(p, "p").impl;
  const sfac::SddmmPlan* plan_impl = plan ? checked(plan, "plan").impl.get() : nullptr;
  sfac::sddmm(backend, mode, alpha, a_m, b_m, s_m, beta, p_m, plan_impl);
  SFAC_API_END
}

}  // extern "C"
