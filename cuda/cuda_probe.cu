// cuda_probe for CUDA builds. The runtime is linked statically and loads the driver lazily,
// so a machine without a driver simply reports zero devices.
#include <cuda_runtime.h>

#include "core/cuda_probe.h"

#ifndef SFAC_CUDA_ARCHITECTURES
#define SFAC_CUDA_ARCHITECTURES ""
#endif

namespace sfac {

bool cuda_compiled_in() { return true; }

int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver"/"no device" error
    return 0;
  }
  return count;
}

std::string cuda_device_name(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  return prop.name;
}

const char* cuda_architectures() { return SFAC_CUDA_ARCHITECTURES; }

}  // namespace sfac
