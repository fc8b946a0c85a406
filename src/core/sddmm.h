// SDDMM front end: validates operands and dispatches to the backend.
#pragma once

#include <memory>

#include "core/backend.h"

namespace sfac {

std::unique_ptr<SddmmPlan> make_sddmm_plan(Backend& backend, const SparseMatrix& pattern, int64_t k,
                                           sfac_sddmm_algorithm algorithm);

// plan may be null: a plan is then made for this call.
void sddmm(Backend& backend, sfac_sddmm_mode mode, float alpha, const DenseMatrix& a,
           const DenseMatrix& b, const SparseMatrix& s, float beta, SparseMatrix& p,
           const SddmmPlan* plan);

}  // namespace sfac
