test_that("ALS reaches the planted noise floor on held-out ratings", {
  d <- planted()
  m <- als(d$train, rank = d$rank, iterations = 15, lambda = 0.02, ctx = d$ctx)
  expect_s3_class(m, "sfac_model")
  expect_equal(c(m$users, m$items, m$rank), c(400, 300, 4))
  held_out <- evaluate(m, d$test, ctx = d$ctx)
  expect_lt(held_out[["rmse"]], 1.5 * d$noise)
  expect_gt(held_out[["rmse"]], 0.5 * d$noise)
  # evaluate() is the RMSE of predict() against the held-out values.
  t <- Matrix::summary(d$test)
  pred <- predict(m, t$i, t$j)
  expect_equal(sqrt(mean((pred - t$x)^2)), held_out[["rmse"]], tolerance = 1e-4)
  expect_equal(predict(m, data.frame(user = t$i[1:5], item = t$j[1:5])), pred[1:5])
  # predict() is the dot product of the factors.
  expect_equal(pred[1:20], rowSums(user_factors(m)[t$i[1:20], ] * item_factors(m)[t$j[1:20], ]),
               tolerance = 1e-5)
})

test_that("SGD and implicit ALS learn the planted structure", {
  d <- planted()
  s <- sgd(d$train, rank = d$rank, iterations = 40, lambda = 0.02, ctx = d$ctx)
  expect_lt(evaluate(s, d$test, ctx = d$ctx)[["rmse"]], 3 * d$noise)

  ctx <- sfac_context("cpu", threads = 1, seed = 5)
  implicit <- synthesize_ratings(400, 300, 24000, rank = 4, noise = 1, implicit = TRUE, ctx = ctx)
  parts <- split_random(implicit, 0.2, seed = 9, ctx = ctx)
  m <- implicit_als(parts$train, rank = 4, iterations = 10, ctx = ctx)
  metrics <- ranking_metrics(m, parts$test, exclude = parts$train, k = 10, ctx = ctx)
  # Random top-10 lists would hit about test-items-per-user / unseen-items of the time.
  per_user <- Matrix::rowSums(parts$test != 0)
  unseen <- 300 - Matrix::rowSums(parts$train != 0)
  random_precision <- mean((per_user / unseen)[per_user > 0])
  expect_gt(metrics[["precision"]], 3 * random_precision)
})

test_that("the callback sees every epoch and can stop training", {
  d <- planted()
  seen <- list()
  m <- als(d$train, rank = 4, iterations = 5, validation = d$test, ctx = d$ctx,
           callback = function(epoch, loss, rmse, seconds) {
             seen[[length(seen) + 1L]] <<- c(epoch, loss, rmse, seconds)
             FALSE
           })
  seen <- do.call(rbind, seen)
  expect_equal(seen[, 1], 1:5)
  expect_true(all(diff(seen[, 2]) < 0))
  expect_equal(seen[5, 3], evaluate(m, d$test, ctx = d$ctx)[["rmse"]], tolerance = 1e-4)
  expect_true(all(seen[, 4] >= 0))

  epochs <- 0
  als(d$train, rank = 4, iterations = 10, ctx = d$ctx,
      callback = function(epoch, ...) {
        epochs <<- epoch
        epoch >= 3
      })
  expect_equal(epochs, 3)
})

test_that("a callback that calls stop() stops training with its message", {
  d <- planted()
  calls <- 0
  err <- tryCatch(sgd(d$train, rank = 4, iterations = 10, ctx = d$ctx,
                      callback = function(epoch, ...) {
                        calls <<- calls + 1
                        if (epoch == 2) stop("user asked to stop at epoch 2")
                      }),
                  error = function(e) e)
  expect_s3_class(err, "sparsefac_error")
  expect_s3_class(err, "sparsefac_callback")
  expect_equal(err$status, 14L)
  expect_match(conditionMessage(err), "user asked to stop at epoch 2")
  expect_match(conditionMessage(err$parent), "user asked to stop at epoch 2")
  expect_equal(calls, 2)
})

test_that("deterministic training is reproducible", {
  d <- planted()
  run <- function() {
    ctx <- sfac_context("cpu", threads = 1, seed = 42)
    user_factors(als(d$train, rank = 4, iterations = 3, deterministic = TRUE, ctx = ctx))
  }
  expect_identical(run(), run())
})

# TRUE where x is exactly a value of a binary type with `bits` significant bits whose normal
# numbers start at 2^min_exp (float16: 11 and -14, bfloat16: 8 and -126).
representable <- function(x, bits, min_exp) {
  step <- 2^(pmax(floor(log2(abs(x))), min_exp) - (bits - 1))
  x / step == round(x / step)
}
is_float16 <- function(x) abs(x) <= 65504 & representable(x, 11, -14)

test_that("ALS trains with 16-bit factor storage", {
  d <- planted()
  full <- als(d$train, rank = d$rank, iterations = 8, lambda = 0.02, ctx = d$ctx)
  half <- als(d$train, rank = d$rank, iterations = 8, lambda = 0.02, factor_dtype = "float16",
              ctx = d$ctx)
  expect_s3_class(half, "sfac_model")
  expect_lt(evaluate(half, d$test, ctx = d$ctx)[["rmse"]],
            1.02 * evaluate(full, d$test, ctx = d$ctx)[["rmse"]])
  expect_true(all(is_float16(user_factors(half))))
  expect_false(all(is_float16(user_factors(full))))
  # implicit_als and the step-wise trainer take the same spelling.
  clicks <- synthesize_ratings(100, 80, 2000, rank = 2, implicit = TRUE, ctx = d$ctx)
  imp <- implicit_als(clicks, rank = 2, iterations = 2, factor_dtype = "bfloat16", ctx = d$ctx)
  expect_true(all(representable(user_factors(imp), 8, -126)))
  tr <- sfac_trainer(d$train, "als", rank = 2, factor_dtype = "bfloat16", ctx = d$ctx)
  train_epochs(tr, 2)
  expect_true(all(representable(user_factors(trainer_model(tr)), 8, -126)))
  close(tr)

  expect_error(als(d$train, rank = 2, factor_dtype = "float64", ctx = d$ctx), "should be one of")
  expect_error(sfac_trainer(d$train, "als", factor_dtype = "float64", ctx = d$ctx), "factor_dtype")
})

test_that("SGD trains with 16-bit factor storage", {
  d <- planted()
  # Without rating scaling the model's factors are exactly the stored values.
  fit <- function(dtype) {
    sgd(d$train, rank = d$rank, iterations = 20, lambda = 0.02, scale_ratings = FALSE,
        factor_dtype = dtype, ctx = d$ctx)
  }
  full <- fit("float32")
  half <- fit("float16")
  expect_s3_class(half, "sfac_model")
  expect_lt(evaluate(half, d$test, ctx = d$ctx)[["rmse"]],
            1.05 * evaluate(full, d$test, ctx = d$ctx)[["rmse"]])
  expect_true(all(is_float16(user_factors(half))))
  expect_true(all(is_float16(item_factors(half))))
  # The step-wise trainer takes the same spelling.
  tr <- sfac_trainer(d$train, "sgd", rank = 2, scale_ratings = FALSE, factor_dtype = "bfloat16",
                     ctx = d$ctx)
  train_epochs(tr, 2)
  expect_true(all(representable(item_factors(trainer_model(tr)), 8, -126)))
  close(tr)
  expect_error(sgd(d$train, rank = 2, factor_dtype = "float64", ctx = d$ctx), "should be one of")
})

test_that("SGD takes a worker count that the CPU backend ignores", {
  d <- planted()
  m <- sgd(d$train, rank = d$rank, iterations = 3, workers = 64, ctx = d$ctx)
  expect_s3_class(m, "sfac_model")
  expect_true(is.finite(evaluate(m, d$test, ctx = d$ctx)[["rmse"]]))
  tr <- sfac_trainer(d$train, "sgd", rank = 2, workers = 64, ctx = d$ctx)
  train_epochs(tr, 1)
  close(tr)
  for (bad in c(-1, 2^24 + 1)) {
    expect_error(sgd(d$train, rank = 2, workers = bad, ctx = d$ctx),
                 "SFAC_OPT_SGD_WORKERS \\(option 203\\)", class = "sparsefac_invalid_argument")
  }
})

test_that("SGD takes a schedule that the CPU backend ignores", {
  d <- planted()
  for (schedule in c("hogwild", "wavefront")) {
    m <- sgd(d$train, rank = d$rank, iterations = 3, schedule = schedule, ctx = d$ctx)
    expect_s3_class(m, "sfac_model")
    expect_true(is.finite(evaluate(m, d$test, ctx = d$ctx)[["rmse"]]))
    tr <- sfac_trainer(d$train, "sgd", rank = 2, schedule = schedule, ctx = d$ctx)
    train_epochs(tr, 1)
    close(tr)
  }
  expect_error(sgd(d$train, rank = 2, schedule = "lockfree", ctx = d$ctx),
               "should be one of .*hogwild.*wavefront")
  expect_error(sfac_trainer(d$train, "sgd", schedule = "lockfree", ctx = d$ctx), "'schedule'")
  # A number reaches the library, which names the option.
  expect_error(sfac_trainer(d$train, "sgd", schedule = 2, ctx = d$ctx),
               "SFAC_OPT_SGD_SCHEDULE \\(option 204\\)", class = "sparsefac_invalid_argument")
})

test_that("ALS and implicit ALS take a reorder that changes only the order of sums", {
  ctx <- sfac_context("cpu", threads = 1, seed = 4)
  # Skewed degrees, so that the degree order is far from the identity.
  explicit <- synthesize_ratings(120, 80, 2000, rank = 3, skew = 0.5, ctx = ctx)
  implicit <- synthesize_ratings(120, 80, 2000, rank = 3, skew = 0.5, implicit = TRUE, ctx = ctx)
  fits <- list(
    function(reorder) als(explicit, rank = 3, iterations = 6, reorder = reorder, ctx = ctx),
    function(reorder) implicit_als(implicit, rank = 3, iterations = 6, reorder = reorder,
                                   ctx = ctx))
  for (fit in fits) {
    none <- fit("none")
    degree <- fit("degree")
    for (side in list(user_factors, item_factors)) {
      want <- side(none)
      expect_lte(max(abs(side(degree) - want)), 1e-4 * max(abs(want)))
    }
    # The CPU's automatic choice is no renumbering: the very same sums.
    expect_identical(user_factors(fit("auto")), user_factors(none))
  }
  tr <- sfac_trainer(explicit, "als", rank = 3, reorder = "degree", ctx = ctx)
  train_epochs(tr, 1)
  close(tr)
  # Agreeing factors alone would not tell a dropped option from a working one.
  for (reorder in c("none", "degree", "auto")) {
    o <- make_options("als", trainer_settings(list(reorder = reorder)), NULL, NULL, ctx)
    expect_identical(sfac_ok(native_train_options_get_int(o$ptr, 104L, 1), "get")[[1L]],
                     unname(as.numeric(reorder_codes[[reorder]])))
    native_r_close(o$ptr)
  }
  expect_error(als(explicit, rank = 2, reorder = "rcm", ctx = ctx),
               "should be one of .*auto.*none.*degree")
  expect_error(sfac_trainer(explicit, "implicit_als", reorder = "rcm", ctx = ctx), "'reorder'")
  # A number reaches the library, which names the option.
  expect_error(sfac_trainer(explicit, "als", reorder = 3, ctx = ctx),
               "SFAC_OPT_ALS_REORDER \\(option 104\\)", class = "sparsefac_invalid_argument")
})
