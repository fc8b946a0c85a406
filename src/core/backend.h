// The interface every backend (CPU, CUDA) implements, and the objects it owns. The C shim and
// the core talk only to these types; storage and algorithms live behind them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "core/host_csr.h"
#include "core/trainer.h"
#include "sparsefac/sparsefac.h"

namespace sfac {

class Backend;
class ResidentModel;
struct Model;

// A sparse matrix resident on its backend's device. The sparsity pattern is immutable after
// creation; only the values change.
class SparseMatrix {
 public:
  SparseMatrix(std::shared_ptr<Backend> backend, int64_t rows, int64_t cols, int64_t nnz)
      : backend_(std::move(backend)), rows_(rows), cols_(cols), nnz_(nnz) {}
  virtual ~SparseMatrix() = default;
  SparseMatrix(const SparseMatrix&) = delete;
  SparseMatrix& operator=(const SparseMatrix&) = delete;

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t nnz() const { return nnz_; }
  Backend& backend() const { return *backend_; }

  // Equal ids mean a shared (hence identical) pattern.
  virtual const void* pattern_id() const = 0;
  // True when the patterns are identical (shared, or equal offsets and indices).
  virtual bool same_pattern(const SparseMatrix& other) const = 0;

  // The pattern's CSR arrays where the matrix keeps them in host memory (offsets: rows() + 1,
  // sorted column indices: nnz()), valid while the matrix lives; else false. Callers that read
  // a few rows then need no download of all of them.
  virtual bool host_pattern(const int64_t** offsets, const int32_t** col_indices) const {
    (void)offsets;
    (void)col_indices;
    return false;
  }

  // Host downloads; any pointer may be null.
  virtual void download_csr(int64_t* offsets, int32_t* col_indices, float* values) const = 0;
  virtual void download_csc(int64_t* offsets, int32_t* row_indices, float* values) const = 0;
  virtual void download_coo(int32_t* row_indices, int32_t* col_indices, float* values) const = 0;

  // Values in canonical (row-major) order; already validated as finite.
  virtual void set_values(const float* values) = 0;
  // A new matrix sharing this pattern; values null = zeros.
  virtual std::unique_ptr<SparseMatrix> create_like(const float* values) const = 0;

  // The rows (or columns) by nonzero count, largest first, equal counts in index order (see
  // sfac_sparse_degree_order); `order` is a host array of rows() (cols()) entries.
  virtual void degree_order(sfac_axis axis, int32_t* order) const = 0;
  // A new matrix with row r = row row_order[r] and column c = column col_order[c] (host arrays
  // already checked to be permutations; null keeps a side).
  virtual std::unique_ptr<SparseMatrix> permuted(const int32_t* row_order,
                                                 const int32_t* col_order) const = 0;

 protected:
  const std::shared_ptr<Backend>& backend_ptr() const { return backend_; }

 private:
  std::shared_ptr<Backend> backend_;
  int64_t rows_, cols_, nnz_;
};

// A host copy of the matrix's CSR: the pattern always, the values when asked (else left empty).
HostCsr download_host_csr(const SparseMatrix& m, bool with_values = true);

// A row-major dense matrix resident on its backend's device.
class DenseMatrix {
 public:
  DenseMatrix(std::shared_ptr<Backend> backend, int64_t rows, int64_t cols, sfac_dtype dtype)
      : backend_(std::move(backend)), rows_(rows), cols_(cols), dtype_(dtype) {}
  virtual ~DenseMatrix() = default;
  DenseMatrix(const DenseMatrix&) = delete;
  DenseMatrix& operator=(const DenseMatrix&) = delete;

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  sfac_dtype dtype() const { return dtype_; }
  Backend& backend() const { return *backend_; }

  virtual void upload(const float* data) = 0;  // rows * cols finite floats
  virtual void download(float* data) const = 0;
  // A new matrix of the same dtype with row r = row order[r] (a host permutation, checked).
  virtual std::unique_ptr<DenseMatrix> permuted_rows(const int32_t* order) const = 0;

 private:
  std::shared_ptr<Backend> backend_;
  int64_t rows_, cols_;
  sfac_dtype dtype_;
};

// What a backend learned about one pattern for one K; reused across sddmm calls.
class SddmmPlan {
 public:
  SddmmPlan(const void* pattern_id, int64_t k, sfac_sddmm_algorithm algorithm)
      : pattern_id_(pattern_id), k_(k), algorithm_(algorithm) {}
  virtual ~SddmmPlan() = default;
  const void* pattern_id() const { return pattern_id_; }
  int64_t k() const { return k_; }
  sfac_sddmm_algorithm algorithm() const { return algorithm_; }

 private:
  const void* pattern_id_;
  int64_t k_;
  sfac_sddmm_algorithm algorithm_;
};

// One validated SDDMM call (see sfac_sddmm for the semantics).
struct SddmmCall {
  sfac_sddmm_mode mode;
  float alpha;
  float beta;
  const DenseMatrix& a;
  const DenseMatrix& b;
  const SparseMatrix& s;
  SparseMatrix& p;
  const SddmmPlan& plan;
};

class Backend : public std::enable_shared_from_this<Backend> {
 public:
  virtual ~Backend() = default;

  virtual sfac_backend kind() const = 0;
  virtual int device() const = 0;
  virtual const std::string& device_name() const = 0;
  virtual int num_threads() const = 0;  // resolved, >= 1

  bool compatible_with(const Backend& other) const {
    return kind() == other.kind() && device() == other.device();
  }

  virtual std::unique_ptr<SparseMatrix> make_sparse(HostCsr csr) = 0;
  // COO triplets that passed check_coo, in any order, canonicalized (sorted, duplicates
  // resolved) into a matrix; the host arrays are not used after the call. Default: on the host.
  virtual std::unique_ptr<SparseMatrix> make_sparse_from_coo(
      int64_t rows, int64_t cols, int64_t nnz, const int32_t* row_indices,
      const int32_t* col_indices, const float* values, DuplicatePolicy duplicates);
  // data null = zeros; otherwise rows * cols finite floats.
  virtual std::unique_ptr<DenseMatrix> make_dense(int64_t rows, int64_t cols, sfac_dtype dtype,
                                                  const float* data) = 0;

  virtual std::unique_ptr<SddmmPlan> make_sddmm_plan(const SparseMatrix& pattern, int64_t k,
                                                     sfac_sddmm_algorithm algorithm) = 0;
  virtual void sddmm(const SddmmCall& call) = 0;

  // A trainer for options.algorithm on `ratings` (users x items); seed drives initialization.
  // `ratings` belongs to this backend's context or, where trains_from says so, another one.
  virtual std::unique_ptr<Trainer> make_trainer(const SparseMatrix& ratings,
                                                const TrainOptions& options, uint64_t seed) = 0;
  // Whether make_trainer takes `ratings`: those of a context of this backend and device, and
  // whatever else a backend's trainers read themselves (CUDA SGD: ratings in host memory).
  virtual bool trains_from(const SparseMatrix& ratings, const TrainOptions& options) const {
    (void)options;
    return compatible_with(ratings.backend());
  }

  // The copy of `model`'s factors and biases that serves its inference calls on this backend
  // (core/resident_model.h), or null where the host scores them (the default: host backends).
  // Called once per model until its factors change; may throw (e.g. SFAC_ERR_OUT_OF_MEMORY),
  // which fails that inference call.
  virtual std::unique_ptr<ResidentModel> make_resident_model(const Model& model);

  virtual void synchronize() = 0;

  // The device stream the backend's work is queued on (a cudaStream_t), null for host backends.
  // set_stream(null) restores the backend's own stream; host backends accept only null.
  virtual void set_stream(void* stream);
  virtual void* stream_handle() const { return nullptr; }

  // The host backend that serves, per call, what this backend does not (a trainer whose options
  // it declines with SFAC_ERR_UNSUPPORTED, e.g. ranks above its kernels' limit), or null. Only a
  // backend that SFAC_BACKEND_AUTO chose has one: a caller who asked for a backend by name gets
  // that backend's answer, never another's.
  const std::shared_ptr<Backend>& host_fallback() const { return host_fallback_; }
  void set_host_fallback(std::shared_ptr<Backend> host) { host_fallback_ = std::move(host); }

  // Host bytes one object built for the context may take (core/memory_budget.h); 0 = the
  // memory available when it is built.
  int64_t host_memory_limit() const { return host_memory_limit_.load(std::memory_order_relaxed); }
  void set_host_memory_limit(int64_t bytes) {
    host_memory_limit_.store(bytes, std::memory_order_relaxed);
  }

  // Device bytes a model's device copy for inference (core/resident_model.h) may take, with the
  // scratch of one call; 0 = what the device has free. Host backends ignore it.
  int64_t device_memory_limit() const {
    return device_memory_limit_.load(std::memory_order_relaxed);
  }
  void set_device_memory_limit(int64_t bytes) {
    device_memory_limit_.store(bytes, std::memory_order_relaxed);
  }

 private:
  std::atomic<int64_t> host_memory_limit_{0};
  std::atomic<int64_t> device_memory_limit_{0};
  std::shared_ptr<Backend> host_fallback_;
};

// Creates the backend for a context. AUTO resolves to CUDA when the build has it and a device
// (`device`, else device 0) can be used, with a CPU backend as its host_fallback; otherwise to
// the CPU, without an error.
std::shared_ptr<Backend> create_backend(sfac_backend kind, int device, int num_threads);

// The CUDA backend on `device` (throws SFAC_ERR_UNSUPPORTED in builds without CUDA).
std::shared_ptr<Backend> create_cuda_backend(int device, int num_threads);

}  // namespace sfac
