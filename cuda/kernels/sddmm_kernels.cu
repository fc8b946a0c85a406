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

void launch_expand_rows(const int64_t* row_offsets, int64_t rows, int32_t* row_of,
                        cudaStream_t stream) {
  if (rows == 0) return;
  expand_rows<<<grid_for(rows), kBlock, 0, stream>>>(row_offsets, rows, row_of);
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
