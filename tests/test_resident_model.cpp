// The core's dispatch of inference to a backend's resident copy of a model, on a CPU build: the
// hook of capi/testing_api.h gives a model a backend whose copy is a host snapshot of the
// factors. Its answers are compared with a plain copy of the model (no hook: the host code),
// so a copy that is used when it should not be, is stale after a change, or receives a request
// outside its contract shows as a wrong list or a failed call.
#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "capi/testing_api.h"
#include "model_queries.h"
#include "sfac_test.h"

using namespace sfac_test;

namespace {

struct Counts {
  int64_t builds = 0, served = 0;
};

Counts counts(const sfac_model* m) {
  Counts c;
  EXPECT_EQ(sfac_testing_resident_counts(m, &c.builds, &c.served), SFAC_OK) << sfac_last_error();
  return c;
}

class ResidentModel : public ::testing::Test {
 protected:
  void SetUp() override {
    ratings = synthetic_ratings(ctx.get(), SFAC_FEEDBACK_EXPLICIT, 200, 150, 4000);
    model = trained_model(ctx.get(), ratings.get(), SFAC_ALGO_ALS, true);
    host = copy_model(model.get(), nullptr);  // before the hook: always the host code
    state = model_state(model.get());
  }

  // Random users, an allow-list with repeats in random order, random query items.
  std::vector<int32_t> some_users(int64_t n = 25) { return random_ids(rng, n, state.users); }
  std::vector<int32_t> some_items(int64_t n = 25) { return random_ids(rng, n, state.items); }
  std::vector<float> random_factors(size_t n) {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& f : v) f = uniform(rng);
    return v;
  }

  // Every kind of query answers as the host does; returns how many were asked.
  int64_t expect_host_answers() {
    const std::vector<int32_t> users = some_users();
    std::vector<int32_t> allowed = some_items(15);
    allowed.push_back(allowed[2]);
    const std::vector<int32_t> queries = some_items(10);
    EXPECT_EQ(recommend(model.get(), users, 8), recommend(host.get(), users, 8));
    EXPECT_EQ(recommend(model.get(), users, 8, ratings.get()),
              recommend(host.get(), users, 8, ratings.get()));
    // n beyond the allow-list: the copy pads too.
    EXPECT_EQ(recommend(model.get(), users, 20, ratings.get(), &allowed),
              recommend(host.get(), users, 20, ratings.get(), &allowed));
    EXPECT_EQ(similar_items(model.get(), queries, 6), similar_items(host.get(), queries, 6));
    // Metrics: the ranking lists and the error sums come from the copy.
    EXPECT_EQ(errors(model.get()), errors(host.get()));
    EXPECT_EQ(ranking(model.get()), ranking(host.get()));
    // Batched fold-in, computing only.
    EXPECT_EQ(fold_in_rows(model.get(), nullptr), fold_in_rows(host.get(), nullptr));
    return 7;
  }

  std::vector<double> errors(const sfac_model* m) {
    double rmse = -1.0, mae = -1.0;
    EXPECT_EQ(sfac_model_evaluate(m, ratings.get(), &rmse, &mae), SFAC_OK) << sfac_last_error();
    return {rmse, mae};
  }
  std::vector<double> ranking(const sfac_model* m) {
    std::vector<double> r(4, -1.0);
    EXPECT_EQ(sfac_model_ranking_metrics(m, nullptr, ratings.get(), 5, &r[0], &r[1], &r[2], &r[3]),
              SFAC_OK)
        << sfac_last_error();
    return r;
  }
  // Users 3 (two ratings), a new user (none) and 9 (one rating) folded in; `users` may be null.
  std::vector<float> fold_in_rows(sfac_model* m, const int32_t* users) {
    const int64_t offsets[] = {0, 2, 2, 3};
    const int32_t items[] = {4, 1, 7};
    const float values[] = {5.0f, 1.0f, 3.0f};
    std::vector<float> out(static_cast<size_t>(3 * state.rank) + 3, -1.0f);
    EXPECT_EQ(sfac_model_recalculate_users(m, 3, users, offsets, items, values, out.data(),
                                           3 * state.rank, out.data() + 3 * state.rank),
              SFAC_OK)
        << sfac_last_error();
    return out;
  }

  Context ctx = make_cpu_context(2, test_seed());
  std::mt19937_64 rng{test_seed() + 7};
  Sparse ratings;
  Model model, host;
  ModelState state;
};

}  // namespace

TEST_F(ResidentModel, ServesRecommendAndSimilarItemsFromOneCopy) {
  SFAC_ASSERT_OK(sfac_testing_resident_hook(model.get(), SFAC_TESTING_RESIDENT_SERVE));
  // Nothing to answer: no copy is made.
  SFAC_ASSERT_OK(
      sfac_model_recommend(model.get(), 0, nullptr, 3, nullptr, 0, nullptr, nullptr, nullptr, 0));
  SFAC_ASSERT_OK(sfac_model_similar_items(model.get(), 0, nullptr, 3, nullptr, nullptr, 0));
  EXPECT_EQ(counts(model.get()).builds, 0);

  const int64_t asked = expect_host_answers();
  const int64_t again = expect_host_answers();
  EXPECT_EQ(counts(model.get()).builds, 1);
  EXPECT_EQ(counts(model.get()).served, asked + again);

  // An empty allow-list allows nothing: the core pads the rows without the copy.
  const std::vector<int32_t> users = some_users();
  const int32_t none = 0;  // a non-NULL list of length 0
  std::vector<int32_t> items(users.size() * 4, 777);
  std::vector<float> scores(items.size(), 777.0f);
  const auto size = static_cast<int64_t>(items.size());
  SFAC_ASSERT_OK(sfac_model_recommend(model.get(), static_cast<int64_t>(users.size()), users.data(),
                                      4, nullptr, 0, &none, items.data(), scores.data(), size));
  EXPECT_EQ(items, std::vector<int32_t>(items.size(), -1));
  EXPECT_EQ(counts(model.get()).served, asked + again);

  // Validation stays the core's: a bad request fails before the copy sees it.
  const std::vector<int32_t> bad = {0, static_cast<int32_t>(state.users)};
  std::fill(items.begin(), items.end(), 777);
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "users[1] = 200 is out of range",
                    sfac_model_recommend(model.get(), 2, bad.data(), 4, nullptr, 0, nullptr,
                                         items.data(), scores.data(), size));
  EXPECT_EQ(items, std::vector<int32_t>(items.size(), 777));
  EXPECT_EQ(counts(model.get()).served, asked + again);
}

TEST_F(ResidentModel, EveryChangeOfTheFactorsDropsTheCopy) {
  SFAC_ASSERT_OK(sfac_testing_resident_hook(model.get(), SFAC_TESTING_RESIDENT_SERVE));
  expect_host_answers();
  EXPECT_EQ(counts(model.get()).builds, 1);

  // Each change is made to both models; the next answers must use the new factors.
  const std::vector<float> x = random_factors(state.x.size());
  SFAC_ASSERT_OK(sfac_model_set_user_factors(model.get(), x.data()));
  SFAC_ASSERT_OK(sfac_model_set_user_factors(host.get(), x.data()));
  expect_host_answers();
  EXPECT_EQ(counts(model.get()).builds, 2);

  const std::vector<float> y = random_factors(state.y.size());
  SFAC_ASSERT_OK(sfac_model_set_item_factors(model.get(), y.data()));
  SFAC_ASSERT_OK(sfac_model_set_item_factors(host.get(), y.data()));
  expect_host_answers();
  EXPECT_EQ(counts(model.get()).builds, 3);

  // Folding in an existing user replaces its row; a new user (-1) changes nothing.
  const std::vector<int32_t> rated = some_items(6);
  std::vector<int32_t> distinct(rated);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const std::vector<float> values(distinct.size(), 4.0f);
  std::vector<float> row(state.rank);
  const auto n = static_cast<int64_t>(distinct.size());
  for (sfac_model* m : {model.get(), host.get()}) {
    SFAC_ASSERT_OK(sfac_model_recalculate_user(m, 7, n, distinct.data(), values.data(), row.data(),
                                               state.rank, nullptr));
  }
  expect_host_answers();
  EXPECT_EQ(counts(model.get()).builds, 4);
  SFAC_ASSERT_OK(sfac_model_recalculate_user(model.get(), -1, n, distinct.data(), values.data(),
                                             row.data(), state.rank, nullptr));
  expect_host_answers();
  EXPECT_EQ(counts(model.get()).builds, 4);

  // A batch that stores rows drops the copy; one of new users only does not.
  const int32_t stored[] = {3, -1, 9}, new_users[] = {-1, -1, -1};
  EXPECT_EQ(fold_in_rows(model.get(), stored), fold_in_rows(host.get(), stored));
  expect_host_answers();
  EXPECT_EQ(counts(model.get()).builds, 5);
  EXPECT_EQ(fold_in_rows(model.get(), new_users), fold_in_rows(host.get(), new_users));
  expect_host_answers();
  EXPECT_EQ(counts(model.get()).builds, 5);

  // A copy of the model starts without the original's copy and makes its own.
  Model twin = copy_model(model.get(), nullptr);
  const std::vector<int32_t> users = some_users();
  EXPECT_EQ(recommend(twin.get(), users, 5), recommend(host.get(), users, 5));
  EXPECT_EQ(counts(model.get()).builds, 6);
}

TEST_F(ResidentModel, ABackendWithoutACopyIsAskedOncePerChange) {
  SFAC_ASSERT_OK(sfac_testing_resident_hook(model.get(), SFAC_TESTING_RESIDENT_NONE));
  expect_host_answers();
  expect_host_answers();
  EXPECT_EQ(counts(model.get()).builds, 1);
  EXPECT_EQ(counts(model.get()).served, 0);
  const std::vector<float> y = random_factors(state.y.size());
  SFAC_ASSERT_OK(sfac_model_set_item_factors(model.get(), y.data()));
  SFAC_ASSERT_OK(sfac_model_set_item_factors(host.get(), y.data()));
  expect_host_answers();
  EXPECT_EQ(counts(model.get()).builds, 2);
}

TEST_F(ResidentModel, CallsTheCopyDeclinesFallBackToTheHost) {
  SFAC_ASSERT_OK(sfac_testing_resident_hook(model.get(), SFAC_TESTING_RESIDENT_DECLINE));
  expect_host_answers();
  expect_host_answers();
  EXPECT_EQ(counts(model.get()).builds, 1);
  EXPECT_EQ(counts(model.get()).served, 0);
}

TEST_F(ResidentModel, ConcurrentFirstCallsShareOneCopy) {
  SFAC_ASSERT_OK(sfac_testing_resident_hook(model.get(), SFAC_TESTING_RESIDENT_SERVE));
  constexpr int kThreads = 4, kCalls = 20;
  std::vector<std::vector<int32_t>> users(kThreads);
  std::vector<TopN> expected(kThreads), got(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    users[t] = some_users(10);
    expected[t] = recommend(host.get(), users[t], 6, ratings.get());
  }
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int c = 0; c < kCalls; ++c) {
        TopN out;
        out.items.resize(users[t].size() * 6);
        out.scores.resize(users[t].size() * 6);
        const sfac_status st =
            sfac_model_recommend(model.get(), static_cast<int64_t>(users[t].size()),
                                 users[t].data(), 6, ratings.get(), 0, nullptr, out.items.data(),
                                 out.scores.data(), static_cast<int64_t>(out.items.size()));
        if (st != SFAC_OK || !(out == expected[t])) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(counts(model.get()).builds, 1);
  EXPECT_EQ(counts(model.get()).served, kThreads * kCalls);
}

TEST_F(ResidentModel, HookRejectsBadArguments) {
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "model is NULL",
                    sfac_testing_resident_hook(nullptr, SFAC_TESTING_RESIDENT_SERVE));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "mode = 3",
                    sfac_testing_resident_hook(model.get(), 3));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "no sfac_testing_resident_hook",
                    sfac_testing_resident_counts(model.get(), nullptr, nullptr));
}
