// Test hooks (testing_api.h).
#include "capi/testing_api.h"

#include "core/fault_hooks.h"

extern "C" SFAC_API int sfac_testing_fail_device_allocation(int64_t nth) {
  return sfac::testing::arm_device_allocation_failure(nth) ? 1 : 0;
}
