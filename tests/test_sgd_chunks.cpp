// The sample order of the GPU SGD trainer (src/core/sgd_chunks.h), compiled in: every sample
// exactly once, chunks of one user within one grid block, near-equal lengths within a user's
// block, a random order that one seed fixes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <tuple>
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

sfac::SgdChunks arrange(const Csr& m, int64_t max_chunk, int grid, int64_t workers,
                        uint64_t seed, float scale = 1.0f, int64_t slabs = 1, int threads = 2) {
  std::mt19937_64 rng(seed);
  return sfac::arrange_sgd_chunks(m.rows, m.cols, m.offsets.data(), m.indices.data(),
                                  m.values.data(), scale, max_chunk, grid, workers, slabs, rng,
                                  threads);
}

}  // namespace

TEST(SgdChunks, EverySampleOnceInChunksOfOneUserWithinOnePart) {
  const Csr m = random_csr(300, 170, test_seed());
  struct Shape {
    int grid;
    int64_t workers, slabs;
  };
  // Grid blocks (a slab per diagonal), or workers' shares in one or more slabs.
  for (const Shape shape : {Shape{1, 1, 1}, Shape{1, 3, 1}, Shape{1, 16, 1}, Shape{1, 5, 4},
                            Shape{1, 2, 9}, Shape{4, 1, 1}, Shape{7, 1, 1}}) {
    for (int64_t max_chunk : {1, 5, 32}) {
      const int grid = shape.grid;
      SCOPED_TRACE("grid " + std::to_string(grid) + " workers " + std::to_string(shape.workers) +
                   " slabs " + std::to_string(shape.slabs) + " max_chunk " +
                   std::to_string(max_chunk));
      const float scale = 2.0f;
      const sfac::SgdChunks c =
          arrange(m, max_chunk, grid, shape.workers, test_seed(), scale, shape.slabs);
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
            const int32_t u = c.chunk_user[k];
            const int64_t len = c.chunk_begin[k + 1] - c.chunk_begin[k];
            ASSERT_GE(len, 1) << "no empty chunks";
            ASSERT_LE(len, max_chunk);
            if (grid > 1) {
              EXPECT_EQ(u * grid / m.rows, block / grid) << "user range of block " << block;
            } else {
              EXPECT_EQ(worker_of_user.emplace(u, part).first->second, part)
                  << "user " << u << " with two workers";
            }
            lengths[{u, block}].push_back(len);
            load[part] += len;
            for (int64_t s = c.chunk_begin[k]; s < c.chunk_begin[k + 1]; ++s) {
              const sfac::SgdSample x = c.samples[s];
              if (grid > 1) {
                EXPECT_EQ(int64_t{x.item} * grid / m.cols, block % grid)
                    << "item range of block " << block;
              }
              EXPECT_TRUE(got.emplace(std::make_pair(u, x.item), x.rating).second)
                  << "sample (" << u << ", " << x.item << ") twice";
            }
          }
        }
      }
      EXPECT_EQ(got, want);
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
        // largest user.
        int64_t largest = 0;
        for (int64_t r = 0; r < m.rows; ++r) {
          largest = std::max(largest, m.offsets[r + 1] - m.offsets[r]);
        }
        const double mean = static_cast<double>(m.indices.size()) / static_cast<double>(parts);
        for (int64_t x : load) {
          EXPECT_LE(static_cast<double>(x), mean + static_cast<double>(largest));
        }
        // A worker's pieces: each within one chunk of an equal share of its samples.
        for (int64_t w = 0; w < parts; ++w) {
          for (int64_t slab = 0; slab < slabs; ++slab) {
            const int64_t* pb = c.slab_parts(slab);
            const int64_t piece = c.chunk_begin[pb[w + 1]] - c.chunk_begin[pb[w]];
            EXPECT_LE(std::abs(static_cast<double>(piece) -
                               static_cast<double>(load[w]) / static_cast<double>(slabs)),
                      static_cast<double>(max_chunk))
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
  // The thread count does not change it.
  for (int threads : {1, 3, 8}) {
    EXPECT_EQ(key(arrange(m, 8, 1, 1, 11, 1.0f, 1, threads)), key(a)) << threads << " threads";
  }
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
