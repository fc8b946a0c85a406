#include "core/split.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "core/backend.h"
#include "core/error.h"

namespace sfac {
namespace {

// Routes each nonzero e of `all` to test when to_test[e], else to train; order is kept.
std::pair<HostCsr, HostCsr> partition(const HostCsr& all, const std::vector<char>& to_test) {
  HostCsr parts[2];
  for (HostCsr& p : parts) {
    p.rows = all.rows;
    p.cols = all.cols;
    p.offsets.assign(static_cast<size_t>(all.rows) + 1, 0);
  }
  for (int64_t r = 0; r < all.rows; ++r) {
    for (int64_t e = all.offsets[r]; e < all.offsets[r + 1]; ++e) {
      HostCsr& p = parts[to_test[e] ? 1 : 0];
      p.indices.push_back(all.indices[e]);
      p.values.push_back(all.values[e]);
    }
    for (HostCsr& p : parts) p.offsets[r + 1] = p.nnz();
  }
  return {std::move(parts[0]), std::move(parts[1])};
}

}  // namespace

std::pair<HostCsr, HostCsr> split_random(const SparseMatrix& ratings, double test_fraction,
                                         uint64_t seed) {
  SFAC_REQUIRE(std::isfinite(test_fraction) && test_fraction >= 0.0 && test_fraction <= 1.0,
               SFAC_ERR_INVALID_ARGUMENT, "test_fraction = ", test_fraction, " must be in [0, 1]");
  const HostCsr all = download_host_csr(ratings);
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution coin(test_fraction);
  std::vector<char> to_test(static_cast<size_t>(all.nnz()));
  for (char& t : to_test) t = coin(rng);
  return partition(all, to_test);
}

std::pair<HostCsr, HostCsr> split_leave_k_out(const SparseMatrix& ratings, int64_t k,
                                              uint64_t seed) {
  SFAC_REQUIRE(k >= 1, SFAC_ERR_INVALID_ARGUMENT, "k = ", k, " must be >= 1");
  const HostCsr all = download_host_csr(ratings);
  std::mt19937_64 rng(seed);
  std::vector<char> to_test(static_cast<size_t>(all.nnz()), 0);
  std::vector<int64_t> slots;
  for (int64_t r = 0; r < all.rows; ++r) {
    const int64_t begin = all.offsets[r], count = all.offsets[r + 1] - begin;
    if (count <= k) continue;
    slots.resize(static_cast<size_t>(count));
    std::iota(slots.begin(), slots.end(), begin);
    // Partial Fisher-Yates: the first k slots end up a uniform random k-subset.
    for (int64_t i = 0; i < k; ++i) {
      std::uniform_int_distribution<int64_t> pick(i, count - 1);
      std::swap(slots[i], slots[pick(rng)]);
      to_test[slots[i]] = 1;
    }
  }
  return partition(all, to_test);
}

}  // namespace sfac
