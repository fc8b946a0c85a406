// The training loop shared by every backend: epochs, loss, validation, callback, early stop.
#pragma once

#include <memory>

#include "core/backend.h"
#include "core/trainer.h"

namespace sfac {

// Validates the ratings/options pair and creates the backend's trainer.
std::unique_ptr<Trainer> start_training(Backend& backend, const SparseMatrix& ratings,
                                        const TrainOptions& options, uint64_t seed);

// Runs up to `epochs` more epochs, numbering them after `*epochs_done` (updated), and reports
// each to the options' callback. Returns false when the callback asked to stop.
bool run_epochs(Trainer& trainer, const TrainOptions& options, int64_t epochs, int64_t* epochs_done,
                int num_threads);

}  // namespace sfac
