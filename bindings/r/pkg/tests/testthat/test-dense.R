test_that("dense matrices round-trip, upload and close", {
  ctx <- sfac_context("cpu", seed = 1)
  set.seed(41)
  x <- matrix(rnorm(7 * 5) * 10^runif(35, -2, 2), 7, 5)
  d <- sfac_dense(x, ctx = ctx)
  expect_s3_class(d, "sfac_dense")
  expect_equal(dim(d), c(7, 5))
  expect_equal(d$dtype, "float32")
  expect_output(print(d), "7 x 5, float32")
  back <- as.matrix(d)
  expect_equal(dim(back), dim(x))
  # Stored as float32: within half an ulp of single precision, and not the doubles themselves.
  rel <- abs(back - x) / abs(x)
  expect_lte(max(rel), 2^-24)
  expect_gt(max(rel), 0)
  expect_identical(as.matrix(sfac_dense(back, ctx = ctx)), back)

  dense_upload(d, -2 * x)
  expect_identical(as.matrix(d), -2 * back)
  expect_error(dense_upload(d, x[1:3, ]), class = "sparsefac_shape_mismatch")
  expect_error(sfac_dense(matrix(c(1, NaN), 1, 2), ctx = ctx), class = "sparsefac_invalid_value")
  expect_error(sfac_dense(1:3, ctx = ctx), "numeric matrix")
  close(d)
  expect_error(as.matrix(d), "closed", class = "sparsefac_invalid_handle")
  expect_output(print(d), "closed")
})

test_that("16-bit storage types are refused by the CPU backend with its message", {
  ctx <- sfac_context("cpu", seed = 1)
  for (dtype in c("float16", "bfloat16")) {
    expect_error(sfac_dense(matrix(1, 2, 2), dtype, ctx = ctx),
                 "the CPU backend stores dense matrices as float32 only",
                 class = "sparsefac_unsupported")
  }
})

test_that("SDDMM takes dense objects and computes on their stored values", {
  ctx <- sfac_context("cpu", seed = 1)
  set.seed(43)
  m <- 21; n <- 17; k <- 5
  a <- matrix(rnorm(m * k), m, k)
  b <- matrix(rnorm(n * k), n, k)
  cells <- sample.int(m * n, 90)
  s <- Matrix::sparseMatrix(i = (cells - 1) %% m + 1, j = (cells - 1) %/% m + 1,
                            x = round(rnorm(90), 3), dims = c(m, n))
  t <- Matrix::summary(s)
  ad <- sfac_dense(a, ctx = ctx)
  bd <- sfac_dense(b, ctx = ctx)
  ref <- (a %*% t(b))[cbind(t$i, t$j)]
  for (round in 1:2) {
    got <- Matrix::summary(sfac_sddmm(ad, bd, s, mode = "scaled", ctx = ctx))
    expect_equal(got$x, ref * t$x, tolerance = 1e-5)
    # Mixed with a plain matrix, and with beta.
    got <- Matrix::summary(sfac_sddmm(ad, b, s, beta = 1, ctx = ctx))
    expect_equal(got$x, ref + t$x, tolerance = 1e-5)
    # The operands stay open for the next call.
    expect_true(is_open(ad) && is_open(bd))
  }
  expect_error(sfac_sddmm(ad, sfac_dense(b[, 1:3], ctx = ctx), s, ctx = ctx),
               class = "sparsefac_shape_mismatch")
  expect_error(sfac_sddmm(ad, "b", s, ctx = ctx), "numeric matrix or an sfac_dense")
})
