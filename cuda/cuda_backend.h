// The CUDA backend: matrices resident on one device, work queued on the backend's own stream,
// memory from the device's stream-ordered pool.
#pragma once

#include <cuda_runtime.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "cuda/cuda_resources.h"

namespace sfac::cuda {

// Makes `device` current for a scope and restores the caller's device afterwards, so the
// library never changes which device the application's own CUDA code runs on.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, int num_threads);
  ~CudaBackend() override;

  sfac_backend kind() const override { return SFAC_BACKEND_CUDA; }
  int device() const override { return device_; }
  const std::string& device_name() const override { return name_; }
  int num_threads() const override { return num_threads_; }
  // The stream device work is queued on: the caller's (set_stream) or the backend's own.
  cudaStream_t stream() const { return stream_; }
  // Objects' memory is allocated and freed on the backend's own stream, which lives as long as
  // any of them, never on a caller's stream (the caller may destroy it once it is replaced).
  cudaStream_t own_stream() const { return own_stream_; }
  // Orders work: everything queued so far on the current stream before what is queued next on
  // the own stream, and the reverse. No-ops while the current stream is the own one.
  void own_waits_for_current() const;
  void current_waits_for_own() const noexcept;  // best effort: for destructors
  void own_waits_for_current_noexcept() const noexcept;

  std::unique_ptr<SparseMatrix> make_sparse(HostCsr csr) override;
  std::unique_ptr<SparseMatrix> make_sparse_from_coo(int64_t rows, int64_t cols, int64_t nnz,
                                                     const int32_t* row_indices,
                                                     const int32_t* col_indices,
                                                     const float* values,
                                                     DuplicatePolicy duplicates) override;
  std::unique_ptr<DenseMatrix> make_dense(int64_t rows, int64_t cols, sfac_dtype dtype,
                                          const float* data) override;
  std::unique_ptr<SddmmPlan> make_sddmm_plan(const SparseMatrix& pattern, int64_t k,
                                             sfac_sddmm_algorithm algorithm) override;
  void sddmm(const SddmmCall& call) override;
  // SGD also trains from ratings in host memory (a CPU context's): it copies them into its own
  // arrangement anyway, and keeping them off the device is how ratings larger than the device
  // are trained on (they are streamed).
  bool trains_from(const SparseMatrix& ratings, const TrainOptions& options) const override;
  std::unique_ptr<Trainer> make_trainer(const SparseMatrix& ratings, const TrainOptions& options,
                                        uint64_t seed) override;
  // The model's factors and biases on this device, serving its top-n calls.
  std::unique_ptr<ResidentModel> make_resident_model(const Model& model) override;
  void synchronize() override;
  void set_stream(void* stream) override;
  void* stream_handle() const override { return stream_; }

  // Everything queued on `first` so far runs before what is queued on `then` next (any two
  // streams of this device).
  cudaError_t order(cudaStream_t first, cudaStream_t then) const noexcept;

  // The context's library handles (cuBLAS), for its algorithms.
  CudaResources& resources() const { return *resources_; }

  int64_t l2_bytes() const { return l2_bytes_; }
  // Whether kernels may launch as programmatic dependents of the stream's previous kernel.
  bool dependent_launch() const { return dependent_launch_; }

 private:
  int device_;
  int64_t l2_bytes_ = 0;
  bool dependent_launch_ = false;  // compute capability 9.0 and up
  int num_threads_;
  std::string name_;
  cudaStream_t own_stream_ = nullptr;
  cudaStream_t stream_ = nullptr;  // own_stream_ or the caller's
  cudaEvent_t order_event_ = nullptr;
  std::unique_ptr<CudaResources> resources_;  // released before the own stream
};

// Work queued on the backend's own stream within a scope, ordered after the work already on
// the current stream and before anything queued on it later.
class OwnStreamWork {
 public:
  explicit OwnStreamWork(const CudaBackend& backend) : backend_(backend) {
    backend_.own_waits_for_current();
  }
  ~OwnStreamWork() { backend_.current_waits_for_own(); }
  OwnStreamWork(const OwnStreamWork&) = delete;
  OwnStreamWork& operator=(const OwnStreamWork&) = delete;

 private:
  const CudaBackend& backend_;
};

// Orders work on `self`'s current stream with the current streams of the other CUDA contexts
// that own a call's operands: the call's work after what they queued so far, and what they
// queue next after the call's work. Owners that are `self`, null (an absent operand) or repeated
// are skipped.
class ForeignOrder {
 public:
  ForeignOrder(const CudaBackend& self, std::initializer_list<const Backend*> owners);
  ~ForeignOrder();
  ForeignOrder(const ForeignOrder&) = delete;
  ForeignOrder& operator=(const ForeignOrder&) = delete;

 private:
  const CudaBackend& self_;
  std::vector<const CudaBackend*> foreign_;
};

}  // namespace sfac::cuda
