test_that("lookup_ids maps a file's original ids to 1-based indices", {
  ctx <- sfac_context("cpu", seed = 1)
  path <- tempfile(fileext = ".csv")
  on.exit(unlink(path))
  users <- c(9007199254740000, 17, 4, 17, 250, 4)
  items <- c(3, 1000, 3, 77, 5, 1000)
  ratings <- c(1, 2, 3, 4, 5, 6)
  writeLines(c("user,item,rating",
               sprintf("%s,%s,%s", format(users, scientific = FALSE), items, ratings)), path)
  m <- sfac_read_sparse(path, ctx = ctx, remap_ids = TRUE)
  expect_equal(m$user_ids, sort(unique(users)))
  expect_equal(m$item_ids, sort(unique(items)))
  u <- lookup_ids(m, users, "user")
  i <- lookup_ids(m, items, "item")
  expect_type(u, "integer")
  # The reference: the position in the sorted distinct ids, as R's match() gives it.
  expect_identical(u, match(users, sort(unique(users))))
  expect_identical(i, match(items, sort(unique(items))))
  # Every rating sits at the indices lookup_ids gives for its ids.
  dense <- as.matrix(as_dgCMatrix(m))
  expect_equal(dense[cbind(u, i)], ratings)
  expect_identical(lookup_ids(m, c(250, 250, 4), side = "user"), c(3L, 3L, 1L))
  expect_identical(lookup_ids(m, numeric(0), "item"), integer(0))

  # Unknown ids: an error naming the id, or NA with strict = FALSE.
  err <- tryCatch(lookup_ids(m, c(17, 18, 19), "user"), error = function(e) e)
  expect_s3_class(err, "sparsefac_error")
  expect_s3_class(err, "sparsefac_out_of_range")
  expect_match(conditionMessage(err), "2 user ids did not occur in the file \\(first: 18\\)")
  expect_identical(lookup_ids(m, c(17, 18, 5), "item", strict = FALSE), c(NA, NA, 2L))
  expect_error(lookup_ids(m, 1.5, "user"), "whole numbers", class = "sparsefac_error")
  expect_error(lookup_ids(m, NA_real_, "user"), "NA", class = "sparsefac_error")
  expect_error(lookup_ids(m, "17", "user"), "numeric", class = "sparsefac_error")

  # Matrices without maps, and closed ones, are rejected.
  # Without remapping the file's ids do not fit (the library says so); a copy has no maps.
  expect_error(sfac_read_sparse(path, ctx = ctx), "does not fit the int32 index range",
               class = "sparsefac_out_of_range")
  plain <- sfac_sparse(as_dgCMatrix(m), ctx)
  expect_null(plain$id_maps)
  expect_error(lookup_ids(plain, 17), "remap_ids = TRUE")
  expect_error(lookup_ids(as_dgCMatrix(m), 17), "must be a sfac_matrix")
  close(m)
  expect_false(is_open(m))
  expect_error(lookup_ids(m, 17), "closed", class = "sparsefac_invalid_handle")
})

test_that("one-based MovieLens ids remap and look up", {
  ctx <- sfac_context("cpu", seed = 1)
  path <- tempfile(fileext = ".dat")
  on.exit(unlink(path))
  writeLines(c("5::10::4::0", "1::10::3::0", "5::2::1::0"), path)
  m <- sfac_read_sparse(path, ctx = ctx, remap_ids = TRUE)
  expect_equal(m$user_ids, c(1, 5))
  expect_equal(m$item_ids, c(2, 10))
  expect_identical(lookup_ids(m, c(5, 1), "user"), c(2L, 1L))
  expect_identical(lookup_ids(m, 10, "item"), 2L)
  expect_error(lookup_ids(m, 3, "item"), "1 item id did not occur",
               class = "sparsefac_out_of_range")
})
