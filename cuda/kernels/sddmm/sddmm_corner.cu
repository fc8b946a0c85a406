#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cmath>
#include <cub/device/device_segmented_sort.cuh>
#include <cub/device/device_select.cuh>

#include "cuda/cuda_check.h"
#include "cuda/kernels/common/device_scan.cuh"
#include "cuda/kernels/common/grid_stride.cuh"
#include "cuda/kernels/common/sparse_reorder.cuh"
#include "cuda/kernels/sddmm/sddmm_corner.cuh"
#include "cuda/kernels/sddmm/sddmm_kernels.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int64_t kBand = 128;  // the dense tile's side
static_assert(kBand * kBand <= (int64_t{1} << kCornerPlace), "a tile place must fit its bits");
// Listed tiles must be this many times denser than the pattern on average. Ranking alone makes
// the top tiles of a uniform pattern 2-3x denser than average (it selects the rows and columns
// that happened to draw more nonzeros), which the gather kernels serve as well; power laws give
// 5-10x (the bench's Netflix and MovieLens shapes).
constexpr double kMinConcentration = 4.0;
// And they must cover this share of the nonzeros: the tables cost 8 bytes per covered and 16 per
// residual nonzero, and the residual's gathers lose locality, which a small part of the pattern
// does not repay (the Yahoo shape's ~10% ran 1% slower).
constexpr double kMinCovered = 0.2;
// Cap on the tile histogram (int32 counts, 256 MB): beyond it only the top-left corner of the
// ranked matrix is examined, which is where the dense tiles are.
constexpr int64_t kMaxGridTiles = int64_t{1} << 26;

// How many of the (descending) degrees reach `least`.
__global__ void count_at_least(const int32_t* deg, int64_t n, int32_t least,
                               unsigned long long* count) {
  for_each_index(n, [&](int64_t i) {
    if (deg[i] >= least) atomicAdd(count, 1ull);
  });
}

// Linear index (row band major) of nonzero e's tile in the ranked grid, or -1 outside it.
__device__ __forceinline__ int64_t tile_of(int32_t row_rank, int32_t col_rank, int64_t grid_rows,
                                           int64_t grid_cols) {
  const int64_t rb = row_rank / kBand, cb = col_rank / kBand;
  return rb < grid_rows && cb < grid_cols ? rb * grid_cols + cb : -1;
}

__global__ void tile_histogram(const int32_t* cols, const int32_t* row_of, int64_t nnz,
                               const int32_t* row_rank, const int32_t* col_rank, int64_t grid_rows,
                               int64_t grid_cols, int32_t* counts) {
  for_each_index(nnz, [&](int64_t e) {
    const int64_t t = tile_of(row_rank[row_of[e]], col_rank[cols[e]], grid_rows, grid_cols);
    if (t >= 0) atomicAdd(counts + t, 1);
  });
}

__global__ void dense_flags(const int32_t* counts, int64_t grid_rows, int64_t grid_cols,
                            int64_t rows, int64_t cols, double min_density, uint8_t* flags) {
  for_each_index(grid_rows * grid_cols, [&](int64_t t) {
    const int64_t rb = t / grid_cols, cb = t % grid_cols;
    const double area = static_cast<double>(min(kBand, rows - rb * kBand)) *
                        static_cast<double>(min(kBand, cols - cb * kBand));
    flags[t] = counts[t] > 0 && counts[t] >= min_density * area;
  });
}

__global__ void describe_tiles(const int64_t* picked, int64_t n, int64_t grid_cols,
                               const int32_t* counts, int64_t* sizes, int32_t* row_band,
                               int32_t* col_band) {
  for_each_index(n, [&](int64_t i) {
    const int64_t t = picked[i];
    sizes[i] = counts[t];
    row_band[i] = static_cast<int32_t>(t / grid_cols);
    col_band[i] = static_cast<int32_t>(t % grid_cols);
  });
}

// tile_map (all -1 before) gets each listed tile's number.
__global__ void map_tiles(const int64_t* picked, int64_t n, int32_t* tile_map) {
  for_each_index(n, [&](int64_t i) { tile_map[picked[i]] = static_cast<int32_t>(i); });
}

// Each nonzero goes to its listed tile's entries (cursor: the next free entry per tile) or is
// flagged for the residual.
__global__ void scatter_entries(const int32_t* cols, const int32_t* row_of, int64_t nnz,
                                const int32_t* row_rank, const int32_t* col_rank, int64_t grid_rows,
                                int64_t grid_cols, const int32_t* tile_map,
                                unsigned long long* cursor, int64_t* entries, uint8_t* residual) {
  for_each_index(nnz, [&](int64_t e) {
    const int32_t rr = row_rank[row_of[e]], cr = col_rank[cols[e]];
    const int64_t t = tile_of(rr, cr, grid_rows, grid_cols);
    const int32_t listed = t >= 0 ? tile_map[t] : -1;
    residual[e] = listed < 0;
    if (listed >= 0) {
      const unsigned long long slot = atomicAdd(cursor + listed, 1ull);
      entries[slot] = e << kCornerPlace | (rr % kBand) * kBand + cr % kBand;
    }
  });
}

// Rank bands whose first (highest) degree reaches `least`: only they can hold a dense tile.
int64_t bands_reaching(const DeviceBuffer<int32_t>& deg_sorted, int64_t n, int32_t least,
                       cudaStream_t stream) {
  DeviceBuffer<unsigned long long> count(1, stream);
  SFAC_CUDA_TRY(cudaMemsetAsync(count.data(), 0, sizeof(unsigned long long), stream));
  count_at_least<<<blocks_for(n), 256, 0, stream>>>(deg_sorted.data(), n, least, count.data());
  SFAC_CUDA_CHECK_LAUNCH();
  unsigned long long host = 0;
  count.download(&host, 1);
  return (static_cast<int64_t>(host) + kBand - 1) / kBand;
}

template <typename Flags, typename Out, typename Count>
void select_flagged(Flags flags, Out out, Count count, int64_t n, cudaStream_t stream) {
  const thrust::counting_iterator<int64_t> index(0);
  run_with_temp_storage("cub::DeviceSelect::Flagged", stream, [&](void* temp, size_t& bytes) {
    return cub::DeviceSelect::Flagged(temp, bytes, index, flags, out, count, n, stream);
  });
}

}  // namespace

bool build_corner_tables(const int64_t* offsets, const int32_t* cols, const int32_t* row_of,
                         int64_t rows, int64_t ncols, int64_t nnz, double min_density,
                         CornerTiling& tiling, CornerTables& tables, cudaStream_t stream) {
  tiling = CornerTiling{};
  tables = CornerTables{};
  if (rows == 0 || ncols == 0 || nnz == 0) return false;
  const auto least = static_cast<int32_t>(std::ceil(min_density * kBand));

  // Rows and columns by degree.
  DeviceBuffer<int32_t> row_ids(rows, stream), col_ids(ncols, stream);
  DeviceBuffer<int32_t> row_rank(rows, stream), col_rank(ncols, stream);
  int64_t grid_rows = 0, grid_cols = 0;
  {
    DeviceBuffer<int32_t> sorted(rows, stream);
    order_rows_by_degree(offsets, rows, row_ids.data(), sorted.data(), stream);
    grid_rows = bands_reaching(sorted, rows, least, stream);
  }
  {
    DeviceBuffer<int32_t> sorted(ncols, stream);
    order_cols_by_degree(cols, nnz, ncols, col_ids.data(), sorted.data(), stream);
    grid_cols = bands_reaching(sorted, ncols, least, stream);
  }
  if (grid_rows == 0 || grid_cols == 0) return false;
  if (grid_rows * grid_cols > kMaxGridTiles) {
    const double shrink = std::sqrt(double(kMaxGridTiles) / (double(grid_rows) * grid_cols));
    grid_rows = std::max<int64_t>(1, static_cast<int64_t>(grid_rows * shrink));
    grid_cols = std::max<int64_t>(
        1, std::min(kMaxGridTiles / grid_rows, static_cast<int64_t>(grid_cols * shrink)));
  }
  invert_permutation(row_ids.data(), rows, row_rank.data(), stream);
  invert_permutation(col_ids.data(), ncols, col_rank.data(), stream);

  // Nonzeros per tile of the ranked grid, and the tiles dense enough.
  const int64_t grid = grid_rows * grid_cols;
  DeviceBuffer<int32_t> counts(grid, stream);
  SFAC_CUDA_TRY(cudaMemsetAsync(counts.data(), 0, grid * sizeof(int32_t), stream));
  tile_histogram<<<blocks_for(nnz), 256, 0, stream>>>(
      cols, row_of, nnz, row_rank.data(), col_rank.data(), grid_rows, grid_cols, counts.data());
  SFAC_CUDA_CHECK_LAUNCH();
  DeviceBuffer<int64_t> picked(grid, stream), picked_count(1, stream);
  {
    DeviceBuffer<uint8_t> flags(grid, stream);
    dense_flags<<<blocks_for(grid), 256, 0, stream>>>(counts.data(), grid_rows, grid_cols, rows,
                                                      ncols, min_density, flags.data());
    SFAC_CUDA_CHECK_LAUNCH();
    select_flagged(flags.data(), picked.data(), picked_count.data(), grid, stream);
  }
  int64_t tiles = 0;
  picked_count.download(&tiles, 1);
  if (tiles == 0) return false;

  // Entry ranges: an exclusive sum of the tile sizes (one extra zero yields the total).
  CornerTables t;
  t.tile_row_band = DeviceBuffer<int32_t>(tiles, stream);
  t.tile_col_band = DeviceBuffer<int32_t>(tiles, stream);
  t.entry_start = DeviceBuffer<int64_t>(tiles + 1, stream);
  {
    DeviceBuffer<int64_t> sizes(tiles + 1, stream);
    SFAC_CUDA_TRY(cudaMemsetAsync(sizes.data() + tiles, 0, sizeof(int64_t), stream));
    describe_tiles<<<blocks_for(tiles), 256, 0, stream>>>(
        picked.data(), tiles, grid_cols, counts.data(), sizes.data(), t.tile_row_band.data(),
        t.tile_col_band.data());
    SFAC_CUDA_CHECK_LAUNCH();
    exclusive_sum(sizes.data(), t.entry_start.data(), tiles + 1, stream);
  }
  const int64_t covered = read_back(t.entry_start.data() + tiles, stream);
  const double pattern_density = double(nnz) / (double(rows) * double(ncols));
  const double tile_density = double(covered) / (double(tiles) * kBand * kBand);
  if (static_cast<double>(covered) < kMinCovered * static_cast<double>(nnz) ||
      tile_density < kMinConcentration * pattern_density) {
    return false;
  }

  // The counts become the tile map (listed tile number, or -1); nonzeros go to their tile's
  // entries or to the residual.
  SFAC_CUDA_TRY(cudaMemsetAsync(counts.data(), 0xff, grid * sizeof(int32_t), stream));
  map_tiles<<<blocks_for(tiles), 256, 0, stream>>>(picked.data(), tiles, counts.data());
  SFAC_CUDA_CHECK_LAUNCH();
  picked = DeviceBuffer<int64_t>();
  DeviceBuffer<unsigned long long> cursor(tiles, stream);
  SFAC_CUDA_TRY(cudaMemcpyAsync(cursor.data(), t.entry_start.data(), tiles * sizeof(int64_t),
                                cudaMemcpyDeviceToDevice, stream));
  DeviceBuffer<int64_t> scattered(covered, stream);
  DeviceBuffer<uint8_t> residual_flags(nnz, stream);
  scatter_entries<<<blocks_for(nnz), 256, 0, stream>>>(
      cols, row_of, nnz, row_rank.data(), col_rank.data(), grid_rows, grid_cols, counts.data(),
      cursor.data(), scattered.data(), residual_flags.data());
  SFAC_CUDA_CHECK_LAUNCH();
  counts = DeviceBuffer<int32_t>();

  // Within a tile, entries by position: its stores then run along CSR rows (coalesced), and the
  // tables do not depend on the atomics' order.
  t.entries = DeviceBuffer<int64_t>(covered, stream);
  run_with_temp_storage(
      "cub::DeviceSegmentedSort::SortKeys", stream, [&](void* temp, size_t& bytes) {
        return cub::DeviceSegmentedSort::SortKeys(temp, bytes, scattered.data(), t.entries.data(),
                                                  covered, tiles, t.entry_start.data(),
                                                  t.entry_start.data() + 1, stream);
      });

  const int64_t residual = nnz - covered;
  t.residual_pos = DeviceBuffer<int64_t>(residual, stream);
  t.residual_cols = DeviceBuffer<int32_t>(residual, stream);
  t.residual_rows = DeviceBuffer<int32_t>(residual, stream);
  if (residual > 0) {
    DeviceBuffer<int64_t> selected(1, stream);
    select_flagged(residual_flags.data(), t.residual_pos.data(), selected.data(), nnz, stream);
    launch_gather_entries(t.residual_pos.data(), residual, cols, row_of, t.residual_cols.data(),
                          t.residual_rows.data(), stream);
  }
  t.row_ids = std::move(row_ids);
  t.col_ids = std::move(col_ids);
  tables = std::move(t);

  tiling.tiles = tiles;
  tiling.row_ids = tables.row_ids.data();
  tiling.col_ids = tables.col_ids.data();
  tiling.tile_row_band = tables.tile_row_band.data();
  tiling.tile_col_band = tables.tile_col_band.data();
  tiling.entry_start = tables.entry_start.data();
  tiling.entries = tables.entries.data();
  tiling.residual = residual;
  tiling.residual_pos = tables.residual_pos.data();
  tiling.residual_cols = tables.residual_cols.data();
  tiling.residual_rows = tables.residual_rows.data();
  return true;
}

}  // namespace sfac::cuda::kernels
