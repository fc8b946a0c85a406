// Owning device memory from the library's stream-ordered pool on the current device
// (device_pool.h), which keeps freed blocks cached, so repeated allocations in training loops are
// served from the cache instead of cudaMalloc.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "cuda/cuda_check.h"
#include "cuda/device_pool.h"

namespace sfac::cuda {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t count, cudaStream_t stream) : count_(count), stream_(stream) {
    if (count > 0) {
      data_ = static_cast<T*>(allocate_from_library_pool(count * sizeof(T), stream));
    }
  }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      swap(other);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // A new buffer holding `count` values copied from host memory.
  static DeviceBuffer copy_of(const T* host, size_t count, cudaStream_t stream) {
    DeviceBuffer device(count, stream);
    device.upload(host, count);
    return device;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return count_; }

  void upload(const T* host, size_t count) {
    if (count > 0) {
      SFAC_CUDA_TRY(
          cudaMemcpyAsync(data_, host, count * sizeof(T), cudaMemcpyHostToDevice, stream_));
    }
  }
  // Copies to pageable host memory and waits for it.
  void download(T* host, size_t count) const {
    if (count > 0) {
      SFAC_CUDA_TRY(
          cudaMemcpyAsync(host, data_, count * sizeof(T), cudaMemcpyDeviceToHost, stream_));
      SFAC_CUDA_TRY(cudaStreamSynchronize(stream_));
    }
  }

 private:
  void reset() noexcept {
    if (data_ != nullptr) (void)cudaFreeAsync(data_, stream_);
    data_ = nullptr;
    count_ = 0;
  }
  void swap(DeviceBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    std::swap(stream_, other.stream_);
  }

  T* data_ = nullptr;
  size_t count_ = 0;
  cudaStream_t stream_ = nullptr;
};

}  // namespace sfac::cuda
