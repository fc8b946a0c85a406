/* Hooks for libsparsefac's own tests, exported but not part of the public API (this header is
 * not installed): like SQLite's sqlite3_test_control, one entry point per kind of injected
 * fault. */
#ifndef SPARSEFAC_TESTING_API_H
#define SPARSEFAC_TESTING_API_H

#include <stdint.h>

#include "sparsefac/sparsefac.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Makes the nth device allocation of the library from now on (nth >= 1, counted over all
 * threads and devices) fail as if the device were out of memory, once; nth = 0 disarms.
 * Returns 1 when the previously armed failure happened, else 0. No effect without CUDA. */
SFAC_API int sfac_testing_fail_device_allocation(int64_t nth);

#ifdef __cplusplus
}
#endif

#endif
