#include "synthetic.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace sfac_cli {
namespace {

// Draws from [0, n) with density ~ x^-skew (inverse CDF of a continuous power law), then maps
// through a random permutation so popular ids are not clustered at 0.
class PowerLawIds {
 public:
  PowerLawIds(int64_t n, float skew, std::mt19937_64& rng)
      : n_(n), exponent_(1.0 / (1.0 - skew)), perm_(static_cast<size_t>(n)) {
    std::iota(perm_.begin(), perm_.end(), 0);
    std::shuffle(perm_.begin(), perm_.end(), rng);
  }
  int32_t operator()(std::mt19937_64& rng) {
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    const auto x = static_cast<int64_t>(static_cast<double>(n_) * std::pow(u, exponent_));
    return perm_[static_cast<size_t>(std::min(x, n_ - 1))];
  }

 private:
  int64_t n_;
  double exponent_;
  std::vector<int32_t> perm_;
};

}  // namespace

PlantedRatings make_planted_ratings(int64_t rows, int64_t cols, int64_t nnz, int rank,
                                    float noise, float skew, uint64_t seed) {
  std::mt19937_64 rng(seed);
  PlantedRatings out;
  out.rows = rows;
  out.cols = cols;
  out.rank = rank;
  out.noise = noise;

  // Each factor entry ~ N(0, rank^-1/2) gives dot products of unit variance.
  std::normal_distribution<float> factor(0.0f, 1.0f / std::sqrt(std::sqrt(float(rank))));
  out.user_factors.resize(static_cast<size_t>(rows * rank));
  out.item_factors.resize(static_cast<size_t>(cols * rank));
  for (float& x : out.user_factors) x = factor(rng);
  for (float& x : out.item_factors) x = factor(rng);

  PowerLawIds row_ids(rows, skew, rng), col_ids(cols, skew, rng);
  std::vector<int64_t> keys(static_cast<size_t>(nnz));
  for (int64_t& key : keys) key = int64_t{row_ids(rng)} * cols + col_ids(rng);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());

  std::normal_distribution<float> eps(0.0f, noise);
  out.row.reserve(keys.size());
  out.col.reserve(keys.size());
  out.value.reserve(keys.size());
  for (int64_t key : keys) {
    const auto r = static_cast<int32_t>(key / cols), c = static_cast<int32_t>(key % cols);
    const float* u = &out.user_factors[static_cast<size_t>(r) * rank];
    const float* v = &out.item_factors[static_cast<size_t>(c) * rank];
    float dot = 0.0f;
    for (int t = 0; t < rank; ++t) dot += u[t] * v[t];
    out.row.push_back(r);
    out.col.push_back(c);
    out.value.push_back(dot + eps(rng));
  }
  return out;
}

}  // namespace sfac_cli
