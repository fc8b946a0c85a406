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
#include "cuda/kernels/sgd/sgd_step.cuh"
#include "cuda/kernels/sgd/sgd_vector.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr unsigned kFull = 0xffffffffu;

template <typename T, int L, int J>
__global__ void __launch_bounds__(kSgdThreads)
    sgd_update_kernel(SgdModel m, SgdChunkView c, SgdSchedule s, SgdStep st) {
  constexpr int W = SgdVector<T>::kWidth;
  constexpr int G = 32 / L;
  // The next rating's row is loaded ahead while registers allow; longer rows load when their
  // turn comes.
  constexpr bool kPrefetch = J * W <= 32;
  const int lane = threadIdx.x % 32, gl = lane % L;
  const int64_t warp_worker = (int64_t{blockIdx.x} * kSgdWarpsPerBlock + threadIdx.x / 32) * G;
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

  // The chunk being run, its user's row, and the next chunk's user and (prefetched) row. Users
  // are chunk_user values: ~u marks a user split between workers, whose row gets this chunk's
  // change (from p0, the row as the chunk found it, times the user's split weight) added
  // atomically instead of stored.
  int64_t at = 0, chunk_end = 0;
  int32_t user = 0, next_user = 0;
  float p[J][W] = {}, p_next[J][W] = {};
  float p0[kPrefetch ? J : 1][W] = {};
  float bu = 0.0f, bu_next = 0.0f, bu0 = 0.0f;
  auto row_of = [](int32_t id) { return int64_t{id < 0 ? ~id : id}; };
  int64_t k_next = k;
  if (n > 0) {
    at = c.chunk_begin[k];
    chunk_end = c.chunk_begin[k + 1];
    user = c.chunk_user[k];
    sgd_load_row<T, J, L>(users + row_of(user) * m.stride, m.stride, gl, p);
    if (biases) bu = __ldcg(m.user_bias + row_of(user));
    k_next = k + 1 == k1 ? k0 : k + 1;
    next_user = c.chunk_user[k_next];
    if (next_user != user) {
      sgd_load_row<T, J, L>(users + row_of(next_user) * m.stride, m.stride, gl, p_next);
      if (biases) bu_next = __ldcg(m.user_bias + row_of(next_user));
    }
  }
  if constexpr (kPrefetch) {
    sgd_copy_row(p0, p);
    bu0 = bu;
  }
  // The samples at `at` (this step) and `at_next`, and this step's item row.
  SgdSample cur{0, 0.0f}, nxt{0, 0.0f};
  int64_t at_next = after(at);
  if (n > 0) cur = sgd_load_sample(samples + at);
  if (n > 1) nxt = sgd_load_sample(samples + at_next);
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
    if (t + 2 < n) nxt2 = sgd_load_sample(samples + at_after);

    const float e = sgd_update_rows<L>(p, q, cur.rating, m.global_mean + bu + bi, st.gamma, kp, kq);
    const float bi_new = bi + st.gamma * (e - st.lambda_q * bi);
    if (active) {
      sgd_store_row<T, J, L>(items + int64_t{cur.item} * m.stride, m.stride, gl, q);
      if (biases) {
        if (gl == 0) m.item_bias[cur.item] = bi_new;
        bu += st.gamma * (e - st.lambda_p * bu);
      }
    }
    const bool chunk_done = active && at + 1 == chunk_end;
    const int32_t item_done = cur.item;

    cur = nxt;
    at = at_next;
    nxt = nxt2;
    at_next = at_after;
    if constexpr (kPrefetch) {
      sgd_take_next_item<T>(q, bi, q_next, bi_next, cur.item == item_done, bi_new);
    } else {
      sgd_load_row<T, J, L>(items + int64_t{cur.item} * m.stride, m.stride, gl, q);
      if (biases) bi = __ldcg(m.item_bias + cur.item);
    }
    if (chunk_done) {
      T* row = users + row_of(user) * m.stride;
      static_assert(kPrefetch || !sgd_splits_users(J * W * L), "split users need p0");
      if (kPrefetch && user < 0) {
        const float weight = __ldg(c.split_weight + row_of(user));
        if constexpr (kPrefetch) sgd_add_row<T, J, L>(row, m.stride, gl, p, p0, weight);
        if (biases && gl == 0) atomicAdd(m.user_bias + row_of(user), weight * (bu - bu0));
      } else {
        sgd_store_row<T, J, L>(row, m.stride, gl, p);
        if (biases && gl == 0) m.user_bias[row_of(user)] = bu;
      }
      if (more) {
        k = k_next;
        chunk_end = c.chunk_begin[k + 1];
        // The same user again keeps the row it holds (the prefetch was skipped).
        if (next_user != user) {
          sgd_copy_row(p, p_next);
          bu = bu_next;
          user = next_user;
        }
        if constexpr (kPrefetch) {
          sgd_copy_row(p0, p);
          bu0 = bu;
        }
        k_next = k + 1 == k1 ? k0 : k + 1;
        next_user = c.chunk_user[k_next];
        if (next_user != user) {
          sgd_load_row<T, J, L>(users + row_of(next_user) * m.stride, m.stride, gl, p_next);
          if (biases) bu_next = __ldcg(m.user_bias + row_of(next_user));
        }
      }
    }
  }
}

// Calls f(kernel, groups per warp) for the kernel instance that fits rows of `stride` entries.
template <typename T, typename F>
void with_kernel(int64_t stride, F&& f) {
  sgd_with_lane_shape<T>(stride, [&](auto l, auto j) {
    constexpr int L = decltype(l)::value, J = decltype(j)::value;
    f(sgd_update_kernel<T, L, J>, 32 / L);
  });
}

}  // namespace

int64_t sgd_max_stride(sfac_dtype dtype) { return 32 * sgd_vector_width(dtype) * kSgdMaxVectors; }

int64_t sgd_resident_workers(sfac_dtype dtype, int64_t stride) {
  int device = 0, sms = 0;
  SFAC_CUDA_TRY(cudaGetDevice(&device));
  SFAC_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  int64_t workers = 0;
  sgd_with_storage(dtype, [&](auto tag) {
    with_kernel<decltype(tag)>(stride, [&](auto kernel, int groups) {
      int blocks = 0;
      SFAC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kSgdThreads, 0));
      workers = int64_t{sms} * blocks * kSgdWarpsPerBlock * groups;
    });
  });
  return workers;
}

void launch_sgd_update(const SgdModel& model, const SgdChunkView& chunks,
                       const SgdSchedule& schedule, const SgdStep& step, cudaStream_t stream) {
  if (schedule.workers <= 0 || chunks.chunks == 0) return;
  sgd_with_storage(model.dtype, [&](auto tag) {
    with_kernel<decltype(tag)>(model.stride, [&](auto kernel, int groups) {
      sgd_launch_workers(kernel, groups, schedule.workers, stream, model, chunks, schedule, step);
    });
  });
}

}  // namespace sfac::cuda::kernels
