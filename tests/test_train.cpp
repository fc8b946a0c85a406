// Trainers on planted data whose best reachable error is known, options and training loop.
#include <cmath>
#include <limits>
#include <vector>

#include "sfac_test.h"

using namespace sfac_test;

namespace {

struct OptionsDeleter {
  void operator()(sfac_train_options* p) const { sfac_train_options_destroy(p); }
};
struct ModelDeleter {
  void operator()(sfac_model* p) const { sfac_model_destroy(p); }
};
struct TrainerDeleter {
  void operator()(sfac_trainer* p) const { sfac_trainer_destroy(p); }
};
using Options = std::unique_ptr<sfac_train_options, OptionsDeleter>;
using Model = std::unique_ptr<sfac_model, ModelDeleter>;
using Trainer = std::unique_ptr<sfac_trainer, TrainerDeleter>;

Options make_options(sfac_algorithm algorithm) {
  sfac_train_options* raw = nullptr;
  EXPECT_EQ(sfac_train_options_create(algorithm, &raw), SFAC_OK) << sfac_last_error();
  return Options(raw);
}

struct Planted {
  Sparse train, test;
};

// Planted explicit data split 90/10; seed from the test run.
Planted planted(sfac_context* ctx, int64_t users, int64_t items, int64_t nnz, int64_t rank,
                double noise, double skew) {
  sfac_sparse* all = nullptr;
  EXPECT_EQ(sfac_synthesize_ratings(ctx, SFAC_FEEDBACK_EXPLICIT, users, items, nnz, rank, noise,
                                    skew, &all, nullptr, nullptr),
            SFAC_OK)
      << sfac_last_error();
  Sparse owner(all);
  sfac_sparse *train = nullptr, *test = nullptr;
  EXPECT_EQ(sfac_split_random(all, 0.1, test_seed(), &train, &test), SFAC_OK);
  return {Sparse(train), Sparse(test)};
}

double rmse(const sfac_model* model, const sfac_sparse* ratings) {
  double r = -1.0;
  EXPECT_EQ(sfac_model_evaluate(model, ratings, &r, nullptr), SFAC_OK) << sfac_last_error();
  return r;
}

Model train(sfac_context* ctx, const sfac_sparse* ratings, const sfac_train_options* options) {
  sfac_model* raw = nullptr;
  EXPECT_EQ(sfac_train(ctx, ratings, options, &raw), SFAC_OK) << sfac_last_error();
  return Model(raw);
}

}  // namespace

// The acceptance bar: 20k x 5k, rank 8, sigma 0.5, held-out RMSE within 10% of sigma.
TEST(Train, ExplicitAlsReachesTheNoiseFloorOnPlantedData) {
  Context ctx = make_cpu_context(0, test_seed());
  Planted data = planted(ctx.get(), 20000, 5000, 2000000, 8, 0.5, 0.3);
  Options opts = make_options(SFAC_ALGO_ALS);
  SFAC_ASSERT_OK(sfac_train_options_set_int(opts.get(), SFAC_OPT_RANK, 8));
  SFAC_ASSERT_OK(sfac_train_options_set_int(opts.get(), SFAC_OPT_ITERATIONS, 8));
  SFAC_ASSERT_OK(sfac_train_options_set_double(opts.get(), SFAC_OPT_LAMBDA, 0.02));
  Model model = train(ctx.get(), data.train.get(), opts.get());
  const double test_rmse = rmse(model.get(), data.test.get());
  EXPECT_LT(test_rmse, 0.55) << "held-out RMSE vs sigma 0.5";
  EXPECT_GT(test_rmse, 0.45) << "below the noise floor is impossible on held-out data";
}

TEST(Train, SgdReachesTheNoiseFloorOnPlantedData) {
  Context ctx = make_cpu_context(0, test_seed());
  Planted data = planted(ctx.get(), 20000, 5000, 2000000, 8, 0.5, 0.3);
  Options opts = make_options(SFAC_ALGO_SGD);
  SFAC_ASSERT_OK(sfac_train_options_set_int(opts.get(), SFAC_OPT_RANK, 8));
  SFAC_ASSERT_OK(sfac_train_options_set_int(opts.get(), SFAC_OPT_ITERATIONS, 30));
  SFAC_ASSERT_OK(sfac_train_options_set_double(opts.get(), SFAC_OPT_LAMBDA, 0.02));
  Model model = train(ctx.get(), data.train.get(), opts.get());
  const double test_rmse = rmse(model.get(), data.test.get());
  EXPECT_LT(test_rmse, 0.55) << "held-out RMSE vs sigma 0.5";
  EXPECT_GT(test_rmse, 0.45);
}
