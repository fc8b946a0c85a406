// Alternating least squares on the CUDA backend: explicit feedback (biases, plain or weighted
// lambda) and implicit feedback (Hu-Koren-Volinsky with Y^T Y from cuBLAS, Gates et al.), each
// with batched Cholesky or conjugate-gradient row solves; the same objective, options and
// starting point as the CPU trainer (src/cpu/cpu_als.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "core/trainer.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_sparse.h"

namespace sfac::cuda {

std::unique_ptr<Trainer> make_als_trainer(CudaBackend& backend, const CudaSparseMatrix& ratings,
                                          const TrainOptions& options, uint64_t seed);

}  // namespace sfac::cuda
