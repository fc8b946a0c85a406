# Synthetic data with a known answer, and train/test splits.

synthesize_ratings <- function(users, items, nnz, rank = 8L, noise = 0.1, skew = 0,
                               implicit = FALSE, factors = FALSE, ctx = default_context()) {
  for (name in c("users", "items", "nnz", "rank")) check_count(get(name), name)
  cptr <- ptr_of(ctx, "sfac_context", "ctx")
  out <- sfac_ok(native_synthesize_ratings(cptr, if (implicit) 1L else 0L, users, items, nnz,
                                         rank, as.double(noise), as.double(skew)),
                 "synthesize_ratings")
  m <- wrap_sparse(out[[1L]])
  on.exit(close(m))
  uf <- out[[2L]]
  vf <- out[[3L]]
  on.exit({ native_r_close(uf); native_r_close(vf) }, add = TRUE)
  ratings <- as_dgc(m)
  if (!factors) return(ratings)
  dense <- function(ptr, rows) {
    v <- sfac_ok(native_dense_download(ptr, rows * rank), "synthesize_ratings")[[1L]]
    matrix(v, nrow = rows, ncol = rank, byrow = TRUE)
  }
  list(ratings = ratings, user_factors = dense(uf, users), item_factors = dense(vf, items))
}

split_random <- function(ratings, test_fraction = 0.2, seed = 0, ctx = default_context()) {
  check_count(seed, "seed")
  rm <- as_sparse_arg(ratings, ctx, "ratings")
  on.exit(if (!is.null(rm$temp)) close(rm$temp))
  out <- sfac_ok(native_split_random(rm$ptr, as.double(test_fraction), as.double(seed)),
                 "split_random")
  split_result(out)
}

split_leave_k_out <- function(ratings, k = 1L, seed = 0, ctx = default_context()) {
  check_count(seed, "seed")
  check_count(k, "k")
  rm <- as_sparse_arg(ratings, ctx, "ratings")
  on.exit(if (!is.null(rm$temp)) close(rm$temp))
  out <- sfac_ok(native_split_leave_k_out(rm$ptr, as.double(k), as.double(seed)),
                 "split_leave_k_out")
  split_result(out)
}

split_result <- function(out) {
  train <- wrap_sparse(out[[1L]])
  test <- wrap_sparse(out[[2L]])
  on.exit({ close(train); close(test) })
  list(train = as_dgc(train), test = as_dgc(test))
}
