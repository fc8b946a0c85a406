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

// The worker of each share (a user, or a piece of a split user): shares by rating count,
// largest first, each to the worker with the fewest ratings so far (ties to the lowest worker),
// which keeps the largest worker's load within one share of the mean.
std::vector<int64_t> deal_shares(const std::vector<int64_t>& sizes, int64_t workers) {
  std::vector<int64_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return sizes[static_cast<size_t>(a)] > sizes[static_cast<size_t>(b)];
  });
  using Load = std::pair<int64_t, int64_t>;  // (ratings so far, worker)
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> least;
  for (int64_t w = 0; w < workers; ++w) least.push({0, w});
  std::vector<int64_t> worker_of(sizes.size());
  for (int64_t x : order) {
    Load l = least.top();
    least.pop();
    worker_of[static_cast<size_t>(x)] = l.second;
    l.first += sizes[static_cast<size_t>(x)];
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
                             const SgdLayout& layout, std::mt19937_64& rng, int num_threads) {
  const int64_t max_chunk = layout.max_chunk, workers = layout.workers, slabs = layout.slabs;
  const int grid = layout.grid;
  const bool wavefront = grid <= 1 && layout.ranges > 0;
  SFAC_REQUIRE(max_chunk >= 1 && grid >= 1 && workers >= 1 && slabs >= 1 && layout.ranges >= 0,
               SFAC_ERR_INTERNAL, "bad SGD chunk arrangement");
  const int threads = std::max(num_threads, 1);
  const uint64_t user_seed = rng(), part_seed = rng();
  const uint64_t order_seed = wavefront ? rng() : 0;
  SgdChunks out;
  out.grid = grid;
  // Item ranges: the grid's, the wavefront's, or one.
  const int64_t ranges = grid > 1 ? grid : wavefront ? layout.ranges : 1;
  out.ranges = wavefront ? ranges : 0;
  // Parts while grouping: grid blocks, (worker, range) cells, or workers.
  const int64_t parts = grid > 1 ? int64_t{grid} * grid : workers * ranges;
  // Shares: one per user, or (Hogwild with split_above > 0) near-equal pieces of at most
  // split_above ratings of each user with more; first_share[u] is user u's first.
  const bool split = grid <= 1 && !wavefront && layout.split_above > 0;
  auto share_count = [&](int64_t u) {
    const int64_t n = offsets[u + 1] - offsets[u];
    return split && n > layout.split_above ? (n + layout.split_above - 1) / layout.split_above
                                           : int64_t{1};
  };
  // Calls f(begin, end, piece) for the pieces of a run of user u: the run itself, or near-equal
  // pieces when the user is split (the run is then the whole row).
  auto for_each_piece = [&](int64_t u, int64_t b, int64_t e, auto&& f) {
    const int64_t pieces = share_count(u), n = e - b;
    for (int64_t x = 0; x < pieces; ++x) f(b + n * x / pieces, b + n * (x + 1) / pieces, x);
  };
  std::vector<int64_t> first_share, worker_of;
  if (grid <= 1) {
    first_share.assign(static_cast<size_t>(users) + 1, 0);
    for (int64_t u = 0; u < users; ++u) {
      first_share[static_cast<size_t>(u) + 1] =
          first_share[static_cast<size_t>(u)] + share_count(u);
    }
    std::vector<int64_t> sizes(static_cast<size_t>(first_share.back()));
    for (int64_t u = 0; u < users; ++u) {
      for_each_piece(u, offsets[u], offsets[u + 1], [&](int64_t b, int64_t e, int64_t x) {
        sizes[static_cast<size_t>(first_share[static_cast<size_t>(u)] + x)] = e - b;
      });
    }
    worker_of = deal_shares(sizes, workers);
    if (first_share.back() > users) {
      out.split_weight.resize(static_cast<size_t>(users));
      for (int64_t u = 0; u < users; ++u) {
        out.split_weight[static_cast<size_t>(u)] = 1.0f / static_cast<float>(share_count(u));
      }
    }
  }
  auto item_part = [&](int32_t item) {
    return static_cast<int>(int64_t{item} * ranges / std::max<int64_t>(items, 1));
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
    for_each_run(u, [&](int64_t b, int64_t e, int) {
      for_each_piece(u, b, e, [&](int64_t pb, int64_t pe, int64_t) { n += pieces_of(pe - pb); });
    });
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
      for (int64_t x = b; x < e; ++x)
        staged[static_cast<size_t>(x)] = {indices[x], values[x] / scale};
      std::shuffle(staged.begin() + b, staged.begin() + e, g);
      const bool shared = share_count(u) > 1;
      const auto id = static_cast<int32_t>(shared ? ~u : u);
      for_each_piece(u, b, e, [&](int64_t pb, int64_t pe, int64_t piece) {
        const int64_t n = pe - pb, count = pieces_of(n);
        const int64_t owner =
            grid > 1 ? int64_t{user_part} * grid + part
                     : worker_of[static_cast<size_t>(first_share[static_cast<size_t>(u)] + piece)] *
                               ranges +
                           part;
        for (int64_t c = 0; c < count; ++c) {
          const int64_t from = pb + n * c / count, to = pb + n * (c + 1) / count;
          chunks[static_cast<size_t>(next++)] = {id, owner, from, to - from};
        }
      });
    });
  }
  // The chunks grouped by part (stable, in user order), then each part's shuffled.
  std::vector<int64_t> part_first(static_cast<size_t>(parts) + 1, 0);
  for (const Chunk& c : chunks) ++part_first[static_cast<size_t>(c.part) + 1];
  std::partial_sum(part_first.begin(), part_first.end(), part_first.begin());
  std::vector<Chunk> by_part(chunks.size());
  {
    std::vector<int64_t> at(part_first.begin(), part_first.end() - 1);
    for (const Chunk& c : chunks)
      by_part[static_cast<size_t>(at[static_cast<size_t>(c.part)]++)] = c;
  }
  std::vector<Chunk>().swap(chunks);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int64_t part = 0; part < parts; ++part) {
    SplitMix64 g(part_seed, static_cast<uint64_t>(part));
    std::shuffle(by_part.begin() + part_first[static_cast<size_t>(part)],
                 by_part.begin() + part_first[static_cast<size_t>(part) + 1], g);
  }

  // Pass 2: the pieces in slab order (grid: a slab per diagonal, its blocks as parts; workers:
  // each worker's chunks, or its nonempty cells in its order of the ranges, cut into `slabs`
  // pieces of near-equal sample counts). A piece is runs of by_part, one per cell.
  struct Run {
    int64_t begin, end;  // into by_part
    int32_t range;       // the cell's item range (wavefront)
  };
  using Piece = std::vector<Run>;
  std::vector<std::vector<Piece>> pieces;  // per slab, per part
  auto part_run = [&](int64_t part, int64_t range) {
    return Run{part_first[static_cast<size_t>(part)], part_first[static_cast<size_t>(part) + 1],
               static_cast<int32_t>(range)};
  };
  auto samples_of = [&](const Run& r) {
    int64_t n = 0;
    for (int64_t x = r.begin; x < r.end; ++x) n += by_part[static_cast<size_t>(x)].size;
    return n;
  };
  if (grid > 1) {
    out.parts = grid;
    for (int d = 0; d < grid; ++d) {
      std::vector<Piece> slab;
      for (int i = 0; i < grid; ++i)
        slab.push_back({part_run(int64_t{i} * grid + (i + d) % grid, 0)});
      pieces.push_back(std::move(slab));
    }
  } else {
    out.parts = workers;
    pieces.assign(static_cast<size_t>(slabs), std::vector<Piece>(static_cast<size_t>(workers)));
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16)
    for (int64_t w = 0; w < workers; ++w) {
      // The worker's cells in its own random order of the ranges (one run when not wavefront).
      std::vector<int64_t> order_of_ranges(static_cast<size_t>(ranges));
      std::iota(order_of_ranges.begin(), order_of_ranges.end(), 0);
      if (wavefront) {
        SplitMix64 g(order_seed, static_cast<uint64_t>(w));
        std::shuffle(order_of_ranges.begin(), order_of_ranges.end(), g);
      }
      std::vector<Run> cells;
      std::vector<int64_t> sizes;
      int64_t total = 0;
      for (int64_t r : order_of_ranges) {
        const Run cell = part_run(w * ranges + r, r);
        if (wavefront && cell.begin == cell.end) continue;
        cells.push_back(cell);
        sizes.push_back(samples_of(cell));
        total += sizes.back();
      }
      // Piece s ends where the running sample count reaches total (s + 1) / S: at a chunk
      // (Hogwild: one cell) or at a cell boundary (wavefront).
      size_t cell = 0;
      int64_t at = cells.empty() ? 0 : cells[0].begin, seen = 0;
      for (int64_t sl = 0; sl < slabs; ++sl) {
        const int64_t goal = total * (sl + 1) / slabs;
        Piece& piece = pieces[static_cast<size_t>(sl)][static_cast<size_t>(w)];
        if (wavefront) {
          while (cell < cells.size() && seen < goal) {
            piece.push_back(cells[cell]);
            seen += sizes[cell++];
          }
          continue;
        }
        const int64_t begin = at;
        while (!cells.empty() && at < cells[0].end && seen < goal) {
          seen += by_part[static_cast<size_t>(at++)].size;
        }
        piece.push_back({begin, at, 0});
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
      if (wavefront) out.part_cells.push_back(static_cast<int64_t>(out.cell_range.size()));
      for (const Run& run : piece) {
        if (wavefront) {
          out.cell_begin.push_back(static_cast<int64_t>(order.size()));
          out.cell_range.push_back(run.range);
        }
        for (int64_t n = run.begin; n < run.end; ++n) order.push_back(n);
      }
    }
    out.part_begin.push_back(static_cast<int64_t>(order.size()));
    if (wavefront) out.part_cells.push_back(static_cast<int64_t>(out.cell_range.size()));
    out.slab_begin.push_back(static_cast<int64_t>(order.size()));
  }
  if (wavefront) out.cell_begin.push_back(static_cast<int64_t>(order.size()));
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
