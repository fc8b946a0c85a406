#include "io/file_buffer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace sfac::io {
namespace {

constexpr size_t kOutputBufferBytes = size_t{1} << 20;
// Linux transfers at most ~2 GiB per read()/write() call; stay below that.
constexpr size_t kMaxChunk = size_t{1} << 30;

// Closes a descriptor on scope exit (the input side has no other state to unwind).
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

InputFile::InputFile(const std::string& path) : path_(path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) fail(SFAC_ERR_IO, "cannot open ", path, ": ", std::strerror(errno));
  FdCloser closer{fd};

  struct stat info;
  if (::fstat(fd, &info) != 0) fail(SFAC_ERR_IO, "cannot open ", path, ": ", std::strerror(errno));
  // open() succeeds on a directory; report it here rather than as a confusing read error.
  if (S_ISDIR(info.st_mode)) fail(SFAC_ERR_IO, "cannot open ", path, ": ", std::strerror(EISDIR));

  // The size is only a hint: pipes and /proc files report 0, and a file may grow meanwhile.
  // Two spare bytes: one for the final '\n', one so the read that sees end-of-file does not
  // first double the buffer.
  size_t capacity = S_ISREG(info.st_mode) ? static_cast<size_t>(info.st_size) + 2 : 0;
  if (capacity < 4096) capacity = 4096;
  data_.reset(new char[capacity]);
  size_t size = 0;
  for (;;) {
    if (size + 1 >= capacity) {  // keep one byte free for the final '\n'
      const size_t grown = capacity * 2;
      std::unique_ptr<char[]> bigger(new char[grown]);
      std::memcpy(bigger.get(), data_.get(), size);
      data_ = std::move(bigger);
      capacity = grown;
    }
    size_t want = capacity - 1 - size;
    if (want > kMaxChunk) want = kMaxChunk;
    const ssize_t got = ::read(fd, data_.get() + size, want);
    if (got < 0) {
      if (errno == EINTR) continue;
      fail(SFAC_ERR_IO, "cannot read ", path, ": ", std::strerror(errno));
    }
    if (got == 0) break;
    size += static_cast<size_t>(got);
  }
  if (size == 0 || data_[size - 1] != '\n') data_[size++] = '\n';
  size_ = size;
  if (size_ >= 3 && std::memcmp(data_.get(), "\xEF\xBB\xBF", 3) == 0) skip_ = 3;
}

OutputFile::OutputFile(const std::string& path) : path_(path) {
  do {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) {
    fail(SFAC_ERR_IO, "cannot open ", path, " for writing: ", std::strerror(errno));
  }
  // Only a regular file we created or truncated may be removed after a failure; never a device
  // or FIFO such as /dev/stdout.
  struct stat info;
  removable_ = ::fstat(fd_, &info) == 0 && S_ISREG(info.st_mode);
  capacity_ = kOutputBufferBytes;
  buffer_.reset(new char[capacity_]);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    if (removable_) ::unlink(path_.c_str());
  }
}

void OutputFile::write(const char* text, size_t bytes) {
  while (bytes > 0) {
    if (used_ == capacity_) flush();
    const size_t n = std::min(bytes, capacity_ - used_);
    std::memcpy(buffer_.get() + used_, text, n);
    used_ += n;
    text += n;
    bytes -= n;
  }
}

void OutputFile::flush() {
  size_t done = 0;
  while (done < used_) {
    const ssize_t n = ::write(fd_, buffer_.get() + done, std::min(used_ - done, kMaxChunk));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_write(errno);
    }
    done += static_cast<size_t>(n);
  }
  used_ = 0;
}

void OutputFile::commit() {
  flush();
  const int fd = std::exchange(fd_, -1);
  // close() is where NFS and quota errors surface; the data is not safe until it succeeds.
  if (::close(fd) != 0 && errno != EINTR) {
    const int error = errno;
    if (removable_) ::unlink(path_.c_str());
    fail(SFAC_ERR_IO, "cannot write ", path_, ": ", std::strerror(error));
  }
}

void OutputFile::fail_write(int error) {
  // The destructor removes the partial file when the exception unwinds this object.
  fail(SFAC_ERR_IO, "cannot write ", path_, ": ", std::strerror(error));
}

}  // namespace sfac::io
