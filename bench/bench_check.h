// The benchmarks' handling of a failed library call: there is nothing to measure after one, so
// it prints the call, the status and the library's message and exits 1.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "sparsefac/sparsefac.h"

namespace bench {

inline void check(sfac_status status, const char* what) {
  if (status != SFAC_OK) {
    std::fprintf(stderr, "%s failed: %s: %s\n", what, sfac_status_string(status),
                 sfac_last_error());
    std::exit(1);
  }
}

}  // namespace bench
