// The SGD update kernel under the wavefront schedule (cuMF_SGD section 5.2): the lane groups of
// the update kernel (sgd_update.cu) are the workers, each with its own users, and the items are
// cut into ranges locked through a 1-D array. A worker runs its cells (its chunks within one item
// range) one after another in its own random order of the ranges; before a cell it takes that
// range's lock with an atomic compare-and-swap, after it releases it, and it never holds one
// lock while waiting for another, so the workers cannot deadlock.
//
// The groups of a warp step together (shuffles need every lane): each step, every group without
// a cell tries its next range's lock once, and every group holding one runs one rating while
// the others compute on stale registers and store nothing. A warp whose groups all wait sleeps
// briefly between tries. Item rows are loaded only after the lock is taken (the next rating's
// row is prefetched within the cell, never across cells), and the cell's stores are fenced
// before the release, so a worker always reads the rows the range's previous holder wrote.
#include "cuda/cuda_check.h"
#include "cuda/kernels/sgd/sgd_kernels.cuh"
#include "cuda/kernels/sgd/sgd_step.cuh"
#include "cuda/kernels/sgd/sgd_vector.cuh"

namespace sfac::cuda::kernels {
namespace {

constexpr unsigned kFull = 0xffffffffu;
// Nanoseconds a warp whose workers all wait for locks sleeps before trying again: it leaves the
// issue slots to warps that work and spaces out its atomics on the lock array.
constexpr unsigned kBackoffNs = 200;

template <typename T, int L, int J>
__global__ void __launch_bounds__(kSgdThreads)
    sgd_wavefront_kernel(SgdModel m, SgdChunkView c, SgdWavefront s, SgdStep st) {
  constexpr int W = SgdVector<T>::kWidth;
  constexpr int G = 32 / L;
  constexpr bool kPrefetch = J * W <= 32;
  const int lane = threadIdx.x % 32, gl = lane % L, leader = lane - gl;
  const int64_t warp_worker = (int64_t{blockIdx.x} * kSgdWarpsPerBlock + threadIdx.x / 32) * G;
  if (warp_worker >= s.workers) return;  // the whole warp
  const int64_t worker = warp_worker + lane / L;
  T* users = static_cast<T*>(m.users);
  T* items = static_cast<T*>(m.items);
  const bool biases = m.user_bias != nullptr;
  const float kp = 1.0f - st.gamma * st.lambda_p, kq = 1.0f - st.gamma * st.lambda_q;
  const SgdSample* samples = c.samples - c.sample_base;

  // The worker's cells [x0, x0 + n), walked from `first` with wrap-around; `done` finished.
  int64_t x0 = 0, n = 0;
  if (worker < s.workers) {
    x0 = s.part_cells[worker];
    n = s.part_cells[worker + 1] - x0;
  }
  const int64_t first = n > 0 ? static_cast<int64_t>(s.rotation % static_cast<uint64_t>(n)) : 0;
  int64_t done = 0;
  bool holding = false;
  int32_t range = 0;
  // Within the held cell: chunk k (the cell's last is k_end - 1), its samples up to chunk_end,
  // the cell's up to cell_end; the samples at `at` and after, this step's rows, and the next
  // chunk's user and (prefetched) row.
  int64_t k = 0, k_end = 0, at = 0, chunk_end = 0, cell_end = 0;
  int32_t user = 0, next_user = 0;
  float p[J][W] = {}, q[J][W] = {}, p_next[kPrefetch ? J : 1][W] = {};
  float bu = 0.0f, bi = 0.0f, bu_next = 0.0f;
  // Requests the row of chunk k + 1's user when it is another user and the chunk is in the cell.
  auto prefetch_next_user = [&] {
    next_user = k + 1 < k_end ? c.chunk_user[k + 1] : user;
    if constexpr (kPrefetch) {
      if (next_user != user) {
        sgd_load_row<T, J, L>(users + int64_t{next_user} * m.stride, m.stride, gl, p_next);
        if (biases) bu_next = __ldcg(m.user_bias + next_user);
      }
    }
  };
  SgdSample cur{0, 0.0f}, nxt{0, 0.0f};

  while (true) {
    // A worker without a cell asks once for its next range's lock.
    int64_t x = 0;
    int got = 0;
    if (!holding && done < n) {
      x = x0 + (first + done) % n;
      range = s.cell_range[x];
      if (gl == 0 && atomicCAS(s.locks + range, 0, 1) == 0) {
        __threadfence();  // the previous holder's rows before this worker's loads
        got = 1;
      }
    }
    got = __shfl_sync(kFull, got, leader);
    __syncwarp();
    if (got) {
      holding = true;
      k = s.cell_begin[x];
      k_end = s.cell_begin[x + 1];
      at = c.chunk_begin[k];
      chunk_end = c.chunk_begin[k + 1];
      cell_end = c.chunk_begin[k_end];
      user = c.chunk_user[k];
      sgd_load_row<T, J, L>(users + int64_t{user} * m.stride, m.stride, gl, p);
      if (biases) bu = __ldcg(m.user_bias + user);
      prefetch_next_user();
      cur = sgd_load_sample(samples + at);
      if (at + 1 < cell_end) nxt = sgd_load_sample(samples + at + 1);
      sgd_load_row<T, J, L>(items + int64_t{cur.item} * m.stride, m.stride, gl, q);
      if (biases) bi = __ldcg(m.item_bias + cur.item);
    }
    if (!__any_sync(kFull, holding || done < n)) break;
    if (!__any_sync(kFull, holding)) {
      __nanosleep(kBackoffNs);
      continue;
    }

    // One rating of each worker that holds a cell; requests for the next ones of the same cell.
    const bool more = holding && at + 1 < cell_end;
    float q_next[kPrefetch ? J : 1][W];
    float bi_next = 0.0f;
    if constexpr (kPrefetch) {
      if (more) {
        sgd_load_row<T, J, L>(items + int64_t{nxt.item} * m.stride, m.stride, gl, q_next);
        if (biases) bi_next = __ldcg(m.item_bias + nxt.item);
      }
    }
    SgdSample nxt2{0, 0.0f};
    if (holding && at + 2 < cell_end) nxt2 = sgd_load_sample(samples + at + 2);

    const float e = sgd_update_rows<L>(p, q, cur.rating, m.global_mean + bu + bi, st.gamma, kp, kq);
    const float bi_new = bi + st.gamma * (e - st.lambda_q * bi);
    if (holding) {
      sgd_store_row<T, J, L>(items + int64_t{cur.item} * m.stride, m.stride, gl, q);
      if (biases) {
        if (gl == 0) m.item_bias[cur.item] = bi_new;
        bu += st.gamma * (e - st.lambda_p * bu);
      }
      const bool chunk_done = at + 1 == chunk_end;
      if (chunk_done) {
        sgd_store_row<T, J, L>(users + int64_t{user} * m.stride, m.stride, gl, p);
        if (biases && gl == 0) m.user_bias[user] = bu;
      }
      ++at;
      if (more) {
        if (chunk_done) {
          ++k;
          chunk_end = c.chunk_begin[k + 1];
          // The same user again keeps the row it holds.
          if (next_user != user) {
            user = next_user;
            if constexpr (kPrefetch) {
              sgd_copy_row(p, p_next);
              bu = bu_next;
            } else {
              sgd_load_row<T, J, L>(users + int64_t{user} * m.stride, m.stride, gl, p);
              if (biases) bu = __ldcg(m.user_bias + user);
            }
          }
          prefetch_next_user();
        }
        const int32_t item_done = cur.item;
        cur = nxt;
        nxt = nxt2;
        if constexpr (kPrefetch) {
          // The same item again is common in a narrow range.
          sgd_take_next_item<T>(q, bi, q_next, bi_next, cur.item == item_done, bi_new);
        } else {
          sgd_load_row<T, J, L>(items + int64_t{cur.item} * m.stride, m.stride, gl, q);
          if (biases) bi = __ldcg(m.item_bias + cur.item);
        }
      }
    }
    // A finished cell: every lane's stores, then the lock.
    const bool release = holding && !more;
    if (release) __threadfence();
    __syncwarp();
    if (release) {
      if (gl == 0) {
        __threadfence();
        atomicExch(s.locks + range, 0);
      }
      holding = false;
      ++done;
    }
  }
}

template <typename T, typename F>
void with_kernel(int64_t stride, F&& f) {
  sgd_with_lane_shape<T>(stride, [&](auto l, auto j) {
    constexpr int L = decltype(l)::value, J = decltype(j)::value;
    f(sgd_wavefront_kernel<T, L, J>, 32 / L);
  });
}

}  // namespace

void launch_sgd_wavefront(const SgdModel& model, const SgdChunkView& chunks,
                          const SgdWavefront& schedule, const SgdStep& step, cudaStream_t stream) {
  if (schedule.workers <= 0 || chunks.chunks == 0) return;
  sgd_with_storage(model.dtype, [&](auto tag) {
    with_kernel<decltype(tag)>(model.stride, [&](auto kernel, int groups) {
      sgd_launch_workers(kernel, groups, schedule.workers, stream, model, chunks, schedule, step);
    });
  });
}

}  // namespace sfac::cuda::kernels
