// Host-side helpers around CUB's two-phase device algorithms for the plan builders: the size
// query, the temporary storage and the call, once.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cub/device/device_scan.cuh>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"

namespace sfac::cuda::kernels {

// out[i] = in[0] + ... + in[i - 1] for i < n; with one zero appended to the input, out[n - 1]
// is the total.
template <typename In, typename Out>
void exclusive_sum(In in, Out out, int64_t n, cudaStream_t stream) {
  size_t bytes = 0;
  SFAC_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, n, stream));
  DeviceBuffer<uint8_t> temp(bytes, stream);
  SFAC_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp.data(), bytes, in, out, n, stream));
}

// One value from device memory, after the work queued before it on the stream.
template <typename T>
T read_back(const T* device_value, cudaStream_t stream) {
  T host{};
  SFAC_CUDA_TRY(cudaMemcpyAsync(&host, device_value, sizeof(T), cudaMemcpyDeviceToHost, stream));
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream));
  return host;
}

}  // namespace sfac::cuda::kernels
