// Device helpers shared by the SDDMM kernels: element types, 16-byte loads, the output rule.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/kernels/sddmm/sddmm_kernels.cuh"

namespace sfac::cuda::kernels::detail {

constexpr int kWarp = 32;
constexpr int kBlock = 256;

// Per element type: how many elements one 16-byte vector holds and their float dot product.
template <typename T>
struct Elem;

template <>
struct Elem<float> {
  static constexpr int kPerVec = 4;
  __device__ static float dot(uint4 a, uint4 b) {
    return __uint_as_float(a.x) * __uint_as_float(b.x) +
           __uint_as_float(a.y) * __uint_as_float(b.y) +
           __uint_as_float(a.z) * __uint_as_float(b.z) +
           __uint_as_float(a.w) * __uint_as_float(b.w);
  }
};

template <typename Pair, typename Convert>
__device__ __forceinline__ float dot_pairs(uint4 a, uint4 b, Convert convert) {
  const auto* x = reinterpret_cast<const Pair*>(&a);
  const auto* y = reinterpret_cast<const Pair*>(&b);
  float acc = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 u = convert(x[i]), v = convert(y[i]);
    acc += u.x * v.x + u.y * v.y;
  }
  return acc;
}

template <>
struct Elem<__half> {
  static constexpr int kPerVec = 8;
  __device__ static float dot(uint4 a, uint4 b) {
    return dot_pairs<__half2>(a, b, [](__half2 h) { return __half22float2(h); });
  }
};

template <>
struct Elem<__nv_bfloat16> {
  static constexpr int kPerVec = 8;
  __device__ static float dot(uint4 a, uint4 b) {
    return dot_pairs<__nv_bfloat162>(a, b, [](__nv_bfloat162 h) { return __bfloat1622float2(h); });
  }
};

// acc + dot(a, b) as a chain of FMAs: one instruction per element for float32; for 16-bit
// types two conversions and one FMA, where Elem::dot spends a multiply, an FMA and an add on each
// pair besides the conversions (the group kernels of 16-bit rows are bound by issue, not by
// bytes, at wide K).
template <typename T>
__device__ __forceinline__ float dot_acc(uint4 a, uint4 b, float acc) {
  return acc + Elem<T>::dot(a, b);
}
template <>
__device__ __forceinline__ float dot_acc<float>(uint4 a, uint4 b, float acc) {
  acc = fmaf(__uint_as_float(a.x), __uint_as_float(b.x), acc);
  acc = fmaf(__uint_as_float(a.y), __uint_as_float(b.y), acc);
  acc = fmaf(__uint_as_float(a.z), __uint_as_float(b.z), acc);
  return fmaf(__uint_as_float(a.w), __uint_as_float(b.w), acc);
}
// acc + the products of a word's two 16-bit values, as two FMAs. A bfloat16 is the upper half
// of the float of the same value: the pair's floats are the word shifted up and the word with
// its low half cleared.
template <typename T>
__device__ __forceinline__ float pair_fma(uint32_t a, uint32_t b, float acc);
template <>
__device__ __forceinline__ float pair_fma<__nv_bfloat16>(uint32_t a, uint32_t b, float acc) {
  acc = fmaf(__uint_as_float(a << 16), __uint_as_float(b << 16), acc);
  return fmaf(__uint_as_float(a & 0xffff0000u), __uint_as_float(b & 0xffff0000u), acc);
}
template <>
__device__ __forceinline__ float pair_fma<__half>(uint32_t a, uint32_t b, float acc) {
  const float2 x = __half22float2(*reinterpret_cast<const __half2*>(&a));
  const float2 y = __half22float2(*reinterpret_cast<const __half2*>(&b));
  return fmaf(x.y, y.y, fmaf(x.x, y.x, acc));
}
template <typename T>
__device__ __forceinline__ float pairs_fma(uint4 a, uint4 b, float acc) {
  acc = pair_fma<T>(a.x, b.x, acc);
  acc = pair_fma<T>(a.y, b.y, acc);
  acc = pair_fma<T>(a.z, b.z, acc);
  return pair_fma<T>(a.w, b.w, acc);
}
template <>
__device__ __forceinline__ float dot_acc<__nv_bfloat16>(uint4 a, uint4 b, float acc) {
  return pairs_fma<__nv_bfloat16>(a, b, acc);
}
template <>
__device__ __forceinline__ float dot_acc<__half>(uint4 a, uint4 b, float acc) {
  return pairs_fma<__half>(a, b, acc);
}

// Dot products of a 128-byte chunk of A held as av[q] = vector (q + rot) % 8 (the rotation that
// keeps a quarter-warp's shared-memory reads on 8 different bank groups) with the N chunks at
// br[i], read in the same rotated order and interleaved so that their loads are in flight
// together. Four independent sums each: one chain would be 32 dependent FMAs.
template <typename T, int N>
__device__ __forceinline__ void rotated_chunk_dots(const uint4 (&av)[8],
                                                   const uint4* const (&br)[N], int rot,
                                                   float (&out)[N]) {
  float d[N][4] = {};
#pragma unroll
  for (int q = 0; q < 8; ++q) {
#pragma unroll
    for (int i = 0; i < N; ++i) d[i][q % 4] = dot_acc<T>(av[q], br[i][(q + rot) % 8], d[i][q % 4]);
  }
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = (d[i][0] + d[i][1]) + (d[i][2] + d[i][3]);
}

// For kernels launched as programmatic dependents (compute capability 9.0 and up): wait until
// the stream's previous kernel has completed and its writes are visible, then let the next
// dependent kernel start launching. Called before any global memory access, so a kernel that is
// scheduled early (while its predecessor drains) only saves the launch latency and never reads
// or writes ahead of the predecessor. A no-op for a kernel launched without the attribute.
__device__ __forceinline__ void overlap_launch_with_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// The launch attribute that makes such a kernel a programmatic dependent (SddmmArgs::
// dependent_launch says whether the device takes it).
inline cudaLaunchAttribute dependent_launch_attribute() {
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  return attr;
}

// A cudaLaunchKernelEx configuration, a programmatic dependent of the stream's previous kernel
// where `dependent`, with room for one more attribute (a cluster shape). Not copyable: the
// configuration points at its own attribute array.
class LaunchConfig {
 public:
  LaunchConfig(int64_t grid, int block, size_t smem, cudaStream_t stream, bool dependent) {
    config_.gridDim = dim3(static_cast<unsigned>(grid));
    config_.blockDim = dim3(static_cast<unsigned>(block));
    config_.dynamicSmemBytes = smem;
    config_.stream = stream;
    config_.attrs = attrs_;
    if (dependent) add(dependent_launch_attribute());
  }
  LaunchConfig(const LaunchConfig&) = delete;
  LaunchConfig& operator=(const LaunchConfig&) = delete;

  void add(const cudaLaunchAttribute& attr) { attrs_[config_.numAttrs++] = attr; }
  const cudaLaunchConfig_t* get() const { return &config_; }

 private:
  cudaLaunchConfig_t config_ = {};
  cudaLaunchAttribute attrs_[2] = {};
};

__device__ __forceinline__ uint4 load_vec(const void* base, int64_t index) {
  return __ldg(reinterpret_cast<const uint4*>(base) + index);
}

// The row holding position p of a tile whose rows start at prefix[0..rows] (prefix[0] <= p <
// prefix[rows]): the r with prefix[r] <= p < prefix[r + 1], which skips empty rows.
__device__ __forceinline__ int row_of_position(const int32_t* prefix, int rows, int p) {
  int lo = 0, hi = rows;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (prefix[mid] <= p) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

__device__ __forceinline__ void store(const SddmmArgs& args, int64_t e, float dot) {
  // Read S before writing P: they may be the same array. The branch on op is warp-uniform.
  float f = dot;
  if (args.op == SddmmOp::Scaled) f = dot * args.s[e];
  if (args.op == SddmmOp::Residual) f = args.s[e] - dot;
  float out = args.alpha * f;
  if (args.beta != 0.0f) out += args.beta * args.p[e];  // beta == 0: P is never read
  args.p[e] = out;
}

}  // namespace sfac::cuda::kernels::detail
