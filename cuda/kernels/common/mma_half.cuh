// 16-bit tensor-core products (m16n8k16, fp32 accumulators), the transposing ldmatrix that
// feeds them from shared memory, and the conversions of the two 16-bit types, one template
// argument apart: kBf16 false is float16, true bfloat16.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace sfac::cuda::kernels::detail {

// Four 8 x 8 matrices of 16-bit values, transposed on the way: lane l gives the address of row
// l % 8 of matrix l / 8 (16 contiguous bytes), and register m of lane (g = l / 4, t = l % 4)
// receives elements [2t][g] and [2t + 1][g] of matrix m.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// Four 8 x 8 matrices of 16-bit values as stored: lane l gives the address of row l % 8 of
// matrix l / 8 (16 contiguous bytes), and register m of lane (g = l / 4, t = l % 4) receives
// elements [g][2t] and [g][2t + 1] of matrix m.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// c += a b for one m16n8k16 tile (a row-major 16 x 16, b column-major 16 x 8).
template <bool kBf16>
__device__ __forceinline__ void mma_16bit(float (&c)[4], const uint32_t (&a)[4],
                                          const uint32_t (&b)[2]) {
  if constexpr (kBf16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// d = a b for one m16n8k16 tile: the first k step, with no accumulator to clear or read.
template <bool kBf16>
__device__ __forceinline__ void mma_16bit_first(float (&d)[4], const uint32_t (&a)[4],
                                                const uint32_t (&b)[2]) {
  if constexpr (kBf16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%10, %10, %10, %10};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.0f));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%10, %10, %10, %10};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.0f));
  }
}

// One value to its 16 bits (rounded to nearest even) and back.
template <bool kBf16>
__device__ __forceinline__ uint16_t to_16bit(float x) {
  if constexpr (kBf16) {
    return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(x)).x;
  } else {
    return static_cast<__half_raw>(__float2half_rn(x)).x;
  }
}

template <bool kBf16>
__device__ __forceinline__ float from_16bit(uint16_t bits) {
  if constexpr (kBf16) {
    __nv_bfloat16_raw raw;
    raw.x = bits;
    return __bfloat162float(__nv_bfloat16(raw));
  } else {
    __half_raw raw;
    raw.x = bits;
    return __half2float(__half(raw));
  }
}

// A register of two 16-bit values (the first in the low half) and its two floats.
template <bool kBf16>
__device__ __forceinline__ float2 unpack_16bit(uint32_t pair) {
  return make_float2(from_16bit<kBf16>(static_cast<uint16_t>(pair & 0xffffu)),
                     from_16bit<kBf16>(static_cast<uint16_t>(pair >> 16)));
}

template <bool kBf16>
__device__ __forceinline__ uint32_t pack_16bit(float2 x) {
  return uint32_t{to_16bit<kBf16>(x.x)} | (uint32_t{to_16bit<kBf16>(x.y)} << 16);
}

// x = hi + lo with both 16-bit: hi is x rounded, lo the rounded remainder, together about twice
// the type's precision (x itself must be in the type's range).
template <bool kBf16>
__device__ __forceinline__ void split_16bit(float2 x, uint32_t* hi, uint32_t* lo) {
  *hi = pack_16bit<kBf16>(x);
  const float2 h = unpack_16bit<kBf16>(*hi);
  *lo = pack_16bit<kBf16>(make_float2(x.x - h.x, x.y - h.y));
}

}  // namespace sfac::cuda::kernels::detail
