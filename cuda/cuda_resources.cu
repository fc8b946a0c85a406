#include "cuda/cuda_resources.h"

namespace sfac::cuda {
namespace {

// cuBLAS's recommended workspace for Hopper.
constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;

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

CudaResources::~CudaResources() {
  // The workspace is freed on the own stream once the last call that used it is done.
  if (blas_done_ != nullptr) (void)cudaEventSynchronize(blas_done_);
  if (blas_ != nullptr) (void)cublasDestroy(blas_);
  if (blas_done_ != nullptr) (void)cudaEventDestroy(blas_done_);
  if (sparse_done_ != nullptr) (void)cudaEventSynchronize(sparse_done_);
  if (sparse_ != nullptr) (void)cusparseDestroy(sparse_);
  if (sparse_done_ != nullptr) (void)cudaEventDestroy(sparse_done_);
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
    const cudaError_t event = cudaEventCreateWithFlags(&blas_done_, cudaEventDisableTiming);
    if (event != cudaSuccess) {
      (void)cublasDestroy(handle);
      SFAC_CUDA_TRY(event);
    }
    blas_ = handle;
    blas_workspace_ = std::move(workspace);
  }
  if (blas_stream_ != nullptr && blas_stream_ != stream) {
    SFAC_CUDA_TRY(cudaStreamWaitEvent(stream, blas_done_, 0));
  }
  SFAC_CUBLAS_TRY(cublasSetStream(blas_, stream));
  // cublasSetStream resets the workspace to the default; the pool's buffer is used instead.
  SFAC_CUBLAS_TRY(cublasSetWorkspace(blas_, blas_workspace_.data(), kBlasWorkspaceBytes));
  f(blas_);
  SFAC_CUDA_TRY(cudaEventRecord(blas_done_, stream));
  blas_stream_ = stream;
}

void CudaResources::with_sparse(cudaStream_t stream,
                                const std::function<void(cusparseHandle_t)>& f) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (sparse_ == nullptr) {
    cusparseHandle_t handle = nullptr;
    SFAC_CUSPARSE_TRY(cusparseCreate(&handle));
    const cudaError_t event = cudaEventCreateWithFlags(&sparse_done_, cudaEventDisableTiming);
    if (event != cudaSuccess) {
      (void)cusparseDestroy(handle);
      SFAC_CUDA_TRY(event);
    }
    sparse_ = handle;
  }
  if (sparse_stream_ != nullptr && sparse_stream_ != stream) {
    SFAC_CUDA_TRY(cudaStreamWaitEvent(stream, sparse_done_, 0));
  }
  SFAC_CUSPARSE_TRY(cusparseSetStream(sparse_, stream));
  f(sparse_);
  SFAC_CUDA_TRY(cudaEventRecord(sparse_done_, stream));
  sparse_stream_ = stream;
}

}  // namespace sfac::cuda
