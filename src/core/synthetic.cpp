#include "core/synthetic.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/error.h"

namespace sfac {
namespace {

// Draws from [0, n) with density ~ x^-skew (inverse CDF of a continuous power law), mapped
// through a random permutation so popular ids are spread out.
class PowerLawIds {
 public:
  PowerLawIds(int64_t n, double skew, std::mt19937_64& rng)
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

float dot(const float* x, const float* y, int64_t rank) {
  float d = 0.0f;
  for (int64_t t = 0; t < rank; ++t) d += x[t] * y[t];
  return d;
}

}  // namespace

PlantedData synthesize(sfac_feedback feedback, int64_t users, int64_t items, int64_t nnz,
                       int64_t rank, double noise, double skew, uint64_t seed, int num_threads) {
  SFAC_REQUIRE(feedback == SFAC_FEEDBACK_EXPLICIT || feedback == SFAC_FEEDBACK_IMPLICIT,
               SFAC_ERR_INVALID_ARGUMENT, "unknown feedback kind ", static_cast<int>(feedback));
  check_sparse_shape(users, items);
  SFAC_REQUIRE(users >= 1 && items >= 1, SFAC_ERR_INVALID_ARGUMENT, "users = ", users,
               " and items = ", items, " must be >= 1");
  SFAC_REQUIRE(nnz >= 0 && nnz <= users * items, SFAC_ERR_INVALID_ARGUMENT, "nnz = ", nnz,
               " must be in [0, users * items]");
  SFAC_REQUIRE(rank >= 1, SFAC_ERR_INVALID_ARGUMENT, "rank = ", rank, " must be >= 1");
  SFAC_REQUIRE(std::isfinite(noise) && noise >= 0, SFAC_ERR_INVALID_ARGUMENT, "noise = ", noise,
               " must be finite and >= 0");
  SFAC_REQUIRE(skew >= 0 && skew < 1, SFAC_ERR_INVALID_ARGUMENT, "skew = ", skew,
               " must be in [0, 1)");
  std::mt19937_64 rng(seed);
  PlantedData out;
  // Entries ~ N(0, rank^-1/2): dot products of unit variance.
  std::normal_distribution<float> factor(0.0f, static_cast<float>(std::pow(rank, -0.25)));
  out.user_factors.resize(static_cast<size_t>(users * rank));
  out.item_factors.resize(static_cast<size_t>(items * rank));
  for (float& x : out.user_factors) x = factor(rng);
  for (float& x : out.item_factors) x = factor(rng);

  // Implicit data keeps about a third of the candidates (planted dot above ~0.43 sigma).
  const bool implicit = feedback == SFAC_FEEDBACK_IMPLICIT;
  const int64_t candidates = std::min(users * items, implicit ? 3 * nnz : nnz);
  PowerLawIds row_ids(users, skew, rng), col_ids(items, skew, rng);
  std::vector<int64_t> keys(static_cast<size_t>(candidates));
  for (int64_t& key : keys) key = int64_t{row_ids(rng)} * items + col_ids(rng);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());

  std::vector<int32_t> row, col;
  std::vector<float> value;
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  for (int64_t key : keys) {
    const auto r = static_cast<int32_t>(key / items), c = static_cast<int32_t>(key % items);
    const float d =
        dot(&out.user_factors[size_t(r) * rank], &out.item_factors[size_t(c) * rank], rank);
    const float eps = gauss(rng);
    if (implicit) {
      if (d < 0.43f) continue;
      value.push_back(1.0f + std::round(static_cast<float>(noise) * std::abs(eps)));
    } else {
      value.push_back(d + static_cast<float>(noise) * eps);
    }
    row.push_back(r);
    col.push_back(c);
  }
  out.ratings = csr_from_coo(users, items, static_cast<int64_t>(row.size()), row.data(), col.data(),
                             value.data(), DuplicatePolicy::Error, num_threads);
  return out;
}

}  // namespace sfac
