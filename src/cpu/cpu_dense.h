// Host-resident dense matrix of the CPU backend (float32 storage).
#pragma once

#include <vector>

#include "core/backend.h"

namespace sfac::cpu {

class CpuDenseMatrix final : public DenseMatrix {
 public:
  CpuDenseMatrix(std::shared_ptr<Backend> backend, int64_t rows, int64_t cols, const float* data);

  const float* data() const { return data_.data(); }
  float* data() { return data_.data(); }
  const float* row(int64_t i) const { return data_.data() + i * cols(); }

  void upload(const float* data) override;
  void download(float* data) const override;
  std::unique_ptr<DenseMatrix> permuted_rows(const int32_t* order) const override;

 private:
  std::vector<float> data_;
};

}  // namespace sfac::cpu
