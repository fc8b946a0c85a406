// A trained factorization: factors, optional biases, and what fold-in needs to solve for new
// users the way training did. Host resident; its backend may keep a copy for inference.
#pragma once

#include <cstdint>
#include <vector>

#include "core/resident_model.h"
#include "core/train_options.h"
#include "sparsefac/sparsefac.h"

namespace sfac {

struct Model {
  sfac_algorithm algorithm = SFAC_ALGO_ALS;
  int64_t users = 0;
  int64_t items = 0;
  int64_t rank = 0;
  std::vector<float> user_factors;  // users x rank, row-major
  std::vector<float> item_factors;  // items x rank, row-major

  bool has_biases = false;
  float global_mean = 0.0f;
  std::vector<float> user_bias;  // users entries when has_biases
  std::vector<float> item_bias;  // items entries when has_biases

  // Regularization used in training; fold-in solves with the same.
  double lambda_user = 0.0;
  sfac_regularization regularization = SFAC_REG_PLAIN;
  double implicit_alpha = 0.0;

  // How fold-in solves (sfac_model_set_fold_in_solver): a serving setting, not saved.
  sfac_solver fold_in_solver = SFAC_SOLVER_CHOLESKY;
  int32_t fold_in_cg_steps = 3;

  // The serving backend's copy of the factors and biases (a CUDA context's: on the device),
  // built on the first inference call. Whatever changes the factors or biases of a model that
  // serves calls (set_*_factors, fold-in) calls resident.reset(), or later calls would be served
  // from the old ones; a trainer's own model never serves (models leave it as copies, and a copy
  // starts without one). Mutable: built by const (inference) calls.
  mutable ResidentCache resident;

  const float* user(int64_t u) const { return user_factors.data() + u * rank; }
  const float* item(int64_t i) const { return item_factors.data() + i * rank; }

  // Everything but the factors and biases, as a trainer with `options` describes its model.
  void describe(const TrainOptions& options, int64_t n_users, int64_t n_items, bool biases,
                float mean) {
    algorithm = options.algorithm;
    users = n_users;
    items = n_items;
    rank = options.rank;
    has_biases = biases;
    global_mean = mean;
    lambda_user = options.lambda_user;
    regularization = options.regularization;
    implicit_alpha = options.algorithm == SFAC_ALGO_IALS ? options.implicit_alpha : 0.0;
  }

  float predict(int64_t u, int64_t i) const {
    const float* x = user(u);
    const float* y = item(i);
    float dot = 0.0f;
    for (int64_t t = 0; t < rank; ++t) dot += x[t] * y[t];
    if (has_biases) dot += global_mean + user_bias[u] + item_bias[i];
    return dot;
  }
};

}  // namespace sfac
