// Synthetic rating data with a known answer: a planted rank-r model plus Gaussian noise on a
// power-law sparsity pattern, so a method's residual can be compared to the noise floor.
#pragma once

#include <cstdint>
#include <vector>

namespace sfac_cli {

struct PlantedRatings {
  int64_t rows = 0, cols = 0;
  int rank = 0;
  float noise = 0;
  std::vector<int32_t> row, col;      // distinct (row, col) pairs, sorted
  std::vector<float> value;           // dot(user_factors[row], item_factors[col]) + noise
  std::vector<float> user_factors;    // rows x rank, row-major
  std::vector<float> item_factors;    // cols x rank, row-major
};

// About `nnz` distinct ratings (a few collide and are dropped). Row and column degrees follow
// a power law whose strength grows with `skew` in [0, 1); ids are shuffled so heavy rows are
// spread out. Factors are scaled so the planted ratings have unit variance.
PlantedRatings make_planted_ratings(int64_t rows, int64_t cols, int64_t nnz, int rank,
                                    float noise, float skew, uint64_t seed);

}  // namespace sfac_cli
