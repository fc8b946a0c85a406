#include "cuda/cuda_resources.h"

namespace sfac::cuda {
namespace {

// cuBLAS's recommended workspace for Hopper.
constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;

// Runs f and marks what it queued on `stream` as the hand-off's last work, also where f throws
// after queuing some.
template <typename F>
void run_then_leave(StreamHandOff& hand_off, cudaStream_t stream, F&& f) {
  try {
    f();
  } catch (...) {
    try {
      hand_off.leave(stream);
    } catch (...) {  // f's failure is the one to report
    }
    throw;
  }
  hand_off.leave(stream);
}

}  // namespace

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  const sfac_status code =
      status == CUBLAS_STATUS_ALLOC_FAILED ? SFAC_ERR_OUT_OF_MEMORY : SFAC_ERR_DEVICE;
  fail(code, "cuBLAS error in ", call, " (", file, ":", line, "): ", cublasGetStatusName(status),
       ": ", cublasGetStatusString(status));
}

void throw_cusparse_error(cusparseStatus_t status, const char* call, const char* file, int line) {
  const sfac_status code =
      status == CUSPARSE_STATUS_ALLOC_FAILED ? SFAC_ERR_OUT_OF_MEMORY : SFAC_ERR_DEVICE;
  fail(code, "cuSPARSE error in ", call, " (", file, ":", line, "): ", cusparseGetErrorName(status),
       ": ", cusparseGetErrorString(status));
}

StreamHandOff::~StreamHandOff() {
  if (done_ != nullptr) (void)cudaEventDestroy(done_);
}

void StreamHandOff::enter(cudaStream_t stream) {
  if (done_ == nullptr) SFAC_CUDA_TRY(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  if (recorded_ && last_ != stream) SFAC_CUDA_TRY(cudaStreamWaitEvent(stream, done_, 0));
}

void StreamHandOff::leave(cudaStream_t stream) {
  SFAC_CUDA_TRY(cudaEventRecord(done_, stream));
  last_ = stream;
  recorded_ = true;
}

void StreamHandOff::synchronize() {
  if (recorded_) (void)cudaEventSynchronize(done_);
}

CudaResources::~CudaResources() {
  // The workspace is freed on the own stream once the last call that used it is done.
  blas_hand_off_.synchronize();
  if (blas_ != nullptr) (void)cublasDestroy(blas_);
  sparse_hand_off_.synchronize();
  if (sparse_ != nullptr) (void)cusparseDestroy(sparse_);
}

void CudaResources::with_blas(cudaStream_t stream,
                              const std::function<void(cublasHandle_t)>& f) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (blas_ == nullptr) {
    DeviceBuffer<unsigned char> workspace(kBlasWorkspaceBytes, own_stream_);
    SFAC_CUDA_TRY(cudaStreamSynchronize(own_stream_));  // usable on any stream from here
    cublasHandle_t handle = nullptr;
    SFAC_CUBLAS_TRY(cublasCreate(&handle));
    const cublasStatus_t math = cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);
    const cublasStatus_t space =
        math == CUBLAS_STATUS_SUCCESS
            ? cublasSetWorkspace(handle, workspace.data(), kBlasWorkspaceBytes)
            : math;
    if (space != CUBLAS_STATUS_SUCCESS) {
      (void)cublasDestroy(handle);
      SFAC_CUBLAS_TRY(space);
    }
    blas_ = handle;
    blas_workspace_ = std::move(workspace);
  }
  blas_hand_off_.enter(stream);
  SFAC_CUBLAS_TRY(cublasSetStream(blas_, stream));
  // cublasSetStream resets the workspace to the default; the pool's buffer is used instead.
  SFAC_CUBLAS_TRY(cublasSetWorkspace(blas_, blas_workspace_.data(), kBlasWorkspaceBytes));
  run_then_leave(blas_hand_off_, stream, [&] { f(blas_); });
}

void CudaResources::with_sparse(cudaStream_t stream,
                                const std::function<void(cusparseHandle_t)>& f) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (sparse_ == nullptr) SFAC_CUSPARSE_TRY(cusparseCreate(&sparse_));
  sparse_hand_off_.enter(stream);
  SFAC_CUSPARSE_TRY(cusparseSetStream(sparse_, stream));
  run_then_leave(sparse_hand_off_, stream, [&] { f(sparse_); });
}

}  // namespace sfac::cuda
