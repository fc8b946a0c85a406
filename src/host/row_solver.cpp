#include "host/row_solver.h"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>

#include "host/simd_kernels.h"

namespace sfac::host {

RowSolver::RowSolver(int64_t d) : d_(d), a_(d * d), b_(d), r_(d), p_(d), ap_(d) {}

namespace {

// How many nonzeros ahead the passes prefetch the other side's factor row (a random row of a
// matrix larger than the caches).
constexpr int64_t kPrefetchAhead = 4;

// The per-nonzero passes over the row's factor rows: the hot loops of ALS. Each is compiled per
// ISA (SFAC_SIMD_CLONES) with fully unrolled kernels for the common ranks.

template <int64_t K>
SFAC_ALWAYS_INLINE void gather_impl(const RowSystem& sys, float* gathered, float* b) {
  const int64_t d = simd::length<K>(sys.d);
  std::fill(b, b + d, 0.0f);
  for (int64_t j = 0; j < sys.count; ++j) {
    if (j + kPrefetchAhead < sys.count) {
      const float* next = sys.factors + int64_t{sys.cols[j + kPrefetchAhead]} * sys.stride;
      for (int64_t t = 0; t < d; t += 16) __builtin_prefetch(next + t);
    }
    const float* y = sys.factors + int64_t{sys.cols[j]} * sys.stride;
    const float s = sys.weights ? std::sqrt(sys.weights[j]) : 1.0f;
    float* g = gathered + j * d;
    for (int64_t t = 0; t < d; ++t) g[t] = s * y[t];
    simd::axpy<K>(sys.targets[j], y, b, d);
  }
}

// gathered row j = sqrt(w_j) y_j (for one syrk) and b = sum_j c_j y_j, in one pass.
SFAC_SIMD_CLONES void gather(const RowSystem& sys, float* gathered, float* b) {
  switch (sys.d) {
    case 32:
      return gather_impl<32>(sys, gathered, b);
    case 64:
      return gather_impl<64>(sys, gathered, b);
    case 128:
      return gather_impl<128>(sys, gathered, b);
    default:
      return gather_impl<0>(sys, gathered, b);
  }
}

// Adds to out, over the row's nonzeros, sum_j (c_j - w_j y_j.v) y_j when `residual` (the sparse
// part of b - A v, in one pass) or sum_j w_j (y_j.v) y_j otherwise (the sparse part of A v).
template <int64_t K>
SFAC_ALWAYS_INLINE void sparse_pass_impl(const RowSystem& sys, const float* v, bool residual,
                                         float* out) {
  const int64_t d = simd::length<K>(sys.d);
  for (int64_t j = 0; j < sys.count; ++j) {
    if (j + kPrefetchAhead < sys.count) {
      const float* next = sys.factors + int64_t{sys.cols[j + kPrefetchAhead]} * sys.stride;
      for (int64_t t = 0; t < d; t += 16) __builtin_prefetch(next + t);
    }
    const float* y = sys.factors + int64_t{sys.cols[j]} * sys.stride;
    const float w = sys.weights ? sys.weights[j] : 1.0f;
    const float wyv = w * simd::dot<K>(y, v, d);
    simd::axpy<K>(residual ? sys.targets[j] - wyv : wyv, y, out, d);
  }
}

SFAC_SIMD_CLONES void sparse_pass(const RowSystem& sys, const float* v, bool residual, float* out) {
  switch (sys.d) {
    case 32:
      return sparse_pass_impl<32>(sys, v, residual, out);
    case 64:
      return sparse_pass_impl<64>(sys, v, residual, out);
    case 128:
      return sparse_pass_impl<128>(sys, v, residual, out);
    default:
      return sparse_pass_impl<0>(sys, v, residual, out);
  }
}

}  // namespace

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
  gather(sys, gathered_.data(), x);
  assemble(sys, sys.reg);
  // The row-major upper triangle that syrk wrote is the column-major lower triangle: the _work
  // entry points on it skip LAPACKE's transposed copy and its NaN scan.
  if (LAPACKE_spotrf_work(LAPACK_COL_MAJOR, 'L', d, a_.data(), d) != 0) {
    // Not positive definite (no regularization and fewer ratings than d): solve a minimally
    // regularized system instead of failing the whole sweep.
    float trace = 0.0f;
    assemble(sys, 0.0f);
    for (int64_t t = 0; t < d_; ++t) trace += a_[t * d_ + t];
    assemble(sys, sys.reg + 1e-6f * std::max(trace / static_cast<float>(d_), 1.0f));
    if (LAPACKE_spotrf_work(LAPACK_COL_MAJOR, 'L', d, a_.data(), d) != 0) {
      std::fill(x, x + d_, 0.0f);
      return;
    }
  }
  LAPACKE_spotrs_work(LAPACK_COL_MAJOR, 'L', d, 1, a_.data(), d, x, d);
}

// out = (G + reg I) v, the dense part of A v.
void RowSolver::dense_part(const RowSystem& sys, const float* v, float* out) {
  if (sys.gram) {
    cblas_ssymv(CblasRowMajor, CblasUpper, static_cast<int>(d_), 1.0f, sys.gram,
                static_cast<int>(d_), v, 1, 0.0f, out, 1);
  } else {
    std::fill(out, out + d_, 0.0f);
  }
  for (int64_t t = 0; t < d_; ++t) out[t] += sys.reg * v[t];
}

void RowSolver::solve_cg(const RowSystem& sys, float* x, int64_t cg_steps) {
  float* r = r_.data();
  float* p = p_.data();
  float* ap = ap_.data();
  // r = b - A x in one pass over the nonzeros: -(G + reg I) x + sum_j (c_j - w_j y_j.x) y_j.
  dense_part(sys, x, r);
  for (int64_t t = 0; t < d_; ++t) r[t] = -r[t];
  sparse_pass(sys, x, true, r);
  float rs_old = 0.0f;
  for (int64_t t = 0; t < d_; ++t) {
    p[t] = r[t];
    rs_old += r[t] * r[t];
  }
  for (int64_t step = 0; step < cg_steps && rs_old > 1e-20f; ++step) {
    dense_part(sys, p, ap);
    sparse_pass(sys, p, false, ap);
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

}  // namespace sfac::host
