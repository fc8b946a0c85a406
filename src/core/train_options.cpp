#include "core/train_options.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace sfac {
namespace {

bool is_double_option(sfac_option option) {
  switch (option) {
    case SFAC_OPT_LAMBDA:
    case SFAC_OPT_LAMBDA_USER:
    case SFAC_OPT_LAMBDA_ITEM:
    case SFAC_OPT_INIT_SCALE:
    case SFAC_OPT_IMPLICIT_ALPHA:
    case SFAC_OPT_SGD_LEARNING_RATE:
    case SFAC_OPT_SGD_DECAY:
      return true;
    default:
      return false;
  }
}

bool is_int_option(sfac_option option) {
  switch (option) {
    case SFAC_OPT_RANK:
    case SFAC_OPT_ITERATIONS:
    case SFAC_OPT_USE_BIASES:
    case SFAC_OPT_DETERMINISTIC:
    case SFAC_OPT_DEVICE_MEMORY_LIMIT:
    case SFAC_OPT_FACTOR_DTYPE:
    case SFAC_OPT_ALS_REGULARIZATION:
    case SFAC_OPT_ALS_SOLVER:
    case SFAC_OPT_ALS_CG_STEPS:
    case SFAC_OPT_ALS_REORDER:
    case SFAC_OPT_SGD_SCALE_RATINGS:
    case SFAC_OPT_SGD_WORKERS:
    case SFAC_OPT_SGD_SCHEDULE:
      return true;
    default:
      return false;
  }
}

void require_known(sfac_option option) {
  SFAC_REQUIRE(is_int_option(option) || is_double_option(option), SFAC_ERR_UNSUPPORTED,
               "unknown training option ", static_cast<int>(option));
}

// "SFAC_OPT_RANK (option 1)": messages name the option as the header spells it.
std::string option_label(sfac_option option) {
  const char* name = "";
  switch (option) {
    case SFAC_OPT_RANK:
      name = "SFAC_OPT_RANK";
      break;
    case SFAC_OPT_ITERATIONS:
      name = "SFAC_OPT_ITERATIONS";
      break;
    case SFAC_OPT_LAMBDA:
      name = "SFAC_OPT_LAMBDA";
      break;
    case SFAC_OPT_LAMBDA_USER:
      name = "SFAC_OPT_LAMBDA_USER";
      break;
    case SFAC_OPT_LAMBDA_ITEM:
      name = "SFAC_OPT_LAMBDA_ITEM";
      break;
    case SFAC_OPT_USE_BIASES:
      name = "SFAC_OPT_USE_BIASES";
      break;
    case SFAC_OPT_INIT_SCALE:
      name = "SFAC_OPT_INIT_SCALE";
      break;
    case SFAC_OPT_DETERMINISTIC:
      name = "SFAC_OPT_DETERMINISTIC";
      break;
    case SFAC_OPT_DEVICE_MEMORY_LIMIT:
      name = "SFAC_OPT_DEVICE_MEMORY_LIMIT";
      break;
    case SFAC_OPT_FACTOR_DTYPE:
      name = "SFAC_OPT_FACTOR_DTYPE";
      break;
    case SFAC_OPT_ALS_REGULARIZATION:
      name = "SFAC_OPT_ALS_REGULARIZATION";
      break;
    case SFAC_OPT_ALS_SOLVER:
      name = "SFAC_OPT_ALS_SOLVER";
      break;
    case SFAC_OPT_ALS_CG_STEPS:
      name = "SFAC_OPT_ALS_CG_STEPS";
      break;
    case SFAC_OPT_IMPLICIT_ALPHA:
      name = "SFAC_OPT_IMPLICIT_ALPHA";
      break;
    case SFAC_OPT_ALS_REORDER:
      name = "SFAC_OPT_ALS_REORDER";
      break;
    case SFAC_OPT_SGD_LEARNING_RATE:
      name = "SFAC_OPT_SGD_LEARNING_RATE";
      break;
    case SFAC_OPT_SGD_DECAY:
      name = "SFAC_OPT_SGD_DECAY";
      break;
    case SFAC_OPT_SGD_SCALE_RATINGS:
      name = "SFAC_OPT_SGD_SCALE_RATINGS";
      break;
    case SFAC_OPT_SGD_WORKERS:
      name = "SFAC_OPT_SGD_WORKERS";
      break;
    case SFAC_OPT_SGD_SCHEDULE:
      name = "SFAC_OPT_SGD_SCHEDULE";
      break;
  }
  return std::string(name) + " (option " + std::to_string(static_cast<int>(option)) + ")";
}

void require_range(bool ok, sfac_option option, double value, const char* range) {
  SFAC_REQUIRE(ok, SFAC_ERR_INVALID_ARGUMENT, option_label(option), " = ", value,
               " is out of range: must be ", range);
}

}  // namespace

TrainOptions TrainOptions::defaults(sfac_algorithm algorithm) {
  TrainOptions o;
  o.algorithm = algorithm;
  switch (algorithm) {
    case SFAC_ALGO_ALS:
      break;
    case SFAC_ALGO_IALS:
      o.lambda_user = o.lambda_item = 0.01;
      o.regularization = SFAC_REG_PLAIN;
      break;
    case SFAC_ALGO_SGD:
      o.iterations = 20;
      o.init_scale = 1.0;
      break;
    default:
      fail(SFAC_ERR_INVALID_ARGUMENT, "unknown algorithm ", static_cast<int>(algorithm));
  }
  return o;
}

void TrainOptions::set_int(sfac_option option, int64_t value) {
  require_known(option);
  SFAC_REQUIRE(is_int_option(option), SFAC_ERR_INVALID_ARGUMENT, "option ",
               static_cast<int>(option), " takes a double: use sfac_train_options_set_double");
  const auto v = static_cast<double>(value);
  switch (option) {
    case SFAC_OPT_RANK:
      require_range(value >= 1 && value <= 65536, option, v, "in [1, 65536]");
      rank = value;
      break;
    case SFAC_OPT_ITERATIONS:
      require_range(value >= 0 && value <= 1000000, option, v, "in [0, 1000000]");
      iterations = value;
      break;
    case SFAC_OPT_DEVICE_MEMORY_LIMIT:
      require_range(value >= 0, option, v, ">= 0 (bytes; 0 = automatic)");
      device_memory_limit = value;
      break;
    case SFAC_OPT_FACTOR_DTYPE:
      require_range(value == SFAC_DTYPE_FLOAT32 || value == SFAC_DTYPE_FLOAT16 ||
                        value == SFAC_DTYPE_BFLOAT16,
                    option, v, "SFAC_DTYPE_FLOAT32, SFAC_DTYPE_FLOAT16 or SFAC_DTYPE_BFLOAT16");
      factor_dtype = static_cast<sfac_dtype>(value);
      break;
    case SFAC_OPT_USE_BIASES:
    case SFAC_OPT_DETERMINISTIC:
    case SFAC_OPT_SGD_SCALE_RATINGS:
      require_range(value == 0 || value == 1, option, v, "0 or 1");
      (option == SFAC_OPT_USE_BIASES      ? use_biases
       : option == SFAC_OPT_DETERMINISTIC ? deterministic
                                          : scale_ratings) = value == 1;
      break;
    case SFAC_OPT_ALS_REGULARIZATION:
      require_range(value == SFAC_REG_PLAIN || value == SFAC_REG_WEIGHTED, option, v,
                    "SFAC_REG_PLAIN or SFAC_REG_WEIGHTED");
      regularization = static_cast<sfac_regularization>(value);
      break;
    case SFAC_OPT_ALS_SOLVER:
      require_range(value == SFAC_SOLVER_CHOLESKY || value == SFAC_SOLVER_CG, option, v,
                    "SFAC_SOLVER_CHOLESKY or SFAC_SOLVER_CG");
      solver = static_cast<sfac_solver>(value);
      break;
    case SFAC_OPT_ALS_CG_STEPS:
      require_range(value >= 1 && value <= 1000, option, v, "in [1, 1000]");
      cg_steps = value;
      break;
    case SFAC_OPT_ALS_REORDER:
      require_range(
          value == SFAC_REORDER_NONE || value == SFAC_REORDER_DEGREE || value == SFAC_REORDER_AUTO,
          option, v, "SFAC_REORDER_NONE, SFAC_REORDER_DEGREE or SFAC_REORDER_AUTO");
      reorder = static_cast<sfac_reorder>(value);
      break;
    case SFAC_OPT_SGD_WORKERS:
      require_range(value >= 0 && value <= (int64_t{1} << 24), option, v,
                    "in [0, 2^24] (0 = automatic)");
      sgd_workers = value;
      break;
    case SFAC_OPT_SGD_SCHEDULE:
      require_range(value == SFAC_SGD_HOGWILD || value == SFAC_SGD_WAVEFRONT, option, v,
                    "SFAC_SGD_HOGWILD or SFAC_SGD_WAVEFRONT");
      sgd_schedule = static_cast<sfac_sgd_schedule>(value);
      break;
    default:
      break;
  }
}

void TrainOptions::set_double(sfac_option option, double value) {
  require_known(option);
  SFAC_REQUIRE(is_double_option(option), SFAC_ERR_INVALID_ARGUMENT, "option ",
               static_cast<int>(option), " takes an integer: use sfac_train_options_set_int");
  SFAC_REQUIRE(std::isfinite(value), SFAC_ERR_INVALID_VALUE, option_label(option), " = ", value,
               " is not finite");
  switch (option) {
    case SFAC_OPT_LAMBDA:
      require_range(value >= 0, option, value, ">= 0");
      lambda_user = lambda_item = value;
      break;
    case SFAC_OPT_LAMBDA_USER:
      require_range(value >= 0, option, value, ">= 0");
      lambda_user = value;
      break;
    case SFAC_OPT_LAMBDA_ITEM:
      require_range(value >= 0, option, value, ">= 0");
      lambda_item = value;
      break;
    case SFAC_OPT_INIT_SCALE:
      require_range(value > 0, option, value, "> 0");
      init_scale = value;
      break;
    case SFAC_OPT_IMPLICIT_ALPHA:
      require_range(value >= 0, option, value, ">= 0");
      implicit_alpha = value;
      break;
    case SFAC_OPT_SGD_LEARNING_RATE:
      require_range(value > 0, option, value, "> 0");
      learning_rate = value;
      break;
    case SFAC_OPT_SGD_DECAY:
      require_range(value >= 0, option, value, ">= 0");
      decay = value;
      break;
    default:
      break;
  }
}

int64_t TrainOptions::get_int(sfac_option option) const {
  require_known(option);
  SFAC_REQUIRE(is_int_option(option), SFAC_ERR_INVALID_ARGUMENT, "option ",
               static_cast<int>(option), " is a double: use sfac_train_options_get_double");
  switch (option) {
    case SFAC_OPT_RANK:
      return rank;
    case SFAC_OPT_ITERATIONS:
      return iterations;
    case SFAC_OPT_DEVICE_MEMORY_LIMIT:
      return device_memory_limit;
    case SFAC_OPT_FACTOR_DTYPE:
      return factor_dtype;
    case SFAC_OPT_USE_BIASES:
      return use_biases;
    case SFAC_OPT_DETERMINISTIC:
      return deterministic;
    case SFAC_OPT_SGD_SCALE_RATINGS:
      return scale_ratings;
    case SFAC_OPT_ALS_REGULARIZATION:
      return regularization;
    case SFAC_OPT_ALS_SOLVER:
      return solver;
    case SFAC_OPT_ALS_CG_STEPS:
      return cg_steps;
    case SFAC_OPT_ALS_REORDER:
      return reorder;
    case SFAC_OPT_SGD_WORKERS:
      return sgd_workers;
    case SFAC_OPT_SGD_SCHEDULE:
      return sgd_schedule;
    default:
      return 0;
  }
}

double TrainOptions::get_double(sfac_option option) const {
  require_known(option);
  SFAC_REQUIRE(is_double_option(option), SFAC_ERR_INVALID_ARGUMENT, "option ",
               static_cast<int>(option), " is an integer: use sfac_train_options_get_int");
  switch (option) {
    case SFAC_OPT_LAMBDA:
      SFAC_REQUIRE(lambda_user == lambda_item, SFAC_ERR_INVALID_ARGUMENT,
                   "LAMBDA_USER and LAMBDA_ITEM differ: query them one by one");
      return lambda_user;
    case SFAC_OPT_LAMBDA_USER:
      return lambda_user;
    case SFAC_OPT_LAMBDA_ITEM:
      return lambda_item;
    case SFAC_OPT_INIT_SCALE:
      return init_scale;
    case SFAC_OPT_IMPLICIT_ALPHA:
      return implicit_alpha;
    case SFAC_OPT_SGD_LEARNING_RATE:
      return learning_rate;
    case SFAC_OPT_SGD_DECAY:
      return decay;
    default:
      return 0;
  }
}

}  // namespace sfac
