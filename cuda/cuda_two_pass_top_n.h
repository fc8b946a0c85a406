// The host side of the two-pass top-n (kernels/recommend/top_n_two_pass.cuh) for a resident
// model's recommend calls over the whole catalogue: which calls take it, the sample that sets
// each user's cut, the users' margins, and the launches.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/model.h"
#include "cuda/device_buffer.h"

namespace sfac::cuda {

// A resident copy's arrays the passes read.
struct TwoPassSides {
  const uint16_t* user_half;  // 16-bit rows of half_stride values (the scan's)
  const uint16_t* item_half;
  bool bf16;
  int64_t half_stride;
  const float* user_factors;  // float32 rows of stride floats (the exact scores)
  const float* item_factors;
  int64_t stride, rank;       // (the item count is the plan's: TwoPassTopN::plan)
  const float* user_offsets;  // global mean + user bias; null without biases
  const float* item_biases;
};

class TwoPassTopN {
 public:
  // The margins of `model`'s users, whose 16-bit rows (bfloat16 or float16) are its factors
  // exactly (exact_16bit) or rounded to the nearest bfloat16 value. Null where a factor or bias
  // is not finite or so large that the bounds behind the margins may not hold (the single-pass
  // kernels then serve).
  static std::unique_ptr<TwoPassTopN> plan(const Model& model, bool exact_16bit, bool bf16,
                                           cudaStream_t stream);
  // Bfloat16 rows of rank up to 120 fold the scores (kernels/recommend/top_n_two_pass.cuh):
  // this copies the items' 16-bit rows (the resident copy's, half_stride values) with their
  // tails. Nothing for other plans. Before any run().
  void fold_items(const Model& model, const uint16_t* item_half, int64_t half_stride,
                  cudaStream_t stream);
  // Whether plans of this rank and 16-bit type fold the scores.
  static bool folds(int64_t rank, bool bf16);
  // Device bytes a plan of `users` and `items` of `rank` holds.
  static int64_t bytes_of(int64_t users, int64_t items, int64_t rank, bool bf16);

  // Device bytes this holds (the margins and folded rows).
  int64_t bytes() const {
    return int64_t{sizeof(float)} * static_cast<int64_t>(margins_.size()) +
           int64_t{sizeof(uint16_t)} * static_cast<int64_t>(folded_items_.size());
  }
  // Whether lists of n over the whole catalogue take the two passes: n small enough for the
  // finish and a sample of at most half the catalogue.
  bool serves(int n) const;
  // Device bytes of a call of `count` users.
  int64_t scratch_bytes(int64_t count, int n) const;

  // Lists of the `count` users users[0 .. count) (device ids) into out_items / out_scores
  // (host, count x n), excluding exclude_cols[exclude_offsets[u] ..) (device; null: none).
  // Returns the positions of the users whose lists it did not write (more near-equal scores
  // than the scan keeps); the caller answers them.
  std::vector<int64_t> run(const TwoPassSides& sides, const int32_t* users, int64_t count, int n,
                           const int64_t* exclude_offsets, const int32_t* exclude_cols,
                           int32_t* out_items, float* out_scores, cudaStream_t stream) const;

 private:
  TwoPassTopN() = default;
  // Candidates the scan samples for the cuts of lists of n.
  int64_t sample_size(int n) const;
  int64_t queries_per_launch(int64_t count, int n) const;
  // Queries in one wave of the scan's blocks (two an SM) on the plan's device.
  int64_t wave_queries() const;

  int64_t items_ = 0;
  // Items by decreasing likelihood of ranking high (a bias plus a typical user's share of the
  // norm): the scan's sample is a prefix, so that its cuts are high.
  std::vector<int32_t> sample_order_;
  DeviceBuffer<float> margins_;  // by user
  int64_t rank_ = 0;
  int sm_count_ = 1;  // of the device the plan was made on
  bool folded_ = false;
  bool warpgroup_ = false;  // the folded scan may use warpgroup mma on the plan's device
  DeviceBuffer<uint16_t> folded_items_;  // rows with tails, once fold_items ran
};

}  // namespace sfac::cuda
