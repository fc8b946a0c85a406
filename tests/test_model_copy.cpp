// sfac_model_copy: a copy bound to the same or another context answers every call as the
// original does, is independent of it, and bad arguments write nothing.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "model_queries.h"
#include "sfac_test.h"

using namespace sfac_test;

namespace {

// Both models answer predict, evaluate, recommend, similar items and fold-in alike: bit for bit
// where each result is computed alone (the same host code on the same floats), up to the order
// of summation where the context's thread count splits a sum (evaluate, fold-in).
void expect_same_answers(sfac_model* a, sfac_model* b, const sfac_sparse* ratings,
                         std::mt19937_64& rng) {
  const ModelState s = model_state(a);
  ASSERT_EQ(model_state(b), s);

  const std::vector<int32_t> users = random_ids(rng, 500, s.users);
  const std::vector<int32_t> items = random_ids(rng, 500, s.items);
  std::vector<float> pa(users.size()), pb(users.size());
  SFAC_ASSERT_OK(sfac_model_predict(a, 500, users.data(), items.data(), pa.data()));
  SFAC_ASSERT_OK(sfac_model_predict(b, 500, users.data(), items.data(), pb.data()));
  EXPECT_EQ(pa, pb);

  double rmse_a = 0, mae_a = 0, rmse_b = 0, mae_b = 0;
  SFAC_ASSERT_OK(sfac_model_evaluate(a, ratings, &rmse_a, &mae_a));
  SFAC_ASSERT_OK(sfac_model_evaluate(b, ratings, &rmse_b, &mae_b));
  EXPECT_NEAR(rmse_a, rmse_b, 1e-12 * rmse_a);
  EXPECT_NEAR(mae_a, mae_b, 1e-12 * mae_a);

  const std::vector<int32_t> some_users = random_ids(rng, 30, s.users);
  std::vector<int32_t> allowed = random_ids(rng, 20, s.items);
  EXPECT_EQ(recommend(a, some_users, 10, ratings), recommend(b, some_users, 10, ratings));
  EXPECT_EQ(recommend(a, some_users, 7, nullptr, &allowed),
            recommend(b, some_users, 7, nullptr, &allowed));
  const std::vector<int32_t> queries = random_ids(rng, 20, s.items);
  EXPECT_EQ(similar_items(a, queries, 12), similar_items(b, queries, 12));

  // Fold-in reads the training settings (lambda, regularization, alpha): copied too.
  std::vector<int32_t> rated = {3, 1, 4, 15, 9, 2, 6};
  const std::vector<float> values = {1, 2, 3, 1, 2, 3, 1};
  std::vector<float> xa(s.rank), xb(s.rank);
  float ba = 0.0f, bb = 0.0f;
  SFAC_ASSERT_OK(
      sfac_model_recalculate_user(a, -1, 7, rated.data(), values.data(), xa.data(), s.rank, &ba));
  SFAC_ASSERT_OK(
      sfac_model_recalculate_user(b, -1, 7, rated.data(), values.data(), xb.data(), s.rank, &bb));
  for (int64_t t = 0; t < s.rank; ++t) {
    EXPECT_NEAR(xa[t], xb[t], 1e-4f * (1.0f + std::abs(xa[t]))) << "factor " << t;
  }
  EXPECT_NEAR(ba, bb, 1e-4f * (1.0f + std::abs(ba)));
  EXPECT_TRUE(std::isfinite(xa[0]) && std::isfinite(ba));
}

}  // namespace

TEST(ModelCopy, SameAndOtherContextAnswerAsTheOriginal) {
  Context ctx = make_cpu_context(2, test_seed());
  Context other = make_cpu_context(1, test_seed() + 1);
  std::mt19937_64 rng(test_seed());
  struct Case {
    sfac_algorithm algorithm;
    sfac_feedback feedback;
    bool biases;
  };
  for (const Case c : {Case{SFAC_ALGO_ALS, SFAC_FEEDBACK_EXPLICIT, true},
                       Case{SFAC_ALGO_IALS, SFAC_FEEDBACK_IMPLICIT, false},
                       Case{SFAC_ALGO_SGD, SFAC_FEEDBACK_EXPLICIT, false}}) {
    SCOPED_TRACE("algorithm " + std::to_string(c.algorithm));
    Sparse ratings = synthetic_ratings(ctx.get(), c.feedback, 300, 200, 6000);
    Model model = trained_model(ctx.get(), ratings.get(), c.algorithm, c.biases);
    Model same = copy_model(model.get(), nullptr);
    Model moved = copy_model(model.get(), other.get());
    ASSERT_TRUE(same && moved);
    EXPECT_NE(same.get(), model.get());
    expect_same_answers(model.get(), same.get(), ratings.get(), rng);
    expect_same_answers(model.get(), moved.get(), ratings.get(), rng);
  }
}

TEST(ModelCopy, IsIndependentOfTheOriginal) {
  Context ctx = make_cpu_context(2, test_seed());
  Sparse ratings = synthetic_ratings(ctx.get(), SFAC_FEEDBACK_EXPLICIT, 120, 80, 2000);
  Model model = trained_model(ctx.get(), ratings.get(), SFAC_ALGO_ALS, true);
  const ModelState original = model_state(model.get());
  std::mt19937_64 rng(test_seed() + 2);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  auto random_factors = [&](size_t n) {
    std::vector<float> v(n);
    for (float& f : v) f = uniform(rng);
    return v;
  };

  // Changes to the copy leave the original.
  sfac_context* other_raw = nullptr;
  SFAC_ASSERT_OK(sfac_context_create(SFAC_BACKEND_CPU, 0, 1, 5, &other_raw));
  Model copy = copy_model(model.get(), other_raw);
  SFAC_ASSERT_OK(sfac_context_destroy(other_raw));  // the copy keeps its backend alive
  const std::vector<float> x = random_factors(original.x.size());
  SFAC_ASSERT_OK(sfac_model_set_user_factors(copy.get(), x.data()));
  const std::vector<int32_t> rated = {0, 5, 9};
  const std::vector<float> values = {4, 1, 2};
  std::vector<float> row(original.rank);
  SFAC_ASSERT_OK(sfac_model_recalculate_user(copy.get(), 3, 3, rated.data(), values.data(),
                                             row.data(), original.rank, nullptr));
  EXPECT_EQ(model_state(model.get()), original);
  ModelState changed = model_state(copy.get());
  EXPECT_NE(changed.x, original.x);
  EXPECT_EQ(changed.y, original.y);

  // Changes to the original leave the copy.
  const std::vector<float> y = random_factors(original.y.size());
  SFAC_ASSERT_OK(sfac_model_set_item_factors(model.get(), y.data()));
  EXPECT_EQ(model_state(copy.get()), changed);
  EXPECT_EQ(model_state(model.get()).y, y);

  // The copy outlives the original and answers with its own factors.
  const std::vector<int32_t> users = random_ids(rng, 40, original.users);
  const TopN before = recommend(copy.get(), users, 5, ratings.get());
  model.reset();
  EXPECT_EQ(model_state(copy.get()), changed);
  EXPECT_EQ(recommend(copy.get(), users, 5, ratings.get()), before);
  for (int64_t r = 0; r < 40; ++r) {
    float score = 0.0f;
    const int32_t item = before.items[r * 5];
    SFAC_ASSERT_OK(sfac_model_predict(copy.get(), 1, &users[r], &item, &score));
    EXPECT_EQ(score, before.scores[r * 5]);
  }
}

TEST(ModelCopy, RejectsBadArgumentsAndWritesNothing) {
  Context ctx = make_cpu_context(2, test_seed());
  Sparse ratings = synthetic_ratings(ctx.get(), SFAC_FEEDBACK_EXPLICIT, 50, 40, 500);
  Model model = trained_model(ctx.get(), ratings.get(), SFAC_ALGO_ALS, false);
  const ModelState original = model_state(model.get());
  int anchor = 0;
  sfac_model* const sentinel = reinterpret_cast<sfac_model*>(&anchor);
  sfac_model* out = sentinel;

  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "model is NULL",
                    sfac_model_copy(nullptr, ctx.get(), &out));
  // What a destroyed handle reads as (its tag cleared), and handles of the wrong type.
  alignas(64) unsigned char dead[256] = {};
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "model is not a live sfac_model",
                    sfac_model_copy(reinterpret_cast<sfac_model*>(dead), ctx.get(), &out));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "model is not a live sfac_model",
                    sfac_model_copy(reinterpret_cast<sfac_model*>(ctx.get()), ctx.get(), &out));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_INVALID_HANDLE, "ctx is not a live sfac_context",
      sfac_model_copy(model.get(), reinterpret_cast<sfac_context*>(ratings.get()), &out));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out is NULL",
                    sfac_model_copy(model.get(), ctx.get(), nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out is NULL",
                    sfac_model_copy(model.get(), nullptr, nullptr));
  EXPECT_EQ(out, sentinel);
  EXPECT_EQ(model_state(model.get()), original);
  expect_context_usable(ctx.get());
}
