// sfac_model_recalculate_users: fold-in of many users in one call, on every backend, against
// the one-user fold-in of the same model on the CPU.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "model_queries.h"
#include "sfac_test.h"

using namespace sfac_test;

namespace {

// The users of one call as a CSR of their ratings.
struct Batch {
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> items;
  std::vector<float> ratings;
  int64_t count() const { return static_cast<int64_t>(offsets.size()) - 1; }
  void add(const std::vector<int32_t>& i, const std::vector<float>& r) {
    items.insert(items.end(), i.begin(), i.end());
    ratings.insert(ratings.end(), r.begin(), r.end());
    offsets.push_back(static_cast<int64_t>(items.size()));
  }
};

// `count` users with distinct random items each (lengths from `lengths`, cycled), ratings in
// [1, 5] (counts for implicit feedback).
Batch random_batch(std::mt19937_64& rng, int64_t count, int64_t items,
                   const std::vector<int64_t>& lengths) {
  Batch b;
  std::vector<int32_t> all(static_cast<size_t>(items));
  for (int64_t i = 0; i < items; ++i) all[i] = static_cast<int32_t>(i);
  std::uniform_real_distribution<float> rating(1.0f, 5.0f);
  for (int64_t u = 0; u < count; ++u) {
    const int64_t n = std::min(lengths[u % lengths.size()], items);
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<float> r(static_cast<size_t>(n));
    for (float& x : r) x = std::round(rating(rng));
    b.add(std::vector<int32_t>(all.begin(), all.begin() + n), r);
  }
  return b;
}

// A model trained on the CPU: rank `rank`, 2 epochs, lambda 0.05 (times the rating count with
// `weighted`: ALS-WR; SGD has no such choice).
Model cpu_model(sfac_context* cpu, sfac_algorithm algorithm, bool biases, int64_t rank,
                bool weighted, int64_t users, int64_t items) {
  Sparse ratings = synthetic_ratings(
      cpu, algorithm == SFAC_ALGO_IALS ? SFAC_FEEDBACK_IMPLICIT : SFAC_FEEDBACK_EXPLICIT, users,
      items, users * 12);
  return trained_model(cpu, ratings.get(), algorithm, biases, 2, rank,
                       weighted ? SFAC_REG_WEIGHTED : SFAC_REG_PLAIN);
}

int64_t rank_of(const sfac_model* m) {
  int64_t rank = 0;
  EXPECT_EQ(sfac_model_get_shape(m, nullptr, nullptr, &rank), SFAC_OK);
  return rank;
}

// The one-user fold-ins of a batch (nothing stored): count x rank factors and count biases.
struct Rows {
  std::vector<float> factors, biases;
};

Rows one_by_one(sfac_model* m, const Batch& b) {
  const int64_t rank = rank_of(m);
  Rows out;
  out.factors.assign(static_cast<size_t>(b.count() * rank), 0.0f);
  out.biases.assign(static_cast<size_t>(b.count()), 0.0f);
  for (int64_t u = 0; u < b.count(); ++u) {
    const int64_t begin = b.offsets[u], n = b.offsets[u + 1] - begin;
    EXPECT_EQ(sfac_model_recalculate_user(m, -1, n, b.items.data() + begin,
                                          b.ratings.data() + begin, out.factors.data() + u * rank,
                                          rank, out.biases.data() + u),
              SFAC_OK)
        << sfac_last_error();
  }
  return out;
}

// sfac_model_recalculate_users into fresh (poisoned) arrays; a failure fails the test.
Rows batched(sfac_model* m, const Batch& b, const int32_t* users = nullptr) {
  const int64_t rank = rank_of(m);
  Rows out;
  out.factors.assign(static_cast<size_t>(b.count() * rank), std::numeric_limits<float>::quiet_NaN());
  out.biases.assign(static_cast<size_t>(b.count()), std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(sfac_model_recalculate_users(m, b.count(), users, b.offsets.data(), b.items.data(),
                                         b.ratings.data(), out.factors.data(),
                                         static_cast<int64_t>(out.factors.size()),
                                         out.biases.data()),
            SFAC_OK)
      << sfac_last_error();
  return out;
}

// Each row within `tolerance` of the reference row, relative to the row's largest entry.
void expect_rows_near(const Rows& got, const Rows& want, int64_t rank, double tolerance) {
  const int64_t count = static_cast<int64_t>(want.biases.size());
  for (int64_t u = 0; u < count; ++u) {
    double scale = 1e-3 + std::abs(want.biases[u]);
    for (int64_t t = 0; t < rank; ++t) scale = std::max(scale, double(std::abs(want.factors[u * rank + t])));
    for (int64_t t = 0; t < rank; ++t) {
      ASSERT_NEAR(got.factors[u * rank + t], want.factors[u * rank + t], tolerance * scale)
          << "user " << u << " factor " << t;
    }
    ASSERT_NEAR(got.biases[u], want.biases[u], tolerance * scale) << "user " << u << " bias";
  }
}

class FoldInBatch : public ::testing::TestWithParam<sfac_backend> {
 protected:
  void SetUp() override {
    const std::string missing = backend_missing(GetParam());
    if (!missing.empty()) GTEST_SKIP() << "no such backend here: " << missing;
    cpu_ = make_cpu_context(2, 11);
    ctx_ = make_context(GetParam(), 2, 11);
  }
  // A model trained on the CPU (the reference) and its copy on the test's backend.
  struct Pair {
    Model reference, model;
  };
  Pair models(sfac_algorithm algorithm, bool biases, int64_t rank, bool weighted = false,
              int64_t users = 300, int64_t items = 200) {
    Pair p;
    p.reference = cpu_model(cpu_.get(), algorithm, biases, rank, weighted, users, items);
    p.model = copy_model(p.reference.get(), ctx_.get());
    return p;
  }
  // Host results equal the one-user fold-in's bit for bit; a device sums in another order.
  double tolerance() const { return GetParam() == SFAC_BACKEND_CPU ? 0.0 : 1e-4; }

  Context cpu_, ctx_;
};

}  // namespace

TEST_P(FoldInBatch, EveryRowIsTheOneUserFoldIn) {
  std::mt19937_64 rng(test_seed());
  struct Case {
    sfac_algorithm algorithm;
    bool biases, weighted;
    int64_t rank;
  };
  const Case cases[] = {{SFAC_ALGO_ALS, true, false, 8},   {SFAC_ALGO_ALS, false, false, 1},
                        {SFAC_ALGO_ALS, true, true, 33},   {SFAC_ALGO_IALS, false, false, 16},
                        {SFAC_ALGO_IALS, false, true, 7},  {SFAC_ALGO_SGD, true, false, 100},
                        {SFAC_ALGO_ALS, false, false, 128}};
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "algorithm " << c.algorithm << " biases " << c.biases
                                    << " weighted " << c.weighted << " rank " << c.rank);
    Pair p = models(c.algorithm, c.biases, c.rank, c.weighted);
    // Lengths from none to more than the rank (under- and over-determined systems).
    const Batch b = random_batch(rng, 97, 200, {0, 1, 3, 12, 40, 150});
    expect_rows_near(batched(p.model.get(), b), one_by_one(p.reference.get(), b), c.rank,
                     tolerance());
  }
}

// Rows in id order (the usual CSR, which the check passes without marking items): each row is
// the one-user fold-in of the same ratings.
TEST_P(FoldInBatch, RowsInIdOrderAreTheOneUserFoldIn) {
  std::mt19937_64 rng(test_seed());
  Pair p = models(SFAC_ALGO_ALS, true, 12);
  Batch b = random_batch(rng, 60, 200, {0, 1, 2, 9, 40});
  for (int64_t u = 0; u < b.count(); ++u) {
    std::vector<std::pair<int32_t, float>> row;
    for (int64_t e = b.offsets[u]; e < b.offsets[u + 1]; ++e)
      row.emplace_back(b.items[e], b.ratings[e]);
    std::sort(row.begin(), row.end());
    for (size_t j = 0; j < row.size(); ++j) {
      b.items[b.offsets[u] + j] = row[j].first;
      b.ratings[b.offsets[u] + j] = row[j].second;
    }
  }
  expect_rows_near(batched(p.model.get(), b), one_by_one(p.reference.get(), b), 12, tolerance());
}

// Users past one launch's systems on a device, and users longer than one segment (1024
// ratings) of the device's sums.
TEST_P(FoldInBatch, ManyUsersAndLongUsers) {
  std::mt19937_64 rng(test_seed());
  for (sfac_algorithm algorithm : {SFAC_ALGO_ALS, SFAC_ALGO_IALS}) {
    SCOPED_TRACE(testing::Message() << "algorithm " << algorithm);
    Pair p = models(algorithm, algorithm == SFAC_ALGO_ALS, 24, false, 400, 3000);
    const Batch b = random_batch(rng, 2500, 3000, {5, 2999, 30, 1025, 0, 1024, 200});
    expect_rows_near(batched(p.model.get(), b), one_by_one(p.reference.get(), b), 24,
                     tolerance());
  }
}

TEST_P(FoldInBatch, StoresTheRowsOfTheUsersGiven) {
  std::mt19937_64 rng(test_seed());
  Pair p = models(SFAC_ALGO_ALS, true, 6);
  const ModelState before = model_state(p.model.get());
  // A query first, so that a device copy of the model exists and must follow the change.
  (void)recommend(p.model.get(), {3, 17}, 5);
  const Batch b = random_batch(rng, 4, 200, {10, 0, 25, 7});
  const int32_t users[] = {17, -1, 3, 299};
  const Rows rows = batched(p.model.get(), b, users);
  ModelState expected = before;
  for (int64_t i = 0; i < 4; ++i) {
    if (users[i] < 0) continue;
    std::copy_n(rows.factors.begin() + i * 6, 6, expected.x.begin() + users[i] * 6);
    expected.user_bias[users[i]] = rows.biases[i];
  }
  EXPECT_TRUE(model_state(p.model.get()) == expected);
  // The next queries see the stored rows: the lists of a host copy of the changed model.
  Model host = copy_model(p.model.get(), cpu_.get());
  const std::vector<int32_t> asked = {3, 17, 299};
  const TopN got = recommend(p.model.get(), asked, 5), want = recommend(host.get(), asked, 5);
  EXPECT_EQ(got.items, want.items);
  for (size_t i = 0; i < want.scores.size(); ++i) {
    EXPECT_NEAR(got.scores[i], want.scores[i], 1e-5 * (1.0 + std::abs(want.scores[i])));
  }
}

TEST_P(FoldInBatch, NoUsersAndNoRatings) {
  Pair p = models(SFAC_ALGO_IALS, false, 5);
  Batch none;
  float untouched = 3.0f;
  SFAC_ASSERT_OK(sfac_model_recalculate_users(p.model.get(), 0, nullptr, none.offsets.data(),
                                              nullptr, nullptr, &untouched, 0, nullptr));
  EXPECT_EQ(untouched, 3.0f);
  Batch empty;
  empty.add({}, {});
  empty.add({}, {});
  const Rows rows = batched(p.model.get(), empty);
  for (float x : rows.factors) EXPECT_EQ(x, 0.0f);
  for (float x : rows.biases) EXPECT_EQ(x, 0.0f);
}

TEST_P(FoldInBatch, BadInputFailsAndChangesNothing) {
  Pair p = models(SFAC_ALGO_IALS, false, 4);
  const ModelState before = model_state(p.model.get());
  Batch good;
  good.add({1, 2, 3}, {1.0f, 2.0f, 1.0f});
  good.add({3, 4}, {1.0f, 1.0f});
  std::vector<float> out(8, 9.0f), biases(2, 9.0f);
  auto call = [&](const Batch& b, const int32_t* users, int64_t capacity = 8) {
    return sfac_model_recalculate_users(p.model.get(), b.count(), users, b.offsets.data(),
                                        b.items.data(), b.ratings.data(), out.data(), capacity,
                                        biases.data());
  };
  Batch b = good;
  b.offsets[0] = 1;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "offsets[0] = 1", call(b, nullptr));
  b = good;
  b.offsets[1] = 6;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "offsets[2] = 5 is below offsets[1] = 6",
                    call(b, nullptr));
  b = good;
  b.items[4] = 200;
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "items[4] = 200", call(b, nullptr));
  b = good;
  b.items[2] = 1;
  SFAC_EXPECT_ERROR(SFAC_ERR_DUPLICATE_ENTRY, "items[2] = 1 repeats items[0]", call(b, nullptr));
  b = good;
  b.items[1] = 1;  // a row in id order but for a repeat
  SFAC_EXPECT_ERROR(SFAC_ERR_DUPLICATE_ENTRY, "items[1] = 1 repeats items[0]", call(b, nullptr));
  b = good;
  b.ratings[3] = std::numeric_limits<float>::infinity();
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "ratings[3]", call(b, nullptr));
  b = good;
  b.ratings[4] = -1.0f;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "ratings[4] = -1 is negative", call(b, nullptr));
  const int32_t out_of_range[] = {0, 300}, repeated[] = {5, 5}, too_low[] = {-2, 0};
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "users[1] = 300", call(good, out_of_range));
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "users[0] = -2", call(good, too_low));
  SFAC_EXPECT_ERROR(SFAC_ERR_DUPLICATE_ENTRY, "users[1] = 5 repeats users[0]",
                    call(good, repeated));
  SFAC_EXPECT_ERROR(SFAC_ERR_BUFFER_TOO_SMALL, "out_factors needs 8", call(good, nullptr, 7));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "offsets",
                    sfac_model_recalculate_users(p.model.get(), 2, nullptr, nullptr, nullptr,
                                                 nullptr, out.data(), 8, nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "count = -1",
                    sfac_model_recalculate_users(p.model.get(), -1, nullptr, good.offsets.data(),
                                                 nullptr, nullptr, out.data(), 8, nullptr));
  for (float x : out) EXPECT_EQ(x, 9.0f);
  for (float x : biases) EXPECT_EQ(x, 9.0f);
  EXPECT_TRUE(model_state(p.model.get()) == before);
}

// With the CG fold-in solver, each row takes the steps from the user's current row (a replaced
// user) or from zero (a new one), as the one-user fold-in on the CPU does.
TEST_P(FoldInBatch, CgRowsAreTheOneUserCgFromTheSameStart) {
  std::mt19937_64 rng(test_seed());
  struct Case {
    sfac_algorithm algorithm;
    bool biases, weighted;
    int64_t rank;
    int32_t steps;
  };
  const Case cases[] = {{SFAC_ALGO_ALS, true, false, 8, 3},
                        {SFAC_ALGO_ALS, false, true, 33, 2},
                        {SFAC_ALGO_IALS, false, false, 16, 3},
                        {SFAC_ALGO_IALS, false, true, 7, 1},
                        {SFAC_ALGO_SGD, true, false, 100, 4}};
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "algorithm " << c.algorithm << " biases " << c.biases
                                    << " weighted " << c.weighted << " rank " << c.rank);
    Pair p = models(c.algorithm, c.biases, c.rank, c.weighted);
    SFAC_ASSERT_OK(sfac_model_set_fold_in_solver(p.model.get(), SFAC_SOLVER_CG, c.steps));
    SFAC_ASSERT_OK(sfac_model_set_fold_in_solver(p.reference.get(), SFAC_SOLVER_CG, c.steps));
    const Batch b = random_batch(rng, 60, 200, {0, 1, 3, 12, 40, 150});
    std::vector<int32_t> users(static_cast<size_t>(b.count()));
    for (int64_t i = 0; i < b.count(); ++i) users[i] = i % 3 == 2 ? -1 : static_cast<int32_t>(5 * i);
    // The reference: one user at a time on a CPU copy, each from that user's row (distinct
    // users: replacing one row does not change another's start).
    Rows want;
    want.factors.assign(static_cast<size_t>(b.count() * c.rank), 0.0f);
    want.biases.assign(static_cast<size_t>(b.count()), 0.0f);
    for (int64_t u = 0; u < b.count(); ++u) {
      const int64_t begin = b.offsets[u];
      SFAC_ASSERT_OK(sfac_model_recalculate_user(
          p.reference.get(), users[u], b.offsets[u + 1] - begin, b.items.data() + begin,
          b.ratings.data() + begin, want.factors.data() + u * c.rank, c.rank,
          want.biases.data() + u));
    }
    // A few fp32 CG steps carry a device's other summation order further than one Cholesky
    // solve does (by the system's condition: rank 100 with 150 ratings here).
    expect_rows_near(batched(p.model.get(), b, users.data()), want, c.rank,
                     GetParam() == SFAC_BACKEND_CPU ? 0.0 : 1e-3);
  }
}

TEST_P(FoldInBatch, CgStartsFromTheUsersRowAndConvergesToCholesky) {
  std::mt19937_64 rng(test_seed());
  Pair p = models(SFAC_ALGO_ALS, true, 8);
  const Batch b = random_batch(rng, 40, 200, {20, 3, 60, 9});
  const Rows exact = batched(p.model.get(), b);
  // One step from a user's row lands elsewhere than one step from zero.
  std::vector<int32_t> users(static_cast<size_t>(b.count()));
  for (int64_t i = 0; i < b.count(); ++i) users[i] = static_cast<int32_t>(i);
  Model twin = copy_model(p.model.get(), ctx_.get());
  SFAC_ASSERT_OK(sfac_model_set_fold_in_solver(p.model.get(), SFAC_SOLVER_CG, 1));
  SFAC_ASSERT_OK(sfac_model_set_fold_in_solver(twin.get(), SFAC_SOLVER_CG, 1));
  const Rows from_rows = batched(p.model.get(), b, users.data());
  const Rows from_zero = batched(twin.get(), b);
  double moved = 0.0;
  for (size_t i = 0; i < from_zero.factors.size(); ++i) {
    moved = std::max(moved, double(std::abs(from_rows.factors[i] - from_zero.factors[i])));
  }
  EXPECT_GT(moved, 1e-3);
  // Enough steps reach the exact solution (9 unknowns: CG ends within 9 in exact arithmetic).
  SFAC_ASSERT_OK(sfac_model_set_fold_in_solver(twin.get(), SFAC_SOLVER_CG, 40));
  expect_rows_near(batched(twin.get(), b), exact, 8, 2e-3);
}

TEST_P(FoldInBatch, SolverSettingIsCheckedAndCopied) {
  Pair p = models(SFAC_ALGO_IALS, false, 4);
  sfac_solver solver = SFAC_SOLVER_CG;
  int32_t steps = 0;
  SFAC_ASSERT_OK(sfac_model_get_fold_in_solver(p.model.get(), &solver, &steps));
  EXPECT_EQ(solver, SFAC_SOLVER_CHOLESKY);
  EXPECT_EQ(steps, 3);
  SFAC_ASSERT_OK(sfac_model_set_fold_in_solver(p.model.get(), SFAC_SOLVER_CG, 5));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "cg_steps = 0",
                    sfac_model_set_fold_in_solver(p.model.get(), SFAC_SOLVER_CG, 0));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "solver = 7",
                    sfac_model_set_fold_in_solver(p.model.get(), static_cast<sfac_solver>(7), 3));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "model is NULL",
                    sfac_model_set_fold_in_solver(nullptr, SFAC_SOLVER_CG, 3));
  Model copy = copy_model(p.model.get(), cpu_.get());
  for (const sfac_model* m : {static_cast<const sfac_model*>(p.model.get()),
                              static_cast<const sfac_model*>(copy.get())}) {
    SFAC_ASSERT_OK(sfac_model_get_fold_in_solver(m, &solver, &steps));
    EXPECT_EQ(solver, SFAC_SOLVER_CG);
    EXPECT_EQ(steps, 5);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, FoldInBatch,
                         ::testing::Values(SFAC_BACKEND_CPU, SFAC_BACKEND_CUDA), backend_name);
