#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/kernels/sddmm_kernels.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kWarp = 32;
constexpr int kBlock = 256;

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Lanes stride over K: 16-byte loads when K is a multiple of 4 (rows then stay 16-byte aligned).
__device__ __forceinline__ float warp_dot(const float* x, const float* y, int64_t k, int lane) {
  float acc = 0.0f;
  if ((k & 3) == 0) {
    const auto* x4 = reinterpret_cast<const float4*>(x);
    const auto* y4 = reinterpret_cast<const float4*>(y);
    for (int64_t t = lane; t < k / 4; t += kWarp) {
      const float4 u = __ldg(x4 + t), v = __ldg(y4 + t);
      acc += u.x * v.x + u.y * v.y + u.z * v.z + u.w * v.w;
    }
  } else {
    for (int64_t t = lane; t < k; t += kWarp) acc += __ldg(x + t) * __ldg(y + t);
  }
  return warp_sum(acc);
}

template <SddmmOp kOp>
__device__ __forceinline__ void store(const SddmmArgs& args, int64_t e, float dot) {
  // Read S before writing P: they may be the same array.
  float f = dot;
  if (kOp == SddmmOp::Scaled) f = dot * args.s[e];
  if (kOp == SddmmOp::Residual) f = args.s[e] - dot;
  float out = args.alpha * f;
  if (args.beta != 0.0f) out += args.beta * args.p[e];  // beta == 0: P is never read
  args.p[e] = out;
}

template <SddmmOp kOp>
__global__ void sddmm_row_split(SddmmArgs args) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kWarp);
  for (int64_t i = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarp; i < args.rows;
       i += warps) {
    const float* a = args.a + i * args.k;
    for (int64_t e = args.row_offsets[i]; e < args.row_offsets[i + 1]; ++e) {
      const float dot = warp_dot(a, args.b + int64_t{args.cols[e]} * args.k, args.k, lane);
      if (lane == 0) store<kOp>(args, e, dot);
    }
  }
}

template <SddmmOp kOp>
__global__ void sddmm_nnz_split(SddmmArgs args) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kWarp);
  for (int64_t e = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarp; e < args.nnz;
       e += warps) {
    const float dot = warp_dot(args.a + int64_t{args.row_of[e]} * args.k,
                               args.b + int64_t{args.cols[e]} * args.k, args.k, lane);
    if (lane == 0) store<kOp>(args, e, dot);
  }
}

__global__ void expand_rows(const int64_t* row_offsets, int64_t rows, int32_t* row_of) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kWarp);
  for (int64_t i = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarp; i < rows; i += warps) {
    for (int64_t e = row_offsets[i] + lane; e < row_offsets[i + 1]; e += kWarp) {
      row_of[e] = static_cast<int32_t>(i);
    }
  }
}

// Groups of G lanes per nonzero (G = K/4 float4s per lane-slot, up to 32 lanes; V float4s per
// lane), 32/G nonzeros per warp step. Consecutive nonzeros of a chunk mostly share a row, so a
// group keeps its slice of A_i in registers and reloads it only when the row changes; B_j is
// read with 16-byte loads coalesced across the group.
template <SddmmOp kOp, int G, int V>
__global__ void __launch_bounds__(kBlock) sddmm_group(SddmmArgs args, int64_t chunk) {
  constexpr int kGroups = kWarp / G;
  const int lane = threadIdx.x % kWarp;
  const int group = lane / G, slot = lane % G;
  const unsigned mask = G == kWarp ? 0xffffffffu : (((1u << G) - 1u) << (group * G));
  const int64_t k4 = args.k / 4;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kWarp);
  float4 a[V];
  int64_t cached_row = -1;
  for (int64_t begin = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarp * chunk;
       begin < args.nnz; begin += warps * chunk) {
    const int64_t end = min(begin + chunk, args.nnz);
    for (int64_t e = begin + group; e < end; e += kGroups) {
      const int64_t i = args.row_of[e];
      if (i != cached_row) {
        const auto* a4 = reinterpret_cast<const float4*>(args.a + i * args.k);
#pragma unroll
        for (int v = 0; v < V; ++v) {
          const int64_t t = slot + int64_t{v} * G;
          a[v] = t < k4 ? __ldg(a4 + t) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
        cached_row = i;
      }
      const auto* b4 = reinterpret_cast<const float4*>(args.b + int64_t{args.cols[e]} * args.k);
      float acc = 0.0f;
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const int64_t t = slot + int64_t{v} * G;
        if (t < k4) {
          const float4 y = __ldg(b4 + t);
          acc += a[v].x * y.x + a[v].y * y.y + a[v].z * y.z + a[v].w * y.w;
        }
      }
#pragma unroll
      for (int offset = G / 2; offset > 0; offset /= 2) acc += __shfl_xor_sync(mask, acc, offset);
      if (slot == 0) store<kOp>(args, e, acc);
    }
  }
}

// Enough warps to fill the GPU, capped by the work items (grid-stride loops do the rest).
int grid_for(int64_t work_items) {
  const int64_t blocks = (work_items * kWarp + kBlock - 1) / kBlock;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(blocks, 65536)));
}

template <template <SddmmOp> class Launcher>
void dispatch(SddmmOp op, const SddmmArgs& args, int grid, cudaStream_t stream) {
  switch (op) {
    case SddmmOp::Scaled:
      Launcher<SddmmOp::Scaled>::run(args, grid, stream);
      break;
    case SddmmOp::Pattern:
      Launcher<SddmmOp::Pattern>::run(args, grid, stream);
      break;
    case SddmmOp::Residual:
      Launcher<SddmmOp::Residual>::run(args, grid, stream);
      break;
  }
}

template <SddmmOp kOp>
struct RowSplit {
  static void run(const SddmmArgs& args, int grid, cudaStream_t stream) {
    sddmm_row_split<kOp><<<grid, kBlock, 0, stream>>>(args);
  }
};

template <SddmmOp kOp>
struct NnzSplit {
  static void run(const SddmmArgs& args, int grid, cudaStream_t stream) {
    sddmm_nnz_split<kOp><<<grid, kBlock, 0, stream>>>(args);
  }
};

template <SddmmOp kOp, int G, int V>
void launch_group(const SddmmArgs& args, cudaStream_t stream) {
  // Chunks of 8 steps per warp: long enough to reuse A across a row, short enough to balance.
  const int64_t chunk = int64_t{8} * (kWarp / G);
  const int64_t warps_needed = (args.nnz + chunk - 1) / chunk;
  sddmm_group<kOp, G, V><<<grid_for(warps_needed), kBlock, 0, stream>>>(args, chunk);
}

template <SddmmOp kOp>
bool launch_group_for_k(const SddmmArgs& args, cudaStream_t stream) {
  const int64_t k4 = args.k / 4;
  if (k4 <= 2)
    launch_group<kOp, 2, 1>(args, stream);
  else if (k4 <= 4)
    launch_group<kOp, 4, 1>(args, stream);
  else if (k4 <= 8)
    launch_group<kOp, 8, 1>(args, stream);
  else if (k4 <= 16)
    launch_group<kOp, 16, 1>(args, stream);
  else if (k4 <= 32)
    launch_group<kOp, 32, 1>(args, stream);
  else if (k4 <= 64)
    launch_group<kOp, 32, 2>(args, stream);
  else if (k4 <= 128)
    launch_group<kOp, 32, 4>(args, stream);
  else if (k4 <= 256)
    launch_group<kOp, 32, 8>(args, stream);
  else
    return false;
  return true;
}

}  // namespace

void launch_sddmm_row_split(const SddmmArgs& args, SddmmOp op, cudaStream_t stream) {
  if (args.rows == 0) return;
  dispatch<RowSplit>(op, args, grid_for(args.rows), stream);
  SFAC_CUDA_CHECK_LAUNCH();
}

void launch_sddmm_nnz_split(const SddmmArgs& args, SddmmOp op, cudaStream_t stream) {
  if (args.nnz == 0) return;
  dispatch<NnzSplit>(op, args, grid_for(args.nnz), stream);
  SFAC_CUDA_CHECK_LAUNCH();
}

bool launch_sddmm_grouped(const SddmmArgs& args, SddmmOp op, cudaStream_t stream) {
  if (args.k % 4 != 0) return false;  // the 16-byte path needs rows aligned to 16 bytes
  if (args.nnz == 0) return true;
  bool launched = false;
  switch (op) {
    case SddmmOp::Scaled:
      launched = launch_group_for_k<SddmmOp::Scaled>(args, stream);
      break;
    case SddmmOp::Pattern:
      launched = launch_group_for_k<SddmmOp::Pattern>(args, stream);
      break;
    case SddmmOp::Residual:
      launched = launch_group_for_k<SddmmOp::Residual>(args, stream);
      break;
  }
  if (launched) SFAC_CUDA_CHECK_LAUNCH();
  return launched;
}

void launch_expand_rows(const int64_t* row_offsets, int64_t rows, int32_t* row_of,
                        cudaStream_t stream) {
  if (rows == 0) return;
  expand_rows<<<grid_for(rows), kBlock, 0, stream>>>(row_offsets, rows, row_of);
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
