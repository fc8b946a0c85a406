#include "core/factor_init.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/error.h"
#include "core/row_permutation.h"

namespace sfac {
namespace {

// splitmix64's finalizer (Steele, Lea and Flood): a bijection of 64-bit words that sends nearby
// inputs to unrelated outputs.
uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The seed of one side's stream. Mixed twice so that the two sides of one seed, and the same
// side of nearby seeds, start unrelated streams, none of them mt19937_64(seed) itself (which
// trainers use for their own shuffles, and the synthetic data generator for planted factors).
uint64_t stream_seed(uint64_t seed, FactorSide side) {
  return splitmix64(splitmix64(seed) + 1 + static_cast<uint64_t>(side));
}

// Standard normal deviates by the Box-Muller transform, in pairs, from 53-bit uniforms of a
// mt19937_64. Written out rather than std::normal_distribution, whose algorithm each standard
// library chooses (libstdc++, libc++ and MSVC give different streams for the same engine): this
// way the values depend only on the engine, which the standard specifies bit for bit, and on
// the platform's log, sin and cos (glibc's agree across x86-64 machines to the last bit in
// practice; the floats we keep round away any difference but the rarest).
class StandardNormal {
 public:
  explicit StandardNormal(uint64_t seed) : rng_(seed) {}

  double operator()() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    constexpr double kTwoPi = 6.283185307179586476925;
    const double u1 = 1.0 - uniform();  // (0, 1]: the log is finite
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(kTwoPi * u2);
    has_spare_ = true;
    return r * std::cos(kTwoPi * u2);
  }

 private:
  double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }  // [0, 1)

  std::mt19937_64 rng_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

}  // namespace

std::vector<float> initial_factors(uint64_t seed, FactorSide side, int64_t n, int64_t rank,
                                   int64_t stride, double init_scale, const int32_t* original_id) {
  std::vector<float> out(static_cast<size_t>(n * stride), 1.0f);
  if (n == 0 || rank == 0) return out;
  const double sigma = init_scale / std::sqrt(static_cast<double>(rank));
  StandardNormal normal(stream_seed(seed, side));
  for (int64_t i = 0; i < n; ++i) {
    float* row = out.data() + i * stride;
    for (int64_t t = 0; t < rank; ++t) row[t] = static_cast<float>(sigma * normal());
  }
  return original_id == nullptr ? out : gather_rows(out, original_id, n, stride);
}

const int32_t* original_ids(const TrainOptions& options, FactorSide side) {
  if (!options.renumbering) return nullptr;
  return (side == FactorSide::users ? options.renumbering->users : options.renumbering->items)
      .data();
}

double mean_rating(const float* values, int64_t nnz) {
  if (nnz <= 0) return 0.0;
  double sum = 0.0;
  for (int64_t e = 0; e < nnz; ++e) sum += values[e];
  return sum / static_cast<double>(nnz);
}

void require_implicit_ratings(const float* values, int64_t nnz) {
  const float* bad = std::find_if(values, values + nnz, [](float r) { return r < 0.0f; });
  SFAC_REQUIRE(bad == values + nnz, SFAC_ERR_INVALID_VALUE,
               "implicit feedback needs ratings >= 0 (counts, durations), found ", *bad,
               " at nonzero ", bad - values);
}

std::vector<float> initial_biases(int64_t n) {
  return std::vector<float>(static_cast<size_t>(n), 0.0f);
}

}  // namespace sfac
