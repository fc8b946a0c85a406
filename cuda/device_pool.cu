#include <atomic>
#include <cstdint>
#include <mutex>

#include "core/fault_hooks.h"
#include "cuda/cuda_check.h"
#include "cuda/device_pool.h"

namespace sfac::cuda {
namespace {

constexpr int kMaxDevices = 64;
std::atomic<cudaMemPool_t> g_pools[kMaxDevices];
std::mutex g_create;

cudaMemPool_t pool_of(int device) {
  SFAC_REQUIRE(device >= 0 && device < kMaxDevices, SFAC_ERR_DEVICE, "device ", device,
               " is beyond the ", kMaxDevices, " devices the library supports");
  if (cudaMemPool_t pool = g_pools[device].load(std::memory_order_acquire)) return pool;
  std::lock_guard<std::mutex> lock(g_create);
  if (cudaMemPool_t pool = g_pools[device].load(std::memory_order_relaxed)) return pool;
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  SFAC_CUDA_TRY(cudaMemPoolCreate(&pool, &props));
  uint64_t threshold = UINT64_MAX;
  SFAC_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  g_pools[device].store(pool, std::memory_order_release);
  return pool;
}

}  // namespace

cudaMemPool_t current_library_pool() {
  int device = 0;
  SFAC_CUDA_TRY(cudaGetDevice(&device));
  return pool_of(device);
}

void* allocate_from_library_pool(size_t bytes, cudaStream_t stream) {
  void* out = nullptr;
  const cudaError_t err = testing::device_allocation_fails()
                              ? cudaErrorMemoryAllocation
                              : cudaMallocFromPoolAsync(&out, bytes, current_library_pool(), stream);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: the context stays usable
    fail(err == cudaErrorMemoryAllocation ? SFAC_ERR_OUT_OF_MEMORY : SFAC_ERR_DEVICE,
         "cudaMallocFromPoolAsync of ", bytes, " bytes of device memory failed: ",
         cudaGetErrorName(err), ": ", cudaGetErrorString(err));
  }
  return out;
}

void release_cached_memory(int device) noexcept {
  if (device < 0 || device >= kMaxDevices) return;
  if (cudaMemPool_t pool = g_pools[device].load(std::memory_order_acquire)) {
    (void)cudaMemPoolTrimTo(pool, 0);
  }
}

}  // namespace sfac::cuda
