// Alternating least squares on the CUDA backend: explicit feedback (biases, plain or weighted
// lambda) and implicit feedback (Hu-Koren-Volinsky with Y^T Y from cuBLAS, Gates et al.), each
// with batched Cholesky or conjugate-gradient row solves; the same objective, options and
// starting point as the CPU trainer (src/cpu/cpu_als.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/trainer.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_sparse.h"

namespace sfac::cuda {

std::unique_ptr<Trainer> make_als_trainer(CudaBackend& backend, const CudaSparseMatrix& ratings,
                                          const TrainOptions& options, uint64_t seed);

// The order in which the CG kernel takes rows (kernels::AlsCgRows): rows with more than
// kernels::kAlsCgLongRow ratings by decreasing rating count (ties by index), then the others in
// order; *long_count receives how many are long. `offsets`: the rows' rows + 1 host offsets.
std::vector<int32_t> als_cg_row_order(const int64_t* offsets, int64_t rows, int64_t* long_count);

}  // namespace sfac::cuda
