// Model operations through the public API: predict, recommend, similar items, ranking metrics,
// fold-in, factor replacement, and the validation every one of them does before writing.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include "sfac_test.h"

using namespace sfac_test;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();


struct TrainConfig {
  sfac_algorithm algorithm = SFAC_ALGO_ALS;
  int64_t rank = 4;
  int64_t iterations = 10;
  double lambda = 0.05;
  bool biases = false;
  sfac_regularization regularization = SFAC_REG_WEIGHTED;
  double alpha = 10.0;
};

Model train(sfac_context* ctx, const sfac_sparse* ratings, const TrainConfig& c) {
  sfac_train_options* raw_options = nullptr;
  EXPECT_EQ(sfac_train_options_create(c.algorithm, &raw_options), SFAC_OK);
  Options o(raw_options);
  EXPECT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_RANK, c.rank), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_ITERATIONS, c.iterations), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_double(o.get(), SFAC_OPT_LAMBDA, c.lambda), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_USE_BIASES, c.biases), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_ALS_REGULARIZATION, c.regularization),
            SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_double(o.get(), SFAC_OPT_IMPLICIT_ALPHA, c.alpha), SFAC_OK);
  sfac_model* raw = nullptr;
  EXPECT_EQ(sfac_train(ctx, ratings, o.get(), &raw), SFAC_OK) << sfac_last_error();
  return Model(raw);
}

Sparse synthesize(sfac_context* ctx, sfac_feedback feedback, int64_t users, int64_t items,
                  int64_t nnz, int64_t rank, double noise) {
  sfac_sparse* raw = nullptr;
  EXPECT_EQ(sfac_synthesize_ratings(ctx, feedback, users, items, nnz, rank, noise, 0.3, &raw,
                                    nullptr, nullptr),
            SFAC_OK)
      << sfac_last_error();
  return Sparse(raw);
}

Sparse coo(sfac_context* ctx, int64_t rows, int64_t cols,
           const std::vector<std::pair<int32_t, int32_t>>& cells) {
  std::vector<int32_t> r, c;
  for (auto [i, j] : cells) {
    r.push_back(i);
    c.push_back(j);
  }
  sfac_sparse* raw = nullptr;
  EXPECT_EQ(sfac_sparse_create_coo(ctx, rows, cols, static_cast<int64_t>(cells.size()), r.data(),
                                   c.data(), nullptr, SFAC_SPARSE_DEFAULT, &raw),
            SFAC_OK)
      << sfac_last_error();
  return Sparse(raw);
}

// A model of the given shape whose factors the test sets by hand: ALS with 0 iterations on a
// one-rating matrix (with biases: global mean 3, all biases 0).
Model blank_model(sfac_context* ctx, int64_t users, int64_t items, int64_t rank,
                  sfac_algorithm algorithm = SFAC_ALGO_ALS, bool biases = false) {
  int32_t row = 0, col = 0;
  float value = 3.0f;
  sfac_sparse* raw = nullptr;
  EXPECT_EQ(sfac_sparse_create_coo(ctx, users, items, 1, &row, &col, &value, 0, &raw), SFAC_OK);
  Sparse ratings(raw);
  TrainConfig c;
  c.algorithm = algorithm;
  c.rank = rank;
  c.iterations = 0;
  c.biases = biases;
  return train(ctx, ratings.get(), c);
}

struct Csr {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> offsets;
  std::vector<int32_t> indices;
  std::vector<float> values;
  int64_t count(int64_t r) const { return offsets[r + 1] - offsets[r]; }
  bool contains(int64_t r, int32_t c) const {
    return std::binary_search(indices.begin() + offsets[r], indices.begin() + offsets[r + 1], c);
  }
};

Csr download(const sfac_sparse* m) {
  Csr out;
  int64_t nnz = 0;
  EXPECT_EQ(sfac_sparse_get_shape(m, &out.rows, &out.cols, &nnz), SFAC_OK);
  out.offsets.resize(out.rows + 1);
  out.indices.resize(nnz);
  out.values.resize(nnz);
  EXPECT_EQ(sfac_sparse_download_csr(m, out.offsets.data(),
                                     static_cast<int64_t>(out.offsets.size()), out.indices.data(),
                                     out.values.data(), static_cast<int64_t>(out.indices.size())),
            SFAC_OK);
  return out;
}

// Everything a model holds, downloaded, for reference computations and "unchanged" checks.
struct Factors {
  int64_t users = 0, items = 0, rank = 0;
  std::vector<float> x, y;  // user and item factors
  int has_biases = 0;
  float mean = 0.0f;
  std::vector<float> user_bias, item_bias;

  const float* user(int64_t u) const { return x.data() + u * rank; }
  const float* item(int64_t i) const { return y.data() + i * rank; }
  double dot(int64_t u, int64_t i) const {
    double d = 0.0;
    for (int64_t t = 0; t < rank; ++t) d += double{user(u)[t]} * item(i)[t];
    return d;
  }
  double predict(int64_t u, int64_t i) const {
    return dot(u, i) + (has_biases ? double{mean} + user_bias[u] + item_bias[i] : 0.0);
  }
  bool operator==(const Factors& o) const {
    return x == o.x && y == o.y && has_biases == o.has_biases && mean == o.mean &&
           user_bias == o.user_bias && item_bias == o.item_bias;
  }
};

Factors factors(const sfac_model* m) {
  Factors f;
  EXPECT_EQ(sfac_model_get_shape(m, &f.users, &f.items, &f.rank), SFAC_OK);
  f.x.resize(f.users * f.rank);
  f.y.resize(f.items * f.rank);
  EXPECT_EQ(sfac_model_get_user_factors(m, f.x.data(), static_cast<int64_t>(f.x.size())), SFAC_OK);
  EXPECT_EQ(sfac_model_get_item_factors(m, f.y.data(), static_cast<int64_t>(f.y.size())), SFAC_OK);
  f.user_bias.resize(f.users);
  f.item_bias.resize(f.items);
  EXPECT_EQ(sfac_model_get_biases(m, &f.has_biases, &f.mean, f.user_bias.data(),
                                  static_cast<int64_t>(f.user_bias.size()), f.item_bias.data(),
                                  static_cast<int64_t>(f.item_bias.size())),
            SFAC_OK);
  if (!f.has_biases) {
    f.user_bias.assign(f.users, 0.0f);
    f.item_bias.assign(f.items, 0.0f);
  }
  return f;
}

bool near(double a, double b, double tol = 1e-5) {
  return std::abs(a - b) <= tol * (1.0 + std::abs(b));
}

// Checks one top-n row against reference scores of every candidate (item -> score): the first
// min(n, |candidates|) entries are distinct candidates with their reference scores, in
// non-increasing order with ties by lower id, no left-out candidate scores higher than the
// last one taken, and the rest is padding. This pins down a top-n list up to float rounding
// between near-equal scores.
void expect_top_n(const std::map<int32_t, double>& candidates, int n, const int32_t* items,
                  const float* scores, const std::string& where) {
  SCOPED_TRACE(where);
  const size_t m = std::min<size_t>(n, candidates.size());
  std::set<int32_t> taken;
  for (size_t j = 0; j < m; ++j) {
    const auto it = candidates.find(items[j]);
    ASSERT_NE(it, candidates.end()) << "slot " << j << " holds item " << items[j];
    EXPECT_TRUE(taken.insert(items[j]).second) << "item " << items[j] << " twice";
    EXPECT_TRUE(near(scores[j], it->second))
        << "item " << items[j] << ": " << scores[j] << " vs " << it->second;
    if (j > 0) {
      EXPECT_TRUE(scores[j - 1] > scores[j] ||
                  (scores[j - 1] == scores[j] && items[j - 1] < items[j]))
          << "slots " << j - 1 << ", " << j;
    }
  }
  if (m > 0) {
    for (const auto& [item, s] : candidates) {
      if (!taken.count(item)) {
        EXPECT_LE(s, scores[m - 1] + 1e-5 * (1.0 + std::abs(s))) << "item " << item;
      }
    }
  }
  for (size_t j = m; j < static_cast<size_t>(n); ++j) {
    EXPECT_EQ(items[j], -1);
    EXPECT_EQ(scores[j], -kInf);
  }
}

}  // namespace

TEST(Model, PredictEqualsFactorDotProductsPlusBiases) {
  Context ctx = make_cpu_context(2, test_seed());
  Sparse data = synthesize(ctx.get(), SFAC_FEEDBACK_EXPLICIT, 300, 200, 6000, 4, 0.3);
  std::mt19937_64 rng(test_seed());
  for (bool biases : {false, true}) {
    TrainConfig c;
    c.iterations = 3;
    c.biases = biases;
    Model model = train(ctx.get(), data.get(), c);
    const Factors f = factors(model.get());
    ASSERT_EQ(f.has_biases, biases ? 1 : 0);
    const int64_t count = 2000;
    std::vector<int32_t> users(count), items(count);
    for (int64_t e = 0; e < count; ++e) {
      users[e] = static_cast<int32_t>(rng() % f.users);
      items[e] = static_cast<int32_t>(rng() % f.items);
    }
    std::vector<float> scores(count);
    SFAC_ASSERT_OK(
        sfac_model_predict(model.get(), count, users.data(), items.data(), scores.data()));
    for (int64_t e = 0; e < count; ++e) {
      ASSERT_TRUE(near(scores[e], f.predict(users[e], items[e])))
          << "pair " << e << ": " << scores[e] << " vs " << f.predict(users[e], items[e]);
    }
    // Nothing to predict: NULL arrays are fine.
    SFAC_EXPECT_STATUS(SFAC_OK, sfac_model_predict(model.get(), 0, nullptr, nullptr, nullptr));
  }
}

TEST(Model, RecommendMatchesBruteForce) {
  Context ctx = make_cpu_context(2, test_seed());
  Sparse data = synthesize(ctx.get(), SFAC_FEEDBACK_EXPLICIT, 300, 200, 8000, 4, 0.3);
  TrainConfig c;
  c.iterations = 3;
  c.biases = true;
  Model model = train(ctx.get(), data.get(), c);
  const Factors f = factors(model.get());
  const Csr seen = download(data.get());
  std::mt19937_64 rng(test_seed() + 1);

  // Users with repeats; the one with the most ratings is in the list.
  std::vector<int32_t> users;
  for (int r = 0; r < 40; ++r) users.push_back(static_cast<int32_t>(rng() % f.users));
  users.push_back(users[3]);
  int32_t heaviest = 0;
  for (int32_t u = 0; u < f.users; ++u)
    heaviest = seen.count(u) > seen.count(heaviest) ? u : heaviest;
  users.push_back(heaviest);
  const auto count = static_cast<int64_t>(users.size());

  // A few allowed items, with duplicates, unsorted, some of them seen by most users.
  std::vector<int32_t> allowed;
  for (int r = 0; r < 12; ++r) allowed.push_back(static_cast<int32_t>(rng() % f.items));
  allowed.push_back(allowed[0]);
  allowed.push_back(allowed[5]);
  const std::set<int32_t> allowed_set(allowed.begin(), allowed.end());

  for (bool use_exclude : {false, true}) {
    for (bool use_allowed : {false, true}) {
      // n = 15 exceeds the allow-list's candidates: the rows must be padded.
      for (int n : {1, 10, 15}) {
        std::vector<int32_t> out_items(count * n, 777);
        std::vector<float> out_scores(count * n, 777.0f);
        SFAC_ASSERT_OK(sfac_model_recommend(
            model.get(), count, users.data(), n, use_exclude ? data.get() : nullptr,
            use_allowed ? static_cast<int64_t>(allowed.size()) : 0,
            use_allowed ? allowed.data() : nullptr, out_items.data(), out_scores.data(),
            static_cast<int64_t>(out_items.size())));
        for (int64_t r = 0; r < count; ++r) {
          const int32_t u = users[r];
          std::map<int32_t, double> candidates;
          for (int32_t i = 0; i < f.items; ++i) {
            if (use_exclude && seen.contains(u, i)) continue;
            if (use_allowed && !allowed_set.count(i)) continue;
            candidates[i] = f.predict(u, i);
          }
          expect_top_n(candidates, n, &out_items[r * n], &out_scores[r * n],
                       "user " + std::to_string(u) + " n " + std::to_string(n) + " exclude " +
                           std::to_string(use_exclude) + " allowed " + std::to_string(use_allowed));
        }
      }
    }
  }
  // The scores are exactly what predict returns.
  const int n = 5;
  std::vector<int32_t> out_items(count * n);
  std::vector<float> out_scores(count * n);
  SFAC_ASSERT_OK(sfac_model_recommend(model.get(), count, users.data(), n, data.get(), 0, nullptr,
                                      out_items.data(), out_scores.data(),
                                      static_cast<int64_t>(out_items.size())));
  std::vector<int32_t> pair_users;
  for (int32_t u : users) pair_users.insert(pair_users.end(), n, u);
  std::vector<float> predicted(count * n);
  SFAC_ASSERT_OK(sfac_model_predict(model.get(), count * n, pair_users.data(), out_items.data(),
                                    predicted.data()));
  EXPECT_EQ(predicted, out_scores);
}

TEST(Model, RecommendBreaksTiesByTheLowerItemId) {
  Context ctx = make_cpu_context(2, test_seed());
  Model model = blank_model(ctx.get(), 2, 10, 3);
  // Items 0-7 score 1 for user 0, items 8 and 9 score 2; user 1 scores everything 0.
  std::vector<float> y(10 * 3, 0.0f), x = {1, 0, 0, 0, 0, 0};
  for (int i = 0; i < 10; ++i) y[i * 3] = i >= 8 ? 2.0f : 1.0f;
  SFAC_ASSERT_OK(sfac_model_set_user_factors(model.get(), x.data()));
  SFAC_ASSERT_OK(sfac_model_set_item_factors(model.get(), y.data()));
  Sparse exclude = coo(ctx.get(), 2, 10, {{0, 1}, {0, 9}, {1, 0}});

  const std::vector<int32_t> users = {0, 1};
  std::vector<int32_t> items(2 * 5);
  std::vector<float> scores(2 * 5);
  SFAC_ASSERT_OK(sfac_model_recommend(model.get(), 2, users.data(), 5, exclude.get(), 0, nullptr,
                                      items.data(), scores.data(),
                                      static_cast<int64_t>(items.size())));
  EXPECT_EQ(items, (std::vector<int32_t>{8, 0, 2, 3, 4, 1, 2, 3, 4, 5}));
  EXPECT_EQ(scores, (std::vector<float>{2, 1, 1, 1, 1, 0, 0, 0, 0, 0}));

  // Allow-list unsorted and with repeats: each item once, ties still by id, padded after.
  const std::vector<int32_t> allowed = {7, 3, 3, 9, 5, 7, 1};
  SFAC_ASSERT_OK(sfac_model_recommend(
      model.get(), 2, users.data(), 5, exclude.get(), static_cast<int64_t>(allowed.size()),
      allowed.data(), items.data(), scores.data(), static_cast<int64_t>(items.size())));
  EXPECT_EQ(items, (std::vector<int32_t>{3, 5, 7, -1, -1, 1, 3, 5, 7, 9}));
  EXPECT_EQ(scores, (std::vector<float>{1, 1, 1, -kInf, -kInf, 0, 0, 0, 0, 0}));

  // An empty (non-NULL) allow-list allows nothing.
  SFAC_ASSERT_OK(sfac_model_recommend(model.get(), 2, users.data(), 5, nullptr, 0, allowed.data(),
                                      items.data(), scores.data(),
                                      static_cast<int64_t>(items.size())));
  EXPECT_EQ(items, std::vector<int32_t>(10, -1));
}

TEST(Model, SimilarItemsMatchBruteForceCosine) {
  Context ctx = make_cpu_context(2, test_seed());
  Sparse data = synthesize(ctx.get(), SFAC_FEEDBACK_EXPLICIT, 200, 150, 5000, 4, 0.3);
  TrainConfig c;
  c.iterations = 3;
  Model model = train(ctx.get(), data.get(), c);
  Factors f = factors(model.get());
  // Item 7 gets all-zero factors: similarity 0 to everything, in both directions.
  std::fill(f.y.begin() + 7 * f.rank, f.y.begin() + 8 * f.rank, 0.0f);
  SFAC_ASSERT_OK(sfac_model_set_item_factors(model.get(), f.y.data()));
  std::vector<double> norm(f.items);
  for (int64_t i = 0; i < f.items; ++i) {
    for (int64_t t = 0; t < f.rank; ++t) norm[i] += double{f.item(i)[t]} * f.item(i)[t];
    norm[i] = std::sqrt(norm[i]);
  }
  const std::vector<int32_t> queries = {0, 7, 3, 149, 3, 42};
  const auto count = static_cast<int64_t>(queries.size());
  for (int n : {1, 12, 149, 200}) {
    std::vector<int32_t> items(count * n);
    std::vector<float> scores(count * n);
    SFAC_ASSERT_OK(sfac_model_similar_items(model.get(), count, queries.data(), n, items.data(),
                                            scores.data(), static_cast<int64_t>(items.size())));
    for (int64_t r = 0; r < count; ++r) {
      const int32_t q = queries[r];
      std::map<int32_t, double> candidates;
      for (int32_t j = 0; j < f.items; ++j) {
        if (j == q) continue;
        double d = 0.0;
        for (int64_t t = 0; t < f.rank; ++t) d += double{f.item(q)[t]} * f.item(j)[t];
        candidates[j] = norm[q] > 0 && norm[j] > 0 ? d / (norm[q] * norm[j]) : 0.0;
      }
      expect_top_n(candidates, n, &items[r * n], &scores[r * n],
                   "query " + std::to_string(q) + " n " + std::to_string(n));
    }
    // Row of the zero item: all scores 0, so the ids come in order 0, 1, 2, ... (7 skipped).
    if (n >= 12) {
      EXPECT_EQ(std::vector<int32_t>(&items[n], &items[n] + 8),
                (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 8}));
    }
  }
}

// Factors set by hand so that the rankings are known (rank 2, scores = first coordinate):
//   items 0..4 have scores 5, 4, 3, 2, 1 for users 0 and 2, reversed for user 1.
//   user 0: exclude {1}, test {0, 3}      -> ranking 0, 2, 3, 4
//   user 1: exclude {4}, test {0}         -> ranking 3, 2, 1, 0
//   user 2: no exclude, test {0, 1, 2, 3} -> ranking 0, 1, 2, 3, 4
//   user 3: no test items                 -> not counted
TEST(Model, RankingMetricsOfAHandComputedExample) {
  Context ctx = make_cpu_context(2, test_seed());
  Model model = blank_model(ctx.get(), 4, 5, 2);
  const std::vector<float> x = {1, 0, -1, 0, 1, 0, 0, 1};
  const std::vector<float> y = {5, 0, 4, 0, 3, 0, 2, 0, 1, 0};
  SFAC_ASSERT_OK(sfac_model_set_user_factors(model.get(), x.data()));
  SFAC_ASSERT_OK(sfac_model_set_item_factors(model.get(), y.data()));
  Sparse exclude = coo(ctx.get(), 4, 5, {{0, 1}, {1, 4}});
  Sparse test = coo(ctx.get(), 4, 5, {{0, 0}, {0, 3}, {1, 0}, {2, 0}, {2, 1}, {2, 2}, {2, 3}});
  const double l3 = std::log2(3.0), l4 = 2.0, l5 = std::log2(5.0);

  struct Expected {
    int k;
    double precision, recall, ndcg, map;
  };
  const Expected cases[] = {
      // k = 1: user 0 hits item 0, user 1 misses (item 3), user 2 hits item 0.
      {1, (1 + 0 + 1) / 3.0, (0.5 + 0 + 0.25) / 3.0, (1 + 0 + 1) / 3.0, (1 + 0 + 1) / 3.0},
      // k = 3: user 0 top 0,2,3 (hits at 1st, 3rd); user 1 top 3,2,1 (none); user 2 top 0,1,2.
      {3, (2 / 3.0 + 0 + 1) / 3.0, (1 + 0 + 0.75) / 3.0,
       ((1 + 1 / l4) / (1 + 1 / l3) + 0 + 1) / 3.0, ((1 + 2 / 3.0) / 2 + 0 + 1) / 3.0},
      // k = 10 > candidates: precision still divides by k; user 1 hits at the 4th place.
      {10, (2 / 10.0 + 1 / 10.0 + 4 / 10.0) / 3.0, (1 + 1 + 1) / 3.0,
       ((1 + 1 / l4) / (1 + 1 / l3) + 1 / l5 + 1) / 3.0, ((1 + 2 / 3.0) / 2 + 1 / 4.0 + 1) / 3.0},
  };
  for (const Expected& e : cases) {
    SCOPED_TRACE("k = " + std::to_string(e.k));
    double precision = -1, recall = -1, ndcg = -1, map = -1;
    SFAC_ASSERT_OK(sfac_model_ranking_metrics(model.get(), exclude.get(), test.get(), e.k,
                                              &precision, &recall, &ndcg, &map));
    EXPECT_NEAR(precision, e.precision, 1e-12);
    EXPECT_NEAR(recall, e.recall, 1e-12);
    EXPECT_NEAR(ndcg, e.ndcg, 1e-12);
    EXPECT_NEAR(map, e.map, 1e-12);
  }
  // Without exclusion user 0 ranks item 1 second: top 3 = 0, 1, 2 -> one hit.
  double precision = -1;
  SFAC_ASSERT_OK(sfac_model_ranking_metrics(model.get(), nullptr, test.get(), 3, &precision,
                                            nullptr, nullptr, nullptr));
  EXPECT_NEAR(precision, (1 / 3.0 + 0 + 1) / 3.0, 1e-12);
}

// The acceptance bar for ranking: implicit ALS on planted implicit data ranks held-out items far
// above chance and above popularity. Two references, both computed here from the matrices:
//  - random: the exact expected NDCG@10 of a uniformly random ranking of each user's
//    candidates (all items minus the training ones): every slot holds a test item with
//    probability |T| / |C|, so E[DCG] = |T| / |C| * sum_p 1 / log2(p + 2);
//  - popularity: items ranked by training count. With the generator's power-law item degrees
//    (skew 0.3) popularity alone reaches ~5x random, so beating it by a margin shows that the
//    model learned the users' planted preferences. (The planted factors themselves are a weak
//    ranker here: a third of all items are "liked", and they carry no popularity.)
// The popularity NDCG is computed twice, by hand and by sfac_model_ranking_metrics on a model
// whose factors encode the counts; they must agree, which checks the metric at scale.
TEST(Model, ImplicitAlsRanksHeldOutItemsFarAboveRandom) {
  Context ctx = make_cpu_context(2, test_seed());
  Sparse all = synthesize(ctx.get(), SFAC_FEEDBACK_IMPLICIT, 5000, 2000, 300000, 8, 1.0);
  sfac_sparse *train_raw = nullptr, *test_raw = nullptr;
  SFAC_ASSERT_OK(sfac_split_leave_k_out(all.get(), 5, test_seed(), &train_raw, &test_raw));
  Sparse train_set(train_raw), test_set(test_raw);
  TrainConfig c;
  c.algorithm = SFAC_ALGO_IALS;
  c.rank = 8;
  c.iterations = 10;
  c.lambda = 1.0;
  c.regularization = SFAC_REG_PLAIN;
  c.alpha = 1.0;
  Model model = train(ctx.get(), train_set.get(), c);

  const int k = 10;
  double precision = 0, recall = 0, ndcg = 0, map = 0;
  SFAC_ASSERT_OK(sfac_model_ranking_metrics(model.get(), train_set.get(), test_set.get(), k,
                                            &precision, &recall, &ndcg, &map));

  const Csr train_csr = download(train_set.get()), test_csr = download(test_set.get());
  const int64_t items = train_csr.cols;
  std::vector<float> popularity(items, 0.0f);
  for (int32_t i : train_csr.indices) popularity[i] += 1.0f;
  std::vector<int32_t> by_popularity(items);
  for (int32_t i = 0; i < items; ++i) by_popularity[i] = i;
  std::stable_sort(by_popularity.begin(), by_popularity.end(),
                   [&](int32_t a, int32_t b) { return popularity[a] > popularity[b]; });

  double random_ndcg = 0.0, popular_ndcg = 0.0;
  int64_t test_users = 0;
  for (int64_t u = 0; u < test_csr.rows; ++u) {
    const int64_t relevant = test_csr.count(u);
    if (relevant == 0) continue;
    ++test_users;
    const double candidates = static_cast<double>(items - train_csr.count(u));
    double expected_dcg = 0.0, popular_dcg = 0.0, ideal = 0.0;
    for (int p = 0; p < k; ++p) {
      expected_dcg += relevant / candidates / std::log2(p + 2.0);
      if (p < relevant) ideal += 1.0 / std::log2(p + 2.0);
    }
    int p = 0;
    for (int32_t i : by_popularity) {
      if (p == k) break;
      if (train_csr.contains(u, i)) continue;
      if (test_csr.contains(u, i)) popular_dcg += 1.0 / std::log2(p + 2.0);
      ++p;
    }
    random_ndcg += expected_dcg / ideal;
    popular_ndcg += popular_dcg / ideal;
  }
  ASSERT_GT(test_users, 1000);
  random_ndcg /= static_cast<double>(test_users);
  popular_ndcg /= static_cast<double>(test_users);
  std::printf(
      "[ ranking  ] implicit ALS NDCG@%d = %.4f: %.1fx random (%.4f), %.2fx popularity "
      "(%.4f); P = %.4f, R = %.4f, MAP = %.4f over %lld users\n",
      k, ndcg, ndcg / random_ndcg, random_ndcg, ndcg / popular_ndcg, popular_ndcg, precision,
      recall, map, static_cast<long long>(test_users));
  EXPECT_GE(ndcg, 5.0 * random_ndcg);
  EXPECT_GE(ndcg, 1.3 * popular_ndcg);
  EXPECT_GT(precision, 0.0);
  EXPECT_GT(recall, 0.0);
  EXPECT_GT(map, 0.0);
  EXPECT_LE(ndcg, 1.0);

  // Popularity as a model: score(u, i) = count(i) (exact in float), ties by id as above.
  std::vector<float> x(5000 * c.rank, 0.0f), y(items * c.rank, 0.0f);
  for (int64_t u = 0; u < 5000; ++u) x[u * c.rank] = 1.0f;
  for (int64_t i = 0; i < items; ++i) y[i * c.rank] = popularity[i];
  SFAC_ASSERT_OK(sfac_model_set_user_factors(model.get(), x.data()));
  SFAC_ASSERT_OK(sfac_model_set_item_factors(model.get(), y.data()));
  double library_popular_ndcg = -1.0;
  SFAC_ASSERT_OK(sfac_model_ranking_metrics(model.get(), train_set.get(), test_set.get(), k,
                                            nullptr, nullptr, &library_popular_ndcg, nullptr));
  EXPECT_NEAR(library_popular_ndcg, popular_ndcg, 1e-9);
}

namespace {

// The training objective's normal equations for user u's row, built independently in double:
// explicit A = sum z z^T + reg I, b = sum (r - mean - b_i) z with z = [y_i, 1] when the model
// has biases (unknowns [x, b_u]); implicit A = Y^T Y + sum alpha r y y^T + reg I,
// b = sum (1 + alpha r) y. reg = lambda, times the user's rating count when weighted. The
// user's objective is x^T A x - 2 b^T x + const.
struct Normal {
  int64_t d = 0;
  std::vector<double> a, b;
  double objective(const std::vector<double>& x) const {
    double q = 0.0;
    for (int64_t s = 0; s < d; ++s) {
      for (int64_t t = 0; t < d; ++t) q += x[s] * a[s * d + t] * x[t];
      q -= 2.0 * b[s] * x[s];
    }
    return q;
  }
  // |A x - b| / |b|.
  double residual(const std::vector<double>& x) const {
    double r2 = 0.0, b2 = 0.0;
    for (int64_t s = 0; s < d; ++s) {
      double r = -b[s];
      for (int64_t t = 0; t < d; ++t) r += a[s * d + t] * x[t];
      r2 += r * r;
      b2 += b[s] * b[s];
    }
    return std::sqrt(r2 / b2);
  }
};

Normal normal_equations(const Factors& f, const TrainConfig& c, const std::vector<int32_t>& items,
                        const std::vector<float>& ratings) {
  const bool implicit = c.algorithm == SFAC_ALGO_IALS;
  Normal n;
  n.d = f.rank + (f.has_biases ? 1 : 0);
  n.a.assign(n.d * n.d, 0.0);
  n.b.assign(n.d, 0.0);
  std::vector<double> z(n.d);
  auto add = [&](int32_t i, double w, double target) {
    for (int64_t t = 0; t < f.rank; ++t) z[t] = f.item(i)[t];
    if (f.has_biases) z[f.rank] = 1.0;
    for (int64_t s = 0; s < n.d; ++s) {
      for (int64_t t = 0; t < n.d; ++t) n.a[s * n.d + t] += w * z[s] * z[t];
      n.b[s] += target * z[s];
    }
  };
  if (implicit) {
    for (int32_t i = 0; i < f.items; ++i) add(i, 1.0, 0.0);
  }
  for (size_t j = 0; j < items.size(); ++j) {
    const double r = ratings[j];
    if (implicit) {
      add(items[j], c.alpha * r, r > 0 ? 1.0 + c.alpha * r : 0.0);
    } else {
      add(items[j], 1.0, r - (f.has_biases ? double{f.mean} + f.item_bias[items[j]] : 0.0));
    }
  }
  const double reg =
      c.lambda * (c.regularization == SFAC_REG_WEIGHTED ? static_cast<double>(items.size()) : 1);
  for (int64_t t = 0; t < n.d; ++t) n.a[t * n.d + t] += reg;
  return n;
}

// Fold-in of training users. A trainer runs `iterations` epochs (model `before`), then one more
// (model `after`). What is asserted, and why it holds:
//  1. The fold-in solves the training objective's row system: the normal-equation residual,
//     computed independently above in double, is at float rounding level.
//  2. It minimizes that objective against the model's items, so its objective is no higher
//     than that of the trained row (which minimized it against the previous sweep's items).
//  3. ALS only: the next epoch's user half-sweep solves exactly these systems (same items,
//     ratings, biases, regularization), so folding a user into `before` reproduces that
//     user's row (and bias) of `after` to float rounding. This holds whether or not training
//     has converged; comparing with `before`'s own rows would only hold approximately, since
//     its items moved after its users were solved. SGD does not solve rows exactly: 1 and 2 only.
//  4. Folding in is deterministic (bit-identical twice), user = -1 changes nothing, user >= 0
//     replaces exactly that row (and bias) by the returned values, and no ratings give zeros.
void check_fold_in(sfac_context* ctx, const sfac_sparse* ratings, const TrainConfig& c) {
  sfac_train_options* raw_options = nullptr;
  SFAC_ASSERT_OK(sfac_train_options_create(c.algorithm, &raw_options));
  Options o(raw_options);
  SFAC_ASSERT_OK(sfac_train_options_set_int(o.get(), SFAC_OPT_RANK, c.rank));
  SFAC_ASSERT_OK(sfac_train_options_set_double(o.get(), SFAC_OPT_LAMBDA, c.lambda));
  SFAC_ASSERT_OK(sfac_train_options_set_int(o.get(), SFAC_OPT_USE_BIASES, c.biases));
  SFAC_ASSERT_OK(
      sfac_train_options_set_int(o.get(), SFAC_OPT_ALS_REGULARIZATION, c.regularization));
  SFAC_ASSERT_OK(sfac_train_options_set_double(o.get(), SFAC_OPT_IMPLICIT_ALPHA, c.alpha));
  sfac_trainer* raw_trainer = nullptr;
  SFAC_ASSERT_OK(sfac_trainer_create(ctx, ratings, o.get(), &raw_trainer));
  Trainer trainer(raw_trainer);
  sfac_model *raw_before = nullptr, *raw_after = nullptr;
  SFAC_ASSERT_OK(sfac_trainer_run(trainer.get(), static_cast<int>(c.iterations), nullptr));
  SFAC_ASSERT_OK(sfac_trainer_get_model(trainer.get(), &raw_before));
  Model model(raw_before);
  SFAC_ASSERT_OK(sfac_trainer_run(trainer.get(), 1, nullptr));
  SFAC_ASSERT_OK(sfac_trainer_get_model(trainer.get(), &raw_after));
  const Model after_model(raw_after);
  const Factors f = factors(model.get()), after = factors(after_model.get());
  const bool exact_rows = c.algorithm != SFAC_ALGO_SGD;

  const Csr r = download(ratings);
  std::mt19937_64 rng(test_seed() + 7);
  int checked = 0;
  double worst = 0.0;
  for (int attempt = 0; attempt < 200 && checked < 25; ++attempt) {
    const auto u = static_cast<int32_t>(rng() % f.users);
    if (r.count(u) == 0) continue;
    ++checked;
    SCOPED_TRACE("user " + std::to_string(u));
    const std::vector<int32_t> items(r.indices.begin() + r.offsets[u],
                                     r.indices.begin() + r.offsets[u + 1]);
    const std::vector<float> values(r.values.begin() + r.offsets[u],
                                    r.values.begin() + r.offsets[u + 1]);
    std::vector<float> x(f.rank, 0.0f), again(f.rank, 1.0f);
    float bias = 0.0f, bias_again = 1.0f;
    const auto count = static_cast<int64_t>(items.size());
    SFAC_ASSERT_OK(sfac_model_recalculate_user(model.get(), -1, count, items.data(), values.data(),
                                               x.data(), static_cast<int64_t>(x.size()), &bias));
    SFAC_ASSERT_OK(sfac_model_recalculate_user(model.get(), -1, count, items.data(), values.data(),
                                               again.data(), static_cast<int64_t>(again.size()),
                                               &bias_again));
    EXPECT_EQ(x, again);
    if (f.has_biases) {
      EXPECT_EQ(bias, bias_again);
    }

    const Normal n = normal_equations(f, c, items, values);
    std::vector<double> folded(x.begin(), x.end()), trained(f.user(u), f.user(u) + f.rank);
    std::vector<double> next(after.user(u), after.user(u) + f.rank);
    if (f.has_biases) {
      folded.push_back(bias);
      trained.push_back(f.user_bias[u]);
      next.push_back(after.user_bias[u]);
    }
    EXPECT_LT(n.residual(folded), 1e-3);
    const double q_fold = n.objective(folded), q_trained = n.objective(trained);
    EXPECT_LE(q_fold, q_trained + 1e-5 * (1.0 + std::abs(q_trained)));
    if (exact_rows) {
      double diff2 = 0.0, norm2 = 0.0;
      for (size_t t = 0; t < folded.size(); ++t) {
        diff2 += (folded[t] - next[t]) * (folded[t] - next[t]);
        norm2 += next[t] * next[t];
      }
      const double relative = std::sqrt(diff2 / std::max(norm2, 1e-30));
      worst = std::max(worst, relative);
      EXPECT_LT(relative, 1e-4) << "fold-in vs the next user half-sweep";
    }
  }
  ASSERT_GT(checked, 10);
  if (exact_rows) {
    std::printf(
        "[ fold-in  ] algorithm %d biases %d regularization %d: worst relative distance "
        "to the next half-sweep's row %.1e over %d users\n",
        c.algorithm, c.biases, c.regularization, worst, checked);
  }
  EXPECT_EQ(factors(model.get()), f) << "user = -1 must not change the model";

  // user >= 0 writes the row: the heaviest user, whose row then equals the returned factors.
  int32_t u = 0;
  for (int32_t v = 0; v < f.users; ++v) u = r.count(v) > r.count(u) ? v : u;
  const int64_t count = r.count(u);
  std::vector<float> x(f.rank);
  float bias = 0.0f;
  SFAC_ASSERT_OK(sfac_model_recalculate_user(model.get(), u, count, &r.indices[r.offsets[u]],
                                             &r.values[r.offsets[u]], x.data(),
                                             static_cast<int64_t>(x.size()), &bias));
  Factors expected = f;
  std::copy(x.begin(), x.end(), expected.x.begin() + u * f.rank);
  if (f.has_biases) expected.user_bias[u] = bias;
  EXPECT_EQ(factors(model.get()), expected);

  // No ratings: the regularized optimum is zero (and the row is written as such).
  std::fill(x.begin(), x.end(), 5.0f);
  bias = 5.0f;
  SFAC_ASSERT_OK(sfac_model_recalculate_user(model.get(), u, 0, nullptr, nullptr, x.data(),
                                             static_cast<int64_t>(x.size()), &bias));
  EXPECT_EQ(x, std::vector<float>(f.rank, 0.0f));
  if (f.has_biases) {
    EXPECT_EQ(bias, 0.0f);
  }
  std::fill(expected.x.begin() + u * f.rank, expected.x.begin() + (u + 1) * f.rank, 0.0f);
  if (f.has_biases) expected.user_bias[u] = 0.0f;
  EXPECT_EQ(factors(model.get()), expected);
}

}  // namespace

TEST(Model, FoldInReproducesExplicitAlsUsers) {
  Context ctx = make_cpu_context(2, test_seed());
  Sparse data = synthesize(ctx.get(), SFAC_FEEDBACK_EXPLICIT, 400, 300, 20000, 4, 0.3);
  for (bool biases : {false, true}) {
    for (sfac_regularization reg : {SFAC_REG_WEIGHTED, SFAC_REG_PLAIN}) {
      SCOPED_TRACE(std::string(biases ? "with" : "without") + " biases, regularization " +
                   std::to_string(reg));
      TrainConfig c;
      c.rank = 4;
      c.iterations = 5;
      c.biases = biases;
      c.regularization = reg;
      check_fold_in(ctx.get(), data.get(), c);
    }
  }
}

TEST(Model, FoldInReproducesImplicitAlsUsers) {
  Context ctx = make_cpu_context(2, test_seed());
  Sparse data = synthesize(ctx.get(), SFAC_FEEDBACK_IMPLICIT, 400, 300, 15000, 4, 1.0);
  TrainConfig c;
  c.algorithm = SFAC_ALGO_IALS;
  c.rank = 6;
  c.iterations = 5;
  c.lambda = 0.1;
  c.regularization = SFAC_REG_PLAIN;
  c.alpha = 10.0;
  check_fold_in(ctx.get(), data.get(), c);
}

// SGD models fold in with the explicit least-squares objective and their per-rating
// (weighted) lambda_user: the same row system as weighted ALS.
TEST(Model, FoldInOfSgdModelsSolvesTheirObjective) {
  Context ctx = make_cpu_context(2, test_seed());
  Sparse data = synthesize(ctx.get(), SFAC_FEEDBACK_EXPLICIT, 300, 200, 10000, 4, 0.3);
  TrainConfig c;
  c.algorithm = SFAC_ALGO_SGD;
  c.iterations = 5;
  c.biases = true;
  check_fold_in(ctx.get(), data.get(), c);
}

TEST(Model, SetFactorsRejectsNonFiniteValuesAndKeepsTheModel) {
  Context ctx = make_cpu_context(2, test_seed());
  Model model = blank_model(ctx.get(), 3, 4, 2);
  const Factors before = factors(model.get());
  std::vector<float> x(6, 1.0f), y(8, 2.0f);
  x[5] = std::nanf("");
  y[3] = kInf;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE,
                    "factors[5] = ", sfac_model_set_user_factors(model.get(), x.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "(user 2, column 1) is not finite",
                    sfac_model_set_user_factors(model.get(), x.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "factors[3] = inf (item 1, column 1) is not finite",
                    sfac_model_set_item_factors(model.get(), y.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "factors is NULL",
                    sfac_model_set_user_factors(model.get(), nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "factors is NULL",
                    sfac_model_set_item_factors(model.get(), nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "model is NULL",
                    sfac_model_set_user_factors(nullptr, x.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "model is NULL",
                    sfac_model_set_item_factors(nullptr, y.data()));
  EXPECT_EQ(factors(model.get()), before);
  x[5] = 3.0f;
  SFAC_ASSERT_OK(sfac_model_set_user_factors(model.get(), x.data()));
  EXPECT_EQ(factors(model.get()).x, x);
}

TEST(Model, RejectsBadQueriesAndWritesNothing) {
  Context ctx = make_cpu_context(2, test_seed());
  Model model = blank_model(ctx.get(), 6, 5, 3, SFAC_ALGO_ALS, true);
  sfac_model* m = model.get();
  const Factors before = factors(m);
  Sparse good = coo(ctx.get(), 6, 5, {{0, 1}, {5, 4}});
  Sparse wrong = coo(ctx.get(), 5, 5, {{0, 1}});
  const std::vector<int32_t> users = {0, 5, 2}, bad_users = {0, 6, 2}, negative = {-1, 0, 0};
  const std::vector<int32_t> items = {4, 0, 1}, bad_items = {0, 1, 5};
  std::vector<float> scores(3 * 4, 777.0f);
  std::vector<int32_t> out(3 * 4, 777);
  const auto untouched = [&] {
    EXPECT_EQ(scores, std::vector<float>(3 * 4, 777.0f));
    EXPECT_EQ(out, std::vector<int32_t>(3 * 4, 777));
  };

  // predict
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "model is NULL",
                    sfac_model_predict(nullptr, 3, users.data(), items.data(), scores.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "count = -1 must be >= 0",
                    sfac_model_predict(m, -1, users.data(), items.data(), scores.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "users is NULL but count = 3",
                    sfac_model_predict(m, 3, nullptr, items.data(), scores.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "items is NULL",
                    sfac_model_predict(m, 3, users.data(), nullptr, scores.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "scores is NULL",
                    sfac_model_predict(m, 3, users.data(), items.data(), nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "users[1] = 6 is out of range for a model with 6 users",
                    sfac_model_predict(m, 3, bad_users.data(), items.data(), scores.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "users[0] = -1 is out of range",
                    sfac_model_predict(m, 3, negative.data(), items.data(), scores.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "items[2] = 5 is out of range for a model with 5 items",
                    sfac_model_predict(m, 3, users.data(), bad_items.data(), scores.data()));
  untouched();

  // recommend
  auto recommend = [&](sfac_model* mm, const int32_t* u, int n, const sfac_sparse* exclude,
                       int64_t allowed_count, const int32_t* allowed, int32_t* o, float* s) {
    return sfac_model_recommend(mm, 3, u, n, exclude, allowed_count, allowed, o, s,
                                static_cast<int64_t>(out.size()));
  };
  SFAC_EXPECT_ERROR(
      SFAC_ERR_INVALID_HANDLE, "model is NULL",
      recommend(nullptr, users.data(), 4, good.get(), 0, nullptr, out.data(), scores.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "users is NULL",
                    recommend(m, nullptr, 4, good.get(), 0, nullptr, out.data(), scores.data()));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_INVALID_ARGUMENT, "n = 0 must be >= 1",
      recommend(m, users.data(), 0, good.get(), 0, nullptr, out.data(), scores.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out_items is NULL",
                    recommend(m, users.data(), 4, good.get(), 0, nullptr, nullptr, scores.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out_scores is NULL",
                    recommend(m, users.data(), 4, good.get(), 0, nullptr, out.data(), nullptr));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_SHAPE_MISMATCH, "exclude is 5 x 5 but the model has 6 users x 5 items",
      recommend(m, users.data(), 4, wrong.get(), 0, nullptr, out.data(), scores.data()));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_INVALID_ARGUMENT, "allowed_items is NULL but allowed_count = 2",
      recommend(m, users.data(), 4, good.get(), 2, nullptr, out.data(), scores.data()));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_INVALID_ARGUMENT, "allowed_count = -1",
      recommend(m, users.data(), 4, good.get(), -1, items.data(), out.data(), scores.data()));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_OUT_OF_RANGE, "allowed_items[2] = 5 is out of range",
      recommend(m, users.data(), 4, good.get(), 3, bad_items.data(), out.data(), scores.data()));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_OUT_OF_RANGE, "users[1] = 6 is out of range",
      recommend(m, bad_users.data(), 4, good.get(), 0, nullptr, out.data(), scores.data()));
  sfac_sparse* dead = reinterpret_cast<sfac_sparse*>(out.data());  // not a live handle
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "exclude is not a live sfac_sparse",
                    recommend(m, users.data(), 4, dead, 0, nullptr, out.data(), scores.data()));
  untouched();

  // similar_items
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "model is NULL",
                    sfac_model_similar_items(nullptr, 3, items.data(), 4, out.data(), scores.data(),
                                             static_cast<int64_t>(out.size())));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "n = -2 must be >= 1",
                    sfac_model_similar_items(m, 3, items.data(), -2, out.data(), scores.data(),
                                             static_cast<int64_t>(out.size())));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "items is NULL but count = 3",
                    sfac_model_similar_items(m, 3, nullptr, 4, out.data(), scores.data(),
                                             static_cast<int64_t>(out.size())));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out_scores is NULL",
                    sfac_model_similar_items(m, 3, items.data(), 4, out.data(), nullptr,
                                             static_cast<int64_t>(out.size())));
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "items[2] = 5 is out of range for a model with 5 items",
                    sfac_model_similar_items(m, 3, bad_items.data(), 4, out.data(), scores.data(),
                                             static_cast<int64_t>(out.size())));
  untouched();

  // ranking_metrics
  double metric = 777.0;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "model is NULL",
                    sfac_model_ranking_metrics(nullptr, good.get(), good.get(), 3, &metric, &metric,
                                               &metric, &metric));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_INVALID_HANDLE, "test is NULL",
      sfac_model_ranking_metrics(m, good.get(), nullptr, 3, &metric, &metric, &metric, &metric));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_INVALID_ARGUMENT, "k = 0 must be >= 1",
      sfac_model_ranking_metrics(m, good.get(), good.get(), 0, &metric, &metric, &metric, &metric));
  SFAC_EXPECT_ERROR(SFAC_ERR_SHAPE_MISMATCH, "test is 5 x 5",
                    sfac_model_ranking_metrics(m, good.get(), wrong.get(), 3, &metric, &metric,
                                               &metric, &metric));
  SFAC_EXPECT_ERROR(SFAC_ERR_SHAPE_MISMATCH, "exclude is 5 x 5",
                    sfac_model_ranking_metrics(m, wrong.get(), good.get(), 3, &metric, &metric,
                                               &metric, &metric));
  EXPECT_EQ(metric, 777.0);
  EXPECT_EQ(factors(m), before);
}

TEST(Model, RecalculateUserRejectsBadInputsAndKeepsTheModel) {
  Context ctx = make_cpu_context(2, test_seed());
  Model model = blank_model(ctx.get(), 6, 5, 3, SFAC_ALGO_ALS, true);
  Model implicit = blank_model(ctx.get(), 6, 5, 3, SFAC_ALGO_IALS);
  const Factors before = factors(model.get()), implicit_before = factors(implicit.get());
  const std::vector<int32_t> items = {3, 0, 4}, duplicate = {3, 0, 3}, bad_items = {3, 5, 4};
  const std::vector<float> ratings = {1.0f, 2.0f, 3.0f}, nan = {1.0f, std::nanf(""), 3.0f};
  const std::vector<float> negative = {1.0f, -2.0f, 3.0f}, inf = {kInf, 2.0f, 3.0f};
  std::vector<float> x(3, 777.0f);
  float bias = 777.0f;
  auto recalc = [&](sfac_model* m, int32_t user, int64_t count, const int32_t* i, const float* r,
                    float* out) {
    return sfac_model_recalculate_user(m, user, count, i, r, out, static_cast<int64_t>(x.size()),
                                       &bias);
  };
  sfac_model* m = model.get();
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "model is NULL",
                    recalc(nullptr, 2, 3, items.data(), ratings.data(), x.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "user = 6 is out of range for a model with 6 users",
                    recalc(m, 6, 3, items.data(), ratings.data(), x.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "user = -2 is out of range",
                    recalc(m, -2, 3, items.data(), ratings.data(), x.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "factors is NULL",
                    recalc(m, 2, 3, items.data(), ratings.data(), nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "count = -3 must be >= 0",
                    recalc(m, 2, -3, items.data(), ratings.data(), x.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "items is NULL but count = 3",
                    recalc(m, 2, 3, nullptr, ratings.data(), x.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "ratings is NULL but count = 3",
                    recalc(m, 2, 3, items.data(), nullptr, x.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "items[1] = 5 is out of range for a model with 5 items",
                    recalc(m, 2, 3, bad_items.data(), ratings.data(), x.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "ratings[1] = nan is not finite",
                    recalc(m, 2, 3, items.data(), nan.data(), x.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "ratings[0] = inf is not finite",
                    recalc(m, -1, 3, items.data(), inf.data(), x.data()));
  SFAC_EXPECT_ERROR(SFAC_ERR_DUPLICATE_ENTRY, "items[2] = 3 repeats items[0]",
                    recalc(m, 2, 3, duplicate.data(), ratings.data(), x.data()));
  // Explicit models take any finite rating; implicit ones need counts >= 0.
  SFAC_EXPECT_STATUS(SFAC_OK, recalc(m, -1, 3, items.data(), negative.data(), x.data()));
  std::fill(x.begin(), x.end(), 777.0f);
  bias = 777.0f;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "ratings[1] = -2 is negative",
                    recalc(implicit.get(), 2, 3, items.data(), negative.data(), x.data()));
  EXPECT_EQ(x, std::vector<float>(3, 777.0f));
  EXPECT_EQ(bias, 777.0f);
  EXPECT_EQ(factors(m), before);
  EXPECT_EQ(factors(implicit.get()), implicit_before);
}
