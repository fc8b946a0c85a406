#include "cuda/cuda_als.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/factor_init.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_resources.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels/als/als_kernels.cuh"
#include "cuda/kernels/common/sparse_convert.cuh"

namespace sfac::cuda {
namespace {

// Device memory the batched Cholesky path may take for its systems: this share of what is free
// when training starts, so that no rank or size runs the device out of memory.
constexpr double kSystemMemoryShare = 0.25;
// More systems per batch than this gain nothing: enough thread blocks to fill any device.
constexpr int64_t kMaxBatch = int64_t{1} << 17;

// One side of the factorization on the device (layout as in AlsHalfSweep).
struct DeviceSide {
  int64_t n = 0;
  DeviceBuffer<float> factors;  // n x stride
  DeviceBuffer<float> bias;     // n entries with biases
  // 16-bit factor storage: the rows as stored (n x half_stride) and their largest magnitude.
  DeviceBuffer<uint16_t> half;
  DeviceBuffer<float> half_largest;
  // This side's ratings grouped by its rows.
  const int64_t* offsets = nullptr;
  const int32_t* others = nullptr;
  const float* values = nullptr;
  double lambda = 0.0;
  // The ratings cut into segments (AlsHalfSweep::segment_begin), on the device, and each
  // row's first segment on the host too, to cut the rows into batches.
  DeviceBuffer<int64_t> segment_begin, first_segment;
  DeviceBuffer<int32_t> segment_row;
  DeviceBuffer<float> segment_largest;  // float16 storage: the largest |rating| per segment
  // CG solver: the rows as kernels::AlsCgRows lists them (long ones, then short ones).
  DeviceBuffer<int32_t> cg_rows;
  int64_t cg_long_count = 0;
  std::vector<int64_t> host_first_segment;
};

// Segments of a side aimed at with 16-bit factor storage: enough thread blocks to fill any
// device many times over, with each segment as long as that allows (up to kMaxSegment
// ratings), since every segment past a row's first writes a whole system that is then read and
// added back into the first. float32 storage keeps the shortest segments: its normal equations
// cost several times as much per rating, so that a long segment's block ends late.
constexpr int64_t kTargetSegments = 16384;
constexpr int64_t kMaxSegment = 8192;

// The segment length of a side with nnz ratings: a multiple of kernels::kAlsSegment (its
// least) up to kMaxSegment. It depends on the data and the storage type alone, so a seed gives
// the same sums on every device.
int64_t segment_length(int64_t nnz, bool sixteen_bit) {
  const int64_t quantum = kernels::kAlsSegment;
  if (!sixteen_bit) return quantum;
  const int64_t wanted = (nnz / kTargetSegments + quantum - 1) / quantum * quantum;
  return std::clamp(wanted, quantum, kMaxSegment);
}

// The side's row offsets (n + 1, on the device) on the host.
std::vector<int64_t> host_offsets(const DeviceSide& side, cudaStream_t stream) {
  std::vector<int64_t> off(static_cast<size_t>(side.n) + 1);
  SFAC_CUDA_TRY(cudaMemcpyAsync(off.data(), side.offsets, off.size() * sizeof(int64_t),
                                cudaMemcpyDeviceToHost, stream));
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream));
  return off;
}

// Cuts each row's ratings into segments of segment_length ratings at most (one, empty, for a
// row without ratings); `off`: the side's row offsets on the host.
void build_segments(DeviceSide& side, const std::vector<int64_t>& off, bool sixteen_bit,
                    cudaStream_t stream) {
  const int64_t length = segment_length(off[side.n], sixteen_bit);
  std::vector<int64_t> begin;
  std::vector<int32_t> row_of;
  side.host_first_segment.resize(off.size());
  for (int64_t r = 0; r < side.n; ++r) {
    side.host_first_segment[r] = static_cast<int64_t>(begin.size());
    int64_t e = off[r];
    do {
      begin.push_back(e);
      row_of.push_back(static_cast<int32_t>(r));
      e += length;
    } while (e < off[r + 1]);
  }
  side.host_first_segment[side.n] = static_cast<int64_t>(begin.size());
  begin.push_back(off[side.n]);
  side.segment_begin = DeviceBuffer<int64_t>(begin.size(), stream);
  side.segment_begin.upload(begin.data(), begin.size());
  side.segment_row = DeviceBuffer<int32_t>(row_of.size(), stream);
  side.segment_row.upload(row_of.data(), row_of.size());
  side.first_segment = DeviceBuffer<int64_t>(side.host_first_segment.size(), stream);
  side.first_segment.upload(side.host_first_segment.data(), side.host_first_segment.size());
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream));  // the host vectors die at return
}

}  // namespace

std::vector<int32_t> als_cg_row_order(const int64_t* offsets, int64_t rows, int64_t* long_count) {
  std::vector<int32_t> order, short_rows;
  for (int64_t r = 0; r < rows; ++r) {
    (offsets[r + 1] - offsets[r] > kernels::kAlsCgLongRow ? order : short_rows)
        .push_back(static_cast<int32_t>(r));
  }
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return offsets[a + 1] - offsets[a] > offsets[b + 1] - offsets[b];
  });
  *long_count = static_cast<int64_t>(order.size());
  order.insert(order.end(), short_rows.begin(), short_rows.end());
  return order;
}

namespace {

// The CG solver's row lists (kernels::AlsCgRows); `off`: the side's row offsets on the host.
void build_cg_rows(DeviceSide& side, const std::vector<int64_t>& off, cudaStream_t stream) {
  const std::vector<int32_t> rows = als_cg_row_order(off.data(), side.n, &side.cg_long_count);
  side.cg_rows = DeviceBuffer<int32_t>(rows.size(), stream);
  side.cg_rows.upload(rows.data(), rows.size());
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream));  // the host vectors die at return
}

class CudaAlsTrainer final : public Trainer {
 public:
  CudaAlsTrainer(CudaBackend& backend, const CudaSparseMatrix& ratings,
                 const TrainOptions& options, uint64_t seed)
      : backend_(std::static_pointer_cast<CudaBackend>(backend.shared_from_this())),
        options_(options),
        implicit_(options.algorithm == SFAC_ALGO_IALS),
        biases_(!implicit_ && options.use_biases),
        rank_(options.rank),
        d_(rank_ + (biases_ ? 1 : 0)),
        stride_(d_),
        half_stride_((d_ + 7) / 8 * 8),
        nnz_(ratings.nnz()) {
    SFAC_REQUIRE(d_ <= kernels::kAlsMaxUnknowns, SFAC_ERR_UNSUPPORTED, "rank = ", rank_,
                 " is above what the CUDA ALS trainer supports (",
                 kernels::kAlsMaxUnknowns - (biases_ ? 1 : 0),
                 "); train on a CPU context for larger ranks");
    DeviceGuard guard(backend_->device());
    check_memory_limit(ratings);
    OwnStreamWork order(*backend_);  // buffers live on the own stream
    ForeignOrder foreign(*backend_, {&ratings.backend()});
    const cudaStream_t own = backend_->own_stream();
    const CudaPattern& pattern = ratings.pattern();
    const CudaPattern::Csc& csc = pattern.csc(own);

    // The ratings' values are copied: the caller may change the matrix's values while training.
    std::vector<float> host_values(static_cast<size_t>(nnz_));
    ratings.download_csr(nullptr, nullptr, host_values.data());
    if (implicit_) require_implicit_ratings(host_values.data(), nnz_);
    if (biases_) global_mean_ = static_cast<float>(mean_rating(host_values.data(), nnz_));
    csr_values_ = DeviceBuffer<float>(static_cast<size_t>(nnz_), own);
    csr_values_.upload(host_values.data(), static_cast<size_t>(nnz_));
    csc_values_ = DeviceBuffer<float>(static_cast<size_t>(nnz_), own);
    if (nnz_ > 0) {
      kernels::gather(csr_values_.data(), csc.csr_position.data(), nnz_, csc_values_.data(), own);
    }

    users_.n = pattern.rows;
    users_.offsets = pattern.offsets.data();
    users_.others = pattern.indices.data();
    users_.values = csr_values_.data();
    users_.lambda = options.lambda_user;
    items_.n = pattern.cols;
    items_.offsets = csc.offsets.data();
    items_.others = csc.indices.data();
    items_.values = csc_values_.data();
    items_.lambda = options.lambda_item;
    const bool sixteen_bit = options.factor_dtype != SFAC_DTYPE_FLOAT32;
    for (DeviceSide* side : {&users_, &items_}) {
      const std::vector<int64_t> off = host_offsets(*side, own);
      build_segments(*side, off, sixteen_bit, own);
      if (options.solver == SFAC_SOLVER_CG) build_cg_rows(*side, off, own);
    }
    for (auto [side, which] : {std::pair(&users_, FactorSide::users),
                               std::pair(&items_, FactorSide::items)}) {
      const std::vector<float> host = initial_factors(
          seed, which, side->n, rank_, stride_, options.init_scale, original_ids(options, which));
      side->factors = DeviceBuffer<float>(host.size(), own);
      side->factors.upload(host.data(), host.size());
      if (biases_) {
        const std::vector<float> bias = initial_biases(side->n);
        side->bias = DeviceBuffer<float>(bias.size(), own);
        side->bias.upload(bias.data(), bias.size());
      }
      if (options.factor_dtype != SFAC_DTYPE_FLOAT32) {
        side->half = DeviceBuffer<uint16_t>(static_cast<size_t>(side->n * half_stride_), own);
        side->half_largest = DeviceBuffer<float>(2, own);
        round_to_storage(*side, own);
      }
      if (options.factor_dtype == SFAC_DTYPE_FLOAT16) {
        const int64_t segments = side->host_first_segment.back();
        side->segment_largest = DeviceBuffer<float>(static_cast<size_t>(segments), own);
        kernels::launch_segment_largest_values(side->values, side->segment_begin.data(), segments,
                                               side->segment_largest.data(), own);
      }
      // The host arrays die at the end of the iteration.
      SFAC_CUDA_TRY(cudaStreamSynchronize(own));
    }
    if (implicit_) {
      gram_ = DeviceBuffer<float>(static_cast<size_t>(d_ * d_), own);
      gram_blocks_ =
          DeviceBuffer<float>(static_cast<size_t>(kernels::als_gram_block_floats(d_)), own);
    }
    partials_ = DeviceBuffer<double>(2 * static_cast<size_t>(kernels::als_objective_blocks()), own);
    flag_ = DeviceBuffer<int>(1, own);
    plan_batch(ratings);
  }

  ~CudaAlsTrainer() override { backend_->own_waits_for_current_noexcept(); }

  void run_epoch(int) override {
    DeviceGuard guard(backend_->device());
    solve(users_, items_);
    solve(items_, users_);
    SFAC_CUDA_TRY(cudaStreamSynchronize(stream()));  // reports the epoch's errors as its own
  }

  double train_loss() override;
  const Model& model() override;
  bool factors_finite() override;
  double validation_rmse(const SparseMatrix& validation, int num_threads) override;

 private:
  cudaStream_t stream() const { return backend_->stream(); }

  kernels::AlsHalfSweep half_sweep(DeviceSide& self, DeviceSide& other) const {
    kernels::AlsHalfSweep s;
    s.offsets = self.offsets;
    s.others = self.others;
    s.values = self.values;
    s.rows = self.n;
    s.segment_begin = self.segment_begin.data();
    s.segment_row = self.segment_row.data();
    s.first_segment = self.first_segment.data();
    s.fixed = other.factors.data();
    s.fixed_bias = biases_ ? other.bias.data() : nullptr;
    s.solved = self.factors.data();
    s.solved_bias = biases_ ? self.bias.data() : nullptr;
    s.stride = stride_;
    s.rank = rank_;
    s.d = d_;
    s.implicit = implicit_;
    s.alpha = static_cast<float>(options_.implicit_alpha);
    s.global_mean = global_mean_;
    s.gram = implicit_ ? gram_.data() : nullptr;
    s.gram_blocks = implicit_ ? gram_blocks_.data() : nullptr;
    s.lambda = self.lambda;
    s.weighted = options_.regularization == SFAC_REG_WEIGHTED;
    if (options_.factor_dtype != SFAC_DTYPE_FLOAT32) {
      s.fixed_half = other.half.data();
      s.half_stride = half_stride_;
      s.half_bf16 = options_.factor_dtype == SFAC_DTYPE_BFLOAT16;
      s.fixed_half_max = other.half_largest.data();
      s.segment_largest = self.segment_largest.data();
    }
    return s;
  }

  // 16-bit storage: the side's factors rounded in place, and its 16-bit rows.
  void round_to_storage(DeviceSide& side, cudaStream_t stream) {
    if (options_.factor_dtype == SFAC_DTYPE_FLOAT32) return;
    kernels::launch_round_to_storage(side.factors.data(), side.n, stride_, rank_, d_,
                                     biases_ ? side.bias.data() : nullptr,
                                     options_.factor_dtype == SFAC_DTYPE_BFLOAT16,
                                     side.half.data(), half_stride_, side.half_largest.data(),
                                     stream);
  }

  int64_t system_bytes() const {
    return (kernels::als_system_floats(d_) + d_) * int64_t{sizeof(float)};
  }

  // What the trainer holds besides the batch's systems (an upper bound: the segments are
  // counted as if of the shortest length, with every row's last one partial).
  int64_t data_bytes(const SparseMatrix& ratings) const {
    const int64_t rows = ratings.rows() + ratings.cols();
    const int64_t segments = rows + 2 * ratings.nnz() / kernels::kAlsSegment + 2;
    const int64_t factors = rows * (stride_ + (biases_ ? 1 : 0));
    // 16-bit storage: each side's 16-bit rows and largest magnitudes.
    const int64_t half_bytes = options_.factor_dtype == SFAC_DTYPE_FLOAT32
                                   ? 0
                                   : rows * half_stride_ * int64_t{sizeof(uint16_t)} +
                                         4 * int64_t{sizeof(float)};
    // Renumbered ratings (SFAC_OPT_ALS_REORDER): the core's copy of the pattern and values, and
    // the CSC built on it.
    const int64_t copy_bytes =
        options_.renumbering ? 16 * ratings.nnz() + 8 * (rows + 2) : int64_t{0};
    const int64_t gram = d_ * d_ + kernels::als_gram_block_floats(d_);
    return int64_t{sizeof(float)} * (2 * ratings.nnz() + factors + gram) + half_bytes + copy_bytes +
           segments * int64_t{sizeof(int64_t) + sizeof(int32_t) + sizeof(float)} +
           (rows + 2) * int64_t{sizeof(int64_t)} + rows * int64_t{sizeof(int32_t)} +
           2 * kernels::als_objective_blocks() * int64_t{sizeof(double)};
  }

  // A device memory limit (SFAC_OPT_DEVICE_MEMORY_LIMIT) below the data plus one system.
  void check_memory_limit(const SparseMatrix& ratings) const {
    const int64_t limit = options_.device_memory_limit;
    const int64_t needed = data_bytes(ratings) +
                           (options_.solver == SFAC_SOLVER_CHOLESKY ? system_bytes() : 0);
    SFAC_REQUIRE(limit == 0 || limit >= needed, SFAC_ERR_OUT_OF_MEMORY,
                 "the device memory limit of ", limit, " bytes is below the ", needed,
                 " bytes this ALS trainer needs at least (ratings, factors and one system of ",
                 d_, " unknowns)");
  }

  // Systems (segments) per batch of the Cholesky path: within the memory limit, or a share of
  // the memory free when training starts.
  void plan_batch(const SparseMatrix& ratings) {
    if (options_.solver != SFAC_SOLVER_CHOLESKY) return;
    const auto per_system = static_cast<double>(system_bytes());
    int64_t fit = 0;
    if (options_.device_memory_limit > 0) {
      fit = static_cast<int64_t>(
          static_cast<double>(options_.device_memory_limit - data_bytes(ratings)) / per_system);
    } else {
      size_t free_bytes = 0, total_bytes = 0;
      SFAC_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
      fit = static_cast<int64_t>(kSystemMemoryShare * static_cast<double>(free_bytes) /
                                 per_system);
    }
    const int64_t segments = std::max<int64_t>(
        {users_.host_first_segment.back(), items_.host_first_segment.back(), 1});
    // A row's segments stay in one batch: room for the longest row's.
    int64_t longest = 1;
    for (const DeviceSide* side : {&users_, &items_}) {
      for (int64_t r = 0; r < side->n; ++r) {
        longest = std::max(longest, side->host_first_segment[r + 1] - side->host_first_segment[r]);
      }
    }
    SFAC_REQUIRE(options_.device_memory_limit == 0 || fit >= longest, SFAC_ERR_OUT_OF_MEMORY,
                 "the device memory limit of ", options_.device_memory_limit,
                 " bytes leaves room for ", fit, " systems of ", d_,
                 " unknowns, but the longest row needs ", longest);
    batch_ = std::max(longest, std::clamp<int64_t>(fit, 1, std::min(segments, kMaxBatch)));
  }

  // Y^T Y of `side`'s factors (rank x rank, both triangles) into gram_.
  void gram(const DeviceSide& side) {
    const auto k = static_cast<int>(rank_);
    const float one = 1.0f, zero = 0.0f;
    backend_->resources().with_blas(stream(), [&](cublasHandle_t h) {
      // Row-major n x stride is column-major stride x n (= Y^T): Y^T (Y^T)^T = Y^T Y.
      SFAC_CUBLAS_TRY(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, k, k, static_cast<int>(side.n),
                                  &one, side.factors.data(), static_cast<int>(stride_),
                                  side.factors.data(), static_cast<int>(stride_), &zero,
                                  gram_.data(), k));
    });
  }

  // Every row of `self` with `other` fixed, then rounded to the storage type.
  void solve(DeviceSide& self, DeviceSide& other) {
    if (self.n == 0) return;
    solve_rows(self, other);
    round_to_storage(self, stream());
  }

  void solve_rows(DeviceSide& self, DeviceSide& other) {
    if (implicit_) gram(other);
    const kernels::AlsHalfSweep s = half_sweep(self, other);
    if (options_.solver == SFAC_SOLVER_CG) {
      kernels::AlsCgRows rows;
      rows.long_rows = self.cg_rows.data();
      rows.long_count = self.cg_long_count;
      rows.short_rows = self.cg_rows.data() + self.cg_long_count;
      rows.short_count = self.n - self.cg_long_count;
      kernels::launch_als_conjugate_gradient(s, options_.cg_steps, rows, stream());
      return;
    }
    // The normal equations start from G in their accumulator order.
    if (implicit_)
      kernels::launch_als_gram_blocks(gram_.data(), rank_, gram_blocks_.data(), stream());
    const int64_t slots = std::min(batch_, self.host_first_segment.back());
    DeviceBuffer<float> a(static_cast<size_t>(slots * kernels::als_system_floats(d_)), stream());
    DeviceBuffer<float> b(static_cast<size_t>(slots * d_), stream());
    const std::vector<int64_t>& first = self.host_first_segment;
    kernels::AlsBatch batch;
    while (batch.row_begin < self.n) {
      // As many whole rows as fit the slots.
      batch.segment_base = first[batch.row_begin];
      batch.row_end = std::upper_bound(first.begin() + batch.row_begin + 1, first.end(),
                                       batch.segment_base + slots) -
                      first.begin() - 1;
      batch.segments = first[batch.row_end] - batch.segment_base;
      kernels::launch_als_normal_equations(s, batch, a.data(), b.data(), stream());
      kernels::launch_als_cholesky_solve(s, batch, a.data(), b.data(), stream());
      batch.row_begin = batch.row_end;
    }
  }

  // Each of the `slots` sums over the blocks' partials (slots per block), in block order.
  std::vector<double> sum_partials(int slots) const {
    const int blocks = kernels::als_objective_blocks();
    std::vector<double> host(static_cast<size_t>(blocks * slots));
    SFAC_CUDA_TRY(cudaMemcpyAsync(host.data(), partials_.data(), host.size() * sizeof(double),
                                  cudaMemcpyDeviceToHost, stream()));
    SFAC_CUDA_TRY(cudaStreamSynchronize(stream()));
    std::vector<double> sums(static_cast<size_t>(slots), 0.0);
    for (int b = 0; b < blocks; ++b) {
      for (int s = 0; s < slots; ++s) sums[s] += host[b * slots + s];
    }
    return sums;
  }

  std::shared_ptr<CudaBackend> backend_;  // first: the buffers are freed on its stream
  TrainOptions options_;
  bool implicit_, biases_;
  int64_t rank_, d_, stride_, half_stride_, nnz_;
  float global_mean_ = 0.0f;
  int64_t batch_ = 1;
  DeviceBuffer<float> csr_values_, csc_values_;
  DeviceSide users_, items_;
  DeviceBuffer<float> gram_, gram_blocks_;
  DeviceBuffer<double> partials_;
  DeviceBuffer<int> flag_;
  Model model_;
};

double CudaAlsTrainer::train_loss() {
  DeviceGuard guard(backend_->device());
  const kernels::AlsHalfSweep users = half_sweep(users_, items_);
  kernels::launch_als_user_objective(users, partials_.data(), stream());
  const std::vector<double> user_terms = sum_partials(2);
  kernels::launch_als_side_regularization(half_sweep(items_, users_), partials_.data(), stream());
  double data = user_terms[0];
  const double reg = user_terms[1] + sum_partials(1)[0];
  if (implicit_) {
    gram(items_);
    kernels::launch_als_all_cells(users_.factors.data(), users_.n, stride_, rank_, gram_.data(),
                                  partials_.data(), stream());
    data += sum_partials(1)[0];
  }
  return (data + reg) / static_cast<double>(std::max<int64_t>(nnz_, 1));
}

const Model& CudaAlsTrainer::model() {
  DeviceGuard guard(backend_->device());
  model_.describe(options_, users_.n, items_.n, biases_, global_mean_);
  for (auto [side, out, bias] :
       {std::tuple(&users_, &model_.user_factors, &model_.user_bias),
        std::tuple(&items_, &model_.item_factors, &model_.item_bias)}) {
    out->resize(static_cast<size_t>(side->n * rank_));
    if (side->n > 0 && rank_ > 0) {
      SFAC_CUDA_TRY(cudaMemcpy2DAsync(out->data(), rank_ * sizeof(float), side->factors.data(),
                                      stride_ * sizeof(float), rank_ * sizeof(float),
                                      static_cast<size_t>(side->n), cudaMemcpyDeviceToHost,
                                      stream()));
    }
    bias->resize(biases_ ? static_cast<size_t>(side->n) : 0);
    if (biases_ && side->n > 0) {
      SFAC_CUDA_TRY(cudaMemcpyAsync(bias->data(), side->bias.data(), side->n * sizeof(float),
                                    cudaMemcpyDeviceToHost, stream()));
    }
  }
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream()));
  return model_;
}

bool CudaAlsTrainer::factors_finite() {
  DeviceGuard guard(backend_->device());
  SFAC_CUDA_TRY(cudaMemsetAsync(flag_.data(), 0, sizeof(int), stream()));
  for (const DeviceSide* side : {&users_, &items_}) {
    kernels::launch_flag_non_finite(side->factors.data(), side->n, stride_, rank_,
                                    biases_ ? side->bias.data() : nullptr, flag_.data(), stream());
  }
  int flag = 0;
  SFAC_CUDA_TRY(
      cudaMemcpyAsync(&flag, flag_.data(), sizeof(int), cudaMemcpyDeviceToHost, stream()));
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream()));
  return flag == 0 && std::isfinite(global_mean_);
}

double CudaAlsTrainer::validation_rmse(const SparseMatrix& validation, int num_threads) {
  const CudaSparseMatrix* v = on_device(validation, backend_->device());
  if (v == nullptr) {
    return Trainer::validation_rmse(validation, num_threads);
  }
  if (v->nnz() == 0) return 0.0;  // as evaluate() answers for no ratings
  DeviceGuard guard(backend_->device());
  ForeignOrder foreign(*backend_, {&v->backend()});
  kernels::PredictionSides m{users_.factors.data(),
                             items_.factors.data(),
                             biases_ ? users_.bias.data() : nullptr,
                             biases_ ? items_.bias.data() : nullptr,
                             stride_,
                             rank_,
                             global_mean_};
  kernels::launch_prediction_errors(m, v->pattern().offsets.data(), v->pattern().indices.data(),
                                    v->values(), v->rows(), partials_.data(), stream());
  return std::sqrt(sum_partials(2)[0] / static_cast<double>(v->nnz()));
}

}  // namespace

std::unique_ptr<Trainer> make_als_trainer(CudaBackend& backend, const CudaSparseMatrix& ratings,
                                          const TrainOptions& options, uint64_t seed) {
  return std::make_unique<CudaAlsTrainer>(backend, ratings, options, seed);
}

}  // namespace sfac::cuda
