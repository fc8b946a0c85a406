#include "cpu/cpu_als.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "core/error.h"
#include "core/factor_init.h"
#include "core/factor_storage.h"
#include "host/blas_threads.h"
#include "host/parallel_errors.h"
#include "host/row_solver.h"

namespace sfac::cpu {
namespace {

// One side of the factorization in the layout the solver reads: each row is [factors, 1] when
// biases are learned (so the other side's bias multiplies the constant), [factors] otherwise.
struct Side {
  int64_t n = 0;
  int64_t stride = 0;
  std::vector<float> factors;  // n x stride
  std::vector<float> bias;     // n entries when biases are learned
  // This side's ratings, grouped by this side's index.
  const int64_t* offsets = nullptr;
  const int32_t* others = nullptr;
  const float* values = nullptr;
  double lambda = 0.0;
};

class CpuAlsTrainer final : public Trainer {
 public:
  CpuAlsTrainer(const CpuSparseMatrix& ratings, const TrainOptions& options, uint64_t seed,
                int num_threads)
      : options_(options),
        pattern_(ratings.pattern()),
        threads_(num_threads),
        implicit_(options.algorithm == SFAC_ALGO_IALS),
        biases_(!implicit_ && options.use_biases),
        rank_(options.rank) {
    const CscIndex& csc = pattern_.csc(num_threads);
    csr_values_ = ratings.values();
    csc_values_.resize(csr_values_.size());
    for (size_t e = 0; e < csc_values_.size(); ++e) {
      csc_values_[e] = csr_values_[csc.csr_position[e]];
    }
    if (implicit_) {
      require_implicit_ratings(csr_values_.data(), static_cast<int64_t>(csr_values_.size()));
    }
    if (biases_) {
      global_mean_ = static_cast<float>(
          mean_rating(csr_values_.data(), static_cast<int64_t>(csr_values_.size())));
    }
    const int64_t stride = rank_ + (biases_ ? 1 : 0);
    users_ = Side{pattern_.rows(),
                  stride,
                  {},
                  {},
                  pattern_.offsets().data(),
                  pattern_.indices().data(),
                  csr_values_.data(),
                  options.lambda_user};
    items_ = Side{pattern_.cols(),
                  stride,
                  {},
                  {},
                  csc.offsets.data(),
                  csc.indices.data(),
                  csc_values_.data(),
                  options.lambda_item};
    for (auto [side, which] :
         {std::pair(&users_, FactorSide::users), std::pair(&items_, FactorSide::items)}) {
      side->factors = initial_factors(seed, which, side->n, rank_, stride, options.init_scale,
                                      original_ids(options, which));
      round_to_storage(side->factors, options.factor_dtype);
      if (biases_) side->bias = initial_biases(side->n);
    }
  }

  void run_epoch(int) override {
    solve(users_, items_);
    solve(items_, users_);
  }

  double train_loss() override;

  const Model& model() override {
    model_.describe(options_, users_.n, items_.n, biases_, global_mean_);
    copy_factors(users_, model_.user_factors);
    copy_factors(items_, model_.item_factors);
    model_.user_bias = users_.bias;
    model_.item_bias = items_.bias;
    return model_;
  }

 private:
  void copy_factors(const Side& side, std::vector<float>& out) const {
    out.resize(static_cast<size_t>(side.n * rank_));
    for (int64_t i = 0; i < side.n; ++i) {
      std::copy_n(side.factors.begin() + i * side.stride, rank_, out.begin() + i * rank_);
    }
  }

  float regularization(const Side& side, int64_t count) const {
    const double scale =
        options_.regularization == SFAC_REG_WEIGHTED ? static_cast<double>(count) : 1.0;
    return static_cast<float>(side.lambda * scale);
  }

  // Solves every row of `self` with `other` fixed.
  void solve(Side& self, const Side& other);
  // Row i of `self`, with the scratch of the calling thread.
  void solve_row(Side& self, const Side& other, const std::vector<float>& g, float alpha,
                 int64_t i, host::RowSolver& solver, std::vector<float>& weights,
                 std::vector<float>& targets, std::vector<float>& x);

  // Y^T Y of a side's factors (rank x rank, upper triangle), for implicit feedback.
  std::vector<float> gram(const Side& side) const {
    std::vector<float> g(static_cast<size_t>(rank_ * rank_), 0.0f);
    host::ScopedBlasThreads blas(threads_);
    cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, static_cast<int>(rank_),
                static_cast<int>(side.n), 1.0f, side.factors.data(), static_cast<int>(side.stride),
                0.0f, g.data(), static_cast<int>(rank_));
    return g;
  }

  TrainOptions options_;
  const CsrPattern& pattern_;
  int threads_;
  bool implicit_;
  bool biases_;
  int64_t rank_;
  float global_mean_ = 0.0f;
  std::vector<float> csr_values_, csc_values_;
  Side users_, items_;
  Model model_;
};

void CpuAlsTrainer::solve(Side& self, const Side& other) {
  const std::vector<float> g = implicit_ ? gram(other) : std::vector<float>();
  const int64_t d = biases_ ? rank_ + 1 : rank_;
  const float alpha = static_cast<float>(options_.implicit_alpha);
  host::ScopedBlasThreads single(1);
  // A rank too large for memory fails in the per-thread solver's allocation, inside the region.
  host::ParallelErrors errors;
#pragma omp parallel num_threads(threads_)
  {
    std::optional<host::RowSolver> solver;
    std::vector<float> weights, targets, x;
    errors.run([&] {
      solver.emplace(d);
      x.resize(static_cast<size_t>(d));
    });
#pragma omp for schedule(dynamic, 64)
    for (int64_t i = 0; i < self.n; ++i) {
      errors.run([&] { solve_row(self, other, g, alpha, i, *solver, weights, targets, x); });
    }
  }
  errors.rethrow();
}

void CpuAlsTrainer::solve_row(Side& self, const Side& other, const std::vector<float>& g,
                              float alpha, int64_t i, host::RowSolver& solver,
                              std::vector<float>& weights, std::vector<float>& targets,
                              std::vector<float>& x) {
  const int64_t begin = self.offsets[i], count = self.offsets[i + 1] - begin;
  float* row = self.factors.data() + i * self.stride;
  if (count == 0) {
    // No data: the regularized optimum is zero (also for implicit feedback, where b = 0).
    std::fill(row, row + rank_, 0.0f);
    if (biases_) self.bias[i] = 0.0f;
    return;
  }
  const int32_t* cols = self.others + begin;
  const float* r = self.values + begin;
  weights.resize(static_cast<size_t>(count));
  targets.resize(static_cast<size_t>(count));
  for (int64_t j = 0; j < count; ++j) {
    if (implicit_) {
      weights[j] = alpha * r[j];
      targets[j] = r[j] > 0.0f ? 1.0f + alpha * r[j] : 0.0f;
    } else {
      targets[j] = r[j] - (biases_ ? global_mean_ + other.bias[cols[j]] : 0.0f);
    }
  }
  host::RowSystem sys;
  sys.gram = implicit_ ? g.data() : nullptr;
  sys.factors = other.factors.data();
  sys.stride = other.stride;
  sys.d = static_cast<int64_t>(x.size());
  sys.cols = cols;
  sys.weights = implicit_ ? weights.data() : nullptr;
  sys.targets = targets.data();
  sys.count = count;
  sys.reg = regularization(self, count);
  std::copy_n(row, rank_, x.begin());
  if (biases_) x[rank_] = self.bias[i];
  if (options_.solver == SFAC_SOLVER_CG) {
    solver.solve_cg(sys, x.data(), options_.cg_steps);
  } else {
    solver.solve_cholesky(sys, x.data());
  }
  round_to_storage(x.data(), rank_, options_.factor_dtype);
  std::copy_n(x.begin(), rank_, row);
  if (biases_) self.bias[i] = x[rank_];
}

double CpuAlsTrainer::train_loss() {
  const float alpha = static_cast<float>(options_.implicit_alpha);
  double data = 0.0, reg = 0.0;
  // Data term over the observed cells (for implicit feedback: the correction to the all-cells
  // baseline sum_u x_u^T (Y^T Y) x_u added below).
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 256) reduction(+ : data, reg)
  for (int64_t u = 0; u < users_.n; ++u) {
    const float* x = users_.factors.data() + u * users_.stride;
    const int64_t begin = users_.offsets[u], end = users_.offsets[u + 1];
    for (int64_t e = begin; e < end; ++e) {
      const int32_t i = users_.others[e];
      const float* y = items_.factors.data() + int64_t{i} * items_.stride;
      double d = 0.0;
      for (int64_t t = 0; t < rank_; ++t) d += double{x[t]} * y[t];
      const double r = users_.values[e];
      if (implicit_) {
        const double c = 1.0 + alpha * r, p = r > 0 ? 1.0 : 0.0;
        data += c * (p - d) * (p - d) - d * d;
      } else {
        if (biases_) d += global_mean_ + users_.bias[u] + items_.bias[i];
        data += (r - d) * (r - d);
      }
    }
    double norm = 0.0;
    for (int64_t t = 0; t < rank_; ++t) norm += double{x[t]} * x[t];
    if (biases_) norm += double{users_.bias[u]} * users_.bias[u];
    reg += regularization(users_, end - begin) * norm;
  }
  for (int64_t i = 0; i < items_.n; ++i) {
    const float* y = items_.factors.data() + i * items_.stride;
    double norm = 0.0;
    for (int64_t t = 0; t < rank_; ++t) norm += double{y[t]} * y[t];
    if (biases_) norm += double{items_.bias[i]} * items_.bias[i];
    reg += regularization(items_, items_.offsets[i + 1] - items_.offsets[i]) * norm;
  }
  if (implicit_) {
    const std::vector<float> g = gram(items_);
    double all_cells = 0.0;
#pragma omp parallel for num_threads(threads_) reduction(+ : all_cells)
    for (int64_t u = 0; u < users_.n; ++u) {
      const float* x = users_.factors.data() + u * users_.stride;
      for (int64_t a = 0; a < rank_; ++a) {
        double row = double{g[a * rank_ + a]} * x[a];
        for (int64_t b = a + 1; b < rank_; ++b) row += 2.0 * g[a * rank_ + b] * x[b];
        all_cells += row * x[a];
      }
    }
    data += all_cells;
  }
  const auto nnz = static_cast<double>(std::max<int64_t>(pattern_.nnz(), 1));
  return (data + reg) / nnz;
}

}  // namespace

std::unique_ptr<Trainer> make_als_trainer(const CpuSparseMatrix& ratings,
                                          const TrainOptions& options, uint64_t seed,
                                          int num_threads) {
  return std::make_unique<CpuAlsTrainer>(ratings, options, seed, num_threads);
}

}  // namespace sfac::cpu
