// Trainers on planted data whose best reachable error is known, options and training loop.
#include <cmath>
#include <initializer_list>
#include <limits>
#include <memory>
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

namespace {

std::vector<float> user_factors(const sfac_model* m) {
  int64_t users = 0, rank = 0;
  EXPECT_EQ(sfac_model_get_shape(m, &users, nullptr, &rank), SFAC_OK);
  std::vector<float> f(users * rank);
  EXPECT_EQ(sfac_model_get_user_factors(m, f.data()), SFAC_OK);
  return f;
}

Sparse implicit_data(sfac_context* ctx) {
  sfac_sparse* raw = nullptr;
  EXPECT_EQ(sfac_synthesize_ratings(ctx, SFAC_FEEDBACK_IMPLICIT, 3000, 1000, 60000, 8, 2.0, 0.3,
                                    &raw, nullptr, nullptr),
            SFAC_OK)
      << sfac_last_error();
  return Sparse(raw);
}

double final_loss(sfac_context* ctx, const sfac_sparse* ratings, const sfac_train_options* o,
                  int epochs) {
  sfac_trainer* raw = nullptr;
  EXPECT_EQ(sfac_trainer_create(ctx, ratings, o, &raw), SFAC_OK) << sfac_last_error();
  Trainer trainer(raw);
  int done = 0;
  EXPECT_EQ(sfac_trainer_run(trainer.get(), epochs, &done), SFAC_OK) << sfac_last_error();
  EXPECT_EQ(done, epochs);
  double loss = 0.0;
  EXPECT_EQ(sfac_trainer_get_loss(trainer.get(), &loss), SFAC_OK);
  return loss;
}

struct EpochLog {
  std::vector<double> losses;
  std::vector<double> validation;
  int stop_after = 0;   // return 1 after this many epochs (0 = never)
  int abort_after = 0;  // return -1 after this many epochs (0 = never)
};

int log_epoch(int epoch, double loss, double validation_rmse, double seconds, void* user) {
  auto* log = static_cast<EpochLog*>(user);
  EXPECT_EQ(epoch, static_cast<int>(log->losses.size()) + 1);
  EXPECT_GE(seconds, 0.0);
  log->losses.push_back(loss);
  log->validation.push_back(validation_rmse);
  if (log->abort_after && epoch >= log->abort_after) return -1;
  return (log->stop_after && epoch >= log->stop_after) ? 1 : 0;
}

}  // namespace

// Both solvers minimize the same objective; after convergence their losses must agree.
TEST(Train, ImplicitAlsCholeskyAndConjugateGradientConvergeToTheSameLoss) {
  Context ctx = make_cpu_context(2, test_seed());
  Sparse data = implicit_data(ctx.get());
  double losses[2];
  for (int solver : {SFAC_SOLVER_CHOLESKY, SFAC_SOLVER_CG}) {
    Options opts = make_options(SFAC_ALGO_IALS);
    SFAC_ASSERT_OK(sfac_train_options_set_int(opts.get(), SFAC_OPT_RANK, 8));
    SFAC_ASSERT_OK(sfac_train_options_set_int(opts.get(), SFAC_OPT_ALS_SOLVER, solver));
    SFAC_ASSERT_OK(sfac_train_options_set_double(opts.get(), SFAC_OPT_LAMBDA, 0.1));
    SFAC_ASSERT_OK(sfac_train_options_set_double(opts.get(), SFAC_OPT_IMPLICIT_ALPHA, 5.0));
    losses[solver] = final_loss(ctx.get(), data.get(), opts.get(), 40);
  }
  EXPECT_NEAR(losses[SFAC_SOLVER_CG] / losses[SFAC_SOLVER_CHOLESKY], 1.0, 1e-3)
      << "cholesky " << losses[SFAC_SOLVER_CHOLESKY] << " cg " << losses[SFAC_SOLVER_CG];
}

// ALS decreases its objective monotonically (each half-sweep solves exactly).
TEST(Train, AlsLossNeverIncreases) {
  Context ctx = make_cpu_context(2, test_seed());
  Planted data = planted(ctx.get(), 2000, 800, 60000, 6, 0.3, 0.4);
  for (int biases : {0, 1}) {
    Options opts = make_options(SFAC_ALGO_ALS);
    SFAC_ASSERT_OK(sfac_train_options_set_int(opts.get(), SFAC_OPT_RANK, 6));
    SFAC_ASSERT_OK(sfac_train_options_set_int(opts.get(), SFAC_OPT_ITERATIONS, 8));
    SFAC_ASSERT_OK(sfac_train_options_set_int(opts.get(), SFAC_OPT_USE_BIASES, biases));
    EpochLog log;
    SFAC_ASSERT_OK(sfac_train_options_set_callback(opts.get(), log_epoch, &log));
    SFAC_ASSERT_OK(sfac_train_options_set_validation(opts.get(), data.test.get()));
    Model model = train(ctx.get(), data.train.get(), opts.get());
    ASSERT_EQ(log.losses.size(), 8u);
    for (size_t e = 1; e < log.losses.size(); ++e) {
      EXPECT_LE(log.losses[e], log.losses[e - 1] * (1 + 1e-6)) << "epoch " << e + 1;
    }
    EXPECT_NEAR(log.validation.back(), rmse(model.get(), data.test.get()), 1e-9);
    int has_biases = 0;
    float mean = 0;
    SFAC_ASSERT_OK(sfac_model_get_biases(model.get(), &has_biases, &mean, nullptr, nullptr));
    EXPECT_EQ(has_biases, biases);
  }
}

TEST(Train, SameSeedAndThreadsGiveBitIdenticalModels) {
  for (sfac_algorithm algo : {SFAC_ALGO_ALS, SFAC_ALGO_SGD}) {
    std::vector<float> runs[2];
    for (auto& run : runs) {
      Context ctx = make_cpu_context(2, 1234);
      Planted data = planted(ctx.get(), 1500, 600, 40000, 5, 0.3, 0.4);
      Options opts = make_options(algo);
      SFAC_ASSERT_OK(sfac_train_options_set_int(opts.get(), SFAC_OPT_RANK, 5));
      SFAC_ASSERT_OK(sfac_train_options_set_int(opts.get(), SFAC_OPT_ITERATIONS, 4));
      SFAC_ASSERT_OK(sfac_train_options_set_int(opts.get(), SFAC_OPT_DETERMINISTIC, 1));
      Model model = train(ctx.get(), data.train.get(), opts.get());
      run = user_factors(model.get());
    }
    ASSERT_FALSE(runs[0].empty());
    EXPECT_EQ(runs[0], runs[1]) << "algorithm " << algo;
  }
}

TEST(Train, StepwiseTrainingMatchesOneShotTraining) {
  Context ctx = make_cpu_context(1, 99);
  Planted data = planted(ctx.get(), 1000, 400, 20000, 4, 0.3, 0.2);
  Options opts = make_options(SFAC_ALGO_ALS);
  SFAC_ASSERT_OK(sfac_train_options_set_int(opts.get(), SFAC_OPT_RANK, 4));
  SFAC_ASSERT_OK(sfac_train_options_set_int(opts.get(), SFAC_OPT_ITERATIONS, 5));
  Model once = train(ctx.get(), data.train.get(), opts.get());
  sfac_trainer* raw = nullptr;
  SFAC_ASSERT_OK(sfac_trainer_create(ctx.get(), data.train.get(), opts.get(), &raw));
  Trainer trainer(raw);
  int done = 0;
  SFAC_ASSERT_OK(sfac_trainer_run(trainer.get(), 2, &done));
  SFAC_ASSERT_OK(sfac_trainer_run(trainer.get(), 3, &done));
  EXPECT_EQ(done, 5);
  sfac_model* snap = nullptr;
  SFAC_ASSERT_OK(sfac_trainer_get_model(trainer.get(), &snap));
  Model stepwise(snap);
  EXPECT_EQ(user_factors(once.get()), user_factors(stepwise.get()));
}

TEST(Train, CallbackStopsEarlyOrAbortsWithAClearStatus) {
  Context ctx = make_cpu_context(1, 5);
  Planted data = planted(ctx.get(), 800, 300, 10000, 4, 0.3, 0.2);
  Options opts = make_options(SFAC_ALGO_SGD);
  SFAC_ASSERT_OK(sfac_train_options_set_int(opts.get(), SFAC_OPT_ITERATIONS, 10));
  EpochLog stop;
  stop.stop_after = 3;
  SFAC_ASSERT_OK(sfac_train_options_set_callback(opts.get(), log_epoch, &stop));
  Model model = train(ctx.get(), data.train.get(), opts.get());
  EXPECT_TRUE(model);
  EXPECT_EQ(stop.losses.size(), 3u);
  EXPECT_TRUE(std::isnan(stop.validation[0])) << "no validation matrix: NaN";

  EpochLog abort_log;
  abort_log.abort_after = 2;
  SFAC_ASSERT_OK(sfac_train_options_set_callback(opts.get(), log_epoch, &abort_log));
  sfac_model* raw = reinterpret_cast<sfac_model*>(0x1234);
  SFAC_EXPECT_ERROR(SFAC_ERR_CALLBACK, "after epoch 2",
                    sfac_train(ctx.get(), data.train.get(), opts.get(), &raw));
  EXPECT_EQ(raw, reinterpret_cast<sfac_model*>(0x1234));
}

TEST(Train, DivergenceIsReportedNotReturnedAsAModel) {
  Context ctx = make_cpu_context(1, 5);
  Planted data = planted(ctx.get(), 800, 300, 10000, 4, 0.3, 0.2);
  Options opts = make_options(SFAC_ALGO_SGD);
  SFAC_ASSERT_OK(sfac_train_options_set_double(opts.get(), SFAC_OPT_SGD_LEARNING_RATE, 1e6));
  SFAC_ASSERT_OK(sfac_train_options_set_double(opts.get(), SFAC_OPT_SGD_DECAY, 0.0));
  sfac_model* raw = nullptr;
  SFAC_EXPECT_ERROR(SFAC_ERR_NOT_CONVERGED, "diverged",
                    sfac_train(ctx.get(), data.train.get(), opts.get(), &raw));
  EXPECT_EQ(raw, nullptr);
}

TEST(TrainOptions, DefaultsDependOnTheAlgorithmAndRoundTrip) {
  Options als = make_options(SFAC_ALGO_ALS), ials = make_options(SFAC_ALGO_IALS);
  int64_t reg = -1, rank = 0;
  SFAC_ASSERT_OK(sfac_train_options_get_int(als.get(), SFAC_OPT_ALS_REGULARIZATION, &reg));
  EXPECT_EQ(reg, SFAC_REG_WEIGHTED);
  SFAC_ASSERT_OK(sfac_train_options_get_int(ials.get(), SFAC_OPT_ALS_REGULARIZATION, &reg));
  EXPECT_EQ(reg, SFAC_REG_PLAIN);
  SFAC_ASSERT_OK(sfac_train_options_get_int(als.get(), SFAC_OPT_RANK, &rank));
  EXPECT_EQ(rank, 32);
  double alpha = 0;
  SFAC_ASSERT_OK(sfac_train_options_get_double(ials.get(), SFAC_OPT_IMPLICIT_ALPHA, &alpha));
  EXPECT_EQ(alpha, 40.0);
  SFAC_ASSERT_OK(sfac_train_options_set_double(als.get(), SFAC_OPT_LAMBDA_USER, 0.5));
  double lambda = 0;
  SFAC_ASSERT_OK(sfac_train_options_get_double(als.get(), SFAC_OPT_LAMBDA_USER, &lambda));
  EXPECT_EQ(lambda, 0.5);
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "differ",
                    sfac_train_options_get_double(als.get(), SFAC_OPT_LAMBDA, &lambda));
}

TEST(TrainOptions, BadValuesAreRejectedAndLeaveTheOptionUnchanged) {
  Options o = make_options(SFAC_ALGO_ALS);
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out of range",
                    sfac_train_options_set_int(o.get(), SFAC_OPT_RANK, 0));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out of range",
                    sfac_train_options_set_double(o.get(), SFAC_OPT_LAMBDA, -0.1));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "not finite",
                    sfac_train_options_set_double(o.get(), SFAC_OPT_LAMBDA,
                                                  std::numeric_limits<double>::quiet_NaN()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "takes a double",
                    sfac_train_options_set_int(o.get(), SFAC_OPT_LAMBDA, 1));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "takes an integer",
                    sfac_train_options_set_double(o.get(), SFAC_OPT_RANK, 8.0));
  SFAC_EXPECT_ERROR(SFAC_ERR_UNSUPPORTED, "unknown training option 999",
                    sfac_train_options_set_int(o.get(), static_cast<sfac_option>(999), 1));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out of range",
                    sfac_train_options_set_int(o.get(), SFAC_OPT_ALS_SOLVER, 7));
  int64_t rank = 0;
  double lambda = 0;
  SFAC_ASSERT_OK(sfac_train_options_get_int(o.get(), SFAC_OPT_RANK, &rank));
  SFAC_ASSERT_OK(sfac_train_options_get_double(o.get(), SFAC_OPT_LAMBDA, &lambda));
  EXPECT_EQ(rank, 32);
  EXPECT_EQ(lambda, 0.05);
  sfac_train_options* raw = nullptr;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "unknown algorithm",
                    sfac_train_options_create(static_cast<sfac_algorithm>(9), &raw));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "options is NULL",
                    sfac_train_options_set_int(nullptr, SFAC_OPT_RANK, 4));
}

TEST(Train, BadTrainingInputsAreRejected) {
  Context ctx = make_cpu_context(1, 3);
  Planted data = planted(ctx.get(), 500, 200, 5000, 4, 0.3, 0.2);
  Options opts = make_options(SFAC_ALGO_ALS);
  sfac_model* raw = reinterpret_cast<sfac_model*>(0x1234);

  // A validation matrix of another shape.
  sfac_sparse* wrong = nullptr;
  const int32_t r[] = {0}, c[] = {0};
  const float v[] = {1.0f};
  SFAC_ASSERT_OK(sfac_sparse_create_coo(ctx.get(), 500, 199, 1, r, c, v, 0, &wrong));
  Sparse wrong_owner(wrong);
  SFAC_ASSERT_OK(sfac_train_options_set_validation(opts.get(), wrong));
  SFAC_EXPECT_ERROR(SFAC_ERR_SHAPE_MISMATCH, "validation matrix is 500 x 199",
                    sfac_train(ctx.get(), data.train.get(), opts.get(), &raw));
  SFAC_ASSERT_OK(sfac_train_options_set_validation(opts.get(), nullptr));

  // Implicit feedback with negative ratings.
  Options implicit = make_options(SFAC_ALGO_IALS);
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "ratings >= 0",
                    sfac_train(ctx.get(), data.train.get(), implicit.get(), &raw));

  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "ratings is NULL",
                    sfac_train(ctx.get(), nullptr, opts.get(), &raw));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "options is NULL",
                    sfac_train(ctx.get(), data.train.get(), nullptr, &raw));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out is NULL",
                    sfac_train(ctx.get(), data.train.get(), opts.get(), nullptr));
  EXPECT_EQ(raw, reinterpret_cast<sfac_model*>(0x1234));

  sfac_trainer* trainer = nullptr;
  SFAC_ASSERT_OK(sfac_trainer_create(ctx.get(), data.train.get(), opts.get(), &trainer));
  Trainer owner(trainer);
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "epochs = -1",
                    sfac_trainer_run(trainer, -1, nullptr));
}

TEST(Train, EmptyRowsAndColumnsGetZeroFactors) {
  Context ctx = make_cpu_context(1, 3);
  // Users 1 and 3 and item 2 have no ratings.
  const int32_t r[] = {0, 0, 2, 2, 4}, c[] = {0, 1, 0, 3, 1};
  const float v[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
  sfac_sparse* raw = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_coo(ctx.get(), 5, 4, 5, r, c, v, 0, &raw));
  Sparse ratings(raw);
  for (sfac_algorithm algo : {SFAC_ALGO_ALS, SFAC_ALGO_IALS}) {
    Options opts = make_options(algo);
    SFAC_ASSERT_OK(sfac_train_options_set_int(opts.get(), SFAC_OPT_RANK, 2));
    Model model = train(ctx.get(), ratings.get(), opts.get());
    const std::vector<float> u = user_factors(model.get());
    for (int t = 0; t < 2; ++t) {
      EXPECT_EQ(u[1 * 2 + t], 0.0f);
      EXPECT_EQ(u[3 * 2 + t], 0.0f);
    }
    for (float x : u) EXPECT_TRUE(std::isfinite(x));
  }
}
