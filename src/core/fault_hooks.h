// Faults and switches on demand, for the library's own tests (src/capi/testing_api.cpp): device
// allocations go through the library's pool in one place (cuda/device_pool.cu), which asks here
// whether to fail. Host allocations need no hook: the tests replace operator new.
#pragma once

#include <cstdint>

namespace sfac::testing {

// Arms the n-th device allocation from now (n >= 1) to fail, once; 0 disarms. Returns whether
// the previously armed failure happened.
bool arm_device_allocation_failure(int64_t nth);

// Called by every device allocation: true when this one is to fail.
bool device_allocation_fails();

// Whether device copies of models made from now on may score 16-bit-exact factors with the
// 16-bit top-n kernel (default true); tests turn it off to hold the float32 kernel to exact data,
// which is 16-bit-exact. Returns the previous setting.
bool allow_16bit_top_n(bool allow);
bool top_n_16bit_allowed();

// Whether device copies of models made from now on may answer recommend calls by the two-pass
// top-n (default true); tests turn it off to hold the single-pass kernels to every call.
// Returns the previous setting.
bool allow_two_pass_top_n(bool allow);
bool two_pass_top_n_allowed();
// Whether the two passes' scan may use warpgroup mma where the device has it (default true);
// tests turn it off to hold the warp-mma scan to the same calls. Read per call. Returns the
// previous setting.
bool allow_warpgroup_top_n_scan(bool allow);
bool warpgroup_top_n_scan_allowed();
// Launches of the warpgroup-mma scan since the process started.
void count_warpgroup_top_n_scan();
int64_t warpgroup_top_n_scans();
// Counts of the users the two passes listed and of those they left to the single pass.
void count_two_pass_top_n(int64_t listed, int64_t left);
void two_pass_top_n_counts(int64_t* listed, int64_t* left);

}  // namespace sfac::testing
