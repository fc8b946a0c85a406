// Whole-file input and buffered output with errno-based error messages. Parsers scan an
// in-memory copy with pointers instead of streaming through iostreams, which is what makes
// ten million lines a matter of seconds.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace sfac::io {

// The complete contents of a file, always terminated by '\n' (one is appended when the last
// line lacks it) so that line scanning needs no end-of-buffer special case.
class InputFile {
 public:
  // Throws SFAC_ERR_IO "cannot open PATH: strerror" (also for directories) or
  // "cannot read PATH: strerror".
  explicit InputFile(const std::string& path);

  const std::string& path() const { return path_; }
  // Text after a UTF-8 byte order mark, if the file has one (spreadsheet CSV exports do).
  const char* begin() const { return data_.get() + skip_; }
  const char* end() const { return data_.get() + size_; }

 private:
  std::string path_;
  std::unique_ptr<char[]> data_;  // not a std::vector: zero-filling 100s of MB is wasted time
  size_t size_ = 0;
  size_t skip_ = 0;
};

// Writes through a large buffer. Any failure throws SFAC_ERR_IO naming the path and strerror
// and removes the partial file, so a failed write never leaves a truncated matrix behind.
class OutputFile {
 public:
  explicit OutputFile(const std::string& path);  // creates or truncates
  ~OutputFile();                                 // without commit(): closes and removes
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Room for at least `bytes` more characters; write them at the returned pointer, then call
  // advance(). Keeps formatting free of per-call overhead.
  char* reserve(size_t bytes) {
    if (capacity_ - used_ < bytes) flush();
    return buffer_.get() + used_;
  }
  void advance(size_t bytes) { used_ += bytes; }
  void write(const char* text, size_t bytes);

  // Flushes and closes; errors (including those close() reports) throw.
  void commit();

 private:
  void flush();
  [[noreturn]] void fail_write(int error);

  std::string path_;
  int fd_ = -1;
  bool removable_ = false;
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;
  size_t used_ = 0;
};

}  // namespace sfac::io
