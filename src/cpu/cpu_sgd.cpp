#include "cpu/cpu_sgd.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/factor_init.h"
#include "core/factor_storage.h"
#include "core/row_permutation.h"
#include "core/sgd_chunks.h"
#include "cpu/sgd_grid.h"
#include "host/simd_kernels.h"

namespace sfac::cpu {
namespace {

struct Sample {
  int32_t user;  // internal (permuted) ids
  int32_t item;
  float rating;  // divided by the rating scale
};

struct SweepArgs {
  const Sample* samples;
  float* p;
  float* q;
  float* user_bias;  // null without biases
  float* item_bias;
  int64_t rank;
  float gamma, lp, lq, global_mean;
  sfac_dtype storage;  // rows rounded to it after each update (16-bit factor storage)
};

// How far ahead the sweep prefetches the factor rows of upcoming samples: the rows are random
// within the block's slice, so the hardware prefetcher cannot guess them.
constexpr int64_t kPrefetchAhead = 8;

template <int64_t K>
SFAC_ALWAYS_INLINE void sweep(const SweepArgs& a, int64_t begin, int64_t end) {
  const int64_t k = host::simd::length<K>(a.rank);
  for (int64_t s = begin; s < end; ++s) {
    if (s + kPrefetchAhead < end) {
      const Sample& f = a.samples[s + kPrefetchAhead];
      const float* fp = a.p + int64_t{f.user} * k;
      const float* fq = a.q + int64_t{f.item} * k;
      for (int64_t t = 0; t < k; t += 16) {
        __builtin_prefetch(fp + t, 1);
        __builtin_prefetch(fq + t, 1);
      }
    }
    const Sample& x = a.samples[s];
    float* p = a.p + int64_t{x.user} * k;
    float* q = a.q + int64_t{x.item} * k;
    if (a.user_bias) {
      float& bu = a.user_bias[x.user];
      float& bi = a.item_bias[x.item];
      const float e =
          host::simd::sgd_step<K>(p, q, x.rating, a.global_mean + bu + bi, a.gamma, a.lp, a.lq, k);
      bu += a.gamma * (e - a.lp * bu);
      bi += a.gamma * (e - a.lq * bi);
    } else {
      host::simd::sgd_step<K>(p, q, x.rating, 0.0f, a.gamma, a.lp, a.lq, k);
    }
    if (a.storage != SFAC_DTYPE_FLOAT32) {
      round_to_storage(p, a.rank, a.storage);
      round_to_storage(q, a.rank, a.storage);
    }
  }
}

// SGD over samples [begin, end), compiled per ISA; common ranks get fully unrolled kernels.
SFAC_SIMD_CLONES void sweep_samples(const SweepArgs& a, int64_t begin, int64_t end) {
  switch (a.rank) {
    case 16:
      return sweep<16>(a, begin, end);
    case 32:
      return sweep<32>(a, begin, end);
    case 64:
      return sweep<64>(a, begin, end);
    case 128:
      return sweep<128>(a, begin, end);
    default:
      return sweep<0>(a, begin, end);
  }
}

// The grid size B: about kBlockBytes of P and Q rows per block row and column (1/B of each),
// at least 4 blocks per thread and side so the scheduler always finds a free one, and enough
// samples per block (kMinBlockSamples) that the scheduling lock stays negligible. A coarse grid
// crowds a popular item's updates of an epoch into a few short stretches, which costs accuracy;
// a fine one reuses each row fewer times per block. On the MovieLens-20M shape at k = 64 (42 MB
// of factors), 6 epochs, B = 8, 16, 32, 48, 64 gave held-out RMSE 0.6091, 0.6041, 0.5995,
// 0.5987, 0.5984 (Hogwild over a global shuffle: 0.5986) for 0.47, 0.48, 0.49, 0.49, 0.51 s of
// CPU per epoch; this rule picks B = 41 there.
int grid_size(int64_t users, int64_t items, int64_t nnz, int64_t rank, int threads) {
  constexpr double kBlockBytes = 1024.0 * 1024;
  constexpr double kMinBlockSamples = 2048;
  const double bytes = static_cast<double>(users + items) * static_cast<double>(rank) * 4.0;
  double b = std::max(std::ceil(bytes / kBlockBytes), 4.0 * threads);
  b = std::min(b, std::floor(std::sqrt(static_cast<double>(nnz) / kMinBlockSamples)));
  b = std::min({b, 256.0, static_cast<double>(users), static_cast<double>(items)});
  return static_cast<int>(std::max(b, 1.0));
}

class CpuSgdTrainer final : public Trainer {
 public:
  CpuSgdTrainer(const CpuSparseMatrix& ratings, const TrainOptions& options, uint64_t seed,
                int num_threads)
      : options_(options), threads_(num_threads), rank_(options.rank), rng_(seed) {
    const CsrPattern& pat = ratings.pattern();
    users_ = pat.rows();
    items_ = pat.cols();
    // Random relabeling of users and items (as LIBMF does) so that equal id ranges hold similar
    // numbers of ratings, whatever the order of the ids in the input.
    user_id_ = permutation(users_);
    item_id_ = permutation(items_);
    samples_.reserve(static_cast<size_t>(pat.nnz()));
    user_count_.assign(static_cast<size_t>(users_), 0);
    item_count_.assign(static_cast<size_t>(items_), 0);
    for (int64_t u = 0; u < users_; ++u) {
      const int32_t iu = user_id_[u];
      user_count_[iu] = pat.offsets()[u + 1] - pat.offsets()[u];
      for (int64_t e = pat.offsets()[u]; e < pat.offsets()[u + 1]; ++e) {
        const float r = ratings.values()[e];
        const int32_t ii = item_id_[pat.indices()[e]];
        samples_.push_back({iu, ii, r});
        ++item_count_[ii];
      }
    }
    const double mean = mean_rating(ratings.values().data(), pat.nnz());
    // Factors are scaled back by sqrt(scale) when read.
    if (options.scale_ratings) scale_ = sgd_rating_scale(ratings.values().data(), pat.nnz());
    for (Sample& s : samples_) s.rating /= scale_;
    biases_ = options.use_biases;
    if (biases_) global_mean_ = static_cast<float>(mean) / scale_;

    grid_ = BlockGrid(
        users_, items_,
        grid_size(users_, items_, pat.nnz(), rank_, options.deterministic ? 1 : threads_));
    block_offsets_ = grid_.arrange(samples_, rng_);
    scheduler_ = std::make_unique<BlockScheduler>(grid_.size(), rng_());

    // The core's starting factors: row u (original id) goes to internal row user_id_[u], so
    // one seed starts every trainer from the same rows. They are used as they come in training
    // units, as cuMF_SGD initializes its scaled problem: the model reads them times
    // sqrt(scale_) (1 without rating scaling).
    p_ = scatter_rows(
        initial_factors(seed, FactorSide::users, users_, rank_, rank_, options.init_scale),
        user_id_.data(), users_, rank_);
    q_ = scatter_rows(
        initial_factors(seed, FactorSide::items, items_, rank_, rank_, options.init_scale),
        item_id_.data(), items_, rank_);
    round_to_storage(p_, options.factor_dtype);
    round_to_storage(q_, options.factor_dtype);
    if (biases_) {
      user_bias_ = initial_biases(users_);
      item_bias_ = initial_biases(items_);
    }
  }

  void run_epoch(int epoch) override {
    const double t = epoch - 1;
    SweepArgs args{};
    args.samples = samples_.data();
    args.p = p_.data();
    args.q = q_.data();
    args.user_bias = biases_ ? user_bias_.data() : nullptr;
    args.item_bias = biases_ ? item_bias_.data() : nullptr;
    args.rank = rank_;
    args.gamma =
        static_cast<float>(options_.learning_rate / (1.0 + options_.decay * std::pow(t, 1.5)));
    args.lp = static_cast<float>(options_.lambda_user) / scale_;
    args.lq = static_cast<float>(options_.lambda_item) / scale_;
    args.global_mean = global_mean_;
    args.storage = options_.factor_dtype;
    const int b = grid_.size();
    auto run_block = [&](int block) {
      sweep_samples(args, block_offsets_[block], block_offsets_[block + 1]);
    };
    if (options_.deterministic) {
      // Diagonal s holds the blocks (i, (i + s) mod B): pairwise disjoint in rows and columns,
      // so the result is the same whichever thread runs which block, and in whatever order.
#pragma omp parallel num_threads(threads_)
      for (int s = 0; s < b; ++s) {
#pragma omp for schedule(dynamic, 1)
        for (int i = 0; i < b; ++i) run_block(i * b + (i + s) % b);
      }
    } else {
      scheduler_->start_epoch();
#pragma omp parallel num_threads(threads_)
      for (int block; (block = scheduler_->acquire()) >= 0;) {
        run_block(block);
        scheduler_->release(block);
      }
    }
  }

  double train_loss() override;

  bool factors_finite() override {
    auto finite = [](const std::vector<float>& v) {
      return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
    };
    return finite(p_) && finite(q_) && finite(user_bias_) && finite(item_bias_);
  }

  const Model& model() override {
    model_.algorithm = SFAC_ALGO_SGD;
    model_.users = users_;
    model_.items = items_;
    model_.rank = rank_;
    const float f = std::sqrt(scale_);
    unpermute(p_, user_id_, rank_, f, model_.user_factors);
    unpermute(q_, item_id_, rank_, f, model_.item_factors);
    model_.has_biases = biases_;
    model_.global_mean = global_mean_ * scale_;
    model_.user_bias.clear();
    model_.item_bias.clear();
    if (biases_) {
      unpermute(user_bias_, user_id_, 1, scale_, model_.user_bias);
      unpermute(item_bias_, item_id_, 1, scale_, model_.item_bias);
    }
    model_.lambda_user = options_.lambda_user;
    model_.regularization = SFAC_REG_WEIGHTED;  // per-sample regularization sums to lambda*n_u
    return model_;
  }

 private:
  std::vector<int32_t> permutation(int64_t n) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng_);
    return ids;
  }

  // out row r = f * in row id[r] (width w).
  static void unpermute(const std::vector<float>& in, const std::vector<int32_t>& id, int64_t w,
                        float f, std::vector<float>& out) {
    out.resize(id.size() * static_cast<size_t>(w));
    for (size_t r = 0; r < id.size(); ++r) {
      const float* src = in.data() + int64_t{id[r]} * w;
      float* dst = out.data() + static_cast<int64_t>(r) * w;
      for (int64_t t = 0; t < w; ++t) dst[t] = f * src[t];
    }
  }

  TrainOptions options_;
  int threads_;
  int64_t rank_;
  std::mt19937_64 rng_;
  int64_t users_ = 0, items_ = 0;
  std::vector<int32_t> user_id_, item_id_;        // external id -> internal id
  std::vector<Sample> samples_;                   // block by block
  std::vector<int64_t> user_count_, item_count_;  // by internal id
  BlockGrid grid_{0, 0, 1};
  std::vector<int64_t> block_offsets_;
  std::unique_ptr<BlockScheduler> scheduler_;
  float scale_ = 1.0f;
  bool biases_ = false;
  float global_mean_ = 0.0f;
  std::vector<float> p_, q_, user_bias_, item_bias_;  // by internal id, in training scale
  Model model_;
};

double CpuSgdTrainer::train_loss() {
  const auto n = static_cast<int64_t>(samples_.size());
  double data = 0.0;
  // In training scale: model prediction = scale * (p.q + biases), so errors scale by `scale_`.
#pragma omp parallel for num_threads(threads_) reduction(+ : data)
  for (int64_t s = 0; s < n; ++s) {
    const Sample& x = samples_[s];
    const float* p = p_.data() + int64_t{x.user} * rank_;
    const float* q = q_.data() + int64_t{x.item} * rank_;
    double pred = 0.0;
    for (int64_t t = 0; t < rank_; ++t) pred += double{p[t]} * q[t];
    if (biases_) pred += double{global_mean_} + user_bias_[x.user] + item_bias_[x.item];
    const double e = (double{x.rating} - pred) * scale_;
    data += e * e;
  }
  // Eq. 3 regularizes per sample: lambda_p |p_u|^2 once for each rating of u. The model's
  // factors are sqrt(scale) times ours.
  auto weighted_norms = [this](const std::vector<float>& f, const std::vector<int64_t>& counts) {
    double sum = 0.0;
    for (size_t i = 0; i < counts.size(); ++i) {
      double norm = 0.0;
      for (int64_t t = 0; t < rank_; ++t) norm += double{f[i * rank_ + t]} * f[i * rank_ + t];
      sum += static_cast<double>(counts[i]) * norm;
    }
    return sum * scale_;
  };
  const double reg = options_.lambda_user * weighted_norms(p_, user_count_) +
                     options_.lambda_item * weighted_norms(q_, item_count_);
  return (data + reg) / static_cast<double>(std::max<int64_t>(n, 1));
}

}  // namespace

std::unique_ptr<Trainer> make_sgd_trainer(const CpuSparseMatrix& ratings,
                                          const TrainOptions& options, uint64_t seed,
                                          int num_threads) {
  return std::make_unique<CpuSgdTrainer>(ratings, options, seed, num_threads);
}

}  // namespace sfac::cpu
