#include <cmath>
#include <limits>

#include "capi/guard.h"
#include "capi/handles.h"
#include "core/training.h"

using sfac::capi::checked;
using sfac::capi::require_pointer;

namespace {

std::unique_ptr<sfac_model> snapshot(sfac_trainer& t) {
  auto model = std::make_unique<sfac_model>();
  model->backend = t.backend;
  model->impl = t.impl->model();
  return model;
}

std::unique_ptr<sfac_trainer> make_trainer(sfac_context& ctx, const sfac_sparse& ratings,
                                           const sfac::TrainOptions& options) {
  auto t = std::make_unique<sfac_trainer>();
  t->backend = ctx.impl.backend;
  t->ratings = ratings.impl;
  t->options = options;
  t->impl = sfac::start_training(*t->backend, *t->ratings, t->options, ctx.impl.seed);
  t->loss = std::numeric_limits<double>::quiet_NaN();
  return t;
}

}  // namespace

extern "C" {

sfac_status sfac_train_options_create(sfac_algorithm algorithm, sfac_train_options** out) {
  SFAC_API_BEGIN
  require_pointer(out, "out");
  auto options = std::make_unique<sfac_train_options>();
  options->impl = sfac::TrainOptions::defaults(algorithm);
  *out = options.release();
  SFAC_API_END
}

sfac_status sfac_train_options_destroy(sfac_train_options* options) {
  SFAC_API_BEGIN
  sfac::capi::destroy(options, "options");
  SFAC_API_END
}

sfac_status sfac_train_options_set_int(sfac_train_options* options, sfac_option option,
                                       int64_t value) {
  SFAC_API_BEGIN
  checked(options, "options").impl.set_int(option, value);
  SFAC_API_END
}

sfac_status sfac_train_options_set_double(sfac_train_options* options, sfac_option option,
                                          double value) {
  SFAC_API_BEGIN
  checked(options, "options").impl.set_double(option, value);
  SFAC_API_END
}

sfac_status sfac_train_options_get_int(const sfac_train_options* options, sfac_option option,
                                       int64_t* out) {
  SFAC_API_BEGIN
  const auto& o = checked(options, "options").impl;
  require_pointer(out, "out");
  *out = o.get_int(option);
  SFAC_API_END
}

sfac_status sfac_train_options_get_double(const sfac_train_options* options, sfac_option option,
                                          double* out) {
  SFAC_API_BEGIN
  const auto& o = checked(options, "options").impl;
  require_pointer(out, "out");
  *out = o.get_double(option);
  SFAC_API_END
}

sfac_status sfac_train_options_set_validation(sfac_train_options* options,
                                              const sfac_sparse* validation) {
  SFAC_API_BEGIN
  auto& o = checked(options, "options").impl;
  o.validation = validation ? checked(validation, "validation").impl : nullptr;
  SFAC_API_END
}

sfac_status sfac_train_options_set_callback(sfac_train_options* options,
                                            sfac_epoch_callback callback, void* user_data) {
  SFAC_API_BEGIN
  auto& o = checked(options, "options").impl;
  o.callback = callback;
  o.callback_user_data = user_data;
  SFAC_API_END
}

sfac_status sfac_train(sfac_context* ctx, const sfac_sparse* ratings,
                       const sfac_train_options* options, sfac_model** out) {
  SFAC_API_BEGIN
  auto& c = checked(ctx, "ctx");
  const auto& r = checked(ratings, "ratings");
  const auto& o = checked(options, "options").impl;
  require_pointer(out, "out");
  auto trainer = make_trainer(c, r, o);
  sfac::run_epochs(*trainer->impl, trainer->options, trainer->options.iterations,
                   &trainer->epochs_done, trainer->backend->num_threads());
  *out = snapshot(*trainer).release();
  SFAC_API_END
}

sfac_status sfac_trainer_create(sfac_context* ctx, const sfac_sparse* ratings,
                                const sfac_train_options* options, sfac_trainer** out) {
  SFAC_API_BEGIN
  auto& c = checked(ctx, "ctx");
  const auto& r = checked(ratings, "ratings");
  const auto& o = checked(options, "options").impl;
  require_pointer(out, "out");
  *out = make_trainer(c, r, o).release();
  SFAC_API_END
}

sfac_status sfac_trainer_destroy(sfac_trainer* trainer) {
  SFAC_API_BEGIN
  sfac::capi::destroy(trainer, "trainer");
  SFAC_API_END
}

sfac_status sfac_trainer_run(sfac_trainer* trainer, int epochs, int* epochs_done) {
  SFAC_API_BEGIN
  auto& t = checked(trainer, "trainer");
  SFAC_REQUIRE(epochs >= 0, SFAC_ERR_INVALID_ARGUMENT, "epochs = ", epochs, " must be >= 0");
  sfac::run_epochs(*t.impl, t.options, epochs, &t.epochs_done, t.backend->num_threads());
  if (epochs > 0) t.loss_current = false;  // computed on demand: it costs a pass over the data
  if (epochs_done) *epochs_done = static_cast<int>(t.epochs_done);
  SFAC_API_END
}

sfac_status sfac_trainer_get_loss(sfac_trainer* trainer, double* out) {
  SFAC_API_BEGIN
  auto& t = checked(trainer, "trainer");
  require_pointer(out, "out");
  if (!t.loss_current && t.epochs_done > 0) {
    t.loss = t.impl->train_loss();
    t.loss_current = true;
  }
  *out = t.loss;
  SFAC_API_END
}

sfac_status sfac_trainer_get_model(sfac_trainer* trainer, sfac_model** out) {
  SFAC_API_BEGIN
  auto& t = checked(trainer, "trainer");
  require_pointer(out, "out");
  *out = snapshot(t).release();
  SFAC_API_END
}

}  // extern "C"
