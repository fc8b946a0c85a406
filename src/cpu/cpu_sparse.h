// Host-resident sparse matrix of the CPU backend: a shared immutable CSR pattern plus values.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "core/backend.h"

namespace sfac::cpu {

// CSC view of a CSR pattern: csr_position[e] is the CSR slot of CSC entry e.
struct CscIndex {
  std::vector<int64_t> offsets;
  std::vector<int32_t> indices;
  std::vector<int64_t> csr_position;
};

class CsrPattern {
 public:
  CsrPattern(int64_t rows, int64_t cols, std::vector<int64_t> offsets, std::vector<int32_t> indices)
      : rows_(rows), cols_(cols), offsets_(std::move(offsets)), indices_(std::move(indices)) {}

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t nnz() const { return static_cast<int64_t>(indices_.size()); }
  const std::vector<int64_t>& offsets() const { return offsets_; }
  const std::vector<int32_t>& indices() const { return indices_; }

  // Built on first use, then cached; safe to call from several threads.
  const CscIndex& csc(int num_threads) const;

 private:
  int64_t rows_, cols_;
  std::vector<int64_t> offsets_;
  std::vector<int32_t> indices_;
  mutable std::once_flag csc_once_;
  mutable CscIndex csc_;
};

class CpuSparseMatrix final : public SparseMatrix {
 public:
  CpuSparseMatrix(std::shared_ptr<Backend> backend, std::shared_ptr<const CsrPattern> pattern,
                  std::vector<float> values);

  const CsrPattern& pattern() const { return *pattern_; }
  const std::vector<float>& values() const { return values_; }
  std::vector<float>& values() { return values_; }

  const void* pattern_id() const override { return pattern_.get(); }
  bool same_pattern(const SparseMatrix& other) const override;
  bool host_pattern(const int64_t** offsets, const int32_t** col_indices) const override {
    *offsets = pattern_->offsets().data();
    *col_indices = pattern_->indices().data();
    return true;
  }
  void download_csr(int64_t* offsets, int32_t* col_indices, float* values) const override;
  void download_csc(int64_t* offsets, int32_t* row_indices, float* values) const override;
  void download_coo(int32_t* row_indices, int32_t* col_indices, float* values) const override;
  void set_values(const float* values) override;
  std::unique_ptr<SparseMatrix> create_like(const float* values) const override;
  void degree_order(sfac_axis axis, int32_t* order) const override;
  std::unique_ptr<SparseMatrix> permuted(const int32_t* row_order,
                                         const int32_t* col_order) const override;

 private:
  std::shared_ptr<const CsrPattern> pattern_;
  std::vector<float> values_;
};

}  // namespace sfac::cpu
