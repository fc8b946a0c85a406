// Warpgroup matrix multiply-accumulate (sm_90a: files that include this are compiled for the
// arch-specific target only). Both operands come from shared memory, K-major (rows of 16-bit
// values along k), in the no-swizzle layout: 8 x 8 core matrices of 128 contiguous bytes
// (8 rows of 16 bytes), the two of a k16 step `lbo` bytes apart, successive 8-row groups `sbo`
// bytes apart.
#pragma once

#include <cstdint>

namespace sfac::cuda::kernels::detail {

// The shared-memory matrix descriptor of a K-major no-swizzle operand starting at `smem`.
__device__ __forceinline__ uint64_t wgmma_descriptor(const void* smem, uint32_t lbo, uint32_t sbo) {
  const auto address = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return uint64_t{(address & 0x3ffffu) >> 4} | uint64_t{(lbo & 0x3ffffu) >> 4} << 16 |
         uint64_t{(sbo & 0x3ffffu) >> 4} << 32;  // layout type 0 (no swizzle), base offset 0
}

// A descriptor moved `bytes` (a multiple of 16) further along its operand.
__device__ __forceinline__ uint64_t wgmma_advance(uint64_t descriptor, uint32_t bytes) {
  return descriptor + (bytes >> 4);
}

// Orders this warpgroup's register and shared-memory accesses before the mma that follow.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most N of this warpgroup's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Makes shared memory written by ordinary stores and cp.async visible to the mma (the async
// proxy); before the barrier that precedes them.
__device__ __forceinline__ void fence_shared_to_async_proxy() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Keeps the compiler from moving accesses of accumulators across an mma's issue or wait.
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[8][4]) {
#pragma unroll
  for (int i = 0; i < 8; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) asm volatile("" : "+f"(d[i][j])::"memory");
  }
}

// d (+)= A B^T for a 64 x 16 A and a 64 x 16 B (bfloat16, fp32 sums); accumulate false writes d.
// d[nt][2 h + j] is row 16 w + g + 8 h, column 8 nt + 2 t + j, for the thread of lane 4 g + t of
// the warpgroup's warp w: each warp's part is the m16n8 accumulator fragment of 8 column blocks.
__device__ __forceinline__ void wgmma_64x64x16_bf16(float (&d)[8][4], uint64_t a, uint64_t b,
                                                    bool accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),
        "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),
        "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),
        "+f"(d[7][2]), "+f"(d[7][3])
      : "l"(a), "l"(b), "r"(accumulate ? 1 : 0));
}

}  // namespace sfac::cuda::kernels::detail
