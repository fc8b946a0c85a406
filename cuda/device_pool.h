// The library's stream-ordered memory pools, one per device.
#pragma once

#include <cuda_runtime.h>

namespace sfac::cuda {

// The library's own pool on the current device, made on first use and kept for the process. It
// keeps freed blocks cached (no release threshold), so that repeated allocations in training
// loops are served without cudaMalloc. The device's default pool, which other code in the
// process may use through cudaMallocAsync, keeps its own settings.
cudaMemPool_t current_library_pool();

// Returns the cached, unused blocks of the library's pool on `device` to the device (when a
// context is destroyed). Blocks still in use are not affected.
void release_cached_memory(int device) noexcept;

}  // namespace sfac::cuda
