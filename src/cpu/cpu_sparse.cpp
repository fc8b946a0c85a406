#include "cpu/cpu_sparse.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/reorder.h"

namespace sfac::cpu {

const CscIndex& CsrPattern::csc(int num_threads) const {
  std::call_once(csc_once_, [&] {
    CscIndex csc;
    csc.offsets.assign(static_cast<size_t>(cols_) + 1, 0);
    for (int32_t c : indices_) ++csc.offsets[static_cast<size_t>(c) + 1];
    for (int64_t c = 0; c < cols_; ++c) csc.offsets[c + 1] += csc.offsets[c];
    csc.indices.resize(indices_.size());
    csc.csr_position.resize(indices_.size());
    // A row-ordered scatter keeps each column sorted by row.
    std::vector<int64_t> next(csc.offsets.begin(), csc.offsets.end() - 1);
    for (int64_t r = 0; r < rows_; ++r) {
      for (int64_t e = offsets_[r]; e < offsets_[r + 1]; ++e) {
        const int64_t slot = next[indices_[e]]++;
        csc.indices[slot] = static_cast<int32_t>(r);
        csc.csr_position[slot] = e;
      }
    }
    (void)num_threads;  // A serial scatter is memory bound and runs once per pattern.
    csc_ = std::move(csc);
  });
  return csc_;
}

CpuSparseMatrix::CpuSparseMatrix(std::shared_ptr<Backend> backend,
                                 std::shared_ptr<const CsrPattern> pattern,
                                 std::vector<float> values)
    : SparseMatrix(std::move(backend), pattern->rows(), pattern->cols(), pattern->nnz()),
      pattern_(std::move(pattern)),
      values_(std::move(values)) {}

bool CpuSparseMatrix::same_pattern(const SparseMatrix& other) const {
  if (other.pattern_id() == pattern_id()) return true;
  const auto* cpu = dynamic_cast<const CpuSparseMatrix*>(&other);
  if (cpu == nullptr) return false;
  const CsrPattern& a = *pattern_;
  const CsrPattern& b = *cpu->pattern_;
  return a.rows() == b.rows() && a.cols() == b.cols() && a.offsets() == b.offsets() &&
         a.indices() == b.indices();
}

void CpuSparseMatrix::download_csr(int64_t* offsets, int32_t* col_indices, float* values) const {
  const CsrPattern& p = *pattern_;
  if (offsets) std::copy(p.offsets().begin(), p.offsets().end(), offsets);
  if (col_indices) std::copy(p.indices().begin(), p.indices().end(), col_indices);
  if (values) std::copy(values_.begin(), values_.end(), values);
}

void CpuSparseMatrix::download_csc(int64_t* offsets, int32_t* row_indices, float* values) const {
  const CscIndex& csc = pattern_->csc(backend().num_threads());
  if (offsets) std::copy(csc.offsets.begin(), csc.offsets.end(), offsets);
  if (row_indices) std::copy(csc.indices.begin(), csc.indices.end(), row_indices);
  if (values) {
    for (size_t e = 0; e < csc.csr_position.size(); ++e) values[e] = values_[csc.csr_position[e]];
  }
}

void CpuSparseMatrix::download_coo(int32_t* row_indices, int32_t* col_indices,
                                   float* values) const {
  const CsrPattern& p = *pattern_;
  if (row_indices) {
    const std::vector<int64_t>& off = p.offsets();
    const int64_t nnz = off.back();
    if (nnz < p.rows() / 64) {
      // Far more rows than nonzeros (a file may declare 2^31 rows and hold one entry): find
      // each nonzero's row by bisection instead of visiting every empty row.
      for (int64_t e = 0; e < nnz; ++e) {
        row_indices[e] = static_cast<int32_t>(
            std::upper_bound(off.begin(), off.end(), e) - off.begin() - 1);
      }
    } else {
      for (int64_t r = 0; r < p.rows(); ++r) {
        std::fill(row_indices + off[r], row_indices + off[r + 1], static_cast<int32_t>(r));
      }
    }
  }
  download_csr(nullptr, col_indices, values);
}

void CpuSparseMatrix::set_values(const float* values) {
  std::copy(values, values + nnz(), values_.begin());
}

std::unique_ptr<SparseMatrix> CpuSparseMatrix::create_like(const float* values) const {
  std::vector<float> copy(static_cast<size_t>(nnz()), 0.0f);
  if (values) std::copy(values, values + nnz(), copy.begin());
  return std::make_unique<CpuSparseMatrix>(backend_ptr(), pattern_, std::move(copy));
}

void CpuSparseMatrix::degree_order(sfac_axis axis, int32_t* order) const {
  const std::vector<int32_t> ids =
      order_by_count(axis == SFAC_AXIS_ROWS ? row_counts(pattern_->offsets())
                                            : column_counts(pattern_->indices(), cols()));
  std::copy(ids.begin(), ids.end(), order);
}

std::unique_ptr<SparseMatrix> CpuSparseMatrix::permuted(const int32_t* row_order,
                                                        const int32_t* col_order) const {
  return backend().make_sparse(permute_csr(rows(), cols(), pattern_->offsets(), pattern_->indices(),
                                           values_.data(), row_order, col_order,
                                           backend().num_threads()));
}

}  // namespace sfac::cpu
