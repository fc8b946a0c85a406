// The SGD update kernel (cuMF_SGD's warp per update, here a group of L lanes per update, 32 / L
// groups a warp): a persistent grid whose lane groups are the workers, each running its
// scheduled chunks (sgd_kernels.cuh). A group's samples are one contiguous stretch of the sample
// array (its part's chunks are stored back to back), walked as a stream: the sample two ahead
// and the item row one ahead are requested before this rating's arithmetic, so loads are always
// in flight. Within a chunk the user's row lives in registers as float (the next chunk's row is
// loaded while this one runs); per rating the dot product is reduced by shuffles within the
// group and both rows are updated from their old values. All groups of a warp step together
// (shuffles need every lane), a group past its part's end computing without storing.
#include "cuda/cuda_check.h"
#include "cuda/kernels/sgd/sgd_kernels.cuh"
#include "cuda/kernels/sgd/sgd_vector.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kThreads = kWarpsPerBlock * 32;
constexpr unsigned kFull = 0xffffffffu;
// Lane vectors per row at most that the kernel is compiled for.
constexpr int kMaxVectors = 16;
// Row entries a lane holds when rows are short enough for groups of fewer than 32 lanes: few
// enough registers for four rows (this, the next item's, the user's and the next user's).
constexpr int kLaneEntries = 8;

__device__ SgdSample load_sample(const SgdSample* at) {
  const int2 raw = __ldg(reinterpret_cast<const int2*>(at));
  return {raw.x, __int_as_float(raw.y)};
}

template <int J, int W>
__device__ __forceinline__ void copy_row(float (&to)[J][W], const float (&from)[J][W]) {
#pragma unroll
  for (int j = 0; j < J; ++j) {
#pragma unroll
    for (int w = 0; w < W; ++w) to[j][w] = from[j][w];
  }
}

template <typename T, int L, int J>
__global__ void __launch_bounds__(kThreads)
    sgd_update_kernel(SgdModel m, SgdChunkView c, SgdSchedule s, SgdStep st) {
  constexpr int W = SgdVector<T>::kWidth;
  constexpr int G = 32 / L;
  // The next rating's row is loaded ahead while registers allow; longer rows load when their
  // turn comes.
  constexpr bool kPrefetch = J * W <= 32;
  const int lane = threadIdx.x % 32, gl = lane % L;
  const int64_t warp_worker = (int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32) * G;
  if (warp_worker >= s.workers) return;  // the whole warp
  const int64_t worker = warp_worker + lane / L;
  const bool has_work = worker < s.workers;
  T* users = static_cast<T*>(m.users);
  T* items = static_cast<T*>(m.items);
  const bool biases = m.user_bias != nullptr;
  const float kp = 1.0f - st.gamma * st.lambda_p, kq = 1.0f - st.gamma * st.lambda_q;

  // The part's chunks [k0, k1) and samples [s0, s1); the walk starts at chunk `k`.
  int64_t k0 = 0, k1 = 0, k = 0;
  if (has_work) {
    k0 = s.part_begin[worker];
    k1 = s.part_begin[worker + 1];
    k = k1 > k0 ? k0 + static_cast<int64_t>(s.rotation % (k1 - k0)) : k0;
  }
  const SgdSample* samples = c.samples - c.sample_base;
  const int64_t s0 = has_work ? c.chunk_begin[k0] : 0, s1 = has_work ? c.chunk_begin[k1] : 0;
  const int64_t n = s1 - s0;
  int64_t steps = n;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) steps = max(steps, __shfl_xor_sync(kFull, steps, o));
  if (steps == 0) return;
  auto after = [s0, s1](int64_t x) { return x + 1 == s1 ? s0 : x + 1; };

  // The chunk being run, its user's row, and the next chunk's user and (prefetched) row.
  int64_t at = 0, chunk_end = 0;
  int32_t user = 0, next_user = 0;
  float p[J][W] = {}, p_next[J][W] = {};
  float bu = 0.0f, bu_next = 0.0f;
  int64_t k_next = k;
  if (n > 0) {
    at = c.chunk_begin[k];
    chunk_end = c.chunk_begin[k + 1];
    user = c.chunk_user[k];
    sgd_load_row<T, J, L>(users + int64_t{user} * m.stride, m.stride, gl, p);
    if (biases) bu = __ldcg(m.user_bias + user);
    k_next = k + 1 == k1 ? k0 : k + 1;
    next_user = c.chunk_user[k_next];
    if (next_user != user) {
      sgd_load_row<T, J, L>(users + int64_t{next_user} * m.stride, m.stride, gl, p_next);
      if (biases) bu_next = __ldcg(m.user_bias + next_user);
    }
  }
  // The samples at `at` (this step) and `at_next`, and this step's item row.
  SgdSample cur{0, 0.0f}, nxt{0, 0.0f};
  int64_t at_next = after(at);
  if (n > 0) cur = load_sample(samples + at);
  if (n > 1) nxt = load_sample(samples + at_next);
  float q[J][W];
  sgd_load_row<T, J, L>(items + int64_t{cur.item} * m.stride, m.stride, gl, q);
  float bi = biases ? __ldcg(m.item_bias + cur.item) : 0.0f;

  for (int64_t t = 0; t < steps; ++t) {
    const bool active = t < n, more = t + 1 < n;
    // Requests for the steps ahead (past the part's end they read item 0, harmlessly).
    float q_next[kPrefetch ? J : 1][W];
    float bi_next = 0.0f;
    if constexpr (kPrefetch) {
      sgd_load_row<T, J, L>(items + int64_t{nxt.item} * m.stride, m.stride, gl, q_next);
      if (biases) bi_next = __ldcg(m.item_bias + nxt.item);
    }
    const int64_t at_after = after(at_next);
    SgdSample nxt2{0, 0.0f};
    if (t + 2 < n) nxt2 = load_sample(samples + at_after);

    float dot = 0.0f;
#pragma unroll
    for (int j = 0; j < J; ++j) {
#pragma unroll
      for (int w = 0; w < W; ++w) dot = fmaf(p[j][w], q[j][w], dot);
    }
    dot = sgd_warp_sum<L>(dot);
    const float e = cur.rating - (m.global_mean + bu + bi) - dot;
    const float ge = st.gamma * e;
#pragma unroll
    for (int j = 0; j < J; ++j) {
#pragma unroll
      for (int w = 0; w < W; ++w) {
        const float pt = p[j][w], qt = q[j][w];
        p[j][w] = kp * pt + ge * qt;
        q[j][w] = kq * qt + ge * pt;
      }
    }
    if (active) {
      sgd_store_row<T, J, L>(items + int64_t{cur.item} * m.stride, m.stride, gl, q);
      if (biases) {
        if (gl == 0) m.item_bias[cur.item] = bi + st.gamma * (e - st.lambda_q * bi);
        bu += st.gamma * (e - st.lambda_p * bu);
      }
    }
    const bool chunk_done = active && at + 1 == chunk_end;

    cur = nxt;
    at = at_next;
    nxt = nxt2;
    at_next = at_after;
    if constexpr (kPrefetch) {
      copy_row(q, q_next);
      bi = bi_next;
    } else {
      sgd_load_row<T, J, L>(items + int64_t{cur.item} * m.stride, m.stride, gl, q);
      if (biases) bi = __ldcg(m.item_bias + cur.item);
    }
    if (chunk_done) {
      sgd_store_row<T, J, L>(users + int64_t{user} * m.stride, m.stride, gl, p);
      if (biases && gl == 0) m.user_bias[user] = bu;
      if (more) {
        k = k_next;
        chunk_end = c.chunk_begin[k + 1];
        // The same user again keeps the row it holds (the prefetch was skipped).
        if (next_user != user) {
          copy_row(p, p_next);
          bu = bu_next;
          user = next_user;
        }
        k_next = k + 1 == k1 ? k0 : k + 1;
        next_user = c.chunk_user[k_next];
        if (next_user != user) {
          sgd_load_row<T, J, L>(users + int64_t{next_user} * m.stride, m.stride, gl, p_next);
          if (biases) bu_next = __ldcg(m.user_bias + next_user);
        }
      }
    }
  }
}

// Calls f(kernel, groups per warp) for the kernel instance that fits rows of `stride` entries:
// kLaneEntries entries a lane in groups of the fewest lanes (a power of two) that cover a row,
// or whole warps with as many vectors a lane as a row needs.
template <typename T, typename F>
void with_kernel(int64_t stride, F&& f) {
  constexpr int W = SgdVector<T>::kWidth;
  constexpr int J0 = kLaneEntries / W;
  const int64_t vectors = (stride + W - 1) / W;
  const int64_t lanes = (vectors + J0 - 1) / J0;
  if (lanes <= 1) return f(sgd_update_kernel<T, 1, J0>, 32);
  if (lanes <= 2) return f(sgd_update_kernel<T, 2, J0>, 16);
  if (lanes <= 4) return f(sgd_update_kernel<T, 4, J0>, 8);
  if (lanes <= 8) return f(sgd_update_kernel<T, 8, J0>, 4);
  if (lanes <= 16) return f(sgd_update_kernel<T, 16, J0>, 2);
  if (lanes <= 32) return f(sgd_update_kernel<T, 32, J0>, 1);
  const int64_t per_lane = (vectors + 31) / 32;
  if (per_lane <= 2 * J0 && 2 * J0 <= kMaxVectors) return f(sgd_update_kernel<T, 32, 2 * J0>, 1);
  if (per_lane <= 4 * J0 && 4 * J0 <= kMaxVectors) return f(sgd_update_kernel<T, 32, 4 * J0>, 1);
  if (per_lane <= 8 * J0 && 8 * J0 <= kMaxVectors) return f(sgd_update_kernel<T, 32, 8 * J0>, 1);
  if (per_lane <= kMaxVectors) return f(sgd_update_kernel<T, 32, kMaxVectors>, 1);
  fail(SFAC_ERR_INTERNAL, "SGD row stride ", stride, " above the kernel's ",
       32 * W * kMaxVectors);
}

}  // namespace

int64_t sgd_max_stride(sfac_dtype dtype) { return 32 * sgd_vector_width(dtype) * kMaxVectors; }

int64_t sgd_resident_workers(sfac_dtype dtype, int64_t stride) {
  int device = 0, sms = 0;
  SFAC_CUDA_TRY(cudaGetDevice(&device));
  SFAC_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  int64_t workers = 0;
  sgd_with_storage(dtype, [&](auto tag) {
    with_kernel<decltype(tag)>(stride, [&](auto kernel, int groups) {
      int blocks = 0;
      SFAC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kThreads, 0));
      workers = int64_t{sms} * blocks * kWarpsPerBlock * groups;
    });
  });
  return workers;
}

void launch_sgd_update(const SgdModel& model, const SgdChunkView& chunks,
                       const SgdSchedule& schedule, const SgdStep& step, cudaStream_t stream) {
  if (schedule.workers <= 0 || chunks.chunks == 0) return;
  sgd_with_storage(model.dtype, [&](auto tag) {
    with_kernel<decltype(tag)>(model.stride, [&](auto kernel, int groups) {
      const int64_t per_block = int64_t{kWarpsPerBlock} * groups;
      const auto blocks = static_cast<unsigned>((schedule.workers + per_block - 1) / per_block);
      kernel<<<blocks, kThreads, 0, stream>>>(model, chunks, schedule, step);
      SFAC_CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace sfac::cuda::kernels
