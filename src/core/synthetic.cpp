#include "core/synthetic.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/error.h"

namespace sfac {
namespace {

// Draws taken earlier from an mt19937_64, handed out in order: the draws are taken one after
// another (the sequence a seed gives) and turned into ids by many threads.
class Replay {
 public:
  using result_type = std::mt19937_64::result_type;
  static constexpr result_type min() { return std::mt19937_64::min(); }
  static constexpr result_type max() { return std::mt19937_64::max(); }
  explicit Replay(const result_type* next) : next_(next) {}
  result_type operator()() { return *next_++; }

 private:
  const result_type* next_;
};

// Draws from [0, n) with density ~ x^-skew (inverse CDF of a continuous power law), mapped
// through a random permutation so popular ids are spread out. One engine draw an id.
class PowerLawIds {
 public:
  PowerLawIds(int64_t n, double skew, std::mt19937_64& rng)
      : n_(n), exponent_(1.0 / (1.0 - skew)), perm_(static_cast<size_t>(n)) {
    std::iota(perm_.begin(), perm_.end(), 0);
    std::shuffle(perm_.begin(), perm_.end(), rng);
  }
  template <typename Engine>
  int32_t operator()(Engine& engine) const {
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(engine);
    const auto x = static_cast<int64_t>(static_cast<double>(n_) * std::pow(u, exponent_));
    return perm_[static_cast<size_t>(std::min(x, n_ - 1))];
  }

 private:
  int64_t n_;
  double exponent_;
  std::vector<int32_t> perm_;
};

// Keys and dot products are made a chunk at a time: the engine's draws for a chunk first, in
// order, then the chunk's arithmetic on every thread.
constexpr int64_t kChunk = int64_t{1} << 20;

// Sorts `keys` on up to `threads` threads: runs sorted side by side, then merged pairwise.
void parallel_sort(std::vector<int64_t>& keys, int threads) {
  const auto n = static_cast<int64_t>(keys.size());
  const int64_t runs = std::clamp<int64_t>(n / kChunk, 1, std::max(threads, 1));
  if (runs == 1) {
    std::sort(keys.begin(), keys.end());
    return;
  }
  std::vector<int64_t> bound(static_cast<size_t>(runs) + 1);
  for (int64_t r = 0; r <= runs; ++r) bound[static_cast<size_t>(r)] = n * r / runs;
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int64_t r = 0; r < runs; ++r) {
    std::sort(keys.begin() + bound[static_cast<size_t>(r)],
              keys.begin() + bound[static_cast<size_t>(r) + 1]);
  }
  std::vector<int64_t> merged(keys.size());
  for (int64_t width = 1; width < runs; width *= 2) {
    const int64_t pairs = (runs + 2 * width - 1) / (2 * width);
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int64_t p = 0; p < pairs; ++p) {
      const int64_t a = bound[static_cast<size_t>(2 * width * p)];
      const int64_t m = bound[static_cast<size_t>(std::min(runs, 2 * width * p + width))];
      const int64_t b = bound[static_cast<size_t>(std::min(runs, 2 * width * (p + 1)))];
      std::merge(keys.begin() + a, keys.begin() + m, keys.begin() + m, keys.begin() + b,
                 merged.begin() + a);
    }
    keys.swap(merged);
  }
}

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
  const int threads = std::max(num_threads, 1);
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
  {
    std::vector<Replay::result_type> draws(static_cast<size_t>(2 * kChunk));
    for (int64_t begin = 0; begin < candidates; begin += kChunk) {
      const int64_t n = std::min(kChunk, candidates - begin);
      for (int64_t i = 0; i < 2 * n; ++i) draws[static_cast<size_t>(i)] = rng();
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        // A key takes its row's draw, then its column's.
        Replay replay(&draws[static_cast<size_t>(2 * i)]);
        const int64_t r = row_ids(replay);
        const int64_t c = col_ids(replay);
        keys[static_cast<size_t>(begin + i)] = r * items + c;
      }
    }
  }
  parallel_sort(keys, threads);
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());

  std::vector<int32_t> row, col;
  std::vector<float> value;
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::vector<float> dots(static_cast<size_t>(std::min<int64_t>(kChunk, keys.size())));
  const auto distinct = static_cast<int64_t>(keys.size());
  for (int64_t begin = 0; begin < distinct; begin += kChunk) {
    const int64_t n = std::min(kChunk, distinct - begin);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const int64_t key = keys[static_cast<size_t>(begin + i)];
      dots[static_cast<size_t>(i)] =
          dot(&out.user_factors[static_cast<size_t>(key / items * rank)],
              &out.item_factors[static_cast<size_t>(key % items * rank)], rank);
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t key = keys[static_cast<size_t>(begin + i)];
      const float d = dots[static_cast<size_t>(i)];
      const float eps = gauss(rng);
      if (implicit) {
        if (d < 0.43f) continue;
        value.push_back(1.0f + std::round(static_cast<float>(noise) * std::abs(eps)));
      } else {
        value.push_back(d + static_cast<float>(noise) * eps);
      }
      row.push_back(static_cast<int32_t>(key / items));
      col.push_back(static_cast<int32_t>(key % items));
    }
  }
  out.ratings = csr_from_coo(users, items, static_cast<int64_t>(row.size()), row.data(), col.data(),
                             value.data(), DuplicatePolicy::Error, num_threads);
  return out;
}

}  // namespace sfac
