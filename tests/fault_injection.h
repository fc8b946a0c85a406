// Host allocation failures on demand, for tests: the test binary replaces the global operator
// new (fault_injection.cpp), which the shared library's allocations go through as well. Armed
// with n, the n-th allocation from then on (in any thread) throws std::bad_alloc, once.
#pragma once

#include <cstdint>

namespace sfac_test::faults {

void arm(int64_t nth);
// Disarms; true when the armed failure was thrown.
bool disarm();

}  // namespace sfac_test::faults
