// A lane's share of a factor row in the SGD kernels: row entries (j * 32 + lane) * kWidth
// through + kWidth - 1 for j < J, moved 16 bytes at a time and widened to float. Lanes whose
// vector lies past the row's stride hold zeros and touch no memory.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "sparsefac/sparsefac.h"

namespace sfac::cuda::kernels {

template <typename T>
struct SgdVector;

template <>
struct SgdVector<float> {
  static constexpr int kWidth = 4;
  using Bits = float4;
  __device__ static void widen(const Bits& b, float (&v)[kWidth]) {
    v[0] = b.x;
    v[1] = b.y;
    v[2] = b.z;
    v[3] = b.w;
  }
  __device__ static Bits narrow(const float (&v)[kWidth]) { return {v[0], v[1], v[2], v[3]}; }
};

// How a pair of 16-bit values converts to and from two floats (rounding to nearest even).
struct SgdHalfPair {
  using Pair = __half2;
  __device__ static Pair pack(float a, float b) { return __floats2half2_rn(a, b); }
  __device__ static float2 unpack(Pair p) { return __half22float2(p); }
};
struct SgdBfloat16Pair {
  using Pair = __nv_bfloat162;
  __device__ static Pair pack(float a, float b) { return __floats2bfloat162_rn(a, b); }
  __device__ static float2 unpack(Pair p) { return __bfloat1622float2(p); }
};

// float16 and bfloat16: eight entries in a uint4, converted in pairs.
template <typename Convert>
struct SgdHalfVector {
  static constexpr int kWidth = 8;
  using Bits = uint4;
  using Pair = typename Convert::Pair;
  __device__ static void widen(const Bits& b, float (&v)[kWidth]) {
    const uint32_t words[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      Pair pair;
      memcpy(&pair, &words[i], sizeof pair);
      const float2 f = Convert::unpack(pair);
      v[2 * i] = f.x;
      v[2 * i + 1] = f.y;
    }
  }
  __device__ static Bits narrow(const float (&v)[kWidth]) {
    uint32_t words[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const Pair pair = Convert::pack(v[2 * i], v[2 * i + 1]);
      memcpy(&words[i], &pair, sizeof pair);
    }
    return {words[0], words[1], words[2], words[3]};
  }
};

template <>
struct SgdVector<__half> : SgdHalfVector<SgdHalfPair> {};
template <>
struct SgdVector<__nv_bfloat16> : SgdHalfVector<SgdBfloat16Pair> {};

// A row shared by L lanes (lane `gl` of its group): entries (j * L + gl) * kWidth on. Rows are
// read from L2 (ld.global.cg): other SMs' warps write them during a pass, and L1 is not coherent
// with their writes.
template <typename T, int J, int L = 32>
__device__ __forceinline__ void sgd_load_row(const T* row, int64_t stride, int gl,
                                             float (&v)[J][SgdVector<T>::kWidth]) {
  using V = SgdVector<T>;
#pragma unroll
  for (int j = 0; j < J; ++j) {
    const int64_t at = (int64_t{j} * L + gl) * V::kWidth;
    if (at < stride) {
      V::widen(__ldcg(reinterpret_cast<const typename V::Bits*>(row + at)), v[j]);
    } else {
#pragma unroll
      for (int w = 0; w < V::kWidth; ++w) v[j][w] = 0.0f;
    }
  }
}

template <typename T, int J, int L = 32>
__device__ __forceinline__ void sgd_store_row(T* row, int64_t stride, int gl,
                                              const float (&v)[J][SgdVector<T>::kWidth]) {
  using V = SgdVector<T>;
#pragma unroll
  for (int j = 0; j < J; ++j) {
    const int64_t at = (int64_t{j} * L + gl) * V::kWidth;
    if (at < stride) *reinterpret_cast<typename V::Bits*>(row + at) = V::narrow(v[j]);
  }
}

// The sum of v over each aligned group of L lanes, in every lane of the group.
template <int L = 32, typename F>
__device__ __forceinline__ F sgd_warp_sum(F v) {
#pragma unroll
  for (int o = L / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Calls f(T{}) with the storage type that `dtype` names.
template <typename F>
void sgd_with_storage(sfac_dtype dtype, F&& f) {
  switch (dtype) {
    case SFAC_DTYPE_FLOAT16:
      return f(__half{});
    case SFAC_DTYPE_BFLOAT16:
      return f(__nv_bfloat16{});
    default:
      return f(float{});
  }
}

}  // namespace sfac::cuda::kernels
