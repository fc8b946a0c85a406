#include <algorithm>
#include <vector>

#include "core/error.h"
#include "cuda/cuda_als.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_fold_in.h"
#include "cuda/cuda_resources.h"
#include "cuda/kernels/als/als_kernels.cuh"
#include "cuda/kernels/als/rating_rows_check.cuh"

namespace sfac::cuda {
namespace {

// Device memory the systems of one call may take: this share of what is free when it starts
// (the ALS trainer's rule), so that no batch runs the device out of memory.
constexpr double kSystemMemoryShare = 0.25;
// More systems per launch than this gain nothing: enough thread blocks to fill any device.
constexpr int64_t kMaxBatch = int64_t{1} << 17;

// The request's users cut into segments of kAlsSegment ratings (AlsHalfSweep::segment_begin),
// each user's first segment also kept on the host to cut the users into batches.
struct Segments {
  std::vector<int64_t> begin, first;
  std::vector<int32_t> row;
};

Segments cut_segments(const FoldInRequest& r) {
  Segments s;
  s.first.resize(static_cast<size_t>(r.count) + 1);
  for (int64_t u = 0; u < r.count; ++u) {
    s.first[u] = static_cast<int64_t>(s.begin.size());
    int64_t e = r.offsets[u];
    do {
      s.begin.push_back(e);
      s.row.push_back(static_cast<int32_t>(u));
      e += kernels::kAlsSegment;
    } while (e < r.offsets[u + 1]);
  }
  s.first[r.count] = static_cast<int64_t>(s.begin.size());
  s.begin.push_back(r.offsets[r.count]);
  return s;
}

// The request's users as the solved side of `s`: their ratings (on the device) and where their
// rows go; solved_bias null without biases.
void describe_users(kernels::AlsHalfSweep& s, int64_t count, const int64_t* offsets,
                    const int32_t* items, const float* ratings, float* solved, float* solved_bias) {
  s.offsets = offsets;
  s.others = items;
  s.values = ratings;
  s.rows = count;
  s.solved = solved;
  s.solved_bias = solved_bias;
}

}  // namespace

bool CudaFoldIn::serves(const Model& model) {
  const bool biases = model.algorithm != SFAC_ALGO_IALS && model.has_biases;
  return model.rank >= 1 && model.rank + (biases ? 1 : 0) <= kernels::kAlsMaxUnknowns;
}

int64_t CudaFoldIn::item_side_bytes(const Model& model) {
  const bool implicit = model.algorithm == SFAC_ALGO_IALS;
  const bool biases = !implicit && model.has_biases;
  const int64_t d = model.rank + (biases ? 1 : 0);
  return int64_t{sizeof(float)} * (model.items * d + (biases ? model.items : 0) +
                                   (implicit ? d * d + kernels::als_gram_block_floats(d) : 0));
}

CudaFoldIn::CudaFoldIn(std::shared_ptr<const CudaBackend> backend, const Model& model)
    : backend_(std::move(backend)),
      implicit_(model.algorithm == SFAC_ALGO_IALS),
      biases_(!implicit_ && model.has_biases),
      rank_(model.rank),
      d_(rank_ + (biases_ ? 1 : 0)),
      alpha_(static_cast<float>(model.implicit_alpha)),
      global_mean_(model.global_mean),
      lambda_(model.lambda_user),
      weighted_(model.regularization == SFAC_REG_WEIGHTED),
      bytes_(item_side_bytes(model)) {
  DeviceGuard guard(backend_->device());
  OwnStreamWork order(*backend_);
  const cudaStream_t stream = backend_->own_stream();
  // [y_i, 1] with biases: the constant multiplies the solved bias (the trainers' layout).
  std::vector<float> rows(static_cast<size_t>(model.items * d_));
  for (int64_t i = 0; i < model.items; ++i) {
    std::copy_n(model.item(i), rank_, rows.begin() + i * d_);
    if (biases_) rows[i * d_ + rank_] = 1.0f;
  }
  fixed_ = DeviceBuffer<float>::copy_of(rows.data(), rows.size(), stream);
  if (biases_) {
    item_bias_ =
        DeviceBuffer<float>::copy_of(model.item_bias.data(), model.item_bias.size(), stream);
  }
  if (implicit_) {
    gram_ = DeviceBuffer<float>(static_cast<size_t>(d_ * d_), stream);
    if (model.items == 0) {
      SFAC_CUDA_TRY(cudaMemsetAsync(gram_.data(), 0, gram_.size() * sizeof(float), stream));
    } else {
      const auto k = static_cast<int>(rank_);
      const float one = 1.0f, zero = 0.0f;
      backend_->resources().with_blas(stream, [&](cublasHandle_t h) {
        // Row-major items x d is column-major d x items (= Y^T): Y^T (Y^T)^T = Y^T Y.
        SFAC_CUBLAS_TRY(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, k, k,
                                    static_cast<int>(model.items), &one, fixed_.data(),
                                    static_cast<int>(d_), fixed_.data(), static_cast<int>(d_),
                                    &zero, gram_.data(), k));
      });
    }
    gram_blocks_ =
        DeviceBuffer<float>(static_cast<size_t>(kernels::als_gram_block_floats(d_)), stream);
    kernels::launch_als_gram_blocks(gram_.data(), d_, gram_blocks_.data(), stream);
  }
  // The host rows die at return.
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream));
}

CudaFoldIn::~CudaFoldIn() { backend_->own_waits_for_current_noexcept(); }

void CudaFoldIn::describe_items(kernels::AlsHalfSweep& s) const {
  s.fixed = fixed_.data();
  s.fixed_bias = biases_ ? item_bias_.data() : nullptr;
  s.stride = d_;
  s.rank = rank_;
  s.d = d_;
  s.implicit = implicit_;
  s.alpha = alpha_;
  s.global_mean = global_mean_;
  s.gram = implicit_ ? gram_.data() : nullptr;
  s.gram_blocks = implicit_ ? gram_blocks_.data() : nullptr;
  s.lambda = lambda_;
  s.weighted = weighted_;
}

bool CudaFoldIn::rows_pass(const FoldInRequest& r, const int64_t* offsets, const int32_t* items,
                           const float* ratings, cudaStream_t stream) const {
  if (r.rows_checked) return true;
  DeviceBuffer<int32_t> flag(1, stream);
  SFAC_CUDA_TRY(cudaMemsetAsync(flag.data(), 0, sizeof(int32_t), stream));
  kernels::launch_rating_rows_check(offsets, r.count, items, ratings, r.model.items, implicit_,
                                    flag.data(), stream);
  int32_t may_fail = 0;
  flag.download(&may_fail, 1);
  return may_fail == 0;
}

bool CudaFoldIn::solve(const FoldInRequest& r, int64_t budget) {
  if (r.model.fold_in_solver == SFAC_SOLVER_CG) return solve_cg(r, budget);
  DeviceGuard guard(backend_->device());
  OwnStreamWork order(*backend_);
  const cudaStream_t stream = backend_->own_stream();
  const int64_t nnz = r.offsets[r.count];
  const Segments segments = cut_segments(r);
  // Systems per launch: within the budget left after the call's arrays, or a share of the
  // free memory; at least the longest user's segments.
  const int64_t total = segments.first.back();
  int64_t longest = 1;
  for (int64_t u = 0; u < r.count; ++u) {
    longest = std::max(longest, segments.first[u + 1] - segments.first[u]);
  }
  const int64_t per_system = (kernels::als_system_floats(d_) + d_) * int64_t{sizeof(float)};
  int64_t fit = 0;
  if (budget >= 0) {
    const int64_t arrays =
        int64_t{sizeof(int64_t)} * (r.count + 1 + 2 * total + 1) +
        int64_t{sizeof(int32_t)} * (nnz + total) + int64_t{sizeof(float)} * (nnz + r.count * (d_ + 1));
    fit = (budget - arrays) / per_system;
    SFAC_REQUIRE(fit >= longest, SFAC_ERR_OUT_OF_MEMORY, "this fold-in needs ",
                 arrays + longest * per_system, " bytes of device memory but ", budget,
                 " are left within the context's device memory limit");
  } else {
    size_t free_bytes = 0, total_bytes = 0;
    SFAC_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
    fit = static_cast<int64_t>(kSystemMemoryShare * static_cast<double>(free_bytes) / per_system);
  }
  const int64_t slots = std::min(total, std::max(longest, std::min(fit, kMaxBatch)));
  const auto offsets = DeviceBuffer<int64_t>::copy_of(r.offsets, static_cast<size_t>(r.count) + 1, stream);
  const auto items = DeviceBuffer<int32_t>::copy_of(r.items, static_cast<size_t>(nnz), stream);
  const auto ratings = DeviceBuffer<float>::copy_of(r.ratings, static_cast<size_t>(nnz), stream);
  if (!rows_pass(r, offsets.data(), items.data(), ratings.data(), stream)) return false;
  const auto begin = DeviceBuffer<int64_t>::copy_of(segments.begin.data(), segments.begin.size(), stream);
  const auto row = DeviceBuffer<int32_t>::copy_of(segments.row.data(), segments.row.size(), stream);
  const auto first = DeviceBuffer<int64_t>::copy_of(segments.first.data(), segments.first.size(), stream);
  DeviceBuffer<float> solved(static_cast<size_t>(r.count * d_), stream);
  DeviceBuffer<float> solved_bias(biases_ ? static_cast<size_t>(r.count) : 0, stream);

  kernels::AlsHalfSweep s;
  describe_users(s, r.count, offsets.data(), items.data(), ratings.data(), solved.data(),
                 biases_ ? solved_bias.data() : nullptr);
  s.segment_begin = begin.data();
  s.segment_row = row.data();
  s.first_segment = first.data();
  describe_items(s);

  DeviceBuffer<float> a(static_cast<size_t>(slots * kernels::als_system_floats(d_)), stream);
  DeviceBuffer<float> b(static_cast<size_t>(slots * d_), stream);
  kernels::AlsBatch batch;
  while (batch.row_begin < r.count) {
    // As many whole users as fit the slots.
    batch.segment_base = segments.first[batch.row_begin];
    batch.row_end = std::upper_bound(segments.first.begin() + batch.row_begin + 1,
                                     segments.first.end(), batch.segment_base + slots) -
                    segments.first.begin() - 1;
    batch.segments = segments.first[batch.row_end] - batch.segment_base;
    kernels::launch_als_normal_equations(s, batch, a.data(), b.data(), stream);
    kernels::launch_als_cholesky_solve(s, batch, a.data(), b.data(), stream);
    batch.row_begin = batch.row_end;
  }
  download_rows(r, solved, solved_bias, stream);
  return true;
}

bool CudaFoldIn::solve_cg(const FoldInRequest& r, int64_t budget) {
  DeviceGuard guard(backend_->device());
  OwnStreamWork order(*backend_);
  const cudaStream_t stream = backend_->own_stream();
  const int64_t nnz = r.offsets[r.count];
  // No systems: only the ratings, the rows and their order.
  const int64_t arrays = int64_t{sizeof(int64_t)} * (r.count + 1) +
                         int64_t{sizeof(int32_t)} * (nnz + r.count) +
                         int64_t{sizeof(float)} * (nnz + r.count * (d_ + 1));
  SFAC_REQUIRE(budget < 0 || arrays <= budget, SFAC_ERR_OUT_OF_MEMORY, "this fold-in needs ",
               arrays, " bytes of device memory but ", budget,
               " are left within the context's device memory limit");
  // Each row starts from the user's current row where it is replaced, else from zero; a user
  // without ratings stays at zero (no step moves it: its residual is zero).
  const Model& model = r.model;
  std::vector<float> start(static_cast<size_t>(r.count * d_), 0.0f);
  std::vector<float> start_bias(biases_ ? static_cast<size_t>(r.count) : 0, 0.0f);
  for (int64_t i = 0; i < r.count; ++i) {
    const int32_t user = r.users ? r.users[i] : -1;
    if (user < 0 || r.offsets[i + 1] == r.offsets[i]) continue;
    std::copy_n(model.user(user), rank_, start.begin() + i * d_);
    if (biases_) start_bias[i] = model.user_bias[user];
  }
  int64_t long_count = 0;
  const std::vector<int32_t> row_order = als_cg_row_order(r.offsets, r.count, &long_count);

  const auto offsets =
      DeviceBuffer<int64_t>::copy_of(r.offsets, static_cast<size_t>(r.count) + 1, stream);
  const auto items = DeviceBuffer<int32_t>::copy_of(r.items, static_cast<size_t>(nnz), stream);
  const auto ratings = DeviceBuffer<float>::copy_of(r.ratings, static_cast<size_t>(nnz), stream);
  if (!rows_pass(r, offsets.data(), items.data(), ratings.data(), stream)) return false;
  const auto rows = DeviceBuffer<int32_t>::copy_of(row_order.data(), row_order.size(), stream);
  auto solved = DeviceBuffer<float>::copy_of(start.data(), start.size(), stream);
  auto solved_bias = DeviceBuffer<float>::copy_of(start_bias.data(), start_bias.size(), stream);

  kernels::AlsHalfSweep s;
  describe_users(s, r.count, offsets.data(), items.data(), ratings.data(), solved.data(),
                 biases_ ? solved_bias.data() : nullptr);
  describe_items(s);
  kernels::AlsCgRows cg_rows;
  cg_rows.long_rows = rows.data();
  cg_rows.long_count = long_count;
  cg_rows.short_rows = rows.data() + long_count;
  cg_rows.short_count = r.count - long_count;
  kernels::launch_als_conjugate_gradient(s, model.fold_in_cg_steps, cg_rows, stream);
  download_rows(r, solved, solved_bias, stream);  // waits: the host vectors die at return
  return true;
}

void CudaFoldIn::download_rows(const FoldInRequest& r, const DeviceBuffer<float>& solved,
                               const DeviceBuffer<float>& solved_bias, cudaStream_t stream) const {
  SFAC_CUDA_TRY(cudaMemcpy2DAsync(r.out_factors, rank_ * sizeof(float), solved.data(),
                                  d_ * sizeof(float), rank_ * sizeof(float),
                                  static_cast<size_t>(r.count), cudaMemcpyDeviceToHost, stream));
  if (biases_) {
    solved_bias.download(r.out_biases, static_cast<size_t>(r.count));
  } else {
    std::fill_n(r.out_biases, r.count, 0.0f);
  }
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream));
}

}  // namespace sfac::cuda
