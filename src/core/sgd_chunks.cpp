#include "core/sgd_chunks.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <queue>
#include <utility>

#include "core/error.h"
#include "core/factor_init.h"

namespace sfac {
namespace {

// The worker of each user: users by rating count, largest first, each to the worker with the
// fewest ratings so far (ties to the lowest worker), which keeps the largest share within one
// user's ratings of the mean.
std::vector<int64_t> deal_users(int64_t users, const int64_t* offsets, int64_t workers) {
  std::vector<int64_t> order(static_cast<size_t>(users));
  std::iota(order.begin(), order.end(), 0);
  auto count = [offsets](int64_t u) { return offsets[u + 1] - offsets[u]; };
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return count(a) > count(b); });
  using Load = std::pair<int64_t, int64_t>;  // (ratings so far, worker)
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> least;
  for (int64_t w = 0; w < workers; ++w) least.push({0, w});
  std::vector<int64_t> worker_of(static_cast<size_t>(users));
  for (int64_t u : order) {
    Load l = least.top();
    least.pop();
    worker_of[static_cast<size_t>(u)] = l.second;
    l.first += count(u);
    least.push(l);
  }
  return worker_of;
}

// splitmix64 as a random bit generator: cheap to seed, so that every user and every part draws
// from its own stream and the arrangement is one function of the seed whatever the thread count.
class SplitMix64 {
 public:
  using result_type = uint64_t;
  SplitMix64(uint64_t seed, uint64_t stream) : state_(seed ^ (stream * 0xd1342543de82ef95ULL)) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }
  result_type operator()() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

struct Chunk {
  int32_t user;
  int64_t part;
  int64_t begin, size;  // into the staged samples
};

}  // namespace

SgdChunks arrange_sgd_chunks(int64_t users, int64_t items, const int64_t* offsets,
                             const int32_t* indices, const float* values, float scale,
                             int64_t max_chunk, int grid, int64_t workers, int64_t slabs,
                             std::mt19937_64& rng, int num_threads) {
  SFAC_REQUIRE(max_chunk >= 1 && grid >= 1 && workers >= 1 && slabs >= 1, SFAC_ERR_INTERNAL,
               "bad SGD chunk arrangement");
  const int threads = std::max(num_threads, 1);
  const uint64_t user_seed = rng(), part_seed = rng();
  SgdChunks out;
  out.grid = grid;
  const int64_t parts = grid > 1 ? int64_t{grid} * grid : workers;
  const std::vector<int64_t> worker_of =
      grid > 1 ? std::vector<int64_t>() : deal_users(users, offsets, workers);
  auto item_part = [&](int32_t item) {
    return static_cast<int>(int64_t{item} * grid / std::max<int64_t>(items, 1));
  };
  // Ratings are sorted by item, so each item range of a row is a contiguous run. Calls f(begin,
  // end, part) for the runs of row u.
  auto for_each_run = [&](int64_t u, auto&& f) {
    for (int64_t e = offsets[u]; e < offsets[u + 1];) {
      const int part = item_part(indices[e]);
      int64_t end = e;
      while (end < offsets[u + 1] && item_part(indices[end]) == part) ++end;
      f(e, end, part);
      e = end;
    }
  };
  auto pieces_of = [max_chunk](int64_t n) { return (n + max_chunk - 1) / max_chunk; };

  // Pass 1: each user's chunks, at offsets from a prefix sum of their counts; the user's ratings
  // in each run shuffled in place in `staged`.
  std::vector<int64_t> first_chunk(static_cast<size_t>(users) + 1, 0);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t u = 0; u < users; ++u) {
    int64_t n = 0;
    for_each_run(u, [&](int64_t b, int64_t e, int) { n += pieces_of(e - b); });
    first_chunk[static_cast<size_t>(u) + 1] = n;
  }
  std::partial_sum(first_chunk.begin(), first_chunk.end(), first_chunk.begin());
  std::vector<Chunk> chunks(static_cast<size_t>(first_chunk.back()));
  std::vector<SgdSample> staged(static_cast<size_t>(offsets[users]));
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256)
  for (int64_t u = 0; u < users; ++u) {
    SplitMix64 g(user_seed, static_cast<uint64_t>(u));
    const int user_part = static_cast<int>(u * grid / std::max<int64_t>(users, 1));
    int64_t next = first_chunk[static_cast<size_t>(u)];
    for_each_run(u, [&](int64_t b, int64_t e, int part) {
      for (int64_t x = b; x < e; ++x) staged[static_cast<size_t>(x)] = {indices[x], values[x] / scale};
      std::shuffle(staged.begin() + b, staged.begin() + e, g);
      const int64_t n = e - b, count = pieces_of(n);
      const int64_t owner =
          grid > 1 ? int64_t{user_part} * grid + part : worker_of[static_cast<size_t>(u)];
      for (int64_t c = 0; c < count; ++c) {
        const int64_t from = b + n * c / count, to = b + n * (c + 1) / count;
        chunks[static_cast<size_t>(next++)] = {static_cast<int32_t>(u), owner, from, to - from};
      }
    });
  }
  // The chunks grouped by part (stable, in user order), then each part's shuffled.
  std::vector<int64_t> part_first(static_cast<size_t>(parts) + 1, 0);
  for (const Chunk& c : chunks) ++part_first[static_cast<size_t>(c.part) + 1];
  std::partial_sum(part_first.begin(), part_first.end(), part_first.begin());
  std::vector<Chunk> by_part(chunks.size());
  {
    std::vector<int64_t> at(part_first.begin(), part_first.end() - 1);
    for (const Chunk& c : chunks) by_part[static_cast<size_t>(at[static_cast<size_t>(c.part)]++)] = c;
  }
  std::vector<Chunk>().swap(chunks);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int64_t part = 0; part < parts; ++part) {
    SplitMix64 g(part_seed, static_cast<uint64_t>(part));
    std::shuffle(by_part.begin() + part_first[static_cast<size_t>(part)],
                 by_part.begin() + part_first[static_cast<size_t>(part) + 1], g);
  }

  // Pass 2: the pieces in slab order (grid: a slab per diagonal, its blocks as parts; workers:
  // each worker's chunks cut into `slabs` pieces of near-equal sample counts).
  struct Piece {
    int64_t begin, end;  // into by_part
  };
  std::vector<std::vector<Piece>> pieces;  // per slab, per part
  auto part_range = [&](int64_t part) {
    return Piece{part_first[static_cast<size_t>(part)], part_first[static_cast<size_t>(part) + 1]};
  };
  if (grid > 1) {
    out.parts = grid;
    for (int d = 0; d < grid; ++d) {
      std::vector<Piece> slab;
      for (int i = 0; i < grid; ++i) slab.push_back(part_range(int64_t{i} * grid + (i + d) % grid));
      pieces.push_back(std::move(slab));
    }
  } else {
    out.parts = workers;
    pieces.resize(static_cast<size_t>(slabs));
    for (int64_t w = 0; w < workers; ++w) {
      const Piece all = part_range(w);
      int64_t total = 0;
      for (int64_t n = all.begin; n < all.end; ++n) total += by_part[static_cast<size_t>(n)].size;
      // Piece s ends at the first chunk whose running sample count reaches total (s + 1) / S.
      int64_t at = all.begin, seen = 0;
      for (int64_t sl = 0; sl < slabs; ++sl) {
        const int64_t begin = at, goal = total * (sl + 1) / slabs;
        while (at < all.end && seen < goal) seen += by_part[static_cast<size_t>(at++)].size;
        pieces[static_cast<size_t>(sl)].push_back({begin, at});
      }
    }
  }
  // The final order of the chunks and where each one's samples go, then the copy.
  std::vector<int64_t> order;
  order.reserve(by_part.size());
  out.slab_begin.push_back(0);
  for (const auto& slab : pieces) {
    for (const Piece& piece : slab) {
      out.part_begin.push_back(static_cast<int64_t>(order.size()));
      for (int64_t n = piece.begin; n < piece.end; ++n) order.push_back(n);
    }
    out.part_begin.push_back(static_cast<int64_t>(order.size()));
    out.slab_begin.push_back(static_cast<int64_t>(order.size()));
  }
  const auto count = static_cast<int64_t>(order.size());
  out.chunk_begin.resize(static_cast<size_t>(count) + 1);
  out.chunk_user.resize(static_cast<size_t>(count));
  out.chunk_begin[0] = 0;
  for (int64_t k = 0; k < count; ++k) {
    const Chunk& c = by_part[static_cast<size_t>(order[static_cast<size_t>(k)])];
    out.chunk_begin[static_cast<size_t>(k) + 1] = out.chunk_begin[static_cast<size_t>(k)] + c.size;
    out.chunk_user[static_cast<size_t>(k)] = c.user;
  }
  out.samples.resize(staged.size());
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t k = 0; k < count; ++k) {
    const Chunk& c = by_part[static_cast<size_t>(order[static_cast<size_t>(k)])];
    std::copy_n(staged.begin() + c.begin, c.size,
                out.samples.begin() + out.chunk_begin[static_cast<size_t>(k)]);
  }
  return out;
}

float sgd_rating_scale(const float* values, int64_t nnz) {
  double sum_sq = 0.0;
  for (int64_t e = 0; e < nnz; ++e) sum_sq += double{values[e]} * values[e];
  const auto n = static_cast<double>(std::max<int64_t>(nnz, 1));
  const double mean = mean_rating(values, nnz);
  return static_cast<float>(std::max(1e-4, std::sqrt(std::max(0.0, sum_sq / n - mean * mean))));
}

}  // namespace sfac
