// A model's factors and biases on a CUDA device, serving its top-n calls (recommend, similar
// items) with the fused scoring and selection kernel (kernels/recommend/top_n.cuh), and batched
// fold-in (cuda_fold_in.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "core/model.h"
#include "core/resident_model.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_fold_in.h"
#include "cuda/cuda_two_pass_top_n.h"
#include "cuda/device_buffer.h"

namespace sfac::cuda {

class CudaSparseMatrix;

class CudaResidentModel final : public ResidentModel {
 public:
  // Uploads the factors (rows zero-padded to the kernel's k chunk) and biases; throws
  // SFAC_ERR_OUT_OF_MEMORY where the device has no room for them.
  CudaResidentModel(std::shared_ptr<const CudaBackend> backend, const Model& model);
  ~CudaResidentModel() override;

  // Both decline (false) lists longer than the kernel keeps (kernels::kTopNMax) and exclusion
  // matrices of another device.
  bool recommend(const RecommendRequest& request) override;
  bool similar(const SimilarRequest& request) override;
  // Declines models whose rank the ALS kernels do not take (CudaFoldIn::serves).
  FoldInAnswer fold_in(const FoldInRequest& request) override;
  // Declines ratings of another device.
  bool error_sums(const SparseMatrix& ratings, double* squared, double* absolute) override;

 private:
  // The user or item norms for cosine similarity, computed on first use.
  const float* norms(bool users);
  // Whether top-n calls for lists of n run on the single-pass 16-bit kernel (the 16-bit rows are
  // the factors exactly).
  bool sixteen_bit(int n) const;
  // Recommend by the single-pass kernels (every call the two passes do not take, and the users
  // whose lists they leave).
  void recommend_single_pass(const RecommendRequest& request, const CudaSparseMatrix* exclude,
                             cudaStream_t stream);
  // Recommend by the two passes (cuda_two_pass_top_n.h), the users they leave by the single pass.
  void recommend_two_pass(const RecommendRequest& request, const CudaSparseMatrix* exclude,
                          cudaStream_t stream);
  // SFAC_ERR_OUT_OF_MEMORY unless this copy (with the fold-in's item side, once made) and
  // `scratch` more bytes fit the context's device memory limit (none: 0).
  void require_within_limit(int64_t scratch, const char* what) const;

  std::shared_ptr<const CudaBackend> backend_;
  int64_t users_ = 0, items_ = 0, rank_ = 0, stride_ = 0;
  int64_t bytes_ = 0;  // device bytes of the copy
  bool has_biases_ = false;
  DeviceBuffer<float> user_factors_, item_factors_;
  DeviceBuffer<float> user_offsets_;  // global mean + user bias, as the host adds them
  DeviceBuffer<float> item_biases_;
  // Where the rank is within the 16-bit kernels' rows: the factors as 16-bit values, rows
  // zero-padded to half_stride_. Exactly (half_exact_) where every factor is a bfloat16 (else
  // float16) value; else rounded to the nearest bfloat16 value, for the two passes only.
  bool half_ = false, half_exact_ = false, half_bf16_ = false;
  int64_t half_stride_ = 0;
  DeviceBuffer<uint16_t> user_half_, item_half_;
  std::unique_ptr<TwoPassTopN> two_pass_;  // null: the single-pass kernels serve every call
  std::once_flag norms_once_[2];  // items, users
  DeviceBuffer<float> norms_[2];
  std::once_flag fold_in_once_;  // the fold-in's item side, made on first use
  std::unique_ptr<CudaFoldIn> fold_in_;
  std::atomic<int64_t> fold_in_bytes_{0};  // for the limit checks of concurrent calls
};

}  // namespace sfac::cuda
