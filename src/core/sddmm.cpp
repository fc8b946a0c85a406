#include "core/sddmm.h"

#include <cmath>

#include "core/error.h"

namespace sfac {
namespace {

void require_backend(const Backend& context, const Backend& object, const char* name) {
  SFAC_REQUIRE(context.compatible_with(object), SFAC_ERR_INVALID_ARGUMENT, name,
               " belongs to a context with another backend or device");
}

bool known_algorithm(sfac_sddmm_algorithm algorithm) {
  switch (algorithm) {
    case SFAC_SDDMM_ALG_AUTO:
    case SFAC_SDDMM_ALG_ROW_SPLIT:
    case SFAC_SDDMM_ALG_NNZ_SPLIT:
    case SFAC_SDDMM_ALG_TILED:
    case SFAC_SDDMM_ALG_CUSPARSE:
      return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<SddmmPlan> make_sddmm_plan(Backend& backend, const SparseMatrix& pattern, int64_t k,
                                           sfac_sddmm_algorithm algorithm) {
  require_backend(backend, pattern.backend(), "pattern");
  SFAC_REQUIRE(k >= 1, SFAC_ERR_INVALID_ARGUMENT, "k = ", k, " must be >= 1");
  SFAC_REQUIRE(known_algorithm(algorithm), SFAC_ERR_INVALID_ARGUMENT, "unknown sddmm algorithm ",
               static_cast<int>(algorithm));
  return backend.make_sddmm_plan(pattern, k, algorithm);
}

void sddmm(Backend& backend, sfac_sddmm_mode mode, float alpha, const DenseMatrix& a,
           const DenseMatrix& b, const SparseMatrix& s, float beta, SparseMatrix& p,
           const SddmmPlan* plan) {
  SFAC_REQUIRE(
      mode == SFAC_SDDMM_SCALED || mode == SFAC_SDDMM_PATTERN || mode == SFAC_SDDMM_RESIDUAL,
      SFAC_ERR_INVALID_ARGUMENT, "unknown sddmm mode ", static_cast<int>(mode));
  SFAC_REQUIRE(std::isfinite(alpha), SFAC_ERR_INVALID_VALUE, "alpha = ", alpha, " is not finite");
  SFAC_REQUIRE(std::isfinite(beta), SFAC_ERR_INVALID_VALUE, "beta = ", beta, " is not finite");
  require_backend(backend, a.backend(), "a");
  require_backend(backend, b.backend(), "b");
  require_backend(backend, s.backend(), "s");
  require_backend(backend, p.backend(), "p");
  SFAC_REQUIRE(a.cols() == b.cols(), SFAC_ERR_SHAPE_MISMATCH, "a is ", a.rows(), " x ", a.cols(),
               " and b is ", b.rows(), " x ", b.cols(), ": both need the same number of columns K");
  SFAC_REQUIRE(a.rows() == s.rows(), SFAC_ERR_SHAPE_MISMATCH, "a has ", a.rows(),
               " rows but s has ", s.rows());
  SFAC_REQUIRE(b.rows() == s.cols(), SFAC_ERR_SHAPE_MISMATCH, "b has ", b.rows(),
               " rows but s has ", s.cols(), " columns");
  SFAC_REQUIRE(&p == &s || p.same_pattern(s), SFAC_ERR_SHAPE_MISMATCH, "p (", p.rows(), " x ",
               p.cols(), ", ", p.nnz(), " nonzeros) does not have the ", "sparsity pattern of s (",
               s.rows(), " x ", s.cols(), ", ", s.nnz(), " nonzeros)");
  std::unique_ptr<SddmmPlan> own_plan;
  if (plan == nullptr) {
    own_plan = backend.make_sddmm_plan(s, a.cols(), SFAC_SDDMM_ALG_AUTO);
    plan = own_plan.get();
  } else {
    SFAC_REQUIRE(plan->k() == a.cols(), SFAC_ERR_SHAPE_MISMATCH,
                 "plan was made for k = ", plan->k(), " but a and b have k = ", a.cols());
    SFAC_REQUIRE(plan->pattern_id() == s.pattern_id(), SFAC_ERR_INVALID_ARGUMENT,
                 "plan was made for another sparsity pattern than s's");
  }
  backend.sddmm(SddmmCall{mode, alpha, beta, a, b, s, p, *plan});
}

}  // namespace sfac
