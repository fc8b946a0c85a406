#include "cpu/cpu_backend.h"

#include <omp.h>

#include "core/error.h"
#include "cpu/cpu_als.h"
#include "cpu/cpu_dense.h"
#include "cpu/cpu_sddmm.h"
#include "cpu/cpu_sgd.h"
#include "cpu/cpu_sparse.h"

namespace sfac::cpu {

CpuBackend::CpuBackend(int num_threads)
    : num_threads_(num_threads > 0 ? num_threads : omp_get_max_threads()),
      name_(cat("CPU (", num_threads_, num_threads_ == 1 ? " thread)" : " threads)")) {}

std::unique_ptr<SparseMatrix> CpuBackend::make_sparse(HostCsr csr) {
  auto pattern = std::make_shared<const CsrPattern>(csr.rows, csr.cols, std::move(csr.offsets),
                                                    std::move(csr.indices));
  return std::make_unique<CpuSparseMatrix>(shared_from_this(), std::move(pattern),
                                           std::move(csr.values));
}

std::unique_ptr<DenseMatrix> CpuBackend::make_dense(int64_t rows, int64_t cols, sfac_dtype dtype,
                                                    const float* data) {
  SFAC_REQUIRE(dtype == SFAC_DTYPE_FLOAT32, SFAC_ERR_UNSUPPORTED,
               "the CPU backend stores dense matrices as float32 only (dtype ",
               static_cast<int>(dtype), " requested)");
  return std::make_unique<CpuDenseMatrix>(shared_from_this(), rows, cols, data);
}

std::unique_ptr<SddmmPlan> CpuBackend::make_sddmm_plan(const SparseMatrix& pattern, int64_t k,
                                                       sfac_sddmm_algorithm algorithm) {
  return make_cpu_sddmm_plan(dynamic_cast<const CpuSparseMatrix&>(pattern), k, algorithm,
                             num_threads_);
}

void CpuBackend::sddmm(const SddmmCall& call) { cpu_sddmm(call, num_threads_); }

std::unique_ptr<Trainer> CpuBackend::make_trainer(const SparseMatrix& ratings,
                                                  const TrainOptions& options, uint64_t seed) {
  const auto& cpu_ratings = dynamic_cast<const CpuSparseMatrix&>(ratings);
  if (options.algorithm == SFAC_ALGO_SGD) {
    return make_sgd_trainer(cpu_ratings, options, seed, num_threads_);
  }
  return make_als_trainer(cpu_ratings, options, seed, num_threads_);
}

}  // namespace sfac::cpu
