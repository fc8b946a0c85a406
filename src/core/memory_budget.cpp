#include "core/memory_budget.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace sfac {
namespace {

constexpr int64_t kUnknown = std::numeric_limits<int64_t>::max();

// MemAvailable of /proc/meminfo in bytes, or -1.
int64_t meminfo_available() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return -1;
  char line[256];
  int64_t kb = -1;
  while (std::fgets(line, sizeof line, f)) {
    long long value = 0;
    if (std::sscanf(line, "MemAvailable: %lld kB", &value) == 1) {
      kb = value;
      break;
    }
  }
  std::fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

// What RLIMIT_AS leaves beyond the current virtual size, or kUnknown.
int64_t address_space_left() {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kUnknown;
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  long long pages = 0;
  const bool known = f && std::fscanf(f, "%lld", &pages) == 1;
  if (f) std::fclose(f);
  const int64_t used = known ? pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE)) : 0;
  const auto cap = static_cast<int64_t>(
      std::min<rlim_t>(limit.rlim_cur, static_cast<rlim_t>(kUnknown)));
  return std::max<int64_t>(cap - used, 0);
}

int64_t saturating_add(int64_t a, int64_t b) { return a > kUnknown - b ? kUnknown : a + b; }

int64_t saturating_mul(int64_t a, int64_t b) {
  return a != 0 && b > kUnknown / a ? kUnknown : a * b;
}

}  // namespace

int64_t available_host_memory() {
  int64_t available = meminfo_available();
  if (available < 0) {
    const long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    available = pages > 0 && size > 0 ? saturating_mul(pages, size) : kUnknown;
  }
  return std::min(available, address_space_left());
}

void require_host_memory(int64_t bytes, int64_t limit, const std::string& what) {
  if (limit > 0) {
    SFAC_REQUIRE(bytes <= limit, SFAC_ERR_OUT_OF_MEMORY, what, " needs about ", bytes,
                 " bytes of host memory, more than the context's limit of ", limit,
                 " bytes (sfac_context_set_memory_limit)");
    return;
  }
  const int64_t available = available_host_memory();
  SFAC_REQUIRE(bytes <= available, SFAC_ERR_OUT_OF_MEMORY, what, " needs about ", bytes,
               " bytes of host memory, more than the ", available,
               " bytes available (sfac_context_set_memory_limit sets a budget)");
}

int64_t sparse_build_bytes(int64_t rows, int64_t cols, int64_t nnz) {
  // Per row: CSR offsets, the canonicalization's kept counts, the backend's offsets (8 each);
  // per column: the backend's column offsets (16 with its scratch); per entry: indices and
  // values twice, input positions and the backend's copies.
  int64_t bytes = saturating_mul(std::max<int64_t>(rows, 0) + 1, 24);
  bytes = saturating_add(bytes, saturating_mul(std::max<int64_t>(cols, 0) + 1, 16));
  return saturating_add(bytes, saturating_mul(std::max<int64_t>(nnz, 0), 40));
}

int64_t dense_build_bytes(int64_t rows, int64_t cols) {
  return saturating_mul(saturating_mul(std::max<int64_t>(rows, 0), std::max<int64_t>(cols, 0)),
                        int64_t{sizeof(float)});
}

}  // namespace sfac
