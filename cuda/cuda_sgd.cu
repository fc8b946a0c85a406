#include "cuda/cuda_sgd.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/factor_init.h"
#include "core/reorder.h"
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
// Wavefront: ratings a cell holds at least on average (nnz / (workers x ranges), with two item
// ranges per worker), so that taking and releasing a lock is paid over many updates.
constexpr int64_t kWavefrontCellRatings = 32;
constexpr int64_t kRangesPerWorker = 2;
// Hogwild: a user with more ratings than a worker's mean share over this is cut into pieces dealt
// to several workers (core/sgd_chunks.h), so that no worker's share passes the mean by more
// than that; without it a power-law user side leaves most of the device idle while the workers
// of the heaviest users finish.
constexpr int64_t kSplitShareFraction = 4;

// Without a memory limit, the trainer may take this share of the memory free at its start.
constexpr double kFreeMemoryShare = 0.9;
// Slabs at most when samples are streamed: past this many, each launch is too short to keep the
// device busy, and the data had better be trained on the CPU.
constexpr int64_t kMaxSlabs = 256;

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// The samples in page-locked host memory, so that copies to the device run asynchronously.
class PinnedSamples {
 public:
  PinnedSamples() = default;
  explicit PinnedSamples(const std::vector<SgdSample>& from) : size_(from.size()) {
    void* p = nullptr;
    SFAC_CUDA_TRY(cudaMallocHost(&p, size_ * sizeof(SgdSample)));
    data_ = static_cast<SgdSample*>(p);
    std::copy(from.begin(), from.end(), data_);
  }
  ~PinnedSamples() {
    if (data_ != nullptr) (void)cudaFreeHost(data_);
  }
  PinnedSamples(PinnedSamples&& o) noexcept { *this = std::move(o); }
  PinnedSamples& operator=(PinnedSamples&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  const SgdSample* data() const { return data_; }

 private:
  SgdSample* data_ = nullptr;
  size_t size_ = 0;
};

// The stream that copies slabs in, and per buffer the events "copied" and "no longer read".
struct CopyStream {
  cudaStream_t stream = nullptr;
  cudaEvent_t loaded[2] = {}, buffer_free[2] = {};

  CopyStream() = default;
  static CopyStream create() {
    CopyStream c;
    SFAC_CUDA_TRY(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
    for (int b = 0; b < 2; ++b) {
      SFAC_CUDA_TRY(cudaEventCreateWithFlags(&c.loaded[b], cudaEventDisableTiming));
      SFAC_CUDA_TRY(cudaEventCreateWithFlags(&c.buffer_free[b], cudaEventDisableTiming));
    }
    return c;
  }
  ~CopyStream() { reset(); }
  CopyStream(CopyStream&& o) noexcept { *this = std::move(o); }
  CopyStream& operator=(CopyStream&& o) noexcept {
    std::swap(stream, o.stream);
    std::swap(loaded, o.loaded);
    std::swap(buffer_free, o.buffer_free);
    return *this;
  }
  // Waits for the copies in flight (the pinned samples must outlive them), then frees.
  void reset() noexcept {
    if (stream != nullptr) (void)cudaStreamSynchronize(stream);
    for (int b = 0; b < 2; ++b) {
      if (loaded[b] != nullptr) (void)cudaEventDestroy(loaded[b]);
      if (buffer_free[b] != nullptr) (void)cudaEventDestroy(buffer_free[b]);
      loaded[b] = buffer_free[b] = nullptr;
    }
    if (stream != nullptr) (void)cudaStreamDestroy(stream);
    stream = nullptr;
  }
};

size_t storage_bytes(sfac_dtype dtype) { return dtype == SFAC_DTYPE_FLOAT32 ? 4 : 2; }

class CudaSgdTrainer final : public Trainer {
 public:
  CudaSgdTrainer(CudaBackend& backend, const SparseMatrix& ratings, const TrainOptions& options,
                 uint64_t seed)
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
    OwnStreamWork order(*backend_);  // buffers live on the own stream
    // Ratings of another CUDA context are read in that context's stream order; host ratings
    // need none (ForeignOrder skips the trainer's own backend).
    const Backend* source = &ratings.backend();
    const Backend* ordered = source->kind() == SFAC_BACKEND_CUDA ? source : backend_.get();
    ForeignOrder foreign(*backend_, {ordered});
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
    const bool wavefront = !options.deterministic && options.sgd_schedule == SFAC_SGD_WAVEFRONT;
    const int64_t resident = kernels::sgd_resident_workers(dtype_, stride_);
    workers_ = grid_ > 1                  ? grid_
               : options.deterministic   ? 1  // one user or one item: no grid to run
               : options.sgd_workers > 0 ? options.sgd_workers
               : wavefront               ? wavefront_workers(resident)
                                         : std::clamp<int64_t>(nnz_ / kRatingsPerWorker, 1,
                                                               resident);
    // Wavefront: two item ranges a worker, so a worker rarely waits for its next one.
    ranges_ = wavefront ? std::clamp<int64_t>(kRangesPerWorker * workers_, 1,
                                              std::max<int64_t>(items_, 1))
                        : 0;
    budget_ = free_memory_budget();
    streamed_ = nnz_ > (budget_ - fixed_bytes()) / static_cast<int64_t>(sizeof(SgdSample));
    const int64_t slabs = plan_slabs();
    SgdLayout layout;
    layout.max_chunk = kMaxChunk;
    layout.grid = grid_;
    layout.workers = grid_ > 1 ? 1 : workers_;
    layout.ranges = ranges_;
    layout.slabs = slabs;
    if (grid_ <= 1 && ranges_ == 0 && kernels::sgd_splits_users(stride_)) {
      layout.split_above = std::max(kMaxChunk, nnz_ / workers_ / kSplitShareFraction);
    }
    SgdChunks chunks = arrange_sgd_chunks(users_, items_, offsets.data(), indices.data(),
                                          values.data(), scale_, layout, rng_,
                                          backend_->num_threads());
    user_count_ = upload(row_counts(offsets), own);
    item_count_ = upload(column_counts(indices, items_), own);
    std::vector<int32_t>().swap(indices);
    std::vector<float>().swap(values);

    chunk_begin_ = upload(chunks.chunk_begin, own);
    chunk_user_ = upload(chunks.chunk_user, own);
    if (!chunks.split_weight.empty()) split_weight_ = upload(chunks.split_weight, own);
    part_begin_ = upload(chunks.part_begin, own);
    if (ranges_ > 0) {
      part_cells_ = upload(chunks.part_cells, own);
      cell_begin_ = upload(chunks.cell_begin, own);
      cell_range_ = upload(chunks.cell_range, own);
      locks_ = DeviceBuffer<int>(static_cast<size_t>(ranges_), own);
      SFAC_CUDA_TRY(cudaMemsetAsync(locks_.data(), 0, locks_.size() * sizeof(int), own));
    }
    chunks_ = chunks.chunks();
    parts_ = chunks.parts;
    slab_begin_ = chunks.slab_begin;
    for (int64_t slab = 0; slab < chunks.slabs(); ++slab) {
      slab_first_.push_back(chunks.slab_first_sample(slab));
      slab_end_.push_back(chunks.slab_end_sample(slab));
    }
    place_samples(chunks.samples, own);
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
    // Grid: the blocks of one diagonal share no user and no item range, and each runs on one
    // worker in its stored order, so the result depends on nothing but the seed.
    for (int64_t slab = 0; slab < slabs(); ++slab) {
      const kernels::SgdChunkView view = stage(slab);
      if (ranges_ > 0) {
        kernels::SgdWavefront sched{parts_, part_cells_.data() + slab * (parts_ + 1),
                                    cell_begin_.data(), cell_range_.data(), locks_.data()};
        sched.rotation = rng_();
        kernels::launch_sgd_wavefront(model_view(), view, sched, step, stream());
      } else {
        kernels::SgdSchedule sched{parts_, part_begin_.data() + slab * (parts_ + 1)};
        if (grid_ <= 1) sched.rotation = rng_();
        kernels::launch_sgd_update(model_view(), view, sched, step, stream());
      }
      release(slab);
    }
    SFAC_CUDA_TRY(cudaStreamSynchronize(stream()));  // reports the epoch's errors as its own
  }

  double train_loss() override {
    DeviceGuard guard(backend_->device());
    double squares = 0.0;
    for (int64_t slab = 0; slab < slabs(); ++slab) {
      const kernels::SgdChunkView view = stage(slab);
      kernels::launch_sgd_squared_errors(model_view(), view, slab_begin_[slab],
                                         slab_begin_[slab + 1], partials_.data(), stream());
      release(slab);
      squares += sum_partials();
    }
    const double data = squares * double{scale_} * scale_;
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
    const CudaSparseMatrix* v = on_device(validation, backend_->device());
    if (v == nullptr) {
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
    return DeviceBuffer<T>::copy_of(host.data(), host.size(), stream);
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

  int64_t slabs() const { return static_cast<int64_t>(slab_first_.size()); }

  // The chunks with slab `slab`'s samples on the device: all of them when they fit, else the
  // slab copied into one of two buffers on the copy stream (the other buffer may still be in
  // use by the previous slab's kernel), the compute stream waiting for the copy.
  kernels::SgdChunkView stage(int64_t slab) {
    kernels::SgdChunkView view{samples_.data(), 0, chunk_begin_.data(), chunk_user_.data(),
                               chunks_, split_weight_.size() ? split_weight_.data() : nullptr};
    if (!streamed()) return view;
    const size_t b = static_cast<size_t>(slab % 2);
    const int64_t first = slab_first_[slab], count = slab_end_[slab] - first;
    SFAC_CUDA_TRY(cudaStreamWaitEvent(copy_.stream, copy_.buffer_free[b], 0));
    if (count > 0) {
      SFAC_CUDA_TRY(cudaMemcpyAsync(buffers_[b].data(), host_samples_.data() + first,
                                    static_cast<size_t>(count) * sizeof(SgdSample),
                                    cudaMemcpyHostToDevice, copy_.stream));
    }
    SFAC_CUDA_TRY(cudaEventRecord(copy_.loaded[b], copy_.stream));
    SFAC_CUDA_TRY(cudaStreamWaitEvent(stream(), copy_.loaded[b], 0));
    view.samples = buffers_[b].data();
    view.sample_base = first;
    return view;
  }

  // After the work queued on slab `slab`'s buffer: the buffer may be refilled once it is done.
  void release(int64_t slab) {
    if (streamed()) SFAC_CUDA_TRY(cudaEventRecord(copy_.buffer_free[slab % 2], stream()));
  }

  bool streamed() const { return streamed_; }

  // The samples on the device, or in pinned host memory with two device buffers of the
  // largest slab.
  void place_samples(const std::vector<SgdSample>& samples, cudaStream_t stream) {
    if (!streamed_) {
      samples_ = upload(samples, stream);
      return;
    }
    int64_t largest = 0;
    for (int64_t slab = 0; slab < slabs(); ++slab) {
      largest = std::max(largest, slab_end_[slab] - slab_first_[slab]);
    }
    require_fits(2 * largest);
    host_samples_ = PinnedSamples(samples);
    for (auto& buffer : buffers_) {
      buffer = DeviceBuffer<SgdSample>(static_cast<size_t>(largest), stream);
    }
    copy_ = CopyStream::create();
  }

  // Workers of the wavefront: about sqrt(nnz / (kRangesPerWorker kWavefrontCellRatings)), so
  // that cells hold kWavefrontCellRatings on average, at most half the items (two ranges of at
  // least one item each) and what fits the device.
  int64_t wavefront_workers(int64_t resident) const {
    const auto w = static_cast<int64_t>(std::sqrt(
        static_cast<double>(nnz_) / static_cast<double>(kRangesPerWorker * kWavefrontCellRatings)));
    return std::clamp<int64_t>(std::min({w, items_ / kRangesPerWorker, resident}), 1, resident);
  }

  // What the trainer keeps on the device besides its samples (an upper bound).
  int64_t fixed_bytes() const {
    const int64_t rows = users_ + items_;
    // A user's chunks: one per grid block or wavefront range it rates, plus one per kMaxChunk.
    const int64_t runs = grid_ > 1    ? users_ * grid_
                         : ranges_ > 0 ? std::min(nnz_, users_ * ranges_)
                                       : users_;
    // Hogwild may split users: a piece adds a chunk at most, and pieces hold kMaxChunk or more.
    const int64_t pieces = grid_ <= 1 && ranges_ == 0 ? nnz_ / kMaxChunk : 0;
    const int64_t chunks = runs + pieces + nnz_ / kMaxChunk + 1;
    const int64_t part_offsets = (kMaxSlabs + 1) * (workers_ + 1);
    // Wavefront: a cell per (worker, range) at most, and the locks.
    const int64_t cells = ranges_ > 0 ? std::min(nnz_, workers_ * ranges_) + 1 : 0;
    return chunks * int64_t{sizeof(int64_t) + sizeof(int32_t)} +
           cells * int64_t{sizeof(int64_t) + sizeof(int32_t)} + ranges_ * int64_t{sizeof(int)} +
           part_offsets * int64_t{sizeof(int64_t)} * (ranges_ > 0 ? 2 : 1) +
           users_ * int64_t{sizeof(float)} * (pieces > 0 ? 1 : 0) +
           rows * (stride_ * static_cast<int64_t>(storage_bytes(dtype_)) +
                   int64_t{sizeof(int64_t)} + (options_.use_biases ? 4 : 0)) +
           std::max(users_, items_) * rank_ * int64_t{sizeof(float)};  // staging and widening
  }

  // Device bytes the trainer may take: the memory limit, or most of what is free.
  int64_t free_memory_budget() const {
    if (options_.device_memory_limit > 0) return options_.device_memory_limit;
    size_t free_bytes = 0, total_bytes = 0;
    SFAC_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
    return static_cast<int64_t>(kFreeMemoryShare * static_cast<double>(free_bytes));
  }

  // OUT_OF_MEMORY unless the fixed part and `samples` samples fit the budget.
  void require_fits(int64_t samples) const {
    if (fixed_bytes() + samples * int64_t{sizeof(SgdSample)} > budget_) fail_to_fit(samples);
  }
  [[noreturn]] void fail_to_fit(int64_t samples) const {
    const int64_t needed = fixed_bytes() + samples * int64_t{sizeof(SgdSample)};
    const int64_t limit = options_.device_memory_limit;
    fail(SFAC_ERR_OUT_OF_MEMORY,
         limit > 0 ? cat("the device memory limit of ", limit, " bytes")
                   : cat("the ", budget_, " bytes of device memory this trainer may take"),
         " is below the ", needed, " bytes that SGD needs with its samples streamed in two ",
         "buffers of ", samples / 2, " (factors, chunks and buffers)");
  }

  // Slabs of the Hogwild schedule: one when every sample fits the device with the rest, else as
  // many as two buffers of a slab need (a slab's share of each worker may pass an equal share
  // of its samples by one chunk). The grid runs a slab per diagonal in any case.
  int64_t plan_slabs() const {
    if (grid_ > 1 || !streamed_) return 1;
    const int64_t room =
        (budget_ - fixed_bytes()) / static_cast<int64_t>(sizeof(SgdSample));
    int64_t per_buffer = room / 2 - workers_ * kMaxChunk;
    // Wavefront pieces end at cell boundaries, past an equal share by up to a cell each.
    if (ranges_ > 0) per_buffer -= per_buffer / 4;
    const int64_t slabs = per_buffer > 0 ? (nnz_ + per_buffer - 1) / per_buffer : kMaxSlabs + 1;
    if (slabs > kMaxSlabs) fail_to_fit(2 * (nnz_ / kMaxSlabs + workers_ * kMaxChunk));
    return slabs;
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
  int64_t budget_ = 0;     // device bytes the trainer may take
  bool streamed_ = false;  // samples copied in slab by slab each pass
  int64_t chunks_ = 0, workers_ = 1, parts_ = 1;
  int64_t ranges_ = 0;  // wavefront item ranges (0: Hogwild or the grid)
  std::vector<int64_t> slab_begin_, slab_first_, slab_end_;  // per slab (host)
  DeviceBuffer<SgdSample> samples_;  // all of them, when they fit
  // Streamed: the samples on the host, two device buffers of a slab, the copy stream (declared
  // last: it is destroyed first and waits for its copies before the memory goes).
  PinnedSamples host_samples_;
  DeviceBuffer<SgdSample> buffers_[2];
  DeviceBuffer<int64_t> chunk_begin_, part_begin_;
  DeviceBuffer<int32_t> chunk_user_;
  DeviceBuffer<float> split_weight_;  // per user, when users are split
  DeviceBuffer<int64_t> part_cells_, cell_begin_;  // wavefront
  DeviceBuffer<int32_t> cell_range_;
  DeviceBuffer<int> locks_;
  DeviceBuffer<int64_t> user_count_, item_count_;
  DeviceBuffer<char> user_rows_, item_rows_;
  DeviceBuffer<float> user_bias_, item_bias_;
  DeviceBuffer<double> partials_;
  DeviceBuffer<int> flag_;
  Model model_;
  CopyStream copy_;
};

}  // namespace

std::unique_ptr<Trainer> make_sgd_trainer(CudaBackend& backend, const SparseMatrix& ratings,
                                          const TrainOptions& options, uint64_t seed) {
  return std::make_unique<CudaSgdTrainer>(backend, ratings, options, seed);
}

}  // namespace sfac::cuda
