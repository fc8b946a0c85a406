#include "cpu/row_solver.h"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>

namespace sfac::cpu {

RowSolver::RowSolver(int64_t d) : d_(d), a_(d * d), b_(d), r_(d), p_(d), ap_(d) {}

void RowSolver::right_hand_side(const RowSystem& sys, float* b) {
  std::fill(b, b + d_, 0.0f);
  for (int64_t j = 0; j < sys.count; ++j) {
    const float* y = sys.factors + int64_t{sys.cols[j]} * sys.stride;
    const float c = sys.targets[j];
    for (int64_t t = 0; t < d_; ++t) b[t] += c * y[t];
  }
}

void RowSolver::assemble(const RowSystem& sys, float reg) {
  float* a = a_.data();
  if (sys.gram) {
    std::copy(sys.gram, sys.gram + d_ * d_, a);
  } else {
    std::fill(a, a + d_ * d_, 0.0f);
  }
  if (sys.count > 0) {
    cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, static_cast<int>(d_),
                static_cast<int>(sys.count), 1.0f, gathered_.data(), static_cast<int>(d_), 1.0f, a,
                static_cast<int>(d_));
  }
  for (int64_t t = 0; t < d_; ++t) a[t * d_ + t] += reg;
}

void RowSolver::solve_cholesky(const RowSystem& sys, float* x) {
  const auto d = static_cast<int>(d_);
  // Gather sqrt(w_j) y_j into a count x d panel: one syrk then adds every outer product
  // (Level-3 BLAS, as in Gates et al.'s fastest CPU variant).
  gathered_.resize(static_cast<size_t>(sys.count * d_));
  for (int64_t j = 0; j < sys.count; ++j) {
    const float* y = sys.factors + int64_t{sys.cols[j]} * sys.stride;
    const float s = sys.weights ? std::sqrt(sys.weights[j]) : 1.0f;
    float* g = gathered_.data() + j * d_;
    for (int64_t t = 0; t < d_; ++t) g[t] = s * y[t];
  }
  right_hand_side(sys, x);
  assemble(sys, sys.reg);
  if (LAPACKE_spotrf(LAPACK_ROW_MAJOR, 'U', d, a_.data(), d) != 0) {
    // Not positive definite (no regularization and fewer ratings than d): solve a minimally
    // regularized system instead of failing the whole sweep.
    float trace = 0.0f;
    assemble(sys, 0.0f);
    for (int64_t t = 0; t < d_; ++t) trace += a_[t * d_ + t];
    assemble(sys, sys.reg + 1e-6f * std::max(trace / static_cast<float>(d_), 1.0f));
    if (LAPACKE_spotrf(LAPACK_ROW_MAJOR, 'U', d, a_.data(), d) != 0) {
      std::fill(x, x + d_, 0.0f);
      return;
    }
  }
  LAPACKE_spotrs(LAPACK_ROW_MAJOR, 'U', d, 1, a_.data(), d, x, 1);
}

void RowSolver::multiply(const RowSystem& sys, const float* v, float* out) {
  if (sys.gram) {
    cblas_ssymv(CblasRowMajor, CblasUpper, static_cast<int>(d_), 1.0f, sys.gram,
                static_cast<int>(d_), v, 1, 0.0f, out, 1);
  } else {
    std::fill(out, out + d_, 0.0f);
  }
  for (int64_t t = 0; t < d_; ++t) out[t] += sys.reg * v[t];
  for (int64_t j = 0; j < sys.count; ++j) {
    const float* y = sys.factors + int64_t{sys.cols[j]} * sys.stride;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t t = 0; t < d_; ++t) dot += y[t] * v[t];
    const float s = (sys.weights ? sys.weights[j] : 1.0f) * dot;
    for (int64_t t = 0; t < d_; ++t) out[t] += s * y[t];
  }
}

void RowSolver::solve_cg(const RowSystem& sys, float* x, int64_t cg_steps) {
  float* r = r_.data();
  float* p = p_.data();
  float* ap = ap_.data();
  right_hand_side(sys, b_.data());
  multiply(sys, x, ap);
  float rs_old = 0.0f;
  for (int64_t t = 0; t < d_; ++t) {
    r[t] = b_[t] - ap[t];
    p[t] = r[t];
    rs_old += r[t] * r[t];
  }
  for (int64_t step = 0; step < cg_steps && rs_old > 1e-20f; ++step) {
    multiply(sys, p, ap);
    float p_ap = 0.0f;
    for (int64_t t = 0; t < d_; ++t) p_ap += p[t] * ap[t];
    if (!(p_ap > 0.0f)) break;  // singular direction: keep what we have
    const float alpha = rs_old / p_ap;
    float rs_new = 0.0f;
    for (int64_t t = 0; t < d_; ++t) {
      x[t] += alpha * p[t];
      r[t] -= alpha * ap[t];
      rs_new += r[t] * r[t];
    }
    const float beta = rs_new / rs_old;
    for (int64_t t = 0; t < d_; ++t) p[t] = r[t] + beta * p[t];
    rs_old = rs_new;
  }
}

}  // namespace sfac::cpu
