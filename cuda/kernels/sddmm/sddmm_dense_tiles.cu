#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cub/block/block_scan.cuh>

#include "cuda/cuda_check.h"
#include "cuda/kernels/common/cp_async.cuh"
#include "cuda/kernels/sddmm/sddmm_common.cuh"
#include "cuda/kernels/sddmm/sddmm_corner.cuh"
#include "cuda/kernels/sddmm/sddmm_dense_tiles.cuh"

namespace sfac::cuda::kernels {
namespace {

using namespace detail;

constexpr int kTile = static_cast<int>(kDenseTile);
constexpr int kThreads = 256;  // 8 warps, 2 x 4, each computing 64 x 32 of the tile
constexpr int kSliceK = 64;    // 16-bit elements of K per staged slice (128 bytes a row)
// Row stride of a staged slice in elements (144 bytes): the 8 rows an ldmatrix phase reads
// then start on 8 different bank quads instead of one.
constexpr int kPadK = kSliceK + 8;
constexpr int kStages = 3;                 // slices in flight: loads hide behind two slices
constexpr int kStage = 2 * kTile * kPadK;  // A and B slices, elements
constexpr int kCStride = kTile + 4;        // floats per row of the finished tile
// Each thread stages the same 16-byte chunk of 4 rows (rows t / 8 + 32 i) of A and of B.
constexpr int kChunks = kSliceK / 8, kRowsPerThread = kTile * kChunks / kThreads;

template <typename T>
struct Mma;
template <>
struct Mma<__nv_bfloat16> {
  __device__ static void run(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
template <>
struct Mma<__half> {
  __device__ static void run(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

// This thread's 4 rows of one operand (tile rows first + t / 8 + 32 i, chunk t % 8): pointers
// set once, then each K-slice is one cp.async per row (zeros past the matrix or past K; K is a
// multiple of 8, so a 16-byte chunk is all inside or all outside). Tile row r is matrix row
// ids[r] when `ids` is given (rows gathered in degree order), row r otherwise.
template <typename T>
struct Stager {
  const T* row[kRowsPerThread];
  bool valid[kRowsPerThread];
  int dst, chunk_k;

  __device__ Stager(const T* m, int64_t k, int64_t rows, int64_t first, const int32_t* ids) {
    chunk_k = threadIdx.x % kChunks * 8;
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i) {
      const int64_t r = first + threadIdx.x / kChunks + i * (kThreads / kChunks);
      valid[i] = r < rows;
      const int64_t id = valid[i] && ids ? __ldg(ids + r) : r;
      row[i] = m + (valid[i] ? id * k + chunk_k : 0);
    }
    dst = threadIdx.x / kChunks * kPadK + chunk_k;
  }
  __device__ void stage(T* buf, int64_t k, int64_t k0) const {
    const bool inside = k0 + chunk_k < k;
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i) {
      const bool fill = inside && valid[i];
      cp_async16(buf + dst + i * (kThreads / kChunks) * kPadK, fill ? row[i] + k0 : row[i], fill);
    }
  }
};

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  const auto addr = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// A x B^T of one 128 x 128 tile, left in shared memory as floats (row r at smem + r * kCStride,
// over the staging buffers). `overlap()` runs while the first K-slices load.
template <typename T, typename Overlap>
__device__ __forceinline__ float* tile_product(const Stager<T>& sa, const Stager<T>& sb, int64_t k,
                                               uint4* smem_raw, Overlap overlap) {
  T* sm = reinterpret_cast<T*>(smem_raw);
  const int slices = static_cast<int>((k + kSliceK - 1) / kSliceK);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int g = lane / 4, t4 = lane % 4;  // the fragment layout's group and thread in group
  const int wm = warp / 4 * 64, wn = warp % 4 * 32;

  // Slices 0 .. kStages - 2 in flight (one commit group each, empty past the last slice).
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < slices) {
      T* buf = sm + s * kStage;
      sa.stage(buf, k, int64_t{s} * kSliceK);
      sb.stage(buf + kTile * kPadK, k, int64_t{s} * kSliceK);
    }
    cp_async_commit();
  }
  overlap();

  // ldmatrix addresses: A's 16 x 16 fragment (lane -> row lane % 16, k half lane / 16) and
  // two of B's 8 x 16 fragments (lane -> n (lane / 16) * 8 + lane % 8, k half lane / 8 % 2).
  const int a_off = (wm + lane % 16) * kPadK + lane / 16 * 8;
  const int b_off = (wn + lane / 16 * 8 + lane % 8) * kPadK + lane / 8 % 2 * 8;
  float acc[4][4][4] = {};
  for (int s = 0; s < slices; ++s) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // slice s is visible, and nobody still reads slice s - 1's buffer
    const int next = s + kStages - 1;
    if (next < slices) {
      T* buf = sm + next % kStages * kStage;
      sa.stage(buf, k, int64_t{next} * kSliceK);
      sb.stage(buf + kTile * kPadK, k, int64_t{next} * kSliceK);
    }
    cp_async_commit();
    const T* as = sm + s % kStages * kStage;
    const T* bs = as + kTile * kPadK;
#pragma unroll
    for (int kk = 0; kk < kSliceK; kk += 16) {
      uint32_t af[4][4], bf[4][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) ldmatrix_x4(af[mi], as + a_off + mi * 16 * kPadK + kk);
#pragma unroll
      for (int nj = 0; nj < 2; ++nj) {
        uint32_t r[4];
        ldmatrix_x4(r, bs + b_off + nj * 16 * kPadK + kk);
        bf[2 * nj][0] = r[0];
        bf[2 * nj][1] = r[1];
        bf[2 * nj + 1][0] = r[2];
        bf[2 * nj + 1][1] = r[3];
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) Mma<T>::run(acc[mi][ni], af[mi], bf[ni]);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the staging buffers now hold the finished tile
  float* cs = reinterpret_cast<float*>(smem_raw);
#pragma unroll
  for (int mi = 0; mi < 4; ++mi) {
#pragma unroll
    for (int ni = 0; ni < 4; ++ni) {
      const int r = wm + mi * 16 + g, c = wn + ni * 8 + t4 * 2;
      cs[r * kCStride + c] = acc[mi][ni][0];
      cs[r * kCStride + c + 1] = acc[mi][ni][1];
      cs[(r + 8) * kCStride + c] = acc[mi][ni][2];
      cs[(r + 8) * kCStride + c + 1] = acc[mi][ni][3];
    }
  }
  __syncthreads();
  return cs;
}

// Consecutive threads on consecutive nonzeros (coalesced), a few in flight per thread.
constexpr int kUnroll = 4;

// Every tile of the pattern's 128 x 128 grid; its nonzeros are found with the band-start table.
template <typename T>
__global__ void __launch_bounds__(kThreads, 2)
    sddmm_dense_tile(SddmmArgs args, DenseTiling dt, int64_t cols_total) {
  overlap_launch_with_prior_grid();
  extern __shared__ uint4 smem_raw[];
  using Scan = cub::BlockScan<int, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ int32_t prefix[kTile + 1];  // tile position of each row's first nonzero
  __shared__ int64_t seg_begin[kTile];   // CSR slot of each row's first nonzero in the tile
  const int64_t j = blockIdx.x % dt.bands;
  const int64_t row0 = blockIdx.x / dt.bands * kTile, col0 = j * kTile;
  const Stager<T> sa(static_cast<const T*>(args.a), args.k, args.rows, row0, nullptr);
  const Stager<T> sb(static_cast<const T*>(args.b), args.k, cols_total, col0, nullptr);
  int total = 0;
  // Where each row's nonzeros of this tile sit, while the slices load.
  const float* cs = tile_product(sa, sb, args.k, smem_raw, [&] {
    static_assert(kTile <= kThreads, "a thread per tile row");
    const int my_row = threadIdx.x;
    int len = 0;
    if (my_row < kTile && row0 + my_row < args.rows) {
      const int lo = dt.seg_start[j * args.rows + row0 + my_row];
      len = dt.seg_start[(j + 1) * args.rows + row0 + my_row] - lo;
      seg_begin[my_row] = args.row_offsets[row0 + my_row] + lo;
    }
    Scan(scan_storage).ExclusiveSum(len, len, total);
    if (my_row < kTile) prefix[my_row] = len;
    if (threadIdx.x == 0) prefix[kTile] = total;
  });
  // The tile's nonzeros in CSR order.
  for (int p0 = 0; p0 < total; p0 += kUnroll * kThreads) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int p = p0 + u * kThreads + threadIdx.x;
      if (p < total) {
        const int lo = row_of_position(prefix, kTile, p);
        const int64_t e = seg_begin[lo] + (p - prefix[lo]);
        store(args, e, cs[lo * kCStride + (__ldg(args.cols + e) - static_cast<int>(col0))]);
      }
    }
  }
}

// The listed tiles of the degree-ranked pattern (rows and columns gathered through the rank
// tables); each tile's nonzeros come from its entry list, sorted by CSR position.
template <typename T>
__global__ void __launch_bounds__(kThreads, 2)
    sddmm_corner_tile(SddmmArgs args, CornerTiling ct, int64_t cols_total) {
  extern __shared__ uint4 smem_raw[];
  const int64_t t = blockIdx.x;
  const int64_t row0 = int64_t{ct.tile_row_band[t]} * kTile;
  const int64_t col0 = int64_t{ct.tile_col_band[t]} * kTile;
  const Stager<T> sa(static_cast<const T*>(args.a), args.k, args.rows, row0, ct.row_ids);
  const Stager<T> sb(static_cast<const T*>(args.b), args.k, cols_total, col0, ct.col_ids);
  const float* cs = tile_product(sa, sb, args.k, smem_raw, [] {});
  const int64_t lo = ct.entry_start[t], hi = ct.entry_start[t + 1];
  constexpr int64_t kMask = (int64_t{1} << kCornerPlace) - 1;
  for (int64_t i0 = lo; i0 < hi; i0 += kUnroll * kThreads) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = i0 + u * kThreads + threadIdx.x;
      if (i < hi) {
        const int64_t v = __ldg(ct.entries + i);
        const int place = static_cast<int>(v & kMask);  // local row * 128 + local column
        store(args, v >> kCornerPlace, cs[place / kTile * kCStride + place % kTile]);
      }
    }
  }
}

constexpr size_t kSmemBytes = kStages * kStage * 2;  // 16-bit A and B slices
static_assert(kTile * kCStride * sizeof(float) <= kSmemBytes, "the tile must fit the buffers");

// One block per tile, the staging buffers as dynamic shared memory (allowed beyond the 48 KB
// default once per plan: allow_tile_shared_memory). `dependent`: launched as a programmatic
// dependent of the stream's previous kernel (see launch_group in sddmm_kernels.cu).
template <typename Tiling>
void launch_tiles(void (*kernel)(SddmmArgs, Tiling, int64_t), int64_t tiles, const SddmmArgs& args,
                  const Tiling& tiling, int64_t cols, bool dependent, cudaStream_t stream) {
  const LaunchConfig launch(tiles, kThreads, kSmemBytes, stream, dependent);
  SFAC_CUDA_TRY(cudaLaunchKernelEx(launch.get(), kernel, args, tiling, cols));
  SFAC_CUDA_CHECK_LAUNCH();
}

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>) with the 16-bit storage type of `elem`; false (nothing called) for float32,
// which the tensor-core tiles do not take.
template <typename F>
bool with_16bit_type(ElemType elem, F&& f) {
  switch (elem) {
    case ElemType::F16:
      f(TypeTag<__half>{});
      return true;
    case ElemType::BF16:
      f(TypeTag<__nv_bfloat16>{});
      return true;
    default:
      return false;
  }
}

}  // namespace

void allow_tile_shared_memory() {
  for (const void* kernel : {reinterpret_cast<const void*>(sddmm_dense_tile<__half>),
                             reinterpret_cast<const void*>(sddmm_dense_tile<__nv_bfloat16>),
                             reinterpret_cast<const void*>(sddmm_corner_tile<__half>),
                             reinterpret_cast<const void*>(sddmm_corner_tile<__nv_bfloat16>)}) {
    SFAC_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(kSmemBytes)));
  }
}

bool launch_sddmm_dense_tiles(const SddmmArgs& args, const DenseTiling& tiling, int64_t cols,
                              cudaStream_t stream) {
  const int64_t tiles = (args.rows + kTile - 1) / kTile * tiling.bands;
  return with_16bit_type(args.elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // As a programmatic dependent: 2k x 2k at 4%, bfloat16 K = 512, 1.48-1.50x -> 1.56-1.58x
    // cuSPARSE with calls back to back on an H100 (docs/perf-notes.md).
    if (args.nnz > 0)
      launch_tiles(sddmm_dense_tile<T>, tiles, args, tiling, cols, args.dependent_launch, stream);
  });
}

bool launch_sddmm_corner_tiles(const SddmmArgs& args, const CornerTiling& tiling, int64_t cols,
                               cudaStream_t stream) {
  return with_16bit_type(args.elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Not as a programmatic dependent: MovieLens shape, bfloat16 K = 512, 2% slower that way on
    // an H100 (docs/perf-notes.md).
    if (tiling.tiles > 0)
      launch_tiles(sddmm_corner_tile<T>, tiling.tiles, args, tiling, cols, false, stream);
  });
}

}  // namespace sfac::cuda::kernels
