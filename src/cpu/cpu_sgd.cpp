#include "cpu/cpu_sgd.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace sfac::cpu {
namespace {

struct Sample {
  int32_t user;
  int32_t item;
  float rating;  // divided by the rating scale
};

class CpuSgdTrainer final : public Trainer {
 public:
  CpuSgdTrainer(const CpuSparseMatrix& ratings, const TrainOptions& options, uint64_t seed,
                int num_threads)
      : options_(options), threads_(num_threads), rank_(options.rank), rng_(seed) {
    const CsrPattern& p = ratings.pattern();
    users_ = p.rows();
    items_ = p.cols();
    samples_.reserve(static_cast<size_t>(p.nnz()));
    user_count_.resize(static_cast<size_t>(users_));
    item_count_.assign(static_cast<size_t>(items_), 0);
    for (int64_t u = 0; u < users_; ++u) user_count_[u] = p.offsets()[u + 1] - p.offsets()[u];
    double sum = 0.0, sum_sq = 0.0;
    for (int64_t u = 0; u < users_; ++u) {
      for (int64_t e = p.offsets()[u]; e < p.offsets()[u + 1]; ++e) {
        const float r = ratings.values()[e];
        samples_.push_back({static_cast<int32_t>(u), p.indices()[e], r});
        ++item_count_[p.indices()[e]];
        sum += r;
        sum_sq += double{r} * r;
      }
    }
    const auto n = static_cast<double>(std::max<size_t>(samples_.size(), 1));
    const double mean = sum / n;
    // cuMF_SGD's parameter scaling: train on ratings / std so one learning rate fits any
    // rating range; factors are scaled back by sqrt(std) when read.
    if (options.scale_ratings) {
      scale_ =
          static_cast<float>(std::max(1e-4, std::sqrt(std::max(0.0, sum_sq / n - mean * mean))));
    }
    for (Sample& s : samples_) s.rating /= scale_;
    biases_ = options.use_biases;
    if (biases_) global_mean_ = static_cast<float>(mean) / scale_;
    std::shuffle(samples_.begin(), samples_.end(), rng_);

    std::normal_distribution<float> init(
        0.0f, static_cast<float>(options.init_scale / std::sqrt(static_cast<double>(rank_))));
    p_.resize(static_cast<size_t>(users_ * rank_));
    q_.resize(static_cast<size_t>(items_ * rank_));
    for (float& x : p_) x = init(rng_);
    for (float& x : q_) x = init(rng_);
    if (biases_) {
      user_bias_.assign(static_cast<size_t>(users_), 0.0f);
      item_bias_.assign(static_cast<size_t>(items_), 0.0f);
    }
    if (options.deterministic) build_blocks();
  }

  void run_epoch(int epoch) override {
    const double t = epoch - 1;
    const auto gamma =
        static_cast<float>(options_.learning_rate / (1.0 + options_.decay * std::pow(t, 1.5)));
    if (options_.deterministic) {
      run_blocks(gamma);
    } else {
      const auto n = static_cast<int64_t>(samples_.size());
      // Hogwild: threads race on shared rows/columns; conflicts are rare on sparse data and
      // only perturb the trajectory (Recht et al.). Batches of 256 consecutive samples per
      // scheduling step, as cuMF_SGD's batch-Hogwild.
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 256)
      for (int64_t s = 0; s < n; ++s) update(samples_[s], gamma);
    }
  }

  double train_loss() override;

  const Model& model() override {
    model_.algorithm = SFAC_ALGO_SGD;
    model_.users = users_;
    model_.items = items_;
    model_.rank = rank_;
    const float f = std::sqrt(scale_);
    model_.user_factors.resize(p_.size());
    model_.item_factors.resize(q_.size());
    std::transform(p_.begin(), p_.end(), model_.user_factors.begin(),
                   [f](float x) { return x * f; });
    std::transform(q_.begin(), q_.end(), model_.item_factors.begin(),
                   [f](float x) { return x * f; });
    model_.has_biases = biases_;
    model_.global_mean = global_mean_ * scale_;
    model_.user_bias.resize(user_bias_.size());
    model_.item_bias.resize(item_bias_.size());
    std::transform(user_bias_.begin(), user_bias_.end(), model_.user_bias.begin(),
                   [this](float b) { return b * scale_; });
    std::transform(item_bias_.begin(), item_bias_.end(), model_.item_bias.begin(),
                   [this](float b) { return b * scale_; });
    model_.lambda_user = options_.lambda_user;
    model_.regularization = SFAC_REG_WEIGHTED;  // per-sample regularization sums to lambda*n_u
    return model_;
  }

 private:
  void update(const Sample& s, float gamma) {
    float* p = p_.data() + int64_t{s.user} * rank_;
    float* q = q_.data() + int64_t{s.item} * rank_;
    float pred = 0.0f;
#pragma omp simd reduction(+ : pred)
    for (int64_t t = 0; t < rank_; ++t) pred += p[t] * q[t];
    if (biases_) pred += global_mean_ + user_bias_[s.user] + item_bias_[s.item];
    const float e = s.rating - pred;
    const float lp = static_cast<float>(options_.lambda_user) / scale_;
    const float lq = static_cast<float>(options_.lambda_item) / scale_;
    // Both updates from the old values (as cuMF_SGD's kernel does).
#pragma omp simd
    for (int64_t t = 0; t < rank_; ++t) {
      const float pt = p[t], qt = q[t];
      p[t] = pt + gamma * (e * qt - lp * pt);
      q[t] = qt + gamma * (e * pt - lq * qt);
    }
    if (biases_) {
      user_bias_[s.user] += gamma * (e - lp * user_bias_[s.user]);
      item_bias_[s.item] += gamma * (e - lq * item_bias_[s.item]);
    }
  }

  // Deterministic mode: samples bucketed by (user % T, item % T). In sub-epoch k, thread t owns
  // bucket (t, (t + k) % T): no two threads touch the same row or column, and each bucket is
  // walked in its fixed shuffled order, so results do not depend on timing.
  void build_blocks() {
    const int64_t t = threads_;
    blocks_.assign(static_cast<size_t>(t * t), {});
    for (size_t s = 0; s < samples_.size(); ++s) {
      const Sample& x = samples_[s];
      blocks_[static_cast<size_t>((x.user % t) * t + x.item % t)].push_back(
          static_cast<int64_t>(s));
    }
  }

  void run_blocks(float gamma) {
    const int64_t t = threads_;
    for (int64_t k = 0; k < t; ++k) {
#pragma omp parallel for num_threads(threads_) schedule(static, 1)
      for (int64_t b = 0; b < t; ++b) {
        for (int64_t s : blocks_[static_cast<size_t>(b * t + (b + k) % t)]) {
          update(samples_[static_cast<size_t>(s)], gamma);
        }
      }
    }
  }

  TrainOptions options_;
  int threads_;
  int64_t rank_;
  std::mt19937_64 rng_;
  int64_t users_ = 0, items_ = 0;
  std::vector<Sample> samples_;
  std::vector<int64_t> user_count_, item_count_;
  std::vector<std::vector<int64_t>> blocks_;
  float scale_ = 1.0f;
  bool biases_ = false;
  float global_mean_ = 0.0f;
  std::vector<float> p_, q_, user_bias_, item_bias_;
  Model model_;
};

double CpuSgdTrainer::train_loss() {
  const Model& m = model();
  const auto n = static_cast<int64_t>(samples_.size());
  double data = 0.0;
#pragma omp parallel for num_threads(threads_) reduction(+ : data)
  for (int64_t s = 0; s < n; ++s) {
    const Sample& x = samples_[s];
    const double e = double{x.rating} * scale_ - m.predict(x.user, x.item);
    data += e * e;
  }
  // Eq. 3 regularizes per sample: lambda_p |p_u|^2 once for each rating of u.
  auto weighted_norms = [this](const std::vector<float>& f, const std::vector<int64_t>& counts) {
    double sum = 0.0;
    for (size_t i = 0; i < counts.size(); ++i) {
      double norm = 0.0;
      for (int64_t t = 0; t < rank_; ++t) norm += double{f[i * rank_ + t]} * f[i * rank_ + t];
      sum += static_cast<double>(counts[i]) * norm;
    }
    return sum;
  };
  const double reg = options_.lambda_user * weighted_norms(m.user_factors, user_count_) +
                     options_.lambda_item * weighted_norms(m.item_factors, item_count_);
  return (data + reg) / static_cast<double>(std::max<int64_t>(n, 1));
}

}  // namespace

std::unique_ptr<Trainer> make_sgd_trainer(const CpuSparseMatrix& ratings,
                                          const TrainOptions& options, uint64_t seed,
                                          int num_threads) {
  return std::make_unique<CpuSgdTrainer>(ratings, options, seed, num_threads);
}

}  // namespace sfac::cpu
