# Training: options are set on a native options object, the R callback is wrapped so that an R
# error stops training and comes back to the caller as the parent of the sparsefac error.

algorithm_codes <- c(als = 0L, implicit_als = 1L, sgd = 2L)
algorithm_names <- c("ALS", "implicit ALS", "SGD")

opt <- list(rank = 1L, iterations = 2L, lambda = 3L, lambda_user = 4L, lambda_item = 5L,
            use_biases = 6L, init_scale = 7L, deterministic = 8L, factor_dtype = 10L,
            regularization = 100L, solver = 101L, cg_steps = 102L, alpha = 103L,
            reorder = 104L, learning_rate = 200L, decay = 201L, scale_ratings = 202L,
            workers = 203L, schedule = 204L)
int_options <- c("rank", "iterations", "use_biases", "deterministic", "factor_dtype",
                 "regularization", "solver", "cg_steps", "reorder", "scale_ratings", "workers",
                 "schedule")
schedule_codes <- c(hogwild = 0L, wavefront = 1L)
reorder_codes <- c(none = 0L, degree = 1L, auto = 2L)

# A native options object for `algorithm` with `settings` applied. Returns the options pointer,
# the conversions that must outlive it (validation) and the environment in which a failing
# callback leaves its condition.
make_options <- function(algorithm, settings, validation, callback, ctx) {
  optr <- sfac_ok(native_train_options_create(algorithm_codes[[algorithm]]), algorithm)[[1L]]
  keep <- list()
  ok <- FALSE
  on.exit(if (!ok) native_r_close(optr))
  for (name in names(settings)) {
    value <- settings[[name]]
    if (is.null(value)) next
    if (!name %in% names(opt)) sfac_abort(sprintf("unknown training option '%s'", name))
    if (is.logical(value)) value <- as.numeric(value)
    if (!is.numeric(value) || length(value) != 1L || is.na(value)) {
      sfac_abort(sprintf("'%s' must be a single number", name))
    }
    if (name %in% int_options) {
      check_count(value, name, min = -2^53)
      sfac_ok(native_train_options_set_int(optr, opt[[name]], as.double(value)), algorithm)
    } else {
      sfac_ok(native_train_options_set_double(optr, opt[[name]], as.double(value)), algorithm)
    }
  }
  if (!is.null(validation)) {
    vm <- as_sparse_arg(validation, ctx, "validation")
    keep <- c(keep, list(vm$temp))
    sfac_ok(native_train_options_set_validation(optr, vm$ptr), algorithm)
  }
  failure <- new.env(parent = emptyenv())
  trampoline <- NULL
  if (!is.null(callback)) {
    if (!is.function(callback)) sfac_abort("'callback' must be a function or NULL")
    trampoline <- function(epoch, loss, rmse, seconds) {
      tryCatch({
        verdict <- callback(epoch, loss, rmse, seconds)
        if (isTRUE(verdict)) 1L else 0L
      }, error = function(e) {
        failure$error <- e
        -1L
      })
    }
    sfac_ok(native_train_options_set_callback(optr, trampoline), algorithm)
  }
  ok <- TRUE
  list(ptr = optr, keep = keep, failure = failure, trampoline = trampoline)
}

# Raises a failed training call's error; the callback's own condition becomes the parent.
training_failed <- function(status, algorithm, failure, call) {
  if (status == 14L && !is.null(failure$error)) {
    err <- failure$error
    failure$error <- NULL
    stop(sfac_condition(paste0(algorithm, ": the callback failed: ", conditionMessage(err)),
                        14L, call = call, parent = err))
  }
  sfac_fail(status, algorithm)
}

train_model <- function(algorithm, ratings, settings, validation, callback, ctx) {
  cptr <- ptr_of(ctx, "sfac_context", "ctx")
  rm <- as_sparse_arg(ratings, ctx, "ratings")
  on.exit(if (!is.null(rm$temp)) close(rm$temp))
  o <- make_options(algorithm, settings, validation, callback, ctx)
  on.exit({
    native_r_close(o$ptr)
    for (m in o$keep) if (!is.null(m)) close(m)
  }, add = TRUE)
  call <- sys.call(-1L)
  res <- native_train(cptr, rm$ptr, o$ptr)
  if (res[[1L]] != 0L) training_failed(res[[1L]], algorithm, o$failure, call)
  wrap_model(res[[2L]])
}

# The R-level spellings of als()/sgd() for the options of a trainer.
trainer_settings <- function(settings) {
  if (length(settings) && (is.null(names(settings)) || any(!nzchar(names(settings))))) {
    sfac_abort("training options must be named")
  }
  rename <- c(biases = "use_biases")
  names(settings) <- ifelse(names(settings) %in% names(rename), rename[names(settings)],
                            names(settings))
  if (!is.null(settings$weighted)) {
    settings$regularization <- as.integer(isTRUE(settings$weighted))
    settings$weighted <- NULL
  }
  if (is.character(settings$solver)) {
    code <- match(settings$solver, c("cholesky", "cg")) - 1L
    if (length(code) != 1L || is.na(code)) sfac_abort("'solver' must be \"cholesky\" or \"cg\"")
    settings$solver <- code
  }
  if (is.character(settings$factor_dtype)) {
    code <- dtype_codes[match(settings$factor_dtype, names(dtype_codes))]
    if (length(code) != 1L || is.na(code)) {
      sfac_abort("'factor_dtype' must be \"float32\", \"float16\" or \"bfloat16\"")
    }
    settings$factor_dtype <- unname(code)
  }
  if (is.character(settings$schedule)) {
    code <- schedule_codes[match(settings$schedule, names(schedule_codes))]
    if (length(code) != 1L || is.na(code)) {
      sfac_abort("'schedule' must be \"hogwild\" or \"wavefront\"")
    }
    settings$schedule <- unname(code)
  }
  if (is.character(settings$reorder)) {
    code <- reorder_codes[match(settings$reorder, names(reorder_codes))]
    if (length(code) != 1L || is.na(code)) {
      sfac_abort("'reorder' must be \"auto\", \"none\" or \"degree\"")
    }
    settings$reorder <- unname(code)
  }
  settings
}

# Step-wise training: the caller owns the loop.
sfac_trainer <- function(ratings, algorithm = c("als", "implicit_als", "sgd"), ...,
                         validation = NULL, callback = NULL, ctx = default_context()) {
  algorithm <- match.arg(algorithm)
  cptr <- ptr_of(ctx, "sfac_context", "ctx")
  settings <- trainer_settings(list(...))
  rm <- as_sparse_arg(ratings, ctx, "ratings")
  o <- make_options(algorithm, settings, validation, callback, ctx)
  res <- native_trainer_create(cptr, rm$ptr, o$ptr)
  if (res[[1L]] != 0L) {
    native_r_close(o$ptr)
    sfac_fail(res[[1L]], "sfac_trainer")
  }
  # The trainer copies the options (the callback's pointer included) and keeps the ratings
  # alive; the R objects it refers to stay referenced from the trainer object.
  new_sfac_object(res[[2L]], "sfac_trainer", algorithm = algorithm, options = o,
                  ratings = rm$temp, ctx = ctx)
}

trainer_ptr <- function(tr) ptr_of(tr, "sfac_trainer", "trainer")

train_epochs <- function(trainer, epochs = 1L) {
  ptr <- trainer_ptr(trainer)
  check_count(epochs, "epochs")
  if (epochs > .Machine$integer.max) sfac_abort("'epochs' is too large")
  call <- sys.call()
  res <- native_trainer_run(ptr, as.integer(epochs), 1)
  if (res[[1L]] != 0L) {
    training_failed(res[[1L]], "train_epochs", trainer$options$failure, call)
  }
  invisible(res[[2L]])
}

trainer_epochs <- function(trainer) {
  sfac_ok(native_trainer_run(trainer_ptr(trainer), 0L, 1), "trainer_epochs")[[1L]]
}

trainer_loss <- function(trainer) {
  sfac_ok(native_trainer_get_loss(trainer_ptr(trainer), 1), "trainer_loss")[[1L]]
}

trainer_model <- function(trainer) {
  wrap_model(sfac_ok(native_trainer_get_model(trainer_ptr(trainer)), "trainer_model")[[1L]])
}

print.sfac_trainer <- function(x, ...) {
  if (is_open(x)) {
    cat(sprintf("<sparsefac trainer: %s, %d epochs run>\n", x$algorithm, trainer_epochs(x)))
  } else {
    cat(sprintf("<sparsefac trainer: %s> (closed)\n", x$algorithm))
  }
  invisible(x)
}

als <- function(ratings, rank = 32L, iterations = 15L, lambda = 0.05, biases = FALSE,
                weighted = TRUE, solver = c("cholesky", "cg"), cg_steps = 3L, init_scale = 0.1,
                deterministic = FALSE, factor_dtype = c("float32", "float16", "bfloat16"),
                reorder = c("auto", "none", "degree"), validation = NULL, callback = NULL,
                ctx = default_context()) {
  solver <- match.arg(solver)
  factor_dtype <- match.arg(factor_dtype)
  reorder <- match.arg(reorder)
  train_model("als", ratings,
              list(rank = rank, iterations = iterations, lambda = lambda, use_biases = biases,
                   regularization = as.integer(weighted), solver = match(solver, c("cholesky", "cg")) - 1L,
                   cg_steps = cg_steps, init_scale = init_scale, deterministic = deterministic,
                   factor_dtype = dtype_codes[[factor_dtype]], reorder = reorder_codes[[reorder]]),
              validation, callback, ctx)
}

implicit_als <- function(ratings, rank = 32L, iterations = 15L, lambda = 0.01, alpha = 40,
                         weighted = FALSE, solver = c("cholesky", "cg"), cg_steps = 3L,
                         init_scale = 0.1, deterministic = FALSE,
                         factor_dtype = c("float32", "float16", "bfloat16"),
                         reorder = c("auto", "none", "degree"), validation = NULL,
                         callback = NULL, ctx = default_context()) {
  solver <- match.arg(solver)
  factor_dtype <- match.arg(factor_dtype)
  reorder <- match.arg(reorder)
  train_model("implicit_als", ratings,
              list(rank = rank, iterations = iterations, lambda = lambda, alpha = alpha,
                   regularization = as.integer(weighted), solver = match(solver, c("cholesky", "cg")) - 1L,
                   cg_steps = cg_steps, init_scale = init_scale, deterministic = deterministic,
                   factor_dtype = dtype_codes[[factor_dtype]], reorder = reorder_codes[[reorder]]),
              validation, callback, ctx)
}

sgd <- function(ratings, rank = 32L, iterations = 20L, lambda = 0.05, learning_rate = 0.08,
                decay = 0.3, biases = FALSE, scale_ratings = TRUE, init_scale = 1,
                deterministic = FALSE, factor_dtype = c("float32", "float16", "bfloat16"),
                workers = 0L, schedule = c("hogwild", "wavefront"), validation = NULL,
                callback = NULL, ctx = default_context()) {
  factor_dtype <- match.arg(factor_dtype)
  schedule <- match.arg(schedule)
  train_model("sgd", ratings,
              list(rank = rank, iterations = iterations, lambda = lambda,
                   learning_rate = learning_rate, decay = decay, use_biases = biases,
                   scale_ratings = scale_ratings, init_scale = init_scale,
                   deterministic = deterministic, factor_dtype = dtype_codes[[factor_dtype]],
                   workers = workers, schedule = schedule_codes[[schedule]]),
              validation, callback, ctx)
}
