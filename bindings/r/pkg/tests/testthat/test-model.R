test_that("recommend excludes seen items and matches a brute-force ranking", {
  d <- planted()
  m <- als(d$train, rank = 4, iterations = 8, ctx = d$ctx)
  users <- c(1, 17, 250)
  rec <- recommend(m, users, n = 7, exclude = d$train, ctx = d$ctx)
  expect_equal(names(rec), c("user", "rank", "item", "score"))
  scores <- user_factors(m) %*% t(item_factors(m))
  for (u in users) {
    got <- rec[rec$user == u, ]
    seen <- which(d$train[u, ] != 0)
    expect_false(any(got$item %in% seen))
    s <- scores[u, ]
    s[seen] <- -Inf
    expect_equal(got$item, order(-s)[1:7])
    expect_equal(got$score, s[order(-s)[1:7]], tolerance = 1e-5)
    expect_equal(got$rank, 1:7)
  }
  # Restricted candidates.
  only <- recommend(m, 1, n = 3, items = c(2, 4, 6, 8))
  expect_true(all(only$item %in% c(2, 4, 6, 8)))
  # Fewer candidates than n: the missing slots are dropped.
  expect_equal(nrow(recommend(m, 1, n = 3, items = c(5, 9))), 2)
})

test_that("similar_items ranks by cosine similarity of the item factors", {
  d <- planted()
  m <- als(d$train, rank = 4, iterations = 5, ctx = d$ctx)
  v <- item_factors(m)
  cosine <- (v %*% t(v)) / outer(sqrt(rowSums(v^2)), sqrt(rowSums(v^2)))
  sim <- similar_items(m, c(3, 40), n = 5)
  for (i in c(3, 40)) {
    c <- cosine[i, ]
    c[i] <- -Inf
    got <- sim[sim$item == i, ]
    expect_equal(got$similar, order(-c)[1:5])
    expect_equal(got$score, c[order(-c)[1:5]], tolerance = 1e-5)
  }
})

test_that("save_model and load_model round-trip exactly", {
  d <- planted()
  m <- als(d$train, rank = 4, iterations = 4, biases = TRUE, ctx = d$ctx)
  path <- tempfile(fileext = ".sfm")
  on.exit(unlink(path))
  save_model(m, path)
  loaded <- load_model(path, ctx = d$ctx)
  expect_identical(user_factors(loaded), user_factors(m))
  expect_identical(item_factors(loaded), item_factors(m))
  expect_identical(predict(loaded, 1:50, 50:1), predict(m, 1:50, 50:1))
  expect_equal(loaded$algorithm, "ALS")
  expect_true(summary(loaded)$has_biases)
})

test_that("fold-in solves the ALS normal equations and reproduces a training user", {
  d <- planted()
  lambda <- 0.02
  m <- als(d$train, rank = 4, iterations = 25, lambda = lambda, ctx = d$ctx)
  u <- 5
  items <- which(d$train[u, ] != 0)
  ratings <- d$train[u, items]
  folded <- recalculate_user(m, items, ratings)
  # Reference: weighted (ALS-WR) regularization, lambda * n_u on the diagonal.
  v <- item_factors(m)[items, , drop = FALSE]
  ref <- solve(crossprod(v) + lambda * length(items) * diag(4), crossprod(v, ratings))
  expect_equal(as.numeric(folded), as.numeric(ref), tolerance = 1e-4)
  # A converged model's row for that user is the same solution.
  expect_equal(as.numeric(folded), user_factors(m)[u, ], tolerance = 1e-2)
  # With `user` the model's row is replaced.
  recalculate_user(m, items, ratings, user = 9)
  expect_equal(user_factors(m)[9, ], as.numeric(folded), tolerance = 1e-6)
})

test_that("print and summary describe the model", {
  d <- planted()
  m <- als(d$train, rank = 4, iterations = 2, ctx = d$ctx)
  expect_output(print(m), "ALS, 400 users x 300 items, rank 4")
  expect_output(print(summary(m)), "user factor norms")
  expect_output(print(d$ctx), "cpu")
  expect_output(print(sfac_sparse(d$train, d$ctx)), "400 x 300")
})

test_that("Matrix Market and LIBMF files round-trip the values", {
  ctx <- sfac_context("cpu", seed = 2)
  r <- synthesize_ratings(40, 30, 300, rank = 2, ctx = ctx)
  path <- tempfile(fileext = ".mtx")
  on.exit(unlink(path))
  write_matrix_market(r, path, ctx = ctx)
  back <- sfac_read_sparse(path, ctx)
  expect_equal(dim(back), c(40, 30))
  expect_identical(as_dgCMatrix(back), r)

  m <- als(r, rank = 2, iterations = 2, ctx = ctx)
  libmf <- tempfile(fileext = ".txt")
  on.exit(unlink(libmf), add = TRUE)
  export_libmf(m, libmf)
  lines <- readLines(libmf)
  p0 <- strsplit(grep("^p0 ", lines, value = TRUE), " ")[[1]]
  expect_equal(as.numeric(p0[-(1:2)]), user_factors(m)[1, ], tolerance = 1e-5)
})
