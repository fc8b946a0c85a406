// A backend's training state for one algorithm; the core's training loop drives it epoch by
// epoch (reporting, validation, callbacks and early stopping live in the loop, not here).
#pragma once

#include "core/model.h"
#include "core/train_options.h"

namespace sfac {

class Trainer {
 public:
  virtual ~Trainer() = default;
  // One full pass (an ALS sweep over users then items, or an SGD epoch). epoch counts from 1.
  virtual void run_epoch(int epoch) = 0;
  // The objective on the training data, regularization included, per training rating.
  virtual double train_loss() = 0;
  // The current factors (a CUDA trainer downloads them first). The training loop never calls
  // it itself: it is called when the caller asks for the model (a snapshot: sfac_train's result,
  // sfac_trainer_get_model) and by the defaults below, which a trainer whose model() copies
  // overrides so that epochs never pay for it.
  virtual const Model& model() = 0;
  // Whether every factor and bias is finite: the divergence check after an epoch that nobody
  // asked the loss of. The default reads model().
  virtual bool factors_finite();
  // The RMSE of the current model on `validation` (same shape as the training ratings, of the
  // trainer's backend), after each epoch that has a callback. The default evaluates model() on
  // the host (evaluate in model_ops.h), pulling the validation matrix there too; a trainer on a
  // device overrides it to compute where its factors are.
  virtual double validation_rmse(const SparseMatrix& validation, int num_threads);
};

}  // namespace sfac
