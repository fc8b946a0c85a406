// Fault injection: every host allocation of representative calls (read, create, SDDMM, train,
// save, load, copy of a model) fails in turn, the n-th for n = 1, 2, ... until a run completes
// without reaching its failure; on a CUDA device, every device allocation of create, SDDMM and
// training too.
// Each failure must come back as SFAC_ERR_OUT_OF_MEMORY with a message (or be absorbed by a
// fallback, the call then succeeding), leave no output behind, and leave the context and the
// objects made before usable; leaks are caught by the sanitizer build's leak check (host) and
// compute-sanitizer's (device). The hooks are fault_injection.h (host) and
// capi/testing_api.h (device).
#include <unistd.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "capi/testing_api.h"
#include "fault_injection.h"
#include "sfac_test.h"

using namespace sfac_test;

namespace {

struct HostAllocations {
  static void arm(int64_t n) { faults::arm(n); }
  static bool disarm() { return faults::disarm(); }
};

struct DeviceAllocations {
  static void arm(int64_t n) { sfac_testing_fail_device_allocation(n); }
  static bool disarm() { return sfac_testing_fail_device_allocation(0) != 0; }
};

// Runs `call` with the n-th allocation (of the kind `Faults` arms) failing for every n; `undo`
// releases what a successful run made. Returns how many failing runs were made.
template <typename Faults = HostAllocations, typename Call, typename Undo>
int64_t fail_each_allocation(const char* what, Call call, Undo undo) {
  for (int64_t n = 1; n < 1000000; ++n) {
    sfac_clear_last_error();
    Faults::arm(n);
    const sfac_status st = call();
    const bool injected = Faults::disarm();
    if (st == SFAC_OK) {
      undo();
      if (!injected) return n - 1;
      continue;  // the failure was absorbed (a fallback path)
    }
    EXPECT_TRUE(injected) << what << " failed without an injected fault: " << sfac_last_error();
    EXPECT_EQ(st, SFAC_ERR_OUT_OF_MEMORY) << what << ", allocation " << n << ": "
                                          << sfac_last_error();
    EXPECT_STRNE(sfac_last_error(), "") << what << ", allocation " << n;
    if (!injected) return n;
  }
  ADD_FAILURE() << what << ": no run completed";
  return 0;
}

class FaultInjection : public ::testing::Test {
 protected:
  Context ctx = make_cpu_context(2);
  Triplets data = [] {
    Triplets t{40, 30, {}, {}, {}};
    std::mt19937_64 g(test_seed());
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (int32_t r = 0; r < t.rows; ++r) {
      for (int32_t c = 0; c < t.cols; ++c) {
        if (u(g) < 0.3f || c == r % t.cols) {
          t.r.push_back(r);
          t.c.push_back(c);
          t.v.push_back(1.0f + 4.0f * u(g));
        }
      }
    }
    return t;
  }();
  ScratchDir dir{"sfac-faults"};
};

TEST_F(FaultInjection, ReadAndCreate) {
  const std::string path = dir.file("ratings.txt");
  {
    std::ofstream f(path);
    for (size_t e = 0; e < data.r.size(); ++e) {
      f << 1000 + data.r[e] << ' ' << 50 + data.c[e] << ' ' << data.v[e] << '\n';
    }
  }
  sfac_sparse* m = nullptr;
  sfac_idmap *rows = nullptr, *cols = nullptr;
  EXPECT_GT(fail_each_allocation(
                "sfac_read_sparse",
                [&] {
                  m = nullptr;
                  rows = cols = nullptr;
                  const sfac_status st = sfac_read_sparse(ctx.get(), path.c_str(), SFAC_FORMAT_AUTO,
                                                          SFAC_READ_REMAP_IDS, &m, &rows, &cols);
                  if (st != SFAC_OK) {
                    EXPECT_TRUE(m == nullptr && rows == nullptr && cols == nullptr);
                  }
                  return st;
                },
                [&] {
                  sfac_sparse_destroy(m);
                  sfac_idmap_destroy(rows);
                  sfac_idmap_destroy(cols);
                }),
            0);
  EXPECT_GT(fail_each_allocation(
                "sfac_sparse_create_coo",
                [&] {
                  m = nullptr;
                  const sfac_status st = sfac_sparse_create_coo(
                      ctx.get(), data.rows, data.cols, static_cast<int64_t>(data.r.size()),
                      data.r.data(), data.c.data(), data.v.data(), 0, &m);
                  if (st != SFAC_OK) {
                    EXPECT_EQ(m, nullptr);
                  }
                  return st;
                },
                [&] { sfac_sparse_destroy(m); }),
            0);
  expect_context_usable(ctx.get());
}

TEST_F(FaultInjection, SddmmTrainSaveAndLoad) {
  Sparse ratings = create_sparse(ctx.get(), data);
  const int64_t k = 4;
  std::vector<float> a(static_cast<size_t>(data.rows * k), 0.5f),
      b(static_cast<size_t>(data.cols * k), 0.25f);
  sfac_dense *da = nullptr, *db = nullptr;
  SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), data.rows, k, SFAC_DTYPE_FLOAT32, a.data(), &da));
  SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), data.cols, k, SFAC_DTYPE_FLOAT32, b.data(), &db));
  Dense a_owner(da), b_owner(db);
  Sparse out = create_sparse(ctx.get(), data);
  EXPECT_GT(fail_each_allocation(
                "sfac_sddmm",
                [&] {
                  return sfac_sddmm(ctx.get(), SFAC_SDDMM_SCALED, 1.0f, da, db, ratings.get(), 0.0f,
                                    out.get(), nullptr);
                },
                [] {}),
            0);

  sfac_train_options* raw = nullptr;
  SFAC_ASSERT_OK(sfac_train_options_create(SFAC_ALGO_ALS, &raw));
  Options o(raw);
  SFAC_ASSERT_OK(sfac_train_options_set_int(o.get(), SFAC_OPT_RANK, 3));
  SFAC_ASSERT_OK(sfac_train_options_set_int(o.get(), SFAC_OPT_ITERATIONS, 1));
  sfac_model* model = nullptr;
  EXPECT_GT(fail_each_allocation(
                "sfac_train",
                [&] {
                  model = nullptr;
                  const sfac_status st = sfac_train(ctx.get(), ratings.get(), o.get(), &model);
                  if (st != SFAC_OK) {
                    EXPECT_EQ(model, nullptr);
                  }
                  return st;
                },
                [&] { sfac_model_destroy(model); }),
            0);

  SFAC_ASSERT_OK(sfac_train(ctx.get(), ratings.get(), o.get(), &model));
  Model trained(model);
  const std::string path = dir.file("model.sfm");
  EXPECT_GE(fail_each_allocation(
                "sfac_model_save", [&] { return sfac_model_save(model, path.c_str()); }, [] {}),
            0);
  sfac_model* loaded = nullptr;
  EXPECT_GT(fail_each_allocation(
                "sfac_model_load",
                [&] {
                  loaded = nullptr;
                  const sfac_status st = sfac_model_load(ctx.get(), path.c_str(), &loaded);
                  if (st != SFAC_OK) {
                    EXPECT_EQ(loaded, nullptr);
                  }
                  return st;
                },
                [&] { sfac_model_destroy(loaded); }),
            0);
  sfac_model* copied = nullptr;
  EXPECT_GT(fail_each_allocation(
                "sfac_model_copy",
                [&] {
                  copied = nullptr;
                  const sfac_status st = sfac_model_copy(model, ctx.get(), &copied);
                  if (st != SFAC_OK) {
                    EXPECT_EQ(copied, nullptr);
                  }
                  return st;
                },
                [&] { sfac_model_destroy(copied); }),
            0);
  // The objects made before the failures still work.
  const int32_t u = 1, i = 2;
  float score = 0.0f;
  SFAC_ASSERT_OK(sfac_model_predict(model, 1, &u, &i, &score));
  EXPECT_TRUE(std::isfinite(score));
  expect_context_usable(ctx.get());
}

TEST_F(FaultInjection, DeviceAllocationsOfCreateSddmmAndTraining) {
  const std::string missing = backend_missing(SFAC_BACKEND_CUDA);
  if (!missing.empty()) GTEST_SKIP() << missing;
  Context gpu = make_context(SFAC_BACKEND_CUDA, 0, 7);
  sfac_sparse* made = nullptr;
  EXPECT_GT(fail_each_allocation<DeviceAllocations>(
                "sfac_sparse_create_coo on CUDA",
                [&] {
                  made = nullptr;
                  const sfac_status st = sfac_sparse_create_coo(
                      gpu.get(), data.rows, data.cols, static_cast<int64_t>(data.r.size()),
                      data.r.data(), data.c.data(), data.v.data(), SFAC_SPARSE_DEFAULT, &made);
                  if (st != SFAC_OK) {
                    EXPECT_EQ(made, nullptr);
                  }
                  return st;
                },
                [&] { sfac_sparse_destroy(made); }),
            0);

  Sparse ratings = create_sparse(gpu.get(), data);
  Sparse out = create_sparse(gpu.get(), data);
  const int64_t k = 8;
  std::vector<float> a(static_cast<size_t>(data.rows * k), 0.5f),
      b(static_cast<size_t>(data.cols * k), 0.25f);
  sfac_dense *da = nullptr, *db = nullptr;
  SFAC_ASSERT_OK(sfac_dense_create(gpu.get(), data.rows, k, SFAC_DTYPE_FLOAT32, a.data(), &da));
  SFAC_ASSERT_OK(sfac_dense_create(gpu.get(), data.cols, k, SFAC_DTYPE_FLOAT32, b.data(), &db));
  Dense a_owner(da), b_owner(db);
  SFAC_ASSERT_OK(sfac_sddmm(gpu.get(), SFAC_SDDMM_SCALED, 1.0f, da, db, ratings.get(), 0.0f,
                            out.get(), nullptr));
  std::vector<float> expected(data.v.size()), got(data.v.size(), -1.0f);
  SFAC_ASSERT_OK(sfac_sparse_download_coo(out.get(), nullptr, nullptr, expected.data(),
                                          static_cast<int64_t>(expected.size())));
  EXPECT_GE(fail_each_allocation<DeviceAllocations>(
                "sfac_sddmm on CUDA",
                [&] {
                  return sfac_sddmm(gpu.get(), SFAC_SDDMM_SCALED, 1.0f, da, db, ratings.get(),
                                    0.0f, out.get(), nullptr);
                },
                [] {}),
            0);

  for (const auto& [algorithm, dtype] :
       {std::pair(SFAC_ALGO_ALS, SFAC_DTYPE_FLOAT32), std::pair(SFAC_ALGO_IALS, SFAC_DTYPE_FLOAT16),
        std::pair(SFAC_ALGO_ALS, SFAC_DTYPE_BFLOAT16)}) {
    sfac_train_options* raw = nullptr;
    SFAC_ASSERT_OK(sfac_train_options_create(algorithm, &raw));
    Options o(raw);
    SFAC_ASSERT_OK(sfac_train_options_set_int(o.get(), SFAC_OPT_RANK, 5));
    SFAC_ASSERT_OK(sfac_train_options_set_int(o.get(), SFAC_OPT_ITERATIONS, 1));
    SFAC_ASSERT_OK(sfac_train_options_set_int(o.get(), SFAC_OPT_FACTOR_DTYPE, dtype));
    sfac_model* model = nullptr;
    EXPECT_GT(fail_each_allocation<DeviceAllocations>(
                  "sfac_train on CUDA",
                  [&] {
                    model = nullptr;
                    const sfac_status st = sfac_train(gpu.get(), ratings.get(), o.get(), &model);
                    if (st != SFAC_OK) {
                      EXPECT_EQ(model, nullptr);
                    }
                    return st;
                  },
                  [&] { sfac_model_destroy(model); }),
              0);
  }
  // The objects made before the failures still work.
  SFAC_ASSERT_OK(sfac_sddmm(gpu.get(), SFAC_SDDMM_SCALED, 1.0f, da, db, ratings.get(), 0.0f,
                            out.get(), nullptr));
  SFAC_ASSERT_OK(sfac_sparse_download_coo(out.get(), nullptr, nullptr, got.data(),
                                          static_cast<int64_t>(got.size())));
  EXPECT_EQ(got, expected);
  expect_context_usable(gpu.get());
}

}  // namespace
