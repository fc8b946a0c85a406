// Fold-in of a batch of users on a CUDA device (sfac_model_recalculate_users): each user's
// normal equations against the model's fixed item factors, summed and solved by the ALS
// trainer's kernels (kernels/als/), one system per user; or, with the model's CG fold-in
// solver, the trainer's conjugate-gradient kernel, which never forms the systems.
#pragma once

#include <cstdint>
#include <memory>

#include "core/model.h"
#include "core/resident_model.h"
#include "cuda/cuda_backend.h"
#include "cuda/device_buffer.h"

namespace sfac::cuda {
namespace kernels {
struct AlsHalfSweep;
}

class CudaFoldIn {
 public:
  // The item side as the ALS kernels read it ([y_i, 1] rows with biases, the item biases, and
  // Y^T Y for implicit feedback), made from `model`; throws SFAC_ERR_OUT_OF_MEMORY where the
  // device has no room for it.
  CudaFoldIn(std::shared_ptr<const CudaBackend> backend, const Model& model);
  ~CudaFoldIn();

  // Whether solve() takes this model (ranks from 1 up to the ALS kernels' limit).
  static bool serves(const Model& model);
  // Device bytes of the item side this makes for `model`.
  static int64_t item_side_bytes(const Model& model);
  int64_t bytes() const { return bytes_; }

  // Solves the request's users (at least one rating among them) into its outputs; rows are
  // written as computed, finite or not. `budget`: device bytes the call may take (negative: no
  // limit, a share of the free memory); SFAC_ERR_OUT_OF_MEMORY where it cannot hold the longest
  // user's systems. Rows not yet checked (request.rows_checked) are checked on the device once
  // uploaded; false, nothing written, where one may fail (FoldInRequest).
  bool solve(const FoldInRequest& request, int64_t budget);

 private:
  bool solve_cg(const FoldInRequest& request, int64_t budget);
  // Whether the request's uploaded rows were checked or pass the device's check.
  bool rows_pass(const FoldInRequest& request, const int64_t* offsets, const int32_t* items,
                 const float* ratings, cudaStream_t stream) const;
  // The item side's and the objective's part of a half-sweep.
  void describe_items(kernels::AlsHalfSweep& s) const;
  // The solved rows (d_ floats each, the first rank_ taken) and biases into the request's
  // outputs; waits for them.
  void download_rows(const FoldInRequest& r, const DeviceBuffer<float>& solved,
                     const DeviceBuffer<float>& solved_bias, cudaStream_t stream) const;

  std::shared_ptr<const CudaBackend> backend_;
  bool implicit_ = false, biases_ = false;
  int64_t rank_ = 0, d_ = 0;
  float alpha_ = 0.0f, global_mean_ = 0.0f;
  double lambda_ = 0.0;
  bool weighted_ = false;
  int64_t bytes_ = 0;
  DeviceBuffer<float> fixed_;      // items x d
  DeviceBuffer<float> item_bias_;  // with biases
  DeviceBuffer<float> gram_;       // d x d, implicit feedback
  DeviceBuffer<float> gram_blocks_;  // the same in the normal equations' order (als_gram_blocks)
};

}  // namespace sfac::cuda
