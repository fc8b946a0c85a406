// Helpers of the tests that compare two models call by call (test_model_copy.cpp,
// test_resident_model.cpp): a trained model, everything it holds, and its top-n answers.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "sfac_test.h"

namespace sfac_test {

// Random synthetic ratings of the context (seeded by its seed), users x items with nnz entries.
inline Sparse synthetic_ratings(sfac_context* ctx, sfac_feedback feedback, int64_t users,
                                int64_t items, int64_t nnz) {
  sfac_sparse* raw = nullptr;
  EXPECT_EQ(sfac_synthesize_ratings(ctx, feedback, users, items, nnz, 4, 0.3, 0.3, &raw, nullptr,
                                    nullptr),
            SFAC_OK)
      << sfac_last_error();
  return Sparse(raw);
}

// A model trained for `iterations` epochs of `rank`, lambda 0.05 (IALS: alpha 10); ALS and IALS
// with `regularization` (an sfac_regularization; -1: the algorithm's default).
inline Model trained_model(sfac_context* ctx, const sfac_sparse* ratings, sfac_algorithm algorithm,
                           bool biases, int64_t iterations = 2, int64_t rank = 4,
                           int regularization = -1) {
  sfac_train_options* raw_options = nullptr;
  EXPECT_EQ(sfac_train_options_create(algorithm, &raw_options), SFAC_OK);
  Options o(raw_options);
  EXPECT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_RANK, rank), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_ITERATIONS, iterations), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_double(o.get(), SFAC_OPT_LAMBDA, 0.05), SFAC_OK);
  if (regularization >= 0 && algorithm != SFAC_ALGO_SGD) {
    EXPECT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_ALS_REGULARIZATION, regularization),
              SFAC_OK);
  }
  if (algorithm == SFAC_ALGO_IALS) {
    EXPECT_EQ(sfac_train_options_set_double(o.get(), SFAC_OPT_IMPLICIT_ALPHA, 10.0), SFAC_OK);
  } else {
    EXPECT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_USE_BIASES, biases), SFAC_OK);
  }
  sfac_model* raw = nullptr;
  EXPECT_EQ(sfac_train(ctx, ratings, o.get(), &raw), SFAC_OK) << sfac_last_error();
  return Model(raw);
}

// sfac_model_copy; a failure fails the test (the copy is then null).
inline Model copy_model(const sfac_model* model, sfac_context* ctx) {
  sfac_model* raw = nullptr;
  EXPECT_EQ(sfac_model_copy(model, ctx, &raw), SFAC_OK) << sfac_last_error();
  return Model(raw);
}

// Everything a model holds that its calls read.
struct ModelState {
  int64_t users = 0, items = 0, rank = 0;
  sfac_algorithm algorithm = SFAC_ALGO_ALS;
  std::vector<float> x, y;  // user and item factors
  int has_biases = 0;
  float mean = 0.0f;
  std::vector<float> user_bias, item_bias;

  bool operator==(const ModelState& o) const {
    return users == o.users && items == o.items && rank == o.rank && algorithm == o.algorithm &&
           x == o.x && y == o.y && has_biases == o.has_biases && mean == o.mean &&
           user_bias == o.user_bias && item_bias == o.item_bias;
  }
};

inline ModelState model_state(const sfac_model* m) {
  ModelState s;
  EXPECT_EQ(sfac_model_get_shape(m, &s.users, &s.items, &s.rank), SFAC_OK);
  EXPECT_EQ(sfac_model_get_algorithm(m, &s.algorithm), SFAC_OK);
  s.x.resize(s.users * s.rank);
  s.y.resize(s.items * s.rank);
  EXPECT_EQ(sfac_model_get_user_factors(m, s.x.data(), static_cast<int64_t>(s.x.size())), SFAC_OK);
  EXPECT_EQ(sfac_model_get_item_factors(m, s.y.data(), static_cast<int64_t>(s.y.size())), SFAC_OK);
  s.user_bias.resize(s.users);
  s.item_bias.resize(s.items);
  EXPECT_EQ(sfac_model_get_biases(m, &s.has_biases, &s.mean, s.user_bias.data(), s.users,
                                  s.item_bias.data(), s.items),
            SFAC_OK);
  if (!s.has_biases) {
    s.user_bias.clear();
    s.item_bias.clear();
  }
  return s;
}

// Random ids in [0, limit), with repeats.
inline std::vector<int32_t> random_ids(std::mt19937_64& rng, int64_t count, int64_t limit) {
  std::vector<int32_t> ids(static_cast<size_t>(count));
  for (auto& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint64_t>(limit));
  return ids;
}

// A top-n answer: count rows of n items and scores.
struct TopN {
  std::vector<int32_t> items;
  std::vector<float> scores;
  bool operator==(const TopN& o) const { return items == o.items && scores == o.scores; }
};

// sfac_model_recommend into fresh arrays; a failure fails the test. allowed == nullptr: no
// allow-list. (An empty vector passes a NULL array, also no allow-list: a call that means to
// allow nothing passes a non-NULL array itself.)
inline TopN recommend(const sfac_model* m, const std::vector<int32_t>& users, int n,
                      const sfac_sparse* exclude = nullptr,
                      const std::vector<int32_t>* allowed = nullptr) {
  TopN out;
  out.items.assign(users.size() * n, 777);
  out.scores.assign(users.size() * n, 777.0f);
  EXPECT_EQ(sfac_model_recommend(m, static_cast<int64_t>(users.size()), users.data(), n, exclude,
                                 allowed ? static_cast<int64_t>(allowed->size()) : 0,
                                 allowed ? allowed->data() : nullptr, out.items.data(),
                                 out.scores.data(), static_cast<int64_t>(out.items.size())),
            SFAC_OK)
      << sfac_last_error();
  return out;
}

// sfac_model_similar_items into fresh arrays; a failure fails the test.
inline TopN similar_items(const sfac_model* m, const std::vector<int32_t>& items, int n) {
  TopN out;
  out.items.assign(items.size() * n, 777);
  out.scores.assign(items.size() * n, 777.0f);
  EXPECT_EQ(sfac_model_similar_items(m, static_cast<int64_t>(items.size()), items.data(), n,
                                     out.items.data(), out.scores.data(),
                                     static_cast<int64_t>(out.items.size())),
            SFAC_OK)
      << sfac_last_error();
  return out;
}

}  // namespace sfac_test
