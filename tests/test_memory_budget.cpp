// The host memory budget of a context: shapes declared by tiny inputs (a file header, a large id,
// a row count passed with one entry) are refused with SFAC_ERR_OUT_OF_MEMORY before anything
// is allocated, the outputs stay untouched and the context stays usable.
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <string>

#include "sfac_test.h"

using namespace sfac_test;

namespace {

constexpr int64_t kLimit = int64_t{64} << 20;  // 64 MiB
sfac_sparse* const kSparseSentinel = reinterpret_cast<sfac_sparse*>(0x1234);
sfac_dense* const kDenseSentinel = reinterpret_cast<sfac_dense*>(0x5678);

class MemoryBudget : public ::testing::Test {
 protected:
  void SetUp() override { SFAC_ASSERT_OK(sfac_context_set_memory_limit(ctx.get(), kLimit)); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir.file(name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  Context ctx = make_cpu_context(2);
  ScratchDir dir{"sfac-budget"};
};

TEST_F(MemoryBudget, LimitRoundTripsAndRejectsNegativeValues) {
  int64_t limit = -1;
  SFAC_ASSERT_OK(sfac_context_get_memory_limit(ctx.get(), &limit));
  EXPECT_EQ(limit, kLimit);
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "bytes = -5 must be >= 0",
                    sfac_context_set_memory_limit(ctx.get(), -5));
  SFAC_ASSERT_OK(sfac_context_get_memory_limit(ctx.get(), &limit));
  EXPECT_EQ(limit, kLimit);
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_HANDLE, "ctx is NULL",
                    sfac_context_set_memory_limit(nullptr, 1));
  Context fresh = make_cpu_context(1);
  SFAC_ASSERT_OK(sfac_context_get_memory_limit(fresh.get(), &limit));
  EXPECT_EQ(limit, 0);  // the available memory
}

TEST_F(MemoryBudget, HugeShapesFromArraysAreRefusedBeforeAllocating) {
  const int32_t row = 5, col = 3;
  const float value = 1.0f;
  sfac_sparse* out = kSparseSentinel;
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_MEMORY, "x 10 sparse matrix of 1 entries needs about",
                    sfac_sparse_create_coo(ctx.get(), INT32_MAX, 10, 1, &row, &col, &value, 0,
                                           &out));
  EXPECT_EQ(out, kSparseSentinel);
  // CSC input: the columns' offsets are the caller's, the rows' are the library's.
  const int64_t col_offsets[2] = {0, 1};
  SFAC_EXPECT_ERROR(
      SFAC_ERR_OUT_OF_MEMORY, "context's limit of 67108864 bytes",
      sfac_sparse_create_csc(ctx.get(), INT32_MAX, 1, col_offsets, &row, &value, 1, 0, &out));
  EXPECT_EQ(out, kSparseSentinel);
  sfac_dense* dense = kDenseSentinel;
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_MEMORY, "100000 x 1000 dense matrix needs about 400000000",
                    sfac_dense_create(ctx.get(), 100000, 1000, SFAC_DTYPE_FLOAT32, nullptr,
                                      &dense));
  EXPECT_EQ(dense, kDenseSentinel);
  expect_context_usable(ctx.get());
}

TEST_F(MemoryBudget, TinyFilesDeclaringHugeShapesAreRefused) {
  // 268,435,456 declared rows and no entries: gigabytes of row offsets from a 60-byte file.
  const auto mtx = write("huge.mtx",
                         "%%MatrixMarket matrix coordinate real general\n268435456 10 0\n");
  const auto triplets = write("huge.txt", "268435455 0 1\n");
  for (const auto& [path, format] :
       {std::pair{mtx, SFAC_FORMAT_MATRIX_MARKET}, std::pair{mtx, SFAC_FORMAT_AUTO},
        std::pair{triplets, SFAC_FORMAT_TRIPLETS}, std::pair{triplets, SFAC_FORMAT_AUTO}}) {
    SCOPED_TRACE(path);
    sfac_sparse* out = kSparseSentinel;
    SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_MEMORY, "268435456 x",
                      sfac_read_sparse(ctx.get(), path.c_str(), format, 0, &out, nullptr,
                                       nullptr));
    EXPECT_EQ(out, kSparseSentinel);
  }
  expect_context_usable(ctx.get());
  // Within the budget the same kind of file reads.
  const auto fits = write("fits.mtx",
                          "%%MatrixMarket matrix coordinate real general\n1000 10 1\n1000 10 2\n");
  sfac_sparse* out = nullptr;
  SFAC_ASSERT_OK(sfac_read_sparse(ctx.get(), fits.c_str(), SFAC_FORMAT_AUTO, 0, &out, nullptr,
                                  nullptr));
  Sparse owned(out);
  int64_t rows = 0;
  SFAC_ASSERT_OK(sfac_sparse_get_shape(out, &rows, nullptr, nullptr));
  EXPECT_EQ(rows, 1000);
}

// Without a limit the budget is the memory the process may still take: with 2 GiB of address
// space to spare (in a child process; ASan reserves more than that) a 2^31-row matrix is
// refused with a status naming the available bytes.
TEST(MemoryBudgetDefault, IsTheAvailableMemory) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "an address-space limit and AddressSanitizer do not mix";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto create = [] {
    Context c = make_cpu_context(1);
    const int32_t row = 5, col = 3;
    const float value = 1.0f;
    sfac_sparse* out = nullptr;
    const sfac_status st =
        sfac_sparse_create_coo(c.get(), INT32_MAX, 10, 1, &row, &col, &value, 0, &out);
    const std::string message = sfac_last_error();
    return st == SFAC_ERR_OUT_OF_MEMORY && out == nullptr &&
           message.find("bytes available") != std::string::npos;
  };
  EXPECT_EXIT(exit_with_check_under_address_limit(uint64_t{2} << 30, create),
              ::testing::ExitedWithCode(0), "");
#endif
}

}  // namespace
