#include "core/reordered_trainer.h"

#include <utility>
#include <vector>

#include "core/row_permutation.h"

namespace sfac {
namespace {

// Trainer row r back to the caller's row order[r]. Biases are empty without biases.
void undo_row_order(std::vector<float>& rows, const std::vector<int32_t>& order, int64_t width) {
  if (rows.empty()) return;
  rows = scatter_rows(rows, order.data(), static_cast<int64_t>(order.size()), width);
}

class ReorderedTrainer final : public Trainer {
 public:
  ReorderedTrainer(const SparseMatrix& ratings, const TrainOptions& options,
                   const TrainerFactory& make_inner) {
    auto renumbering = std::make_shared<TrainOptions::Renumbering>();
    renumbering->users.resize(static_cast<size_t>(ratings.rows()));
    renumbering->items.resize(static_cast<size_t>(ratings.cols()));
    ratings.degree_order(SFAC_AXIS_ROWS, renumbering->users.data());
    ratings.degree_order(SFAC_AXIS_COLS, renumbering->items.data());
    order_ = renumbering;
    ratings_ = ratings.permuted(order_->users.data(), order_->items.data());
    TrainOptions inner = options;
    inner.renumbering = std::move(renumbering);
    if (options.validation) {
      validation_source_ = options.validation.get();
      validation_ = permute(*options.validation);
      inner.validation = validation_;
    }
    trainer_ = make_inner(*ratings_, inner);
  }

  void run_epoch(int epoch) override { trainer_->run_epoch(epoch); }
  double train_loss() override { return trainer_->train_loss(); }
  bool factors_finite() override { return trainer_->factors_finite(); }

  const Model& model() override {
    model_ = trainer_->model();
    undo_row_order(model_.user_factors, order_->users, model_.rank);
    undo_row_order(model_.item_factors, order_->items, model_.rank);
    undo_row_order(model_.user_bias, order_->users, 1);
    undo_row_order(model_.item_bias, order_->items, 1);
    return model_;
  }

  double validation_rmse(const SparseMatrix& validation, int num_threads) override {
    if (&validation != validation_source_) {
      validation_ = permute(validation);
      validation_source_ = &validation;
    }
    return trainer_->validation_rmse(*validation_, num_threads);
  }

 private:
  std::shared_ptr<const SparseMatrix> permute(const SparseMatrix& m) const {
    return m.permuted(order_->users.data(), order_->items.data());
  }

  std::shared_ptr<const TrainOptions::Renumbering> order_;
  std::unique_ptr<SparseMatrix> ratings_;  // before trainer_: the trainer may read it
  const SparseMatrix* validation_source_ = nullptr;
  std::shared_ptr<const SparseMatrix> validation_;  // validation_source_ renumbered
  std::unique_ptr<Trainer> trainer_;
  Model model_;
};

}  // namespace

bool reorders_ratings(const Backend& backend, const SparseMatrix& ratings,
                      const TrainOptions& options) {
  if (options.algorithm == SFAC_ALGO_SGD || options.renumbering || ratings.nnz() == 0) {
    return false;
  }
  return options.reorder == SFAC_REORDER_DEGREE ||
         (options.reorder == SFAC_REORDER_AUTO && backend.kind() == SFAC_BACKEND_CUDA);
}

std::unique_ptr<Trainer> make_reordered_trainer(const SparseMatrix& ratings,
                                                const TrainOptions& options,
                                                const TrainerFactory& make_inner) {
  return std::make_unique<ReorderedTrainer>(ratings, options, make_inner);
}

}  // namespace sfac
