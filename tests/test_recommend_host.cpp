// The host's top-n for many users and its similar items and users (sgemm scores choose the
// candidates, the one-by-one score orders them) against a brute-force walk through
// sfac_model_predict: the same lists and bit-identical scores, with exact ties and near-ties
// (rows one unit in the last place apart), exclusions, queries past one block and candidates
// past one chunk.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "model_queries.h"
#include "sfac_test.h"

using namespace sfac_test;

namespace {

struct Case {
  bool biases;
  int64_t rank;
};

// Rows of the exclusion matrix (sorted columns).
std::vector<std::vector<int32_t>> rows_of(const sfac_sparse* m, int64_t users) {
  int64_t rows = 0, cols = 0, nnz = 0;
  EXPECT_EQ(sfac_sparse_get_shape(m, &rows, &cols, &nnz), SFAC_OK);
  std::vector<int64_t> offsets(static_cast<size_t>(users) + 1);
  std::vector<int32_t> indices(static_cast<size_t>(nnz));
  EXPECT_EQ(sfac_sparse_download_csr(m, offsets.data(), users + 1, indices.data(), nullptr, nnz),
            SFAC_OK);
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(users));
  for (int64_t u = 0; u < users; ++u) {
    out[u].assign(indices.begin() + offsets[u], indices.begin() + offsets[u + 1]);
  }
  return out;
}

// rows x rank Gaussian factors in groups of four: a row, an exact copy (tied scores) and two
// copies with one entry one unit in the last place up or down (scores a rounding apart, which
// the sgemm may order otherwise than the one-by-one dot products).
std::vector<float> rows_in_fours(std::mt19937_64& rng, int64_t rows, int64_t rank) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> y(static_cast<size_t>(rows * rank));
  for (int64_t i = 0; i < rows; i += 4) {
    for (int64_t t = 0; t < rank; ++t) y[i * rank + t] = normal(rng);
    for (int64_t copy = 1; copy < 4 && i + copy < rows; ++copy) {
      std::copy_n(y.begin() + i * rank, rank, y.begin() + (i + copy) * rank);
    }
    const int64_t t = static_cast<int64_t>(rng() % static_cast<uint64_t>(rank));
    if (i + 2 < rows) y[(i + 2) * rank + t] = std::nextafter(y[i * rank + t], INFINITY);
    if (i + 3 < rows) y[(i + 3) * rank + t] = std::nextafter(y[i * rank + t], -INFINITY);
  }
  return y;
}

// The best n of (ids, scores) appended to `out`: higher score, then lower id; padded with
// -1 / -infinity.
void append_best(const std::vector<int32_t>& ids, const std::vector<float>& scores, int n,
                 TopN& out) {
  std::vector<size_t> order(ids.size());
  for (size_t j = 0; j < order.size(); ++j) order[j] = j;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return scores[a] > scores[b] || (scores[a] == scores[b] && ids[a] < ids[b]);
  });
  for (int j = 0; j < n; ++j) {
    const bool has = j < static_cast<int>(order.size());
    out.items.push_back(has ? ids[order[j]] : -1);
    out.scores.push_back(has ? scores[order[j]] : -INFINITY);
  }
}

// Every item not excluded, scored by predict, best first (higher score, then lower id; NaN
// never occurs here), padded with -1 / -infinity.
TopN brute_force(const sfac_model* m, const std::vector<int32_t>& users, int n, int64_t items,
                 const std::vector<std::vector<int32_t>>* excluded) {
  TopN out;
  for (int32_t u : users) {
    std::vector<int32_t> ids;
    for (int32_t i = 0; i < items; ++i) {
      if (excluded && std::binary_search((*excluded)[u].begin(), (*excluded)[u].end(), i)) continue;
      ids.push_back(i);
    }
    std::vector<int32_t> us(ids.size(), u);
    std::vector<float> scores(ids.size());
    EXPECT_EQ(sfac_model_predict(m, static_cast<int64_t>(ids.size()), us.data(), ids.data(),
                                 scores.data()),
              SFAC_OK);
    append_best(ids, scores, n, out);
  }
  return out;
}

class HostRecommend : public ::testing::TestWithParam<Case> {};
class HostSimilar : public ::testing::TestWithParam<int64_t> {};

}  // namespace

TEST_P(HostRecommend, ListsAndScoresAreTheItemByItemWalks) {
  const Case c = GetParam();
  const int64_t users = 150, items = 2500;  // 3 blocks of users, 3 chunks of items
  std::mt19937_64 rng(test_seed());
  Context ctx = make_cpu_context(2, 5);
  Sparse ratings = synthetic_ratings(ctx.get(), SFAC_FEEDBACK_EXPLICIT, users, items, users * 40);
  Model model = trained_model(ctx.get(), ratings.get(), SFAC_ALGO_ALS, c.biases, 1, c.rank);
  // Random factors; items in groups of four (rows_in_fours: ties and near-ties).
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(users * c.rank));
  for (float& v : x) v = normal(rng);
  const std::vector<float> y = rows_in_fours(rng, items, c.rank);
  SFAC_ASSERT_OK(sfac_model_set_user_factors(model.get(), x.data()));
  SFAC_ASSERT_OK(sfac_model_set_item_factors(model.get(), y.data()));
  const auto excluded = rows_of(ratings.get(), users);
  std::vector<int32_t> asked(static_cast<size_t>(users));
  for (int64_t u = 0; u < users; ++u) asked[u] = static_cast<int32_t>((u * 7) % users);
  for (int n : {1, 10, 100, 2600}) {
    SCOPED_TRACE(testing::Message() << "n " << n);
    const TopN want = brute_force(model.get(), asked, n, items, &excluded);
    EXPECT_TRUE(recommend(model.get(), asked, n, ratings.get()) == want);
    EXPECT_TRUE(recommend(model.get(), asked, n) ==
                brute_force(model.get(), asked, n, items, nullptr));
  }
}

// Similar items and users on a square model whose user and item factors are the same rows, so
// that predict(q, j) is the dot product similar() ranks (no biases): inner products and cosines
// (predict(q, j) / (sqrt(predict(q, q)) sqrt(predict(j, j))), 0 for the all-zero row 5), the
// query itself never listed, ties and near-ties from rows in groups of four as above.
TEST_P(HostSimilar, RowsAreTheRowByRowWalks) {
  const Case c{false, GetParam()};
  const int64_t rows = 1500;  // candidates past one chunk; 150 queries: 3 blocks
  std::mt19937_64 rng(test_seed());
  Context ctx = make_cpu_context(2, 5);
  Sparse ratings = synthetic_ratings(ctx.get(), SFAC_FEEDBACK_EXPLICIT, rows, rows, rows * 10);
  Model model = trained_model(ctx.get(), ratings.get(), SFAC_ALGO_ALS, false, 1, c.rank);
  std::vector<float> y = rows_in_fours(rng, rows, c.rank);
  std::fill_n(y.begin() + 5 * c.rank, c.rank, 0.0f);
  SFAC_ASSERT_OK(sfac_model_set_user_factors(model.get(), y.data()));
  SFAC_ASSERT_OK(sfac_model_set_item_factors(model.get(), y.data()));
  std::vector<int32_t> asked(150);
  for (size_t r = 0; r < asked.size(); ++r) asked[r] = static_cast<int32_t>((r * 7) % rows);
  asked[1] = 5;
  asked[2] = 9;
  std::vector<float> norm(static_cast<size_t>(rows));
  // Every list of the model as it is against brute force.
  auto check = [&] {
    for (int32_t i = 0; i < rows; ++i) {
      float self = 0.0f;
      SFAC_ASSERT_OK(sfac_model_predict(model.get(), 1, &i, &i, &self));
      norm[i] = std::sqrt(self);
    }
    for (const bool cosine : {false, true}) {
      for (int n : {1, 10, 100, 1600}) {
        SCOPED_TRACE(testing::Message() << "cosine " << cosine << " n " << n);
        TopN want;
        for (int32_t q : asked) {
          std::vector<int32_t> ids, us;
          for (int32_t j = 0; j < rows; ++j) {
            if (j != q) ids.push_back(j);
          }
          us.assign(ids.size(), q);
          std::vector<float> scores(ids.size());
          SFAC_ASSERT_OK(sfac_model_predict(model.get(), static_cast<int64_t>(ids.size()),
                                            us.data(), ids.data(), scores.data()));
          for (size_t e = 0; e < ids.size() && cosine; ++e) {
            const float denominator = norm[q] * norm[ids[e]];
            scores[e] = denominator > 0.0f ? scores[e] / denominator : 0.0f;
          }
          append_best(ids, scores, n, want);
        }
        const sfac_similarity similarity =
            cosine ? SFAC_SIMILARITY_COSINE : SFAC_SIMILARITY_INNER_PRODUCT;
        for (const sfac_axis side : {SFAC_AXIS_COLS, SFAC_AXIS_ROWS}) {
          TopN got;
          got.items.assign(asked.size() * n, 0x7f7f7f7f);
          got.scores.assign(asked.size() * n, NAN);
          SFAC_ASSERT_OK(sfac_model_similar(
              model.get(), side, similarity, static_cast<int64_t>(asked.size()), asked.data(), n,
              got.items.data(), got.scores.data(), static_cast<int64_t>(got.items.size())));
          EXPECT_TRUE(got == want) << "side " << static_cast<int>(side);
        }
      }
    }
  };
  check();
  // Row 9 scaled by 1e17: its norm leaves the range in which the blocks' bounds are kept, so
  // cosines are walked row by row, and so are row 9's own inner products.
  for (int64_t t = 0; t < c.rank; ++t) y[9 * c.rank + t] *= 1e17f;
  SFAC_ASSERT_OK(sfac_model_set_user_factors(model.get(), y.data()));
  SFAC_ASSERT_OK(sfac_model_set_item_factors(model.get(), y.data()));
  SCOPED_TRACE("row 9 scaled by 1e17");
  check();
}

INSTANTIATE_TEST_SUITE_P(Shapes, HostRecommend,
                         ::testing::Values(Case{false, 100}, Case{true, 100}, Case{true, 7},
                                           Case{false, 1}, Case{false, 130}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.biases ? "Biases" : "NoBiases") + "Rank" +
                                  std::to_string(info.param.rank);
                         });

INSTANTIATE_TEST_SUITE_P(Ranks, HostSimilar, ::testing::Values(1, 7, 100, 130),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return "Rank" + std::to_string(info.param);
                         });
