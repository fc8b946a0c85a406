// The CPU backend: host memory, OpenMP threads, OpenBLAS/LAPACK.
#pragma once

#include <string>

#include "core/backend.h"

namespace sfac::cpu {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int num_threads);

  sfac_backend kind() const override { return SFAC_BACKEND_CPU; }
  int device() const override { return 0; }
  const std::string& device_name() const override { return name_; }
  int num_threads() const override { return num_threads_; }

  std::unique_ptr<SparseMatrix> make_sparse(HostCsr csr) override;
  std::unique_ptr<DenseMatrix> make_dense(int64_t rows, int64_t cols, sfac_dtype dtype,
                                          const float* data) override;
  std::unique_ptr<SddmmPlan> make_sddmm_plan(const SparseMatrix& pattern, int64_t k,
                                             sfac_sddmm_algorithm algorithm) override;
  void sddmm(const SddmmCall& call) override;
  std::unique_ptr<Trainer> make_trainer(const SparseMatrix& ratings, const TrainOptions& options,
                                        uint64_t seed) override;
  void synchronize() override {}

 private:
  int num_threads_;
  std::string name_;
};

}  // namespace sfac::cpu
