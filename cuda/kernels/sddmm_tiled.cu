#include <algorithm>
#include <cub/block/block_scan.cuh>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels/sddmm_common.cuh"
#include "cuda/kernels/sddmm_tiled.cuh"

namespace sfac::cuda::kernels {
namespace {

using namespace detail;

// Two blocks of 16 warps per SM: one can stage its band while the other computes.
constexpr int kTileThreads = 512;
constexpr int64_t kBandBytes = 88 * 1024;
constexpr int kMaxRowBlock = 512;
// Work items whose row is looked up in a shared table; a tile with more falls back to a
// binary search over piece_start.
constexpr int kMaxTableItems = 2 * kMaxRowBlock;
// Work items each group loads before computing any: their A and column loads are in flight
// together (one item is only ~8 nonzeros in a uniform 1% pattern).
constexpr int kItemsInFlight = 2;
// A row's range in a band is cut into work items of at most this many nonzeros, so one long
// row is spread over several groups.
constexpr int kPiece = 64;

// Four lanes per nonzero, each holding V 16-byte vectors of the K-slice: fewer lanes per
// nonzero mean fewer shuffles and selects per nonzero (the kernel is instruction-bound).
constexpr int kLanes = 4;
// 16-byte vectors per K-slice: 8 (V = 2) when K has that many, else 4.
int slice_vecs(int64_t vecs) { return vecs >= 8 ? 8 : 4; }

// Position of vector x of band column c: with 128-byte slices every column starts at bank 0,
// so odd columns swap their halves and two groups reading different columns in one
// quarter-warp phase hit different banks half of the time instead of never.
template <int S>
__device__ __forceinline__ int swizzle(int c, int x) {
  return S == 8 ? x ^ ((c & 1) << 2) : x;
}

// v[q] holds this lane's partial dot for nonzero q of the group (q < G). Afterwards v[0] on
// lane `slot` holds the full dot of nonzero `slot`: G - 1 shuffles for G nonzeros instead of
// log2(G) per nonzero, and the results land where a coalesced store wants them.
template <int G>
__device__ __forceinline__ void reduce_scatter(float (&v)[G], int slot) {
#pragma unroll
  for (int h = G / 2; h >= 1; h /= 2) {
    const bool upper = (slot & h) != 0;
#pragma unroll
    for (int i = 0; i < h; ++i) {
      const float send = upper ? v[i] : v[i + h];
      const float keep = upper ? v[i + h] : v[i];
      v[i] = keep + __shfl_xor_sync(0xffffffffu, send, h);
    }
  }
}

struct TileMeta {
  int64_t* seg_begin;    // CSR position of each row's first nonzero in the band
  int32_t* seg_len;      // nonzeros of each row in the band
  int32_t* piece_start;  // first work item of each row (R + 1 entries)
  uint16_t* item_row;    // row of each work item (kMaxTableItems entries)
};

// Row of a work item: from the table, else the last row whose first item is <= item.
__device__ __forceinline__ int row_of_item(const TileMeta& meta, int items, int nrows, int item) {
  if (items <= kMaxTableItems) return meta.item_row[item];
  int lo = 0, hi = nrows;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (meta.piece_start[mid] <= item) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

template <typename T, int V>
__global__ void __launch_bounds__(kTileThreads, 2)
    sddmm_band_tile(SddmmArgs args, BandTiling bt, int64_t cols_total, float* partial) {
  extern __shared__ uint4 smem[];
  uint4* band = smem;
  TileMeta meta;
  constexpr int G = kLanes, S = G * V;
  meta.seg_begin = reinterpret_cast<int64_t*>(band + bt.band_width * S);
  meta.seg_len = reinterpret_cast<int32_t*>(meta.seg_begin + bt.row_block);
  meta.piece_start = meta.seg_len + bt.row_block;
  meta.item_row = reinterpret_cast<uint16_t*>(meta.piece_start + bt.row_block + 1);

  const int64_t nb = bt.bands;
  const int64_t row0 = blockIdx.x / nb * bt.row_block;
  const int64_t j = blockIdx.x % nb;
  const int nrows = static_cast<int>(min(bt.row_block, args.rows - row0));
  const int64_t col0 = j * bt.band_width;
  const int width = static_cast<int>(min(bt.band_width, cols_total - col0));
  const int64_t vecs = args.k / Elem<T>::kPerVec;
  const int slices = static_cast<int>((vecs + S - 1) / S);

  // Each row's range in this band, and the work items it is cut into.
  using Scan = cub::BlockScan<int, kTileThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  constexpr int kRowsPerThread = kMaxRowBlock / kTileThreads;
  int pieces[kRowsPerThread];
#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i) {
    const int r = threadIdx.x * kRowsPerThread + i;
    pieces[i] = 0;
    if (r < nrows) {
      const int32_t* starts = bt.band_starts + (row0 + r) * (nb + 1) + j;
      const int lo = starts[0], len = starts[1] - lo;
      meta.seg_begin[r] = args.row_offsets[row0 + r] + lo;
      meta.seg_len[r] = len;
      pieces[i] = (len + kPiece - 1) / kPiece;
    }
  }
  int items = 0;
  Scan(scan_storage).ExclusiveSum(pieces, pieces, items);
#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i) {
    const int r = threadIdx.x * kRowsPerThread + i;
    if (r < nrows) meta.piece_start[r] = pieces[i];
  }
  if (items <= kMaxTableItems) {
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i) {
      const int r = threadIdx.x * kRowsPerThread + i;
      if (r < nrows) {
        const int count = (meta.seg_len[r] + kPiece - 1) / kPiece;
        for (int q = 0; q < count; ++q) meta.item_row[pieces[i] + q] = static_cast<uint16_t>(r);
      }
    }
  }
  if (threadIdx.x == 0) meta.piece_start[nrows] = items;
  __syncthreads();
  if (items == 0) return;  // block-uniform

  constexpr int kGroups = kTileThreads / G, kGroupsPerWarp = kWarp / G;
  const int slot = threadIdx.x % G, group = threadIdx.x / G;
  const int warp_first_group = threadIdx.x / kWarp * kGroupsPerWarp;
  const auto* a = static_cast<const T*>(args.a);
  const auto* b = static_cast<const T*>(args.b);
  for (int s = 0; s < slices; ++s) {
    const int64_t v0 = int64_t{s} * S;
    if (s > 0) __syncthreads();  // the previous slice's band is no longer read
    // Four loads in flight per thread while staging.
    for (int t0 = threadIdx.x; t0 < width * S; t0 += 4 * kTileThreads) {
      uint4 x[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int t = t0 + q * kTileThreads;
        const int64_t v = v0 + t % S;
        x[q] = t < width * S && v < vecs ? load_vec(b + (col0 + t / S) * args.k, v)
                                         : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int t = t0 + q * kTileThreads;
        if (t < width * S) band[t / S * S + swizzle<S>(t / S, t % S)] = x[q];
      }
    }
    __syncthreads();
    const bool first = s == 0, last = s == slices - 1;
    // The groups of a warp take consecutive work items and step through them together, so
    // every loop below is warp-uniform (shuffles need all lanes).
    for (int base = warp_first_group; base < items; base += kGroups * kItemsInFlight) {
      int n[kItemsInFlight], col[kItemsInFlight], col_next[kItemsInFlight];
      int64_t begin[kItemsInFlight];
      uint4 av[kItemsInFlight][V];
#pragma unroll
      for (int u = 0; u < kItemsInFlight; ++u) {
        const int item = base + u * kGroups + group - warp_first_group;
        n[u] = 0;
        begin[u] = 0;
        col[u] = 0;
        col_next[u] = 0;
#pragma unroll
        for (int v = 0; v < V; ++v) av[u][v] = make_uint4(0, 0, 0, 0);
        if (item < items) {
          const int r = row_of_item(meta, items, nrows, item);
          const int piece = item - meta.piece_start[r];
          begin[u] = meta.seg_begin[r] + int64_t{piece} * kPiece;
          n[u] = min(kPiece, meta.seg_len[r] - piece * kPiece);
#pragma unroll
          for (int v = 0; v < V; ++v) {
            const int64_t t = v0 + slot + v * G;
            if (t < vecs) av[u][v] = load_vec(a + (row0 + r) * args.k, t);
          }
          // Past the end a lane reads band column 0 (staged) and its result is dropped.
          // The first two sub-chunks' columns (an item averages ~7 nonzeros in a 1% pattern).
          if (slot < n[u]) col[u] = __ldg(args.cols + begin[u] + slot) - static_cast<int>(col0);
          if (G + slot < n[u]) {
            col_next[u] = __ldg(args.cols + begin[u] + G + slot) - static_cast<int>(col0);
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kItemsInFlight; ++u) {
        const int subs = __reduce_max_sync(0xffffffffu, (n[u] + G - 1) / G);
        for (int c = 0; c < subs; ++c) {
          const int off = c * G + slot;
          const bool valid = off < n[u];
          const int64_t e = begin[u] + off;
          const int cc = c == 0   ? col[u]
                         : c == 1 ? col_next[u]
                                  : (valid ? __ldg(args.cols + e) - static_cast<int>(col0) : 0);
          // All G steps run unguarded (lanes past the end read staged column 0): a branch
          // per step cost more than the steps it saves.
          float v[G];
#pragma unroll
          for (int q = 0; q < G; ++q) {
            const int cq = __shfl_sync(0xffffffffu, cc, q, G);
            const uint4* row = band + cq * S;
            v[q] = 0.0f;
#pragma unroll
            for (int w = 0; w < V; ++w) {
              v[q] += Elem<T>::dot(av[u][w], row[swizzle<S>(cq, slot + w * G)]);
            }
          }
          reduce_scatter<G>(v, slot);
          if (valid) {
            if (first && last) {
              store(args, e, v[0]);
            } else if (first) {
              partial[e] = v[0];
            } else if (!last) {
              partial[e] += v[0];
            } else {
              store(args, e, partial[e] + v[0]);
            }
          }
        }
      }
    }
  }
}

size_t smem_bytes(const BandTiling& bt, int slice) {
  return static_cast<size_t>(bt.band_width * slice) * sizeof(uint4) +
         static_cast<size_t>(bt.row_block) * (sizeof(int64_t) + 2 * sizeof(int32_t)) +
         sizeof(int32_t) + kMaxTableItems * sizeof(uint16_t);
}

template <typename T, int V>
void launch(const SddmmArgs& args, const BandTiling& bt, int64_t cols, float* partial,
            cudaStream_t stream) {
  const size_t smem = smem_bytes(bt, kLanes * V);
  SFAC_CUDA_TRY(cudaFuncSetAttribute(
      sddmm_band_tile<T, V>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  const int64_t tiles = (args.rows + bt.row_block - 1) / bt.row_block * bt.bands;
  sddmm_band_tile<T, V>
      <<<static_cast<unsigned>(tiles), kTileThreads, smem, stream>>>(args, bt, cols, partial);
}

template <typename T>
bool launch_as(const SddmmArgs& args, const BandTiling& bt, int64_t cols, cudaStream_t stream) {
  constexpr int E = Elem<T>::kPerVec;
  if (args.k % E != 0) return false;
  const int64_t vecs = args.k / E, slice = slice_vecs(vecs);
  // Partial sums of K-slices after the first: in P when nothing reads P's old values or S,
  // else in a scratch buffer from the pool.
  DeviceBuffer<float> scratch;
  float* partial = nullptr;
  if ((vecs + slice - 1) / slice > 1) {
    if (args.op == SddmmOp::Pattern && args.beta == 0.0f) {
      partial = args.p;
    } else {
      scratch = DeviceBuffer<float>(static_cast<size_t>(args.nnz), stream);
      partial = scratch.data();
    }
  }
  if (slice == 8) {
    launch<T, 2>(args, bt, cols, partial, stream);
  } else {
    launch<T, 1>(args, bt, cols, partial, stream);
  }
  return true;
}

// Band start offsets of row r: lower bound of each band's first column in the row's columns.
__global__ void band_starts_kernel(const int64_t* row_offsets, const int32_t* cols, int64_t rows,
                                   int64_t band_width, int64_t bands, int32_t* out) {
  const int64_t entries = rows * (bands + 1);
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < entries;
       t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = t / (bands + 1), j = t % (bands + 1);
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

}  // namespace

BandTiling plan_band_tiling(int64_t k, int64_t rows, int64_t cols, int64_t nnz, int sms) {
  BandTiling bt;
  // Sized for float32 factors; 16-bit factors use the same bands with the same or fewer
  // vectors per row slice.
  const int slice = slice_vecs(std::max<int64_t>(1, k / 4));
  bt.band_width = std::clamp<int64_t>(kBandBytes / (slice * 16), 1, std::max<int64_t>(cols, 1));
  bt.bands = std::max<int64_t>(1, (cols + bt.band_width - 1) / bt.band_width);
  // Rows per tile: enough that a staged band serves ~16 nonzeros per column on average, but
  // at least ~4 tiles per SM so the GPU stays busy.
  const double density =
      rows > 0 && cols > 0 ? static_cast<double>(nnz) / (double(rows) * double(cols)) : 1.0;
  int64_t r = density > 0 ? static_cast<int64_t>(16.0 / density) : kMaxRowBlock;
  const int64_t min_tiles = int64_t{4} * std::max(sms, 1);
  r = std::min<int64_t>(r, (rows * bt.bands + min_tiles - 1) / min_tiles);
  r = std::clamp<int64_t>((r + 31) / 32 * 32, 32, kMaxRowBlock);
  bt.row_block = r;
  return bt;
}

int64_t band_table_entries(const BandTiling& tiling, int64_t rows) {
  return rows * (tiling.bands + 1);
}

bool band_tiling_pays(const BandTiling& tiling, int64_t rows, int64_t nnz) {
  return band_table_entries(tiling, rows) <= std::max<int64_t>(nnz, 1);
}

void build_band_starts(const int64_t* row_offsets, const int32_t* cols, int64_t rows,
                       int64_t band_width, int64_t bands, int32_t* band_starts,
                       cudaStream_t stream) {
  if (rows == 0) return;
  band_starts_kernel<<<1024, 256, 0, stream>>>(row_offsets, cols, rows, band_width, bands,
                                               band_starts);
  SFAC_CUDA_CHECK_LAUNCH();
}

bool launch_sddmm_tiled(const SddmmArgs& args, const BandTiling& tiling, int64_t cols,
                        cudaStream_t stream) {
  if (args.nnz == 0) return true;
  bool launched = false;
  switch (args.elem) {
    case ElemType::F32:
      launched = launch_as<float>(args, tiling, cols, stream);
      break;
    case ElemType::F16:
      launched = launch_as<__half>(args, tiling, cols, stream);
      break;
    case ElemType::BF16:
      launched = launch_as<__nv_bfloat16>(args, tiling, cols, stream);
      break;
  }
  if (launched) SFAC_CUDA_CHECK_LAUNCH();
  return launched;
}

}  // namespace sfac::cuda::kernels
