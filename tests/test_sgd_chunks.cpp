// The sample order of the GPU SGD trainer (src/core/sgd_chunks.h), compiled in: every sample
// exactly once, chunks of one user within one grid block, near-equal lengths within a user's
// block, a random order that one seed fixes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/sgd_chunks.h"
#include "sfac_test.h"

using namespace sfac_test;

namespace {

struct Csr {
  int64_t rows, cols;
  std::vector<int64_t> offsets;
  std::vector<int32_t> indices;
  std::vector<float> values;
};

// Power-law row lengths (some rows empty, one row with every column), columns sorted.
Csr random_csr(int64_t rows, int64_t cols, uint64_t seed) {
  Csr m{rows, cols, {0}, {}, {}};
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double density = r == 3 ? 1.0 : std::pow(u(g), 3.0);
    for (int32_t c = 0; c < cols; ++c) {
      if (u(g) < density) {
        m.indices.push_back(c);
        m.values.push_back(static_cast<float>(1 + (r * 7 + c) % 5));
      }
    }
    m.offsets.push_back(static_cast<int64_t>(m.indices.size()));
  }
  return m;
}

sfac::SgdChunks arrange(const Csr& m, int64_t max_chunk, int grid, int64_t workers, uint64_t seed,
                        float scale = 1.0f, int64_t slabs = 1, int threads = 2, int64_t ranges = 0,
                        int64_t split_above = 0) {
  std::mt19937_64 rng(seed);
  sfac::SgdLayout layout;
  layout.max_chunk = max_chunk;
  layout.grid = grid;
  layout.workers = workers;
  layout.ranges = ranges;
  layout.slabs = slabs;
  layout.split_above = split_above;
  return sfac::arrange_sgd_chunks(m.rows, m.cols, m.offsets.data(), m.indices.data(),
                                  m.values.data(), scale, layout, rng, threads);
}

}  // namespace

TEST(SgdChunks, EverySampleOnceInChunksOfOneUserWithinOnePart) {
  const Csr m = random_csr(300, 170, test_seed());
  struct Shape {
    int grid;
    int64_t workers, slabs, ranges, split_above = 0;
  };
  // Grid blocks (a slab per diagonal), or workers' shares in one or more slabs, whole or as
  // wavefront cells.
  for (const Shape shape :
       {Shape{1, 1, 1, 0}, Shape{1, 3, 1, 0}, Shape{1, 16, 1, 0}, Shape{1, 5, 4, 0},
        Shape{1, 2, 9, 0}, Shape{4, 1, 1, 0}, Shape{7, 1, 1, 0}, Shape{1, 1, 1, 1},
        Shape{1, 3, 1, 6}, Shape{1, 5, 3, 10}, Shape{1, 4, 2, 170}, Shape{1, 7, 1, 0, 20},
        Shape{1, 4, 3, 0, 9}}) {
    for (int64_t max_chunk : {1, 5, 32}) {
      const int grid = shape.grid;
      SCOPED_TRACE("grid " + std::to_string(grid) + " workers " + std::to_string(shape.workers) +
                   " slabs " + std::to_string(shape.slabs) + " ranges " +
                   std::to_string(shape.ranges) + " split above " +
                   std::to_string(shape.split_above) + " max_chunk " + std::to_string(max_chunk));
      const float scale = 2.0f;
      const bool wavefront = shape.ranges > 0;
      const sfac::SgdChunks c = arrange(m, max_chunk, grid, shape.workers, test_seed(), scale,
                                        shape.slabs, 2, shape.ranges, shape.split_above);
      // Users cut between workers: those with more than split_above ratings (Hogwild only).
      auto is_split = [&](int64_t u) {
        return shape.split_above > 0 && m.offsets[u + 1] - m.offsets[u] > shape.split_above;
      };
      const int64_t parts = grid > 1 ? grid : shape.workers;
      const int64_t slabs = grid > 1 ? grid : shape.slabs;
      ASSERT_EQ(c.grid, grid);
      ASSERT_EQ(c.parts, parts);
      ASSERT_EQ(c.slabs(), slabs);
      ASSERT_EQ(c.samples.size(), m.indices.size());
      ASSERT_EQ(c.chunk_begin.size(), c.chunk_user.size() + 1);
      ASSERT_EQ(c.chunk_begin.front(), 0);
      ASSERT_EQ(c.chunk_begin.back(), static_cast<int64_t>(m.indices.size()));
      ASSERT_EQ(c.part_begin.size(), static_cast<size_t>(slabs * (parts + 1)));
      ASSERT_EQ(c.slab_begin.front(), 0);
      ASSERT_EQ(c.slab_begin.back(), c.chunks());
      ASSERT_EQ(c.ranges, shape.ranges);
      // Wavefront: the cells tile each part; a cell's chunks share one item range, which no
      // other cell of the worker has.
      std::vector<int32_t> range_of_chunk(static_cast<size_t>(c.chunks()), -1);
      if (wavefront) {
        ASSERT_EQ(c.part_cells.size(), static_cast<size_t>(slabs * (parts + 1)));
        ASSERT_EQ(c.cell_begin.size(), c.cell_range.size() + 1);
        std::vector<std::vector<int32_t>> ranges_of(static_cast<size_t>(parts));
        for (int64_t slab = 0; slab < slabs; ++slab) {
          const int64_t* pc = c.part_cells.data() + slab * (parts + 1);
          const int64_t* pb = c.slab_parts(slab);
          for (int64_t w = 0; w < parts; ++w) {
            ASSERT_EQ(c.cell_begin[pc[w]], pb[w]);
            ASSERT_EQ(c.cell_begin[pc[w + 1]], pb[w + 1]);
            for (int64_t cell = pc[w]; cell < pc[w + 1]; ++cell) {
              ASSERT_LT(c.cell_begin[cell], c.cell_begin[cell + 1]) << "no empty cells";
              ranges_of[w].push_back(c.cell_range[cell]);
              for (int64_t k = c.cell_begin[cell]; k < c.cell_begin[cell + 1]; ++k) {
                range_of_chunk[k] = c.cell_range[cell];
              }
            }
          }
        }
        for (auto& r : ranges_of) {
          std::sort(r.begin(), r.end());
          EXPECT_TRUE(std::adjacent_find(r.begin(), r.end()) == r.end()) << "a range twice";
        }
      } else {
        EXPECT_TRUE(c.cell_begin.empty() && c.cell_range.empty() && c.part_cells.empty());
      }
      // (user, item) -> rating / scale, each exactly once.
      std::map<std::pair<int32_t, int32_t>, float> want, got;
      for (int64_t r = 0; r < m.rows; ++r) {
        for (int64_t e = m.offsets[r]; e < m.offsets[r + 1]; ++e) {
          want[{static_cast<int32_t>(r), m.indices[e]}] = m.values[e] / scale;
        }
      }
      // Per (user, grid block or worker): the chunk lengths, which must differ by at most one.
      std::map<std::pair<int32_t, int64_t>, std::vector<int64_t>> lengths;
      std::map<int32_t, int64_t> worker_of_user;
      std::vector<int64_t> load(static_cast<size_t>(parts), 0);
      for (int64_t slab = 0; slab < slabs; ++slab) {
        const int64_t* pb = c.slab_parts(slab);
        ASSERT_EQ(pb[0], c.slab_begin[slab]);
        ASSERT_EQ(pb[parts], c.slab_begin[slab + 1]);
        for (int64_t part = 0; part < parts; ++part) {
          ASSERT_LE(pb[part], pb[part + 1]);
          // Grid: slab d's part i is block (i, (i + d) mod B).
          const int64_t block = grid > 1 ? part * grid + (part + slab) % grid : part;
          for (int64_t k = pb[part]; k < pb[part + 1]; ++k) {
            // A split user's chunks carry ~user.
            const bool shared = c.chunk_user[k] < 0;
            const int32_t u = shared ? ~c.chunk_user[k] : c.chunk_user[k];
            ASSERT_EQ(shared, is_split(u)) << "user " << u;
            const int64_t len = c.chunk_begin[k + 1] - c.chunk_begin[k];
            ASSERT_GE(len, 1) << "no empty chunks";
            ASSERT_LE(len, max_chunk);
            if (grid > 1) {
              EXPECT_EQ(u * grid / m.rows, block / grid) << "user range of block " << block;
            } else if (!shared) {
              EXPECT_EQ(worker_of_user.emplace(u, part).first->second, part)
                  << "user " << u << " with two workers";
            }
            // Wavefront: per (user, cell); a split user's pieces are not checked for lengths.
            if (!shared) {
              lengths[{u, wavefront ? part * shape.ranges + range_of_chunk[k] : block}].push_back(
                  len);
            }
            load[part] += len;
            for (int64_t s = c.chunk_begin[k]; s < c.chunk_begin[k + 1]; ++s) {
              const sfac::SgdSample x = c.samples[s];
              if (grid > 1) {
                EXPECT_EQ(int64_t{x.item} * grid / m.cols, block % grid)
                    << "item range of block " << block;
              }
              if (wavefront) {
                EXPECT_EQ(int64_t{x.item} * shape.ranges / m.cols, range_of_chunk[k])
                    << "item range of the cell of chunk " << k;
              }
              EXPECT_TRUE(got.emplace(std::make_pair(u, x.item), x.rating).second)
                  << "sample (" << u << ", " << x.item << ") twice";
            }
          }
        }
      }
      EXPECT_EQ(got, want);
      const bool any_split =
          std::any_of(c.chunk_user.begin(), c.chunk_user.end(), [](int32_t u) { return u < 0; });
      EXPECT_EQ(any_split, shape.split_above > 0)
          << "split users where asked for (random_csr has users past every split size tried)";
      // Each user's weight is 1 / its pieces (its chunks' changes are averaged, not summed).
      if (any_split) {
        ASSERT_EQ(c.split_weight.size(), static_cast<size_t>(m.rows));
        for (int64_t r = 0; r < m.rows; ++r) {
          const int64_t n = m.offsets[r + 1] - m.offsets[r];
          const int64_t pieces = is_split(r) ? (n + shape.split_above - 1) / shape.split_above : 1;
          EXPECT_EQ(c.split_weight[r], 1.0f / static_cast<float>(pieces)) << "user " << r;
        }
      } else {
        EXPECT_TRUE(c.split_weight.empty());
      }
      for (const auto& [key, l] : lengths) {
        const auto [lo, hi] = std::minmax_element(l.begin(), l.end());
        EXPECT_LE(*hi - *lo, 1) << "user " << key.first << " part " << key.second;
        // As few chunks as the cap allows.
        int64_t n = 0;
        for (int64_t x : l) n += x;
        EXPECT_EQ(static_cast<int64_t>(l.size()), (n + max_chunk - 1) / max_chunk);
      }
      if (grid == 1) {
        // Dealt largest first to the least loaded: no share exceeds the mean by more than the
        // largest user, or the largest piece of a split user.
        int64_t largest = 0;
        for (int64_t r = 0; r < m.rows; ++r) {
          largest =
              std::max(largest, is_split(r) ? shape.split_above : m.offsets[r + 1] - m.offsets[r]);
        }
        const double mean = static_cast<double>(m.indices.size()) / static_cast<double>(parts);
        for (int64_t x : load) {
          EXPECT_LE(static_cast<double>(x), mean + static_cast<double>(largest));
        }
        // A worker's pieces: each within one chunk (wavefront: one cell) of an equal share of
        // its samples.
        for (int64_t w = 0; w < parts; ++w) {
          int64_t tolerance = max_chunk;
          for (int64_t slab = 0; wavefront && slab < slabs; ++slab) {
            const int64_t* pc = c.part_cells.data() + slab * (parts + 1);
            for (int64_t cell = pc[w]; cell < pc[w + 1]; ++cell) {
              tolerance = std::max(tolerance, c.chunk_begin[c.cell_begin[cell + 1]] -
                                                  c.chunk_begin[c.cell_begin[cell]]);
            }
          }
          for (int64_t slab = 0; slab < slabs; ++slab) {
            const int64_t* pb = c.slab_parts(slab);
            const int64_t piece = c.chunk_begin[pb[w + 1]] - c.chunk_begin[pb[w]];
            EXPECT_LE(std::abs(static_cast<double>(piece) -
                               static_cast<double>(load[w]) / static_cast<double>(slabs)),
                      static_cast<double>(tolerance))
                << "worker " << w << " slab " << slab;
          }
        }
      }
    }
  }
}

TEST(SgdChunks, OneSeedGivesOneOrderOnAnyThreadCountAndAnotherSeedAnother) {
  const Csr m = random_csr(200, 90, test_seed());
  const sfac::SgdChunks a = arrange(m, 8, 1, 1, 11), b = arrange(m, 8, 1, 1, 11),
                        c = arrange(m, 8, 1, 1, 12);
  auto key = [](const sfac::SgdChunks& x) {
    std::vector<std::tuple<int32_t, int32_t>> k;
    for (int64_t n = 0; n < x.chunks(); ++n) {
      for (int64_t s = x.chunk_begin[n]; s < x.chunk_begin[n + 1]; ++s) {
        k.emplace_back(x.chunk_user[n], x.samples[s].item);
      }
    }
    return k;
  };
  EXPECT_EQ(key(a), key(b));
  EXPECT_NE(key(a), key(c));
  // The thread count does not change it, with or without wavefront cells.
  const sfac::SgdChunks cells = arrange(m, 8, 1, 3, 11, 1.0f, 2, 1, 7);
  for (int threads : {1, 3, 8}) {
    EXPECT_EQ(key(arrange(m, 8, 1, 1, 11, 1.0f, 1, threads)), key(a)) << threads << " threads";
    const sfac::SgdChunks again = arrange(m, 8, 1, 3, 11, 1.0f, 2, threads, 7);
    EXPECT_EQ(key(again), key(cells)) << threads << " threads";
    EXPECT_EQ(again.cell_range, cells.cell_range) << threads << " threads";
  }
  // Workers draw their own orders of the ranges.
  const int64_t* pc = cells.part_cells.data();
  EXPECT_FALSE(std::equal(cells.cell_range.begin() + pc[0], cells.cell_range.begin() + pc[1],
                          cells.cell_range.begin() + pc[1], cells.cell_range.begin() + pc[2]));
  // The chunks are not left in user order.
  EXPECT_FALSE(std::is_sorted(a.chunk_user.begin(), a.chunk_user.end()));
}

TEST(SgdChunks, TheRatingScaleIsTheStandardDeviationAtLeast1e4) {
  const std::vector<float> v = {1, 2, 3, 4, 5};
  EXPECT_NEAR(sfac::sgd_rating_scale(v.data(), 5), std::sqrt(2.0), 1e-6);
  const std::vector<float> same(10, 3.0f);
  EXPECT_EQ(sfac::sgd_rating_scale(same.data(), 10), 1e-4f);
  EXPECT_EQ(sfac::sgd_rating_scale(nullptr, 0), 1e-4f);
}
