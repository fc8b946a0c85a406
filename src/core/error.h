// Internal error type: the core throws sfac::Error, the C shim turns it into a status + message.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "sparsefac/sparsefac.h"

namespace sfac {

class Error : public std::runtime_error {
 public:
  Error(sfac_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  sfac_status status() const noexcept { return status_; }

 private:
  sfac_status status_;
};

// Concatenates anything streamable: cat("row ", i, " out of range").
template <typename... Parts>
std::string cat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}

template <typename... Parts>
[[noreturn]] void fail(sfac_status status, Parts&&... parts) {
  throw Error(status, cat(std::forward<Parts>(parts)...));
}

}  // namespace sfac

// Throws sfac::Error(status, message parts...) unless cond holds.
#define SFAC_REQUIRE(cond, status, ...)  \
  do {                                   \
    if (!(cond)) {                       \
      ::sfac::fail(status, __VA_ARGS__); \
    }                                    \
  } while (0)
