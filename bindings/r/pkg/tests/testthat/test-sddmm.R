random_pattern <- function(m, n, nnz, seed) {
  set.seed(seed)
  cells <- sample.int(m * n, nnz)
  Matrix::sparseMatrix(i = (cells - 1) %% m + 1, j = (cells - 1) %/% m + 1,
                       x = round(rnorm(nnz), 3), dims = c(m, n))
}

test_that("SDDMM matches (A %*% t(B)) at the nonzeros, in every mode", {
  ctx <- sfac_context("cpu", seed = 1)
  set.seed(11)
  m <- 37; n <- 23; k <- 9
  a <- matrix(rnorm(m * k), m, k)
  b <- matrix(rnorm(n * k), n, k)
  s <- random_pattern(m, n, 150, 5)
  t <- Matrix::summary(s)
  ref <- (a %*% t(b))[cbind(t$i, t$j)]

  p <- Matrix::summary(sfac_sddmm(a, b, s, mode = "pattern", ctx = ctx))
  expect_equal(cbind(p$i, p$j), cbind(t$i, t$j))
  expect_equal(p$x, ref, tolerance = 1e-5)

  scaled <- Matrix::summary(sfac_sddmm(a, b, s, mode = "scaled", alpha = 2, ctx = ctx))
  expect_equal(scaled$x, 2 * ref * t$x, tolerance = 1e-5)

  residual <- Matrix::summary(sfac_sddmm(a, b, s, mode = "residual", ctx = ctx))
  expect_equal(residual$x, t$x - ref, tolerance = 1e-4)
})

test_that("SDDMM accepts a library matrix, a dgTMatrix and a data.frame pattern", {
  ctx <- sfac_context("cpu", seed = 1)
  set.seed(2)
  a <- matrix(rnorm(12), 4, 3)
  b <- matrix(rnorm(15), 5, 3)
  df <- data.frame(user = c(1, 2, 4, 4), item = c(5, 1, 2, 3), rating = 1)
  ref <- (a %*% t(b))[cbind(df$user, df$item)]
  ord <- order(df$user, df$item)
  from_df <- Matrix::summary(sfac_sddmm(a, b, sfac_sparse(df, ctx, dims = c(4, 5)), ctx = ctx))
  expect_equal(from_df$x[order(from_df$i, from_df$j)], ref[ord], tolerance = 1e-5)
  tm <- methods::as(Matrix::sparseMatrix(i = df$user, j = df$item, x = 1, dims = c(4, 5)),
                    "TsparseMatrix")
  from_t <- Matrix::summary(sfac_sddmm(a, b, tm, ctx = ctx))
  expect_equal(from_t$x[order(from_t$i, from_t$j)], ref[ord], tolerance = 1e-5)
  # A pattern matrix (values 1) and a base matrix (its nonzeros) work as well.
  pattern <- Matrix::sparseMatrix(i = df$user, j = df$item, dims = c(4, 5))
  from_n <- Matrix::summary(sfac_sddmm(a, b, pattern, ctx = ctx))
  expect_equal(from_n$x[order(from_n$i, from_n$j)], ref[ord], tolerance = 1e-5)
  from_base <- Matrix::summary(sfac_sddmm(a, b, as.matrix(pattern) * 1, ctx = ctx))
  expect_equal(from_base$x[order(from_base$i, from_base$j)], ref[ord], tolerance = 1e-5)
})

test_that("SDDMM rejects operands whose shapes do not fit", {
  ctx <- sfac_context("cpu", seed = 1)
  s <- random_pattern(6, 5, 8, 1)
  a <- matrix(1, 6, 3)
  expect_error(sfac_sddmm(a, matrix(1, 5, 4), s, ctx = ctx), class = "sparsefac_error")
  err <- tryCatch(sfac_sddmm(matrix(1, 7, 3), matrix(1, 5, 3), s, ctx = ctx),
                  sparsefac_error = function(e) e)
  expect_equal(err$status, 4L)
  expect_match(conditionMessage(err), "sfac_sddmm")
  expect_error(sfac_sddmm(a, matrix(c(1, NaN, 1), 5, 3), s, ctx = ctx),
               class = "sparsefac_invalid_value")
})
