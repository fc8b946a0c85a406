#include "core/training.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/model_ops.h"
#include "core/reordered_trainer.h"

namespace sfac {

bool Trainer::factors_finite() {
  const Model& m = model();
  auto finite = [](const std::vector<float>& v) {
    for (float x : v) {
      if (!std::isfinite(x)) return false;
    }
    return true;
  };
  return finite(m.user_factors) && finite(m.item_factors) && finite(m.user_bias) &&
         finite(m.item_bias) && std::isfinite(m.global_mean);
}

double Trainer::validation_rmse(const SparseMatrix& validation, int num_threads) {
  return evaluate(model(), validation, num_threads).rmse;
}

namespace {

// A host backend's trainer standing in for a device backend's (Backend::host_fallback), on a
// host copy of the ratings that lives as long as the trainer.
class HostFallbackTrainer final : public Trainer {
 public:
  HostFallbackTrainer(Backend& host, const SparseMatrix& ratings, const TrainOptions& options,
                      uint64_t seed)
      : ratings_(host.make_sparse(download_host_csr(ratings))),
        trainer_(host.make_trainer(*ratings_, options, seed)) {}

  void run_epoch(int epoch) override { trainer_->run_epoch(epoch); }
  double train_loss() override { return trainer_->train_loss(); }
  const Model& model() override { return trainer_->model(); }
  bool factors_finite() override { return trainer_->factors_finite(); }
  double validation_rmse(const SparseMatrix& validation, int num_threads) override {
    return trainer_->validation_rmse(validation, num_threads);
  }

 private:
  std::unique_ptr<SparseMatrix> ratings_;  // before trainer_: the trainer may read it
  std::unique_ptr<Trainer> trainer_;
};

// The backend's trainer, or its host fallback's where it declines the options.
std::unique_ptr<Trainer> make_trainer(Backend& backend, const SparseMatrix& ratings,
                                      const TrainOptions& options, uint64_t seed) {
  const std::shared_ptr<Backend>& host = backend.host_fallback();
  if (!host) return backend.make_trainer(ratings, options, seed);
  try {
    return backend.make_trainer(ratings, options, seed);
  } catch (const Error& e) {
    if (e.status() != SFAC_ERR_UNSUPPORTED) throw;
  }
  return std::make_unique<HostFallbackTrainer>(*host, ratings, options, seed);
}

}  // namespace

std::unique_ptr<Trainer> start_training(Backend& backend, const SparseMatrix& ratings,
                                        const TrainOptions& options, uint64_t seed) {
  SFAC_REQUIRE(backend.trains_from(ratings, options), SFAC_ERR_INVALID_ARGUMENT,
               "ratings belong to a context with another backend or device");
  if (options.validation) {
    const SparseMatrix& v = *options.validation;
    SFAC_REQUIRE(v.rows() == ratings.rows() && v.cols() == ratings.cols(), SFAC_ERR_SHAPE_MISMATCH,
                 "validation matrix is ", v.rows(), " x ", v.cols(),
                 " but the training ratings are ", ratings.rows(), " x ", ratings.cols());
  }
  if (reorders_ratings(backend, ratings, options)) {
    return make_reordered_trainer(ratings, options,
                                  [&](const SparseMatrix& renumbered, const TrainOptions& inner) {
                                    return make_trainer(backend, renumbered, inner, seed);
                                  });
  }
  return make_trainer(backend, ratings, options, seed);
}

bool run_epochs(Trainer& trainer, const TrainOptions& options, int64_t epochs, int64_t* epochs_done,
                int num_threads) {
  using Clock = std::chrono::steady_clock;
  for (int64_t n = 0; n < epochs; ++n) {
    const int epoch = static_cast<int>(++*epochs_done);
    const auto start = Clock::now();
    trainer.run_epoch(epoch);
    // The loss costs a pass over the ratings (as much as an SGD epoch): compute it only for a
    // callback; otherwise divergence shows as non-finite factors, an O((users + items) k) check.
    if (options.callback == nullptr) {
      SFAC_REQUIRE(trainer.factors_finite(), SFAC_ERR_NOT_CONVERGED, "training diverged in epoch ",
                   epoch, " (non-finite factors); lower the learning rate or raise lambda");
      continue;
    }
    const double loss = trainer.train_loss();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    SFAC_REQUIRE(std::isfinite(loss), SFAC_ERR_NOT_CONVERGED, "training diverged in epoch ", epoch,
                 " (loss = ", loss, "); lower the learning rate or raise lambda");
    const double validation_rmse = options.validation
                                       ? trainer.validation_rmse(*options.validation, num_threads)
                                       : std::numeric_limits<double>::quiet_NaN();
    const int verdict =
        options.callback(epoch, loss, validation_rmse, seconds, options.callback_user_data);
    SFAC_REQUIRE(verdict >= 0, SFAC_ERR_CALLBACK, "the epoch callback returned ", verdict,
                 " after epoch ", epoch, ": training aborted");
    if (verdict > 0) return false;
  }
  return true;
}

}  // namespace sfac
