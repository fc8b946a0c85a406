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
  // The current factors (a CUDA trainer downloads them first).
  virtual const Model& model() = 0;
  // Whether every factor and bias is finite: the divergence check after an epoch that nobody
  // asked the loss of. The default reads model(); trainers whose model() copies override it.
  virtual bool factors_finite();
};

}  // namespace sfac
