// src/host/: host math shared by the core and the CPU backend.
// Solves the small regularized normal equations of ALS, one row at a time:
//   (G + sum_j w_j y_j y_j^T + reg I) x = sum_j c_j y_j
// G is a shared dense d x d matrix (Y^T Y for implicit feedback, zero for explicit), the sums
// run over the row's nonzeros. Explicit ALS: w = 1, c = rating. Implicit: w = alpha r,
// c = 1 + alpha r. Instances hold per-thread scratch; one per OpenMP thread.
#pragma once

#include <cstdint>
#include <vector>

#include "sparsefac/sparsefac.h"

namespace sfac::host {

struct RowSystem {
  const float* gram = nullptr;     // d x d row-major (upper triangle used), or null for zero
  const float* factors = nullptr;  // the fixed side: n x stride, first d columns used
  int64_t stride = 0;
  int64_t d = 0;
  const int32_t* cols = nullptr;   // the row's nonzeros
  const float* weights = nullptr;  // w_j per nonzero (null = all 1)
  const float* targets = nullptr;  // c_j per nonzero
  int64_t count = 0;
  float reg = 0.0f;
};

class RowSolver {
 public:
  explicit RowSolver(int64_t d);
  // Exact solve by Cholesky (LAPACK potrf/potrs). x: d entries, written.
  void solve_cholesky(const RowSystem& sys, float* x);
  // cg_steps of conjugate gradient from the current x (warm start), never forming the matrix.
  void solve_cg(const RowSystem& sys, float* x, int64_t cg_steps);

 private:
  void assemble(const RowSystem& sys, float reg);
  void dense_part(const RowSystem& sys, const float* v, float* out);

  int64_t d_;
  std::vector<float> a_, b_, gathered_, r_, p_, ap_;
};

}  // namespace sfac::host
