// Defaults of the Backend interface that host backends share.
#include "core/backend.h"

#include "core/error.h"
#include "core/resident_model.h"  // make_resident_model returns one

namespace sfac {

std::unique_ptr<SparseMatrix> Backend::make_sparse_from_coo(int64_t rows, int64_t cols, int64_t nnz,
                                                            const int32_t* row_indices,
                                                            const int32_t* col_indices,
                                                            const float* values,
                                                            DuplicatePolicy duplicates) {
  return make_sparse(csr_from_checked_coo(rows, cols, nnz, row_indices, col_indices, values,
                                          duplicates, num_threads()));
}

HostCsr download_host_csr(const SparseMatrix& m, bool with_values) {
  HostCsr csr;
  csr.rows = m.rows();
  csr.cols = m.cols();
  csr.offsets.resize(static_cast<size_t>(m.rows()) + 1);
  csr.indices.resize(static_cast<size_t>(m.nnz()));
  if (with_values) csr.values.resize(static_cast<size_t>(m.nnz()));
  m.download_csr(csr.offsets.data(), csr.indices.data(), with_values ? csr.values.data() : nullptr);
  return csr;
}

void Backend::set_stream(void* stream) {
  SFAC_REQUIRE(stream == nullptr, SFAC_ERR_UNSUPPORTED, "the ",
               kind() == SFAC_BACKEND_CPU ? "CPU" : "this", " backend has no device streams");
}

std::unique_ptr<ResidentModel> Backend::make_resident_model(const Model& model) {
  (void)model;
  return nullptr;
}

}  // namespace sfac
