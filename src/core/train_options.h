// Training options: one struct with the defaults of each algorithm, set by sfac_option value.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sparsefac/sparsefac.h"

namespace sfac {

class SparseMatrix;

struct TrainOptions {
  sfac_algorithm algorithm = SFAC_ALGO_ALS;
  int64_t rank = 32;
  int64_t iterations = 15;
  double lambda_user = 0.05;
  double lambda_item = 0.05;
  bool use_biases = false;
  double init_scale = 0.1;
  bool deterministic = false;
  int64_t device_memory_limit = 0;  // bytes; 0 = automatic
  sfac_dtype factor_dtype = SFAC_DTYPE_FLOAT32;  // ALS storage of factors between solves
  sfac_regularization regularization = SFAC_REG_WEIGHTED;
  sfac_solver solver = SFAC_SOLVER_CHOLESKY;
  int64_t cg_steps = 3;
  double implicit_alpha = 40.0;
  sfac_reorder reorder = SFAC_REORDER_AUTO;  // ALS and IALS
  double learning_rate = 0.08;
  double decay = 0.3;
  bool scale_ratings = true;
  int64_t sgd_workers = 0;  // CUDA SGD's concurrent workers; 0 = automatic
  sfac_sgd_schedule sgd_schedule = SFAC_SGD_HOGWILD;  // CUDA SGD

  // Set by the core when a trainer works on renumbered ratings (core/training.cpp), not by
  // callers: row r of the ratings it sees is the caller's user users[r], column c item items[c].
  // Trainers draw their starting factors by those ids, so the start does not depend on the
  // numbering.
  struct Renumbering {
    std::vector<int32_t> users, items;
  };
  std::shared_ptr<const Renumbering> renumbering;

  std::shared_ptr<const SparseMatrix> validation;
  sfac_epoch_callback callback = nullptr;
  void* callback_user_data = nullptr;

  static TrainOptions defaults(sfac_algorithm algorithm);

  // Throw SFAC_ERR_UNSUPPORTED for unknown options, SFAC_ERR_INVALID_ARGUMENT for values out of
  // range or of the wrong kind (an integer option set as double and vice versa).
  void set_int(sfac_option option, int64_t value);
  void set_double(sfac_option option, double value);
  int64_t get_int(sfac_option option) const;
  double get_double(sfac_option option) const;
};

}  // namespace sfac
