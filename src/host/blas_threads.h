// src/host/: host math shared by the core and the CPU backend.
// OpenBLAS keeps one process-wide thread count. The ALS drivers follow Gates et al.: large BLAS
// calls (Y^T Y) run multi-threaded, the per-row solves inside our OpenMP loop single-threaded.
#pragma once

#include <cblas.h>

namespace sfac::host {

class ScopedBlasThreads {
 public:
  explicit ScopedBlasThreads(int threads) : previous_(openblas_get_num_threads()) {
    openblas_set_num_threads(threads);
  }
  ~ScopedBlasThreads() { openblas_set_num_threads(previous_); }
  ScopedBlasThreads(const ScopedBlasThreads&) = delete;
  ScopedBlasThreads& operator=(const ScopedBlasThreads&) = delete;

 private:
  int previous_;
};

}  // namespace sfac::host
