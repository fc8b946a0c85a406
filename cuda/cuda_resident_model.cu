#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/fault_hooks.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_dense.h"
#include "cuda/cuda_resident_model.h"
#include "cuda/cuda_sparse.h"
#include "cuda/kernels/als/als_kernels.cuh"
#include "cuda/kernels/recommend/top_n.cuh"
#include "cuda/kernels/recommend/top_n_half.cuh"
#include "cuda/kernels/recommend/top_n_two_pass.cuh"

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

// The 16-bit storage type every value of `values` is exactly a value of: 1 bfloat16 (tried
// first: its range is float's), 2 float16, 0 neither.
int exact_16bit_type(const std::vector<float>& a, const std::vector<float>& b) {
  auto all = [&](auto exact) {
    return std::all_of(a.begin(), a.end(), exact) && std::all_of(b.begin(), b.end(), exact);
  };
  if (all([](float x) {
        uint32_t bits;
        std::memcpy(&bits, &x, sizeof bits);
        return (bits & 0xffffu) == 0;
      })) {
    return 1;
  }
  if (all([](float x) { return __half2float(__float2half_rn(x)) == x; })) return 2;
  return 0;
}

// rows x rank host floats as rows x stride 16-bit device values, zero past the rank, each
// rounded to the nearest bfloat16 (bf16) or float16 value, ties to even (a float that is exactly
// such a value stays itself).
DeviceBuffer<uint16_t> upload_16bit(const std::vector<float>& host, int64_t rows, int64_t rank,
                                    int64_t stride, bool bf16, cudaStream_t stream) {
  const sfac_dtype dtype = bf16 ? SFAC_DTYPE_BFLOAT16 : SFAC_DTYPE_FLOAT16;
  std::vector<uint16_t> bits(static_cast<size_t>(rows * stride), 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < rank; ++t)
      bits[r * stride + t] = to_half_bits(host[r * rank + t], dtype);
  }
  auto device = DeviceBuffer<uint16_t>::copy_of(bits.data(), bits.size(), stream);
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream));  // the host copy dies at return
  return device;
}

// Queries a launch takes so that its lists (ids and scores) fit kLaunchOutputBytes.
int64_t queries_per_launch(int64_t query_count, int64_t n) {
  const int64_t fitting = kLaunchOutputBytes / (n * 8) / kQueriesPerBlock * kQueriesPerBlock;
  return std::min(query_count, std::max(kQueriesPerBlock, fitting));
}

// Device bytes of a top-n call's query ids and the lists of one launch (run_in_launches).
int64_t launch_scratch_bytes(int64_t query_count, int n) {
  return int64_t{sizeof(int32_t)} * query_count + queries_per_launch(query_count, n) * n * 8;
}

// Runs `problem` for query_count queries (problem.query_ids: all of them, on the device) in
// launches whose lists fit kLaunchOutputBytes, each downloaded into the caller's rows.
template <typename Problem, typename Launch>
void run_in_launches(Problem problem, Launch launch, int64_t query_count, int32_t* out_ids,
                     float* out_scores, cudaStream_t stream) {
  const int64_t n = problem.n;
  const int64_t per_launch = queries_per_launch(query_count, n);
  DeviceBuffer<int32_t> ids(static_cast<size_t>(per_launch * n), stream);
  DeviceBuffer<float> scores(static_cast<size_t>(per_launch * n), stream);
  const int32_t* query_ids = problem.query_ids;
  for (int64_t q0 = 0; q0 < query_count; q0 += per_launch) {
    const int64_t m = std::min(per_launch, query_count - q0);
    problem.query_ids = query_ids + q0;
    problem.queries = m;
    problem.out_ids = ids.data();
    problem.out_scores = scores.data();
    launch(problem, stream);
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
  const bool rows_fit = model.rank <= kernels::kTopNHalfMaxStride;
  const int type = rows_fit && testing::top_n_16bit_allowed()
                       ? exact_16bit_type(model.user_factors, model.item_factors)
                       : 0;
  const bool two_pass =
      rows_fit && model.rank <= kernels::kTopNScanMaxStride && testing::two_pass_top_n_allowed();
  const int64_t half_stride = (std::max<int64_t>(model.rank, 1) + kernels::kTopNHalfRankStep - 1) /
                              kernels::kTopNHalfRankStep * kernels::kTopNHalfRankStep;
  const int64_t float_bytes =
      int64_t{sizeof(float)} * ((users_ + items_) * stride_ + (has_biases_ ? users_ + items_ : 0));
  const int64_t half_bytes = int64_t{sizeof(uint16_t)} * (users_ + items_) * half_stride;
  const int64_t plan_bytes = TwoPassTopN::bytes_of(users_, items_, model.rank, type != 2);
  bytes_ = float_bytes + (type != 0 || two_pass ? half_bytes : 0) + (two_pass ? plan_bytes : 0);
  require_within_limit(0, "this model's device copy");
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
  if (two_pass) two_pass_ = TwoPassTopN::plan(model, type != 0, type != 2, stream);
  if (type != 0 || two_pass_) {
    half_ = true;
    half_exact_ = type != 0;
    half_bf16_ = type != 2;  // rounded rows are bfloat16
    half_stride_ = half_stride;
    user_half_ =
        upload_16bit(model.user_factors, users_, model.rank, half_stride_, half_bf16_, stream);
    item_half_ =
        upload_16bit(model.item_factors, items_, model.rank, half_stride_, half_bf16_, stream);
    if (two_pass_) two_pass_->fold_items(model, item_half_.data(), half_stride_, stream);
  }
  bytes_ = float_bytes + (half_ ? half_bytes : 0) + (two_pass_ ? two_pass_->bytes() : 0);
  // The host arrays may change once this returns (the cache drops this copy first).
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream));
}

bool CudaResidentModel::sixteen_bit(int n) const { return half_exact_ && n <= kernels::kTopNMax; }

void CudaResidentModel::require_within_limit(int64_t scratch, const char* what) const {
  const int64_t limit = backend_->device_memory_limit();
  if (limit == 0) return;  // none: allocations fail by themselves where the device is full
  const int64_t held = bytes_ + fold_in_bytes_.load(std::memory_order_relaxed);
  SFAC_REQUIRE(held + scratch <= limit, SFAC_ERR_OUT_OF_MEMORY, what, " needs ", held + scratch,
               " bytes of device memory (the model's copy included) but the context's device "
               "memory limit is ",
               limit, " bytes");
}

CudaResidentModel::~CudaResidentModel() { backend_->own_waits_for_current_noexcept(); }

const float* CudaResidentModel::norms(bool users) {
  const int side = users ? 1 : 0;
  std::call_once(norms_once_[side], [&] {
    const cudaStream_t stream = backend_->own_stream();
    const int64_t rows = users ? users_ : items_;
    DeviceBuffer<float> norms(static_cast<size_t>(rows), stream);
    kernels::launch_row_norms(users ? user_factors_.data() : item_factors_.data(), rows, stride_,
                              norms.data(), stream);
    SFAC_CUDA_TRY(cudaStreamSynchronize(stream));
    norms_[side] = std::move(norms);
  });
  return norms_[side].data();
}

bool CudaResidentModel::recommend(const RecommendRequest& request) {
  if (request.n > kernels::kTopNMax) return false;
  const CudaSparseMatrix* exclude = nullptr;
  if (request.exclude != nullptr) {
    exclude = on_device(*request.exclude, backend_->device());
    if (exclude == nullptr) return false;
  }
  const int64_t single_scratch = launch_scratch_bytes(request.count, request.n) +
                                 int64_t{sizeof(float) + sizeof(int32_t)} *
                                     (request.allowed != nullptr ? request.allowed_count : 0);
  // The two passes where they serve and fit the limit (their leftovers take the single pass
  // after their buffers are freed).
  bool two_pass =
      two_pass_ != nullptr && request.allowed == nullptr && two_pass_->serves(request.n);
  if (two_pass && backend_->device_memory_limit() > 0) {
    const int64_t scratch =
        int64_t{sizeof(int32_t)} * request.count +
        std::max(two_pass_->scratch_bytes(request.count, request.n), single_scratch);
    two_pass = bytes_ + fold_in_bytes_.load(std::memory_order_relaxed) + scratch <=
               backend_->device_memory_limit();
  }
  if (!two_pass) require_within_limit(single_scratch, "this recommend call");
  DeviceGuard guard(backend_->device());
  // The exclusions' context's queued work first (another context of this device may own them),
  // then this model's own stream after both.
  ForeignOrder foreign(*backend_, {exclude != nullptr ? &exclude->backend() : nullptr});
  OwnStreamWork order(*backend_);
  const cudaStream_t stream = backend_->own_stream();
  if (two_pass) {
    recommend_two_pass(request, exclude, stream);
  } else {
    recommend_single_pass(request, exclude, stream);
  }
  return true;
}

void CudaResidentModel::recommend_two_pass(const RecommendRequest& request,
                                           const CudaSparseMatrix* exclude, cudaStream_t stream) {
  const int n = request.n;
  std::vector<int64_t> left;
  {
    const auto users =
        DeviceBuffer<int32_t>::copy_of(request.users, static_cast<size_t>(request.count), stream);
    const TwoPassSides sides{user_half_.data(),
                             item_half_.data(),
                             half_bf16_,
                             half_stride_,
                             user_factors_.data(),
                             item_factors_.data(),
                             stride_,
                             rank_,
                             has_biases_ ? user_offsets_.data() : nullptr,
                             has_biases_ ? item_biases_.data() : nullptr};
    left = two_pass_->run(sides, users.data(), request.count, n,
                          exclude != nullptr ? exclude->pattern().offsets.data() : nullptr,
                          exclude != nullptr ? exclude->pattern().indices.data() : nullptr,
                          request.out_items, request.out_scores, stream);
  }
  testing::count_two_pass_top_n(request.count - static_cast<int64_t>(left.size()),
                                static_cast<int64_t>(left.size()));
  if (left.empty()) return;
  // The users with more near-equal scores than the scan keeps, answered by the single pass.
  const auto count = static_cast<int64_t>(left.size());
  std::vector<int32_t> users(left.size());
  for (size_t j = 0; j < left.size(); ++j) users[j] = request.users[left[j]];
  std::vector<int32_t> items(left.size() * n);
  std::vector<float> scores(left.size() * n);
  RecommendRequest again = request;
  again.count = count;
  again.users = users.data();
  again.out_items = items.data();
  again.out_scores = scores.data();
  recommend_single_pass(again, exclude, stream);
  for (size_t j = 0; j < left.size(); ++j) {
    std::copy_n(items.data() + j * n, n, request.out_items + left[j] * n);
    std::copy_n(scores.data() + j * n, n, request.out_scores + left[j] * n);
  }
}

void CudaResidentModel::recommend_single_pass(const RecommendRequest& request,
                                              const CudaSparseMatrix* exclude,
                                              cudaStream_t stream) {
  const auto users = DeviceBuffer<int32_t>::copy_of(request.users,
                                                    static_cast<size_t>(request.count), stream);
  DeviceBuffer<int32_t> allowed;
  if (request.allowed != nullptr) {
    allowed = DeviceBuffer<int32_t>::copy_of(request.allowed,
                                             static_cast<size_t>(request.allowed_count), stream);
  }

  if (sixteen_bit(request.n)) {
    kernels::TopNHalfProblem p{};
    p.bf16 = half_bf16_;
    p.query_factors = user_half_.data();
    p.query_ids = users.data();
    p.candidate_factors = item_half_.data();
    p.candidate_ids = request.allowed != nullptr ? allowed.data() : nullptr;
    p.candidates = request.allowed != nullptr ? request.allowed_count : items_;
    p.stride = half_stride_;
    p.score = kernels::TopNScore::kDot;
    // The item biases by candidate position: gathered for an allow-list.
    DeviceBuffer<float> allowed_biases;
    if (has_biases_) {
      p.query_value = user_offsets_.data();
      p.candidate_value = item_biases_.data();
      if (request.allowed != nullptr) {
        allowed_biases = DeviceBuffer<float>(static_cast<size_t>(request.allowed_count), stream);
        kernels::launch_gather_values(item_biases_.data(), allowed.data(), request.allowed_count,
                                      allowed_biases.data(), stream);
        p.candidate_value = allowed_biases.data();
      }
    }
    if (exclude != nullptr) {
      p.exclude_offsets = exclude->pattern().offsets.data();
      p.exclude_cols = exclude->pattern().indices.data();
    }
    p.n = request.n;
    run_in_launches(p, kernels::launch_top_n_half, request.count, request.out_items,
                    request.out_scores, stream);
    return;
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
  run_in_launches(p, kernels::launch_top_n, request.count, request.out_items, request.out_scores,
                  stream);
}

bool CudaResidentModel::similar(const SimilarRequest& request) {
  if (request.n > kernels::kTopNMax) return false;
  const int64_t rows = request.users ? users_ : items_;
  require_within_limit(launch_scratch_bytes(request.count, request.n) +
                           int64_t{sizeof(float)} * rows,  // the norms, made once
                       "this similarity call");
  DeviceGuard guard(backend_->device());
  OwnStreamWork order(*backend_);
  const cudaStream_t stream = backend_->own_stream();
  const auto ids = DeviceBuffer<int32_t>::copy_of(request.ids,
                                                  static_cast<size_t>(request.count), stream);
  const kernels::TopNScore score =
      request.cosine ? kernels::TopNScore::kCosine : kernels::TopNScore::kDot;
  const float* norm = request.cosine ? norms(request.users) : nullptr;

  if (sixteen_bit(request.n)) {
    const uint16_t* factors = request.users ? user_half_.data() : item_half_.data();
    kernels::TopNHalfProblem p{};
    p.bf16 = half_bf16_;
    p.query_factors = factors;
    p.query_ids = ids.data();
    p.candidate_factors = factors;
    p.candidates = rows;
    p.stride = half_stride_;
    p.score = score;
    p.query_value = norm;
    p.candidate_value = norm;
    p.exclude_self = true;
    p.n = request.n;
    run_in_launches(p, kernels::launch_top_n_half, request.count, request.out_ids,
                    request.out_scores, stream);
    return true;
  }
  const float* factors = request.users ? user_factors_.data() : item_factors_.data();
  kernels::TopNProblem p{};
  p.query_factors = factors;
  p.query_ids = ids.data();
  p.candidate_factors = factors;
  p.candidates = rows;
  p.stride = stride_;
  p.score = score;
  p.query_norm = norm;
  p.candidate_norm = norm;
  p.exclude_self = true;
  p.n = request.n;
  run_in_launches(p, kernels::launch_top_n, request.count, request.out_ids, request.out_scores,
                  stream);
  return true;
}

bool CudaResidentModel::error_sums(const SparseMatrix& ratings, double* squared,
                                   double* absolute) {
  const CudaSparseMatrix* r = on_device(ratings, backend_->device());
  if (r == nullptr) return false;
  require_within_limit(2 * kernels::als_objective_blocks() * int64_t{sizeof(double)},
                       "this evaluation");
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

FoldInAnswer CudaResidentModel::fold_in(const FoldInRequest& request) {
  if (!CudaFoldIn::serves(request.model)) return FoldInAnswer::kDeclined;
  // The model is the one this copy was made from (the cache drops the copy when it changes).
  std::call_once(fold_in_once_, [&] {
    require_within_limit(CudaFoldIn::item_side_bytes(request.model), "this fold-in's item side");
    fold_in_ = std::make_unique<CudaFoldIn>(backend_, request.model);
    fold_in_bytes_.store(fold_in_->bytes(), std::memory_order_relaxed);
  });
  const int64_t limit = backend_->device_memory_limit();
  return fold_in_->solve(request, limit == 0 ? -1 : limit - bytes_ - fold_in_->bytes())
             ? FoldInAnswer::kSolved
             : FoldInAnswer::kCheckRowsFirst;
}

}  // namespace sfac::cuda
