// Asynchronous global -> shared copies (sm_80+), shared by the tile kernels.
#pragma once

namespace sfac::cuda::kernels::detail {

// 16 bytes from global to shared memory; `fill` false writes 16 zero bytes instead (gmem must
// still be a valid address).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool fill) {
  const auto dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem),
               "r"(fill ? 16 : 0));
}

// 4 bytes from global to shared memory (any float's alignment); `fill` false writes zero.
__device__ __forceinline__ void cp_async4(void* smem, const void* gmem, bool fill) {
  const auto dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(gmem),
               "r"(fill ? 4 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n"); }

// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace sfac::cuda::kernels::detail
