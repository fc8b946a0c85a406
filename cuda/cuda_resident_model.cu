#include "cuda/cuda_resident_model.h"

#include <algorithm>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/cuda_sparse.h"
#include "cuda/kernels/als/als_kernels.cuh"
#include "cuda/kernels/recommend/top_n.cuh"

namespace sfac::cuda {
namespace {

// Output bytes (ids and scores) of one launch: lists of many queries come back in launches of at
// most this much, so the device never holds all of them.
constexpr int64_t kLaunchOutputBytes = int64_t{64} << 20;
constexpr int64_t kQueriesPerBlock = 64;

// rows x rank host floats as rows x stride device floats, zero past the rank.
DeviceBuffer<float> upload_padded(const std::vector<float>& host, int64_t rows, int64_t rank,
                                  int64_t stride, cudaStream_t stream) {
  DeviceBuffer<float> device(static_cast<size_t>(rows * stride), stream);
  if (rows == 0) return device;
  SFAC_CUDA_TRY(cudaMemsetAsync(device.data(), 0, device.size() * sizeof(float), stream));
  if (rank > 0) {
    SFAC_CUDA_TRY(cudaMemcpy2DAsync(device.data(), stride * sizeof(float), host.data(),
                                    rank * sizeof(float), rank * sizeof(float), rows,
                                    cudaMemcpyHostToDevice, stream));
  }
  return device;
}

// Runs `problem` for query_count queries (problem.query_ids: all of them, on the device) in
// launches whose lists fit kLaunchOutputBytes, each downloaded into the caller's rows.
void run_in_launches(kernels::TopNProblem problem, int64_t query_count, int32_t* out_ids,
                     float* out_scores, cudaStream_t stream) {
  const int64_t n = problem.n;
  const int64_t fitting = kLaunchOutputBytes / (n * 8) / kQueriesPerBlock * kQueriesPerBlock;
  const int64_t per_launch = std::min(query_count, std::max(kQueriesPerBlock, fitting));
  DeviceBuffer<int32_t> ids(static_cast<size_t>(per_launch * n), stream);
  DeviceBuffer<float> scores(static_cast<size_t>(per_launch * n), stream);
  const int32_t* query_ids = problem.query_ids;
  for (int64_t q0 = 0; q0 < query_count; q0 += per_launch) {
    const int64_t m = std::min(per_launch, query_count - q0);
    problem.query_ids = query_ids + q0;
    problem.queries = m;
    problem.out_ids = ids.data();
    problem.out_scores = scores.data();
    kernels::launch_top_n(problem, stream);
    ids.download(out_ids + q0 * n, static_cast<size_t>(m * n));
    scores.download(out_scores + q0 * n, static_cast<size_t>(m * n));
  }
}

}  // namespace

CudaResidentModel::CudaResidentModel(std::shared_ptr<const CudaBackend> backend,
                                     const Model& model)
    : backend_(std::move(backend)),
      users_(model.users),
      items_(model.items),
      rank_(model.rank),
      stride_((std::max<int64_t>(model.rank, 1) + kernels::kTopNRankStep - 1) /
              kernels::kTopNRankStep * kernels::kTopNRankStep),
      has_biases_(model.has_biases) {
  DeviceGuard guard(backend_->device());
  OwnStreamWork order(*backend_);
  const cudaStream_t stream = backend_->own_stream();
  user_factors_ = upload_padded(model.user_factors, users_, model.rank, stride_, stream);
  item_factors_ = upload_padded(model.item_factors, items_, model.rank, stride_, stream);
  if (has_biases_) {
    // The user's part of every score, added as Model::predict adds it.
    std::vector<float> offsets(static_cast<size_t>(users_));
    for (int64_t u = 0; u < users_; ++u) offsets[u] = model.global_mean + model.user_bias[u];
    user_offsets_ = DeviceBuffer<float>::copy_of(offsets.data(), offsets.size(), stream);
    item_biases_ =
        DeviceBuffer<float>::copy_of(model.item_bias.data(), model.item_bias.size(), stream);
  }
  // The host arrays may change once this returns (the cache drops this copy first).
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream));
}

CudaResidentModel::~CudaResidentModel() { backend_->own_waits_for_current_noexcept(); }

const float* CudaResidentModel::item_norms() {
  std::call_once(norms_once_, [&] {
    const cudaStream_t stream = backend_->own_stream();
    DeviceBuffer<float> norms(static_cast<size_t>(items_), stream);
    kernels::launch_row_norms(item_factors_.data(), items_, stride_, norms.data(), stream);
    SFAC_CUDA_TRY(cudaStreamSynchronize(stream));
    item_norms_ = std::move(norms);
  });
  return item_norms_.data();
}

bool CudaResidentModel::recommend(const RecommendRequest& request) {
  if (request.n > kernels::kTopNMax) return false;
  const CudaSparseMatrix* exclude = nullptr;
  if (request.exclude != nullptr) {
    exclude = on_device(*request.exclude, backend_->device());
    if (exclude == nullptr) return false;
  }
  DeviceGuard guard(backend_->device());
  // The exclusions' context's queued work first (another context of this device may own them),
  // then this model's own stream after both.
  ForeignOrder foreign(*backend_, {exclude != nullptr ? &exclude->backend() : nullptr});
  OwnStreamWork order(*backend_);
  const cudaStream_t stream = backend_->own_stream();
  const auto users = DeviceBuffer<int32_t>::copy_of(request.users,
                                                    static_cast<size_t>(request.count), stream);
  DeviceBuffer<int32_t> allowed;
  if (request.allowed != nullptr) {
    allowed = DeviceBuffer<int32_t>::copy_of(request.allowed,
                                             static_cast<size_t>(request.allowed_count), stream);
  }

  kernels::TopNProblem p{};
  p.query_factors = user_factors_.data();
  p.query_ids = users.data();
  p.candidate_factors = item_factors_.data();
  p.candidate_ids = request.allowed != nullptr ? allowed.data() : nullptr;
  p.candidates = request.allowed != nullptr ? request.allowed_count : items_;
  p.stride = stride_;
  p.score = kernels::TopNScore::kDot;
  p.query_offset = has_biases_ ? user_offsets_.data() : nullptr;
  p.candidate_add = has_biases_ ? item_biases_.data() : nullptr;
  if (exclude != nullptr) {
    p.exclude_offsets = exclude->pattern().offsets.data();
    p.exclude_cols = exclude->pattern().indices.data();
  }
  p.n = request.n;
  run_in_launches(p, request.count, request.out_items, request.out_scores, stream);
  return true;
}

bool CudaResidentModel::similar_items(const SimilarItemsRequest& request) {
  if (request.n > kernels::kTopNMax) return false;
  DeviceGuard guard(backend_->device());
  OwnStreamWork order(*backend_);
  const cudaStream_t stream = backend_->own_stream();
  const auto items = DeviceBuffer<int32_t>::copy_of(request.items,
                                                    static_cast<size_t>(request.count), stream);

  kernels::TopNProblem p{};
  p.query_factors = item_factors_.data();
  p.query_ids = items.data();
  p.candidate_factors = item_factors_.data();
  p.candidates = items_;
  p.stride = stride_;
  p.score = kernels::TopNScore::kCosine;
  p.query_norm = item_norms();
  p.candidate_norm = p.query_norm;
  p.exclude_self = true;
  p.n = request.n;
  run_in_launches(p, request.count, request.out_items, request.out_scores, stream);
  return true;
}

bool CudaResidentModel::error_sums(const SparseMatrix& ratings, double* squared,
                                   double* absolute) {
  const CudaSparseMatrix* r = on_device(ratings, backend_->device());
  if (r == nullptr) return false;
  DeviceGuard guard(backend_->device());
  // The ratings' context's queued work first, then this model's own stream after both.
  ForeignOrder foreign(*backend_, {&r->backend()});
  OwnStreamWork order(*backend_);
  const cudaStream_t stream = backend_->own_stream();
  // The user's offset (global mean + user bias, as Model::predict adds them) stands in for the
  // user bias, with a zero mean: (0 + offset) + item bias is the host's sum.
  const kernels::PredictionSides m{user_factors_.data(),
                                   item_factors_.data(),
                                   has_biases_ ? user_offsets_.data() : nullptr,
                                   has_biases_ ? item_biases_.data() : nullptr,
                                   stride_,
                                   rank_,
                                   0.0f};
  const int blocks = kernels::als_objective_blocks();
  DeviceBuffer<double> partials(2 * static_cast<size_t>(blocks), stream);
  kernels::launch_prediction_errors(m, r->pattern().offsets.data(), r->pattern().indices.data(),
                                    r->values(), r->rows(), partials.data(), stream);
  std::vector<double> host(partials.size());
  partials.download(host.data(), host.size());
  // In block order, as the trainers sum their partials.
  *squared = *absolute = 0.0;
  for (int b = 0; b < blocks; ++b) {
    *squared += host[2 * b];
    *absolute += host[2 * b + 1];
  }
  return true;
}

bool CudaResidentModel::fold_in(const FoldInRequest& request) {
  if (!CudaFoldIn::serves(request.model)) return false;
  // The model is the one this copy was made from (the cache drops the copy when it changes).
  std::call_once(fold_in_once_, [&] {
    fold_in_ = std::make_unique<CudaFoldIn>(backend_, request.model);
  });
  fold_in_->solve(request);
  return true;
}

}  // namespace sfac::cuda
