// Training on ratings renumbered by degree (SFAC_OPT_ALS_REORDER): a backend's trainer works on a
// permuted copy, and everything the caller sees (model, loss, validation) is in the caller's
// numbering.
#pragma once

#include <functional>
#include <memory>

#include "core/backend.h"
#include "core/trainer.h"

namespace sfac {

// Makes the trainer of the renumbered copy (the core's start_training without reordering).
using TrainerFactory =
    std::function<std::unique_ptr<Trainer>(const SparseMatrix& ratings, const TrainOptions&)>;

// Whether options.reorder asks `backend` to renumber these ratings: ALS and IALS only, AUTO on
// CUDA contexts, never twice.
bool reorders_ratings(const Backend& backend, const SparseMatrix& ratings,
                      const TrainOptions& options);

// A trainer of `ratings` with users and items by degree, most ratings first.
std::unique_ptr<Trainer> make_reordered_trainer(const SparseMatrix& ratings,
                                                const TrainOptions& options,
                                                const TrainerFactory& make_inner);

}  // namespace sfac
