// The replacement of the global allocation functions behind fault_injection.h. Unarmed, they are
// malloc and free; the aligned forms stay the standard library's (aligned_alloc and free).
#include "fault_injection.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<int64_t> countdown{0};  // > 0: armed
std::atomic<bool> thrown{false};

void* allocate(std::size_t size) {
  if (countdown.load(std::memory_order_relaxed) > 0 &&
      countdown.fetch_sub(1, std::memory_order_relaxed) == 1) {
    thrown.store(true, std::memory_order_relaxed);
    throw std::bad_alloc();
  }
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

namespace sfac_test::faults {

void arm(int64_t nth) {
  thrown.store(false, std::memory_order_relaxed);
  countdown.store(nth, std::memory_order_relaxed);
}

bool disarm() {
  countdown.store(0, std::memory_order_relaxed);
  return thrown.load(std::memory_order_relaxed);
}

}  // namespace sfac_test::faults

void* operator new(std::size_t size) { return allocate(size); }
void* operator new[](std::size_t size) { return allocate(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
