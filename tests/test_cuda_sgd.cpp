// The CUDA SGD trainer against the CPU trainer on planted data: the held-out error the CPU
// reaches with float32 factors, within 2%, for every rank and storage type; samples streamed
// through a device memory limit give the in-memory error (Hogwild, wavefront) or the same bits
// (deterministic); the wavefront schedule reaches the same error, also with far more workers
// than item ranges; memory limits below the data and unsupported ranks answer with a status and
// leave the context usable. Skipped without a
// device; the backend-parameterized tests of test_train.cpp hold it to the CPU's other
// assertions (noise floor, determinism, callbacks, divergence, loss).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sfac_test.h"

using namespace sfac_test;

namespace {

struct Case {
  int64_t rank;
  sfac_dtype dtype;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const char* type[] = {"Float32", "Float16", "Bfloat16"};
  return "Rank" + std::to_string(info.param.rank) + type[info.param.dtype];
}

// Planted rank-4 ratings (noise 0.5, skewed degrees), 90% for training and 10% held out, as
// triplets so that each backend gets its own copy. The planted rank is below every rank tried:
// where they are equal, the error SGD reaches depends on the order of the updates by several
// percent on either backend.
struct Data {
  Triplets train, test;
};

Triplets triplets_of(const sfac_sparse* m) {
  Triplets t;
  int64_t nnz = 0;
  EXPECT_EQ(sfac_sparse_get_shape(m, &t.rows, &t.cols, &nnz), SFAC_OK);
  t.r.resize(static_cast<size_t>(nnz));
  t.c.resize(static_cast<size_t>(nnz));
  t.v.resize(static_cast<size_t>(nnz));
  EXPECT_EQ(sfac_sparse_download_coo(m, t.r.data(), t.c.data(), t.v.data(),
                                     static_cast<int64_t>(t.r.size())),
            SFAC_OK);
  return t;
}

const Data& planted() {
  static const Data data = [] {
    Context cpu = make_cpu_context(0, test_seed());
    sfac_sparse* all = nullptr;
    EXPECT_EQ(sfac_synthesize_ratings(cpu.get(), SFAC_FEEDBACK_EXPLICIT, 8000, 3000, 600000, 4, 0.5,
                                      0.3, &all, nullptr, nullptr),
              SFAC_OK)
        << sfac_last_error();
    Sparse owner(all);
    sfac_sparse *train = nullptr, *test = nullptr;
    EXPECT_EQ(sfac_split_random(all, 0.1, test_seed(), &train, &test), SFAC_OK);
    Sparse a(train), b(test);
    return Data{triplets_of(train), triplets_of(test)};
  }();
  return data;
}

// Held-out RMSE after 25 epochs (lambda 0.05, cuMF_SGD's Netflix schedule) under a device
// memory limit (0: none).
double held_out_rmse(sfac_backend backend, int64_t rank, sfac_dtype dtype, int64_t memory_limit = 0,
                     sfac_sgd_schedule schedule = SFAC_SGD_HOGWILD) {
  const Data& d = planted();
  Context ctx = make_context(backend, 0, 77);
  Sparse train = create_sparse(ctx.get(), d.train);
  Sparse test = create_sparse(ctx.get(), d.test);
  sfac_train_options* raw = nullptr;
  EXPECT_EQ(sfac_train_options_create(SFAC_ALGO_SGD, &raw), SFAC_OK);
  Options o(raw);
  EXPECT_EQ(sfac_train_options_set_int(raw, SFAC_OPT_RANK, rank), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_int(raw, SFAC_OPT_ITERATIONS, 25), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_int(raw, SFAC_OPT_FACTOR_DTYPE, dtype), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_double(raw, SFAC_OPT_LAMBDA, 0.05), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_int(raw, SFAC_OPT_DEVICE_MEMORY_LIMIT, memory_limit), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_int(raw, SFAC_OPT_SGD_SCHEDULE, schedule), SFAC_OK);
  sfac_model* m = nullptr;
  EXPECT_EQ(sfac_train(ctx.get(), train.get(), raw, &m), SFAC_OK) << sfac_last_error();
  Model model(m);
  double rmse = NAN;
  if (m) {
    EXPECT_EQ(sfac_model_evaluate(m, test.get(), &rmse, nullptr), SFAC_OK);
  }
  return rmse;
}

// The training ratings take 8 bytes each on the device (4.3 MB here) and the rest of the
// trainer about 3 MB at rank 32: a 4 MB limit leaves room for two buffers of a tenth of the
// samples, so the samples are streamed through the device in slabs.
constexpr int64_t kStreamingLimit = int64_t{4} << 20;
// Deterministic mode cuts a user's ratings by item range too (up to 64 chunks a user), which the
// trainer budgets for: about 9.4 MB besides the samples here.
constexpr int64_t kDeterministicStreamingLimit = int64_t{10} << 20;
// The wavefront cuts a user's ratings by item range (182 ranges here, about 500,000 chunks of
// 12 bytes): about 10 MB besides the samples.
constexpr int64_t kWavefrontStreamingLimit = int64_t{12} << 20;

class CudaSgd : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    const std::string missing = backend_missing(SFAC_BACKEND_CUDA);
    if (!missing.empty()) GTEST_SKIP() << missing;
  }
};

// The CPU trainer's held-out error with float32 factors, per rank (computed once).
double cpu_rmse(int64_t rank) {
  static std::map<int64_t, double> cache;
  if (!cache.count(rank)) cache[rank] = held_out_rmse(SFAC_BACKEND_CPU, rank, SFAC_DTYPE_FLOAT32);
  return cache[rank];
}

TEST_P(CudaSgd, ReachesTheCpuTrainersHeldOutError) {
  const Case c = GetParam();
  const double cpu = cpu_rmse(c.rank);
  const double gpu = held_out_rmse(SFAC_BACKEND_CUDA, c.rank, c.dtype);
  EXPECT_LT(cpu, 0.7) << "the CPU trainer itself is far from the noise floor (sigma 0.5)";
  EXPECT_LE(gpu, cpu * 1.02) << "CPU float32 " << cpu;
  EXPECT_GT(gpu, 0.45) << "below the noise floor: the held-out error is not what it seems";
}

// The wavefront schedule (item ranges locked per worker) is held to the same error.
TEST_P(CudaSgd, WavefrontReachesTheCpuTrainersHeldOutError) {
  const Case c = GetParam();
  const double cpu = cpu_rmse(c.rank);
  const double gpu = held_out_rmse(SFAC_BACKEND_CUDA, c.rank, c.dtype, 0, SFAC_SGD_WAVEFRONT);
  EXPECT_LE(gpu, cpu * 1.02) << "CPU float32 " << cpu;
  EXPECT_GT(gpu, 0.45) << "below the noise floor: the held-out error is not what it seems";
}

INSTANTIATE_TEST_SUITE_P(
    RanksAndStorage, CudaSgd,
    ::testing::Values(Case{8, SFAC_DTYPE_FLOAT32}, Case{8, SFAC_DTYPE_FLOAT16},
                      Case{8, SFAC_DTYPE_BFLOAT16}, Case{32, SFAC_DTYPE_FLOAT32},
                      Case{32, SFAC_DTYPE_FLOAT16}, Case{32, SFAC_DTYPE_BFLOAT16},
                      Case{33, SFAC_DTYPE_FLOAT32}, Case{33, SFAC_DTYPE_FLOAT16},
                      Case{100, SFAC_DTYPE_FLOAT32}, Case{100, SFAC_DTYPE_FLOAT16},
                      Case{100, SFAC_DTYPE_BFLOAT16}, Case{128, SFAC_DTYPE_FLOAT32},
                      Case{128, SFAC_DTYPE_FLOAT16}, Case{128, SFAC_DTYPE_BFLOAT16},
                      Case{256, SFAC_DTYPE_FLOAT32}, Case{256, SFAC_DTYPE_FLOAT16},
                      Case{256, SFAC_DTYPE_BFLOAT16}),
    case_name);

class CudaSgdLimits : public CudaSgd {};

TEST_F(CudaSgdLimits, AMemoryLimitBelowTheDataIsOutOfMemoryAndTheContextStaysUsable) {
  const Data& d = planted();
  Context ctx = make_context(SFAC_BACKEND_CUDA, 0, 1);
  Sparse r = create_sparse(ctx.get(), d.test);
  sfac_train_options* raw = nullptr;
  SFAC_ASSERT_OK(sfac_train_options_create(SFAC_ALGO_SGD, &raw));
  Options o(raw);
  SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_DEVICE_MEMORY_LIMIT, 100000));
  sfac_trainer* t = nullptr;
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_MEMORY, "device memory limit of 100000 bytes",
                    sfac_trainer_create(ctx.get(), r.get(), raw, &t));
  EXPECT_EQ(t, nullptr);
  SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_DEVICE_MEMORY_LIMIT, 0));
  sfac_model* m = nullptr;
  SFAC_ASSERT_OK(sfac_train(ctx.get(), r.get(), raw, &m));
  sfac_model_destroy(m);
}

TEST_F(CudaSgdLimits, SamplesStreamedInSlabsReachTheInMemoryError) {
  for (sfac_dtype dtype : {SFAC_DTYPE_FLOAT32, SFAC_DTYPE_FLOAT16}) {
    const double in_memory = held_out_rmse(SFAC_BACKEND_CUDA, 32, dtype);
    const double streamed = held_out_rmse(SFAC_BACKEND_CUDA, 32, dtype, kStreamingLimit);
    EXPECT_LE(streamed, in_memory * 1.02) << "dtype " << dtype;
    EXPECT_GE(streamed, in_memory * 0.98) << "dtype " << dtype;
  }
}

// Users with many times a worker's fair share of the ratings (skew 0.8 on 2,000 users: the
// heaviest has about 3,600 of 245,000, a worker's mean share is under 1,000) are cut between
// workers, each adding a weighted change to their row: training stays stable and reaches the
// CPU trainer's error.
TEST_F(CudaSgdLimits, UsersSplitBetweenWorkersReachTheCpuTrainersError) {
  Triplets train, test;
  {
    Context cpu = make_cpu_context(0, test_seed());
    sfac_sparse* raw = nullptr;
    SFAC_ASSERT_OK(sfac_synthesize_ratings(cpu.get(), SFAC_FEEDBACK_EXPLICIT, 2000, 4000, 600000, 4,
                                           0.5, 0.8, &raw, nullptr, nullptr));
    Sparse all(raw);
    sfac_sparse *a = nullptr, *b = nullptr;
    SFAC_ASSERT_OK(sfac_split_random(raw, 0.1, test_seed(), &a, &b));
    Sparse ka(a), kb(b);
    train = triplets_of(a);
    test = triplets_of(b);
  }
  int64_t heaviest = 0;
  std::map<int32_t, int64_t> per_user;
  for (int32_t u : train.r) heaviest = std::max(heaviest, ++per_user[u]);
  ASSERT_GT(heaviest, 2 * static_cast<int64_t>(train.r.size()) / 256)
      << "no user with twice the mean share of 256 workers";
  double rmse[2] = {0, 0};
  for (sfac_backend backend : {SFAC_BACKEND_CPU, SFAC_BACKEND_CUDA}) {
    Context ctx = make_context(backend, 0, 11);
    Sparse tr = create_sparse(ctx.get(), train), te = create_sparse(ctx.get(), test);
    sfac_train_options* raw = nullptr;
    SFAC_ASSERT_OK(sfac_train_options_create(SFAC_ALGO_SGD, &raw));
    Options o(raw);
    SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_RANK, 32));
    SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_SGD_WORKERS, 256));
    sfac_model* m = nullptr;
    SFAC_ASSERT_OK(sfac_train(ctx.get(), tr.get(), raw, &m));
    Model model(m);
    SFAC_ASSERT_OK(sfac_model_evaluate(m, te.get(), &rmse[backend == SFAC_BACKEND_CUDA], nullptr));
  }
  EXPECT_LT(rmse[0], 0.7) << "the CPU trainer itself is far from the noise floor (sigma 0.5)";
  EXPECT_LE(rmse[1], rmse[0] * 1.02) << "CPU " << rmse[0];
}

TEST_F(CudaSgdLimits, WavefrontStreamedInSlabsReachesTheInMemoryError) {
  const double in_memory =
      held_out_rmse(SFAC_BACKEND_CUDA, 32, SFAC_DTYPE_FLOAT16, 0, SFAC_SGD_WAVEFRONT);
  const double streamed = held_out_rmse(SFAC_BACKEND_CUDA, 32, SFAC_DTYPE_FLOAT16,
                                        kWavefrontStreamingLimit, SFAC_SGD_WAVEFRONT);
  EXPECT_LE(streamed, in_memory * 1.02);
  EXPECT_GE(streamed, in_memory * 0.98);
}

// Many more workers than item ranges (64 workers, 20 items: 20 locks): most wait at every step,
// and every cell still runs once per epoch: the loss falls as on the CPU trainer and ends within
// 20% of the CPU trainer's (planted rank 2, noise 0.1; the order of the updates alone moves the
// loss after 20 epochs by several percent).
TEST_F(CudaSgdLimits, WavefrontWithMoreWorkersThanItemRangesTrains) {
  Triplets t;
  {
    Context cpu = make_cpu_context(0, test_seed());
    sfac_sparse* raw = nullptr;
    SFAC_ASSERT_OK(sfac_synthesize_ratings(cpu.get(), SFAC_FEEDBACK_EXPLICIT, 3000, 20, 30000, 2,
                                           0.1, 0.3, &raw, nullptr, nullptr));
    Sparse all(raw);
    t = triplets_of(raw);
  }
  double final_loss[2] = {0, 0};
  for (sfac_backend backend : {SFAC_BACKEND_CPU, SFAC_BACKEND_CUDA}) {
    SCOPED_TRACE(backend == SFAC_BACKEND_CPU ? "CPU" : "CUDA");
    Context ctx = make_context(backend, 0, 3);
    Sparse train = create_sparse(ctx.get(), t);
    sfac_train_options* raw = nullptr;
    SFAC_ASSERT_OK(sfac_train_options_create(SFAC_ALGO_SGD, &raw));
    Options o(raw);
    SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_RANK, 4));
    SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_SGD_SCHEDULE, SFAC_SGD_WAVEFRONT));
    SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_SGD_WORKERS, 64));
    sfac_trainer* tr = nullptr;
    SFAC_ASSERT_OK(sfac_trainer_create(ctx.get(), train.get(), raw, &tr));
    Trainer trainer(tr);
    double first = 0.0;
    for (int epoch = 1; epoch <= 20; ++epoch) {
      SFAC_ASSERT_OK(sfac_trainer_run(tr, 1, nullptr));
      double loss = 0.0;
      SFAC_ASSERT_OK(sfac_trainer_get_loss(tr, &loss));
      ASSERT_TRUE(std::isfinite(loss)) << "epoch " << epoch;
      if (epoch == 1) first = loss;
      final_loss[backend == SFAC_BACKEND_CUDA] = loss;
    }
    EXPECT_LT(final_loss[backend == SFAC_BACKEND_CUDA], 0.5 * first);
  }
  EXPECT_LE(final_loss[1], final_loss[0] * 1.2) << "CPU " << final_loss[0];
}

// Deterministic mode runs the same slabs (the grid's diagonals) in the same order whether the
// samples stay on the device or are streamed: the same model and loss to the last bit.
TEST_F(CudaSgdLimits, DeterministicTrainingIsTheSameStreamedOrNot) {
  const Data& d = planted();
  std::vector<float> factors[2];
  double losses[2] = {0, 0};
  for (int streamed : {0, 1}) {
    Context ctx = make_context(SFAC_BACKEND_CUDA, 0, 5);
    Sparse train = create_sparse(ctx.get(), d.train);
    sfac_train_options* raw = nullptr;
    SFAC_ASSERT_OK(sfac_train_options_create(SFAC_ALGO_SGD, &raw));
    Options o(raw);
    SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_RANK, 32));
    SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_DETERMINISTIC, 1));
    SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_USE_BIASES, 1));
    SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_DEVICE_MEMORY_LIMIT,
                                              streamed ? kDeterministicStreamingLimit : 0));
    sfac_trainer* t = nullptr;
    SFAC_ASSERT_OK(sfac_trainer_create(ctx.get(), train.get(), raw, &t));
    Trainer trainer(t);
    SFAC_ASSERT_OK(sfac_trainer_run(t, 3, nullptr));
    SFAC_ASSERT_OK(sfac_trainer_get_loss(t, &losses[streamed]));
    sfac_model* m = nullptr;
    SFAC_ASSERT_OK(sfac_trainer_get_model(t, &m));
    Model model(m);
    factors[streamed].resize(static_cast<size_t>(d.train.rows * 32));
    SFAC_ASSERT_OK(sfac_model_get_user_factors(m, factors[streamed].data(),
                                               static_cast<int64_t>(factors[streamed].size())));
  }
  EXPECT_EQ(factors[0], factors[1]);
  EXPECT_EQ(losses[0], losses[1]);
}

// SGD on a CUDA context takes ratings in host memory (a CPU context's), the way to train on
// ratings larger than the device: deterministic training gives the model of the same ratings on
// the device bit for bit, streamed or not. ALS reads its ratings on the device and refuses them.
TEST_F(CudaSgdLimits, RatingsInHostMemoryGiveTheModelOfTheSameRatingsOnTheDevice) {
  const Data& d = planted();
  Context cpu = make_cpu_context(0, 1);
  Sparse host = create_sparse(cpu.get(), d.train);
  std::vector<float> factors[3];  // device ratings; host ratings; host ratings streamed
  for (int variant : {0, 1, 2}) {
    Context ctx = make_context(SFAC_BACKEND_CUDA, 0, 5);
    Sparse on_device = create_sparse(ctx.get(), d.train);
    sfac_train_options* raw = nullptr;
    SFAC_ASSERT_OK(sfac_train_options_create(SFAC_ALGO_SGD, &raw));
    Options o(raw);
    SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_RANK, 32));
    SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_ITERATIONS, 2));
    SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_DETERMINISTIC, 1));
    SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_DEVICE_MEMORY_LIMIT,
                                              variant == 2 ? kDeterministicStreamingLimit : 0));
    sfac_model* m = nullptr;
    SFAC_ASSERT_OK(sfac_train(ctx.get(), variant == 0 ? on_device.get() : host.get(), raw, &m));
    Model model(m);
    factors[variant].resize(static_cast<size_t>(d.train.rows * 32));
    SFAC_ASSERT_OK(sfac_model_get_user_factors(m, factors[variant].data(),
                                               static_cast<int64_t>(factors[variant].size())));
    if (variant == 1) {
      sfac_train_options* als = nullptr;
      SFAC_ASSERT_OK(sfac_train_options_create(SFAC_ALGO_ALS, &als));
      Options a(als);
      sfac_model* none = nullptr;
      SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "another backend",
                        sfac_train(ctx.get(), host.get(), als, &none));
      EXPECT_EQ(none, nullptr);
    }
  }
  EXPECT_EQ(factors[1], factors[0]);
  EXPECT_EQ(factors[2], factors[0]);
}

TEST_F(CudaSgdLimits, RanksAboveTheSupportedOnesAreRejectedWithTheLimit) {
  const Data& d = planted();
  Context ctx = make_context(SFAC_BACKEND_CUDA, 0, 1);
  Sparse r = create_sparse(ctx.get(), d.test);
  sfac_train_options* raw = nullptr;
  SFAC_ASSERT_OK(sfac_train_options_create(SFAC_ALGO_SGD, &raw));
  Options o(raw);
  SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_RANK, 8192));
  sfac_model* m = nullptr;
  SFAC_EXPECT_ERROR(SFAC_ERR_UNSUPPORTED, "train on a CPU context",
                    sfac_train(ctx.get(), r.get(), raw, &m));
  EXPECT_EQ(m, nullptr);
  SFAC_ASSERT_OK(sfac_train_options_set_int(raw, SFAC_OPT_RANK, 3));
  SFAC_ASSERT_OK(sfac_train(ctx.get(), r.get(), raw, &m));
  sfac_model_destroy(m);
}

}  // namespace
