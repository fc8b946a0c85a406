// File reading and writing through the public C API: every format and AUTO detection, id
// remapping and its maps, Matrix Market round trips, and the error paths with their lines.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "fault_injection.h"
#include "sfac_test.h"

using namespace sfac_test;
namespace fs = std::filesystem;

namespace {

using Entry = std::tuple<int32_t, int32_t, float>;

struct Matrix {
  int64_t rows = -1;
  int64_t cols = -1;
  std::vector<Entry> entries;  // (row, col) order, as the library stores them
};

Matrix download(const sfac_sparse* m) {
  Matrix out;
  int64_t nnz = -1;
  EXPECT_EQ(sfac_sparse_get_shape(m, &out.rows, &out.cols, &nnz), SFAC_OK) << sfac_last_error();
  std::vector<int32_t> r(nnz), c(nnz);
  std::vector<float> v(nnz);
  EXPECT_EQ(
      sfac_sparse_download_coo(m, r.data(), c.data(), v.data(), static_cast<int64_t>(r.size())),
      SFAC_OK)
      << sfac_last_error();
  for (int64_t e = 0; e < nnz; ++e) out.entries.emplace_back(r[e], c[e], v[e]);
  return out;
}

void expect_matrix(const Matrix& got, int64_t rows, int64_t cols, std::vector<Entry> entries) {
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(got.rows, rows);
  EXPECT_EQ(got.cols, cols);
  EXPECT_EQ(got.entries, entries);
}

std::vector<int64_t> ids_of(const sfac_idmap* map) {
  int64_t size = -1;
  EXPECT_EQ(sfac_idmap_get_size(map, &size), SFAC_OK) << sfac_last_error();
  std::vector<int64_t> ids(static_cast<size_t>(std::max<int64_t>(size, 0)));
  EXPECT_EQ(sfac_idmap_get_ids(map, ids.data(), static_cast<int64_t>(ids.size())), SFAC_OK)
      << sfac_last_error();
  return ids;
}

std::vector<int32_t> lookup(const sfac_idmap* map, const std::vector<int64_t>& ids) {
  std::vector<int32_t> indices(ids.size(), -7);
  EXPECT_EQ(sfac_idmap_lookup(map, static_cast<int64_t>(ids.size()), ids.data(), indices.data()),
            SFAC_OK)
      << sfac_last_error();
  return indices;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string data_file(const char* name) { return std::string(SFAC_TEST_DATA_DIR) + "/" + name; }

// Values a failed call must leave in its output arguments.
sfac_sparse* const kSparseSentinel = reinterpret_cast<sfac_sparse*>(uintptr_t{0x5f5f});
sfac_idmap* const kMapSentinel = reinterpret_cast<sfac_idmap*>(uintptr_t{0x6f6f});

// A fresh temporary directory and a CPU context per test.
class IoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / (std::string("sfac_io_") + info->test_suite_name() + "." +
                                        info->name() + "." + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ctx_ = make_cpu_context(1);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }

  // Reads a file that must parse.
  Matrix read(const std::string& path, sfac_file_format format, uint32_t flags = 0) {
    sfac_sparse* raw = nullptr;
    EXPECT_EQ(sfac_read_sparse(ctx_.get(), path.c_str(), format, flags, &raw, nullptr, nullptr),
              SFAC_OK)
        << sfac_last_error();
    const Sparse matrix(raw);
    return matrix ? download(matrix.get()) : Matrix{};
  }

  // Reads with all outputs requested and returns the status. A failure must leave every output
  // exactly as it was.
  sfac_status try_read(const std::string& path, sfac_file_format format, uint32_t flags = 0) {
    sfac_sparse* out = kSparseSentinel;
    sfac_idmap* row_ids = kMapSentinel;
    sfac_idmap* col_ids = kMapSentinel;
    const sfac_status status =
        sfac_read_sparse(ctx_.get(), path.c_str(), format, flags, &out, &row_ids, &col_ids);
    if (status == SFAC_OK) {
      sfac_sparse_destroy(out);
      sfac_idmap_destroy(row_ids);
      sfac_idmap_destroy(col_ids);
    } else {
      EXPECT_EQ(out, kSparseSentinel);
      EXPECT_EQ(row_ids, kMapSentinel);
      EXPECT_EQ(col_ids, kMapSentinel);
    }
    return status;
  }

  fs::path dir_;
  Context ctx_;
};

class IoTriplets : public IoTest {};
class IoMovieLens : public IoTest {};
class IoCsv : public IoTest {};
class IoAuto : public IoTest {};
class IoMatrixMarket : public IoTest {};
class IoRemap : public IoTest {};
class IoDuplicates : public IoTest {
 protected:
  static constexpr const char* kHint = " (pass SFAC_SPARSE_SUM_DUPLICATES to sum duplicates)";

  // Reads a file that must fail on a duplicate entry, with exactly `message`.
  void expect_duplicate(const std::string& path, sfac_file_format format, uint32_t flags,
                        const std::string& message) {
    sfac_clear_last_error();
    EXPECT_EQ(try_read(path, format, flags), SFAC_ERR_DUPLICATE_ENTRY);
    EXPECT_EQ(std::string(sfac_last_error()), message);
  }
};
class IoWrite : public IoTest {};
class IoErrors : public IoTest {};

// ---- Triplets (LIBMF, MovieLens u.data) ------------------------------------------------------

TEST_F(IoTriplets, LibmfIdsAreIndicesAndShapeIsMaxPlusOne) {
  const auto path = write("train.txt", "0 0 1.5\n2 1 -2\n1 3 0.25\n");
  expect_matrix(read(path, SFAC_FORMAT_TRIPLETS), 3, 4,
                {{0, 0, 1.5f}, {2, 1, -2.0f}, {1, 3, 0.25f}});
}

TEST_F(IoTriplets, TabsExtraFieldsCommentsAndBlankLinesAreFine) {
  const auto path = write("train.txt",
                          "# user item rating\n"
                          "\n"
                          "  0\t1   2.5 881250949 extra\n"
                          "   \t \n"
                          "\t# indented comment\n"
                          "1 0 3 \n");
  expect_matrix(read(path, SFAC_FORMAT_TRIPLETS), 2, 2, {{0, 1, 2.5f}, {1, 0, 3.0f}});
}

TEST_F(IoTriplets, ValueSpellings) {
  const auto path = write("train.txt", "0 0 +1\n0 1 -0.5\n0 2 1e3\n0 3 .5\n0 4 5.\n0 5 -2E-2\n");
  expect_matrix(
      read(path, SFAC_FORMAT_TRIPLETS), 1, 6,
      {{0, 0, 1.0f}, {0, 1, -0.5f}, {0, 2, 1000.0f}, {0, 3, 0.5f}, {0, 4, 5.0f}, {0, 5, -0.02f}});
}

TEST_F(IoTriplets, MovieLensUDataOneBased) {
  const auto path = write("u.data",
                          "1\t1\t5\t874965758\n"
                          "1\t3\t3\t876893171\n"
                          "2\t1\t4\t878542960\n");
  expect_matrix(read(path, SFAC_FORMAT_TRIPLETS, SFAC_READ_ONE_BASED), 2, 3,
                {{0, 0, 5.0f}, {0, 2, 3.0f}, {1, 0, 4.0f}});
}

TEST_F(IoTriplets, OneBasedRejectsIdZeroWithItsLine) {
  const auto path = write("file.txt", "1 1 5\n2 0 4\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "file.txt:2: column id 0",
                    try_read(path, SFAC_FORMAT_TRIPLETS, SFAC_READ_ONE_BASED));
}

TEST_F(IoTriplets, CrLfLineEndingsAndNoFinalNewline) {
  const auto path = write("file.txt", "0 0 1\r\n1 1 2\r\n\r\n2 2 3");
  expect_matrix(read(path, SFAC_FORMAT_TRIPLETS), 3, 3, {{0, 0, 1.f}, {1, 1, 2.f}, {2, 2, 3.f}});
  // Line numbers still count physical lines.
  const auto bad = write("file.txt", "0 0 1\r\n1 1 2\r\n2 2 x\r\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_PARSE, "file.txt:3: invalid number 'x' in field 3",
                    try_read(bad, SFAC_FORMAT_TRIPLETS));
}

TEST_F(IoTriplets, EmptyFilesGiveAnEmptyMatrix) {
  for (const char* text : {"", "\n\n", "# only a comment\n", "\r\n"}) {
    const auto path = write("empty.txt", text);
    expect_matrix(read(path, SFAC_FORMAT_TRIPLETS), 0, 0, {});
    expect_matrix(read(path, SFAC_FORMAT_AUTO), 0, 0, {});
    expect_matrix(read(path, SFAC_FORMAT_TRIPLETS, SFAC_READ_REMAP_IDS), 0, 0, {});
  }
}

// A FIFO reports no size, so the reader must grow its buffer while reading.
TEST_F(IoTriplets, ReadsFromAFifo) {
  const std::string path = (dir_ / "pipe").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
  constexpr int kLines = 50000;
  std::thread writer([&] {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < kLines; ++i) out << i << ' ' << (i % 7) << " 0.5\n";
  });
  sfac_sparse* raw = nullptr;
  const sfac_status status =
      sfac_read_sparse(ctx_.get(), path.c_str(), SFAC_FORMAT_TRIPLETS, 0, &raw, nullptr, nullptr);
  writer.join();
  ASSERT_EQ(status, SFAC_OK) << sfac_last_error();
  const Sparse matrix(raw);
  int64_t rows = 0, cols = 0, nnz = 0;
  SFAC_ASSERT_OK(sfac_sparse_get_shape(matrix.get(), &rows, &cols, &nnz));
  EXPECT_EQ(rows, kLines);
  EXPECT_EQ(cols, 7);
  EXPECT_EQ(nnz, kLines);
}

TEST_F(IoTriplets, Utf8ByteOrderMarkIsIgnored) {
  const auto path = write("bom.txt",
                          "\xEF\xBB\xBF"
                          "0 1 2\n");
  expect_matrix(read(path, SFAC_FORMAT_TRIPLETS), 1, 2, {{0, 1, 2.0f}});
}

// ---- MovieLens ratings.dat -------------------------------------------------------------------

TEST_F(IoMovieLens, DatFile) {
  const auto path = write("ratings.dat",
                          "1::1193::5::978300760\n"
                          "1::661::3::978302109\n"
                          "2::1193::4::978298413\n");
  expect_matrix(read(path, SFAC_FORMAT_MOVIELENS_DAT, SFAC_READ_ONE_BASED), 2, 1193,
                {{0, 1192, 5.f}, {0, 660, 3.f}, {1, 1192, 4.f}});
  // The timestamp is optional; blanks around fields are trimmed.
  const auto short_form = write("short.dat", "0 :: 2 :: 3.5\n");
  expect_matrix(read(short_form, SFAC_FORMAT_MOVIELENS_DAT), 1, 3, {{0, 2, 3.5f}});
}

TEST_F(IoMovieLens, MissingFieldNamesTheLineAndSeparator) {
  const auto path = write("ratings.dat", "1::2::3::4\n1::2\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_PARSE, "ratings.dat:2: expected 3 fields, found 2",
                    try_read(path, SFAC_FORMAT_MOVIELENS_DAT));
  const auto single_colons = write("single.dat", "1:2:3\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_PARSE, "'::'", try_read(single_colons, SFAC_FORMAT_MOVIELENS_DAT));
}

// ---- CSV ---------------------------------------------------------------------------------------

TEST_F(IoCsv, HeaderIsSkipped) {
  const auto path = write("ratings.csv",
                          "userId,movieId,rating,timestamp\n"
                          "1,31,2.5,1260759144\n"
                          "1,1029,3.0,1260759179\n"
                          "3,31,4.5,1260759185\n");
  expect_matrix(read(path, SFAC_FORMAT_CSV), 4, 1030,
                {{1, 31, 2.5f}, {1, 1029, 3.0f}, {3, 31, 4.5f}});
}

TEST_F(IoCsv, QuotedFieldsAndCrLf) {
  const auto path = write("export.csv", "\"user\",\"item\",\"rating\"\r\n\"0\",\"1\",\"2.5\"\r\n");
  expect_matrix(read(path, SFAC_FORMAT_CSV), 1, 2, {{0, 1, 2.5f}});
}

TEST_F(IoCsv, MissingHeaderIsRefusedRatherThanLosingARating) {
  const auto path = write("ratings.csv", "1,31,2.5\n1,1029,3.0\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_PARSE, "ratings.csv:1: expected a header line",
                    try_read(path, SFAC_FORMAT_CSV));
}

TEST_F(IoCsv, ErrorsCountPhysicalLines) {
  const auto path = write("ratings.csv", "u,i,r\n1,2,3\n1,abc,3\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_PARSE, "ratings.csv:3: invalid column id 'abc' in field 2",
                    try_read(path, SFAC_FORMAT_CSV));
  const auto short_line = write("short.csv", "u,i,r\n\n1,2\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_PARSE, "short.csv:3: expected 3 fields, found 2",
                    try_read(short_line, SFAC_FORMAT_CSV));
}

TEST_F(IoCsv, EmptyFile) {
  expect_matrix(read(write("empty.csv", ""), SFAC_FORMAT_CSV), 0, 0, {});
  expect_matrix(read(write("header_only.csv", "u,i,r\n"), SFAC_FORMAT_CSV), 0, 0, {});
}

// ---- AUTO detection ----------------------------------------------------------------------------

TEST_F(IoAuto, DetectsEachFormat) {
  const std::string mtx = "%%MatrixMarket matrix coordinate real general\n2 2 1\n2 1 7\n";
  const std::vector<Entry> mtx_entries = {{1, 0, 7.0f}};
  struct Case {
    const char* name;
    std::string text;
    sfac_file_format format;
  };
  const std::vector<Case> cases = {
      {"a.mtx", mtx, SFAC_FORMAT_MATRIX_MARKET},
      {"a.MM", mtx, SFAC_FORMAT_MATRIX_MARKET},
      {"matrix.txt", mtx, SFAC_FORMAT_MATRIX_MARKET},  // by the banner
      {"ratings.dat", "# c\n1::0::2::9\n", SFAC_FORMAT_MOVIELENS_DAT},
      {"ratings", "1::0::2\n", SFAC_FORMAT_MOVIELENS_DAT},  // by content alone
      {"ratings.csv", "u,i,r\n1,0,2\n", SFAC_FORMAT_CSV},
      {"r.CSV", "u,i,r\n1,0,2\n", SFAC_FORMAT_CSV},
      {"train.txt", "1 0 2\n", SFAC_FORMAT_TRIPLETS},
      {"u.data", "1\t0\t2\t881250949\n", SFAC_FORMAT_TRIPLETS},
      {"dotted.dir/noext", "1 0 2\n", SFAC_FORMAT_TRIPLETS},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    fs::create_directories(dir_ / fs::path(c.name).parent_path());
    const auto path = write(c.name, c.text);
    const Matrix automatic = read(path, SFAC_FORMAT_AUTO);
    const Matrix explicit_format = read(path, c.format);
    EXPECT_EQ(automatic.rows, explicit_format.rows);
    EXPECT_EQ(automatic.cols, explicit_format.cols);
    EXPECT_EQ(automatic.entries, explicit_format.entries);
    if (c.format == SFAC_FORMAT_MATRIX_MARKET) {
      expect_matrix(automatic, 2, 2, mtx_entries);
    } else {
      expect_matrix(automatic, 2, 1, {{1, 0, 2.0f}});
    }
  }
}

TEST_F(IoAuto, MtxExtensionWithoutBannerIsAMatrixMarketError) {
  const auto path = write("m.mtx", "1 1 1\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_PARSE, "m.mtx:1: missing '%%MatrixMarket'",
                    try_read(path, SFAC_FORMAT_AUTO));
}

TEST_F(IoAuto, ReadsTheCheckedInSamples) {
  expect_matrix(read(data_file("u.data"), SFAC_FORMAT_AUTO, SFAC_READ_ONE_BASED), 244, 377,
                {{195, 241, 3.f}, {185, 301, 3.f}, {21, 376, 1.f}, {243, 50, 2.f}, {195, 50, 5.f}});
  expect_matrix(read(data_file("ratings.dat"), SFAC_FORMAT_AUTO, SFAC_READ_ONE_BASED), 3, 1193,
                {{0, 1192, 5.f}, {0, 660, 3.f}, {1, 1192, 4.f}, {2, 913, 3.f}});
  expect_matrix(read(data_file("ratings.csv"), SFAC_FORMAT_AUTO), 8, 1062,
                {{1, 31, 2.5f}, {1, 1029, 3.f}, {2, 31, 4.5f}, {7, 1061, 0.5f}});
  expect_matrix(read(data_file("general.mtx"), SFAC_FORMAT_AUTO), 3, 4,
                {{0, 0, 1.5f}, {1, 2, -2.25f}, {2, 0, 1e-3f}, {2, 1, 4.f}});
  expect_matrix(read(data_file("symmetric.mtx"), SFAC_FORMAT_AUTO), 3, 3,
                {{0, 0, 2.f}, {1, 0, -1.f}, {0, 1, -1.f}, {1, 1, 2.f}, {2, 1, -1.f}, {1, 2, -1.f}});
  expect_matrix(read(data_file("pattern.mtx"), SFAC_FORMAT_AUTO), 2, 3,
                {{0, 1, 1.f}, {1, 0, 1.f}, {1, 2, 1.f}});
  expect_matrix(read(data_file("integer.mtx"), SFAC_FORMAT_AUTO), 2, 2,
                {{0, 1, -7.f}, {1, 1, 42.f}});
  SFAC_EXPECT_ERROR(SFAC_ERR_PARSE, "bad_count.mtx:4: the file ends after 2 of the 3 entries",
                    try_read(data_file("bad_count.mtx"), SFAC_FORMAT_AUTO));
  SFAC_EXPECT_ERROR(SFAC_ERR_UNSUPPORTED, "complex.mtx:1: 'complex'",
                    try_read(data_file("complex.mtx"), SFAC_FORMAT_AUTO));
}

// ---- Matrix Market -----------------------------------------------------------------------------

TEST_F(IoMatrixMarket, HeaderGivesTheShapeAndIndicesAreOneBased) {
  const auto path = write("m.mtx",
                          "%%MatrixMarket matrix coordinate real general\n"
                          "% comment\n"
                          "%\n"
                          "\n"
                          "5 6 2\n"
                          "1 1 0.5\n"
                          "  2   3   -4e2  \n");
  // ONE_BASED is irrelevant: Matrix Market is always 1-based.
  for (uint32_t flags : {0u, uint32_t{SFAC_READ_ONE_BASED}}) {
    expect_matrix(read(path, SFAC_FORMAT_MATRIX_MARKET, flags), 5, 6,
                  {{0, 0, 0.5f}, {1, 2, -400.f}});
  }
}

TEST_F(IoMatrixMarket, SymmetricOffDiagonalEntriesAreMirrored) {
  const auto path = write("s.mtx",
                          "%%MatrixMarket matrix coordinate real symmetric\n"
                          "3 3 3\n"
                          "1 1 4\n"
                          "3 1 -1.5\n"
                          "3 2 2\n");
  expect_matrix(read(path, SFAC_FORMAT_MATRIX_MARKET), 3, 3,
                {{0, 0, 4.f}, {2, 0, -1.5f}, {0, 2, -1.5f}, {2, 1, 2.f}, {1, 2, 2.f}});
}

TEST_F(IoMatrixMarket, PatternValuesAreOne) {
  const auto path = write("p.mtx",
                          "%%MatrixMarket matrix coordinate pattern symmetric\n"
                          "2 2 2\n"
                          "1 1\n"
                          "2 1\n");
  expect_matrix(read(path, SFAC_FORMAT_MATRIX_MARKET), 2, 2,
                {{0, 0, 1.f}, {1, 0, 1.f}, {0, 1, 1.f}});
}

TEST_F(IoMatrixMarket, IntegerValuesAndCaseInsensitiveBanner) {
  const auto path = write("i.mtx",
                          "%%matrixmarket MATRIX Coordinate INTEGER General\n"
                          "1 3 2\n"
                          "1 1 -3\n"
                          "1 3 16777216\n");
  expect_matrix(read(path, SFAC_FORMAT_MATRIX_MARKET), 1, 3, {{0, 0, -3.f}, {0, 2, 16777216.f}});
}

TEST_F(IoMatrixMarket, UnsupportedVariantsSayWhat) {
  const std::vector<std::pair<std::string, std::string>> banners = {
      {"matrix coordinate complex general", "'complex'"},
      {"matrix coordinate real hermitian", "'hermitian'"},
      {"matrix coordinate real skew-symmetric", "'skew-symmetric'"},
      {"matrix array real general", "'array'"},
      {"vector coordinate real general", "'vector'"},
  };
  for (const auto& [banner, needle] : banners) {
    SCOPED_TRACE(banner);
    const auto path = write("u.mtx", "%%MatrixMarket " + banner + "\n1 1 1\n1 1 1\n");
    SFAC_EXPECT_ERROR(SFAC_ERR_UNSUPPORTED, needle, try_read(path, SFAC_FORMAT_MATRIX_MARKET));
    SFAC_EXPECT_ERROR(SFAC_ERR_UNSUPPORTED, "not supported",
                      try_read(path, SFAC_FORMAT_MATRIX_MARKET));
  }
}

TEST_F(IoMatrixMarket, MalformedHeaders) {
  const std::string banner = "%%MatrixMarket matrix coordinate real general\n";
  struct Case {
    std::string text;
    sfac_status status;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {"", SFAC_ERR_PARSE, "m.mtx:1: missing '%%MatrixMarket'"},
      {"%%MatrixMarket matrix coordinate\n1 1 0\n", SFAC_ERR_PARSE, "m.mtx:1: incomplete"},
      {"%%MatrixMarket matrix coordinate real sideways\n1 1 0\n", SFAC_ERR_PARSE,
       "unknown Matrix Market symmetry 'sideways'"},
      {"%%MatrixMarket matrix coordinate quaternion general\n1 1 0\n", SFAC_ERR_PARSE,
       "unknown Matrix Market field 'quaternion'"},
      {banner + "% no size line\n", SFAC_ERR_PARSE, "m.mtx:2: missing size line"},
      {banner + "3 3\n", SFAC_ERR_PARSE, "m.mtx:2: expected the size line"},
      {banner + "3 x 1\n", SFAC_ERR_PARSE, "m.mtx:2: invalid column count 'x'"},
      {banner + "3 -3 1\n", SFAC_ERR_PARSE, "m.mtx:2: column count -3 is negative"},
      {banner + "3000000000 1 0\n", SFAC_ERR_OUT_OF_RANGE, "m.mtx:2: shape 3000000000 x 1"},
      {"%%MatrixMarket matrix coordinate real symmetric\n2 3 0\n", SFAC_ERR_PARSE,
       "m.mtx:2: a symmetric matrix must be square"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const auto path = write("m.mtx", c.text);
    SFAC_EXPECT_ERROR(c.status, c.needle, try_read(path, SFAC_FORMAT_MATRIX_MARKET));
  }
}

TEST_F(IoMatrixMarket, EntryCountMustMatchTheHeader) {
  const std::string head = "%%MatrixMarket matrix coordinate real general\n3 3 2\n";
  const auto fewer = write("m.mtx", head + "1 1 1\n% trailing comment\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_PARSE,
                    "m.mtx:4: the file ends after 1 of the 2 entries declared "
                    "on line 2",
                    try_read(fewer, SFAC_FORMAT_MATRIX_MARKET));
  const auto more = write("m.mtx", head + "1 1 1\n2 2 2\n3 3 3\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_PARSE, "m.mtx:5: more entries than the 2 declared on line 2",
                    try_read(more, SFAC_FORMAT_MATRIX_MARKET));
  // An absurd declared count must fail cleanly, not allocate for it.
  const auto huge = write("m.mtx",
                          "%%MatrixMarket matrix coordinate real general\n"
                          "3 3 9000000000000000000\n1 1 1\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_PARSE, "m.mtx:3: the file ends after 1 of the",
                    try_read(huge, SFAC_FORMAT_MATRIX_MARKET));
}

TEST_F(IoMatrixMarket, IndicesOutsideTheHeaderShapeNameTheLine) {
  const std::string head = "%%MatrixMarket matrix coordinate real general\n2 3 2\n1 1 1\n";
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "m.mtx:4: row index 3 is outside 1..2",
                    try_read(write("m.mtx", head + "3 1 1\n"), SFAC_FORMAT_MATRIX_MARKET));
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "m.mtx:4: column index 4 is outside 1..3",
                    try_read(write("m.mtx", head + "1 4 1\n"), SFAC_FORMAT_MATRIX_MARKET));
  SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_RANGE, "m.mtx:4: row index 0 is outside 1..2",
                    try_read(write("m.mtx", head + "0 1 1\n"), SFAC_FORMAT_MATRIX_MARKET));
}

TEST_F(IoMatrixMarket, EntryFieldCounts) {
  const auto extra = write("m.mtx",
                           "%%MatrixMarket matrix coordinate real general\n"
                           "2 2 1\n1 1 1 9\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_PARSE, "m.mtx:3: expected 3 fields, found 4",
                    try_read(extra, SFAC_FORMAT_MATRIX_MARKET));
  const auto missing = write("m.mtx",
                             "%%MatrixMarket matrix coordinate real general\n"
                             "2 2 1\n1 1\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_PARSE, "m.mtx:3: expected 3 fields, found 2",
                    try_read(missing, SFAC_FORMAT_MATRIX_MARKET));
  const auto pattern = write("m.mtx",
                             "%%MatrixMarket matrix coordinate pattern general\n"
                             "2 2 1\n1 1 1\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_PARSE, "m.mtx:3: expected 2 fields, found 3",
                    try_read(pattern, SFAC_FORMAT_MATRIX_MARKET));
}

TEST_F(IoMatrixMarket, NonFiniteValueNamesTheLine) {
  const auto path = write("m.mtx",
                          "%%MatrixMarket matrix coordinate real general\n"
                          "2 2 2\n1 1 1\n2 2 inf\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_VALUE, "m.mtx:4: value 'inf' in field 3 is not finite",
                    try_read(path, SFAC_FORMAT_MATRIX_MARKET));
}

// ---- Remapping ---------------------------------------------------------------------------------

TEST_F(IoRemap, DistinctIdsMapToAscendingIndices) {
  const auto path = write("ids.txt",
                          "1000 5000000000 1\n"
                          "7 42 2\n"
                          "1000 42 3\n"
                          "0 42 4\n");
  // ONE_BASED changes nothing once ids are remapped: ids are kept as in the file.
  for (uint32_t extra : {0u, uint32_t{SFAC_READ_ONE_BASED}}) {
    SCOPED_TRACE(extra);
    sfac_sparse* raw = nullptr;
    sfac_idmap *raw_rows = nullptr, *raw_cols = nullptr;
    SFAC_ASSERT_OK(sfac_read_sparse(ctx_.get(), path.c_str(), SFAC_FORMAT_TRIPLETS,
                                    SFAC_READ_REMAP_IDS | extra, &raw, &raw_rows, &raw_cols));
    const Sparse matrix(raw);
    const IdMap rows(raw_rows), cols(raw_cols);
    ASSERT_NE(rows, nullptr);
    ASSERT_NE(cols, nullptr);
    expect_matrix(download(matrix.get()), 3, 2,
                  {{2, 1, 1.f}, {1, 0, 2.f}, {2, 0, 3.f}, {0, 0, 4.f}});
    EXPECT_EQ(ids_of(rows.get()), (std::vector<int64_t>{0, 7, 1000}));
    EXPECT_EQ(ids_of(cols.get()), (std::vector<int64_t>{42, 5000000000}));
    EXPECT_EQ(lookup(rows.get(), {1000, 0, 7, 8, -1, 5000000000}),
              (std::vector<int32_t>{2, 0, 1, -1, -1, -1}));
    EXPECT_EQ(lookup(cols.get(), {5000000000, 42, 43}), (std::vector<int32_t>{1, 0, -1}));
  }
}

TEST_F(IoRemap, WithoutRemapTheMapOutputsAreNull) {
  const auto path = write("ids.txt", "1 2 3\n");
  sfac_sparse* raw = nullptr;
  sfac_idmap* rows = kMapSentinel;
  sfac_idmap* cols = kMapSentinel;
  SFAC_ASSERT_OK(
      sfac_read_sparse(ctx_.get(), path.c_str(), SFAC_FORMAT_AUTO, 0, &raw, &rows, &cols));
  const Sparse matrix(raw);
  EXPECT_EQ(rows, nullptr);
  EXPECT_EQ(cols, nullptr);
}

TEST_F(IoRemap, OnlyTheRequestedMapIsReturned) {
  const auto path = write("ids.txt", "10 20 3\n");
  sfac_sparse* raw = nullptr;
  sfac_idmap* cols = nullptr;
  SFAC_ASSERT_OK(sfac_read_sparse(ctx_.get(), path.c_str(), SFAC_FORMAT_TRIPLETS,
                                  SFAC_READ_REMAP_IDS, &raw, nullptr, &cols));
  const Sparse matrix(raw);
  const IdMap col_map(cols);
  EXPECT_EQ(ids_of(col_map.get()), (std::vector<int64_t>{20}));
  expect_matrix(download(matrix.get()), 1, 1, {{0, 0, 3.f}});
}

TEST_F(IoRemap, MatrixMarketKeepsTheFileIds) {
  const auto path = write("m.mtx",
                          "%%MatrixMarket matrix coordinate real symmetric\n"
                          "9 9 2\n"
                          "9 3 1\n"
                          "5 5 2\n");
  sfac_sparse* raw = nullptr;
  sfac_idmap *raw_rows = nullptr, *raw_cols = nullptr;
  SFAC_ASSERT_OK(sfac_read_sparse(ctx_.get(), path.c_str(), SFAC_FORMAT_AUTO, SFAC_READ_REMAP_IDS,
                                  &raw, &raw_rows, &raw_cols));
  const Sparse matrix(raw);
  const IdMap rows(raw_rows), cols(raw_cols);
  // Entries (9,3), (3,9) mirrored and (5,5): both sides see ids {3, 5, 9}.
  EXPECT_EQ(ids_of(rows.get()), (std::vector<int64_t>{3, 5, 9}));
  EXPECT_EQ(ids_of(cols.get()), (std::vector<int64_t>{3, 5, 9}));
  expect_matrix(download(matrix.get()), 3, 3, {{2, 0, 1.f}, {0, 2, 1.f}, {1, 1, 2.f}});
}

// Random files checked against a std::map model, once with dense ids (small range, direct
// table) and once with sparse 64-bit ids (sort + binary search).
TEST_F(IoRemap, RandomFilesMatchAReferenceModel) {
  std::mt19937_64 rng(test_seed());
  for (const int64_t id_range : {int64_t{300}, int64_t{1} << 62}) {
    SCOPED_TRACE(id_range);
    std::uniform_int_distribution<int64_t> id(0, id_range);
    std::uniform_int_distribution<int> rating(1, 10);
    std::map<std::pair<int64_t, int64_t>, float> cells;
    while (cells.size() < 2000) cells[{id(rng), id(rng)}] = 0.5f * static_cast<float>(rating(rng));
    std::string text;
    std::set<int64_t> row_set, col_set;
    for (const auto& [rc, v] : cells) {
      text += std::to_string(rc.first) + "\t" + std::to_string(rc.second) + "\t" +
              std::to_string(v) + "\t123\n";
      row_set.insert(rc.first);
      col_set.insert(rc.second);
    }
    const auto path = write("random.data", text);
    sfac_sparse* raw = nullptr;
    sfac_idmap *raw_rows = nullptr, *raw_cols = nullptr;
    SFAC_ASSERT_OK(sfac_read_sparse(ctx_.get(), path.c_str(), SFAC_FORMAT_AUTO, SFAC_READ_REMAP_IDS,
                                    &raw, &raw_rows, &raw_cols));
    const Sparse matrix(raw);
    const IdMap rows(raw_rows), cols(raw_cols);
    const std::vector<int64_t> row_ids(row_set.begin(), row_set.end());
    const std::vector<int64_t> col_ids(col_set.begin(), col_set.end());
    ASSERT_EQ(ids_of(rows.get()), row_ids);
    ASSERT_EQ(ids_of(cols.get()), col_ids);
    std::vector<Entry> expected;
    for (const auto& [rc, v] : cells) {
      const auto r = std::lower_bound(row_ids.begin(), row_ids.end(), rc.first) - row_ids.begin();
      const auto c = std::lower_bound(col_ids.begin(), col_ids.end(), rc.second) - col_ids.begin();
      expected.emplace_back(static_cast<int32_t>(r), static_cast<int32_t>(c), v);
    }
    expect_matrix(download(matrix.get()), static_cast<int64_t>(row_ids.size()),
                  static_cast<int64_t>(col_ids.size()), expected);
  }
}

// ---- Duplicates --------------------------------------------------------------------------------

TEST_F(IoDuplicates, AreAnErrorByDefaultAndSummedOnRequest) {
  const auto path = write("dup.txt", "0 0 1\n1 1 1\n0 0 2.5\n");
  expect_duplicate(path, SFAC_FORMAT_TRIPLETS, 0,
                   path + ":3: duplicate entry (row 0, col 0), first given on line 1" + kHint);
  expect_matrix(read(path, SFAC_FORMAT_TRIPLETS, SFAC_SPARSE_SUM_DUPLICATES), 2, 2,
                {{0, 0, 3.5f}, {1, 1, 1.f}});
}

// Lines are physical lines, as an editor numbers them: comments, blank lines and the CR of a
// CRLF ending count as they do in parse errors, so the entries' positions (0 and 3) differ.
TEST_F(IoDuplicates, TripletLinesCountCommentsAndBlankLines) {
  for (const std::string eol : {"\n", "\r\n"}) {
    SCOPED_TRACE(eol == "\n" ? "LF" : "CRLF");
    const auto path =
        write("dup.txt", "# user item rating" + eol + eol + "0 5 1" + eol + "# note" + eol +
                             "3 2 1" + eol + eol + "3 5 2" + eol + "0 5 4" + eol + "# end" + eol);
    expect_duplicate(path, SFAC_FORMAT_TRIPLETS, 0,
                     path + ":8: duplicate entry (row 0, col 5), first given on line 3" + kHint);
  }
}

// The reported duplicate is the first in (row, col) order, whatever the order in the file and
// however far apart its two lines are.
TEST_F(IoDuplicates, FarApartInALargeFile) {
  ctx_ = make_cpu_context(4);
  std::string text;
  int64_t line = 0;
  int64_t row2_line = 0;
  auto add = [&](const std::string& s) {
    text += s;
    ++line;
  };
  constexpr int kRows = 200000;
  for (int r = 0; r < kRows; ++r) {
    if (r % 1000 == 0) add("# block " + std::to_string(r / 1000) + "\n");
    if (r == 2) row2_line = line + 1;
    add(std::to_string(r) + " " + std::to_string(r % 97) + " 1\n");
  }
  add("6 6 2\n");
  const int64_t row6_again = line;
  add("2 2 2\n");
  const int64_t row2_again = line;
  const auto path = write("big.txt", text);
  ASSERT_GT(row2_again, row6_again);
  expect_duplicate(path, SFAC_FORMAT_TRIPLETS, 0,
                   path + ":" + std::to_string(row2_again) +
                       ": duplicate entry (row 2, col 2), first given on line " +
                       std::to_string(row2_line) + kHint);
}

// Messages give the ids as the file has them, not the matrix indices they became.
TEST_F(IoDuplicates, OneBasedFilesNameTheIdsAsWritten) {
  const auto path = write("u.data", "3 4 5\n1 1 3\n3 4 4\n");
  expect_duplicate(path, SFAC_FORMAT_TRIPLETS, SFAC_READ_ONE_BASED,
                   path + ":3: duplicate entry (row 3, col 4), first given on line 1" + kHint);
}

TEST_F(IoDuplicates, AfterRemapping) {
  const auto path = write("dup.txt", "100 7 1\n9000000000 7 5\n100 7 2\n");
  expect_duplicate(path, SFAC_FORMAT_TRIPLETS, SFAC_READ_REMAP_IDS,
                   path + ":3: duplicate entry (row 100, col 7), first given on line 1" + kHint);
  expect_matrix(read(path, SFAC_FORMAT_TRIPLETS, SFAC_READ_REMAP_IDS | SFAC_SPARSE_SUM_DUPLICATES),
                2, 1, {{0, 0, 3.f}, {1, 0, 5.f}});
  const auto one_based = write("one.txt", "9000000000 1 1\n5 2 5\n9000000000 1 2\n");
  expect_duplicate(
      one_based, SFAC_FORMAT_TRIPLETS, SFAC_READ_REMAP_IDS | SFAC_READ_ONE_BASED,
      one_based + ":3: duplicate entry (row 9000000000, col 1), first given on line 1" + kHint);
}

// The banner, the comments and the size line count; ids are Matrix Market's one-based ones.
TEST_F(IoDuplicates, MatrixMarketLinesCountTheHeaderAndComments) {
  const auto path = write("m.mtx",
                          "%%MatrixMarket matrix coordinate real general\n"
                          "% comment\n"
                          "%\n"
                          "3 4 4\n"
                          "1 2 1\n"
                          "3 4 1\n"
                          "% between\n"
                          "\n"
                          "1 2 5\n"
                          "2 2 1\n");
  expect_duplicate(path, SFAC_FORMAT_MATRIX_MARKET, 0,
                   path + ":9: duplicate entry (row 1, col 2), first given on line 5" + kHint);
  expect_duplicate(path, SFAC_FORMAT_AUTO, SFAC_READ_REMAP_IDS,
                   path + ":9: duplicate entry (row 1, col 2), first given on line 5" + kHint);
  const auto pattern = write("p.mtx",
                             "%%MatrixMarket matrix coordinate pattern general\n"
                             "2 2 3\n2 1\n1 1\n2 1\n");
  expect_duplicate(pattern, SFAC_FORMAT_MATRIX_MARKET, 0,
                   pattern + ":5: duplicate entry (row 2, col 1), first given on line 3" + kHint);
}

// A symmetric file gives (j, i) for its (i, j): the message says which line did, since
// searching the file for the reported entry would not find it there.
TEST_F(IoDuplicates, SymmetricFilesNameTheMirroringLine) {
  const std::string banner = "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n";
  // Entries (lines 3 and 4) and which of them the message names as the mirror.
  const struct {
    const char* name;
    const char* entries;
    const char* mirror;
  } cases[] = {{"s1.mtx", "2 1 1\n1 2 2\n", "line 3 gives"},
               {"s2.mtx", "1 2 1\n2 1 2\n", "line 4 gives"},
               {"s3.mtx", "2 1 1\n2 1 2\n", "lines 3 and 4 give"}};
  for (const auto& c : cases) {
    const auto path = write(c.name, banner + c.entries);
    expect_duplicate(path, SFAC_FORMAT_MATRIX_MARKET, 0,
                     path + ":4: duplicate entry (row 1, col 2), first given on line 3; symmetric "
                            "file: " + c.mirror + " it as its mirror (row 2, col 1)" + kHint);
  }
  const auto first_mirrored = write("s1.mtx", banner + "2 1 1\n1 2 2\n");
  expect_matrix(read(first_mirrored, SFAC_FORMAT_MATRIX_MARKET, SFAC_SPARSE_SUM_DUPLICATES), 2, 2,
                {{0, 1, 3.f}, {1, 0, 3.f}});
  const auto diagonal = write("s4.mtx", banner + "% c\n2 2 1\n2 2 2\n");
  expect_duplicate(diagonal, SFAC_FORMAT_MATRIX_MARKET, 0,
                   diagonal + ":5: duplicate entry (row 2, col 2), first given on line 4" + kHint);
}

TEST_F(IoDuplicates, MovieLensDatAndCsvLines) {
  const auto dat = write("ratings.dat",
                         "1::2::5::978300760\n"
                         "3::4::1::978300761\n"
                         "1::2::4::978300762\n");
  expect_duplicate(dat, SFAC_FORMAT_MOVIELENS_DAT, SFAC_READ_ONE_BASED,
                   dat + ":3: duplicate entry (row 1, col 2), first given on line 1" + kHint);
  expect_duplicate(dat, SFAC_FORMAT_AUTO, 0,
                   dat + ":3: duplicate entry (row 1, col 2), first given on line 1" + kHint);
  // The header is line 1.
  const auto csv = write("ratings.csv",
                         "userId,movieId,rating,timestamp\n"
                         "1,31,2.5,1260759144\n"
                         "# comment\n"
                         "1,1029,3.0,1260759179\n"
                         "1,31,4.0,1260759185\n");
  expect_duplicate(csv, SFAC_FORMAT_CSV, 0,
                   csv + ":5: duplicate entry (row 1, col 31), first given on line 2" + kHint);
  expect_duplicate(csv, SFAC_FORMAT_AUTO, SFAC_READ_REMAP_IDS,
                   csv + ":5: duplicate entry (row 1, col 31), first given on line 2" + kHint);
}

// A pipe cannot be read a second time to find the lines (opening it again would wait for a
// writer that never comes): the message keeps the input positions and names the file.
TEST_F(IoDuplicates, PipesKeepInputPositions) {
  const std::string path = (dir_ / "pipe").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
  std::thread writer([&] { std::ofstream(path, std::ios::binary) << "0 0 1\n1 1 1\n0 0 2\n"; });
  sfac_clear_last_error();
  const sfac_status status = try_read(path, SFAC_FORMAT_TRIPLETS);
  writer.join();
  EXPECT_EQ(status, SFAC_ERR_DUPLICATE_ENTRY);
  EXPECT_EQ(std::string(sfac_last_error()),
            path + ": duplicate entry (row 0, col 0) at input positions 0 and 2" + kHint);
}

// Finding the lines allocates (the file's text, again). Running out of memory there must not
// turn the duplicate into another error: the message falls back to the input positions.
TEST_F(IoDuplicates, AllocationFailuresWhileFindingTheLines) {
  const auto path = write("dup.txt", "0 0 1\n1 1 1\n0 0 2.5\n");
  const std::string lines =
      path + ":3: duplicate entry (row 0, col 0), first given on line 1" + kHint;
  const std::string positions =
      path + ": duplicate entry (row 0, col 0) at input positions 0 and 2" + kHint;
  int fallbacks = 0;
  for (int64_t n = 1; n < 100000; ++n) {
    sfac_clear_last_error();
    sfac_test::faults::arm(n);
    const sfac_status status = try_read(path, SFAC_FORMAT_TRIPLETS);
    const bool injected = sfac_test::faults::disarm();
    const std::string message = sfac_last_error();
    if (!injected) {
      EXPECT_EQ(status, SFAC_ERR_DUPLICATE_ENTRY);
      EXPECT_EQ(message, lines);
      break;
    }
    SCOPED_TRACE("allocation " + std::to_string(n) + ": " + message);
    ASSERT_TRUE(status == SFAC_ERR_DUPLICATE_ENTRY || status == SFAC_ERR_OUT_OF_MEMORY)
        << sfac_status_string(status);
    // The message itself may be what could not be allocated: it is then cut short (messages
    // are formatted through a stream, which stops rather than throws) or empty.
    if (status == SFAC_ERR_DUPLICATE_ENTRY) {
      EXPECT_TRUE(lines.compare(0, message.size(), message) == 0 ||
                  positions.compare(0, message.size(), message) == 0);
      fallbacks += message == positions;
    }
  }
  EXPECT_GT(fallbacks, 0);
}

// A CUDA context converts on the device, which reports through the same error: the same lines.
TEST_F(IoDuplicates, CudaContextsNameTheSameLines) {
  const std::string missing = backend_missing(SFAC_BACKEND_CUDA);
  if (!missing.empty()) GTEST_SKIP() << missing;
  ctx_ = make_context(SFAC_BACKEND_CUDA);
  const auto path = write("dup.txt", "# c\n3 1 1\n0 0 1\n1 1 1\n3 1 2\n0 0 2.5\n");
  expect_duplicate(path, SFAC_FORMAT_TRIPLETS, 0,
                   path + ":6: duplicate entry (row 0, col 0), first given on line 3" + kHint);
  const auto sym =
      write("s.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 2 1\n2 1 2\n");
  expect_duplicate(sym, SFAC_FORMAT_MATRIX_MARKET, 0,
                   sym +
                       ":4: duplicate entry (row 1, col 2), first given on line 3; symmetric "
                       "file: line 4 gives it as its mirror (row 2, col 1)" +
                       kHint);
}

// ---- Writing -----------------------------------------------------------------------------------

// A random finite float from random bits: covers subnormals, -0, huge and tiny magnitudes.
float random_finite_float(std::mt19937_64& rng) {
  for (;;) {
    const uint32_t bits = static_cast<uint32_t>(rng());
    float f;
    std::memcpy(&f, &bits, sizeof f);
    if (std::isfinite(f)) return f;
  }
}

TEST_F(IoWrite, RoundTripIsBitExact) {
  std::mt19937_64 rng(test_seed());
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int round = 0; round < 5; ++round) {
    SCOPED_TRACE(round);
    // The last round writes several MiB, more than the writer's buffer holds.
    const int64_t max_dim = round < 4 ? 300 : 3000;
    const int64_t rows = std::uniform_int_distribution<int64_t>(1, max_dim)(rng);
    const int64_t cols = std::uniform_int_distribution<int64_t>(1, max_dim)(rng);
    const int64_t nnz = round < 4 ? std::uniform_int_distribution<int64_t>(0, rows * cols / 3)(rng)
                                  : std::min<int64_t>(200000, rows * cols / 2);
    std::set<std::pair<int32_t, int32_t>> cells;
    std::uniform_int_distribution<int32_t> rd(0, static_cast<int32_t>(rows - 1));
    std::uniform_int_distribution<int32_t> cd(0, static_cast<int32_t>(cols - 1));
    while (static_cast<int64_t>(cells.size()) < nnz) cells.insert({rd(rng), cd(rng)});
    std::vector<int32_t> r, c;
    std::vector<float> v;
    for (const auto& [i, j] : cells) {
      r.push_back(i);
      c.push_back(j);
      v.push_back((rng() & 1) ? normal(rng) : random_finite_float(rng));
    }
    if (!v.empty()) v[0] = -0.0f;
    sfac_sparse* raw = nullptr;
    SFAC_ASSERT_OK(sfac_sparse_create_coo(ctx_.get(), rows, cols, nnz, r.data(), c.data(), v.data(),
                                          SFAC_SPARSE_DEFAULT, &raw));
    const Sparse original(raw);
    const auto path = (dir_ / "round.mtx").string();
    SFAC_ASSERT_OK(sfac_write_matrix_market(original.get(), path.c_str()));

    sfac_sparse* back_raw = nullptr;
    SFAC_ASSERT_OK(sfac_read_sparse(ctx_.get(), path.c_str(), SFAC_FORMAT_AUTO, 0, &back_raw,
                                    nullptr, nullptr));
    const Sparse back(back_raw);
    int64_t back_rows = 0, back_cols = 0, back_nnz = 0;
    SFAC_ASSERT_OK(sfac_sparse_get_shape(back.get(), &back_rows, &back_cols, &back_nnz));
    ASSERT_EQ(back_rows, rows);  // the header keeps empty trailing rows and columns
    ASSERT_EQ(back_cols, cols);
    ASSERT_EQ(back_nnz, nnz);
    std::vector<int64_t> off_a(rows + 1), off_b(rows + 1);
    std::vector<int32_t> idx_a(nnz), idx_b(nnz);
    std::vector<float> val_a(nnz), val_b(nnz);
    SFAC_ASSERT_OK(sfac_sparse_download_csr(original.get(), off_a.data(),
                                            static_cast<int64_t>(off_a.size()), idx_a.data(),
                                            val_a.data(), static_cast<int64_t>(idx_a.size())));
    SFAC_ASSERT_OK(sfac_sparse_download_csr(back.get(), off_b.data(),
                                            static_cast<int64_t>(off_b.size()), idx_b.data(),
                                            val_b.data(), static_cast<int64_t>(idx_b.size())));
    EXPECT_EQ(off_a, off_b);
    EXPECT_EQ(idx_a, idx_b);
    // (memcmp must not see the null data of empty vectors: nnz may be drawn as 0.)
    EXPECT_TRUE(val_a.empty() ||
                std::memcmp(val_a.data(), val_b.data(), val_a.size() * sizeof(float)) == 0)
        << "values differ in their bits";
  }
}

TEST_F(IoWrite, FileLayout) {
  const int32_t r[] = {0, 1, 1};
  const int32_t c[] = {2, 0, 2};
  const float v[] = {0.1f, -3.0f, 1e-30f};
  sfac_sparse* raw = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_coo(ctx_.get(), 3, 4, 3, r, c, v, 0, &raw));
  const Sparse m(raw);
  const auto path = (dir_ / "layout.mtx").string();
  SFAC_ASSERT_OK(sfac_write_matrix_market(m.get(), path.c_str()));
  const std::string text = read_text(path);
  EXPECT_EQ(text.rfind("%%MatrixMarket matrix coordinate real general\n%", 0), 0u) << text;
  EXPECT_NE(text.find("libsparsefac"), std::string::npos) << text;
  EXPECT_NE(text.find("\n3 4 3\n1 3 0.1\n2 1 -3\n2 3 1e-30\n"), std::string::npos) << text;
}

TEST_F(IoWrite, EmptyMatricesRoundTrip) {
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{0, 0}, {3, 5}}) {
    sfac_sparse* raw = nullptr;
    SFAC_ASSERT_OK(
        sfac_sparse_create_coo(ctx_.get(), rows, cols, 0, nullptr, nullptr, nullptr, 0, &raw));
    const Sparse m(raw);
    const auto path = (dir_ / "empty.mtx").string();
    SFAC_ASSERT_OK(sfac_write_matrix_market(m.get(), path.c_str()));
    expect_matrix(read(path, SFAC_FORMAT_AUTO), rows, cols, {});
  }
}

TEST_F(IoWrite, OverwritesAnExistingFile) {
  const auto path = write("old.mtx", std::string(10000, 'x'));
  sfac_sparse* raw = nullptr;
  const int32_t zero = 0;
  const float one = 1.0f;
  SFAC_ASSERT_OK(sfac_sparse_create_coo(ctx_.get(), 1, 1, 1, &zero, &zero, &one, 0, &raw));
  const Sparse m(raw);
  SFAC_ASSERT_OK(sfac_write_matrix_market(m.get(), path.c_str()));
  expect_matrix(read(path, SFAC_FORMAT_AUTO), 1, 1, {{0, 0, 1.f}});
}

TEST_F(IoWrite, Errors) {
  sfac_sparse* raw = nullptr;
  SFAC_ASSERT_OK(sfac_sparse_create_coo(ctx_.get(), 2, 2, 0, nullptr, nullptr, nullptr, 0, &raw));
  const Sparse m(raw);
  const auto missing_dir = (dir_ / "no" / "such" / "dir.mtx").string();
  SFAC_EXPECT_ERROR(SFAC_ERR_IO, missing_dir + " for writing: No such file or directory",
                    sfac_write_matrix_market(m.get(), missing_dir.c_str()));
  SFAC_EXPECT_ERROR(SFAC_ERR_IO, "cannot open",
                    sfac_write_matrix_market(m.get(), dir_.string().c_str()));
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "path is NULL",
                    sfac_write_matrix_market(m.get(), nullptr));
  SFAC_EXPECT_STATUS(SFAC_ERR_INVALID_HANDLE, sfac_write_matrix_market(nullptr, "x.mtx"));
}

// ---- Errors ------------------------------------------------------------------------------------

TEST_F(IoErrors, MalformedLinesNameFileAndLine) {
  struct Case {
    std::string text;
    sfac_status status;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {"0 0 1\n# c\n1 2\n", SFAC_ERR_PARSE, "file.txt:3: expected 3 fields, found 2"},
      {"0 0 1\n\n0 1 abc\n", SFAC_ERR_PARSE, "file.txt:3: invalid number 'abc' in field 3"},
      {"0 0 1\n1 1 1\nx1 0 1\n", SFAC_ERR_PARSE, "file.txt:3: invalid row id 'x1' in field 1"},
      {"0 0 1\n1 1 1\n12x 0 1\n", SFAC_ERR_PARSE, "file.txt:3: invalid row id '12x'"},
      {"0 0 1\n1 1 1\n1.5 0 1\n", SFAC_ERR_PARSE, "file.txt:3: invalid row id '1.5'"},
      {"0 0 1\n1 1 1\n0 0 1.5.5\n", SFAC_ERR_PARSE, "file.txt:3: invalid number '1.5.5'"},
      {"0 0 1\n1 1 1\n0 -4 1\n", SFAC_ERR_OUT_OF_RANGE,
       "file.txt:3: column id -4 in field 2 is "
       "negative"},
      {"0 0 1\n1 1 nan\n", SFAC_ERR_INVALID_VALUE,
       "file.txt:2: value 'nan' in field 3 is not "
       "finite"},
      {"0 0 1\n1 1 -inf\n", SFAC_ERR_INVALID_VALUE, "file.txt:2: value '-inf'"},
      {"0 0 1\n1 1 1e39\n", SFAC_ERR_INVALID_VALUE, "file.txt:2: value '1e39'"},
      {"0 0 1\n2147483647 0 1\n", SFAC_ERR_OUT_OF_RANGE,
       "file.txt:2: row id 2147483647 does not fit the int32 index range"},
      {"0 0 1\n0 3000000000 1\n", SFAC_ERR_OUT_OF_RANGE, "file.txt:2: column id 3000000000"},
      {"0 0 1\n0 99999999999999999999 1\n", SFAC_ERR_OUT_OF_RANGE,
       "file.txt:2: column id 99999999999999999999 in field 2 does not fit in 64 bits"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const auto path = write("file.txt", c.text);
    SFAC_EXPECT_ERROR(c.status, c.needle, try_read(path, SFAC_FORMAT_TRIPLETS));
  }
}

TEST_F(IoErrors, RemapStillRejectsNegativeAndNonNumericIds) {
  SFAC_EXPECT_ERROR(
      SFAC_ERR_OUT_OF_RANGE, "file.txt:1: row id -1",
      try_read(write("file.txt", "-1 0 1\n"), SFAC_FORMAT_TRIPLETS, SFAC_READ_REMAP_IDS));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_PARSE, "file.txt:2: invalid column id 'abc'",
      try_read(write("file.txt", "5 6 1\n5 abc 1\n"), SFAC_FORMAT_TRIPLETS, SFAC_READ_REMAP_IDS));
}

TEST_F(IoErrors, FilesThatCannotBeRead) {
  const auto missing = (dir_ / "missing.txt").string();
  SFAC_EXPECT_ERROR(SFAC_ERR_IO, "cannot open " + missing + ": No such file or directory",
                    try_read(missing, SFAC_FORMAT_AUTO));
  SFAC_EXPECT_ERROR(SFAC_ERR_IO, "Is a directory", try_read(dir_.string(), SFAC_FORMAT_AUTO));
  if (::geteuid() != 0) {  // root reads files whatever their permissions
    const auto locked = write("locked.txt", "0 0 1\n");
    fs::permissions(locked, fs::perms::none);
    SFAC_EXPECT_ERROR(SFAC_ERR_IO, "Permission denied", try_read(locked, SFAC_FORMAT_AUTO));
  }
}

// Bytes of a binary file quoted in a message: escaped (no NUL cutting the message short, no
// control sequences reaching a terminal) and cut at 40.
TEST_F(IoErrors, BinaryFieldsAreEscapedAndCutInMessages) {
  std::string field = "\x01\x02";
  field += "a'b\\";
  field += '\0';
  field += "c\xff\x1b[31m";
  const auto path = write("binary.txt", "0 0 1\n1 2 " + field + "\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_PARSE,
                    R"(binary.txt:2: invalid number '\x01\x02a\x27b\x5c\x00c\xff\x1b[31m' in field 3)",
                    try_read(path, SFAC_FORMAT_TRIPLETS));
  std::string bell_field(100, '\x07'), expected = "invalid number '";
  for (int i = 0; i < 40; ++i) expected += R"(\x07)";
  expected += "...' in field 3";
  const auto long_path = write("long.txt", "0 0 " + bell_field + "\n");
  SFAC_EXPECT_ERROR(SFAC_ERR_PARSE, expected, try_read(long_path, SFAC_FORMAT_TRIPLETS));
  const std::string message = sfac_last_error();
  for (char c : message) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << static_cast<int>(c);
}

TEST_F(IoErrors, BadArguments) {
  const auto path = write("ok.txt", "0 0 1\n");
  sfac_sparse* out = kSparseSentinel;
  SFAC_EXPECT_ERROR(
      SFAC_ERR_INVALID_ARGUMENT, "path is NULL",
      sfac_read_sparse(ctx_.get(), nullptr, SFAC_FORMAT_AUTO, 0, &out, nullptr, nullptr));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_INVALID_ARGUMENT, "out is NULL",
      sfac_read_sparse(ctx_.get(), path.c_str(), SFAC_FORMAT_AUTO, 0, nullptr, nullptr, nullptr));
  SFAC_EXPECT_ERROR(
      SFAC_ERR_INVALID_HANDLE, "ctx is NULL",
      sfac_read_sparse(nullptr, path.c_str(), SFAC_FORMAT_AUTO, 0, &out, nullptr, nullptr));
  for (uint32_t flags : {1u << 1, 1u << 7, 1u << 10, 1u << 31}) {
    SCOPED_TRACE(flags);
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "unknown bits",
                      try_read(path, SFAC_FORMAT_AUTO, flags));
  }
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "unknown file format",
                    try_read(path, static_cast<sfac_file_format>(99), 0));
  EXPECT_EQ(out, kSparseSentinel);
}

TEST_F(IoErrors, IdMapArguments) {
  const auto path = write("ids.txt", "3 4 1\n");
  sfac_sparse* raw = nullptr;
  sfac_idmap* raw_rows = nullptr;
  SFAC_ASSERT_OK(sfac_read_sparse(ctx_.get(), path.c_str(), SFAC_FORMAT_TRIPLETS,
                                  SFAC_READ_REMAP_IDS, &raw, &raw_rows, nullptr));
  const Sparse m(raw);
  const IdMap rows(raw_rows);
  int32_t index = 0;
  const int64_t id = 3;
  SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "count = -1",
                    sfac_idmap_lookup(rows.get(), -1, &id, &index));
  SFAC_EXPECT_STATUS(SFAC_OK, sfac_idmap_lookup(rows.get(), 0, nullptr, nullptr));
  SFAC_EXPECT_STATUS(SFAC_ERR_INVALID_HANDLE, sfac_idmap_get_size(nullptr, nullptr));
  SFAC_EXPECT_STATUS(SFAC_OK, sfac_idmap_destroy(nullptr));
}

}  // namespace
