// A check of a CSR of ratings on the device, before kernels that index by its ids run on it: the
// fold-in uploads a batch and checks it here instead of in a pass over it on the host.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace sfac::cuda::kernels {

// Sets *flag (device memory; the caller clears it) to 1 where any of the `rows` rows (entries
// offsets[r] .. offsets[r + 1] - 1 of ids and values) has an id outside [0, id_count), ids that
// do not increase, or a value that is not finite (or negative where `non_negative`). Rows that
// pass have no repeated ids.
void launch_rating_rows_check(const int64_t* offsets, int64_t rows, const int32_t* ids,
                              const float* values, int64_t id_count, bool non_negative,
                              int32_t* flag, cudaStream_t stream);

}  // namespace sfac::cuda::kernels
