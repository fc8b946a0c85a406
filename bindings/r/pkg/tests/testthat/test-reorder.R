# Row counts 1, 3, 0, 3, 1; column counts 2, 1, 2, 3; values 1..8 in row-major order. 1-based.
degree_matrix <- function() {
  Matrix::sparseMatrix(i = c(1, 2, 2, 2, 4, 4, 4, 5), j = c(4, 1, 3, 4, 1, 2, 3, 4),
                       x = 1:8, dims = c(5, 4))
}

test_that("degree order is by count, most first, ties in index order (1-based)", {
  ctx <- sfac_context("cpu", seed = 1)
  s <- degree_matrix()
  expect_identical(degree_order(s, "rows", ctx = ctx), c(2L, 4L, 1L, 5L, 3L))
  expect_identical(degree_order(s, ctx = ctx), c(2L, 4L, 1L, 5L, 3L))
  expect_identical(degree_order(s, "cols", ctx = ctx), c(4L, 1L, 3L, 2L))
  m <- sfac_sparse(s, ctx)
  expect_identical(degree_order(m, "cols"), c(4L, 1L, 3L, 2L))
  expect_error(degree_order(m, "diagonal"), "should be one of")
  empty <- sfac_sparse(Matrix::sparseMatrix(i = integer(0), j = integer(0), x = numeric(0),
                                            dims = c(0, 3)), ctx)
  expect_identical(degree_order(empty, "rows"), integer(0))
  expect_identical(degree_order(empty, "cols"), 1:3)
})

test_that("permute moves every entry with its value: x[row_order, col_order]", {
  ctx <- sfac_context("cpu", seed = 1)
  s <- degree_matrix()
  row_order <- c(3, 5, 1, 4, 2)
  col_order <- c(2, 4, 1, 3)
  m <- sfac_sparse(s, ctx)
  p <- permute(m, row_order, col_order)
  expect_s3_class(p, "sfac_matrix")
  expect_equal(dim(p), c(5, 4))
  expect_equal(p$nnz, 8)
  # Entry (row_order[r], col_order[c]) is now (r, c), with its value: exactly these triplets.
  t <- as.data.frame(p)
  expect_equal(t$user, c(2, 3, 4, 4, 4, 5, 5, 5))
  expect_equal(t$item, c(2, 2, 1, 3, 4, 2, 3, 4))
  expect_equal(t$rating, c(8, 1, 6, 5, 7, 4, 2, 3))
  expect_equal(as.matrix(as_dgCMatrix(p)), as.matrix(s[row_order, col_order]))
  # An R matrix in, a dgCMatrix out; NULL keeps a side.
  expect_s4_class(permute(s, row_order, col_order, ctx = ctx), "dgCMatrix")
  expect_equal(as.matrix(permute(s, row_order, ctx = ctx)), as.matrix(s[row_order, ]))
  expect_equal(as.matrix(permute(s, col_order = col_order, ctx = ctx)),
               as.matrix(s[, col_order]))
  expect_equal(as.matrix(permute(s, ctx = ctx)), as.matrix(s))
  # A degree order is a permutation; afterwards the degree order is the identity.
  d <- permute(m, degree_order(m, "rows"), degree_order(m, "cols"))
  expect_identical(degree_order(d, "rows"), 1:5)
  expect_identical(degree_order(d, "cols"), 1:4)
  expect_equal(as.matrix(as_dgCMatrix(m)), as.matrix(s)) # the source is unchanged
})

test_that("permute_rows and its inverse give the original back", {
  ctx <- sfac_context("cpu", seed = 1)
  x <- matrix(c(1, 3, 5, 7, 9, 2, 4, 6, 8, 10), 5, 2)
  d <- sfac_dense(x, ctx = ctx)
  order <- c(4, 1, 5, 3, 2)
  p <- permute_rows(d, order)
  expect_s3_class(p, "sfac_dense")
  expect_equal(dim(p), c(5, 2))
  expect_equal(p$dtype, "float32")
  expect_identical(as.matrix(p), x[order, ])
  expect_identical(as.matrix(permute_rows(p, order(order))), x)
  expect_identical(as.matrix(d), x) # the source is unchanged
})

test_that("non-permutations are rejected with 1-based messages", {
  ctx <- sfac_context("cpu", seed = 1)
  m <- sfac_sparse(data.frame(user = 1:3, item = c(1, 2, 2), rating = 1:3), ctx)
  err <- tryCatch(permute(m, c(1, 1, 2)), sparsefac_error = function(e) e)
  expect_s3_class(err, "sparsefac_invalid_argument")
  expect_equal(err$status, 1L)
  expect_match(conditionMessage(err), "row_order[2] = 1 repeats row_order[1]", fixed = TRUE)
  expect_error(permute(m, col_order = c(2, 2)), "col_order[2] = 2 repeats col_order[1]",
               fixed = TRUE, class = "sparsefac_invalid_argument")
  expect_error(permute(m, c(1, 4, 2)), "row_order[2] = 4 is outside [1, 3]", fixed = TRUE,
               class = "sparsefac_invalid_argument")
  expect_error(permute(m, c(0, 1, 2)), "is outside", class = "sparsefac_invalid_argument")
  expect_error(permute(m, c(1, 2)), "has 2 entries", class = "sparsefac_shape_mismatch")
  expect_error(permute(m, c(1, NA, 2)), "NA", class = "sparsefac_invalid_argument")
  expect_error(permute(m, c(1, 2.5, 3)), "whole", class = "sparsefac_invalid_argument")
  d <- sfac_dense(matrix(1:6, 3, 2), ctx = ctx)
  err <- tryCatch(permute_rows(d, c(1, 1, 2)), sparsefac_error = function(e) e)
  expect_s3_class(err, "sparsefac_invalid_argument")
  expect_equal(err$status, 1L)
  expect_match(conditionMessage(err), "order[2] = 1 repeats order[1]", fixed = TRUE)
  expect_error(permute_rows(d, 1:4), class = "sparsefac_shape_mismatch")
  expect_error(permute_rows(d, NULL), class = "sparsefac_invalid_argument")
  expect_error(permute_rows(m, 1:3), "sfac_dense", class = "sparsefac_error")
  expect_equal(as.data.frame(m)$user, 1:3) # a failed call changes nothing
  close(m)
  expect_error(degree_order(m), "closed", class = "sparsefac_invalid_handle")
  expect_error(permute(m, 1:3), "closed", class = "sparsefac_invalid_handle")
})
