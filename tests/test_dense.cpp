// Dense matrix creation, upload/download and validation.
#include <cstring>
#include <limits>
#include <vector>

#include "sfac_test.h"

using namespace sfac_test;

namespace {

sfac_dense* const kSentinel = reinterpret_cast<sfac_dense*>(0x1234);

std::vector<float> download(const sfac_dense* m) {
  int64_t rows = 0, cols = 0;
  EXPECT_EQ(sfac_dense_get_shape(m, &rows, &cols), SFAC_OK);
  std::vector<float> out(rows * cols, -1.0f);
  EXPECT_EQ(sfac_dense_download(m, out.data(), static_cast<int64_t>(out.size())), SFAC_OK)
      << sfac_last_error();
  return out;
}

}  // namespace

TEST(Dense, RoundTripsRowMajorData) {
  std::mt19937_64 rng(test_seed());
  std::normal_distribution<float> dist;
  Context ctx = make_cpu_context(1);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {17, 3}, {5, 129}, {0, 8}}) {
    std::vector<float> data(rows * cols);
    for (float& x : data) x = dist(rng);
    sfac_dense* raw = nullptr;
    SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), rows, cols, SFAC_DTYPE_FLOAT32, data.data(), &raw));
    Dense m(raw);
    int64_t r = -1, c = -1;
    SFAC_ASSERT_OK(sfac_dense_get_shape(m.get(), &r, &c));
    EXPECT_EQ(r, rows);
    EXPECT_EQ(c, cols);
    sfac_dtype dtype = SFAC_DTYPE_BFLOAT16;
    SFAC_ASSERT_OK(sfac_dense_get_dtype(m.get(), &dtype));
    EXPECT_EQ(dtype, SFAC_DTYPE_FLOAT32);
    EXPECT_EQ(download(m.get()), data);
    for (float& x : data) x = dist(rng);
    SFAC_ASSERT_OK(sfac_dense_upload(m.get(), data.data()));
    EXPECT_EQ(download(m.get()), data);
  }
}

TEST(Dense, NullDataMeansZeros) {
  Context ctx = make_cpu_context(1);
  sfac_dense* raw = nullptr;
  SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), 4, 6, SFAC_DTYPE_FLOAT32, nullptr, &raw));
  Dense m(raw);
  EXPECT_EQ(download(m.get()), std::vector<float>(24, 0.0f));
}

TEST(Dense, NonFiniteDataIsRejectedAndLeavesTheMatrixIntact) {
  Context ctx = make_cpu_context(1);
  std::vector<float> data = {1, 2, 3, 4, 5, 6};
  sfac_dense* raw = kSentinel;
  data[4] = std::numeric_limits<float>::quiet_NaN();
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "data[4]",
                    sfac_dense_create(ctx.get(), 2, 3, SFAC_DTYPE_FLOAT32, data.data(), &raw));
  EXPECT_EQ(raw, kSentinel);
  data[4] = 5;
  SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), 2, 3, SFAC_DTYPE_FLOAT32, data.data(), &raw));
  Dense m(raw);
  std::vector<float> bad = {0, 0, 0, 0, 0, -std::numeric_limits<float>::infinity()};
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "data[5]", sfac_dense_upload(m.get(), bad.data()));
  EXPECT_EQ(download(m.get()), data);
}

TEST(Dense, BadShapesAndArgumentsAreRejected) {
  Context ctx = make_cpu_context(1);
  sfac_dense* raw = kSentinel;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "cols = 0 must be >= 1",
                    sfac_dense_create(ctx.get(), 3, 0, SFAC_DTYPE_FLOAT32, nullptr, &raw));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "rows = -3",
                    sfac_dense_create(ctx.get(), -3, 2, SFAC_DTYPE_FLOAT32, nullptr, &raw));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_OUT_OF_RANGE, "rows = 4294967296",
      sfac_dense_create(ctx.get(), int64_t{1} << 32, 2, SFAC_DTYPE_FLOAT32, nullptr, &raw));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "unknown dtype 9",
                    sfac_dense_create(ctx.get(), 2, 2, static_cast<sfac_dtype>(9), nullptr, &raw));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "out is NULL",
                    sfac_dense_create(ctx.get(), 2, 2, SFAC_DTYPE_FLOAT32, nullptr, nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "ctx is NULL",
                    sfac_dense_create(nullptr, 2, 2, SFAC_DTYPE_FLOAT32, nullptr, &raw));
  EXPECT_EQ(raw, kSentinel);

  SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), 2, 2, SFAC_DTYPE_FLOAT32, nullptr, &raw));
  Dense m(raw);
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "data is NULL", sfac_dense_upload(m.get(), nullptr));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "data is NULL",
                    sfac_dense_download(m.get(), nullptr, 4));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "matrix is NULL", sfac_dense_upload(nullptr, nullptr));
  SFAC_EXPECT_STATUS(SFAC_OK, sfac_dense_destroy(nullptr));
}

TEST(Dense, HugeMatricesFailWithOutOfMemoryNotACrash) {
  Context ctx = make_cpu_context(1);
  sfac_dense* raw = kSentinel;
  const int64_t big = std::numeric_limits<int32_t>::max();
  SFAC_EXPECT_STATUS(SFAC_ERR_OUT_OF_MEMORY,
                     sfac_dense_create(ctx.get(), big, big, SFAC_DTYPE_FLOAT32, nullptr, &raw));
  EXPECT_EQ(raw, kSentinel);
  // The context stays usable.
  SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), 2, 2, SFAC_DTYPE_FLOAT32, nullptr, &raw));
  sfac_dense_destroy(raw);
}

TEST(Dense, HalfPrecisionStorageIsUnsupportedOnTheCpuBackend) {
  Context ctx = make_cpu_context(1);
  sfac_dense* raw = kSentinel;
  SFAC_EXPECT_ERROR(SFAC_ERR_UNSUPPORTED, "float32 only",
                    sfac_dense_create(ctx.get(), 2, 2, SFAC_DTYPE_BFLOAT16, nullptr, &raw));
  SFAC_EXPECT_ERROR(SFAC_ERR_UNSUPPORTED, "float32 only",
                    sfac_dense_create(ctx.get(), 2, 2, SFAC_DTYPE_FLOAT16, nullptr, &raw));
  EXPECT_EQ(raw, kSentinel);
}
