# Training: options are set on a native options object, the R callback is wrapped so that an R
# error stops training and comes back to the caller as the parent of the sparsefac error.

algorithm_codes <- c(als = 0L, implicit_als = 1L, sgd = 2L)
algorithm_names <- c("ALS", "implicit ALS", "SGD")

opt <- list(rank = 1L, iterations = 2L, lambda = 3L, lambda_user = 4L, lambda_item = 5L,
            use_biases = 6L, init_scale = 7L, deterministic = 8L, regularization = 100L,
            solver = 101L, cg_steps = 102L, alpha = 103L, learning_rate = 200L, decay = 201L,
            scale_ratings = 202L)
int_options <- c("rank", "iterations", "use_biases", "deterministic", "regularization",
                 "solver", "cg_steps", "scale_ratings")

train_model <- function(algorithm, ratings, settings, validation, callback, ctx) {
  cptr <- ptr_of(ctx, "sfac_context", "ctx")
  rm <- as_sparse_arg(ratings, ctx, "ratings")
  on.exit(if (!is.null(rm$temp)) close(rm$temp))
  optr <- sfac_ok(native_train_options_create(algorithm_codes[[algorithm]]), algorithm)[[1L]]
  on.exit(native_r_close(optr), add = TRUE)
  for (name in names(settings)) {
    value <- settings[[name]]
    if (is.null(value)) next
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
    on.exit(if (!is.null(vm$temp)) close(vm$temp), add = TRUE)
    sfac_ok(native_train_options_set_validation(optr, vm$ptr), algorithm)
  }
  failure <- new.env(parent = emptyenv())
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
  res <- native_train(cptr, rm$ptr, optr)
  if (res[[1L]] != 0L) {
    if (res[[1L]] == 14L && !is.null(failure$error)) {
      stop(sfac_condition(paste0(algorithm, ": the callback failed: ",
                                 conditionMessage(failure$error)),
                          14L, call = sys.call(-1L), parent = failure$error))
    }
    sfac_fail(res[[1L]], algorithm)
  }
  wrap_model(res[[2L]])
}

als <- function(ratings, rank = 32L, iterations = 15L, lambda = 0.05, biases = FALSE,
                weighted = TRUE, solver = c("cholesky", "cg"), cg_steps = 3L, init_scale = 0.1,
                deterministic = FALSE, validation = NULL, callback = NULL,
                ctx = default_context()) {
  solver <- match.arg(solver)
  train_model("als", ratings,
              list(rank = rank, iterations = iterations, lambda = lambda, use_biases = biases,
                   regularization = as.integer(weighted), solver = match(solver, c("cholesky", "cg")) - 1L,
                   cg_steps = cg_steps, init_scale = init_scale, deterministic = deterministic),
              validation, callback, ctx)
}

implicit_als <- function(ratings, rank = 32L, iterations = 15L, lambda = 0.01, alpha = 40,
                         weighted = FALSE, solver = c("cholesky", "cg"), cg_steps = 3L,
                         init_scale = 0.1, deterministic = FALSE, validation = NULL,
                         callback = NULL, ctx = default_context()) {
  solver <- match.arg(solver)
  train_model("implicit_als", ratings,
              list(rank = rank, iterations = iterations, lambda = lambda, alpha = alpha,
                   regularization = as.integer(weighted), solver = match(solver, c("cholesky", "cg")) - 1L,
                   cg_steps = cg_steps, init_scale = init_scale, deterministic = deterministic),
              validation, callback, ctx)
}

sgd <- function(ratings, rank = 32L, iterations = 20L, lambda = 0.05, learning_rate = 0.08,
                decay = 0.3, biases = FALSE, scale_ratings = TRUE, init_scale = 1,
                deterministic = FALSE, validation = NULL, callback = NULL,
                ctx = default_context()) {
  train_model("sgd", ratings,
              list(rank = rank, iterations = iterations, lambda = lambda,
                   learning_rate = learning_rate, decay = decay, use_biases = biases,
                   scale_ratings = scale_ratings, init_scale = init_scale,
                   deterministic = deterministic),
              validation, callback, ctx)
}
