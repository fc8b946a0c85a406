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

/* Whether CUDA device copies of models made from now on (global; default 1) score factors that
 * are exactly bfloat16 or float16 values with the 16-bit top-n kernel instead of the float32
 * one. Tests turn it off to hold the float32 kernel to exact data. Returns the previous value. */
SFAC_API int sfac_testing_allow_16bit_top_n(int allow);

/* Whether CUDA device copies of models made from now on (global; default 1) answer recommend
 * calls over the whole catalogue by the two-pass top-n (a sampled cut, a 16-bit scan, exact
 * rescoring of the survivors) where it serves. Returns the previous value. */
SFAC_API int sfac_testing_allow_two_pass_top_n(int allow);
/* Whether the two passes' scan may use warpgroup mma on devices that have it (global; default
 * 1; read per call). Off, such devices run the warp-mma scan of other devices. Returns the
 * previous value. */
SFAC_API int sfac_testing_allow_warpgroup_top_n_scan(int allow);
/* Launches of the warpgroup-mma scan since the process started. */
SFAC_API int64_t sfac_testing_warpgroup_top_n_scans(void);
/* Since the process started: users whose lists the two passes wrote (*listed) and users they
 * left to the single-pass kernels (*left: more near-equal scores than the scan keeps). Either
 * may be NULL. */
SFAC_API void sfac_testing_two_pass_top_n_counts(int64_t* listed, int64_t* left);

/* Resident copies (core/resident_model.h) on a CPU build, where no backend keeps one: gives
 * `model` a backend that forwards to its own except for make_resident_model, which per `mode`
 *   SFAC_TESTING_RESIDENT_NONE     returns none (what CPU contexts do),
 *   SFAC_TESTING_RESIDENT_SERVE    returns a copy that serves recommend, similar items,
 *                                  batched fold-in and error sums: a host snapshot of the
 *                                  factors and biases as they are then, computed by the host
 *                                  code (a missed reset serves old factors),
 *   SFAC_TESTING_RESIDENT_DECLINE  returns a copy that serves nothing (the host answers).
 * A copy fails the call with SFAC_ERR_INTERNAL on a request that breaks the ResidentModel
 * contract. Calling it again replaces the hook (mode and counts); sfac_model_copy with a NULL
 * context gives the copy the same hook, counts shared. */
#define SFAC_TESTING_RESIDENT_NONE 0
#define SFAC_TESTING_RESIDENT_SERVE 1
#define SFAC_TESTING_RESIDENT_DECLINE 2
SFAC_API sfac_status sfac_testing_resident_hook(sfac_model* model, int mode);
/* Since the hook was set: *builds, make_resident_model calls; *served, calls a copy served
 * (either may be NULL). SFAC_ERR_INVALID_ARGUMENT for a model without the hook. */
SFAC_API sfac_status sfac_testing_resident_counts(const sfac_model* model, int64_t* builds,
                                                  int64_t* served);

#ifdef __cplusplus
}
#endif

#endif
