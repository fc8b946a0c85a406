#include <cstring>
#include <string>
#include <thread>

#include "sfac_test.h"

using namespace sfac_test;

TEST(Version, HeaderMatchesLibrary) {
  EXPECT_STREQ(sfac_version_string(), SFAC_VERSION_STRING);
  EXPECT_EQ(sfac_version_number(), SFAC_VERSION_NUMBER);
  const std::string info = sfac_build_info();
  EXPECT_NE(info.find("\"version\":\"" SFAC_VERSION_STRING "\""), std::string::npos) << info;
}

TEST(Status, EveryStatusHasAName) {
  for (int s = SFAC_OK; s <= SFAC_ERR_INTERNAL; ++s) {
    EXPECT_STRNE(sfac_status_string(static_cast<sfac_status>(s)), "unknown status") << s;
  }
  EXPECT_STREQ(sfac_status_string(static_cast<sfac_status>(12345)), "unknown status");
}

TEST(Context, CpuContextReportsItsSettings) {
  sfac_context* raw = nullptr;
  SFAC_ASSERT_OK(sfac_context_create(SFAC_BACKEND_CPU, 0, 3, 1234, &raw));
  Context ctx(raw);
  sfac_backend backend = SFAC_BACKEND_AUTO;
  SFAC_ASSERT_OK(sfac_context_get_backend(ctx.get(), &backend));
  EXPECT_EQ(backend, SFAC_BACKEND_CPU);
  int threads = 0;
  SFAC_ASSERT_OK(sfac_context_get_num_threads(ctx.get(), &threads));
  EXPECT_EQ(threads, 3);
  uint64_t seed = 0;
  SFAC_ASSERT_OK(sfac_context_get_seed(ctx.get(), &seed));
  EXPECT_EQ(seed, 1234u);
  const char* name = nullptr;
  SFAC_ASSERT_OK(sfac_context_get_device_name(ctx.get(), &name));
  EXPECT_STREQ(name, "CPU (3 threads)");
  SFAC_EXPECT_STATUS(SFAC_OK, sfac_context_synchronize(ctx.get()));
}

TEST(Context, CpuContextsHaveNoStreams) {
  Context ctx = make_cpu_context(1);
  void* stream = &stream;  // anything non-null
  SFAC_ASSERT_OK(sfac_context_get_stream(ctx.get(), &stream));
  EXPECT_EQ(stream, nullptr);
  SFAC_EXPECT_STATUS(SFAC_OK, sfac_context_set_stream(ctx.get(), nullptr));
  int dummy = 0;
  SFAC_EXPECT_STATUS(SFAC_ERR_UNSUPPORTED, sfac_context_set_stream(ctx.get(), &dummy));
  EXPECT_NE(std::string(sfac_last_error()).find("no device streams"), std::string::npos)
      << sfac_last_error();
  SFAC_EXPECT_STATUS(SFAC_ERR_INVALID_ARGUMENT, sfac_context_get_stream(ctx.get(), nullptr));
  SFAC_EXPECT_STATUS(SFAC_ERR_INVALID_HANDLE, sfac_context_set_stream(nullptr, nullptr));
}

TEST(Context, ZeroThreadsMeansAllCores) {
  Context ctx = make_cpu_context(0);
  int threads = 0;
  SFAC_ASSERT_OK(sfac_context_get_num_threads(ctx.get(), &threads));
  EXPECT_GE(threads, 1);
}

TEST(Context, DeviceMemoryLimitIsKeptAndChecked) {
  Context ctx = make_cpu_context(1);
  int64_t limit = -1;
  SFAC_ASSERT_OK(sfac_context_get_device_memory_limit(ctx.get(), &limit));
  EXPECT_EQ(limit, 0);
  SFAC_ASSERT_OK(sfac_context_set_device_memory_limit(ctx.get(), int64_t{1} << 30));
  SFAC_ASSERT_OK(sfac_context_get_device_memory_limit(ctx.get(), &limit));
  EXPECT_EQ(limit, int64_t{1} << 30);
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "bytes = -1",
                    sfac_context_set_device_memory_limit(ctx.get(), -1));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out",
                    sfac_context_get_device_memory_limit(ctx.get(), nullptr));
}

TEST(Context, AutoResolvesToAConcreteBackend) {
  sfac_context* raw = nullptr;
  SFAC_ASSERT_OK(sfac_context_create(SFAC_BACKEND_AUTO, 0, 1, 0, &raw));
  Context ctx(raw);
  sfac_backend backend = SFAC_BACKEND_AUTO;
  SFAC_ASSERT_OK(sfac_context_get_backend(ctx.get(), &backend));
  EXPECT_NE(backend, SFAC_BACKEND_AUTO);
}

TEST(Context, CudaWithoutDeviceIsAnErrorNotACrash) {
  int devices = -1;
  SFAC_ASSERT_OK(sfac_cuda_device_count(&devices));
  EXPECT_GE(devices, 0);
  if (devices > 0) GTEST_SKIP() << "a CUDA device is present; this checks the no-device path";
  sfac_context* raw = nullptr;
  const sfac_status s = sfac_context_create(SFAC_BACKEND_CUDA, 0, 1, 0, &raw);
  EXPECT_TRUE(s == SFAC_ERR_UNSUPPORTED || s == SFAC_ERR_DEVICE) << sfac_status_string(s);
  EXPECT_EQ(raw, nullptr);
  EXPECT_GT(std::strlen(sfac_last_error()), 0u);
}

TEST(Context, RejectsBadArguments) {
  sfac_context* raw = nullptr;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out is NULL",
                    sfac_context_create(SFAC_BACKEND_CPU, 0, 1, 0, nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "unknown backend",
                    sfac_context_create(static_cast<sfac_backend>(7), 0, 1, 0, &raw));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "num_threads = -2",
                    sfac_context_create(SFAC_BACKEND_CPU, 0, -2, 0, &raw));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "device = -1",
                    sfac_context_create(SFAC_BACKEND_CPU, -1, 1, 0, &raw));
  EXPECT_EQ(raw, nullptr);
}

TEST(Context, NullAndForeignHandlesAreRejected) {
  sfac_backend backend;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "ctx is NULL",
                    sfac_context_get_backend(nullptr, &backend));
  // A handle of another type is recognised by its tag.
  Context ctx = make_cpu_context(1);
  sfac_dense* dense = nullptr;
  SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), 2, 2, SFAC_DTYPE_FLOAT32, nullptr, &dense));
  Dense owner(dense);
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "not a live sfac_context",
                    sfac_context_get_backend(reinterpret_cast<sfac_context*>(dense), &backend));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out is NULL",
                    sfac_context_get_backend(ctx.get(), nullptr));
  SFAC_EXPECT_STATUS(SFAC_OK, sfac_context_destroy(nullptr));
}

TEST(Context, ObjectsOutliveTheirContext) {
  sfac_context* raw = nullptr;
  SFAC_ASSERT_OK(sfac_context_create(SFAC_BACKEND_CPU, 0, 1, 0, &raw));
  sfac_dense* dense = nullptr;
  const float data[4] = {1, 2, 3, 4};
  SFAC_ASSERT_OK(sfac_dense_create(raw, 2, 2, SFAC_DTYPE_FLOAT32, data, &dense));
  SFAC_ASSERT_OK(sfac_context_destroy(raw));
  float back[4] = {0, 0, 0, 0};
  SFAC_ASSERT_OK(sfac_dense_download(dense, back, static_cast<int64_t>(std::size(back))));
  EXPECT_EQ(0, std::memcmp(data, back, sizeof data));
  SFAC_ASSERT_OK(sfac_dense_destroy(dense));
}

TEST(LastError, IsPerThreadAndClearable) {
  sfac_clear_last_error();
  EXPECT_STREQ(sfac_last_error(), "");
  sfac_backend backend;
  EXPECT_NE(sfac_context_get_backend(nullptr, &backend), SFAC_OK);
  EXPECT_STRNE(sfac_last_error(), "");
  std::string other_thread_message = "unset";
  std::thread([&] { other_thread_message = sfac_last_error(); }).join();
  EXPECT_EQ(other_thread_message, "");
  sfac_clear_last_error();
  EXPECT_STREQ(sfac_last_error(), "");
}
