// A lane's share of a factor row in the SGD kernels: row entries (j * 32 + lane) * kWidth
// through + kWidth - 1 for j < J, moved 16 bytes at a time and widened to float. Lanes whose
// vector lies past the row's stride hold zeros and touch no memory.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/error.h"
#include "core/sgd_chunks.h"
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

// row += delta with atomic adds (float, or pairs of 16-bit values), for a row that other
// workers may update at the same time: their changes are kept, not overwritten.
__device__ __forceinline__ void sgd_atomic_add(float* at, const float (&d)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) atomicAdd(at + i, d[i]);
}
__device__ __forceinline__ void sgd_atomic_add(__half* at, const float (&d)[8]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    atomicAdd(reinterpret_cast<__half2*>(at) + i, __floats2half2_rn(d[2 * i], d[2 * i + 1]));
  }
}
__device__ __forceinline__ void sgd_atomic_add(__nv_bfloat16* at, const float (&d)[8]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    atomicAdd(reinterpret_cast<__nv_bfloat162*>(at) + i,
              __floats2bfloat162_rn(d[2 * i], d[2 * i + 1]));
  }
}

// row += weight (v - base), atomically.
template <typename T, int J, int L = 32>
__device__ __forceinline__ void sgd_add_row(T* row, int64_t stride, int gl,
                                            const float (&v)[J][SgdVector<T>::kWidth],
                                            const float (&base)[J][SgdVector<T>::kWidth],
                                            float weight) {
  using V = SgdVector<T>;
#pragma unroll
  for (int j = 0; j < J; ++j) {
    const int64_t at = (int64_t{j} * L + gl) * V::kWidth;
    float d[V::kWidth];
#pragma unroll
    for (int w = 0; w < V::kWidth; ++w) d[w] = weight * (v[j][w] - base[j][w]);
    if (at < stride) sgd_atomic_add(row + at, d);
  }
}

// v rounded to the storage type in place: what a store and a load of the row would give.
template <typename T, int J>
__device__ __forceinline__ void sgd_round_row(float (&v)[J][SgdVector<T>::kWidth]) {
  using V = SgdVector<T>;
#pragma unroll
  for (int j = 0; j < J; ++j) V::widen(V::narrow(v[j]), v[j]);
}

// The sum of v over each aligned group of L lanes, in every lane of the group.
template <int L = 32, typename F>
__device__ __forceinline__ F sgd_warp_sum(F v) {
#pragma unroll
  for (int o = L / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ SgdSample sgd_load_sample(const SgdSample* at) {
  const int2 raw = __ldg(reinterpret_cast<const int2*>(at));
  return {raw.x, __int_as_float(raw.y)};
}

template <int J, int W>
__device__ __forceinline__ void sgd_copy_row(float (&to)[J][W], const float (&from)[J][W]) {
#pragma unroll
  for (int j = 0; j < J; ++j) {
#pragma unroll
    for (int w = 0; w < W; ++w) to[j][w] = from[j][w];
  }
}

// Lane vectors per row at most that the update kernels are compiled for.
constexpr int kSgdMaxVectors = 16;
// Row entries a lane holds when rows are short enough for groups of fewer than 32 lanes: few
// enough registers for four rows (this, the next item's, the user's and the next user's).
constexpr int kSgdLaneEntries = 8;

// Calls f(L, J) (std::integral_constant) with the lane shape of an update kernel for rows of
// `stride` entries: kSgdLaneEntries entries a lane in groups of the fewest lanes L (a power of
// two) that cover a row, or whole warps with as many vectors J a lane as a row needs.
template <typename T, typename F>
void sgd_with_lane_shape(int64_t stride, F&& f) {
  constexpr int W = SgdVector<T>::kWidth;
  constexpr int J0 = kSgdLaneEntries / W;
  using J1 = std::integral_constant<int, J0>;
  const int64_t vectors = (stride + W - 1) / W;
  const int64_t lanes = (vectors + J0 - 1) / J0;
  if (lanes <= 1) return f(std::integral_constant<int, 1>{}, J1{});
  if (lanes <= 2) return f(std::integral_constant<int, 2>{}, J1{});
  if (lanes <= 4) return f(std::integral_constant<int, 4>{}, J1{});
  if (lanes <= 8) return f(std::integral_constant<int, 8>{}, J1{});
  if (lanes <= 16) return f(std::integral_constant<int, 16>{}, J1{});
  using Warp = std::integral_constant<int, 32>;
  if (lanes <= 32) return f(Warp{}, J1{});
  const int64_t per_lane = (vectors + 31) / 32;
  if constexpr (2 * J0 <= kSgdMaxVectors) {
    if (per_lane <= 2 * J0) return f(Warp{}, std::integral_constant<int, 2 * J0>{});
  }
  if constexpr (4 * J0 <= kSgdMaxVectors) {
    if (per_lane <= 4 * J0) return f(Warp{}, std::integral_constant<int, 4 * J0>{});
  }
  if constexpr (8 * J0 <= kSgdMaxVectors) {
    if (per_lane <= 8 * J0) return f(Warp{}, std::integral_constant<int, 8 * J0>{});
  }
  if (per_lane <= kSgdMaxVectors) return f(Warp{}, std::integral_constant<int, kSgdMaxVectors>{});
  fail(SFAC_ERR_INTERNAL, "SGD row stride ", stride, " above the kernels' ",
       32 * W * kSgdMaxVectors);
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
