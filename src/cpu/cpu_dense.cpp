#include "cpu/cpu_dense.h"

#include <algorithm>

namespace sfac::cpu {

CpuDenseMatrix::CpuDenseMatrix(std::shared_ptr<Backend> backend, int64_t rows, int64_t cols,
                               const float* data)
    : DenseMatrix(std::move(backend), rows, cols, SFAC_DTYPE_FLOAT32),
      data_(static_cast<size_t>(rows * cols), 0.0f) {
  if (data) upload(data);
}

void CpuDenseMatrix::upload(const float* data) {
  std::copy(data, data + data_.size(), data_.begin());
}

void CpuDenseMatrix::download(float* data) const { std::copy(data_.begin(), data_.end(), data); }

std::unique_ptr<DenseMatrix> CpuDenseMatrix::permuted_rows(const int32_t* order) const {
  auto out =
      std::make_unique<CpuDenseMatrix>(backend().shared_from_this(), rows(), cols(), nullptr);
  for (int64_t r = 0; r < rows(); ++r) {
    std::copy(row(order[r]), row(order[r]) + cols(), out->data() + r * cols());
  }
  return out;
}

}  // namespace sfac::cpu
