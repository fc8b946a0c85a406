// Tensor-core products at fp32 accuracy from TF32 operands ("3xTF32"): each fp32 operand is
// split into a TF32 part and its remainder, and the three products that
// matter (big x big, big x small, small x big) are accumulated in fp32. The dropped small x
// small term is below fp32's rounding, so results agree with fp32 arithmetic to a few units in
// the last place, where plain TF32 would lose three decimal digits.
#pragma once

#include <cstdint>

namespace sfac::cuda::kernels::detail {

// x = big + small: big is x with the low 13 mantissa bits cleared (a TF32 value), small the
// exact fp32 remainder, which the tensor core reads as TF32 by dropping its own low bits; the
// pair carries 21 bits or more of x's 24 (two instructions, where rounding conversions take
// several).
struct SplitTf32 {
  uint32_t big, small;
};

__device__ __forceinline__ SplitTf32 split_tf32(float x) {
  const uint32_t big = __float_as_uint(x) & 0xffffe000u;
  return {big, __float_as_uint(x - __uint_as_float(big))};
}

// c += a b for one m16n8k8 tile (a row-major 16 x 8, b column-major 8 x 8), TF32 inputs.
__device__ __forceinline__ void mma_tf32(float (&c)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2]) {
  // Not volatile: the compiler may interleave independent products.
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// c += a b at fp32 accuracy from split operands.
__device__ __forceinline__ void mma_3xtf32(float (&c)[4], const uint32_t (&a_big)[4],
                                           const uint32_t (&a_small)[4], const uint32_t (&b_big)[2],
                                           const uint32_t (&b_small)[2]) {
  mma_tf32(c, a_small, b_big);
  mma_tf32(c, a_big, b_small);
  mma_tf32(c, a_big, b_big);
}

}  // namespace sfac::cuda::kernels::detail
