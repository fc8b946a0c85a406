// What a CUDA context lends its algorithms beyond memory and streams: library handles (cuBLAS,
// cuSPARSE), created on first use, bound to the stream of the call, with their workspace from the
// library's device pool. One per context; calls on it are serialized.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <functional>
#include <mutex>

#include "core/error.h"
#include "cuda/device_buffer.h"

namespace sfac::cuda {

// Failures of cuBLAS calls become sfac::Error: SFAC_ERR_OUT_OF_MEMORY for allocation
// failures, SFAC_ERR_DEVICE otherwise, naming the call.
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file,
                                     int line);

#define SFAC_CUBLAS_TRY(call)                                                        \
  do {                                                                               \
    const cublasStatus_t sfac_cublas_status_ = (call);                               \
    if (sfac_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                              \
      ::sfac::cuda::throw_cublas_error(sfac_cublas_status_, #call, __FILE__, __LINE__); \
    }                                                                                \
  } while (0)

// The same for cuSPARSE calls.
[[noreturn]] void throw_cusparse_error(cusparseStatus_t status, const char* call, const char* file,
                                       int line);

#define SFAC_CUSPARSE_TRY(call)                                                             \
  do {                                                                                      \
    const cusparseStatus_t sfac_cusparse_status_ = (call);                                  \
    if (sfac_cusparse_status_ != CUSPARSE_STATUS_SUCCESS) {                                 \
      ::sfac::cuda::throw_cusparse_error(sfac_cusparse_status_, #call, __FILE__, __LINE__); \
    }                                                                                       \
  } while (0)

// Orders the work of one library handle across the streams it is bound to in turn: work queued
// on a new stream waits for the work queued on the one before, so buffers the handle (or its
// callers) keep are never in use on two streams at once.
class StreamHandOff {
 public:
  StreamHandOff() = default;
  ~StreamHandOff();
  StreamHandOff(const StreamHandOff&) = delete;
  StreamHandOff& operator=(const StreamHandOff&) = delete;

  // Makes `stream` wait for the last stream's work where it is another one (the event is made
  // on first use).
  void enter(cudaStream_t stream);
  // Marks the work queued on `stream` so far as the last.
  void leave(cudaStream_t stream);
  // Waits on the host for the last work (nothing where there was none).
  void synchronize();

 private:
  cudaEvent_t done_ = nullptr;
  cudaStream_t last_ = nullptr;  // where `recorded_` (0 is the legacy default stream)
  bool recorded_ = false;
};

class CudaResources {
 public:
  // `own_stream`: the context's own stream, on which the workspace is allocated and freed.
  explicit CudaResources(cudaStream_t own_stream) : own_stream_(own_stream) {}
  ~CudaResources();
  CudaResources(const CudaResources&) = delete;
  CudaResources& operator=(const CudaResources&) = delete;

  // Runs f(handle) with the context's cuBLAS handle bound to `stream` (the caller's device must
  // be current). The handle computes in plain fp32 (no TF32), so results match the CPU's.
  void with_blas(cudaStream_t stream, const std::function<void(cublasHandle_t)>& f);
  // Runs f(handle) with the context's cuSPARSE handle bound to `stream`. Work that cuSPARSE
  // calls queue on a stream waits for the cuSPARSE work queued on the previous stream, so the
  // buffers its callers keep for it (sddmm plans) are never in use on two streams at once.
  void with_sparse(cudaStream_t stream, const std::function<void(cusparseHandle_t)>& f);

 private:
  cudaStream_t own_stream_;
  std::mutex mutex_;
  cublasHandle_t blas_ = nullptr;
  DeviceBuffer<unsigned char> blas_workspace_;  // one buffer, hence the hand-off
  StreamHandOff blas_hand_off_;
  cusparseHandle_t sparse_ = nullptr;
  StreamHandOff sparse_hand_off_;
};

}  // namespace sfac::cuda
