#include <cooperative_groups.h>

#include <algorithm>
#include <climits>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels/common/cp_async.cuh"
#include "cuda/kernels/common/device_scan.cuh"
#include "cuda/kernels/common/grid_stride.cuh"
#include "cuda/kernels/sddmm/sddmm_cells.cuh"
#include "cuda/kernels/sddmm/sddmm_common.cuh"
#include "cuda/kernels/sddmm/sddmm_tiled.cuh"  // build_seg_starts

namespace sfac::cuda::kernels {
namespace {

using namespace detail;
namespace cg = cooperative_groups;

constexpr int kSide = static_cast<int>(kCellSide);
// Two threads per row of the cell, each taking every other nonzero of the row: 16 warps per
// multiprocessor to hide the shared-memory latency.
constexpr int kRowThreads = 2;
constexpr int kThreads = kSide * kRowThreads;
// 16-byte vectors of a row per staged chunk: 128 bytes, 32 float32 or 64 16-bit values.
constexpr int kChunkVecs = 8;
constexpr int kStageVecs = 2 * kSide * kChunkVecs;  // A's rows, then B's: 64 KB
// Cell slots whose partial sums (and local columns) live in shared memory in one pass: a cell
// of 256 x 256 up to 6% dense in one pass; denser cells take several.
constexpr int kSlots = 4096;
constexpr int kStages = 3;  // two chunks in flight while a third is read
constexpr size_t kStageBytes = kStages * kStageVecs * sizeof(uint4);
constexpr int64_t kMaxSplit = 8;  // the portable cluster size

// Clusters (sm_90+): the launcher splits K only on devices that have them.
__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();
#else
  cg::this_cluster().sync();
#endif
}

// Part `rank`'s sums in the calling block's cluster.
__device__ __forceinline__ const float* part_sums(float* sums, int rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();
  return sums + 0 * rank;
#else
  return cg::this_cluster().map_shared_rank(sums, rank);
#endif
}

// Block (cell, part): K chunks [part * per, (part + 1) * per) of every nonzero of the cell,
// staged two chunks ahead (their copies run under this chunk's dot products). The
// `split` parts of a cell form a thread block cluster: at the end of each pass every part adds
// a share of the slots over all parts' shared memory (in part order, so deterministic) and
// stores it to P. Everything about the cell's layout comes from the plan (cell_layout): rows
// in order of length, so that a warp's rows need about the same number of steps, each row's
// slots, and the nonzeros' local columns and CSR positions in cell order.
template <typename T>
__global__ void __launch_bounds__(kThreads, 1)
    sddmm_cell(SddmmArgs args, CellTiling ct, int64_t cols_total, int split, int per) {
  overlap_launch_with_prior_grid();
  extern __shared__ uint4 stage[];  // kStages chunks: A's rows, then B's rows, each
  __shared__ float sums[kSlots];
  __shared__ uint8_t local_col[kSlots];

  const int64_t cell = blockIdx.x / split;
  const int part = static_cast<int>(blockIdx.x % split);  // the block's rank in its cluster
  const int64_t band = cell % ct.bands;
  const int64_t row0 = cell / ct.bands * kSide, col0 = band * kSide;
  const int nrows = static_cast<int>(min(int64_t{kSide}, args.rows - row0));
  const int width = static_cast<int>(min(int64_t{kSide}, cols_total - col0));
  const int64_t vecs = args.k / Elem<T>::kPerVec;
  const int64_t chunks = (vecs + kChunkVecs - 1) / kChunkVecs;
  const int64_t c_begin = int64_t{part} * per, c_end = min(chunks, c_begin + per);
  const int64_t cell_base = ct.cell_first[cell];
  const int total = static_cast<int>(ct.cell_first[cell + 1] - cell_base);
  if (total == 0) return;  // the same for the whole cluster

  // Staging: thread t copies vector t % 8 of staged rows t / 8 + 64 i (A's rows, then B's).
  const auto* a = static_cast<const uint4*>(args.a);
  const auto* b = static_cast<const uint4*>(args.b);
  constexpr int kStageRows = kThreads / kChunkVecs, kStagePerThread = 2 * kSide / kStageRows;
  const uint4* src[kStagePerThread];
  bool valid[kStagePerThread];
#pragma unroll
  for (int i = 0; i < kStagePerThread; ++i) {
    const int r = static_cast<int>(threadIdx.x) / kChunkVecs + i * kStageRows;
    const bool is_b = r >= kSide;
    const int local = is_b ? r - kSide : r;
    valid[i] = local < (is_b ? width : nrows);
    src[i] =
        (is_b ? b + (col0 + local) * vecs : a + (row0 + local) * vecs) + threadIdx.x % kChunkVecs;
    if (!valid[i]) src[i] = a;
  }
  auto stage_chunk = [&](int64_t c) {
    uint4* buf = stage + (c - c_begin) % kStages * kStageVecs + threadIdx.x;
    const bool inside = c * kChunkVecs + threadIdx.x % kChunkVecs < vecs;  // zeros past K
#pragma unroll
    for (int i = 0; i < kStagePerThread; ++i) {
      const bool fill = inside && valid[i];
      cp_async16(buf + i * kThreads, fill ? src[i] + c * kChunkVecs : a, fill);
    }
    cp_async_commit();
  };
  auto stage_first_two = [&]() {
    stage_chunk(c_begin);
    if (c_begin + 1 < c_end) stage_chunk(c_begin + 1);
  };
  stage_first_two();

  const uint2 desc = ct.row_desc[cell * kSide + threadIdx.x / kRowThreads];
  const int my = desc.x & 0xffff, len = desc.x >> 16, first = static_cast<int>(desc.y);
  const int sub = threadIdx.x % kRowThreads;
  // Lane l reads vector (q + l) % 8 of a row at step q: a quarter-warp's 8 lanes hit 8
  // different 16-byte bank groups whichever rows they read.
  const int rot = threadIdx.x % kChunkVecs;

  for (int base = 0; base < total; base += kSlots) {
    // This thread's slots of the pass: first + sub, first + sub + kRowThreads, ... in [base, hi).
    const int start = first + sub;
    const int lo = start >= base
                       ? start
                       : start + (base - start + kRowThreads - 1) / kRowThreads * kRowThreads;
    const int hi = min(first + len, base + kSlots);
    const int n = min(kSlots, total - base);
    if (base > 0) {
      __syncthreads();  // the previous pass is done with the buffers and the slots
      stage_first_two();
    }
    {
      constexpr int kPerThread = kSlots / kThreads;
      uint8_t col[kPerThread];
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) {
        const int q = threadIdx.x + i * kThreads;
        col[i] = q < n ? __ldg(ct.local_cols + cell_base + base + q) : 0;
      }
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) {
        const int q = threadIdx.x + i * kThreads;
        if (q < n) local_col[q] = col[i];
      }
    }
    for (int64_t c = c_begin; c < c_end; ++c) {
      if (c + 1 < c_end) {
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      // Chunk c (and the columns) visible to all, and everybody done with chunk c - 1, whose
      // buffer takes chunk c + 2.
      __syncthreads();
      if (c + 2 < c_end) stage_chunk(c + 2);
      const uint4* as = stage + (c - c_begin) % kStages * kStageVecs;
      const uint4* bs = as + kSide * kChunkVecs;
      if (lo < hi) {
        uint4 av[kChunkVecs];
#pragma unroll
        for (int q = 0; q < kChunkVecs; ++q) {
          av[q] = as[my * kChunkVecs + (q + rot) % kChunkVecs];
        }
        const bool init = c == c_begin;
        int s = lo;
        // Two nonzeros per step: more loads in flight.
        for (; s + kRowThreads < hi; s += 2 * kRowThreads) {
          const uint4* br[2] = {bs + local_col[s - base] * kChunkVecs,
                                bs + local_col[s + kRowThreads - base] * kChunkVecs};
          float x[2];
          rotated_chunk_dots<T>(av, br, rot, x);
          sums[s - base] = init ? x[0] : sums[s - base] + x[0];
          sums[s + kRowThreads - base] = init ? x[1] : sums[s + kRowThreads - base] + x[1];
        }
        if (s < hi) {
          const uint4* br[1] = {bs + local_col[s - base] * kChunkVecs};
          float x[1];
          rotated_chunk_dots<T>(av, br, rot, x);
          sums[s - base] = init ? x[0] : sums[s - base] + x[0];
        }
      }
    }
    // Results in cell order (consecutive threads, consecutive slots); with several parts each
    // adds its share over the cluster's shared memory.
    if (split > 1) {
      cluster_sync();  // every part's sums of this pass are complete
    } else {
      __syncthreads();
    }
    const int share = (n + split - 1) / split;
    const int64_t* pos = ct.positions + cell_base + base;
    for (int q = part * share + threadIdx.x; q < min(n, (part + 1) * share); q += kThreads) {
      float sum = sums[q];
      if (split > 1) {
        sum = 0.0f;
        for (int r = 0; r < split; ++r) sum += part_sums(sums, r)[q];
      }
      store(args, __ldg(pos + q), sum);
    }
    if (split > 1) cluster_sync();  // nobody still reads this block's sums
  }
}

// Nonzeros of each cell (warp per cell).
__global__ void cell_counts(const int32_t* seg_start, int64_t rows, int64_t bands, int64_t cells,
                            int64_t* counts) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kWarp);
  for (int64_t c = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarp; c < cells;
       c += warps) {
    const int64_t count = warp_cell_nonzeros(seg_start, rows, bands, kSide, c);
    if (lane == 0) counts[c] = count;
  }
}

// A cell's layout (block per cell, thread per row): its rows by length (row_desc: local row |
// length << 16, first slot), and each slot's CSR position and local column, row by row.
__global__ void __launch_bounds__(kSide)
    cell_layout(const int32_t* seg_start, const int64_t* row_offsets, const int32_t* cols,
                int64_t rows, int64_t bands, int64_t cells, const int64_t* cell_first,
                uint2* row_desc, int64_t* positions, uint8_t* local_cols) {
  using Scan = cub::BlockScan<int, kSide>;
  using Sort = cub::BlockRadixSort<int, kSide, 1, int>;
  __shared__ union {
    typename Scan::TempStorage scan;
    typename Sort::TempStorage sort;
  } temp;
  __shared__ int row_first[kSide], row_len[kSide];
  const int r = threadIdx.x;
  for (int64_t c = blockIdx.x; c < cells; c += gridDim.x) {
    const int64_t band = c % bands, row0 = c / bands * kSide;
    int len = 0, first = 0, total = 0;
    int64_t e0 = 0;
    if (row0 + r < rows) {
      const int lo = seg_start[band * rows + row0 + r];
      len = seg_start[(band + 1) * rows + row0 + r] - lo;
      e0 = row_offsets[row0 + r] + lo;
    }
    Scan(temp.scan).ExclusiveSum(len, first, total);
    row_first[r] = first;
    row_len[r] = len;
    const int64_t out = cell_first[c] + first;
    for (int i = 0; i < len; ++i) {
      positions[out + i] = e0 + i;
      local_cols[out + i] = static_cast<uint8_t>(cols[e0 + i] - band * kSide);
    }
    int key[1] = {len}, row[1] = {r};
    __syncthreads();                       // the scan's storage is the sort's
    Sort(temp.sort).Sort(key, row, 0, 9);  // lengths are at most 256
    row_desc[c * kSide + r] = make_uint2(static_cast<unsigned>(row[0] | row_len[row[0]] << 16),
                                         static_cast<unsigned>(row_first[row[0]]));
    __syncthreads();  // the next cell reuses the storage and the tables
  }
}

template <typename T>
bool launch_as(const SddmmArgs& args, const CellTiling& ct, int64_t cols, cudaStream_t stream) {
  const int64_t chunks = (args.k / Elem<T>::kPerVec + kChunkVecs - 1) / kChunkVecs;
  // Parts per cell: as many as fit one wave of one block per multiprocessor, in whole chunks,
  // and at most a portable cluster (one part without clusters).
  const int64_t max_split = ct.clusters ? kMaxSplit : 1;
  const int64_t want =
      std::clamp<int64_t>(int64_t{ct.sms} / ct.cells, 1, std::min<int64_t>(chunks, max_split));
  const int64_t per = (chunks + want - 1) / want;
  const int64_t split = (chunks + per - 1) / per;
  if (ct.cells * split > INT_MAX) return false;
  // Launched as a programmatic dependent where the device allows (see launch_group in
  // sddmm_kernels.cu): 2k x 2k at 4%, float32 K = 512, 0.99-1.00x -> 1.00-1.04x cuSPARSE with
  // calls back to back on an H100 (docs/perf-notes.md).
  LaunchConfig launch(ct.cells * split, kThreads, kStageBytes, stream, args.dependent_launch);
  if (split > 1) {
    cudaLaunchAttribute cluster = {};
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = static_cast<unsigned>(split);
    cluster.val.clusterDim.y = 1;
    cluster.val.clusterDim.z = 1;
    launch.add(cluster);
  }
  SFAC_CUDA_TRY(cudaLaunchKernelEx(launch.get(), sddmm_cell<T>, args, ct, cols,
                                   static_cast<int>(split), static_cast<int>(per)));
  SFAC_CUDA_CHECK_LAUNCH();
  return true;
}

}  // namespace

bool build_cell_tables(const int64_t* row_offsets, const int32_t* cols, int64_t rows,
                       int64_t cols_total, int64_t nnz, int device, CellTiling& ct,
                       CellTables& tables, cudaStream_t stream) {
  SFAC_CUDA_TRY(cudaDeviceGetAttribute(&ct.sms, cudaDevAttrMultiProcessorCount, device));
  int major = 0, optin = 0;
  SFAC_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  SFAC_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  cudaFuncAttributes attributes{};
  SFAC_CUDA_TRY(cudaFuncGetAttributes(&attributes, sddmm_cell<float>));
  // Three staged chunks need Hopper's 227 KB per block (A100: 163 KB).
  if (kStageBytes + attributes.sharedSizeBytes > static_cast<size_t>(optin)) return false;
  ct.clusters = major >= 9;
  // Once per plan rather than per call (a host round trip of its own).
  for (const void* kernel : {reinterpret_cast<const void*>(sddmm_cell<float>),
                             reinterpret_cast<const void*>(sddmm_cell<__half>),
                             reinterpret_cast<const void*>(sddmm_cell<__nv_bfloat16>)}) {
    SFAC_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(kStageBytes)));
  }
  ct.bands = std::max<int64_t>(1, (cols_total + kCellSide - 1) / kCellSide);
  ct.cells = (rows + kCellSide - 1) / kCellSide * ct.bands;
  if (ct.cells == 0) return true;
  // Where each band starts in each row; needed only while the layout is built.
  DeviceBuffer<int32_t> seg_start(static_cast<size_t>(rows * (ct.bands + 1)), stream);
  build_seg_starts(row_offsets, cols, rows, kCellSide, ct.bands, seg_start.data(), stream);
  // Nonzeros per cell, then their exclusive sum (one extra zero entry yields the total).
  DeviceBuffer<int64_t> counts(static_cast<size_t>(ct.cells + 1), stream);
  SFAC_CUDA_TRY(cudaMemsetAsync(counts.data() + ct.cells, 0, sizeof(int64_t), stream));
  cell_counts<<<blocks_for(ct.cells * kWarp), 256, 0, stream>>>(seg_start.data(), rows, ct.bands,
                                                                ct.cells, counts.data());
  SFAC_CUDA_CHECK_LAUNCH();
  tables.cell_first = DeviceBuffer<int64_t>(static_cast<size_t>(ct.cells + 1), stream);
  exclusive_sum(counts.data(), tables.cell_first.data(), ct.cells + 1, stream);
  tables.positions = DeviceBuffer<int64_t>(static_cast<size_t>(nnz), stream);
  tables.local_cols = DeviceBuffer<uint8_t>(static_cast<size_t>(nnz), stream);
  tables.row_desc = DeviceBuffer<uint2>(static_cast<size_t>(ct.cells * kCellSide), stream);
  cell_layout<<<static_cast<unsigned>(std::min<int64_t>(ct.cells, 65536)), kSide, 0, stream>>>(
      seg_start.data(), row_offsets, cols, rows, ct.bands, ct.cells, tables.cell_first.data(),
      tables.row_desc.data(), tables.positions.data(), tables.local_cols.data());
  SFAC_CUDA_CHECK_LAUNCH();
  ct.cell_first = tables.cell_first.data();
  ct.row_desc = tables.row_desc.data();
  ct.positions = tables.positions.data();
  ct.local_cols = tables.local_cols.data();
  return true;
}

bool launch_sddmm_cells(const SddmmArgs& args, const CellTiling& tiling, int64_t cols,
                        cudaStream_t stream) {
  if (args.nnz == 0 || tiling.cells == 0) return true;
  switch (args.elem) {
    case ElemType::F32:
      return launch_as<float>(args, tiling, cols, stream);
    case ElemType::F16:
      return launch_as<__half>(args, tiling, cols, stream);
    case ElemType::BF16:
      return launch_as<__nv_bfloat16>(args, tiling, cols, stream);
  }
  return false;
}

}  // namespace sfac::cuda::kernels
