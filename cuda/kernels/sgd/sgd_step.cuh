// What the SGD update kernels (sgd_update.cu, sgd_wavefront.cu) share: the update of both rows
// of one rating from their old values, the choice of the next rating's item row, and the launch
// of a persistent grid of lane-group workers.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_check.h"
#include "cuda/kernels/sgd/sgd_vector.cuh"

namespace sfac::cuda::kernels {

constexpr int kSgdWarpsPerBlock = 4;
constexpr int kSgdThreads = kSgdWarpsPerBlock * 32;

// Launches `kernel` with enough blocks of kSgdThreads for `workers` workers, `groups` a warp.
template <typename Kernel, typename... Args>
void sgd_launch_workers(Kernel kernel, int groups, int64_t workers, cudaStream_t stream,
                        const Args&... args) {
  const int64_t per_block = int64_t{kSgdWarpsPerBlock} * groups;
  const auto blocks = static_cast<unsigned>((workers + per_block - 1) / per_block);
  kernel<<<blocks, kSgdThreads, 0, stream>>>(args...);
  SFAC_CUDA_CHECK_LAUNCH();
}

// e = rating - (base + p . q), then from the old values p = kp p + gamma e q and
// q = kq q + gamma e p (kp = 1 - gamma lambda_p, kq likewise); returns e. The dot product is
// reduced over the group of L lanes, so every lane of the warp must call it.
template <int L, int J, int W>
__device__ __forceinline__ float sgd_update_rows(float (&p)[J][W], float (&q)[J][W], float rating,
                                                 float base, float gamma, float kp, float kq) {
  float dot = 0.0f;
#pragma unroll
  for (int j = 0; j < J; ++j) {
#pragma unroll
    for (int w = 0; w < W; ++w) dot = fmaf(p[j][w], q[j][w], dot);
  }
  dot = sgd_warp_sum<L>(dot);
  const float e = rating - base - dot;
  const float ge = gamma * e;
#pragma unroll
  for (int j = 0; j < J; ++j) {
#pragma unroll
    for (int w = 0; w < W; ++w) {
      const float pt = p[j][w], qt = q[j][w];
      p[j][w] = kp * pt + ge * qt;
      q[j][w] = kq * qt + ge * pt;
    }
  }
  return e;
}

// The next rating's item row and bias in (q, bi): the ones requested ahead (q_next, bi_next),
// or, when the next rating is of the item just updated, the updated row rounded as its store
// did and the updated bias: the row requested ahead was read before that store, and starting
// from it would lose the update.
template <typename T, int J, int W>
__device__ __forceinline__ void sgd_take_next_item(float (&q)[J][W], float& bi,
                                                   const float (&q_next)[J][W], float bi_next,
                                                   bool same_item, float bi_updated) {
  if (same_item) {
    sgd_round_row<T>(q);
    bi = bi_updated;
  } else {
    sgd_copy_row(q, q_next);
    bi = bi_next;
  }
}

}  // namespace sfac::cuda::kernels
