#include "io/model_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

namespace sfac::io {
namespace {

// The arrays are copied to and from the file as raw bytes; that is only the documented format
// where float and double are IEEE 754 binary32 and binary64.
static_assert(std::numeric_limits<float>::is_iec559 && sizeof(float) == 4, "float32 expected");
static_assert(std::numeric_limits<double>::is_iec559 && sizeof(double) == 8, "float64 expected");

constexpr char kMagic[8] = {'S', 'F', 'A', 'C', 'M', 'D', 'L', '\0'};
constexpr uint32_t kFormatVersion = 1;
constexpr uint32_t kByteOrderMarker = 0x01020304;
constexpr uint32_t kSwappedByteOrderMarker = 0x04030201;
constexpr uint32_t kDtypeFloat32 = 0;
constexpr uint32_t kFlagHasBiases = 1u << 0;
constexpr size_t kHeaderBytes = 76;
constexpr size_t kChecksumBytes = 4;
constexpr int64_t kMaxDimension = std::numeric_limits<int32_t>::max();

// Linux transfers at most ~2 GiB per read()/write() call; stay below that.
constexpr size_t kMaxIoChunk = size_t{1} << 30;
constexpr size_t kOutputBufferBytes = size_t{1} << 20;
// Arrays are read in pieces of this many floats (64 MiB), so that memory grows with the bytes
// that actually arrive rather than with what a header claims.
constexpr size_t kReadChunkFloats = size_t{1} << 24;

// ---- CRC-32 ----------------------------------------------------------------------------------

constexpr std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t n = 0; n < 256; ++n) {
    uint32_t c = n;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[n] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();

// ---- Header ----------------------------------------------------------------------------------

struct Header {
  uint32_t version = 0;
  uint32_t marker = 0;
  uint32_t dtype = 0;
  uint32_t algorithm = 0;
  int64_t users = 0;
  int64_t items = 0;
  int64_t rank = 0;
  uint32_t flags = 0;
  double lambda_user = 0.0;
  double implicit_alpha = 0.0;
  uint32_t regularization = 0;
  float global_mean = 0.0f;
};

// The one place that fixes the field order after the magic, shared by encode and decode so the
// two cannot disagree.
template <typename H, typename Visit>
constexpr void for_each_field(H& h, Visit&& visit) {
  visit(h.version);
  visit(h.marker);
  visit(h.dtype);
  visit(h.algorithm);
  visit(h.users);
  visit(h.items);
  visit(h.rank);
  visit(h.flags);
  visit(h.lambda_user);
  visit(h.implicit_alpha);
  visit(h.regularization);
  visit(h.global_mean);
}

constexpr size_t packed_header_bytes() {
  Header h;
  size_t bytes = sizeof(kMagic);
  for_each_field(h, [&bytes](const auto& field) { bytes += sizeof(field); });
  return bytes;
}
static_assert(packed_header_bytes() == kHeaderBytes, "header layout differs from model_file.h");

std::array<unsigned char, kHeaderBytes> encode(const Header& h) {
  std::array<unsigned char, kHeaderBytes> bytes{};
  std::memcpy(bytes.data(), kMagic, sizeof(kMagic));
  size_t at = sizeof(kMagic);
  for_each_field(h, [&](const auto& field) {
    std::memcpy(bytes.data() + at, &field, sizeof(field));
    at += sizeof(field);
  });
  return bytes;
}

Header decode(const unsigned char* bytes) {
  Header h;
  size_t at = sizeof(kMagic);
  for_each_field(h, [&](auto& field) {
    std::memcpy(&field, bytes + at, sizeof(field));
    at += sizeof(field);
  });
  return h;
}

bool has_biases(const Header& h) { return (h.flags & kFlagHasBiases) != 0; }

// Floats after the header. The dimension checks bound users + items by 2^32 and rank by 2^31,
// so this cannot overflow 64 bits.
uint64_t payload_floats(const Header& h) {
  const uint64_t rows = static_cast<uint64_t>(h.users) + static_cast<uint64_t>(h.items);
  return rows * static_cast<uint64_t>(h.rank) + (has_biases(h) ? rows : 0);
}

std::string hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", static_cast<unsigned>(value));
  return text;
}

// Everything in the header that can be checked without reading further. Runs before any
// allocation, which is what keeps a corrupted header from asking for 10^18 floats.
void check_header(const Header& h, const std::string& path) {
  if (h.marker == kSwappedByteOrderMarker) {
    fail(SFAC_ERR_UNSUPPORTED, path,
         ": written on a machine of the other byte order (byte-order marker reads ", hex(h.marker),
         "); byte-swapped model files are not supported");
  }
  SFAC_REQUIRE(h.marker == kByteOrderMarker, SFAC_ERR_PARSE, path,
               ": corrupt header: byte-order marker is ", hex(h.marker), ", expected ",
               hex(kByteOrderMarker));
  SFAC_REQUIRE(h.version == kFormatVersion, SFAC_ERR_PARSE, path,
               ": unsupported model format version ", h.version, " (this library reads version ",
               kFormatVersion, ")");
  SFAC_REQUIRE(h.dtype == kDtypeFloat32, SFAC_ERR_PARSE, path, ": unsupported dtype ", h.dtype,
               " (only 0 = float32 is defined)");
  SFAC_REQUIRE(h.users >= 0 && h.users <= kMaxDimension, SFAC_ERR_PARSE, path,
               ": corrupt header: users = ", h.users, " outside 0..", kMaxDimension);
  SFAC_REQUIRE(h.items >= 0 && h.items <= kMaxDimension, SFAC_ERR_PARSE, path,
               ": corrupt header: items = ", h.items, " outside 0..", kMaxDimension);
  SFAC_REQUIRE(h.rank >= 1 && h.rank <= kMaxDimension, SFAC_ERR_PARSE, path,
               ": corrupt header: rank = ", h.rank, " outside 1..", kMaxDimension);
  SFAC_REQUIRE((h.flags & ~kFlagHasBiases) == 0, SFAC_ERR_PARSE, path,
               ": corrupt header: unknown flag bits ", hex(h.flags & ~kFlagHasBiases));
  SFAC_REQUIRE(h.algorithm <= SFAC_ALGO_SGD, SFAC_ERR_PARSE, path,
               ": corrupt header: unknown algorithm ", h.algorithm);
  SFAC_REQUIRE(h.regularization <= SFAC_REG_WEIGHTED, SFAC_ERR_PARSE, path,
               ": corrupt header: unknown regularization ", h.regularization);
  SFAC_REQUIRE(std::isfinite(h.lambda_user) && h.lambda_user >= 0.0, SFAC_ERR_PARSE, path,
               ": corrupt header: lambda_user = ", h.lambda_user, " (must be finite and >= 0)");
  SFAC_REQUIRE(std::isfinite(h.implicit_alpha) && h.implicit_alpha >= 0.0, SFAC_ERR_PARSE, path,
               ": corrupt header: implicit_alpha = ", h.implicit_alpha,
               " (must be finite and >= 0)");
  SFAC_REQUIRE(std::isfinite(h.global_mean), SFAC_ERR_PARSE, path,
               ": corrupt header: global_mean = ", h.global_mean, " is not finite");
}

// The arrays of a model with what to call them in messages; `width` values form one row.
struct Array {
  const char* name;
  const std::vector<float>* values;
  int64_t width;
};

std::vector<Array> arrays_of(const Model& m) {
  std::vector<Array> arrays = {{"user factors", &m.user_factors, m.rank},
                               {"item factors", &m.item_factors, m.rank}};
  if (m.has_biases) {
    arrays.push_back({"user biases", &m.user_bias, 1});
    arrays.push_back({"item biases", &m.item_bias, 1});
  }
  return arrays;
}

// Throws `status` naming the first NaN or infinity among the factors and biases.
void require_finite(const Model& m, sfac_status status, const std::string& prefix) {
  for (const Array& a : arrays_of(m)) {
    const std::vector<float>& values = *a.values;
    const auto bad =
        std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
    if (bad != values.end()) {
      fail(status, prefix, "non-finite value ", *bad, " in the ", a.name, " (row ",
           (bad - values.begin()) / a.width, ")");
    }
  }
}

// A model the library built must be internally consistent; one that is not is a bug, not bad
// input. Non-finite values are the caller's problem: saving them would write a file that load
// rejects.
void check_savable(const Model& m) {
  SFAC_REQUIRE(m.users >= 0 && m.users <= kMaxDimension && m.items >= 0 &&
                   m.items <= kMaxDimension && m.rank >= 1 && m.rank <= kMaxDimension,
               SFAC_ERR_INTERNAL, "model has invalid dimensions ", m.users, " x ", m.items,
               " rank ", m.rank);
  const auto size = [](int64_t n) { return static_cast<size_t>(n); };
  SFAC_REQUIRE(m.user_factors.size() == size(m.users * m.rank) &&
                   m.item_factors.size() == size(m.items * m.rank),
               SFAC_ERR_INTERNAL, "model factor arrays do not match its dimensions");
  SFAC_REQUIRE(
      !m.has_biases || (m.user_bias.size() == size(m.users) && m.item_bias.size() == size(m.items)),
      SFAC_ERR_INTERNAL, "model bias arrays do not match its dimensions");
  require_finite(m, SFAC_ERR_INVALID_VALUE, "model has a ");
  SFAC_REQUIRE(std::isfinite(m.global_mean), SFAC_ERR_INVALID_VALUE,
               "model has a non-finite global mean: ", m.global_mean);
}

// ---- Files -----------------------------------------------------------------------------------

// A file opened for reading, closed on scope exit.
class ReadFd {
 public:
  explicit ReadFd(const std::string& path) : path_(path) {
    do {
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (fd_ < 0 && errno == EINTR);
    if (fd_ < 0) fail(SFAC_ERR_IO, "cannot open ", path, ": ", std::strerror(errno));
    struct stat info;
    if (::fstat(fd_, &info) != 0) {
      const int error = errno;
      ::close(fd_);
      fail(SFAC_ERR_IO, "cannot open ", path, ": ", std::strerror(error));
    }
    // open() succeeds on a directory; say so rather than fail later with a read error.
    if (S_ISDIR(info.st_mode)) {
      ::close(fd_);
      fail(SFAC_ERR_IO, "cannot open ", path, ": ", std::strerror(EISDIR));
    }
    regular_ = S_ISREG(info.st_mode);
    size_ = regular_ ? static_cast<uint64_t>(info.st_size) : 0;
  }
  ~ReadFd() { ::close(fd_); }
  ReadFd(const ReadFd&) = delete;
  ReadFd& operator=(const ReadFd&) = delete;

  // Pipes and devices have no size to check the header against.
  bool regular() const { return regular_; }
  uint64_t size() const { return size_; }

  // Reads `bytes` bytes; fewer only at the end of the file. Returns the count.
  size_t read(void* data, size_t bytes) {
    auto* out = static_cast<char*>(data);
    size_t done = 0;
    while (done < bytes) {
      const ssize_t got = ::read(fd_, out + done, std::min(bytes - done, kMaxIoChunk));
      if (got < 0) {
        if (errno == EINTR) continue;
        fail(SFAC_ERR_IO, "cannot read ", path_, ": ", std::strerror(errno));
      }
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool regular_ = false;
  uint64_t size_ = 0;
};

// Writes a new file under a temporary name next to the target and renames it over the target
// in commit(): readers of the target see the old file or the complete new one, never a partial
// write. Without commit() the temporary file is removed. Also keeps a CRC-32 of the bytes.
class AtomicWriter {
 public:
  explicit AtomicWriter(const std::string& path)
      : path_(path), buffer_(new char[kOutputBufferBytes]) {  // before the file: nothing to undo
    // A name unique to this call: concurrent saves to one path must not write into the same
    // temporary file. O_EXCL never reuses a file someone else is writing.
    static std::atomic<uint64_t> counter{0};
    for (int attempt = 0; fd_ < 0; ++attempt) {
      temp_ = cat(path, ".tmp.", ::getpid(), ".", counter.fetch_add(1));
      fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ >= 0) break;
      const bool retry = errno == EINTR || (errno == EEXIST && attempt < 100);
      if (!retry) fail(SFAC_ERR_IO, "cannot open ", path, " for writing: ", std::strerror(errno));
    }
  }

  ~AtomicWriter() {
    if (fd_ >= 0) ::close(fd_);
    if (!temp_.empty()) ::unlink(temp_.c_str());
  }
  AtomicWriter(const AtomicWriter&) = delete;
  AtomicWriter& operator=(const AtomicWriter&) = delete;

  void write(const void* data, size_t bytes) {
    crc_ = crc32(data, bytes, crc_);
    if (bytes >= kOutputBufferBytes) {  // large arrays go straight from the model's memory
      flush();
      write_all(static_cast<const char*>(data), bytes);
      return;
    }
    if (kOutputBufferBytes - used_ < bytes) flush();
    std::memcpy(buffer_.get() + used_, data, bytes);
    used_ += bytes;
  }
  void write(const std::string& text) { write(text.data(), text.size()); }

  // CRC-32 of everything written so far.
  uint32_t crc() const { return crc_; }

  void commit() {
    flush();
    // The data must be on disk before the rename is: otherwise a crash can leave the new name
    // pointing at an empty file, which is exactly what writing a temporary file is to prevent.
    if (::fsync(fd_) != 0) fail_write(errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0 && errno != EINTR) fail_write(errno);  // NFS reports errors here
    if (::rename(temp_.c_str(), path_.c_str()) != 0) fail_write(errno);
    temp_.clear();  // now the target: the destructor must not remove it
  }

 private:
  void flush() {
    write_all(buffer_.get(), used_);
    used_ = 0;
  }

  void write_all(const char* data, size_t bytes) {
    size_t done = 0;
    while (done < bytes) {
      const ssize_t n = ::write(fd_, data + done, std::min(bytes - done, kMaxIoChunk));
      if (n < 0) {
        if (errno == EINTR) continue;
        fail_write(errno);
      }
      done += static_cast<size_t>(n);
    }
  }

  // The destructor removes the temporary file while the exception unwinds.
  [[noreturn]] void fail_write(int error) {
    fail(SFAC_ERR_IO, "cannot write ", path_, ": ", std::strerror(error));
  }

  std::string path_;
  std::unique_ptr<char[]> buffer_;
  std::string temp_;  // empty once renamed
  int fd_ = -1;
  size_t used_ = 0;
  uint32_t crc_ = 0;
};

[[noreturn]] void fail_truncated(const std::string& path, uint64_t expected, uint64_t found) {
  fail(SFAC_ERR_PARSE, path, ": truncated: expected ", expected, " bytes, found ", found);
}

// Appends the shortest text that reads back as the same float.
void append_float(std::string& line, float value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof(text), value);
  line.append(text, result.ptr);
}

}  // namespace

uint32_t crc32(const void* data, size_t size, uint32_t crc) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = kCrcTable[(crc ^ bytes[i]) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

void save_model(const Model& model, const std::string& path) {
  check_savable(model);
  Header h;
  h.version = kFormatVersion;
  h.marker = kByteOrderMarker;
  h.dtype = kDtypeFloat32;
  h.algorithm = static_cast<uint32_t>(model.algorithm);
  h.users = model.users;
  h.items = model.items;
  h.rank = model.rank;
  h.flags = model.has_biases ? kFlagHasBiases : 0;
  h.lambda_user = model.lambda_user;
  h.implicit_alpha = model.implicit_alpha;
  h.regularization = static_cast<uint32_t>(model.regularization);
  h.global_mean = model.global_mean;

  AtomicWriter out(path);
  const auto header = encode(h);
  out.write(header.data(), header.size());
  for (const Array& a : arrays_of(model)) {
    out.write(a.values->data(), a.values->size() * sizeof(float));
  }
  const uint32_t crc = out.crc();
  out.write(&crc, sizeof(crc));
  out.commit();
}

Model load_model(const std::string& path) {
  ReadFd in(path);
  unsigned char bytes[kHeaderBytes];
  const size_t got = in.read(bytes, kHeaderBytes);
  // A short file that starts like a model is a truncated model; anything else is foreign.
  SFAC_REQUIRE(std::memcmp(bytes, kMagic, std::min(got, sizeof(kMagic))) == 0, SFAC_ERR_PARSE, path,
               ": not a libsparsefac model (bad magic)");
  constexpr uint64_t kMinimumBytes = kHeaderBytes + kChecksumBytes;
  SFAC_REQUIRE(got == kHeaderBytes, SFAC_ERR_PARSE, path, ": truncated: expected at least ",
               kMinimumBytes, " bytes, found ", got);
  const Header h = decode(bytes);
  check_header(h, path);

  const uint64_t floats = payload_floats(h);
  SFAC_REQUIRE(floats <= (std::numeric_limits<uint64_t>::max() - kMinimumBytes) / sizeof(float),
               SFAC_ERR_PARSE, path, ": corrupt header: ", h.users, " users, ", h.items,
               " items and rank ", h.rank, " need more than 2^64 bytes");
  const uint64_t expected = kMinimumBytes + floats * sizeof(float);
  if (in.regular()) {
    if (in.size() < expected) fail_truncated(path, expected, in.size());
    SFAC_REQUIRE(in.size() == expected, SFAC_ERR_PARSE, path, ": size mismatch: expected ",
                 expected, " bytes, found ", in.size(), " (data after the checksum)");
  }

  Model m;
  m.algorithm = static_cast<sfac_algorithm>(h.algorithm);
  m.users = h.users;
  m.items = h.items;
  m.rank = h.rank;
  m.has_biases = has_biases(h);
  m.global_mean = h.global_mean;
  m.lambda_user = h.lambda_user;
  m.regularization = static_cast<sfac_regularization>(h.regularization);
  m.implicit_alpha = h.implicit_alpha;

  uint32_t crc = crc32(bytes, kHeaderBytes);
  uint64_t consumed = kHeaderBytes;
  const auto read_floats = [&](std::vector<float>& values, uint64_t count) {
    // The size check above bounds `count` by the file for regular files; for pipes memory only
    // grows by chunks that actually arrived.
    if (in.regular()) values.reserve(static_cast<size_t>(count));
    size_t done = 0;
    while (done < count) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(count - done, kReadChunkFloats));
      values.resize(done + n);
      const size_t want = n * sizeof(float);
      const size_t arrived = in.read(values.data() + done, want);
      crc = crc32(values.data() + done, arrived, crc);
      consumed += arrived;
      if (arrived < want) fail_truncated(path, expected, consumed);
      done += n;
    }
  };
  const uint64_t users = static_cast<uint64_t>(h.users);
  const uint64_t items = static_cast<uint64_t>(h.items);
  const uint64_t rank = static_cast<uint64_t>(h.rank);
  read_floats(m.user_factors, users * rank);
  read_floats(m.item_factors, items * rank);
  if (m.has_biases) {
    read_floats(m.user_bias, users);
    read_floats(m.item_bias, items);
  }
  uint32_t stored = 0;
  const size_t tail = in.read(&stored, sizeof(stored));
  if (tail < sizeof(stored)) fail_truncated(path, expected, consumed + tail);
  char extra;
  SFAC_REQUIRE(in.read(&extra, 1) == 0, SFAC_ERR_PARSE, path, ": size mismatch: data after the ",
               "checksum at byte ", expected);
  SFAC_REQUIRE(stored == crc, SFAC_ERR_PARSE, path, ": checksum mismatch (stored ", hex(stored),
               ", computed ", hex(crc), ")");

  // Only a file written by something other than save_model gets here with a NaN or an infinity,
  // but every later computation would silently spread it.
  require_finite(m, SFAC_ERR_PARSE, path + ": ");
  return m;
}

void export_libmf(const Model& model, const std::string& path) {
  check_savable(model);  // LIBMF cannot read "nan" or "inf" back either
  const int64_t k = model.rank + (model.has_biases ? 2 : 0);
  std::string line = cat("f 0\nm ", model.users, "\nn ", model.items, "\nk ", k, "\nb ");
  append_float(line, model.has_biases ? model.global_mean : 0.0f);
  line += '\n';
  AtomicWriter out(path);
  out.write(line);

  // One line per row: "p<u> T <k values>"; the "T" tells LIBMF the row is valid (it writes "F"
  // and zeros for rows it never saw in training).
  const auto write_rows = [&](char prefix, int64_t rows, const std::vector<float>& factors,
                              const std::vector<float>& bias, bool user_side) {
    for (int64_t r = 0; r < rows; ++r) {
      line.clear();
      line += prefix;
      line += std::to_string(r);
      line += " T";
      const float* row = factors.data() + r * model.rank;
      for (int64_t t = 0; t < model.rank; ++t) {
        line += ' ';
        append_float(line, row[t]);
      }
      if (model.has_biases) {
        // LIBMF predicts dot(p, q): two extra columns carry the bias terms into that product.
        const size_t i = static_cast<size_t>(r);
        const float first = user_side ? model.global_mean + bias[i] : 1.0f;
        const float second = user_side ? 1.0f : bias[i];
        line += ' ';
        append_float(line, first);
        line += ' ';
        append_float(line, second);
      }
      line += '\n';
      out.write(line);
    }
  };
  write_rows('p', model.users, model.user_factors, model.user_bias, true);
  write_rows('q', model.items, model.item_factors, model.item_bias, false);
  out.commit();
}

}  // namespace sfac::io
