// Host-side helpers around CUB's two-phase device algorithms for the plan builders: the size
// query, the temporary storage and the call, once.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cub/device/device_scan.cuh>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"

namespace sfac::cuda::kernels {

// Runs a CUB device algorithm the two-phase way: call(nullptr, bytes) sizes its temporary
// storage, then call(temp, bytes) runs it with that storage from the pool. `what` names the
// algorithm in the error a failure raises.
template <typename Call>
void run_with_temp_storage(const char* what, cudaStream_t stream, Call&& call) {
  size_t bytes = 0;
  cudaError_t err = call(nullptr, bytes);
  if (err == cudaSuccess) {
    DeviceBuffer<uint8_t> temp(bytes, stream);
    err = call(temp.data(), bytes);
  }
  if (err != cudaSuccess) throw_cuda_error(err, what, __FILE__, __LINE__);
}

// out[i] = in[0] + ... + in[i - 1] for i < n; with one zero appended to the input, out[n - 1]
// is the total.
template <typename In, typename Out>
void exclusive_sum(In in, Out out, int64_t n, cudaStream_t stream) {
  run_with_temp_storage("cub::DeviceScan::ExclusiveSum", stream, [&](void* temp, size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, in, out, n, stream);
  });
}

// Bits a radix sort needs for keys up to v (at least 1, at most 32).
inline int significant_bits(uint64_t v) {
  int bits = 1;
  while (bits < 32 && (v >> bits) != 0) ++bits;
  return bits;
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
