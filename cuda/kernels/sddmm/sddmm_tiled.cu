#include <algorithm>
#include <climits>
#include <cub/block/block_scan.cuh>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels/common/cp_async.cuh"
#include "cuda/kernels/common/device_scan.cuh"
#include "cuda/kernels/sddmm/sddmm_common.cuh"
#include "cuda/kernels/sddmm/sddmm_tiled.cuh"

namespace sfac::cuda::kernels {
namespace {

using namespace detail;

// Two blocks of 8 warps per SM, each with a double-buffered band slice of 2 x 40 KB.
constexpr int kTileThreads = 256;
// Consecutive nonzeros per thread: one row's run shares A's slice in registers; 8 keeps the
// partial sums of every K-slice in registers.
constexpr int kPerThread = 8;
constexpr int kTileNnz = kTileThreads * kPerThread;
// 16-byte vectors per K-slice of a row (128 bytes: 32 float32 or 64 16-bit values).
constexpr int kSliceVecs = 8;
constexpr int kRowsPerThread = kMaxRowBlock / kTileThreads;

// K-slice [v0, v0 + 8) of the band's B rows into `buf` (row c at buf[c * 8]); vectors past K
// are zeros, so the dot loop needs no bounds check.
__device__ __forceinline__ void stage_slice(uint4* buf, const uint4* b, int64_t vecs, int64_t col0,
                                            int width, int64_t v0) {
  for (int t = threadIdx.x; t < width * kSliceVecs; t += kTileThreads) {
    const int64_t v = v0 + t % kSliceVecs;
    const bool inside = v < vecs;
    cp_async16(buf + t, b + (inside ? (col0 + t / kSliceVecs) * vecs + v : 0), inside);
  }
  cp_async_commit();
}

// Shared-memory slot of tile position p (thread p / 8's nonzero p % 8), stored [p % 8][p / 8]
// with rows 260 words apart: a thread walking its 8 nonzeros, and 32 lanes taking 32
// consecutive positions, both hit 32 different banks.
constexpr int kSlotRows = kPerThread, kSlotStride = kTileThreads + 4;
__device__ __forceinline__ int tile_slot(int p) {
  return p % kPerThread * kSlotStride + p / kPerThread;
}

template <typename T>
__global__ void __launch_bounds__(kTileThreads, 2)
    sddmm_band_tile(SddmmArgs args, BandTiling bt, int64_t cols_total) {
  extern __shared__ uint4 smem[];
  using Scan = cub::BlockScan<int, kTileThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  // Cell-relative position of each row's first nonzero in the band, and the row's CSR slot.
  __shared__ int32_t prefix[kMaxRowBlock + 1];
  __shared__ int64_t seg_begin[kMaxRowBlock];
  __shared__ int32_t where[kSlotRows * kSlotStride];
  __shared__ float partial[kSlotRows * kSlotStride];

  const int tile = blockIdx.x;
  const int cell = bt.tile_cell[tile];
  const int first = (tile - bt.cell_first_tile[cell]) * kTileNnz;
  const int64_t j = cell % bt.bands;
  const int64_t row0 = cell / bt.bands * bt.row_block;
  const int nrows = static_cast<int>(min(bt.row_block, args.rows - row0));
  const int64_t col0 = j * bt.band_width;
  const int width = static_cast<int>(min(bt.band_width, cols_total - col0));
  const int64_t vecs = args.k / Elem<T>::kPerVec;
  const int slices = static_cast<int>((vecs + kSliceVecs - 1) / kSliceVecs);
  const auto* a = static_cast<const uint4*>(args.a);
  const auto* b = static_cast<const uint4*>(args.b);
  const int64_t buf_vecs = bt.band_width * kSliceVecs;  // two buffers: smem, smem + buf_vecs

  // The first slice is in flight while the tile's rows are located.
  stage_slice(smem, b, vecs, col0, width, 0);

  int lens[kRowsPerThread];
#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i) {
    const int r = threadIdx.x * kRowsPerThread + i;
    lens[i] = 0;
    if (r < nrows) {
      const int lo = bt.seg_start[j * args.rows + row0 + r];
      lens[i] = bt.seg_start[(j + 1) * args.rows + row0 + r] - lo;
      seg_begin[r] = args.row_offsets[row0 + r] + lo;
    }
  }
  int total = 0;
  Scan(scan_storage).ExclusiveSum(lens, lens, total);
#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i) {
    const int r = threadIdx.x * kRowsPerThread + i;
    if (r < nrows) prefix[r] = lens[i];
  }
  if (threadIdx.x == 0) prefix[nrows] = total;
  __syncthreads();

  // This thread's nonzeros: cell positions f0 .. f0 + n - 1, row by row.
  const int f0 = first + static_cast<int>(threadIdx.x) * kPerThread;
  const int n = max(0, min(kPerThread, total - f0));
  int r = n > 0 ? row_of_position(prefix, nrows, f0) : 0;
  // Per nonzero i of thread t, at slot(t * 8 + i): its row, then also (high 16 bits / low 16
  // bits) its B row's offset in the band buffer; and its partial sum over K-slices. Shared
  // memory rather than registers so the nonzero loop is a real loop (unrolled, the compiler
  // hoists all eight nonzeros' loads: ~250 registers, spills) and so the column loads and the
  // result stores can run in tile order, coalesced, instead of per thread (one L2 sector
  // request per nonzero: the first version was L2-bound at 7% of DRAM bandwidth).
  for (int i = 0; i < n; ++i) {
    while (prefix[r + 1] <= f0 + i) ++r;
    where[tile_slot(threadIdx.x * kPerThread + i)] = r;
  }
  __syncthreads();
#pragma unroll
  for (int m = 0; m < kPerThread; ++m) {
    const int p = m * kTileThreads + threadIdx.x;
    if (first + p < total) {
      const int slot = tile_slot(p), row = where[slot];
      const int64_t e = seg_begin[row] + (first + p - prefix[row]);
      where[slot] = row << 16 | (__ldg(args.cols + e) - static_cast<int>(col0)) * kSliceVecs;
    }
  }

  // Lane l reads vector (q + l) % 8 of a row at step q: the 8 lanes of a quarter-warp phase hit
  // 8 different 16-byte bank groups whatever columns they read. A's slice is loaded in the same
  // rotated order, so the dot product pairs the right elements.
  const int rot = threadIdx.x % kSliceVecs;
  for (int s = 0; s < slices; ++s) {
    const int64_t v0 = int64_t{s} * kSliceVecs;
    cp_async_wait<0>();
    __syncthreads();  // slice s is visible, and nobody still reads the other buffer
    if (s + 1 < slices) {
      stage_slice(smem + ((s + 1) & 1) * buf_vecs, b, vecs, col0, width, v0 + kSliceVecs);
    }
    const uint4* band = smem + (s & 1) * buf_vecs;
    uint4 av[kSliceVecs];
    int cached = -1;
#pragma unroll 1
    for (int i = 0; i < n; ++i) {
      const int slot = tile_slot(threadIdx.x * kPerThread + i);
      const int w = where[slot], row = w >> 16;
      if (row != cached) {
        cached = row;
        const uint4* ar = a + (row0 + row) * vecs;
#pragma unroll
        for (int q = 0; q < kSliceVecs; ++q) {
          const int64_t v = v0 + (q + rot) % kSliceVecs;
          av[q] = v < vecs ? load_vec(ar, v) : make_uint4(0, 0, 0, 0);
        }
      }
      const uint4* br[1] = {band + (w & 0xffff)};
      float dot[1];
      rotated_chunk_dots<T>(av, br, rot, dot);
      partial[slot] = (s == 0 ? 0.0f : partial[slot]) + dot[0];
    }
  }
  __syncthreads();
#pragma unroll
  for (int m = 0; m < kPerThread; ++m) {
    const int p = m * kTileThreads + threadIdx.x;
    if (first + p < total) {
      const int slot = tile_slot(p), row = where[slot] >> 16;
      store(args, seg_begin[row] + (first + p - prefix[row]), partial[slot]);
    }
  }
}

size_t smem_bytes(const BandTiling& bt) {
  return static_cast<size_t>(2 * bt.band_width * kSliceVecs) * sizeof(uint4);
}

template <typename T>
void launch_as(const SddmmArgs& args, const BandTiling& bt, int64_t cols, cudaStream_t stream) {
  if (bt.tiles == 0) return;
  const size_t smem = smem_bytes(bt);
  SFAC_CUDA_TRY(cudaFuncSetAttribute(
      sddmm_band_tile<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  sddmm_band_tile<T>
      <<<static_cast<unsigned>(bt.tiles), kTileThreads, smem, stream>>>(args, bt, cols);
  SFAC_CUDA_CHECK_LAUNCH();
}

// seg_start[j * rows + r]: offset in row r of its first column >= j * W (the row's length for
// j = bands).
__global__ void seg_start_kernel(const int64_t* row_offsets, const int32_t* cols, int64_t rows,
                                 int64_t band_width, int64_t bands, int32_t* out) {
  const int64_t entries = rows * (bands + 1);
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < entries;
       t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t j = t / rows, r = t % rows;
    const int64_t begin = row_offsets[r];
    int64_t lo = begin, hi = row_offsets[r + 1];
    const int64_t key = j * band_width;
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (cols[mid] < key) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    out[t] = static_cast<int32_t>(lo - begin);
  }
}

// Tiles of each cell (warp per cell); cell = row block * bands + band.
__global__ void cell_tiles_kernel(const int32_t* seg_start, int64_t rows, int64_t bands,
                                  int64_t row_block, int64_t cells, int32_t* tiles) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kWarp);
  for (int64_t c = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarp; c < cells;
       c += warps) {
    const int64_t count = warp_cell_nonzeros(seg_start, rows, bands, row_block, c);
    if (lane == 0) tiles[c] = static_cast<int32_t>((count + kTileNnz - 1) / kTileNnz);
  }
}

__global__ void tile_cell_kernel(const int32_t* first_tile, int64_t cells, int32_t* tile_cell) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kWarp);
  for (int64_t c = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarp; c < cells;
       c += warps) {
    for (int32_t t = first_tile[c] + lane; t < first_tile[c + 1]; t += kWarp) {
      tile_cell[t] = static_cast<int32_t>(c);
    }
  }
}

int grid_for_warps(int64_t warps) {
  return static_cast<int>(std::clamp<int64_t>((warps * kWarp + 255) / 256, 1, 65536));
}

}  // namespace

int64_t band_table_entries(const BandTiling& tiling, int64_t rows) {
  return rows * (tiling.bands + 1);
}

void build_seg_starts(const int64_t* row_offsets, const int32_t* cols, int64_t rows,
                      int64_t band_width, int64_t bands, int32_t* seg_start, cudaStream_t stream) {
  if (rows == 0) return;
  seg_start_kernel<<<1024, 256, 0, stream>>>(row_offsets, cols, rows, band_width, bands, seg_start);
  SFAC_CUDA_CHECK_LAUNCH();
}

void build_band_tables(const int64_t* row_offsets, const int32_t* cols, int64_t rows,
                       BandTiling& bt, BandTables& tables, cudaStream_t stream) {
  bt.tiles = 0;
  if (rows == 0) return;
  const int64_t cells = (rows + bt.row_block - 1) / bt.row_block * bt.bands;
  tables.seg_start =
      DeviceBuffer<int32_t>(static_cast<size_t>(band_table_entries(bt, rows)), stream);
  build_seg_starts(row_offsets, cols, rows, bt.band_width, bt.bands, tables.seg_start.data(),
                   stream);
  // Tiles per cell, then their exclusive sum (one extra zero entry yields the total).
  DeviceBuffer<int32_t> counts(static_cast<size_t>(cells + 1), stream);
  SFAC_CUDA_TRY(cudaMemsetAsync(counts.data() + cells, 0, sizeof(int32_t), stream));
  cell_tiles_kernel<<<grid_for_warps(cells), 256, 0, stream>>>(
      tables.seg_start.data(), rows, bt.bands, bt.row_block, cells, counts.data());
  SFAC_CUDA_CHECK_LAUNCH();
  tables.cell_first_tile = DeviceBuffer<int32_t>(static_cast<size_t>(cells + 1), stream);
  exclusive_sum(counts.data(), tables.cell_first_tile.data(), cells + 1, stream);
  const int32_t total = read_back(tables.cell_first_tile.data() + cells, stream);
  bt.tiles = total;
  tables.tile_cell = DeviceBuffer<int32_t>(static_cast<size_t>(total), stream);
  tile_cell_kernel<<<grid_for_warps(cells), 256, 0, stream>>>(tables.cell_first_tile.data(), cells,
                                                              tables.tile_cell.data());
  SFAC_CUDA_CHECK_LAUNCH();
  bt.seg_start = tables.seg_start.data();
  bt.cell_first_tile = tables.cell_first_tile.data();
  bt.tile_cell = tables.tile_cell.data();
}

void launch_sddmm_tiled(const SddmmArgs& args, const BandTiling& tiling, int64_t cols,
                        cudaStream_t stream) {
  if (args.nnz == 0) return;
  switch (args.elem) {
    case ElemType::F32:
      return launch_as<float>(args, tiling, cols, stream);
    case ElemType::F16:
      return launch_as<__half>(args, tiling, cols, stream);
    case ElemType::BF16:
      return launch_as<__nv_bfloat16>(args, tiling, cols, stream);
  }
}

}  // namespace sfac::cuda::kernels
