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

// Shared memory per block for the B slice: two blocks per SM on Hopper (228 KB per SM).
constexpr int64_t kSliceBytes = 96 * 1024;

__global__ void mark_segment_starts(const int32_t* row_of, const int32_t* cols, int64_t nnz,
                                    int64_t width, int8_t* start) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < nnz;
       e += int64_t{gridDim.x} * blockDim.x) {
    start[e] = e == 0 || row_of[e] != row_of[e - 1] || cols[e] / width != cols[e - 1] / width;
  }
}

__global__ void describe_segments(const int64_t* begin, int64_t count, int64_t nnz,
                                  const int32_t* row_of, const int32_t* cols, int64_t width,
                                  int64_t* end, int32_t* row, int32_t* panel, int64_t* length) {
  for (int64_t s = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; s < count;
       s += int64_t{gridDim.x} * blockDim.x) {
    end[s] = s + 1 < count ? begin[s + 1] : nnz;
    row[s] = row_of[begin[s]];
    panel[s] = static_cast<int32_t>(cols[begin[s]] / width);
    length[s] = end[s] - begin[s];
  }
}

// First index in [lo, hi) whose value is > key (upper) or >= key (lower), values ascending.
template <bool kUpper, typename V>
__device__ int64_t search(const V* values, int64_t lo, int64_t hi, int64_t key) {
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (kUpper ? values[mid] <= key : values[mid] < key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

struct IsSet {
  __device__ bool operator()(int8_t flag) const { return flag != 0; }
};

// One persistent block per share of the nonzeros (split at segment boundaries). For each panel
// in its share the block stages the panel's rows of B in shared memory, then its warps walk the
// segments: G lanes per nonzero, A's row slice in registers for the whole segment.
template <typename T, int G, int V>
__global__ void __launch_bounds__(kBlock)
    sddmm_tiled(SddmmArgs args, PanelSegments seg, int64_t cols) {
  extern __shared__ uint4 slice[];
  constexpr int kGroups = kWarp / G;
  constexpr int E = Elem<T>::kPerVec;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int group = lane / G, slot = lane % G;
  const unsigned mask = G == kWarp ? 0xffffffffu : (((1u << G) - 1u) << (group * G));
  const int64_t vecs = args.k / E;  // 16-byte vectors per row of A and B
  const auto* a = static_cast<const T*>(args.a);
  const auto* b = static_cast<const T*>(args.b);
  const int64_t lo = args.nnz * blockIdx.x / gridDim.x;
  const int64_t hi = args.nnz * (blockIdx.x + 1) / gridDim.x;
  int64_t s = search<false>(seg.nnz_before, 0, seg.count, lo);
  const int64_t s_end = search<false>(seg.nnz_before, 0, seg.count, hi);
  while (s < s_end) {
    const int32_t p = seg.panel[s];
    const int64_t next = search<true>(seg.panel, s, s_end, p);  // this panel's segments
    const int64_t first_col = int64_t{p} * seg.panel_width;
    const int64_t width = min(seg.panel_width, cols - first_col);
    __syncthreads();  // the previous panel's slice is no longer read
    const auto* src = reinterpret_cast<const uint4*>(b + first_col * args.k);
    for (int64_t t = threadIdx.x; t < width * vecs; t += blockDim.x) slice[t] = __ldg(src + t);
    __syncthreads();
    for (int64_t q = s + warp; q < next; q += blockDim.x / kWarp) {
      const int64_t i = seg.row[q];
      uint4 av[V];
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const int64_t t = slot + int64_t{v} * G;
        av[v] = t < vecs ? load_vec(a + i * args.k, t) : make_uint4(0, 0, 0, 0);
      }
      for (int64_t e = seg.begin[q] + group; e < seg.end[q]; e += kGroups) {
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
    s = next;
  }
}

template <typename T, int G, int V>
void launch(const SddmmArgs& args, const PanelSegments& seg, int64_t cols, cudaStream_t stream) {
  const size_t smem = static_cast<size_t>(seg.panel_width * args.k) * sizeof(T);
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
  sddmm_tiled<T, G, V><<<static_cast<int>(blocks), kBlock, smem, stream>>>(args, seg, cols);
}

template <typename T>
bool launch_as(const SddmmArgs& args, const PanelSegments& seg, int64_t cols, cudaStream_t stream) {
  constexpr int E = Elem<T>::kPerVec;
  if (args.k % E != 0) return false;
  const int64_t vecs = args.k / E;
  if (vecs <= 1)
    launch<T, 1, 1>(args, seg, cols, stream);
  else if (vecs <= 2)
    launch<T, 2, 1>(args, seg, cols, stream);
  else if (vecs <= 4)
    launch<T, 4, 1>(args, seg, cols, stream);
  else if (vecs <= 8)
    launch<T, 8, 1>(args, seg, cols, stream);
  else if (vecs <= 16)
    launch<T, 16, 1>(args, seg, cols, stream);
  else if (vecs <= 32)
    launch<T, 32, 1>(args, seg, cols, stream);
  else if (vecs <= 64)
    launch<T, 32, 2>(args, seg, cols, stream);
  else
    return false;
  return true;
}

}  // namespace

int64_t tiled_panel_width(int64_t k) {
  return std::max<int64_t>(1, kSliceBytes / (k * static_cast<int64_t>(sizeof(float))));
}

int64_t build_panel_segments(const int32_t* row_of, const int32_t* cols, int64_t nnz,
                             int64_t panel_width, int32_t* panel, int32_t* row, int64_t* begin,
                             int64_t* end, int64_t* nnz_before, cudaStream_t stream) {
  if (nnz == 0) return 0;
  DeviceBuffer<int8_t> start(static_cast<size_t>(nnz), stream);
  DeviceBuffer<int64_t> length(static_cast<size_t>(nnz), stream);
  mark_segment_starts<<<1024, 256, 0, stream>>>(row_of, cols, nnz, panel_width, start.data());
  SFAC_CUDA_CHECK_LAUNCH();
  int64_t count = 0;
  try {
    const auto policy = thrust::cuda::par.on(stream);
    thrust::device_ptr<int64_t> b(begin);
    count = thrust::copy_if(policy, thrust::counting_iterator<int64_t>(0),
                            thrust::counting_iterator<int64_t>(nnz),
                            thrust::device_ptr<int8_t>(start.data()), b, IsSet()) -
            b;
    describe_segments<<<1024, 256, 0, stream>>>(begin, count, nnz, row_of, cols, panel_width, end,
                                                row, panel, length.data());
    SFAC_CUDA_CHECK_LAUNCH();
    // Panel-major, rows ascending within a panel (the sort is stable and segments come in
    // row order).
    auto values = thrust::make_zip_iterator(
        thrust::make_tuple(thrust::device_ptr<int32_t>(row), b, thrust::device_ptr<int64_t>(end),
                           thrust::device_ptr<int64_t>(length.data())));
    thrust::stable_sort_by_key(policy, thrust::device_ptr<int32_t>(panel),
                               thrust::device_ptr<int32_t>(panel) + count, values);
    thrust::exclusive_scan(policy, thrust::device_ptr<int64_t>(length.data()),
                           thrust::device_ptr<int64_t>(length.data()) + count,
                           thrust::device_ptr<int64_t>(nnz_before));
  } catch (const thrust::system_error& e) {
    fail(SFAC_ERR_DEVICE, "building the tiled sddmm plan: ", e.what());
  }
  return count;
}

bool launch_sddmm_tiled(const SddmmArgs& args, const PanelSegments& segments, int64_t cols,
                        cudaStream_t stream) {
  if (args.nnz == 0) return true;
  bool launched = false;
  switch (args.elem) {
    case ElemType::F32:
      launched = launch_as<float>(args, segments, cols, stream);
      break;
    case ElemType::F16:
      launched = launch_as<__half>(args, segments, cols, stream);
      break;
    case ElemType::BF16:
      launched = launch_as<__nv_bfloat16>(args, segments, cols, stream);
      break;
  }
  if (launched) SFAC_CUDA_CHECK_LAUNCH();
  return launched;
}

}  // namespace sfac::cuda::kernels
