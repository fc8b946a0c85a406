#include "cuda/cuda_sgd.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/factor_init.h"
#include "core/sgd_chunks.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_resources.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels/sgd/sgd_kernels.cuh"

namespace sfac::cuda {
namespace {

// Ratings a chunk holds at most: long enough that reading and writing the user's row once per
// chunk costs little per rating, short enough that a heavy user's ratings are spread over the
// whole pass instead of one worker's stretch of it.
constexpr int64_t kMaxChunk = 32;
// Ratings per Hogwild worker at least: an epoch is then at least that many updates in sequence
// on every worker. Fewer make each epoch more like one large batch of simultaneous updates,
// which costs accuracy (docs/sgd-cuda.md has the measurements).
constexpr int64_t kRatingsPerWorker = 4096;
// Deterministic mode: the grid's size (blocks per side) at most; one diagonal runs at a time.
constexpr int64_t kDeterministicGrid = 64;
// An upper bound of the resident warps of any device, for the memory estimate.
constexpr int64_t kMaxResidentWorkers = 1 << 16;

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

size_t storage_bytes(sfac_dtype dtype) { return dtype == SFAC_DTYPE_FLOAT32 ? 4 : 2; }

class CudaSgdTrainer final : public Trainer {
 public:
  CudaSgdTrainer(CudaBackend& backend, const CudaSparseMatrix& ratings,
                 const TrainOptions& options, uint64_t seed)
      : backend_(std::static_pointer_cast<CudaBackend>(backend.shared_from_this())),
        options_(options),
        dtype_(options.factor_dtype),
        rank_(options.rank),
        stride_(round_up(rank_, kernels::sgd_vector_width(dtype_))),
        users_(ratings.rows()),
        items_(ratings.cols()),
        nnz_(ratings.nnz()),
        rng_(seed) {
    SFAC_REQUIRE(stride_ <= kernels::sgd_max_stride(dtype_), SFAC_ERR_UNSUPPORTED, "rank = ",
                 rank_, " is above what the CUDA SGD trainer supports (",
                 kernels::sgd_max_stride(dtype_), "); train on a CPU context for larger ranks");
    DeviceGuard guard(backend_->device());
    check_memory_limit();
    OwnStreamWork order(*backend_);  // buffers live on the own stream
    ForeignOrder foreign(*backend_, {&ratings.backend()});
    const cudaStream_t own = backend_->own_stream();

    std::vector<int64_t> offsets(static_cast<size_t>(users_) + 1);
    std::vector<int32_t> indices(static_cast<size_t>(nnz_));
    std::vector<float> values(static_cast<size_t>(nnz_));
    ratings.download_csr(offsets.data(), indices.data(), values.data());
    if (options.scale_ratings) scale_ = sgd_rating_scale(values.data(), nnz_);
    biases_ = options.use_biases;
    if (biases_) global_mean_ = static_cast<float>(mean_rating(values.data(), nnz_)) / scale_;
    grid_ = options.deterministic
                ? static_cast<int>(std::clamp<int64_t>(std::min(users_, items_), 1,
                                                       kDeterministicGrid))
                : 1;
    // Hogwild workers: as many warps as fit the device at once, fewer where the data has too
    // few ratings for them, unless the caller chose.
    workers_ = grid_ > 1                  ? grid_
               : options.sgd_workers > 0 ? options.sgd_workers
                                         : std::clamp<int64_t>(
                                               nnz_ / kRatingsPerWorker, 1,
                                               kernels::sgd_resident_workers(dtype_, stride_));
    SgdChunks chunks = arrange_sgd_chunks(users_, items_, offsets.data(), indices.data(),
                                          values.data(), scale_, kMaxChunk, grid_,
                                          grid_ > 1 ? 1 : workers_, rng_);
    std::vector<int32_t> user_count(static_cast<size_t>(users_)), item_count(items_, 0);
    for (int64_t u = 0; u < users_; ++u) {
      user_count[u] = static_cast<int32_t>(offsets[u + 1] - offsets[u]);
    }
    for (int32_t i : indices) ++item_count[i];
    std::vector<int32_t>().swap(indices);
    std::vector<float>().swap(values);

    samples_ = upload(chunks.samples, own);
    chunk_begin_ = upload(chunks.chunk_begin, own);
    chunk_user_ = upload(chunks.chunk_user, own);
    part_begin_ = upload(chunks.part_begin, own);
    chunks_ = chunks.chunks();
    user_count_ = upload(user_count, own);
    item_count_ = upload(item_count, own);
    user_rows_ = start_rows(seed, FactorSide::users, users_, own);
    item_rows_ = start_rows(seed, FactorSide::items, items_, own);
    if (biases_) {
      user_bias_ = upload(initial_biases(users_), own);
      item_bias_ = upload(initial_biases(items_), own);
    }
    partials_ = DeviceBuffer<double>(static_cast<size_t>(kernels::sgd_objective_blocks()), own);
    flag_ = DeviceBuffer<int>(1, own);
    SFAC_CUDA_TRY(cudaStreamSynchronize(own));  // the host vectors die at return
  }

  ~CudaSgdTrainer() override { backend_->own_waits_for_current_noexcept(); }

  void run_epoch(int epoch) override {
    DeviceGuard guard(backend_->device());
    const double t = epoch - 1;
    kernels::SgdStep step{};
    step.gamma =
        static_cast<float>(options_.learning_rate / (1.0 + options_.decay * std::pow(t, 1.5)));
    step.lambda_p = static_cast<float>(options_.lambda_user) / scale_;
    step.lambda_q = static_cast<float>(options_.lambda_item) / scale_;
    if (grid_ > 1) {
      // The blocks of one diagonal share no user and no item range, and each runs on one warp
      // in a fixed order: the result depends on nothing but the seed.
      kernels::SgdSchedule s{grid_, part_begin_.data()};
      s.grid = grid_;
      for (int d = 0; d < grid_; ++d) {
        s.diagonal = d;
        kernels::launch_sgd_update(model_view(), chunk_view(), s, step, stream());
      }
    } else {
      kernels::SgdSchedule s{workers_, part_begin_.data()};
      s.rotation = rng_();
      kernels::launch_sgd_update(model_view(), chunk_view(), s, step, stream());
    }
    SFAC_CUDA_TRY(cudaStreamSynchronize(stream()));  // reports the epoch's errors as its own
  }

  double train_loss() override {
    DeviceGuard guard(backend_->device());
    kernels::launch_sgd_squared_errors(model_view(), chunk_view(), partials_.data(), stream());
    const double data = sum_partials() * double{scale_} * scale_;
    // Eq. 3 regularizes per sample; the model's factors are sqrt(scale) times ours.
    kernels::launch_sgd_weighted_norms(dtype_, user_rows_.data(), users_, stride_,
                                       user_count_.data(), partials_.data(), stream());
    const double user_norms = sum_partials();
    kernels::launch_sgd_weighted_norms(dtype_, item_rows_.data(), items_, stride_,
                                       item_count_.data(), partials_.data(), stream());
    const double item_norms = sum_partials();
    const double reg =
        (options_.lambda_user * user_norms + options_.lambda_item * item_norms) * scale_;
    return (data + reg) / static_cast<double>(std::max<int64_t>(nnz_, 1));
  }

  const Model& model() override {
    DeviceGuard guard(backend_->device());
    model_.describe(options_, users_, items_, biases_, global_mean_ * scale_);
    model_.regularization = SFAC_REG_WEIGHTED;  // per-sample regularization sums to lambda n_u
    const float factor = std::sqrt(scale_);
    widen(user_rows_, users_, factor, model_.user_factors);
    widen(item_rows_, items_, factor, model_.item_factors);
    model_.user_bias.clear();
    model_.item_bias.clear();
    if (biases_) {
      model_.user_bias.resize(static_cast<size_t>(users_));
      model_.item_bias.resize(static_cast<size_t>(items_));
      user_bias_.download(model_.user_bias.data(), model_.user_bias.size());
      item_bias_.download(model_.item_bias.data(), model_.item_bias.size());
      for (float& b : model_.user_bias) b *= scale_;
      for (float& b : model_.item_bias) b *= scale_;
    }
    return model_;
  }

  bool factors_finite() override {
    DeviceGuard guard(backend_->device());
    SFAC_CUDA_TRY(cudaMemsetAsync(flag_.data(), 0, sizeof(int), stream()));
    kernels::launch_sgd_flag_non_finite(dtype_, user_rows_.data(), users_, stride_,
                                        biases_ ? user_bias_.data() : nullptr, flag_.data(),
                                        stream());
    kernels::launch_sgd_flag_non_finite(dtype_, item_rows_.data(), items_, stride_,
                                        biases_ ? item_bias_.data() : nullptr, flag_.data(),
                                        stream());
    int flag = 0;
    SFAC_CUDA_TRY(
        cudaMemcpyAsync(&flag, flag_.data(), sizeof(int), cudaMemcpyDeviceToHost, stream()));
    SFAC_CUDA_TRY(cudaStreamSynchronize(stream()));
    return flag == 0;
  }

  double validation_rmse(const SparseMatrix& validation, int num_threads) override {
    const auto* v = dynamic_cast<const CudaSparseMatrix*>(&validation);
    if (v == nullptr || v->backend().device() != backend_->device()) {
      return Trainer::validation_rmse(validation, num_threads);
    }
    if (v->nnz() == 0) return 0.0;  // as evaluate() answers for no ratings
    DeviceGuard guard(backend_->device());
    ForeignOrder foreign(*backend_, {&v->backend()});
    kernels::launch_sgd_prediction_errors(model_view(), scale_, v->pattern().offsets.data(),
                                          v->pattern().indices.data(), v->values(), v->rows(),
                                          partials_.data(), stream());
    return std::sqrt(sum_partials() / static_cast<double>(v->nnz()));
  }

 private:
  cudaStream_t stream() const { return backend_->stream(); }

  template <typename T>
  static DeviceBuffer<T> upload(const std::vector<T>& host, cudaStream_t stream) {
    DeviceBuffer<T> d(host.size(), stream);
    d.upload(host.data(), host.size());
    return d;
  }

  // The core's starting factors (one seed, the same rows on every backend), in storage.
  DeviceBuffer<char> start_rows(uint64_t seed, FactorSide side, int64_t n, cudaStream_t stream) {
    DeviceBuffer<char> rows(static_cast<size_t>(n * stride_) * storage_bytes(dtype_), stream);
    const std::vector<float> host =
        initial_factors(seed, side, n, rank_, rank_, options_.init_scale);
    DeviceBuffer<float> staged = upload(host, stream);
    kernels::launch_sgd_narrow(dtype_, staged.data(), n, rank_, stride_, rows.data(), stream);
    SFAC_CUDA_TRY(cudaStreamSynchronize(stream));  // `host` dies at return
    return rows;
  }

  void widen(const DeviceBuffer<char>& rows, int64_t n, float factor, std::vector<float>& out) {
    out.resize(static_cast<size_t>(n * rank_));
    DeviceBuffer<float> wide(out.size(), stream());
    kernels::launch_sgd_widen(dtype_, rows.data(), n, stride_, rank_, factor, wide.data(),
                              stream());
    wide.download(out.data(), out.size());
  }

  kernels::SgdModel model_view() {
    return {dtype_,
            user_rows_.data(),
            item_rows_.data(),
            biases_ ? user_bias_.data() : nullptr,
            biases_ ? item_bias_.data() : nullptr,
            stride_,
            rank_,
            global_mean_};
  }

  kernels::SgdChunkView chunk_view() const {
    return {samples_.data(), chunk_begin_.data(), chunk_user_.data(), chunks_};
  }

  // What the trainer keeps on the device.
  int64_t device_bytes() const {
    const int64_t rows = users_ + items_;
    const int64_t chunks = users_ * (grid_ > 1 ? grid_ : 1) + nnz_ / kMaxChunk + 1;
    const int64_t parts = std::max({int64_t{kDeterministicGrid} * kDeterministicGrid,
                                    kMaxResidentWorkers, options_.sgd_workers}) + 1;
    return nnz_ * int64_t{sizeof(SgdSample)} +
           (chunks + parts) * int64_t{sizeof(int64_t) + sizeof(int32_t)} +
           rows * (stride_ * static_cast<int64_t>(storage_bytes(dtype_)) +
                   int64_t{sizeof(int32_t)} + (options_.use_biases ? 4 : 0)) +
           std::max(users_, items_) * rank_ * int64_t{sizeof(float)};  // staging and widening
  }

  // Until blocks are streamed, the data must fit the device memory limit and the free memory.
  void check_memory_limit() const {
    const int64_t needed = device_bytes();
    const int64_t limit = options_.device_memory_limit;
    SFAC_REQUIRE(limit == 0 || limit >= needed, SFAC_ERR_OUT_OF_MEMORY,
                 "the device memory limit of ", limit, " bytes is below the ", needed,
                 " bytes this SGD trainer needs (samples, chunks and factors)");
    size_t free_bytes = 0, total_bytes = 0;
    SFAC_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
    SFAC_REQUIRE(static_cast<double>(needed) <= static_cast<double>(free_bytes),
                 SFAC_ERR_OUT_OF_MEMORY, "this SGD trainer needs ", needed,
                 " bytes of device memory (samples, chunks and factors) but ", free_bytes,
                 " are free");
  }

  double sum_partials() const {
    std::vector<double> host(static_cast<size_t>(kernels::sgd_objective_blocks()));
    SFAC_CUDA_TRY(cudaMemcpyAsync(host.data(), partials_.data(), host.size() * sizeof(double),
                                  cudaMemcpyDeviceToHost, stream()));
    SFAC_CUDA_TRY(cudaStreamSynchronize(stream()));
    double sum = 0.0;
    for (double x : host) sum += x;
    return sum;
  }

  std::shared_ptr<CudaBackend> backend_;  // first: the buffers are freed on its stream
  TrainOptions options_;
  sfac_dtype dtype_;
  int64_t rank_, stride_, users_, items_, nnz_;
  std::mt19937_64 rng_;
  float scale_ = 1.0f;
  bool biases_ = false;
  float global_mean_ = 0.0f;  // in training units
  int grid_ = 1;
  int64_t chunks_ = 0, workers_ = 1;
  DeviceBuffer<SgdSample> samples_;
  DeviceBuffer<int64_t> chunk_begin_, part_begin_;
  DeviceBuffer<int32_t> chunk_user_, user_count_, item_count_;
  DeviceBuffer<char> user_rows_, item_rows_;
  DeviceBuffer<float> user_bias_, item_bias_;
  DeviceBuffer<double> partials_;
  DeviceBuffer<int> flag_;
  Model model_;
};

}  // namespace

std::unique_ptr<Trainer> make_sgd_trainer(CudaBackend& backend, const CudaSparseMatrix& ratings,
                                          const TrainOptions& options, uint64_t seed) {
  return std::make_unique<CudaSgdTrainer>(backend, ratings, options, seed);
}

}  // namespace sfac::cuda
