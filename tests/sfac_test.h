// Shared test helpers: owning wrappers for handles, status assertions, random data.
#pragma once

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sparsefac/sparsefac.h"

namespace sfac_test {

struct ContextDeleter {
  void operator()(sfac_context* p) const { sfac_context_destroy(p); }
};
struct SparseDeleter {
  void operator()(sfac_sparse* p) const { sfac_sparse_destroy(p); }
};
struct DenseDeleter {
  void operator()(sfac_dense* p) const { sfac_dense_destroy(p); }
};
struct IdMapDeleter {
  void operator()(sfac_idmap* p) const { sfac_idmap_destroy(p); }
};
struct PlanDeleter {
  void operator()(sfac_sddmm_plan* p) const { sfac_sddmm_plan_destroy(p); }
};
struct OptionsDeleter {
  void operator()(sfac_train_options* p) const { sfac_train_options_destroy(p); }
};
struct ModelDeleter {
  void operator()(sfac_model* p) const { sfac_model_destroy(p); }
};
struct TrainerDeleter {
  void operator()(sfac_trainer* p) const { sfac_trainer_destroy(p); }
};
using Context = std::unique_ptr<sfac_context, ContextDeleter>;
using Sparse = std::unique_ptr<sfac_sparse, SparseDeleter>;
using Dense = std::unique_ptr<sfac_dense, DenseDeleter>;
using IdMap = std::unique_ptr<sfac_idmap, IdMapDeleter>;
using Plan = std::unique_ptr<sfac_sddmm_plan, PlanDeleter>;
using Options = std::unique_ptr<sfac_train_options, OptionsDeleter>;
using Model = std::unique_ptr<sfac_model, ModelDeleter>;
using Trainer = std::unique_ptr<sfac_trainer, TrainerDeleter>;

// Asserts a status and, on failure, prints the library's message.
#define SFAC_EXPECT_STATUS(expected, call)                                                        \
  do {                                                                                            \
    const sfac_status sfac_test_status_ = (call);                                                 \
    EXPECT_EQ(sfac_test_status_, (expected))                                                      \
        << #call << " -> " << sfac_status_string(sfac_test_status_) << ": " << sfac_last_error(); \
  } while (0)
#define SFAC_ASSERT_OK(call)                                                                      \
  do {                                                                                            \
    const sfac_status sfac_test_status_ = (call);                                                 \
    ASSERT_EQ(sfac_test_status_, SFAC_OK)                                                         \
        << #call << " -> " << sfac_status_string(sfac_test_status_) << ": " << sfac_last_error(); \
  } while (0)

// Expects a status and a last-error message containing `needle`.
#define SFAC_EXPECT_ERROR(expected, needle, call)                             \
  do {                                                                        \
    sfac_clear_last_error();                                                  \
    SFAC_EXPECT_STATUS(expected, call);                                       \
    EXPECT_NE(std::string(sfac_last_error()).find(needle), std::string::npos) \
        << "message was: " << sfac_last_error();                              \
  } while (0)

// A test matrix as COO triplets (any order): r[e], c[e], v[e] per entry.
struct Triplets {
  int64_t rows = 0, cols = 0;
  std::vector<int32_t> r, c;
  std::vector<float> v;
};

// sfac_sparse_create_coo on the triplets; a failure fails the test.
inline Sparse create_sparse(sfac_context* ctx, const Triplets& t,
                            uint32_t flags = SFAC_SPARSE_DEFAULT) {
  sfac_sparse* m = nullptr;
  EXPECT_EQ(sfac_sparse_create_coo(ctx, t.rows, t.cols, static_cast<int64_t>(t.r.size()),
                                   t.r.data(), t.c.data(), t.v.data(), flags, &m),
            SFAC_OK)
      << sfac_last_error();
  return Sparse(m);
}

// sfac_sddmm_plan_create on a pattern; a failure fails the test (the plan is then null).
inline Plan make_plan(sfac_context* ctx, const sfac_sparse* pattern, int64_t k,
                      sfac_sddmm_algorithm algorithm) {
  sfac_sddmm_plan* out = nullptr;
  EXPECT_EQ(sfac_sddmm_plan_create(ctx, pattern, k, algorithm, &out), SFAC_OK) << sfac_last_error();
  return Plan(out);
}

// The algorithm a plan runs; a failure fails the test.
inline sfac_sddmm_algorithm algorithm_of(const sfac_sddmm_plan* plan) {
  sfac_sddmm_algorithm out = SFAC_SDDMM_ALG_AUTO;
  EXPECT_EQ(sfac_sddmm_plan_get_algorithm(plan, &out), SFAC_OK) << sfac_last_error();
  return out;
}

// fp64 dot of row i of a and row j of b (row-major, k columns), and the sum of the products'
// magnitudes that scales the tolerance.
struct Dot {
  double value = 0.0, magnitude = 0.0;
};

inline Dot reference_dot(const std::vector<float>& a, const std::vector<float>& b, int64_t i,
                         int64_t j, int64_t k) {
  Dot d;
  for (int64_t t = 0; t < k; ++t) {
    const double x = double(a[i * k + t]) * b[j * k + t];
    d.value += x;
    d.magnitude += std::abs(x);
  }
  return d;
}

// A context of `backend` on device 0; a failure fails the test (the context is then null).
inline Context make_context(sfac_backend backend, int threads = 0, uint64_t seed = 42) {
  sfac_context* ctx = nullptr;
  EXPECT_EQ(sfac_context_create(backend, 0, threads, seed, &ctx), SFAC_OK) << sfac_last_error();
  return Context(ctx);
}

inline Context make_cpu_context(int threads = 0, uint64_t seed = 42) {
  return make_context(SFAC_BACKEND_CPU, threads, seed);
}

// Why contexts of `backend` cannot be made on this machine (the library's message: a build
// without CUDA, no driver or no device), or "" when they can. Only the CUDA backend can be
// missing; a CUDA context that fails although sfac_cuda_device_count sees a device is not
// "missing" (the test's own make_context then fails).
inline std::string backend_missing(sfac_backend backend) {
  if (backend != SFAC_BACKEND_CUDA) return "";
  int devices = 0;
  if (sfac_cuda_device_count(&devices) == SFAC_OK && devices > 0) return "";
  sfac_context* ctx = nullptr;
  const sfac_status status = sfac_context_create(backend, 0, 1, 0, &ctx);
  if (status == SFAC_OK) {
    sfac_context_destroy(ctx);
    return "";
  }
  return std::string(sfac_status_string(status)) + ": " + sfac_last_error();
}

// "Cpu", "Cuda": test name suffixes for tests parameterized over the backend.
inline std::string backend_name(const ::testing::TestParamInfo<sfac_backend>& info) {
  switch (info.param) {
    case SFAC_BACKEND_CPU:
      return "Cpu";
    case SFAC_BACKEND_CUDA:
      return "Cuda";
    default:
      return "Auto";
  }
}

// A fresh seed per test run unless SFAC_TEST_SEED is set; printed so a failure can be replayed.
inline uint64_t test_seed() {
  static const uint64_t seed = [] {
    const char* env = std::getenv("SFAC_TEST_SEED");
    const uint64_t s = env ? std::stoull(env) : std::random_device{}();
    std::printf("[sfac_test] SFAC_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

// The address space the process has mapped (VmSize), in bytes; 0 where /proc does not say.
inline uint64_t mapped_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
  }
  return 0;
}

// For EXPECT_EXIT(..., ExitedWithCode(0), ""): in the child process, limits the address space
// to `headroom` bytes beyond what it has mapped already (its libraries: a CUDA build maps cuBLAS
// and cuSPARSE, some 800 MB), runs `check` and exits 0 when it returns true, 1 when not (2: no
// limit set). Tests that use it skip under AddressSanitizer, which reserves more address space.
template <typename Check>
[[noreturn]] void exit_with_check_under_address_limit(uint64_t headroom, Check check) {
  const uint64_t bytes = mapped_bytes() + headroom;
  const rlimit bound{static_cast<rlim_t>(bytes), static_cast<rlim_t>(bytes)};
  if (setrlimit(RLIMIT_AS, &bound) != 0) std::exit(2);
  std::exit(check() ? 0 : 1);
}

// A scratch directory of the test, removed with it.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              (name + "-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()))) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// After failed calls: the context still builds a small matrix.
inline void expect_context_usable(sfac_context* ctx) {
  Sparse small = create_sparse(ctx, Triplets{2, 2, {0, 1}, {1, 0}, {1.0f, 2.0f}});
  int64_t nnz = 0;
  SFAC_ASSERT_OK(sfac_sparse_get_shape(small.get(), nullptr, nullptr, &nnz));
  EXPECT_EQ(nnz, 2);
}

}  // namespace sfac_test
