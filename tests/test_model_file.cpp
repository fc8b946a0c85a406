// Model files: binary save/load round trips, the documented layout, corrupted, truncated and
// foreign files, I/O errors, and the LIBMF text export.
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "sfac_test.h"

using namespace sfac_test;
namespace fs = std::filesystem;

namespace {


// The layout of format version 1 (src/io/model_file.h), repeated here on purpose: a change to
// the format must show up as a failing test, not pass silently.
constexpr size_t kVersionOffset = 8;
constexpr size_t kMarkerOffset = 12;
constexpr size_t kDtypeOffset = 16;
constexpr size_t kAlgorithmOffset = 20;
constexpr size_t kUsersOffset = 24;
constexpr size_t kItemsOffset = 32;
constexpr size_t kRankOffset = 40;
constexpr size_t kFlagsOffset = 48;
constexpr size_t kLambdaOffset = 52;
constexpr size_t kAlphaOffset = 60;
constexpr size_t kRegularizationOffset = 68;
constexpr size_t kGlobalMeanOffset = 72;
constexpr size_t kHeaderBytes = 76;

// A failed load must leave its output exactly as it was.
sfac_model* const kModelSentinel = reinterpret_cast<sfac_model*>(uintptr_t{0x7f7f});

// Bit-at-a-time CRC-32 (IEEE), independent of the library's table-driven one.
uint32_t crc32(const std::string& bytes, size_t size) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc ^= static_cast<unsigned char>(bytes[i]);
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

template <typename T>
T get(const std::string& file, size_t offset) {
  T value;
  std::memcpy(&value, file.data() + offset, sizeof(T));
  return value;
}

template <typename T>
void put(std::string& file, size_t offset, T value) {
  std::memcpy(&file[offset], &value, sizeof(T));
}

// Recomputes the trailing checksum, so that an edited field reaches the checks behind the CRC.
void reseal(std::string& file) { put(file, file.size() - 4, crc32(file, file.size() - 4)); }

// Everything the public API shows of a model.
struct Snapshot {
  int64_t users = 0, items = 0, rank = 0;
  sfac_algorithm algorithm = SFAC_ALGO_ALS;
  std::vector<float> user_factors, item_factors;
  int has_biases = 0;
  float global_mean = 0.0f;
  std::vector<float> user_bias, item_bias;
};

Snapshot snapshot(const sfac_model* model) {
  Snapshot s;
  EXPECT_EQ(sfac_model_get_shape(model, &s.users, &s.items, &s.rank), SFAC_OK);
  EXPECT_EQ(sfac_model_get_algorithm(model, &s.algorithm), SFAC_OK);
  s.user_factors.resize(static_cast<size_t>(s.users * s.rank));
  s.item_factors.resize(static_cast<size_t>(s.items * s.rank));
  EXPECT_EQ(sfac_model_get_user_factors(model, s.user_factors.data(),
                                        static_cast<int64_t>(s.user_factors.size())),
            SFAC_OK);
  EXPECT_EQ(sfac_model_get_item_factors(model, s.item_factors.data(),
                                        static_cast<int64_t>(s.item_factors.size())),
            SFAC_OK);
  EXPECT_EQ(sfac_model_get_biases(model, &s.has_biases, nullptr, nullptr, 0, nullptr, 0), SFAC_OK);
  if (s.has_biases) {
    s.user_bias.resize(static_cast<size_t>(s.users));
    s.item_bias.resize(static_cast<size_t>(s.items));
    EXPECT_EQ(sfac_model_get_biases(model, &s.has_biases, &s.global_mean, s.user_bias.data(),
                                    static_cast<int64_t>(s.user_bias.size()), s.item_bias.data(),
                                    static_cast<int64_t>(s.item_bias.size())),
              SFAC_OK);
  }
  return s;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  // memcmp on the null data() of empty vectors is undefined, even for 0 bytes.
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void expect_identical(const Snapshot& a, const Snapshot& b) {
  EXPECT_EQ(a.users, b.users);
  EXPECT_EQ(a.items, b.items);
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.algorithm, b.algorithm);
  EXPECT_EQ(a.has_biases, b.has_biases);
  EXPECT_EQ(std::memcmp(&a.global_mean, &b.global_mean, sizeof(float)), 0);
  EXPECT_TRUE(same_bits(a.user_factors, b.user_factors)) << "user factors differ";
  EXPECT_TRUE(same_bits(a.item_factors, b.item_factors)) << "item factors differ";
  EXPECT_TRUE(same_bits(a.user_bias, b.user_bias)) << "user biases differ";
  EXPECT_TRUE(same_bits(a.item_bias, b.item_bias)) << "item biases differ";
}

// The size format version 1 gives a model of this shape.
uint64_t expected_file_size(const Snapshot& s) {
  const uint64_t rows = static_cast<uint64_t>(s.users + s.items);
  return kHeaderBytes + 4 * (rows * static_cast<uint64_t>(s.rank) + (s.has_biases ? rows : 0)) + 4;
}

// The rest of the process's address space, for the test that a header cannot make the loader
// allocate what it claims.
uint64_t current_address_space_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  statm >> pages;
  return pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// A temporary directory and a CPU context per test, plus training on small planted data.
class ModelFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / (std::string("sfac_model_") + info->test_suite_name() + "." +
                                        info->name() + "." + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ctx_ = make_cpu_context(2, test_seed());
  }
  void TearDown() override {
    std::error_code ignored;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ignored);
    fs::remove_all(dir_, ignored);
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A few epochs on planted data: explicit ratings for ALS and SGD, implicit counts for IALS.
  Model train(sfac_algorithm algorithm, bool biases) {
    const sfac_feedback feedback =
        algorithm == SFAC_ALGO_IALS ? SFAC_FEEDBACK_IMPLICIT : SFAC_FEEDBACK_EXPLICIT;
    sfac_sparse* raw = nullptr;
    EXPECT_EQ(sfac_synthesize_ratings(ctx_.get(), feedback, 3000, 400, 30000, 6, 0.5, 0.3, &raw,
                                      nullptr, nullptr),
              SFAC_OK)
        << sfac_last_error();
    ratings_.reset(raw);
    sfac_train_options* options_raw = nullptr;
    EXPECT_EQ(sfac_train_options_create(algorithm, &options_raw), SFAC_OK);
    const Options options(options_raw);
    EXPECT_EQ(sfac_train_options_set_int(options.get(), SFAC_OPT_RANK, 6), SFAC_OK);
    EXPECT_EQ(sfac_train_options_set_int(options.get(), SFAC_OPT_ITERATIONS, 3), SFAC_OK);
    EXPECT_EQ(sfac_train_options_set_double(options.get(), SFAC_OPT_LAMBDA, kLambda), SFAC_OK);
    if (algorithm == SFAC_ALGO_IALS) {
      EXPECT_EQ(sfac_train_options_set_double(options.get(), SFAC_OPT_IMPLICIT_ALPHA, kAlpha),
                SFAC_OK);
    } else {
      EXPECT_EQ(sfac_train_options_set_int(options.get(), SFAC_OPT_USE_BIASES, biases ? 1 : 0),
                SFAC_OK);
    }
    sfac_model* model = nullptr;
    EXPECT_EQ(sfac_train(ctx_.get(), ratings_.get(), options.get(), &model), SFAC_OK)
        << sfac_last_error();
    return Model(model);
  }

  // Loads and checks that a failure leaves the output alone.
  sfac_status try_load(const std::string& file) {
    sfac_model* out = kModelSentinel;
    const sfac_status status = sfac_model_load(ctx_.get(), file.c_str(), &out);
    if (status == SFAC_OK) {
      sfac_model_destroy(out);
    } else {
      EXPECT_EQ(out, kModelSentinel) << "a failed load wrote its output";
    }
    return status;
  }

  Model load(const std::string& file) {
    sfac_model* out = nullptr;
    EXPECT_EQ(sfac_model_load(ctx_.get(), file.c_str(), &out), SFAC_OK) << sfac_last_error();
    return Model(out);
  }

  // A saved model's file contents, to corrupt in the tests.
  std::string saved_bytes(sfac_algorithm algorithm, bool biases, const std::string& name) {
    const Model model = train(algorithm, biases);
    EXPECT_EQ(sfac_model_save(model.get(), path(name).c_str()), SFAC_OK) << sfac_last_error();
    return read_bytes(path(name));
  }

  // Writes `bytes` and expects loading them to fail with `status` and a message naming
  // `needle`.
  void expect_load_error(const std::string& bytes, sfac_status status, const std::string& needle,
                         const std::string& what) {
    SCOPED_TRACE(what);
    const std::string file = path("broken.bin");
    write_bytes(file, bytes);
    sfac_clear_last_error();
    EXPECT_EQ(try_load(file), status) << sfac_last_error();
    EXPECT_NE(std::string(sfac_last_error()).find(needle), std::string::npos)
        << "message was: " << sfac_last_error();
  }

  // Save, load, compare everything the API can see, and check the file is byte-stable.
  void expect_round_trip(sfac_algorithm algorithm, bool biases) {
    const Model model = train(algorithm, biases);
    const std::string file = path("model.bin");
    SFAC_ASSERT_OK(sfac_model_save(model.get(), file.c_str()));
    const Snapshot before = snapshot(model.get());
    EXPECT_EQ(before.algorithm, algorithm);
    EXPECT_EQ(before.has_biases, biases ? 1 : 0);
    EXPECT_EQ(fs::file_size(file), expected_file_size(before));

    // Loaded through another context, destroyed before the model is used: the model keeps the
    // backend it was loaded with.
    Context other = make_cpu_context(2, 7);
    sfac_model* raw = nullptr;
    SFAC_ASSERT_OK(sfac_model_load(other.get(), file.c_str(), &raw));
    const Model loaded(raw);
    other.reset();
    expect_identical(before, snapshot(loaded.get()));

    // Predictions, training error and fold-in (which uses lambda_user, regularization and
    // implicit_alpha, none of them visible through the API) agree bit for bit.
    int64_t nnz = 0;
    SFAC_ASSERT_OK(sfac_sparse_get_shape(ratings_.get(), nullptr, nullptr, &nnz));
    std::vector<int32_t> users(static_cast<size_t>(nnz)), items(users.size());
    std::vector<float> ratings(users.size());
    SFAC_ASSERT_OK(sfac_sparse_download_coo(ratings_.get(), users.data(), items.data(),
                                            ratings.data(), static_cast<int64_t>(users.size())));
    std::vector<float> scores(users.size()), loaded_scores(users.size());
    SFAC_ASSERT_OK(sfac_model_predict(model.get(), nnz, users.data(), items.data(), scores.data()));
    SFAC_ASSERT_OK(
        sfac_model_predict(loaded.get(), nnz, users.data(), items.data(), loaded_scores.data()));
    EXPECT_TRUE(same_bits(scores, loaded_scores)) << "predictions differ after the round trip";
    double rmse = -1.0, loaded_rmse = -2.0;
    SFAC_ASSERT_OK(sfac_model_evaluate(model.get(), ratings_.get(), &rmse, nullptr));
    SFAC_ASSERT_OK(sfac_model_evaluate(loaded.get(), ratings_.get(), &loaded_rmse, nullptr));
    // Within rounding only: evaluate sums per-thread partials in a dynamic-schedule order, so
    // the same model can differ in the last bits from one call to the next.
    EXPECT_NEAR(rmse, loaded_rmse, 1e-12 * rmse);

    // A new user who rated the first distinct items of the training data.
    std::vector<int32_t> fold_items;
    std::vector<float> fold_ratings;
    for (size_t j = 0; j < items.size() && fold_items.size() < 20; ++j) {
      if (std::find(fold_items.begin(), fold_items.end(), items[j]) == fold_items.end()) {
        fold_items.push_back(items[j]);
        fold_ratings.push_back(ratings[j]);
      }
    }
    const auto fold_count = static_cast<int64_t>(fold_items.size());
    std::vector<float> folded(static_cast<size_t>(before.rank), 1.0f);
    std::vector<float> loaded_folded(folded.size(), 2.0f);
    float bias = 0.0f, loaded_bias = 0.0f;
    SFAC_ASSERT_OK(sfac_model_recalculate_user(model.get(), -1, fold_count, fold_items.data(),
                                               fold_ratings.data(), folded.data(),
                                               static_cast<int64_t>(folded.size()), &bias));
    SFAC_ASSERT_OK(sfac_model_recalculate_user(
        loaded.get(), -1, fold_count, fold_items.data(), fold_ratings.data(), loaded_folded.data(),
        static_cast<int64_t>(loaded_folded.size()), &loaded_bias));
    EXPECT_TRUE(same_bits(folded, loaded_folded)) << "fold-in differs after the round trip";
    EXPECT_EQ(std::memcmp(&bias, &loaded_bias, sizeof(float)), 0);

    // Saving the loaded model reproduces the file: every field survived, including the
    // training settings.
    const std::string again = path("again.bin");
    SFAC_ASSERT_OK(sfac_model_save(loaded.get(), again.c_str()));
    EXPECT_EQ(read_bytes(file), read_bytes(again));
  }

  static constexpr double kLambda = 0.07;
  static constexpr double kAlpha = 12.5;

  fs::path dir_;
  Context ctx_;
  Sparse ratings_;
};

}  // namespace

// ---- Round trips -----------------------------------------------------------------------------

TEST_F(ModelFileTest, RoundTripAlsWithoutBiases) { expect_round_trip(SFAC_ALGO_ALS, false); }

TEST_F(ModelFileTest, RoundTripAlsWithBiases) { expect_round_trip(SFAC_ALGO_ALS, true); }

TEST_F(ModelFileTest, RoundTripImplicitAls) { expect_round_trip(SFAC_ALGO_IALS, false); }

TEST_F(ModelFileTest, RoundTripSgdWithoutBiases) { expect_round_trip(SFAC_ALGO_SGD, false); }

TEST_F(ModelFileTest, RoundTripSgdWithBiases) { expect_round_trip(SFAC_ALGO_SGD, true); }

TEST_F(ModelFileTest, SavingAgainReplacesTheFileAndLeavesNoTemporaryFiles) {
  const Model first = train(SFAC_ALGO_ALS, false);
  const Model second = train(SFAC_ALGO_SGD, true);
  const std::string file = path("model.bin");
  SFAC_ASSERT_OK(sfac_model_save(first.get(), file.c_str()));
  SFAC_ASSERT_OK(sfac_model_save(second.get(), file.c_str()));
  expect_identical(snapshot(second.get()), snapshot(load(file).get()));
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string(), "model.bin")
        << "left behind: " << entry.path().string();
  }
}

// ---- The documented layout -------------------------------------------------------------------

TEST_F(ModelFileTest, FileLayoutMatchesTheDocumentedFormat) {
  const Model model = train(SFAC_ALGO_ALS, true);
  const std::string file = path("model.bin");
  SFAC_ASSERT_OK(sfac_model_save(model.get(), file.c_str()));
  const std::string bytes = read_bytes(file);
  const Snapshot s = snapshot(model.get());
  ASSERT_EQ(bytes.size(), expected_file_size(s));

  EXPECT_EQ(bytes.substr(0, 8), std::string("SFACMDL\0", 8));
  EXPECT_EQ(get<uint32_t>(bytes, kVersionOffset), 1u);
  EXPECT_EQ(get<uint32_t>(bytes, kMarkerOffset), 0x01020304u);
  EXPECT_EQ(get<uint32_t>(bytes, kDtypeOffset), 0u);
  EXPECT_EQ(get<uint32_t>(bytes, kAlgorithmOffset), static_cast<uint32_t>(SFAC_ALGO_ALS));
  EXPECT_EQ(get<int64_t>(bytes, kUsersOffset), s.users);
  EXPECT_EQ(get<int64_t>(bytes, kItemsOffset), s.items);
  EXPECT_EQ(get<int64_t>(bytes, kRankOffset), s.rank);
  EXPECT_EQ(get<uint32_t>(bytes, kFlagsOffset), 1u);
  EXPECT_EQ(get<double>(bytes, kLambdaOffset), kLambda);
  EXPECT_EQ(get<double>(bytes, kAlphaOffset), 0.0);  // explicit ALS has no confidence weight
  EXPECT_EQ(get<uint32_t>(bytes, kRegularizationOffset), static_cast<uint32_t>(SFAC_REG_WEIGHTED));
  EXPECT_EQ(get<float>(bytes, kGlobalMeanOffset), s.global_mean);

  // The arrays in order, then the CRC of everything before it.
  size_t at = kHeaderBytes;
  for (const std::vector<float>* array :
       {&s.user_factors, &s.item_factors, &s.user_bias, &s.item_bias}) {
    const size_t n = array->size() * sizeof(float);
    EXPECT_EQ(std::memcmp(bytes.data() + at, array->data(), n), 0);
    at += n;
  }
  EXPECT_EQ(at + 4, bytes.size());
  EXPECT_EQ(get<uint32_t>(bytes, at), crc32(bytes, at));
  EXPECT_EQ(crc32("123456789", 9), 0xCBF43926u);  // the test's own CRC is the standard one
}

TEST_F(ModelFileTest, ImplicitModelFileRecordsAlphaAndPlainRegularization) {
  const std::string bytes = saved_bytes(SFAC_ALGO_IALS, false, "ials.bin");
  ASSERT_GT(bytes.size(), kHeaderBytes);
  EXPECT_EQ(get<uint32_t>(bytes, kAlgorithmOffset), static_cast<uint32_t>(SFAC_ALGO_IALS));
  EXPECT_EQ(get<uint32_t>(bytes, kFlagsOffset), 0u);
  EXPECT_EQ(get<double>(bytes, kLambdaOffset), kLambda);
  EXPECT_EQ(get<double>(bytes, kAlphaOffset), kAlpha);
  EXPECT_EQ(get<uint32_t>(bytes, kRegularizationOffset), static_cast<uint32_t>(SFAC_REG_PLAIN));
}

// ---- Damaged and foreign files ---------------------------------------------------------------

TEST_F(ModelFileTest, OneFlippedByteInAnyRegionIsAParseError) {
  const std::string good = saved_bytes(SFAC_ALGO_SGD, true, "model.bin");
  const size_t size = good.size();
  const size_t factors = kHeaderBytes + (size - kHeaderBytes) / 3;
  const std::vector<std::pair<size_t, const char*>> places = {
      {0, "magic"},
      {7, "magic terminator"},
      {kVersionOffset, "version"},
      {kMarkerOffset + 1, "byte-order marker"},
      {kDtypeOffset, "dtype"},
      {kAlgorithmOffset + 3, "algorithm"},
      {kUsersOffset, "users"},
      {kItemsOffset + 2, "items"},
      {kRankOffset, "rank"},
      {kFlagsOffset, "flags"},
      {kLambdaOffset + 2, "lambda_user (low mantissa byte)"},
      {kAlphaOffset + 7, "implicit_alpha (sign and exponent)"},
      {kRegularizationOffset, "regularization"},
      {kGlobalMeanOffset, "global mean"},
      {kHeaderBytes, "first user factor"},
      {factors, "a factor in the middle"},
      {size - 5, "last item bias"},
      {size - 4, "checksum, first byte"},
      {size - 1, "checksum, last byte"},
  };
  for (const auto& [offset, what] : places) {
    for (const unsigned char mask : {0x01, 0x80, 0xFF}) {
      std::string bad = good;
      bad[offset] = static_cast<char>(bad[offset] ^ mask);
      expect_load_error(bad, SFAC_ERR_PARSE, "broken.bin",
                        std::string(what) + " ^ " + std::to_string(mask));
    }
  }
  // A flip in the arrays can only be caught by the checksum; say so.
  std::string bad = good;
  bad[factors] = static_cast<char>(bad[factors] ^ 0x10);
  expect_load_error(bad, SFAC_ERR_PARSE, "broken.bin: checksum mismatch", "factor flip message");
  // And the intact file still loads.
  write_bytes(path("good.bin"), good);
  EXPECT_EQ(try_load(path("good.bin")), SFAC_OK) << sfac_last_error();
}

TEST_F(ModelFileTest, TruncatedFilesAreParseErrors) {
  const std::string good = saved_bytes(SFAC_ALGO_ALS, true, "model.bin");
  const size_t size = good.size();
  for (const size_t length :
       std::vector<size_t>{0, 1, 7, 8, 12, 40, kHeaderBytes - 1, kHeaderBytes, kHeaderBytes + 1,
                           size / 2, size - 5, size - 4, size - 1}) {
    expect_load_error(good.substr(0, length), SFAC_ERR_PARSE, "truncated",
                      "length " + std::to_string(length));
  }
  expect_load_error(
      good.substr(0, 1000), SFAC_ERR_PARSE,
      "broken.bin: truncated: expected " + std::to_string(size) + " bytes, found 1000",
      "exact message");
  expect_load_error(good + "x", SFAC_ERR_PARSE, "size mismatch", "one byte too many");
}

TEST_F(ModelFileTest, HugeDimensionsAreRejectedBeforeAnyAllocation) {
  const std::string good = saved_bytes(SFAC_ALGO_ALS, false, "model.bin");
  struct Claim {
    int64_t users, items, rank;
    const char* needle;
  };
  const int64_t max32 = std::numeric_limits<int32_t>::max();
  for (const Claim& c : std::vector<Claim>{
           {1000000000000000000, 400, 6, "users = 1000000000000000000"},
           {-1, 400, 6, "users = -1"},
           {3000, max32 + 1, 6, "items = 2147483648"},
           {3000, 400, 0, "rank = 0"},
           {3000, 400, -6, "rank = -6"},
           {3000, 400, int64_t{1} << 40, "rank = 1099511627776"},
           {max32, max32, max32, "more than 2^64 bytes"},
           {max32, max32, 1000, "truncated: expected 17179869176080 bytes"},
           {3001, 400, 6, "truncated"},
       }) {
    std::string bad = good;
    put(bad, kUsersOffset, c.users);
    put(bad, kItemsOffset, c.items);
    put(bad, kRankOffset, c.rank);
    reseal(bad);  // a valid-looking rest: only the dimensions are wrong
    expect_load_error(bad, SFAC_ERR_PARSE, c.needle, c.needle);
  }
  std::string smaller = good;
  put(smaller, kUsersOffset, int64_t{2999});
  reseal(smaller);
  expect_load_error(smaller, SFAC_ERR_PARSE, "size mismatch", "fewer users than the data");
}

// The claim is plausible on its own (2^30 users x rank 1, 4 GiB) and only the file size shows
// it is false. Under an address-space limit far below the claim, an attempt to allocate it
// would fail with SFAC_ERR_OUT_OF_MEMORY (or die), not give SFAC_ERR_PARSE.
TEST_F(ModelFileTest, PlausibleButFalseDimensionsDoNotAllocate) {
  if (kAddressSanitizer) GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space";
  const std::string good = saved_bytes(SFAC_ALGO_ALS, false, "model.bin");
  std::string bad = good;
  put(bad, kUsersOffset, int64_t{1} << 30);
  put(bad, kItemsOffset, int64_t{0});
  put(bad, kRankOffset, int64_t{1});
  reseal(bad);
  const std::string file = path("claims_4gib.bin");
  write_bytes(file, bad);

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Only async-signal-safe work would be strictly allowed here; the load path starts no
    // threads and the child exits without returning to the test framework.
    const rlim_t limit = current_address_space_bytes() + (rlim_t{512} << 20);
    const struct rlimit cap = {limit, limit};
    if (::setrlimit(RLIMIT_AS, &cap) != 0) ::_exit(3);
    sfac_model* out = nullptr;
    const sfac_status status = sfac_model_load(ctx_.get(), file.c_str(), &out);
    ::_exit(status == SFAC_ERR_PARSE ? 0 : status == SFAC_ERR_OUT_OF_MEMORY ? 1 : 2);
  }
  int wait_status = 0;
  ASSERT_EQ(::waitpid(child, &wait_status, 0), child);
  ASSERT_TRUE(WIFEXITED(wait_status)) << "the loader died under a 512 MiB headroom limit";
  EXPECT_EQ(WEXITSTATUS(wait_status), 0) << "1 = out of memory, 2 = other status, 3 = rlimit";
  // Outside the limit the answer is the same.
  expect_load_error(bad, SFAC_ERR_PARSE, "truncated: expected 4294967376 bytes", "4 GiB claim");
}

TEST_F(ModelFileTest, ForeignFilesAreParseErrors) {
  expect_load_error("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.5\n2 3 -2\n",
                    SFAC_ERR_PARSE, "broken.bin: not a libsparsefac model (bad magic)",
                    "Matrix Market");
  expect_load_error("1 2 3.5\n", SFAC_ERR_PARSE, "bad magic", "short triplets file");
  expect_load_error(std::string("\x89PNG\r\n\x1a\n", 8) + std::string(200, '\0'), SFAC_ERR_PARSE,
                    "bad magic", "PNG");
  expect_load_error("SFAC", SFAC_ERR_PARSE, "truncated", "a prefix of the magic is truncated");
}

TEST_F(ModelFileTest, InvalidHeaderFieldsAreParseErrors) {
  const std::string good = saved_bytes(SFAC_ALGO_ALS, false, "model.bin");
  const auto edited = [&good](size_t offset, auto value) {
    std::string bad = good;
    put(bad, offset, value);
    reseal(bad);
    return bad;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_load_error(edited(kVersionOffset, uint32_t{7}), SFAC_ERR_PARSE,
                    "broken.bin: unsupported model format version 7", "version 7");
  expect_load_error(edited(kVersionOffset, uint32_t{0}), SFAC_ERR_PARSE,
                    "unsupported model format version 0", "version 0");
  expect_load_error(edited(kDtypeOffset, uint32_t{1}), SFAC_ERR_PARSE, "unsupported dtype 1",
                    "dtype");
  expect_load_error(edited(kAlgorithmOffset, uint32_t{3}), SFAC_ERR_PARSE, "unknown algorithm 3",
                    "algorithm");
  expect_load_error(edited(kRegularizationOffset, uint32_t{2}), SFAC_ERR_PARSE,
                    "unknown regularization 2", "regularization");
  expect_load_error(edited(kFlagsOffset, uint32_t{2}), SFAC_ERR_PARSE, "unknown flag bits",
                    "flags");
  expect_load_error(edited(kLambdaOffset, nan), SFAC_ERR_PARSE, "lambda_user", "lambda NaN");
  expect_load_error(edited(kLambdaOffset, -1.0), SFAC_ERR_PARSE, "lambda_user", "lambda < 0");
  expect_load_error(edited(kAlphaOffset, std::numeric_limits<double>::infinity()), SFAC_ERR_PARSE,
                    "implicit_alpha", "alpha inf");
  expect_load_error(edited(kGlobalMeanOffset, std::numeric_limits<float>::quiet_NaN()),
                    SFAC_ERR_PARSE, "global_mean", "global mean NaN");
  expect_load_error(edited(kMarkerOffset, uint32_t{0x01020305}), SFAC_ERR_PARSE,
                    "byte-order marker", "garbled marker");
  // A flag claiming biases the data does not hold changes the expected size.
  expect_load_error(edited(kFlagsOffset, uint32_t{1}), SFAC_ERR_PARSE, "truncated",
                    "biases flag without biases");
}

TEST_F(ModelFileTest, OtherByteOrderIsUnsupported) {
  std::string bad = saved_bytes(SFAC_ALGO_ALS, false, "model.bin");
  put(bad, kMarkerOffset, uint32_t{0x04030201});
  reseal(bad);
  expect_load_error(bad, SFAC_ERR_UNSUPPORTED, "other byte order", "swapped marker");
}

TEST_F(ModelFileTest, NonFiniteValuesAreParseErrors) {
  const std::string good = saved_bytes(SFAC_ALGO_SGD, true, "model.bin");
  const float values[] = {std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()};
  for (const float value : values) {
    for (const size_t offset : {kHeaderBytes + 4 * 7, good.size() - 8}) {  // factor, item bias
      std::string bad = good;
      put(bad, offset, value);
      reseal(bad);
      expect_load_error(bad, SFAC_ERR_PARSE, "non-finite value",
                        std::to_string(value) + " at " + std::to_string(offset));
    }
  }
}

// ---- I/O errors and arguments ----------------------------------------------------------------

TEST_F(ModelFileTest, MissingFileAndDirectoryAreIoErrors) {
  sfac_clear_last_error();
  EXPECT_EQ(try_load(path("missing.bin")), SFAC_ERR_IO);
  EXPECT_NE(std::string(sfac_last_error()).find("cannot open " + path("missing.bin") + ": "),
            std::string::npos)
      << sfac_last_error();
  EXPECT_NE(std::string(sfac_last_error()).find(std::strerror(ENOENT)), std::string::npos);
  sfac_clear_last_error();
  EXPECT_EQ(try_load(dir_.string()), SFAC_ERR_IO);
  EXPECT_NE(std::string(sfac_last_error()).find(std::strerror(EISDIR)), std::string::npos)
      << sfac_last_error();
}

TEST_F(ModelFileTest, FailedSavesAreIoErrorsAndLeaveNoFile) {
  const Model model = train(SFAC_ALGO_ALS, false);

  const std::string in_missing_dir = path("no/such/dir/model.bin");
  SFAC_EXPECT_ERROR(SFAC_ERR_IO, std::strerror(ENOENT),
                    sfac_model_save(model.get(), in_missing_dir.c_str()));
  SFAC_EXPECT_ERROR(SFAC_ERR_IO, "model.bin",
                    sfac_model_export_libmf(model.get(), in_missing_dir.c_str()));
  EXPECT_FALSE(fs::exists(path("no")));

  // The target is a directory: the temporary file is written, the rename fails, and the
  // temporary file is removed again.
  fs::create_directory(path("taken"));
  SFAC_EXPECT_ERROR(SFAC_ERR_IO, std::strerror(EISDIR),
                    sfac_model_save(model.get(), path("taken").c_str()));
  SFAC_EXPECT_ERROR(SFAC_ERR_IO, "taken",
                    sfac_model_export_libmf(model.get(), path("taken").c_str()));

  // A regular file used as a directory.
  write_bytes(path("plain"), "not a directory");
  SFAC_EXPECT_ERROR(SFAC_ERR_IO, std::strerror(ENOTDIR),
                    sfac_model_save(model.get(), path("plain/model.bin").c_str()));

  // An unwritable directory (root ignores permissions, so only as a normal user).
  if (::geteuid() != 0) {
    fs::create_directory(path("readonly"));
    fs::permissions(path("readonly"), fs::perms::owner_read | fs::perms::owner_exec);
    SFAC_EXPECT_ERROR(SFAC_ERR_IO, std::strerror(EACCES),
                      sfac_model_save(model.get(), path("readonly/model.bin").c_str()));
    fs::permissions(path("readonly"), fs::perms::owner_all);
  }

  std::vector<std::string> left;
  for (const auto& entry : fs::recursive_directory_iterator(dir_)) {
    left.push_back(entry.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  const std::vector<std::string> expected =
      ::geteuid() != 0 ? std::vector<std::string>{"plain", "readonly", "taken"}
                       : std::vector<std::string>{"plain", "taken"};
  EXPECT_EQ(left, expected);
}

TEST_F(ModelFileTest, NullArgumentsAndWrongHandles) {
  const Model model = train(SFAC_ALGO_ALS, false);
  const std::string file = path("model.bin");
  SFAC_EXPECT_STATUS(SFAC_ERR_INVALID_HANDLE, sfac_model_save(nullptr, file.c_str()));
  SFAC_EXPECT_STATUS(SFAC_ERR_INVALID_ARGUMENT, sfac_model_save(model.get(), nullptr));
  SFAC_EXPECT_STATUS(SFAC_ERR_INVALID_HANDLE, sfac_model_export_libmf(nullptr, file.c_str()));
  SFAC_EXPECT_STATUS(SFAC_ERR_INVALID_ARGUMENT, sfac_model_export_libmf(model.get(), nullptr));
  // A handle of another type is caught by its tag.
  const auto* not_a_model = reinterpret_cast<const sfac_model*>(ctx_.get());
  SFAC_EXPECT_STATUS(SFAC_ERR_INVALID_HANDLE, sfac_model_save(not_a_model, file.c_str()));
  EXPECT_FALSE(fs::exists(file));

  SFAC_ASSERT_OK(sfac_model_save(model.get(), file.c_str()));
  sfac_model* out = kModelSentinel;
  SFAC_EXPECT_STATUS(SFAC_ERR_INVALID_HANDLE, sfac_model_load(nullptr, file.c_str(), &out));
  SFAC_EXPECT_STATUS(SFAC_ERR_INVALID_ARGUMENT, sfac_model_load(ctx_.get(), nullptr, &out));
  SFAC_EXPECT_STATUS(SFAC_ERR_INVALID_ARGUMENT, sfac_model_load(ctx_.get(), file.c_str(), nullptr));
  auto* not_a_context = reinterpret_cast<sfac_context*>(model.get());
  SFAC_EXPECT_STATUS(SFAC_ERR_INVALID_HANDLE, sfac_model_load(not_a_context, file.c_str(), &out));
  EXPECT_EQ(out, kModelSentinel);
}

// ---- LIBMF export ----------------------------------------------------------------------------

namespace {

// LIBMF's text model as its mf_load_model reads it.
struct LibmfModel {
  int fun = -1;
  int64_t m = -1, n = -1, k = -1;
  float b = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> p, q;  // m x k and n x k
};

LibmfModel parse_libmf(const std::string& path) {
  LibmfModel model;
  std::ifstream in(path);
  std::string key;
  EXPECT_TRUE(in >> key >> model.fun && key == "f");
  EXPECT_TRUE(in >> key >> model.m && key == "m");
  EXPECT_TRUE(in >> key >> model.n && key == "n");
  EXPECT_TRUE(in >> key >> model.k && key == "k");
  EXPECT_TRUE(in >> key >> model.b && key == "b");
  const auto rows = [&](char prefix, int64_t count, std::vector<float>& values) {
    for (int64_t r = 0; r < count; ++r) {
      std::string name, valid;
      in >> name >> valid;
      ASSERT_EQ(name, prefix + std::to_string(r));
      ASSERT_EQ(valid, "T");
      for (int64_t t = 0; t < model.k; ++t) {
        float v;
        ASSERT_TRUE(in >> v) << name << " column " << t;
        values.push_back(v);
      }
    }
  };
  rows('p', model.m, model.p);
  rows('q', model.n, model.q);
  std::string rest;
  EXPECT_FALSE(in >> rest) << "unexpected text after the last row: " << rest;
  return model;
}

void expect_close(float actual, float expected, const std::string& what) {
  EXPECT_LE(std::fabs(actual - expected), 1e-6 * std::max(1.0f, std::fabs(expected))) << what;
}

}  // namespace

TEST_F(ModelFileTest, LibmfExportWithoutBiasesHoldsTheFactors) {
  const Model model = train(SFAC_ALGO_ALS, false);
  const std::string file = path("model.libmf");
  SFAC_ASSERT_OK(sfac_model_export_libmf(model.get(), file.c_str()));
  const Snapshot s = snapshot(model.get());
  const LibmfModel libmf = parse_libmf(file);
  EXPECT_EQ(libmf.fun, 0);
  EXPECT_EQ(libmf.m, s.users);
  EXPECT_EQ(libmf.n, s.items);
  EXPECT_EQ(libmf.k, s.rank);
  EXPECT_EQ(libmf.b, 0.0f);
  ASSERT_EQ(libmf.p.size(), s.user_factors.size());
  ASSERT_EQ(libmf.q.size(), s.item_factors.size());
  for (size_t i = 0; i < libmf.p.size(); ++i) expect_close(libmf.p[i], s.user_factors[i], "P");
  for (size_t i = 0; i < libmf.q.size(); ++i) expect_close(libmf.q[i], s.item_factors[i], "Q");
  // Shortest round-trip text: in fact every value reads back exactly.
  EXPECT_TRUE(same_bits(libmf.p, s.user_factors));
  EXPECT_TRUE(same_bits(libmf.q, s.item_factors));
  const std::string text = read_bytes(file);
  EXPECT_EQ(text.rfind("f 0\nm 3000\nn 400\nk 6\nb 0\np0 T ", 0), 0u) << text.substr(0, 80);
}

// LIBMF predicts dot(p_u, q_i) and has no bias terms: the export carries them in two extra
// columns, so LIBMF's prediction equals the model's.
TEST_F(ModelFileTest, LibmfExportWithBiasesPredictsLikeTheModel) {
  const Model model = train(SFAC_ALGO_SGD, true);
  const std::string file = path("model.libmf");
  SFAC_ASSERT_OK(sfac_model_export_libmf(model.get(), file.c_str()));
  const Snapshot s = snapshot(model.get());
  const LibmfModel libmf = parse_libmf(file);
  const int64_t k = s.rank + 2;
  ASSERT_EQ(libmf.k, k);
  EXPECT_EQ(libmf.b, s.global_mean);
  ASSERT_EQ(libmf.p.size(), static_cast<size_t>(s.users * k));
  ASSERT_EQ(libmf.q.size(), static_cast<size_t>(s.items * k));
  const auto at = [k](const std::vector<float>& v, int64_t row, int64_t col) {
    return v[static_cast<size_t>(row * k + col)];
  };
  for (int64_t u = 0; u < s.users; ++u) {
    for (int64_t t = 0; t < s.rank; ++t) {
      expect_close(at(libmf.p, u, t), s.user_factors[static_cast<size_t>(u * s.rank + t)], "P");
    }
    expect_close(at(libmf.p, u, s.rank), s.global_mean + s.user_bias[static_cast<size_t>(u)],
                 "P bias column");
    EXPECT_EQ(at(libmf.p, u, s.rank + 1), 1.0f);
  }
  for (int64_t i = 0; i < s.items; ++i) {
    for (int64_t t = 0; t < s.rank; ++t) {
      expect_close(at(libmf.q, i, t), s.item_factors[static_cast<size_t>(i * s.rank + t)], "Q");
    }
    EXPECT_EQ(at(libmf.q, i, s.rank), 1.0f);
    expect_close(at(libmf.q, i, s.rank + 1), s.item_bias[static_cast<size_t>(i)], "Q bias column");
  }
  // LIBMF's mf_predict on a sample of pairs against the model's own predictions.
  std::vector<int32_t> users, items;
  for (int32_t u = 0; u < s.users; u += 97) {
    for (int32_t i = 0; i < s.items; i += 13) {
      users.push_back(u);
      items.push_back(i);
    }
  }
  std::vector<float> scores(users.size());
  SFAC_ASSERT_OK(sfac_model_predict(model.get(), static_cast<int64_t>(users.size()), users.data(),
                                    items.data(), scores.data()));
  for (size_t j = 0; j < users.size(); ++j) {
    double dot = 0.0;
    for (int64_t t = 0; t < k; ++t) {
      dot += static_cast<double>(at(libmf.p, users[j], t)) * at(libmf.q, items[j], t);
    }
    EXPECT_NEAR(dot, scores[j], 1e-4 * std::max(1.0f, std::fabs(scores[j])))
        << "user " << users[j] << " item " << items[j];
  }
}
