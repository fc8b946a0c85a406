// A warp a row: each lane takes every 32nd entry and compares it with the one before it.
#include <algorithm>
#include <cfloat>

#include "cuda/cuda_check.h"
#include "cuda/kernels/als/rating_rows_check.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

__global__ void __launch_bounds__(kThreads)
    rating_rows_check_kernel(const int64_t* offsets, int64_t rows, const int32_t* ids,
                             const float* values, int64_t id_count, bool non_negative,
                             int32_t* flag) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t warps = int64_t{gridDim.x} * (kThreads / 32);
  const auto limit = static_cast<uint32_t>(id_count < INT32_MAX ? id_count : INT32_MAX);
  for (int64_t r = (int64_t{blockIdx.x} * kThreads + threadIdx.x) / 32; r < rows; r += warps) {
    const int64_t begin = offsets[r], end = offsets[r + 1];
    bool bad = false;
    for (int64_t j = begin + lane; j < end; j += 32) {
      const int32_t id = ids[j];
      const float v = values[j];
      bad = bad || static_cast<uint32_t>(id) >= limit || !(fabsf(v) <= FLT_MAX) ||
            (non_negative && v < 0.0f) || (j > begin && ids[j - 1] >= id);
    }
    if (__any_sync(0xffffffffu, bad) && lane == 0) *flag = 1;
  }
}

}  // namespace

void launch_rating_rows_check(const int64_t* offsets, int64_t rows, const int32_t* ids,
                              const float* values, int64_t id_count, bool non_negative,
                              int32_t* flag, cudaStream_t stream) {
  if (rows <= 0) return;
  const int64_t blocks =
      std::min<int64_t>((rows + kThreads / 32 - 1) / (kThreads / 32), kMaxBlocks);
  rating_rows_check_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      offsets, rows, ids, values, id_count, non_negative, flag);
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
