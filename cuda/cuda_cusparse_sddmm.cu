#include <algorithm>
#include <limits>

#include "core/error.h"
#include "cuda/cuda_cusparse_sddmm.h"
#include "cuda/cuda_resources.h"
#include "cuda/kernels/sddmm/sddmm_finish.cuh"

namespace sfac::cuda {
namespace {

constexpr cusparseOperation_t kAsGiven = CUSPARSE_OPERATION_NON_TRANSPOSE;

}  // namespace

bool cusparse_takes(const CudaSparseMatrix& pattern) {
  return pattern.nnz() <= std::numeric_limits<int32_t>::max();
}

CusparseSddmmPlan::CusparseSddmmPlan(std::shared_ptr<Backend> backend,
                                     const CudaSparseMatrix& pattern, int64_t k,
                                     std::unique_ptr<SddmmPlan> others)
    : SddmmPlan(pattern.pattern_id(), k, SFAC_SDDMM_ALG_CUSPARSE),
      backend_(std::move(backend)),
      pattern_(pattern.shared_pattern()),
      others_(std::move(others)) {
  SFAC_REQUIRE(cusparse_takes(pattern), SFAC_ERR_UNSUPPORTED, "the CUSPARSE sddmm algorithm takes ",
               "patterns of fewer than 2^31 nonzeros; this one has ", pattern.nnz());
  const cudaStream_t own = static_cast<const CudaBackend&>(*backend_).own_stream();
  offsets32_ = DeviceBuffer<int32_t>(static_cast<size_t>(pattern_->rows + 1), own);
  kernels::launch_narrow_offsets(pattern_->offsets.data(), pattern_->rows + 1, offsets32_.data(),
                                 own);
}

CusparseSddmmPlan::~CusparseSddmmPlan() {
  static_cast<const CudaBackend&>(*backend_).own_waits_for_current_noexcept();
  if (matrix_ != nullptr) (void)cusparseDestroySpMat(matrix_);
  if (a_ != nullptr) (void)cusparseDestroyDnMat(a_);
  if (b_ != nullptr) (void)cusparseDestroyDnMat(b_);
}

void CusparseSddmmPlan::run(const CudaBackend& backend, const kernels::SddmmArgs& args,
                            int64_t b_rows, cudaStream_t stream) const {
  if (args.nnz == 0) return;
  // PATTERN is what cuSPARSE computes; the other modes need S beside the dot products.
  const bool direct = args.op == kernels::SddmmOp::Pattern;
  DeviceBuffer<float> dots;
  if (!direct) dots = DeviceBuffer<float>(static_cast<size_t>(args.nnz), stream);
  float* target = direct ? args.p : dots.data();
  const float alpha = direct ? args.alpha : 1.0f, beta = direct ? args.beta : 0.0f;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    backend.resources().with_sparse(stream, [&](cusparseHandle_t handle) {
      // A: rows x K, row-major; B^T: K x N, column-major (our N x K rows); rows `args.k` apart
      // (float32 rows have one stride per K). Made on the first call, pointed at each call's.
      if (a_ == nullptr) {
        SFAC_CUSPARSE_TRY(cusparseCreateDnMat(&a_, args.rows, k(), args.k,
                                              const_cast<void*>(args.a), CUDA_R_32F,
                                              CUSPARSE_ORDER_ROW));
      } else {
        SFAC_CUSPARSE_TRY(cusparseDnMatSetValues(a_, const_cast<void*>(args.a)));
      }
      if (b_ == nullptr) {
        SFAC_CUSPARSE_TRY(cusparseCreateDnMat(&b_, k(), b_rows, args.k, const_cast<void*>(args.b),
                                              CUDA_R_32F, CUSPARSE_ORDER_COL));
      } else {
        SFAC_CUSPARSE_TRY(cusparseDnMatSetValues(b_, const_cast<void*>(args.b)));
      }
      if (matrix_ == nullptr) {
        SFAC_CUSPARSE_TRY(cusparseCreateCsr(
            &matrix_, pattern_->rows, pattern_->cols, pattern_->nnz,
            const_cast<int32_t*>(offsets32_.data()), const_cast<int32_t*>(pattern_->indices.data()),
            target, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
      } else {
        SFAC_CUSPARSE_TRY(cusparseSpMatSetValues(matrix_, target));
      }
      if (!preprocessed_) {
        size_t bytes = 0;
        SFAC_CUSPARSE_TRY(cusparseSDDMM_bufferSize(handle, kAsGiven, kAsGiven, &alpha, a_, b_,
                                                   &beta, matrix_, CUDA_R_32F,
                                                   CUSPARSE_SDDMM_ALG_DEFAULT, &bytes));
        // Owned by the plan, so allocated and later freed on the context's own stream.
        const cudaStream_t own = backend.own_stream();
        buffer_ = DeviceBuffer<uint8_t>(std::max<size_t>(bytes, 1), own);
        SFAC_CUDA_TRY(cudaStreamSynchronize(own));
        SFAC_CUSPARSE_TRY(cusparseSDDMM_preprocess(handle, kAsGiven, kAsGiven, &alpha, a_, b_,
                                                   &beta, matrix_, CUDA_R_32F,
                                                   CUSPARSE_SDDMM_ALG_DEFAULT, buffer_.data()));
        preprocessed_ = true;
      }
      SFAC_CUSPARSE_TRY(cusparseSDDMM(handle, kAsGiven, kAsGiven, &alpha, a_, b_, &beta, matrix_,
                                      CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, buffer_.data()));
    });
  }
  if (!direct) kernels::launch_sddmm_finish(args, dots.data(), stream);
}

}  // namespace sfac::cuda
