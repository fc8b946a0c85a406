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
#include "cuda/device_buffer.h"

namespace sfac::cuda {

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
  bool fold_in(const FoldInRequest& request) override;
  // Declines ratings of another device.
  bool error_sums(const SparseMatrix& ratings, double* squared, double* absolute) override;

 private:
  // The user or item norms for cosine similarity, computed on first use.
  const float* norms(bool users);
  // Whether top-n calls for lists of n run on the 16-bit copies.
  bool sixteen_bit(int n) const;
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
  // Where every factor is exactly a bfloat16 (else float16) value and the rank is within the
  // 16-bit kernel's rows: the factors as those values, rows zero-padded to half_stride_.
  bool half_ = false, half_bf16_ = false;
  int64_t half_stride_ = 0;
  DeviceBuffer<uint16_t> user_half_, item_half_;
  std::once_flag norms_once_[2];  // items, users
  DeviceBuffer<float> norms_[2];
  std::once_flag fold_in_once_;  // the fold-in's item side, made on first use
  std::unique_ptr<CudaFoldIn> fold_in_;
  std::atomic<int64_t> fold_in_bytes_{0};  // for the limit checks of concurrent calls
};

}  // namespace sfac::cuda
