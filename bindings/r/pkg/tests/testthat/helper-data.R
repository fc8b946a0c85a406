# Planted low-rank data shared by the tests: the planted model's RMSE is `noise`.
planted <- function(users = 400, items = 300, nnz = 24000, rank = 4, noise = 0.1, seed = 7) {
  ctx <- sfac_context("cpu", threads = 1, seed = seed)
  data <- synthesize_ratings(users, items, nnz, rank = rank, noise = noise, ctx = ctx)
  c(split_random(data, 0.2, seed = 3, ctx = ctx), list(ctx = ctx, noise = noise, rank = rank))
}

rss_kib <- function() {
  status <- readLines("/proc/self/status")
  as.numeric(gsub("[^0-9]", "", grep("^VmRSS:", status, value = TRUE)))
}
