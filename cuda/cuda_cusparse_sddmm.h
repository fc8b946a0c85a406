// SDDMM by cusparseSDDMM (the CUDA toolkit's): the CUSPARSE algorithm, which AUTO also picks
// where the library's own kernels are predicted to lose to it (see make_cuda_sddmm_plan).
#pragma once

#include <cusparse.h>

#include <cstdint>
#include <memory>
#include <mutex>

#include "core/backend.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_sparse.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels/sddmm/sddmm_kernels.cuh"

namespace sfac::cuda {

// A CUSPARSE plan: the pattern as cuSPARSE takes it (32-bit row offsets beside the pattern's
// column indices, which it keeps alive) and its cusparseSDDMM buffer, made active by
// cusparseSDDMM_preprocess on the first call. cuSPARSE computes P = alpha A B^T + beta P at the
// pattern (PATTERN mode); the SCALED and RESIDUAL modes take its dot products into a scratch
// array and finish with one elementwise pass. cuSPARSE serves float32 factors; factors of other
// storage types run `others`, the plan that AUTO would have made without cuSPARSE.
class CusparseSddmmPlan final : public SddmmPlan {
 public:
  // `pattern`: a matrix of the CUDA backend `backend` with fewer than 2^31 nonzeros.
  CusparseSddmmPlan(std::shared_ptr<Backend> backend, const CudaSparseMatrix& pattern, int64_t k,
                    std::unique_ptr<SddmmPlan> others);
  ~CusparseSddmmPlan() override;

  const SddmmPlan& others() const { return *others_; }

  // The call on float32 factors, whose rows are `stride` floats apart (`args` as the library's
  // kernels take them); queued on `stream`.
  void run(const CudaBackend& backend, const kernels::SddmmArgs& args, int64_t b_rows,
           cudaStream_t stream) const;

 private:
  // Declared first, destroyed last: the buffers are freed on the backend's stream.
  std::shared_ptr<Backend> backend_;
  std::shared_ptr<const CudaPattern> pattern_;
  std::unique_ptr<SddmmPlan> others_;
  DeviceBuffer<int32_t> offsets32_;
  // cuSPARSE's buffer is active for one sparse descriptor, whose value pointer each call points
  // at its output: calls on one plan are serialized.
  mutable std::mutex mutex_;
  mutable cusparseSpMatDescr_t matrix_ = nullptr;
  mutable cusparseDnMatDescr_t a_ = nullptr, b_ = nullptr;
  mutable DeviceBuffer<uint8_t> buffer_;
  mutable bool preprocessed_ = false;
};

// Whether a pattern can be given to cuSPARSE (32-bit offsets: fewer than 2^31 nonzeros).
bool cusparse_takes(const CudaSparseMatrix& pattern);

}  // namespace sfac::cuda
