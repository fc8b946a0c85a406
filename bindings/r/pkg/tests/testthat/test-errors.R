test_that("bad ratings input is rejected with the library's message", {
  ctx <- sfac_context("cpu", seed = 1)
  df <- data.frame(user = c(1, 2, 3), item = c(1, 2, 3), rating = c(1, NaN, 2))
  err <- tryCatch(sfac_sparse(df, ctx), sparsefac_error = function(e) e)
  expect_equal(err$status, 5L)
  expect_match(conditionMessage(err), "sfac_sparse: .*values")
  expect_error(sfac_sparse(data.frame(user = c(1, NA), item = 1:2, rating = 1), ctx),
               "must not be NA", class = "sparsefac_error")
  expect_error(sfac_sparse(data.frame(user = c(1, 0), item = 1:2, rating = 1), ctx),
               "out of range", class = "sparsefac_out_of_range")
  # Ids beyond the given shape are caught by the library.
  expect_error(sfac_sparse(data.frame(user = c(1, 5), item = 1:2, rating = 1), ctx,
                           dims = c(3, 3)), class = "sparsefac_out_of_range")
  # Duplicates are an error unless summed.
  dup <- data.frame(user = c(1, 1), item = c(2, 2), rating = c(1, 2))
  expect_error(sfac_sparse(dup, ctx), class = "sparsefac_duplicate_entry")
  summed <- as.data.frame(sfac_sparse(dup, ctx, sum_duplicates = TRUE))
  expect_equal(summed$rating, 3)
  expect_error(sfac_sparse("not a matrix", ctx), class = "sparsefac_error")
})

test_that("bad queries are rejected, not crashed on", {
  d <- planted(users = 50, items = 40, nnz = 800)
  m <- als(d$train, rank = 4, iterations = 2, ctx = d$ctx)
  expect_error(predict(m, 51, 1), "out of range", class = "sparsefac_out_of_range")
  # Messages speak R's numbering: the id as given (1-based) and its 1-based position.
  expect_error(predict(m, c(1, 2, 51), c(1, 1, 1)),
               "user id 51 \\(position 3\\) out of range \\(ids are 1..50\\)",
               class = "sparsefac_out_of_range")
  expect_error(recommend(m, c(1, 10000), n = 2),
               "user id 10000 \\(position 2\\) out of range \\(ids are 1..50\\)",
               class = "sparsefac_out_of_range")
  expect_error(similar_items(m, 41), "item id 41 \\(position 1\\) out of range \\(ids are 1..40\\)",
               class = "sparsefac_out_of_range")
  expect_error(predict(m, 1:3, 1:2), class = "sparsefac_shape_mismatch")
  expect_error(predict(m, NA, 1), "NA", class = "sparsefac_error")
  expect_error(recommend(m, 1, n = 5, items = 41), class = "sparsefac_out_of_range")
  expect_error(similar_items(m, 0), class = "sparsefac_out_of_range")
  expect_error(recalculate_user(m, c(1, 2), c(1, NaN)), class = "sparsefac_invalid_value")
  expect_error(recalculate_user(m, c(1, 2), 1), class = "sparsefac_shape_mismatch")
  wrong <- Matrix::sparseMatrix(i = 1, j = 1, x = 1, dims = c(10, 10))
  expect_error(evaluate(m, wrong, ctx = d$ctx), class = "sparsefac_shape_mismatch")
  expect_error(als(d$train, rank = 0, ctx = d$ctx), class = "sparsefac_invalid_argument")
  expect_error(als(d$train, lambda = NA, ctx = d$ctx), class = "sparsefac_error")
  expect_error(als(d$train, callback = "no", ctx = d$ctx), class = "sparsefac_error")
})

test_that("closed objects error cleanly", {
  ctx <- sfac_context("cpu", seed = 1)
  r <- synthesize_ratings(30, 20, 200, rank = 2, ctx = ctx)
  m <- als(r, rank = 2, iterations = 1, ctx = ctx)
  s <- sfac_sparse(r, ctx)
  expect_true(is_open(m))
  close(m)
  close(m) # closing twice is harmless
  expect_false(is_open(m))
  expect_error(predict(m, 1, 1), "closed", class = "sparsefac_invalid_handle")
  expect_error(save_model(m, tempfile()), "closed", class = "sparsefac_error")
  expect_output(print(m), "closed")
  close(s)
  expect_error(evaluate(als(r, rank = 2, iterations = 1, ctx = ctx), s), "closed")
  close(ctx)
  expect_error(synthesize_ratings(3, 3, 3, ctx = ctx), "closed",
               class = "sparsefac_invalid_handle")
  # Objects outlive the context they were made in.
  ctx2 <- sfac_context("cpu", seed = 1)
  m2 <- als(r, rank = 2, iterations = 1, ctx = ctx2)
  close(ctx2)
  expect_length(predict(m2, 1, 1), 1)
})

test_that("unreadable and corrupt files are errors", {
  expect_error(load_model(file.path(tempdir(), "missing.sfm")), "missing.sfm",
               class = "sparsefac_io")
  junk <- tempfile(fileext = ".sfm")
  on.exit(unlink(junk))
  writeBin(as.raw(1:200), junk)
  expect_error(load_model(junk), class = "sparsefac_error")
  bad <- tempfile(fileext = ".csv")
  writeLines(c("user,item,rating", "1,2,3", "4,5"), bad)
  expect_error(sfac_read_sparse(bad), ":3:", class = "sparsefac_parse")
  good <- tempfile(fileext = ".csv")
  writeLines(c("user,item,rating", "10,20,3.5", "30,20,1"), good)
  m <- sfac_read_sparse(good, remap_ids = TRUE)
  expect_equal(dim(m), c(2, 1))
  expect_equal(m$user_ids, c(10, 30))
  expect_equal(m$item_ids, 20)
  expect_equal(as.data.frame(m)$rating, c(3.5, 1))
})

test_that("10k create/destroy cycles do not leak", {
  skip_on_cran()
  ctx <- sfac_context("cpu", seed = 1)
  r <- synthesize_ratings(50, 40, 600, rank = 2, ctx = ctx)
  m <- als(r, rank = 2, iterations = 1, ctx = ctx)
  path <- tempfile(fileext = ".sfm")
  on.exit(unlink(path))
  save_model(m, path)
  cycle <- function(i) {
    s <- sfac_sparse(r, ctx)
    if (i %% 2 == 0) close(s) # the other half is left to the finalizer
    l <- load_model(path, ctx = ctx)
    close(l)
    c2 <- sfac_context("cpu", seed = i)
    close(c2)
  }
  # Objects left to the finalizer are freed only when R collects, which R schedules by its own
  # heap use, not by native memory: collecting every 500 cycles bounds what is outstanding, so
  # the RSS measures leaks rather than garbage that malloc kept after a late collection.
  cycles <- function(n) {
    for (i in seq_len(n)) {
      cycle(i)
      if (i %% 500 == 0) invisible(gc())
    }
    invisible(gc())
  }
  cycles(1000) # warm-up: allocator pools and R's own caches
  before <- rss_kib()
  cycles(10000)
  after <- rss_kib()
  message(sprintf("RSS before %.0f KiB, after 10k cycles %.0f KiB (%+.0f KiB)", before, after,
                  after - before))
  expect_lt(after - before, 8 * 1024)
})

test_that("a too-small output buffer is buffer_too_small, naming the array", {
  # The idiomatic functions size every output themselves; the native layer (native_<name>, the
  # package's internal SWIG wrappers) allocates the element counts it is given and passes those
  # lengths as the library's capacities, so a short count reaches the library as a short buffer.
  ctx <- sfac_context("cpu", seed = 1)
  s <- sfac_sparse(data.frame(user = 1:3, item = c(3, 1, 2), rating = c(1, 2, 3)), ctx)
  ptr <- ptr_of(s, "sfac_matrix", "x")
  short <- native_sparse_download_coo(ptr, 0, 0, s$nnz - 1)
  expect_equal(short[[1L]], 13L)
  err <- tryCatch(sfac_ok(short, "download"), sparsefac_error = function(e) e)
  expect_s3_class(err, "sparsefac_buffer_too_small")
  expect_match(conditionMessage(err), "values needs 3 elements but its capacity is 2")
  # Arrays that share a capacity get the shortest of their lengths.
  expect_error(sfac_ok(native_sparse_download_coo(ptr, 3, 2, 3), "download"), "capacity is 2",
               class = "sparsefac_buffer_too_small")
  expect_error(sfac_ok(native_sparse_degree_order(ptr, 0L, 2), "degree_order"),
               "order needs 3 elements", class = "sparsefac_buffer_too_small")
  expect_identical(sfac_ok(native_sparse_download_coo(ptr, 0, 0, 3), "download")[[3L]],
                   c(1, 2, 3))
  close(s)
})
