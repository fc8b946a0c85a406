#include "core/fault_hooks.h"

#include <atomic>

namespace sfac::testing {
namespace {

// Allocations left until the armed failure (0: none armed), and whether it happened.
std::atomic<int64_t> g_countdown{0};
std::atomic<bool> g_fired{false};
std::atomic<bool> g_allow_16bit_top_n{true};
std::atomic<bool> g_allow_two_pass_top_n{true};
std::atomic<bool> g_allow_warpgroup_top_n_scan{true};
std::atomic<int64_t> g_warpgroup_top_n_scans{0};
std::atomic<int64_t> g_two_pass_listed{0}, g_two_pass_left{0};

}  // namespace

bool arm_device_allocation_failure(int64_t nth) {
  const bool fired = g_fired.exchange(false);
  g_countdown.store(nth > 0 ? nth : 0);
  return fired;
}

bool device_allocation_fails() {
  // The common case, nothing armed, is one relaxed load.
  int64_t left = g_countdown.load(std::memory_order_relaxed);
  while (left > 0) {
    if (g_countdown.compare_exchange_weak(left, left - 1)) {
      if (left > 1) return false;
      g_fired.store(true);
      return true;
    }
  }
  return false;
}

bool allow_16bit_top_n(bool allow) { return g_allow_16bit_top_n.exchange(allow); }

bool top_n_16bit_allowed() { return g_allow_16bit_top_n.load(std::memory_order_relaxed); }

bool allow_two_pass_top_n(bool allow) { return g_allow_two_pass_top_n.exchange(allow); }

bool two_pass_top_n_allowed() { return g_allow_two_pass_top_n.load(std::memory_order_relaxed); }

bool allow_warpgroup_top_n_scan(bool allow) { return g_allow_warpgroup_top_n_scan.exchange(allow); }

bool warpgroup_top_n_scan_allowed() {
  return g_allow_warpgroup_top_n_scan.load(std::memory_order_relaxed);
}

void count_warpgroup_top_n_scan() { g_warpgroup_top_n_scans.fetch_add(1); }

int64_t warpgroup_top_n_scans() { return g_warpgroup_top_n_scans.load(); }

void count_two_pass_top_n(int64_t listed, int64_t left) {
  g_two_pass_listed.fetch_add(listed, std::memory_order_relaxed);
  g_two_pass_left.fetch_add(left, std::memory_order_relaxed);
}

void two_pass_top_n_counts(int64_t* listed, int64_t* left) {
  *listed = g_two_pass_listed.load();
  *left = g_two_pass_left.load();
}

}  // namespace sfac::testing
