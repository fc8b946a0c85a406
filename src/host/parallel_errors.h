// An exception must not leave an OpenMP region: the runtime would terminate the process, where
// the C API promises a status. Work inside a region that may throw (allocations, checks) runs
// through ParallelErrors::run, which keeps the first exception and skips the remaining work once
// any thread has failed; rethrow() after the region raises it on the calling thread.
#pragma once

#include <atomic>
#include <exception>
#include <mutex>

namespace sfac::host {

class ParallelErrors {
 public:
  template <typename F>
  void run(F&& work) noexcept {
    if (failed_.load(std::memory_order_relaxed)) return;
    try {
      work();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!first_) first_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }

  bool failed() const { return failed_.load(std::memory_order_relaxed); }

  // Call after the region, on the thread that entered it.
  void rethrow() const {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::exception_ptr first_;
};

}  // namespace sfac::host
