#include "cuda/kernels/als/als_warp_shares.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

namespace sfac::cuda::kernels {

WarpShares plan_warp_shares(int blocks, int per_chunk, int warps, int per_warp, int row_cost,
                            int block_cost) {
  const int chunks = (blocks + per_chunk - 1) / per_chunk;
  if (chunks > kMaxShareChunks || warps > kMaxShareWarps || warps * per_warp < per_chunk) {
    throw std::logic_error("plan_warp_shares: the blocks do not fit the warps");
  }
  std::vector<int> row(static_cast<size_t>(blocks));
  for (int q = 0, i = 0, j = 0; q < blocks; ++q) {
    row[q] = i;
    if (++j > i) ++i, j = 0;
  }
  WarpShares shares{};
  for (int c = 0; c < chunks; ++c) {
    const int begin = c * per_chunk, n = std::min(blocks, begin + per_chunk) - begin;
    // The cost of blocks [a, b) of the chunk on one warp.
    auto cost = [&](int a, int b) {
      int rows = 0;
      for (int q = a; q < b; ++q) rows += q == a || row[begin + q] != row[begin + q - 1];
      return (b - a) * block_cost + rows * row_cost;
    };
    // worst[w][a]: the least possible cost of the costliest of warps w.. holding blocks [a, n);
    // cut[w][a]: where warp w's run then ends.
    constexpr int kNever = std::numeric_limits<int>::max();
    std::vector<std::vector<int>> worst(warps + 1, std::vector<int>(n + 1, kNever));
    std::vector<std::vector<int>> cut(warps + 1, std::vector<int>(n + 1, n));
    worst[warps][n] = 0;
    for (int w = warps - 1; w >= 0; --w) {
      for (int a = 0; a <= n; ++a) {
        for (int b = a; b <= std::min(n, a + per_warp); ++b) {
          if (worst[w + 1][b] == kNever) continue;
          const int m = std::max(cost(a, b), worst[w + 1][b]);
          if (m < worst[w][a]) worst[w][a] = m, cut[w][a] = b;
        }
      }
    }
    int a = 0;
    for (int w = 0; w <= warps; ++w) {
      shares.first[c][w] = static_cast<int16_t>(begin + a);
      if (w < warps) a = cut[w][a];
    }
  }
  return shares;
}

}  // namespace sfac::cuda::kernels
