test_that("step-wise epochs equal one run: 3 + 2 epochs are 5 epochs, bit for bit", {
  d <- planted()
  fresh <- function() sfac_context("cpu", threads = 1, seed = 42)
  for (algorithm in c("als", "sgd")) {
    tr <- sfac_trainer(d$train, algorithm, rank = 4, lambda = 0.02, deterministic = TRUE,
                       ctx = fresh())
    expect_s3_class(tr, "sfac_trainer")
    expect_equal(trainer_epochs(tr), 0L)
    expect_true(is.nan(trainer_loss(tr)))
    expect_equal(train_epochs(tr, 3), 3L)
    loss3 <- trainer_loss(tr)
    expect_equal(train_epochs(tr, 2), 5L)
    loss5 <- trainer_loss(tr)
    expect_true(is.finite(loss3) && is.finite(loss5))
    expect_lt(loss5, loss3)
    stepwise <- trainer_model(tr)
    expect_equal(c(stepwise$users, stepwise$items, stepwise$rank), c(400, 300, 4))

    once <- sfac_trainer(d$train, algorithm, rank = 4, lambda = 0.02, deterministic = TRUE,
                         ctx = fresh())
    train_epochs(once, 5)
    trained <- if (algorithm == "als") {
      als(d$train, rank = 4, iterations = 5, lambda = 0.02, deterministic = TRUE, ctx = fresh())
    } else {
      sgd(d$train, rank = 4, iterations = 5, lambda = 0.02, deterministic = TRUE, ctx = fresh())
    }
    for (m in list(trainer_model(once), trained)) {
      expect_identical(user_factors(stepwise), user_factors(m))
      expect_identical(item_factors(stepwise), item_factors(m))
    }
    expect_identical(trainer_loss(once), loss5)
    # The snapshot is independent of the trainer: more epochs leave it as it was.
    before <- user_factors(stepwise)
    train_epochs(tr, 1)
    expect_identical(user_factors(stepwise), before)
    expect_false(identical(user_factors(trainer_model(tr)), before))
  }
})

test_that("the trainer's loss is the objective of its model", {
  d <- planted()
  tr <- sfac_trainer(d$train, "als", rank = 4, lambda = 0.02, weighted = FALSE,
                     ctx = sfac_context("cpu", threads = 1, seed = 3))
  # From random factors ALS needs about ten sweeps to reach the noise floor here.
  train_epochs(tr, 12)
  m <- trainer_model(tr)
  t <- Matrix::summary(d$train)
  uf <- user_factors(m)
  vf <- item_factors(m)
  pred <- rowSums(uf[t$i, ] * vf[t$j, ])
  # Squared error plus lambda * (|U|^2 + |V|^2), per training rating.
  objective <- (sum((t$x - pred)^2) + 0.02 * (sum(uf^2) + sum(vf^2))) / length(t$x)
  expect_equal(trainer_loss(tr), objective, tolerance = 1e-3)
  expect_lt(evaluate(m, d$test, ctx = d$ctx)[["rmse"]], 1.5 * d$noise)
})

test_that("the callback sees the trainer's epochs and can stop a run", {
  d <- planted()
  seen <- list()
  tr <- sfac_trainer(d$train, "als", rank = 4, validation = d$test, ctx = d$ctx,
                     callback = function(epoch, loss, rmse, seconds) {
                       seen[[length(seen) + 1L]] <<- c(epoch, rmse)
                       epoch >= 4
                     })
  expect_equal(train_epochs(tr, 10), 4L)
  expect_equal(trainer_epochs(tr), 4L)
  rows <- do.call(rbind, seen)
  expect_equal(rows[, 1], 1:4)
  expect_equal(rows[4, 2], evaluate(trainer_model(tr), d$test, ctx = d$ctx)[["rmse"]],
               tolerance = 1e-4)
  # Epochs count on across runs; the callback stops the next run after one epoch.
  expect_equal(train_epochs(tr, 10), 5L)
  expect_equal(length(seen), 5L)
  expect_equal(seen[[5L]][1L], 5)
})

test_that("a failing trainer callback raises its error and the trainer stays usable", {
  d <- planted()
  fail <- TRUE
  tr <- sfac_trainer(d$train, "sgd", rank = 4, ctx = d$ctx,
                     callback = function(epoch, ...) {
                       if (fail && epoch == 2) stop("no epoch 2 today")
                       FALSE
                     })
  err <- tryCatch(train_epochs(tr, 5), error = function(e) e)
  expect_s3_class(err, "sparsefac_callback")
  expect_equal(err$status, 14L)
  expect_match(conditionMessage(err), "no epoch 2 today")
  expect_match(conditionMessage(err$parent), "no epoch 2 today")
  expect_equal(trainer_epochs(tr), 2L)
  fail <- FALSE
  expect_equal(train_epochs(tr, 2), 4L)
})

test_that("trainers close, reject bad arguments and are freed by the garbage collector", {
  d <- planted()
  tr <- sfac_trainer(abs(d$train), "implicit_als", rank = 3, alpha = 10, solver = "cg",
                     ctx = d$ctx)
  expect_output(print(tr), "implicit_als, 0 epochs")
  train_epochs(tr, 1)
  m <- trainer_model(tr)
  expect_equal(m$algorithm, "implicit ALS")
  close(tr)
  close(tr)
  expect_false(is_open(tr))
  expect_output(print(tr), "closed")
  expect_error(train_epochs(tr, 1), class = "sparsefac_invalid_handle")
  expect_error(trainer_loss(tr), class = "sparsefac_invalid_handle")
  # The model outlives its trainer.
  expect_equal(dim(user_factors(m)), c(400, 3))

  expect_error(sfac_trainer(d$train, "als", rank = 0, ctx = d$ctx), class = "sparsefac_error")
  expect_error(sfac_trainer(d$train, "als", no_such_option = 1, ctx = d$ctx),
               "unknown training option")
  expect_error(sfac_trainer(d$train, "als", 4, ctx = d$ctx), "must be named")
  tr <- sfac_trainer(d$train, "als", rank = 2, ctx = d$ctx)
  expect_error(train_epochs(tr, -1), class = "sparsefac_error")
  expect_error(train_epochs(m, 1), "must be a sfac_trainer")

  # A trainer made from a data.frame keeps its ratings alive after the caller's copy is gone;
  # dropped trainers are freed by their finalizers without a leak.
  t <- Matrix::summary(d$train)
  gc()
  base <- rss_kib()
  for (round in 1:30) {
    tr <- sfac_trainer(data.frame(user = t$i, item = t$j, rating = t$x), "als", rank = 4,
                       ctx = d$ctx)
    gc()
    train_epochs(tr, 1)
    rm(tr)
  }
  gc()
  expect_lt(rss_kib() - base, 20000)
})
