// The host planner of how the ALS normal-equation kernels' warps share a system's 16 x 16
// blocks (cuda/kernels/als/als_warp_shares.h): whole runs in order, within each chunk and the
// per-warp capacity, and the least possible cost of the costliest warp, against an exhaustive
// search. Plain host code: runs with or without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

#include "cuda/kernels/als/als_warp_shares.h"

namespace {

using sfac::cuda::kernels::plan_warp_shares;
using sfac::cuda::kernels::WarpShares;

// Block row of block q in the row-by-row numbering of a lower triangle.
int block_row(int q) {
  int i = 0;
  while ((i + 1) * (i + 2) / 2 <= q) ++i;
  return i;
}

int run_cost(int a, int b, int row_cost, int block_cost) {
  int rows = 0;
  for (int q = a; q < b; ++q) rows += q == a || block_row(q) != block_row(q - 1);
  return (b - a) * block_cost + rows * row_cost;
}

// The least cost of the costliest warp over every split of [begin, end) into `warps` runs of at
// most `per_warp` blocks.
int exhaustive_best(int begin, int end, int warps, int per_warp, int row_cost, int block_cost) {
  int best = 1 << 30;
  std::function<void(int, int, int)> split = [&](int a, int w, int worst) {
    if (worst >= best) return;
    if (w == warps) {
      if (a == end) best = std::min(best, worst);
      return;
    }
    for (int b = std::min(end, a + per_warp); b >= a; --b) {
      if (end - b > (warps - w - 1) * per_warp) break;  // the rest cannot fit
      split(b, w + 1, std::max(worst, run_cost(a, b, row_cost, block_cost)));
    }
  };
  split(begin, 0, 0);
  return best;
}

struct Shape {
  int blocks, per_chunk, warps, per_warp, row_cost, block_cost;
};

TEST(WarpShares, RunsCoverEachChunkInOrderAndCostTheLeastPossible) {
  const Shape shapes[] = {
      {36, 36, 5, 8, 11, 2},   // implicit k = 128, float16 storage
      {45, 45, 6, 8, 11, 2},   // the same with the targets' row of blocks
      {28, 28, 7, 4, 1, 1},    // explicit k = 100
      {136, 64, 8, 8, 11, 2},  // implicit k = 256: three chunks
      {21, 21, 6, 4, 1, 1},    // float32 storage, d = 95
      {1, 1, 1, 4, 11, 2},    {3, 3, 1, 4, 1, 1},
  };
  for (const Shape& s : shapes) {
    SCOPED_TRACE(::testing::Message() << s.blocks << " blocks, " << s.warps << " warps");
    const WarpShares shares =
        plan_warp_shares(s.blocks, s.per_chunk, s.warps, s.per_warp, s.row_cost, s.block_cost);
    const int chunks = (s.blocks + s.per_chunk - 1) / s.per_chunk;
    for (int c = 0; c < chunks; ++c) {
      const int begin = c * s.per_chunk, end = std::min(s.blocks, begin + s.per_chunk);
      EXPECT_EQ(shares.first[c][0], begin);
      EXPECT_EQ(shares.first[c][s.warps], end);
      int worst = 0;
      for (int w = 0; w < s.warps; ++w) {
        const int a = shares.first[c][w], b = shares.first[c][w + 1];
        ASSERT_LE(a, b);
        ASSERT_LE(b - a, s.per_warp);
        worst = std::max(worst, run_cost(a, b, s.row_cost, s.block_cost));
      }
      EXPECT_EQ(worst, exhaustive_best(begin, end, s.warps, s.per_warp, s.row_cost, s.block_cost));
    }
  }
}

TEST(WarpShares, CostlyRowsGiveTheFirstWarpFewerBlocks) {
  // Implicit k = 128: the first warp's even share (7 blocks) spans 4 block rows; the planned one
  // spans fewer blocks, and the costliest warp costs less than with the even split.
  const WarpShares shares = plan_warp_shares(36, 36, 5, 8, 11, 2);
  EXPECT_LT(shares.first[0][1], 7);
  int even_worst = 0, planned_worst = 0;
  for (int w = 0; w < 5; ++w) {
    even_worst = std::max(even_worst, run_cost(w * 36 / 5, (w + 1) * 36 / 5, 11, 2));
    planned_worst =
        std::max(planned_worst, run_cost(shares.first[0][w], shares.first[0][w + 1], 11, 2));
  }
  EXPECT_LT(planned_worst, even_worst);
}

TEST(WarpShares, RefusesBlocksThatDoNotFit) {
  EXPECT_THROW(plan_warp_shares(100, 10, 2, 8, 1, 1), std::logic_error);  // 10 chunks
  EXPECT_THROW(plan_warp_shares(40, 40, 4, 8, 1, 1), std::logic_error);   // 32 places
  EXPECT_THROW(plan_warp_shares(40, 40, 9, 8, 1, 1), std::logic_error);   // 9 warps
}

}  // namespace
