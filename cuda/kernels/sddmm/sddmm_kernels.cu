#include <algorithm>
#include <atomic>
#include <type_traits>

#include "cuda/cuda_check.h"
#include "cuda/kernels/common/grid_stride.cuh"
#include "cuda/kernels/sddmm/sddmm_common.cuh"
#include "cuda/kernels/sddmm/sddmm_group.cuh"
#include "cuda/kernels/sddmm/sddmm_kernels.cuh"

namespace sfac::cuda::kernels {
namespace {

using namespace detail;

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  return v;
}

// A warp's dot product of two K-vectors by 16-byte loads.
template <typename T>
__device__ __forceinline__ float warp_dot(const T* x, const T* y, int64_t k, int lane) {
  float acc = 0.0f;
  for (int64_t t = lane; t < k / Elem<T>::kPerVec; t += kWarp)
    acc += Elem<T>::dot(load_vec(x, t), load_vec(y, t));
  return warp_sum(acc);
}

// Warp per row, a warp per nonzero: the row split for rows of more than 256 vectors.
template <typename T>
__global__ void sddmm_row_split(SddmmArgs args) {
  const int lane = threadIdx.x % kWarp;
  const auto* a = static_cast<const T*>(args.a);
  const auto* b = static_cast<const T*>(args.b);
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kWarp);
  for (int64_t i = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarp; i < args.rows;
       i += warps) {
    for (int64_t e = args.row_offsets[i]; e < args.row_offsets[i + 1]; ++e) {
      const float dot = warp_dot(a + i * args.k, b + int64_t{args.cols[e]} * args.k, args.k, lane);
      if (lane == 0) store(args, e, dot);
    }
  }
}

template <typename T>
__global__ void sddmm_nnz_split(SddmmArgs args) {
  const int lane = threadIdx.x % kWarp;
  const auto* a = static_cast<const T*>(args.a);
  const auto* b = static_cast<const T*>(args.b);
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kWarp);
  for (int64_t e = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarp; e < args.nnz;
       e += warps) {
    const float dot = warp_dot(a + int64_t{args.row_of[e]} * args.k,
                               b + int64_t{args.cols[e]} * args.k, args.k, lane);
    if (lane == 0) store(args, args.positions ? args.positions[e] : e, dot);
  }
}

// Warps walk chunks of consecutive nonzeros (CSR order, row of each nonzero from row_of), 32 at
// a time: lane t loads column and row of nonzero t in one coalesced access, the group step
// computes the 32 dot products, and the lanes store them (a permutation of the 32 positions, so
// still one coalesced store), where one nonzero per group step would load its indices on its
// own. When the pattern's rows are much longer than 32
// nonzeros (`row_ends`) and the factor rows at most 16 vectors (float32 K <= 64, 16-bit K <=
// 128), a warp remembers where its current pattern row ends and reads no row_of entries for
// passes inside it: 4 of the 8 index bytes per nonzero.
constexpr int kRowEndVecs = 16;

// Blocks of kBlock threads an SM must hold (0: left to the compiler). The bfloat16 instances of
// 4 and 8 lanes x 4 vectors (K = 72-256) took 130-144 registers without it: one block an SM, half
// the loads in flight of two (docs/perf-notes.md). A bound on the other instances made the
// compiler spend the allowance (64 -> 128 registers, with spills).
template <typename T, int G, int V>
constexpr int kMinGroupBlocks = std::is_same_v<T, __nv_bfloat16>&& G <= 8 && V == 4 ? 2 : 0;

template <typename T, int G, int V, bool kFull>
__global__ void __launch_bounds__(kBlock, kMinGroupBlocks<T, G, V>)
    sddmm_group(SddmmArgs args, int64_t chunk, bool row_ends) {
  overlap_launch_with_prior_grid();
  const int lane = threadIdx.x % kWarp;
  const auto* a = static_cast<const T*>(args.a);
  const auto* b = static_cast<const T*>(args.b);
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kWarp);
  uint4 av[V];
  int cached_row = -1;
  for (int64_t begin = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarp * chunk;
       begin < args.nnz; begin += warps * chunk) {
    const int64_t end = min(begin + chunk, args.nnz);
    int row = -1;          // the row of the previous pass's last nonzero (row_ends)
    int64_t row_end = -1;  // and where it ends
    for (int64_t base = begin; base < end; base += kWarp) {
      const int64_t e = base + lane;
      const bool valid = e < end;
      // Past the end a lane reads column 0 (a valid B row) and row -1 (never computed).
      const int my_col = valid ? __ldg(args.cols + e) : 0;
      float result;
      if constexpr (G * V <= kRowEndVecs) {
        int my_row = -1, row0 = row;
        bool one_row = true;
        if (base + kWarp > row_end) {  // else the whole pass lies in `row` (warp-uniform)
          my_row = valid ? __ldg(args.row_of + e) : -1;
          // Lane 0's nonzero always exists; lanes past the end have row -1.
          row0 = __shfl_sync(0xffffffffu, my_row, 0);
          one_row = __all_sync(0xffffffffu, my_row == row0 || my_row < 0);
          if (row_ends) {
            row = __shfl_sync(0xffffffffu, my_row,
                              static_cast<int>(min(end - base, int64_t{kWarp})) - 1);
            row_end = __ldg(args.row_offsets + row + 1);
          }
        }
        result =
            one_row
                ? group_dots<T, G, V, kFull, true>(a, b, args.k, my_col, row0, av, cached_row)
                : group_dots<T, G, V, kFull, false>(a, b, args.k, my_col, my_row, av, cached_row);
      } else {
        // Wider rows read row_of every pass: the row-end bookkeeping cost whole-warp groups
        // registers (64 -> 80 for bfloat16 K = 512) and up to 25%, and float32 K = 128 (8 x 4)
        // 1-3%, while rows of 4-16 vectors gained up to 7% (docs/perf-notes.md).
        const int my_row = valid ? __ldg(args.row_of + e) : -1;
        const int row0 = __shfl_sync(0xffffffffu, my_row, 0);
        result =
            __all_sync(0xffffffffu, my_row == row0 || my_row < 0)
                ? group_dots<T, G, V, kFull, true>(a, b, args.k, my_col, row0, av, cached_row)
                : group_dots<T, G, V, kFull, false>(a, b, args.k, my_col, my_row, av, cached_row);
      }
      const int64_t mine = base + group_result_index<G>(lane);
      if (mine < end) store(args, args.positions ? __ldg(args.positions + mine) : mine, result);
    }
  }
}

// Row split with sub-warp groups: a warp per row, the row's slice of A in registers for all of
// its nonzeros (group_dots with kOneRow), no row_of array. The row's nonzeros go 32 at a time
// through the group step; a last pass of fewer than G nonzeros goes nonzero by nonzero through
// the whole warp instead, which takes fewer steps than the group step's G (a row of 1-3
// nonzeros would otherwise cost as much as one of 32).
template <typename T, int G, int V, bool kFull>
__global__ void __launch_bounds__(kBlock, kMinGroupBlocks<T, G, V>)
    sddmm_group_rows(SddmmArgs args) {
  overlap_launch_with_prior_grid();
  const int lane = threadIdx.x % kWarp;
  const auto* a = static_cast<const T*>(args.a);
  const auto* b = static_cast<const T*>(args.b);
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kWarp);
  uint4 av[V];
  int cached_row = -1;
  for (int64_t i = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarp; i < args.rows;
       i += warps) {
    const int64_t end = __ldg(args.row_offsets + i + 1);
    for (int64_t base = __ldg(args.row_offsets + i); base < end; base += kWarp) {
      if (end - base < G) {
        for (int64_t e = base; e < end; ++e) {
          const float dot =
              warp_dot(a + i * args.k, b + int64_t{__ldg(args.cols + e)} * args.k, args.k, lane);
          if (lane == 0) store(args, e, dot);
        }
        break;
      }
      const int64_t e = base + lane;
      const int my_col = e < end ? __ldg(args.cols + e) : 0;  // past the end: a valid B row
      const float result = group_dots<T, G, V, kFull, true>(a, b, args.k, my_col,
                                                            static_cast<int>(i), av, cached_row);
      const int64_t mine = base + group_result_index<G>(lane);
      if (mine < end) store(args, mine, result);
    }
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

__global__ void gather_entries(const int64_t* positions, int64_t n, const int32_t* cols,
                               const int32_t* row_of, int32_t* out_cols, int32_t* out_rows) {
  for_each_index(n, [&](int64_t i) {
    const int64_t e = positions[i];
    out_cols[i] = cols[e];
    out_rows[i] = row_of[e];
  });
}

// Enough warps for the work items, capped (grid-stride loops do the rest).
int grid_for(int64_t warps_wanted) {
  const int64_t blocks = (warps_wanted * kWarp + kBlock - 1) / kBlock;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(blocks, 65536)));
}

// Nonzeros per warp chunk, in units of 32: long chunks amortize the A reload and loop overhead,
// but a small pattern then leaves most of the GPU idle; aim for at least ~16k warps of work
// first (docs/perf-notes.md).
constexpr int64_t kMaxChunkSubs = 32;
constexpr int64_t kTargetWarps = 16384;

// Rows at least this long on average skip the row_of reads inside a row: shorter ones would
// pay a dependent row_offsets load at most passes.
constexpr int64_t kLongRow = 4 * kWarp;

// Warps of `kernel` resident on the current device at once (cached per device).
template <typename Kernel>
int64_t resident_warps(Kernel kernel) {
  constexpr int kCachedDevices = 16;
  static std::atomic<int64_t> cache[kCachedDevices] = {};
  int device = 0;
  SFAC_CUDA_TRY(cudaGetDevice(&device));
  if (device < kCachedDevices) {
    if (const int64_t known = cache[device].load(std::memory_order_relaxed)) return known;
  }
  int blocks = 0, sms = 0;
  SFAC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kBlock, 0));
  SFAC_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int64_t warps = std::max<int64_t>(1, int64_t{blocks} * sms * (kBlock / kWarp));
  if (device < kCachedDevices) cache[device].store(warps, std::memory_order_relaxed);
  return warps;
}

// Patterns of at most two waves of one-pass warps (about 1M nonzeros on an H100): the group
// kernel's time there is launch and load latency rather than bytes.
bool latency_bound(int64_t nnz) { return nnz <= 2 * kWarp * kTargetWarps; }

template <typename T, int G, int V>
void launch_group(const SddmmArgs& args, cudaStream_t stream) {
  int64_t subs = std::clamp<int64_t>(args.nnz / (kWarp * kTargetWarps), 1, kMaxChunkSubs);
  // A pattern of between one and two waves of one-pass warps (uniform 2k: 5000 warps, ~4200
  // resident) runs as one wave of two-pass chunks instead: the partial second wave costs a
  // round of L2 latency on these latency-bound sizes. Measured on an H100 (uniform 2k, float32):
  // K = 32 / 128 / 512 12-17% / 5-7% / 5% faster; bfloat16 K = 128 ran 11% slower and K = 32
  // the same, so 16-bit factors keep two waves (docs/perf-notes.md).
  const int64_t passes = (args.nnz + kWarp - 1) / kWarp;
  if (std::is_same_v<T, float> && latency_bound(args.nnz)) {
    const int64_t resident = resident_warps(sddmm_group<T, G, V, true>);
    if (passes > resident && passes <= 2 * resident) subs = (passes + resident - 1) / resident;
  }
  const int64_t chunk = subs * kWarp;
  const int grid = grid_for((args.nnz + chunk - 1) / chunk);
  // Positions mean a subset of the pattern, whose row ends row_offsets does not give.
  const bool row_ends = !args.positions && args.nnz >= kLongRow * args.rows;
  // K that fills every lane's vectors (K = 32, 128, 512...) needs no bounds check per load.
  auto kernel = args.k / Elem<T>::kPerVec == int64_t{G} * V ? sddmm_group<T, G, V, true>
                                                            : sddmm_group<T, G, V, false>;
  // Launched as a programmatic dependent of the stream's previous kernel where the device
  // allows: its blocks are scheduled while that kernel drains and wait for it to complete
  // before touching memory (overlap_launch_with_prior_grid). Measured on an H100 with calls
  // back to back, 2k x 2k at 4%: K = 32 1.03-1.06x -> 1.17-1.22x cuSPARSE (bfloat16 1.09-1.11x
  // -> 1.29-1.35x), bfloat16 K = 128 1.10x -> 1.23-1.26x; no change on the large patterns
  // (docs/perf-notes.md).
  const LaunchConfig launch(grid, kBlock, 0, stream, args.dependent_launch);
  SFAC_CUDA_TRY(cudaLaunchKernelEx(launch.get(), kernel, args, chunk, row_ends));
}

template <typename T>
bool launch_grouped(const SddmmArgs& args, cudaStream_t stream) {
  // 16-bit rows of 16 vectors (K = 128) on small patterns: groups of 8 lanes x 2 vectors (78
  // registers, 3 blocks per SM) instead of 4 x 4 (123 registers, 2 blocks), so that more warps
  // have loads in flight. Measured on an H100, bfloat16 K = 128: 2k x 2k at 4% 1.01-1.02x ->
  // 1.08-1.11x cuSPARSE, but 5-18% slower on the suite's patterns of 10M nonzeros and more,
  // where the wider groups' loads in flight per lane pay (docs/perf-notes.md).
  if constexpr (!std::is_same_v<T, float>) {
    if (args.k / Elem<T>::kPerVec == 16 && latency_bound(args.nnz)) {
      launch_group<T, 8, 2>(args, stream);
      return true;
    }
  }
  return with_group_shape(args.k / Elem<T>::kPerVec, [&](auto g, auto v) {
    launch_group<T, decltype(g)::value, decltype(v)::value>(args, stream);
  });
}

// The grouped row split for rows of at most 256 vectors; false otherwise (the caller then runs a
// warp per nonzero of the row).
template <typename T>
bool launch_rows_grouped(const SddmmArgs& args, cudaStream_t stream) {
  const int64_t vecs = args.k / Elem<T>::kPerVec;
  return with_group_shape(vecs, [&](auto g, auto v) {
    constexpr int G = decltype(g)::value, V = decltype(v)::value;
    auto kernel =
        vecs == int64_t{G} * V ? sddmm_group_rows<T, G, V, true> : sddmm_group_rows<T, G, V, false>;
    const LaunchConfig launch(grid_for(args.rows), kBlock, 0, stream, args.dependent_launch);
    SFAC_CUDA_TRY(cudaLaunchKernelEx(launch.get(), kernel, args));
  });
}

template <typename T>
void launch_row_split_as(const SddmmArgs& args, cudaStream_t stream) {
  if (!launch_rows_grouped<T>(args, stream)) {
    sddmm_row_split<T><<<grid_for(args.rows), kBlock, 0, stream>>>(args);
  }
}

template <typename T>
void launch_nnz_split_as(const SddmmArgs& args, cudaStream_t stream) {
  if (!launch_grouped<T>(args, stream)) {
    sddmm_nnz_split<T><<<grid_for(args.nnz), kBlock, 0, stream>>>(args);
  }
}

}  // namespace

void launch_sddmm_row_split(const SddmmArgs& args, cudaStream_t stream) {
  if (args.rows == 0) return;
  switch (args.elem) {
    case ElemType::F32:
      launch_row_split_as<float>(args, stream);
      break;
    case ElemType::F16:
      launch_row_split_as<__half>(args, stream);
      break;
    case ElemType::BF16:
      launch_row_split_as<__nv_bfloat16>(args, stream);
      break;
  }
  SFAC_CUDA_CHECK_LAUNCH();
}

void launch_sddmm_nnz_split(const SddmmArgs& args, cudaStream_t stream) {
  if (args.nnz == 0) return;
  switch (args.elem) {
    case ElemType::F32:
      launch_nnz_split_as<float>(args, stream);
      break;
    case ElemType::F16:
      launch_nnz_split_as<__half>(args, stream);
      break;
    case ElemType::BF16:
      launch_nnz_split_as<__nv_bfloat16>(args, stream);
      break;
  }
  SFAC_CUDA_CHECK_LAUNCH();
}

void launch_gather_entries(const int64_t* positions, int64_t n, const int32_t* cols,
                           const int32_t* row_of, int32_t* out_cols, int32_t* out_rows,
                           cudaStream_t stream) {
  if (n == 0) return;
  gather_entries<<<blocks_for(n), 256, 0, stream>>>(positions, n, cols, row_of, out_cols, out_rows);
  SFAC_CUDA_CHECK_LAUNCH();
}

void launch_expand_rows(const int64_t* row_offsets, int64_t rows, int32_t* row_of,
                        cudaStream_t stream) {
  if (rows == 0) return;
  expand_rows<<<grid_for(rows), kBlock, 0, stream>>>(row_offsets, rows, row_of);
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
