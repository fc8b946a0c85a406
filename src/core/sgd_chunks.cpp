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

}  // namespace

SgdChunks arrange_sgd_chunks(int64_t users, int64_t items, const int64_t* offsets,
                             const int32_t* indices, const float* values, float scale,
                             int64_t max_chunk, int grid, int64_t workers, int64_t slabs,
                             std::mt19937_64& rng) {
  SFAC_REQUIRE(max_chunk >= 1 && grid >= 1 && workers >= 1 && slabs >= 1, SFAC_ERR_INTERNAL,
               "bad SGD chunk arrangement");
  SgdChunks out;
  out.grid = grid;
  const int64_t parts = grid > 1 ? int64_t{grid} * grid : workers;
  const std::vector<int64_t> worker_of =
      grid > 1 ? std::vector<int64_t>() : deal_users(users, offsets, workers);
  auto item_part = [&](int32_t item) {
    return static_cast<int>(int64_t{item} * grid / std::max<int64_t>(items, 1));
  };
  // Pass 1: the chunks of each (user, item range), appended per part so that each part's
  // chunks are contiguous once the parts are concatenated.
  struct Chunk {
    int32_t user;
    int64_t begin, size;  // into `staged`
  };
  std::vector<std::vector<Chunk>> per_part(static_cast<size_t>(parts));
  std::vector<SgdSample> staged(static_cast<size_t>(offsets[users]));
  std::vector<SgdSample> row;
  for (int64_t u = 0; u < users; ++u) {
    const int user_part = static_cast<int>(u * grid / std::max<int64_t>(users, 1));
    // Ratings are sorted by item, so each item range is a contiguous run of the row.
    for (int64_t e = offsets[u]; e < offsets[u + 1];) {
      const int part = item_part(indices[e]);
      int64_t end = e;
      while (end < offsets[u + 1] && item_part(indices[end]) == part) ++end;
      row.clear();
      for (int64_t x = e; x < end; ++x) row.push_back({indices[x], values[x] / scale});
      std::shuffle(row.begin(), row.end(), rng);
      std::copy(row.begin(), row.end(), staged.begin() + e);
      const int64_t n = end - e, pieces = (n + max_chunk - 1) / max_chunk;
      auto& list = per_part[static_cast<size_t>(
          grid > 1 ? int64_t{user_part} * grid + part : worker_of[static_cast<size_t>(u)])];
      for (int64_t c = 0; c < pieces; ++c) {
        const int64_t b = e + n * c / pieces, f = e + n * (c + 1) / pieces;
        list.push_back({static_cast<int32_t>(u), b, f - b});
      }
      e = end;
    }
  }
  // Pass 2: shuffle each part's chunks; then the pieces in slab order.
  for (auto& list : per_part) std::shuffle(list.begin(), list.end(), rng);
  struct Piece {
    int64_t part, begin, end;  // chunks [begin, end) of per_part[part]
  };
  std::vector<std::vector<Piece>> pieces;  // per slab, per part
  if (grid > 1) {
    out.parts = grid;
    for (int d = 0; d < grid; ++d) {
      std::vector<Piece> slab;
      for (int i = 0; i < grid; ++i) {
        const int64_t part = int64_t{i} * grid + (i + d) % grid;
        slab.push_back({part, 0, static_cast<int64_t>(per_part[part].size())});
      }
      pieces.push_back(std::move(slab));
    }
  } else {
    out.parts = workers;
    pieces.resize(static_cast<size_t>(slabs));
    for (int64_t w = 0; w < workers; ++w) {
      const auto& list = per_part[static_cast<size_t>(w)];
      int64_t total = 0;
      for (const Chunk& c : list) total += c.size;
      // Piece s ends at the first chunk whose running sample count reaches total (s + 1) / S.
      int64_t at = 0, seen = 0;
      for (int64_t sl = 0; sl < slabs; ++sl) {
        const int64_t begin = at;
        const int64_t goal = total * (sl + 1) / slabs;
        while (at < static_cast<int64_t>(list.size()) && seen < goal) seen += list[at++].size;
        pieces[static_cast<size_t>(sl)].push_back({w, begin, at});
      }
    }
  }
  out.samples.reserve(staged.size());
  out.chunk_begin.push_back(0);
  out.slab_begin.push_back(0);
  for (const auto& slab : pieces) {
    for (const Piece& piece : slab) {
      out.part_begin.push_back(out.chunks());
      const auto& list = per_part[static_cast<size_t>(piece.part)];
      for (int64_t n = piece.begin; n < piece.end; ++n) {
        const Chunk& c = list[static_cast<size_t>(n)];
        out.samples.insert(out.samples.end(), staged.begin() + c.begin,
                           staged.begin() + c.begin + c.size);
        out.chunk_begin.push_back(static_cast<int64_t>(out.samples.size()));
        out.chunk_user.push_back(c.user);
      }
    }
    out.part_begin.push_back(out.chunks());
    out.slab_begin.push_back(out.chunks());
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
