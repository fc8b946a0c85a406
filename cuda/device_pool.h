// The library's stream-ordered memory pools, one per device.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace sfac::cuda {

// The library's own pool on the current device, made on first use and kept for the process. It
// keeps freed blocks cached (no release threshold), so that repeated allocations in training
// loops are served without cudaMalloc. The device's default pool, which other code in the
// process may use through cudaMallocAsync, keeps its own settings.
cudaMemPool_t current_library_pool();

// `bytes` from the library's pool on the current device, ordered on `stream`: every device
// allocation of the library goes through here (the tests' fault injection fails one on demand).
// A failure is sfac::Error naming the size: SFAC_ERR_OUT_OF_MEMORY when the device is full,
// SFAC_ERR_DEVICE otherwise.
void* allocate_from_library_pool(size_t bytes, cudaStream_t stream);

// Returns the cached, unused blocks of the library's pool on `device` to the device (when a
// context is destroyed). Blocks still in use are not affected.
void release_cached_memory(int device) noexcept;

}  // namespace sfac::cuda
