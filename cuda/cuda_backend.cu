#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_als.h"
#include "cuda/cuda_sgd.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_dense.h"
#include "cuda/cuda_resident_model.h"
#include "cuda/cuda_sddmm.h"
#include "cuda/cuda_sparse.h"
#include "cuda/device_buffer.h"
#include "cuda/device_pool.h"
#include "cuda/kernels/common/sparse_convert.cuh"

namespace sfac::cuda {

DeviceGuard::DeviceGuard(int device) {
  SFAC_CUDA_TRY(cudaGetDevice(&previous_));
  if (previous_ != device) SFAC_CUDA_TRY(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current != previous_) {
    (void)cudaSetDevice(previous_);
  }
}

CudaBackend::CudaBackend(int device, int num_threads)
    : device_(device), num_threads_(num_threads > 0 ? num_threads : omp_get_max_threads()) {
  DeviceGuard guard(device);
  cudaDeviceProp prop{};
  SFAC_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
  name_ = prop.name;
  l2_bytes_ = prop.l2CacheSize;
  dependent_launch_ = prop.major >= 9;
  SFAC_CUDA_TRY(cudaStreamCreateWithFlags(&own_stream_, cudaStreamNonBlocking));
  stream_ = own_stream_;
  SFAC_CUDA_TRY(cudaEventCreateWithFlags(&order_event_, cudaEventDisableTiming));
  resources_ = std::make_unique<CudaResources>(own_stream_);
}

CudaBackend::~CudaBackend() {
  int previous = -1;
  (void)cudaGetDevice(&previous);
  (void)cudaSetDevice(device_);
  if (stream_ != own_stream_) (void)cudaStreamSynchronize(stream_);
  (void)cudaStreamSynchronize(own_stream_);
  resources_.reset();  // its workspace is freed on the own stream
  (void)cudaStreamSynchronize(own_stream_);
  (void)cudaEventDestroy(order_event_);
  (void)cudaStreamDestroy(own_stream_);
  // The last object of this context is gone: what the library's pool caches for the device goes
  // back to it (other contexts on the device keep their blocks in use).
  release_cached_memory(device_);
  (void)cudaSetDevice(previous);
}

cudaError_t CudaBackend::order(cudaStream_t first, cudaStream_t then) const noexcept {
  const cudaError_t recorded = cudaEventRecord(order_event_, first);
  return recorded != cudaSuccess ? recorded : cudaStreamWaitEvent(then, order_event_, 0);
}

void CudaBackend::own_waits_for_current() const {
  if (stream_ != own_stream_) SFAC_CUDA_TRY(order(stream_, own_stream_));
}

void CudaBackend::own_waits_for_current_noexcept() const noexcept {
  if (stream_ != own_stream_) (void)order(stream_, own_stream_);
}

void CudaBackend::current_waits_for_own() const noexcept {
  if (stream_ != own_stream_) (void)order(own_stream_, stream_);
}

void CudaBackend::set_stream(void* stream) {
  DeviceGuard guard(device_);
  const cudaStream_t next = stream ? static_cast<cudaStream_t>(stream) : own_stream_;
  if (next == stream_) return;
  if (next != own_stream_) {
    int device = -1;
    SFAC_REQUIRE(cudaStreamGetDevice(next, &device) == cudaSuccess, SFAC_ERR_INVALID_ARGUMENT,
                 "stream is not a valid CUDA stream");
    SFAC_REQUIRE(device == device_, SFAC_ERR_INVALID_ARGUMENT, "stream belongs to CUDA device ",
                 device, " but the context uses device ", device_);
  }
  // Whatever the context queued on the previous stream runs before anything on the next one.
  SFAC_CUDA_TRY(order(stream_, next));
  stream_ = next;
}

std::unique_ptr<SparseMatrix> CudaBackend::make_sparse(HostCsr csr) {
  DeviceGuard guard(device_);
  auto pattern = std::make_shared<CudaPattern>();
  pattern->rows = csr.rows;
  pattern->cols = csr.cols;
  pattern->nnz = csr.nnz();
  pattern->offsets = DeviceBuffer<int64_t>(csr.offsets.size(), own_stream_);
  pattern->offsets.upload(csr.offsets.data(), csr.offsets.size());
  pattern->indices = DeviceBuffer<int32_t>(csr.indices.size(), own_stream_);
  pattern->indices.upload(csr.indices.data(), csr.indices.size());
  DeviceBuffer<float> values(csr.values.size(), own_stream_);
  values.upload(csr.values.data(), csr.values.size());
  // The host vectors die at return: the copies must have left them.
  SFAC_CUDA_TRY(cudaStreamSynchronize(own_stream_));
  return std::make_unique<CudaSparseMatrix>(shared_from_this(), std::move(pattern),
                                            std::move(values));
}

// Sorted and deduplicated on the device (the transfer of 12 bytes per nonzero plus a radix sort
// beats the host's per-row sorts on large inputs); same result and messages as the host path.
std::unique_ptr<SparseMatrix> CudaBackend::make_sparse_from_coo(
    int64_t rows, int64_t cols, int64_t nnz, const int32_t* row_indices, const int32_t* col_indices,
    const float* values, DuplicatePolicy duplicates) {
  DeviceGuard guard(device_);
  auto pattern = std::make_shared<CudaPattern>();
  pattern->rows = rows;
  pattern->cols = cols;
  DeviceBuffer<float> csr_values;
  kernels::DuplicateEntry duplicate;
  if (!kernels::csr_from_coo(row_indices, col_indices, values, nnz, rows,
                             duplicates == DuplicatePolicy::Sum, pattern->offsets, pattern->indices,
                             csr_values, duplicate, own_stream_)) {
    fail_duplicate_entry(duplicate.row, duplicate.col, duplicate.first, duplicate.second);
  }
  pattern->nnz = static_cast<int64_t>(pattern->indices.size());
  return std::make_unique<CudaSparseMatrix>(shared_from_this(), std::move(pattern),
                                            std::move(csr_values));
}

std::unique_ptr<DenseMatrix> CudaBackend::make_dense(int64_t rows, int64_t cols, sfac_dtype dtype,
                                                     const float* data) {
  DeviceGuard guard(device_);
  auto m = std::make_unique<CudaDenseMatrix>(shared_from_this(), rows, cols, dtype, own_stream_);
  if (data) {
    m->upload(data);  // ordered with the current stream itself
  } else if (rows * cols > 0) {
    OwnStreamWork ordered(*this);
    // All-zero bits are 0.0 in float32, float16 and bfloat16 alike.
    SFAC_CUDA_TRY(cudaMemsetAsync(m->data(), 0, m->bytes(), own_stream_));
  }
  return m;
}

std::unique_ptr<SddmmPlan> CudaBackend::make_sddmm_plan(const SparseMatrix& pattern, int64_t k,
                                                        sfac_sddmm_algorithm algorithm) {
  return make_cuda_sddmm_plan(*this, pattern, k, algorithm);
}

void CudaBackend::sddmm(const SddmmCall& call) { run_cuda_sddmm(*this, call); }

ForeignOrder::ForeignOrder(const CudaBackend& self, std::initializer_list<const Backend*> owners)
    : self_(self) {
  for (const Backend* owner : owners) {
    const auto* cuda = static_cast<const CudaBackend*>(owner);
    if (cuda == nullptr || cuda == &self_ || std::find(foreign_.begin(), foreign_.end(), cuda) != foreign_.end())
      continue;
    foreign_.push_back(cuda);
    SFAC_CUDA_TRY(self_.order(cuda->stream(), self_.stream()));
  }
}

ForeignOrder::~ForeignOrder() {
  for (const CudaBackend* cuda : foreign_) (void)self_.order(self_.stream(), cuda->stream());
}

bool CudaBackend::trains_from(const SparseMatrix& ratings, const TrainOptions& options) const {
  return compatible_with(ratings.backend()) ||
         (options.algorithm == SFAC_ALGO_SGD && ratings.backend().kind() == SFAC_BACKEND_CPU);
}

std::unique_ptr<ResidentModel> CudaBackend::make_resident_model(const Model& model) {
  return std::make_unique<CudaResidentModel>(
      std::static_pointer_cast<const CudaBackend>(shared_from_this()), model);
}

std::unique_ptr<Trainer> CudaBackend::make_trainer(const SparseMatrix& ratings,
                                                   const TrainOptions& options, uint64_t seed) {
  switch (options.algorithm) {
    case SFAC_ALGO_ALS:
    case SFAC_ALGO_IALS:
      return make_als_trainer(*this, dynamic_cast<const CudaSparseMatrix&>(ratings), options,
                              seed);
    default:
      return make_sgd_trainer(*this, ratings, options, seed);
  }
}

void CudaBackend::synchronize() {
  DeviceGuard guard(device_);
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream_));
  if (stream_ != own_stream_) SFAC_CUDA_TRY(cudaStreamSynchronize(own_stream_));
}

}  // namespace sfac::cuda

namespace sfac {

std::shared_ptr<Backend> create_cuda_backend(int device, int num_threads) {
  return std::make_shared<cuda::CudaBackend>(device, num_threads);
}

}  // namespace sfac
