// Stochastic gradient descent matrix factorization on the CPU (LIBMF / cuMF_SGD semantics) over
// FPSGD's block grid: threads take conflict-free blocks from a scheduler, or run the grid's
// diagonals one after the other when deterministic.
#pragma once

#include <memory>

#include "core/trainer.h"
#include "cpu/cpu_sparse.h"

namespace sfac::cpu {

std::unique_ptr<Trainer> make_sgd_trainer(const CpuSparseMatrix& ratings,
                                          const TrainOptions& options, uint64_t seed,
                                          int num_threads);

}  // namespace sfac::cpu
