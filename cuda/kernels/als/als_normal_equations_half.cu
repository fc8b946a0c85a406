// The batched normal equations of an ALS half-sweep with 16-bit factor storage, on 16-bit
// tensor cores (mma m16n8k16, fp32 accumulators): one thread block per segment (and chunk of
// 16 x 16 blocks of the lower triangle), each warp a few of those blocks in accumulators.
//
// Per segment the product is A = L^T R over its ratings. R holds the fixed side's stored rows
// y_j exactly (16-bit values, so every product is exact in fp32). L holds the same rows times
// the weights w_j; where every w_j is 1 (explicit feedback) L is R itself and each 16 x 8 tile
// costs one mma per 16 ratings, otherwise w_j y_j is split into two 16-bit parts (hi + lo) and
// costs two. The right-hand side b = sum_j c_j y_j comes one of two ways:
// - two more columns of L and R carry the targets c_j, split the same way: rows `stored` and
//   `stored` + 1 of the product add up to b^T, out of the same tiles. Free where the stored
//   rows end mid-block (d + 2 fits the blocks d needs);
// - summed on CUDA cores from the same staged rows, four dimensions a thread, where the two
//   columns would add a row of blocks to a large system (implicit d = 128, 256: 45 blocks
//   instead of 36 at d = 128).
// float16 has a narrow range: the targets and the weighted rows are scaled by powers of two
// (per segment, from bounds of its weights and targets taken from its largest rating, and the
// largest stored factor) so that their parts stay far inside it, and the sums are scaled back.
//
// Staging: the segment's stored rows are copied by cp.async, 16 bytes at a time, `kStage`
// ratings a buffer, one buffer ahead of the arithmetic, rating-major (`lead` values a rating,
// an odd multiple of 8, so the eight 16-byte rows an ldmatrix reads fall on distinct banks);
// ldmatrix.trans turns them into fragments.
#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/kernels/als/als_kernels.cuh"
#include "cuda/kernels/als/als_system_tiles.cuh"
#include "cuda/kernels/als/als_triangle_blocks.cuh"
#include "cuda/kernels/common/cp_async.cuh"
#include "cuda/kernels/common/mma_half.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kStage = 64;  // ratings per staged buffer
constexpr int kMaxWarps = 8;
constexpr int kMaxSharedBytes = 100 * 1024;
// Scaled targets and weighted rows stay below this magnitude (float16's largest is 65504).
constexpr int kScaledExponent = 14;

// Bytes of one staged buffer: kStage rows of `lead` 16-bit values, then kStage weights and
// kStage targets (read where b is summed on CUDA cores).
__host__ __device__ constexpr int buffer_bytes(int lead) {
  return kStage * lead * 2 + 2 * kStage * 4;
}

// Bytes of two buffers' row indices and ratings as fetched (after the staged buffers).
constexpr int kFetchedBytes = 2 * kStage * 8;

// Dynamic shared memory of a block.
__host__ __device__ constexpr int shared_bytes(int lead) {
  return 2 * buffer_bytes(lead) + kFetchedBytes;
}

// Fewer blocks a warp (more warps) for systems up to this many 16 x 16 blocks (up to k = 100 or
// so); more for larger ones, where a warp's blocks share their rows' fragments.
constexpr int kMaxBlocksOfNarrowWarps = 28;

// 16 x 16 blocks of the lower triangle of a `padded` x `padded` product.
constexpr int triangle_blocks(int64_t padded) {
  const int side = static_cast<int>(padded / 16);
  return side * (side + 1) / 2;
}

// A power of two that brings magnitudes up to `largest` below 2^kScaledExponent (and small ones
// up to it, where float16 is most precise); 1 for nothing to scale.
__device__ inline float range_scale(float largest) {
  if (!(largest > 0.0f) || !isfinite(largest)) return 1.0f;
  int exponent = 0;
  frexpf(largest, &exponent);  // largest < 2^exponent
  return ldexpf(1.0f, kScaledExponent - exponent);
}

// kBlocksPerWarp: 16 x 16 blocks a warp holds (8 accumulators a thread each).
// kWeighted: the left operand is w_j y_j (two mma a tile), else y_j (one).
// kRhsOnCudaCores: b summed on CUDA cores, else in the tiles' two target columns.
template <bool kBf16, int kBlocksPerWarp, bool kWeighted, bool kRhsOnCudaCores>
__device__ __forceinline__ void normal_equations_half(const AlsHalfSweep& s, int64_t segment_base,
                                                      int padded, const WarpShares& shares,
                                                      bool tiled, float* a, float* b) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int lead = padded + 8;
  const int bytes = buffer_bytes(lead);
  // 16-bit values a stored row; in the tiles, rows `stored` and + 1 are b's two parts.
  const int stored = static_cast<int>(s.half_stride);
  const int64_t local = blockIdx.x;
  const int64_t segment = segment_base + local;
  const int64_t row = s.segment_row[segment];
  const bool first = s.first_segment[row] == segment;
  const int d = static_cast<int>(s.d);
  const int64_t begin = s.segment_begin[segment];
  // Ratings are counted from the segment's start (segments are far shorter than 2^31).
  const int length = static_cast<int>(s.segment_begin[segment + 1] - begin);
  const int32_t* segment_others = s.others + begin;
  const float* segment_values = s.values + begin;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane >> 2, t = lane & 3;

  const WarpBlocks<kBlocksPerWarp> mine(shares, warp);  // this warp's blocks
  const int count = mine.count;

  // Scales of the targets and of the weighted rows (float16 only: bfloat16 has float's range),
  // from bounds of their magnitudes over the segment.
  // (Targets summed on CUDA cores stay unscaled: those sums are fp32.)
  float target_scale = 1.0f, weight_scale = 1.0f;
  if constexpr (!kBf16 && (kWeighted || !kRhsOnCudaCores)) {
    float largest_weight, largest_target;
    als_weight_target_bounds(s, s.segment_largest[segment], &largest_weight, &largest_target);
    if constexpr (!kRhsOnCudaCores) target_scale = range_scale(largest_target);
    if constexpr (kWeighted) weight_scale = range_scale(largest_weight * s.fixed_half_max[0]);
  }

  // Columns past the stored ones (and the targets' two) stay zero in both buffers (the stored
  // rows are zero from d to `stored`).
  const int zero_from = kRhsOnCudaCores ? stored : stored + 2;
  for (int r = threadIdx.x; r < 2 * kStage; r += blockDim.x) {
    auto* z = reinterpret_cast<uint16_t*>(smem + (r / kStage) * bytes) + (r % kStage) * lead;
    for (int col = zero_from; col < padded; ++col) z[col] = 0;
  }

  // A buffer of kStage ratings is queued in two steps, each one cp.async group: fetch() copies
  // its row indices and ratings into shared memory two buffers ahead of the arithmetic; issue(),
  // a buffer ahead and once those are visible to every thread, writes the weights and targets
  // into the staging buffer and copies the stored rows in 16-byte pieces: thread i always copies
  // piece i % pieces, of ratings i / pieces, + rating_step, ... (the fewer than `pieces` threads
  // past the last whole round copy none). Every block has at least `pieces` threads (pieces <=
  // 12 for the 4-block warps, whose blocks have a warp; at least 4 warps for the 8-block ones).
  // Ratings past the segment get zero rows and weights. Groups are committed even when empty,
  // so that the waits below count them alike on every buffer.
  const int pieces = stored / 8;
  const int rating_step = static_cast<int>(blockDim.x) / pieces;
  const int my_piece = static_cast<int>(threadIdx.x) % pieces;
  const int my_first = static_cast<int>(threadIdx.x) / pieces < rating_step
                           ? static_cast<int>(threadIdx.x) / pieces
                           : kStage;
  const uint16_t* my_source = s.fixed_half + 8 * my_piece;
  auto fetched_others = [&](int slot) {
    return reinterpret_cast<int32_t*>(smem + 2 * bytes + slot * kStage * 8);
  };
  auto fetched_values = [&](int slot) {
    return reinterpret_cast<float*>(smem + 2 * bytes + slot * kStage * 8 + kStage * 4);
  };
  auto fetch = [&](int e0, int slot) {
    int32_t* others = fetched_others(slot);
    float* values = fetched_values(slot);
    if (e0 < length) {
      for (int j = threadIdx.x; j < kStage; j += blockDim.x) {
        const bool inside = e0 + j < length;
        const int e = inside ? e0 + j : 0;
        detail::cp_async4(others + j, segment_others + e, inside);
        detail::cp_async4(values + j, segment_values + e, inside);
      }
    }
    detail::cp_async_commit();
  };
  // Fills staging buffer `slot` from the fetched slot of the same number.
  auto issue = [&](int e0, int slot) {
    if (e0 >= length) {
      detail::cp_async_commit();
      return;
    }
    auto* z = reinterpret_cast<uint16_t*>(smem + slot * bytes);
    auto* w = reinterpret_cast<float*>(smem + slot * bytes + kStage * lead * 2);
    float* c = w + kStage;
    const int32_t* others = fetched_others(slot);
    const float* values = fetched_values(slot);
    for (int j = threadIdx.x; j < kStage; j += blockDim.x) {
      float wj = 0.0f, cj = 0.0f;
      if (e0 + j < length) als_weight_target(s, values[j], others[j], &wj, &cj);
      w[j] = wj * weight_scale;
      if constexpr (kRhsOnCudaCores) {
        c[j] = cj;
      } else {
        const float scaled = cj * target_scale;
        const uint16_t hi = detail::to_16bit<kBf16>(scaled);
        z[j * lead + stored] = hi;
        z[j * lead + stored + 1] = detail::to_16bit<kBf16>(scaled - detail::from_16bit<kBf16>(hi));
      }
    }
    uint16_t* destination = z + my_first * lead + 8 * my_piece;
    for (int rating = my_first; rating < kStage; rating += rating_step) {
      const bool valid = e0 + rating < length;
      const int64_t o = valid ? others[rating] : 0;
      detail::cp_async16(destination, my_source + o * stored, valid);
      destination += rating_step * lead;
    }
    detail::cp_async_commit();
  };

  float acc[kBlocksPerWarp][2][4] = {};
  // Groups in flight at the top of the loop's pass over buffer i: fetch i + 1, then issue i.
  fetch(0, 0);
  fetch(kStage, 1);
  detail::cp_async_wait<1>();
  __syncthreads();
  issue(0, 0);
  // A row's first segment starts from G, in the scaled units of the sums.
  if (s.gram_blocks && first) add_gram_to_blocks(s.gram_blocks, weight_scale, mine, acc);
  int slot = 0;
  // ldmatrix row addresses of this lane within a 16-rating step: the left operand reads
  // matrices (ratings 0-7 | 8-15) x (dimensions 0-7 | 8-15) in the order a0, a1 (+8 dims),
  // a2 (+8 ratings), a3; the right one (ratings 0-7 | 8-15) x (columns 0-7 | 8-15) as the b
  // pairs of the tile's two 8-column halves.
  const int left_rating = (lane & 7) + 8 * (lane >> 4), left_dim = 8 * ((lane >> 3) & 1);
  const int right_rating = (lane & 7) + 8 * ((lane >> 3) & 1), right_col = 8 * (lane >> 4);
  // b on CUDA cores, summed by the chunk 0 blocks: thread p * quads + q takes dimensions 4q to
  // 4q + 3 over the ratings j = p mod phases of each buffer (every warp takes a share; a block
  // has at least one thread a quad for every size this kernel takes); the phases' sums are added
  // in order at the end.
  const int quads = (d + 3) / 4;
  const int phases = static_cast<int>(blockDim.x) / quads;
  const int quad = static_cast<int>(threadIdx.x) % quads;
  const int phase = static_cast<int>(threadIdx.x) / quads;
  const bool sums_rhs = kRhsOnCudaCores && blockIdx.y == 0 && phase < phases;
  float4 rhs = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int e0 = 0; e0 < length; e0 += kStage, slot ^= 1) {
    const int n = min(length - e0, kStage);
    // The next buffer's indices, visible to all after the barrier, which also ends every
    // warp's arithmetic on the staging buffer issue() refills; this slot's indices were read by
    // the issue() a pass ago, before it.
    detail::cp_async_wait<1>();
    __syncthreads();
    fetch(e0 + 2 * kStage, slot);
    issue(e0 + kStage, slot ^ 1);
    detail::cp_async_wait<2>();  // this buffer's rows
    __syncthreads();
    const auto* z = reinterpret_cast<const uint16_t*>(smem + slot * bytes);
    const auto* w = reinterpret_cast<const float*>(smem + slot * bytes + kStage * lead * 2);
    if (sums_rhs) {
      const float* c = w + kStage;
#pragma unroll 2
      for (int j = phase; j < n; j += phases) {
        const uint2 y4 = *reinterpret_cast<const uint2*>(z + j * lead + 4 * quad);
        const float2 y0 = detail::unpack_16bit<kBf16>(y4.x), y1 = detail::unpack_16bit<kBf16>(y4.y);
        const float cj = c[j];
        rhs.x = fmaf(cj, y0.x, rhs.x);
        rhs.y = fmaf(cj, y0.y, rhs.y);
        rhs.z = fmaf(cj, y1.x, rhs.z);
        rhs.w = fmaf(cj, y1.y, rhs.w);
      }
    }
    for (int k0 = 0; k0 < n; k0 += 16) {
      // This lane's ldmatrix rows for block row / column 0; a block's are 16 values on.
      const uint16_t* left_rows = z + (k0 + left_rating) * lead + left_dim;
      const uint16_t* right_rows = z + (k0 + right_rating) * lead + right_col;
      uint32_t left[4], left_lo[4];
      int loaded_row = -1;
#pragma unroll
      for (int p = 0; p < kBlocksPerWarp; ++p) {
        if (p < count) {
          if (mine.row[p] != loaded_row) {
            loaded_row = mine.row[p];
            detail::ldmatrix_x4_trans(left, left_rows + 16 * loaded_row);
            if constexpr (kWeighted) {
              // Rows below d are y_j: weigh them; the targets' rows and the zeros past d not.
              const float2 w_low = *reinterpret_cast<const float2*>(w + k0 + 2 * t);
              const float2 w_high = *reinterpret_cast<const float2*>(w + k0 + 8 + 2 * t);
              const bool inside = 16 * loaded_row + 16 <= d;  // every row of the block
#pragma unroll
              for (int m = 0; m < 4; ++m) {
                const int dim = 16 * loaded_row + g + 8 * (m & 1);
                const float2 wm = m < 2 ? w_low : w_high;
                if (inside || dim < d) {
                  const float2 y = detail::unpack_16bit<kBf16>(left[m]);
                  detail::split_16bit<kBf16>(make_float2(y.x * wm.x, y.y * wm.y), &left[m],
                                             &left_lo[m]);
                } else {
                  left_lo[m] = 0;
                }
              }
            }
          }
          uint32_t right[4];
          detail::ldmatrix_x4_trans(right, right_rows + 16 * mine.col[p]);
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const uint32_t pair[2] = {right[2 * h], right[2 * h + 1]};
            detail::mma_16bit<kBf16>(acc[p][h], left, pair);
            if constexpr (kWeighted) detail::mma_16bit<kBf16>(acc[p][h], left_lo, pair);
          }
        }
      }
    }
  }

  const float reg = first ? als_regularization(s, s.offsets[row + 1] - s.offsets[row]) : 0.0f;
  const float unscale_rows = 1.0f / weight_scale, unscale_targets = 1.0f / target_scale;
  // Entry (i, j) of A from its sum v.
  auto entry = [&](int i, int j, float v) {
    if (kWeighted) v *= unscale_rows;
    return i == j ? v + reg : v;
  };
  const int tiles = static_cast<int>(als_tile_rows(d));
  float* A = a + local * (tiled ? als_tile_count(tiles) * kAlsTileFloats : int64_t{d} * d);
#pragma unroll
  for (int p = 0; p < kBlocksPerWarp; ++p) {
    if (p >= count) break;
    if constexpr (!kRhsOnCudaCores) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          // Row `stored` + 1 (b's low part) is held by the lane four on (g + 1: `stored` is a
          // multiple of 8).
          const int i = 16 * mine.row[p] + g + 8 * half, j = 16 * mine.col[p] + 8 * h + 2 * t;
          const float v0 = acc[p][h][2 * half], v1 = acc[p][h][2 * half + 1];
          const float low0 = __shfl_down_sync(0xffffffffu, v0, 4);
          const float low1 = __shfl_down_sync(0xffffffffu, v1, 4);
          if (i == stored) {
            if (j < d) b[local * d + j] = (v0 + low0) * unscale_targets;
            if (j + 1 < d) b[local * d + j + 1] = (v1 + low1) * unscale_targets;
          }
        }
      }
    }
    store_system_block(A, tiled, d, tiles, mine.row[p], mine.col[p], acc[p], entry);
  }
  if (kRhsOnCudaCores && blockIdx.y == 0) {
    __syncthreads();  // every warp is done with the staging buffers
    auto* partial = reinterpret_cast<float4*>(smem);
    if (sums_rhs) partial[phase * quads + quad] = rhs;
    __syncthreads();
    if (phase == 0) {
      float4 sum = partial[quad];
      for (int q = 1; q < phases; ++q) {
        const float4 more = partial[q * quads + quad];
        sum.x += more.x, sum.y += more.y, sum.z += more.z, sum.w += more.w;
      }
      const float v[4] = {sum.x, sum.y, sum.z, sum.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (4 * quad + e < d) b[local * d + 4 * quad + e] = v[e];
      }
    }
  }
}

// Warps of 4 blocks: at most 80 registers, so that an SM sub-partition's 16,384 registers hold
// 6 warps, where the compiler would take a few more and fit 5 or 4: three thread blocks of 7
// warps (d = 100) an SM instead of two, six of 4 warps (d = 64) instead of four or five. With
// weights the bound spills a few registers' loads, and still measured faster (docs/als-cuda.md).
template <bool kBf16, int kBlocksPerWarp, bool kWeighted>
__global__ void __maxnreg__(80)
    normal_equations_half_kernel(AlsHalfSweep s, int64_t segment_base, int padded,
                                 WarpShares shares, bool tiled, float* a, float* b) {
  normal_equations_half<kBf16, kBlocksPerWarp, kWeighted, false>(s, segment_base, padded, shares,
                                                                 tiled, a, b);
}

// Warps of 8 blocks: at most 128 registers, so that two thread blocks of 8 warps share an SM
// (large systems) where the compiler would otherwise take enough for only one.
template <bool kBf16, bool kWeighted, bool kRhsOnCudaCores>
__global__ void __launch_bounds__(kMaxWarps * 32, 2)
    normal_equations_half_wide_kernel(AlsHalfSweep s, int64_t segment_base, int padded,
                                      WarpShares shares, bool tiled, float* a, float* b) {
  normal_equations_half<kBf16, 8, kWeighted, kRhsOnCudaCores>(s, segment_base, padded, shares,
                                                              tiled, a, b);
}

template <bool kBf16, int kBlocksPerWarp, bool kWeighted>
void launch(const AlsHalfSweep& s, const AlsBatch& batch, int padded, int blocks, int shared,
            bool rhs_on_cuda_cores, float* a, float* b, cudaStream_t stream) {
  // What a warp pays per 16 ratings, in units of about eight instructions: a block's ldmatrix
  // and mma; a block row's left operand, loaded (one ldmatrix) and with weights scaled and split
  // in two 16-bit parts.
  const int block_cost = kWeighted ? 2 : 1, row_cost = kWeighted ? 11 : 1;
  if constexpr (kBlocksPerWarp == 8) {
    if (rhs_on_cuda_cores) {
      launch_over_segments<kMaxWarps, 8>(normal_equations_half_wide_kernel<kBf16, kWeighted, true>,
                                         s, batch, padded, blocks, row_cost, block_cost, shared, a,
                                         b, stream);
    } else {
      launch_over_segments<kMaxWarps, 8>(normal_equations_half_wide_kernel<kBf16, kWeighted, false>,
                                         s, batch, padded, blocks, row_cost, block_cost, shared, a,
                                         b, stream);
    }
  } else {
    launch_over_segments<kMaxWarps, kBlocksPerWarp>(
        normal_equations_half_kernel<kBf16, kBlocksPerWarp, kWeighted>, s, batch, padded, blocks,
        row_cost, block_cost, shared, a, b, stream);
  }
}

template <bool kBf16, int kBlocksPerWarp>
void launch_weighted_or_not(const AlsHalfSweep& s, const AlsBatch& batch, int padded, int blocks,
                            int shared, bool rhs_on_cuda_cores, float* a, float* b,
                            cudaStream_t stream) {
  if (s.implicit) {
    launch<kBf16, kBlocksPerWarp, true>(s, batch, padded, blocks, shared, rhs_on_cuda_cores, a, b,
                                        stream);
  } else {
    launch<kBf16, kBlocksPerWarp, false>(s, batch, padded, blocks, shared, rhs_on_cuda_cores, a,
                                         b, stream);
  }
}

template <bool kBf16>
void launch_type(const AlsHalfSweep& s, const AlsBatch& batch, int padded, int blocks,
                 int shared, bool rhs_on_cuda_cores, float* a, float* b, cudaStream_t stream) {
  if (blocks <= kMaxBlocksOfNarrowWarps) {
    launch_weighted_or_not<kBf16, 4>(s, batch, padded, blocks, shared, false, a, b, stream);
  } else {
    launch_weighted_or_not<kBf16, 8>(s, batch, padded, blocks, shared, rhs_on_cuda_cores, a, b,
                                     stream);
  }
}

}  // namespace

bool launch_als_normal_equations_half(const AlsHalfSweep& s, const AlsBatch& batch, float* a,
                                      float* b, cudaStream_t stream) {
  if (s.fixed_half == nullptr) return false;
  // The stored rows, then the targets' two columns, padded to whole 16 x 16 blocks; without the
  // targets' columns (b on CUDA cores) where they would add a row of blocks to a system large
  // enough for the 8-block warps (smaller ones measured no faster that way).
  const int64_t with_targets = (s.half_stride + 2 + 15) / 16 * 16;
  const int64_t without = (s.half_stride + 15) / 16 * 16;
  const bool rhs_on_cuda_cores =
      without < with_targets && triangle_blocks(without) > kMaxBlocksOfNarrowWarps;
  const int64_t padded = rhs_on_cuda_cores ? without : with_targets;
  // padded <= kAlsMaxUnknowns + 24, so shared_bytes stays far inside int.
  const int shared = shared_bytes(static_cast<int>(padded) + 8);
  if (shared > kMaxSharedBytes) return false;
  const int blocks = triangle_blocks(padded);
  if (s.half_bf16) {
    launch_type<true>(s, batch, static_cast<int>(padded), blocks, shared, rhs_on_cuda_cores, a,
                      b, stream);
  } else {
    launch_type<false>(s, batch, static_cast<int>(padded), blocks, shared, rhs_on_cuda_cores, a,
                       b, stream);
  }
  SFAC_CUDA_CHECK_LAUNCH();
  return true;
}

}  // namespace sfac::cuda::kernels
