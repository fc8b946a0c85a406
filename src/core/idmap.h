// Dense index <-> original id of a file, ascending ids (so lookup is a binary search).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sfac {

struct IdMap {
  std::vector<int64_t> ids;  // ids[index] = original id, strictly ascending

  int32_t lookup(int64_t id) const {
    auto it = std::lower_bound(ids.begin(), ids.end(), id);
    return (it != ids.end() && *it == id) ? static_cast<int32_t>(it - ids.begin()) : -1;
  }
};

}  // namespace sfac
