// SFAC_BACKEND_AUTO: CUDA where a device can be used, the CPU otherwise, and the CPU per call for
// what an AUTO context's CUDA backend declines.
#include <cmath>
#include <string>

#include "model_queries.h"
#include "sfac_test.h"

using namespace sfac_test;

namespace {

int cuda_devices() {
  int devices = 0;
  EXPECT_EQ(sfac_cuda_device_count(&devices), SFAC_OK);
  return devices;
}

sfac_backend backend_of(const sfac_context* ctx) {
  sfac_backend backend = SFAC_BACKEND_AUTO;
  EXPECT_EQ(sfac_context_get_backend(ctx, &backend), SFAC_OK) << sfac_last_error();
  return backend;
}

// Deterministic SGD options of `rank` for a few epochs.
Options sgd_options(int64_t rank) {
  sfac_train_options* raw = nullptr;
  EXPECT_EQ(sfac_train_options_create(SFAC_ALGO_SGD, &raw), SFAC_OK);
  Options o(raw);
  EXPECT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_RANK, rank), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_ITERATIONS, 2), SFAC_OK);
  EXPECT_EQ(sfac_train_options_set_int(o.get(), SFAC_OPT_DETERMINISTIC, 1), SFAC_OK);
  return o;
}

}  // namespace

TEST(AutoBackend, ResolvesToCudaExactlyWhereADeviceIsUsable) {
  Context ctx = make_context(SFAC_BACKEND_AUTO, 1);
  ASSERT_NE(ctx.get(), nullptr);
  EXPECT_EQ(backend_of(ctx.get()), cuda_devices() > 0 ? SFAC_BACKEND_CUDA : SFAC_BACKEND_CPU);
}

TEST(AutoBackend, ADeviceOrdinalThatDoesNotExistFallsBackToTheCpu) {
  sfac_context* raw = nullptr;
  SFAC_ASSERT_OK(sfac_context_create(SFAC_BACKEND_AUTO, 64, 1, 0, &raw));
  Context ctx(raw);
  EXPECT_EQ(backend_of(ctx.get()), SFAC_BACKEND_CPU);
  // Named, the same ordinal is an error.
  raw = nullptr;
  EXPECT_NE(sfac_context_create(SFAC_BACKEND_CUDA, 64, 1, 0, &raw), SFAC_OK);
  EXPECT_EQ(raw, nullptr);
}

// A rank above the CUDA SGD trainer's limit: a CUDA context declines it, an AUTO context trains
// it on the host (the model the CPU backend trains from the same seed) and serves the model on
// the device.
TEST(AutoBackend, TrainsOnTheHostWhatTheCudaTrainerDeclines) {
  if (cuda_devices() == 0) GTEST_SKIP() << "no CUDA device: AUTO is the CPU backend here";
  constexpr int64_t kRank = 2049;
  Context cuda = make_context(SFAC_BACKEND_CUDA, 2, 7), automatic = make_context(SFAC_BACKEND_AUTO, 2, 7),
          cpu = make_context(SFAC_BACKEND_CPU, 2, 7);
  ASSERT_EQ(backend_of(automatic.get()), SFAC_BACKEND_CUDA);
  Options o = sgd_options(kRank);

  Sparse on_cuda = synthetic_ratings(cuda.get(), SFAC_FEEDBACK_EXPLICIT, 40, 30, 300);
  sfac_model* raw = nullptr;
  SFAC_EXPECT_ERROR(SFAC_ERR_UNSUPPORTED, "rank", sfac_train(cuda.get(), on_cuda.get(), o.get(), &raw));
  EXPECT_EQ(raw, nullptr);

  Sparse on_auto = synthetic_ratings(automatic.get(), SFAC_FEEDBACK_EXPLICIT, 40, 30, 300);
  Sparse on_cpu = synthetic_ratings(cpu.get(), SFAC_FEEDBACK_EXPLICIT, 40, 30, 300);
  SFAC_ASSERT_OK(sfac_train(automatic.get(), on_auto.get(), o.get(), &raw));
  Model from_auto(raw);
  SFAC_ASSERT_OK(sfac_train(cpu.get(), on_cpu.get(), o.get(), &raw));
  Model from_cpu(raw);
  const ModelState state = model_state(from_auto.get());
  EXPECT_EQ(state.rank, kRank);
  EXPECT_TRUE(state == model_state(from_cpu.get()));

  // The model stays the AUTO context's: its queries run on the device, with the host's lists
  // (scores summed in another order: equal to a few units in the last place).
  const std::vector<int32_t> users = {0, 5, 39};
  const TopN device = recommend(from_auto.get(), users, 5);
  const TopN host = recommend(from_cpu.get(), users, 5);
  EXPECT_EQ(device.items, host.items);
  for (size_t i = 0; i < host.scores.size(); ++i) {
    EXPECT_NEAR(device.scores[i], host.scores[i], 1e-4 * (1.0 + std::abs(host.scores[i])));
  }
}
