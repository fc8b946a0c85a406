// The CUDA ALS trainer against the CPU trainer from the same seed: one epoch gives the same
// factors and objective (explicit and implicit feedback, Cholesky and CG, ranks from 1 up to
// the ones whose systems no longer fit shared memory: 400). Skipped without a device; convergence on
// planted data is held to the CPU's assertions by the backend-parameterized tests of
// test_train.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/factor_storage.h"
#include "sfac_test.h"

using namespace sfac_test;

namespace {


struct Case {
  sfac_algorithm algorithm;
  sfac_solver solver;
  int64_t rank;
  bool biases;
  sfac_regularization regularization;
  sfac_dtype dtype = SFAC_DTYPE_FLOAT32;
  double alpha = 2.0;  // implicit feedback's confidence weight
  double plain_lambda = 1.0;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::string name = c.algorithm == SFAC_ALGO_IALS ? "Implicit" : "Explicit";
  name += c.solver == SFAC_SOLVER_CG ? "Cg" : "Cholesky";
  name += "Rank" + std::to_string(c.rank);
  if (c.biases) name += "Biases";
  if (c.regularization == SFAC_REG_WEIGHTED) name += "Weighted";
  if (c.dtype == SFAC_DTYPE_FLOAT16) name += "Float16";
  if (c.dtype == SFAC_DTYPE_BFLOAT16) name += "Bfloat16";
  if (c.alpha != 2.0) name += "Alpha" + std::to_string(static_cast<int>(c.alpha));
  return name;
}

// Ratings with power-law user activity, a user and an item without ratings, and one user who
// rated every item: explicit values around 3.5, implicit counts from 0 to 20.
Triplets ratings(bool implicit, uint64_t seed) {
  Triplets t{700, 400, {}, {}, {}};
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<char> seen(static_cast<size_t>(t.rows * t.cols), 0);
  auto add = [&](int32_t r, int32_t c) {
    if (r == 5 || c == 7 || seen[size_t(r) * t.cols + c]++) return;
    t.r.push_back(r);
    t.c.push_back(c);
    t.v.push_back(implicit ? std::floor(20.0 * std::pow(u(g), 3.0))
                           : static_cast<float>(3.5 + std::normal_distribution<double>()(g)));
  };
  for (int n = 0; n < 25000; ++n) {
    add(static_cast<int32_t>(t.rows * std::pow(u(g), 2.0)), static_cast<int32_t>(t.cols * u(g)));
  }
  for (int32_t c = 0; c < t.cols; ++c) add(1, c);
  return t;
}

Options options_for(const Case& c, int iterations) {
  sfac_train_options* raw = nullptr;
  EXPECT_EQ(sfac_train_options_create(c.algorithm, &raw), SFAC_OK) << sfac_last_error();
  Options o(raw);
  EXPECT_EQ(sfac_train_options_set_int(raw, SFAC_OPT_RANK, c.rank), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_int(raw, SFAC_OPT_ITERATIONS, iterations), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_int(raw, SFAC_OPT_ALS_SOLVER, c.solver), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_int(raw, SFAC_OPT_FACTOR_DTYPE, c.dtype), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_int(raw, SFAC_OPT_ALS_REGULARIZATION, c.regularization),
            SFAC_OK);
  // Plain lambda at its default leaves the systems of rows with fewer ratings than unknowns
  // so ill-conditioned that fp32 solves on two devices differ beyond the tolerance.
  if (c.regularization == SFAC_REG_PLAIN) {
    EXPECT_EQ(sfac_train_options_set_double(raw, SFAC_OPT_LAMBDA, c.plain_lambda), SFAC_OK);
  }
  if (c.algorithm == SFAC_ALGO_ALS) {
    EXPECT_EQ(sfac_train_options_set_int(raw, SFAC_OPT_USE_BIASES, c.biases), SFAC_OK);
  } else {
    EXPECT_EQ(sfac_train_options_set_double(raw, SFAC_OPT_IMPLICIT_ALPHA, c.alpha), SFAC_OK);
  }
  return o;
}

struct Trained {
  std::vector<float> users, items, user_bias, item_bias;
  double loss = 0.0;
};

Trained train_once(sfac_backend backend, const Triplets& data, const Case& c,
                   int64_t memory_limit = 0) {
  Trained out;
  Context ctx = make_context(backend, 0, 2024);
  if (!ctx) return out;
  Sparse r = create_sparse(ctx.get(), data);
  Options o = options_for(c, 1);
  EXPECT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_DEVICE_MEMORY_LIMIT, memory_limit),
            SFAC_OK);
  sfac_trainer* raw = nullptr;
  EXPECT_EQ(sfac_trainer_create(ctx.get(), r.get(), o.get(), &raw), SFAC_OK) << sfac_last_error();
  if (!raw) return out;
  int done = 0;
  EXPECT_EQ(sfac_trainer_run(raw, 1, &done), SFAC_OK) << sfac_last_error();
  EXPECT_EQ(sfac_trainer_get_loss(raw, &out.loss), SFAC_OK) << sfac_last_error();
  sfac_model* m = nullptr;
  EXPECT_EQ(sfac_trainer_get_model(raw, &m), SFAC_OK) << sfac_last_error();
  sfac_trainer_destroy(raw);
  Model model(m);
  if (!model) return out;
  out.users.resize(static_cast<size_t>(data.rows * c.rank));
  out.items.resize(static_cast<size_t>(data.cols * c.rank));
  EXPECT_EQ(
      sfac_model_get_user_factors(m, out.users.data(), static_cast<int64_t>(out.users.size())),
      SFAC_OK);
  EXPECT_EQ(
      sfac_model_get_item_factors(m, out.items.data(), static_cast<int64_t>(out.items.size())),
      SFAC_OK);
  int has = 0;
  float mean = 0.0f;
  out.user_bias.resize(static_cast<size_t>(data.rows));
  out.item_bias.resize(static_cast<size_t>(data.cols));
  EXPECT_EQ(sfac_model_get_biases(m, &has, &mean, out.user_bias.data(),
                                  static_cast<int64_t>(out.user_bias.size()), out.item_bias.data(),
                                  static_cast<int64_t>(out.item_bias.size())),
            SFAC_OK);
  if (!has) out.user_bias.clear(), out.item_bias.clear();
  return out;
}

// |got - want| / |want| in the Frobenius norm.
double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += double(want[i]) * want[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

class CudaAls : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    const std::string missing = backend_missing(SFAC_BACKEND_CUDA);
    if (!missing.empty()) GTEST_SKIP() << missing;
  }
};

TEST_P(CudaAls, OneEpochGivesTheCpuTrainersFactors) {
  const Case& c = GetParam();
  const Triplets data = ratings(c.algorithm == SFAC_ALGO_IALS, test_seed());
  const Trained cpu = train_once(SFAC_BACKEND_CPU, data, c);
  const Trained gpu = train_once(SFAC_BACKEND_CUDA, data, c);
  ASSERT_EQ(gpu.users.size(), cpu.users.size());
  ASSERT_EQ(gpu.items.size(), cpu.items.size());
  // With 16-bit storage both round the same solutions, and a value that sits at a rounding
  // boundary may land one unit of the type apart.
  const double tolerance = c.dtype == SFAC_DTYPE_FLOAT32   ? 1e-4
                           : c.dtype == SFAC_DTYPE_FLOAT16 ? 1e-3
                                                           : 4e-3;
  EXPECT_LT(relative_error(gpu.users, cpu.users), tolerance);
  EXPECT_LT(relative_error(gpu.items, cpu.items), tolerance);
  ASSERT_EQ(gpu.user_bias.size(), cpu.user_bias.size());
  if (c.biases) {
    EXPECT_LT(relative_error(gpu.user_bias, cpu.user_bias), tolerance);
    EXPECT_LT(relative_error(gpu.item_bias, cpu.item_bias), tolerance);
  }
  EXPECT_NEAR(gpu.loss / cpu.loss, 1.0, tolerance) << "gpu " << gpu.loss << " cpu " << cpu.loss;
  int64_t unrounded = 0;
  for (const std::vector<float>* v : {&gpu.users, &gpu.items}) {
    for (float x : *v) unrounded += sfac::round_to_storage(x, c.dtype) != x;
  }
  EXPECT_EQ(unrounded, 0) << "factors that are not values of the storage type";
  // The user and item without ratings.
  for (int64_t t = 0; t < c.rank; ++t) {
    EXPECT_EQ(gpu.users[5 * c.rank + t], 0.0f);
    EXPECT_EQ(gpu.items[7 * c.rank + t], 0.0f);
  }
}

constexpr sfac_algorithm kAls = SFAC_ALGO_ALS, kIals = SFAC_ALGO_IALS;
constexpr sfac_solver kChol = SFAC_SOLVER_CHOLESKY, kCg = SFAC_SOLVER_CG;
constexpr sfac_regularization kPlain = SFAC_REG_PLAIN, kWeighted = SFAC_REG_WEIGHTED;

INSTANTIATE_TEST_SUITE_P(
    Ranks, CudaAls,
    ::testing::Values(Case{kAls, kChol, 1, false, kWeighted}, Case{kAls, kChol, 3, true, kPlain},
                      Case{kAls, kChol, 8, false, kPlain}, Case{kAls, kChol, 16, true, kWeighted},
                      Case{kAls, kChol, 32, false, kWeighted},
                      Case{kAls, kChol, 33, true, kWeighted},
                      Case{kAls, kChol, 64, false, kPlain}, Case{kAls, kChol, 100, true, kWeighted},
                      Case{kAls, kChol, 128, false, kWeighted},
                      Case{kAls, kChol, 200, false, kWeighted},
                      // The largest systems of the tensor-core Cholesky (d = 272), and the
                      // smallest past it.
                      Case{kAls, kChol, 271, true, kPlain}, Case{kAls, kChol, 273, false, kPlain},
                      Case{kAls, kChol, 300, true, kWeighted},
                      Case{kAls, kChol, 400, true, kWeighted}, Case{kAls, kCg, 8, true, kWeighted},
                      Case{kAls, kCg, 100, false, kPlain}, Case{kAls, kCg, 256, false, kWeighted},
                      Case{kIals, kChol, 8, false, kPlain}, Case{kIals, kChol, 64, false, kPlain},
                      Case{kIals, kChol, 128, false, kWeighted},
                      Case{kIals, kChol, 256, false, kPlain}, Case{kIals, kCg, 16, false, kPlain},
                      Case{kIals, kCg, 100, false, kPlain}),
    case_name);

constexpr sfac_dtype kHalf = SFAC_DTYPE_FLOAT16, kBrain = SFAC_DTYPE_BFLOAT16;

// 16-bit storage: the tensor-core kernel of each type, weighted (implicit) and not, one and two
// 16 x 16 blocks of targets' columns, b summed on CUDA cores (d = 128, 144, 256), and the ranks
// past its shared memory and the CG solver (float32 kernels on the stored values).
INSTANTIATE_TEST_SUITE_P(
    Storage, CudaAls,
    ::testing::Values(Case{kAls, kChol, 8, false, kWeighted, kHalf},
                      Case{kAls, kChol, 16, true, kWeighted, kBrain},
                      Case{kAls, kChol, 32, false, kPlain, kHalf},
                      Case{kAls, kChol, 100, true, kWeighted, kHalf},
                      Case{kAls, kChol, 100, true, kWeighted, kBrain},
                      Case{kAls, kChol, 128, false, kWeighted, kHalf},
                      Case{kAls, kChol, 256, true, kWeighted, kHalf},
                      Case{kAls, kChol, 300, true, kWeighted, kBrain},
                      Case{kAls, kChol, 400, false, kWeighted, kHalf},
                      Case{kAls, kCg, 32, true, kWeighted, kHalf},
                      Case{kIals, kChol, 8, false, kPlain, kBrain},
                      Case{kIals, kChol, 64, false, kPlain, kHalf},
                      Case{kIals, kChol, 100, false, kPlain, kBrain},
                      Case{kIals, kChol, 128, false, kWeighted, kHalf},
                      Case{kIals, kChol, 144, false, kPlain, kBrain},
                      Case{kIals, kChol, 256, false, kPlain, kBrain},
                      // Targets and weights up to 1e5, past float16's range unless scaled
                      // (lambda scaled with alpha: the conditioning of alpha 2, lambda 1).
                      Case{kIals, kChol, 64, false, kPlain, kHalf, 5000.0, 2500.0},
                      Case{kIals, kChol, 128, false, kPlain, kHalf, 5000.0, 2500.0},
                      Case{kIals, kCg, 16, false, kPlain, kHalf}),
    case_name);

class CudaAlsLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string missing = backend_missing(SFAC_BACKEND_CUDA);
    if (!missing.empty()) GTEST_SKIP() << missing;
  }
};

// No regularization and rows with fewer ratings than unknowns: singular systems take the
// raised-diagonal retry (or become zero) instead of poisoning the model.
TEST_F(CudaAlsLimits, SingularSystemsStayFinite) {
  const Triplets data = ratings(false, test_seed());
  Context ctx = make_context(SFAC_BACKEND_CUDA, 0, 1);
  Sparse r = create_sparse(ctx.get(), data);
  Options o = options_for(Case{kAls, kChol, 48, false, kPlain}, 3);
  SFAC_ASSERT_OK(sfac_train_options_set_double(o.get(), SFAC_OPT_LAMBDA, 0.0));
  sfac_model* m = nullptr;
  SFAC_ASSERT_OK(sfac_train(ctx.get(), r.get(), o.get(), &m));
  Model model(m);
  std::vector<float> u(static_cast<size_t>(data.rows * 48));
  SFAC_ASSERT_OK(sfac_model_get_user_factors(m, u.data(), static_cast<int64_t>(u.size())));
  for (float x : u) ASSERT_TRUE(std::isfinite(x));
}

// Items with thousands of ratings (rows of several segments, added up in order) and a memory
// limit that leaves room for a few dozen systems of 200 unknowns (many batches per half-sweep).
// 3000 x 60, 85% dense: items with about 2550 ratings each.
Triplets long_item_rows() {
  Triplets data{3000, 60, {}, {}, {}};
  std::mt19937_64 g(test_seed());
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int32_t r = 0; r < data.rows; ++r) {
    for (int32_t c = 0; c < data.cols; ++c) {
      if (u(g) < 0.85) {
        data.r.push_back(r);
        data.c.push_back(c);
        data.v.push_back(static_cast<float>(1.0 + 4.0 * u(g)));
      }
    }
  }
  return data;
}

TEST_F(CudaAlsLimits, LongRowsAndSmallBatchesGiveTheCpuTrainersFactors) {
  const Triplets data = long_item_rows();
  const Case c{kAls, kChol, 200, true, kWeighted};
  const int64_t system = (201 * 201 + 201) * 4;
  // The trainer's data here is about 4 MB (values twice, factors, segments).
  const int64_t limit = (int64_t{8} << 20) + 30 * system;
  const Trained cpu = train_once(SFAC_BACKEND_CPU, data, c);
  const Trained gpu = train_once(SFAC_BACKEND_CUDA, data, c, limit);
  ASSERT_EQ(gpu.items.size(), cpu.items.size());
  EXPECT_LT(relative_error(gpu.users, cpu.users), 1e-4);
  EXPECT_LT(relative_error(gpu.items, cpu.items), 1e-4);
  EXPECT_LT(relative_error(gpu.item_bias, cpu.item_bias), 1e-4);
}

// Rows past kAlsCgLongRow ratings take the CG kernel's 16-warp blocks. Implicit item systems
// here (2550 ratings, the Gram of users solved by three CG steps from a random start) are so
// ill-conditioned at the default lambda that float32 CG results change beyond the tolerance when
// only the order of the ratings changes; lambda = 100 makes them well-posed.
TEST_F(CudaAlsLimits, LongRowsGiveTheCpuTrainersFactorsWithCg) {
  const Triplets data = long_item_rows();
  Case implicit{kIals, kCg, 100, false, kPlain};
  implicit.plain_lambda = 100.0;
  for (const Case& c : {Case{kAls, kCg, 33, true, kWeighted}, implicit}) {
    SCOPED_TRACE(case_name(::testing::TestParamInfo<Case>(c, 0)));
    const Trained cpu = train_once(SFAC_BACKEND_CPU, data, c);
    const Trained gpu = train_once(SFAC_BACKEND_CUDA, data, c);
    ASSERT_EQ(gpu.items.size(), cpu.items.size());
    EXPECT_LT(relative_error(gpu.users, cpu.users), 1e-4);
    EXPECT_LT(relative_error(gpu.items, cpu.items), 1e-4);
  }
}

TEST_F(CudaAlsLimits, AMemoryLimitBelowTheDataIsOutOfMemoryAndTheContextStaysUsable) {
  const Triplets data = ratings(false, 3);
  Context ctx = make_context(SFAC_BACKEND_CUDA, 0, 1);
  Sparse r = create_sparse(ctx.get(), data);
  Options o = options_for(Case{kAls, kChol, 16, false, kPlain}, 1);
  SFAC_ASSERT_OK(sfac_train_options_set_int(o.get(), SFAC_OPT_DEVICE_MEMORY_LIMIT, 100000));
  sfac_trainer* t = nullptr;
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_MEMORY, "device memory limit of 100000 bytes",
                    sfac_trainer_create(ctx.get(), r.get(), o.get(), &t));
  EXPECT_EQ(t, nullptr);
  SFAC_ASSERT_OK(sfac_train_options_set_int(o.get(), SFAC_OPT_DEVICE_MEMORY_LIMIT, 0));
  sfac_model* m = nullptr;
  SFAC_ASSERT_OK(sfac_train(ctx.get(), r.get(), o.get(), &m));
  sfac_model_destroy(m);
}

TEST_F(CudaAlsLimits, RanksAboveTheSupportedOnesAreRejectedWithTheLimit) {
  const Triplets data = ratings(false, 1);
  Context ctx = make_context(SFAC_BACKEND_CUDA, 0, 1);
  Sparse r = create_sparse(ctx.get(), data);
  Options o = options_for(Case{kAls, kChol, 4096, false, kPlain}, 1);
  sfac_model* m = nullptr;
  SFAC_EXPECT_ERROR(SFAC_ERR_UNSUPPORTED, "train on a CPU context",
                    sfac_train(ctx.get(), r.get(), o.get(), &m));
  EXPECT_EQ(m, nullptr);
  // The context is still usable.
  Options ok = options_for(Case{kAls, kChol, 4, false, kPlain}, 1);
  SFAC_ASSERT_OK(sfac_train(ctx.get(), r.get(), ok.get(), &m));
  sfac_model_destroy(m);
}

}  // namespace
