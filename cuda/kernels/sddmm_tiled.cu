#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/system_error.h>

#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels/sddmm_common.cuh"
#include "cuda/kernels/sddmm_tiled.cuh"

namespace sfac::cuda::kernels {
namespace {

using namespace detail;

// Shared memory per block for the B slice: four blocks (32 warps) per SM on Hopper.
constexpr int64_t kSliceBytes = 48 * 1024;

__global__ void panel_keys(const int32_t* cols, int64_t nnz, int64_t width, int32_t* key,
                           int64_t* order) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < nnz;
       e += int64_t{gridDim.x} * blockDim.x) {
    key[e] = static_cast<int32_t>(cols[e] / width);
    order[e] = e;
  }
}

// First index in [lo, hi) whose value is > key, values ascending.
__device__ int64_t upper_bound(const int64_t* values, int64_t lo, int64_t hi, int64_t key) {
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (values[mid] <= key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

template <typename T, int G, int V>
__global__ void __launch_bounds__(kBlock) sddmm_tiled(SddmmArgs args, PanelOrder po, int64_t cols) {
  extern __shared__ uint4 slice[];
  constexpr int kGroups = kWarp / G;
  constexpr int kWarps = kBlock / kWarp;
  constexpr int E = Elem<T>::kPerVec;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int group = lane / G, slot = lane % G;
  const unsigned mask = G == kWarp ? 0xffffffffu : (((1u << G) - 1u) << (group * G));
  const int64_t vecs = args.k / E;
  const auto* a = static_cast<const T*>(args.a);
  const auto* b = static_cast<const T*>(args.b);
  const int64_t lo = args.nnz * blockIdx.x / gridDim.x;
  const int64_t hi = args.nnz * (blockIdx.x + 1) / gridDim.x;
  uint4 av[V];
  int64_t cached_row = -1;
  // Panels overlapping [lo, hi): the last offset <= lo starts the first one.
  for (int64_t p = upper_bound(po.panel_offsets, 0, po.panels + 1, lo) - 1;
       p < po.panels && po.panel_offsets[p] < hi; ++p) {
    const int64_t first_col = p * po.panel_width;
    const int64_t width = min(po.panel_width, cols - first_col);
    __syncthreads();  // the previous panel's slice is no longer read
    const auto* src = reinterpret_cast<const uint4*>(b + first_col * args.k);
    for (int64_t t = threadIdx.x; t < width * vecs; t += kBlock) slice[t] = __ldg(src + t);
    __syncthreads();
    const int64_t begin = max(lo, po.panel_offsets[p]), end = min(hi, po.panel_offsets[p + 1]);
    // Warps take interleaved chunks; groups take every kGroups-th nonzero of a chunk.
    constexpr int64_t kChunk = 8 * kGroups;
    for (int64_t c = begin + int64_t{warp} * kChunk; c < end; c += int64_t{kWarps} * kChunk) {
      const int64_t c_end = min(c + kChunk, end);
      for (int64_t x = c + group; x < c_end; x += kGroups) {
        const int64_t e = po.order[x];
        const int64_t i = args.row_of[e];
        if (i != cached_row) {
#pragma unroll
          for (int v = 0; v < V; ++v) {
            const int64_t t = slot + int64_t{v} * G;
            av[v] = t < vecs ? load_vec(a + i * args.k, t) : make_uint4(0, 0, 0, 0);
          }
          cached_row = i;
        }
        const uint4* bj = slice + (args.cols[e] - first_col) * vecs;
        float acc = 0.0f;
#pragma unroll
        for (int v = 0; v < V; ++v) {
          const int64_t t = slot + int64_t{v} * G;
          if (t < vecs) acc += Elem<T>::dot(av[v], bj[t]);
        }
#pragma unroll
        for (int offset = G / 2; offset > 0; offset /= 2) {
          acc += __shfl_xor_sync(mask, acc, offset);
        }
        if (slot == 0) store(args, e, acc);
      }
    }
  }
}

template <typename T, int G, int V>
void launch(const SddmmArgs& args, const PanelOrder& po, int64_t cols, cudaStream_t stream) {
  const size_t smem = static_cast<size_t>(po.panel_width * args.k) * sizeof(T);
  SFAC_CUDA_TRY(cudaFuncSetAttribute(
      sddmm_tiled<T, G, V>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  int device = 0, sms = 0, per_sm = 0;
  SFAC_CUDA_TRY(cudaGetDevice(&device));
  SFAC_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  SFAC_CUDA_TRY(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sddmm_tiled<T, G, V>, kBlock, smem));
  // Enough persistent blocks to fill the GPU, but each with a sizeable share of nonzeros so
  // that staging a panel (W x K values) is amortized.
  const int64_t blocks = std::max<int64_t>(
      1, std::min<int64_t>(int64_t{sms} * std::max(per_sm, 1), (args.nnz + 4095) / 4096));
  sddmm_tiled<T, G, V><<<static_cast<int>(blocks), kBlock, smem, stream>>>(args, po, cols);
}

template <typename T>
bool launch_as(const SddmmArgs& args, const PanelOrder& po, int64_t cols, cudaStream_t stream) {
  constexpr int E = Elem<T>::kPerVec;
  if (args.k % E != 0) return false;
  const int64_t vecs = args.k / E;
  if (vecs <= 1)
    launch<T, 1, 1>(args, po, cols, stream);
  else if (vecs <= 2)
    launch<T, 2, 1>(args, po, cols, stream);
  else if (vecs <= 4)
    launch<T, 4, 1>(args, po, cols, stream);
  else if (vecs <= 8)
    launch<T, 8, 1>(args, po, cols, stream);
  else if (vecs <= 16)
    launch<T, 16, 1>(args, po, cols, stream);
  else if (vecs <= 32)
    launch<T, 32, 1>(args, po, cols, stream);
  else if (vecs <= 64)
    launch<T, 32, 2>(args, po, cols, stream);
  else
    return false;
  return true;
}

}  // namespace

int64_t tiled_panel_width(int64_t k) {
  return std::max<int64_t>(1, kSliceBytes / (k * static_cast<int64_t>(sizeof(float))));
}

void build_panel_order(const int32_t* cols, int64_t nnz, int64_t ncols, int64_t panel_width,
                       int64_t* order, int64_t* panel_offsets, cudaStream_t stream) {
  const int64_t panels = (ncols + panel_width - 1) / panel_width;
  if (nnz == 0) {
    SFAC_CUDA_TRY(cudaMemsetAsync(panel_offsets, 0, (panels + 1) * sizeof(int64_t), stream));
    return;
  }
  DeviceBuffer<int32_t> key(static_cast<size_t>(nnz), stream);
  panel_keys<<<1024, 256, 0, stream>>>(cols, nnz, panel_width, key.data(), order);
  SFAC_CUDA_CHECK_LAUNCH();
  try {
    const auto policy = thrust::cuda::par.on(stream);
    thrust::device_ptr<int32_t> k(key.data());
    // Stable: CSR order (rows ascending, columns ascending) within each panel.
    thrust::stable_sort_by_key(policy, k, k + nnz, thrust::device_ptr<int64_t>(order));
    thrust::lower_bound(policy, k, k + nnz, thrust::counting_iterator<int32_t>(0),
                        thrust::counting_iterator<int32_t>(static_cast<int32_t>(panels + 1)),
                        thrust::device_ptr<int64_t>(panel_offsets));
  } catch (const thrust::system_error& e) {
    fail(SFAC_ERR_DEVICE, "building the tiled sddmm plan: ", e.what());
  }
}

bool launch_sddmm_tiled(const SddmmArgs& args, const PanelOrder& panels, int64_t cols,
                        cudaStream_t stream) {
  if (args.nnz == 0) return true;
  bool launched = false;
  switch (args.elem) {
    case ElemType::F32:
      launched = launch_as<float>(args, panels, cols, stream);
      break;
    case ElemType::F16:
      launched = launch_as<__half>(args, panels, cols, stream);
      break;
    case ElemType::BF16:
      launched = launch_as<__nv_bfloat16>(args, panels, cols, stream);
      break;
  }
  if (launched) SFAC_CUDA_CHECK_LAUNCH();
  return launched;
}

}  // namespace sfac::cuda::kernels
