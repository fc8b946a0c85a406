// SGD matrix factorization on the CUDA backend (cuMF_SGD's design, src/core/sgd_chunks.h for the
// sample order): the CPU trainer's objective, options, learning-rate schedule, rating scaling and
// starting factors (src/cpu/cpu_sgd.cpp), with factors stored as float32, float16 or bfloat16.
#pragma once

#include <cstdint>
#include <memory>

#include "core/trainer.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_sparse.h"

namespace sfac::cuda {

// `ratings`: a matrix of this backend's context, or one in host memory (a CPU context's).
std::unique_ptr<Trainer> make_sgd_trainer(CudaBackend& backend, const SparseMatrix& ratings,
                                          const TrainOptions& options, uint64_t seed);

}  // namespace sfac::cuda
