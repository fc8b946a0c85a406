// What a context owns: its backend and the seed of every random choice made for it.
#pragma once

#include <cstdint>
#include <memory>

#include "core/backend.h"

namespace sfac {

struct Context {
  std::shared_ptr<Backend> backend;
  uint64_t seed = 0;
};

}  // namespace sfac
