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

test_that("SDDMM adds beta times the previous values of P, in every mode", {
  ctx <- sfac_context("cpu", seed = 1)
  set.seed(21)
  m <- 29; n <- 31; k <- 6
  a <- matrix(rnorm(m * k), m, k)
  b <- matrix(rnorm(n * k), n, k)
  s <- random_pattern(m, n, 120, 8)
  t <- Matrix::summary(s)
  ref <- (a %*% t(b))[cbind(t$i, t$j)]
  ord <- order(t$i, t$j)
  # P's previous values: a matrix with s's pattern and other values.
  old <- Matrix::sparseMatrix(i = t$i, j = t$j, x = seq_along(t$x) / 10, dims = c(m, n))
  old_x <- Matrix::summary(old)$x

  got <- Matrix::summary(sfac_sddmm(a, b, s, alpha = 0.5, beta = -2, p = old, ctx = ctx))
  expect_equal(cbind(got$i, got$j), cbind(t$i, t$j))
  expect_equal(got$x, 0.5 * ref - 2 * old_x, tolerance = 1e-5)

  got <- Matrix::summary(sfac_sddmm(a, b, s, mode = "scaled", alpha = 3, beta = 0.25, p = old,
                                    ctx = ctx))
  expect_equal(got$x, 3 * ref * t$x + 0.25 * old_x, tolerance = 1e-5)

  # Without p, P starts from s's values: residual update s + (s - d) = 2 s - d.
  got <- Matrix::summary(sfac_sddmm(a, b, s, mode = "residual", beta = 1, ctx = ctx))
  expect_equal(got$x, 2 * t$x - ref, tolerance = 1e-4)

  # p may also be the values themselves, in row-major order of s's nonzeros.
  got <- Matrix::summary(sfac_sddmm(a, b, s, beta = 1, p = old_x[ord], ctx = ctx))
  expect_equal(got$x, ref + old_x, tolerance = 1e-5)

  # beta = 0 never reads P: NaN-free even when p is absent.
  got <- Matrix::summary(sfac_sddmm(a, b, s, beta = 0, p = old, ctx = ctx))
  expect_equal(got$x, ref, tolerance = 1e-5)

  other <- random_pattern(m, n, 120, 9)
  expect_error(sfac_sddmm(a, b, s, beta = 1, p = other, ctx = ctx), "sparsity pattern",
               class = "sparsefac_shape_mismatch")
  expect_error(sfac_sddmm(a, b, s, beta = 1, p = 1:3, ctx = ctx),
               class = "sparsefac_shape_mismatch")
  expect_error(sfac_sddmm(a, b, s, beta = NA, ctx = ctx), "'beta' must be a single number")
})

test_that("SDDMM plans are reusable and give the planless results", {
  ctx <- sfac_context("cpu", seed = 1)
  set.seed(31)
  m <- 40; n <- 26; k <- 7
  s <- random_pattern(m, n, 200, 4)
  t <- Matrix::summary(s)
  for (algorithm in c("auto", "row_split", "nnz_split")) {
    plan <- sfac_sddmm_plan(s, k, algorithm, ctx = ctx)
    expect_s3_class(plan, "sfac_sddmm_plan")
    expect_true(plan$algorithm %in% c("row_split", "nnz_split"))
    if (algorithm != "auto") expect_equal(plan$algorithm, algorithm)
    expect_output(print(plan), "SDDMM plan")
    for (round in 1:3) {
      a <- matrix(rnorm(m * k), m, k)
      b <- matrix(rnorm(n * k), n, k)
      ref <- (a %*% t(b))[cbind(t$i, t$j)]
      # s as a dgCMatrix: its values go onto the plan's pattern.
      got <- Matrix::summary(sfac_sddmm(a, b, s, mode = "scaled", plan = plan, ctx = ctx))
      expect_equal(cbind(got$i, got$j), cbind(t$i, t$j))
      expect_equal(got$x, ref * t$x, tolerance = 1e-5)
      # No s: the plan's pattern (with its values) is s.
      got <- Matrix::summary(sfac_sddmm(a, b, plan = plan, alpha = 2, beta = 1, ctx = ctx))
      expect_equal(got$x, 2 * ref + t$x, tolerance = 1e-5)
      planless <- Matrix::summary(sfac_sddmm(a, b, s, mode = "residual", ctx = ctx))
      with_plan <- Matrix::summary(sfac_sddmm(a, b, plan$pattern, mode = "residual",
                                              plan = plan, ctx = ctx))
      expect_equal(with_plan$x, planless$x, tolerance = 1e-6)
    }
  }
  plan <- sfac_sddmm_plan(s, k, ctx = ctx)
  a <- matrix(1, m, k)
  b <- matrix(1, n, k)
  # The library checks the plan: another pattern handle, another K.
  err <- tryCatch(sfac_sddmm(a, b, sfac_sparse(s, ctx), plan = plan, ctx = ctx),
                  sparsefac_error = function(e) e)
  expect_match(conditionMessage(err), "plan was made for another sparsity pattern")
  expect_error(sfac_sddmm(matrix(1, m, k + 1), matrix(1, n, k + 1), s, plan = plan, ctx = ctx),
               class = "sparsefac_shape_mismatch")
  expect_error(sfac_sddmm(a, b, random_pattern(m, n, 200, 5), plan = plan, ctx = ctx),
               "sparsity pattern", class = "sparsefac_shape_mismatch")
  expect_error(sfac_sddmm_plan(s, 0, ctx = ctx), class = "sparsefac_error")
  expect_error(sfac_sddmm(a, b, ctx = ctx), "needs 's'")
  close(plan)
  expect_false(is_open(plan))
  expect_output(print(plan), "closed")
  expect_error(sfac_sddmm(a, b, s, plan = plan, ctx = ctx), class = "sparsefac_invalid_handle")
})
