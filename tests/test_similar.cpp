// sfac_model_similar: users or items most similar to a query of the same side, by cosine or inner
// product, on every backend, against a brute-force reference. Factors are multiples of 1/16, so
// every dot product is exact in fp32 in any order: inner-product lists must be the reference's
// bit for bit; cosines divide by rounded norms, so they agree to rounding.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "capi/testing_api.h"
#include "model_queries.h"
#include "sfac_test.h"

using namespace sfac_test;

namespace {

constexpr int64_t kUsers = 300, kItems = 200, kRank = 7;

std::vector<float> sixteenths(std::mt19937_64& rng, int64_t count) {
  std::uniform_int_distribution<int> level(-8, 8);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = static_cast<float>(level(rng)) / 16.0f;
  return v;
}

// The reference: every other row of `f` (rows x kRank) scored against row q as the host scores
// it, best first, ties by the lower id.
std::vector<std::pair<float, int32_t>> reference(const std::vector<float>& f, int64_t rows,
                                                 int32_t q, bool cosine) {
  auto dot = [&](int64_t a, int64_t b) {
    float s = 0.0f;
    for (int64_t t = 0; t < kRank; ++t) s += f[a * kRank + t] * f[b * kRank + t];
    return s;
  };
  std::vector<std::pair<float, int32_t>> out;
  for (int64_t j = 0; j < rows; ++j) {
    if (j == q) continue;
    float score = dot(q, j);
    if (cosine) {
      const float denominator = std::sqrt(dot(q, q)) * std::sqrt(dot(j, j));
      score = denominator > 0.0f ? score / denominator : 0.0f;
    }
    out.emplace_back(score, static_cast<int32_t>(j));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  return out;
}

class Similar : public ::testing::TestWithParam<sfac_backend> {
 protected:
  void SetUp() override {
    const std::string missing = backend_missing(GetParam());
    if (!missing.empty()) GTEST_SKIP() << "no such backend here: " << missing;
    ctx_ = make_context(GetParam(), 2, 5);
    Sparse ratings = synthetic_ratings(ctx_.get(), SFAC_FEEDBACK_IMPLICIT, kUsers, kItems, 3000);
    sfac_train_options* raw = nullptr;
    ASSERT_EQ(sfac_train_options_create(SFAC_ALGO_IALS, &raw), SFAC_OK);
    Options o(raw);
    ASSERT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_RANK, kRank), SFAC_OK);
    ASSERT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_ITERATIONS, 0), SFAC_OK);
    sfac_model* m = nullptr;
    ASSERT_EQ(sfac_train(ctx_.get(), ratings.get(), o.get(), &m), SFAC_OK) << sfac_last_error();
    model_ = Model(m);
    x_ = sixteenths(rng_, kUsers * kRank);
    y_ = sixteenths(rng_, kItems * kRank);
    std::fill_n(x_.begin() + 4 * kRank, kRank, 0.0f);  // user 4: all zeros
    std::copy_n(x_.begin(), kRank, x_.begin() + kRank);  // user 1 repeats user 0: ties
    SFAC_ASSERT_OK(sfac_model_set_user_factors(model_.get(), x_.data()));
    SFAC_ASSERT_OK(sfac_model_set_item_factors(model_.get(), y_.data()));
  }

  Context ctx_;
  Model model_;
  std::mt19937_64 rng_{test_seed() + 3};
  std::vector<float> x_, y_;
};

}  // namespace

TEST_P(Similar, UsersAndItemsByCosineAndInnerProduct) {
  // On a device: the 16-bit kernel (these factors are bfloat16 values), then the float32 one.
  for (const int allow_16bit : {1, 0}) {
    const int before = sfac_testing_allow_16bit_top_n(allow_16bit);
    Model model = copy_model(model_.get(), nullptr);  // a fresh device copy under this setting
    for (const sfac_axis side : {SFAC_AXIS_ROWS, SFAC_AXIS_COLS}) {
      const bool users = side == SFAC_AXIS_ROWS;
      const int64_t rows = users ? kUsers : kItems;
      const std::vector<float>& f = users ? x_ : y_;
      std::vector<int32_t> queries = random_ids(rng_, 40, rows);
      queries.insert(queries.end(), {0, 1, users ? 4 : 2});
      for (const sfac_similarity similarity :
           {SFAC_SIMILARITY_INNER_PRODUCT, SFAC_SIMILARITY_COSINE}) {
        const bool cosine = similarity == SFAC_SIMILARITY_COSINE;
        for (const int n : {1, 10, 128, 250}) {
          SCOPED_TRACE(testing::Message() << "16-bit allowed " << allow_16bit << " users " << users
                                          << " cosine " << cosine << " n " << n);
          std::vector<int32_t> ids(queries.size() * n, 777);
          std::vector<float> scores(ids.size(), 777.0f);
          SFAC_ASSERT_OK(sfac_model_similar(model.get(), side, similarity,
                                            static_cast<int64_t>(queries.size()), queries.data(),
                                            n, ids.data(), scores.data(),
                                            static_cast<int64_t>(ids.size())));
          for (size_t r = 0; r < queries.size(); ++r) {
            const auto want = reference(f, rows, queries[r], cosine);
            for (int j = 0; j < n; ++j) {
              const int32_t got_id = ids[r * n + j];
              const float got = scores[r * n + j];
              if (j >= static_cast<int>(want.size())) {
                ASSERT_EQ(got_id, -1) << "row " << r << " slot " << j;
                ASSERT_EQ(got, -INFINITY);
                continue;
              }
              if (!cosine) {  // exact
                ASSERT_EQ(got_id, want[j].second) << "row " << r << " slot " << j;
                ASSERT_EQ(got, want[j].first) << "row " << r << " slot " << j;
                continue;
              }
              // Cosines to rounding: the slot's score, and the listed row's own score.
              ASSERT_NEAR(got, want[j].first, 1e-6) << "row " << r << " slot " << j;
              ASSERT_NE(got_id, queries[r]);
              const auto it = std::find_if(want.begin(), want.end(),
                                           [&](const auto& w) { return w.second == got_id; });
              ASSERT_NE(it, want.end()) << "row " << r << " lists " << got_id;
              ASSERT_NEAR(it->first, want[j].first, 1e-6) << "row " << r << " slot " << j;
            }
          }
        }
      }
    }
    sfac_testing_allow_16bit_top_n(before);
  }
}

TEST_P(Similar, BadArgumentsFailAndWriteNothing) {
  std::vector<int32_t> ids(10, 777);
  std::vector<float> scores(10, 777.0f);
  const int32_t user = static_cast<int32_t>(kUsers - 1), item_past = static_cast<int32_t>(kItems);
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "side = 2",
                    sfac_model_similar(model_.get(), static_cast<sfac_axis>(2),
                                       SFAC_SIMILARITY_COSINE, 1, &user, 5, ids.data(),
                                       scores.data(), 10));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "similarity = 7",
                    sfac_model_similar(model_.get(), SFAC_AXIS_ROWS,
                                       static_cast<sfac_similarity>(7), 1, &user, 5, ids.data(),
                                       scores.data(), 10));
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "ids[0] = 200 is out of range for a model with 200 items",
                    sfac_model_similar(model_.get(), SFAC_AXIS_COLS, SFAC_SIMILARITY_COSINE, 1,
                                       &item_past, 5, ids.data(), scores.data(), 10));
  SFAC_EXPECT_ERROR(SFAC_ERR_BUFFER_TOO_SMALL, "needs 20",
                    sfac_model_similar(model_.get(), SFAC_AXIS_ROWS,
                                       SFAC_SIMILARITY_INNER_PRODUCT, 2, ids.data(), 10,
                                       ids.data(), scores.data(), 10));
  EXPECT_EQ(ids, std::vector<int32_t>(10, 777));
  EXPECT_EQ(scores, std::vector<float>(10, 777.0f));
}

INSTANTIATE_TEST_SUITE_P(Backends, Similar, ::testing::Values(SFAC_BACKEND_CPU, SFAC_BACKEND_CUDA),
                         backend_name);
