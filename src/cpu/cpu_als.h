// Alternating least squares on the CPU: explicit feedback (optionally with biases, plain or
// weighted-lambda regularization) and implicit feedback (Hu-Koren-Volinsky with the Y^T Y
// trick of Gates et al.), each with a Cholesky or conjugate-gradient row solver.
#pragma once

#include <memory>
#include <vector>

#include "core/trainer.h"
#include "cpu/cpu_sparse.h"

namespace sfac::cpu {

std::unique_ptr<Trainer> make_als_trainer(const CpuSparseMatrix& ratings,
                                          const TrainOptions& options, uint64_t seed,
                                          int num_threads);

}  // namespace sfac::cpu
