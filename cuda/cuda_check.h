// Checked CUDA calls: failures become sfac::Error with the call, the CUDA message, and
// SFAC_ERR_OUT_OF_MEMORY for allocation failures (so callers can free memory and retry).
#pragma once

#include <cuda_runtime.h>

#include "core/error.h"

namespace sfac::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file,
                                          int line) {
  (void)cudaGetLastError();  // clear the non-sticky error so the context stays usable
  const sfac_status status =
      err == cudaErrorMemoryAllocation ? SFAC_ERR_OUT_OF_MEMORY : SFAC_ERR_DEVICE;
  fail(status, "CUDA error in ", call, " (", file, ":", line, "): ", cudaGetErrorName(err), ": ",
       cudaGetErrorString(err));
}

}  // namespace sfac::cuda

#define SFAC_CUDA_TRY(call)                                                      \
  do {                                                                           \
    const cudaError_t sfac_cuda_err_ = (call);                                   \
    if (sfac_cuda_err_ != cudaSuccess) {                                         \
      ::sfac::cuda::throw_cuda_error(sfac_cuda_err_, #call, __FILE__, __LINE__); \
    }                                                                            \
  } while (0)

// After a kernel launch: reports launch-configuration errors at once.
#define SFAC_CUDA_CHECK_LAUNCH() SFAC_CUDA_TRY(cudaPeekAtLastError())
