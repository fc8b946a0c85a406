# sparsefac from R: train ALS on planted synthetic ratings, report held-out RMSE and the top-5
# items for a user. Run with the package installed (R CMD INSTALL, see the README):
#   Rscript examples/r/quickstart.R
library(sparsefac)

ctx <- sfac_context("cpu", seed = 42)
# 2000 users x 1000 items, 100k ratings of a rank-8 model plus N(0, 0.1^2) noise: a good model
# gets a held-out RMSE near 0.1.
ratings <- synthesize_ratings(2000, 1000, 100000, rank = 8, noise = 0.1, skew = 0.5, ctx = ctx)
parts <- split_random(ratings, test_fraction = 0.2, seed = 1, ctx = ctx)

model <- als(parts$train, rank = 8, iterations = 10, lambda = 0.02, ctx = ctx,
             callback = function(epoch, loss, rmse, seconds) {
               cat(sprintf("epoch %2d  loss %.4f  held-out RMSE %.4f  (%.2fs)\n", epoch, loss,
                           rmse, seconds))
               FALSE
             },
             validation = parts$test)
print(model)

metrics <- evaluate(model, parts$test, ctx = ctx)
cat(sprintf("held-out RMSE %.4f, MAE %.4f\n", metrics[["rmse"]], metrics[["mae"]]))

top <- recommend(model, users = 1, n = 5, exclude = parts$train, ctx = ctx)
cat("top-5 items for user 1:\n")
print(top, row.names = FALSE)

path <- file.path(tempdir(), "quickstart.sfm")
save_model(model, path)
reloaded <- load_model(path, ctx = ctx)
stopifnot(identical(predict(reloaded, 1:10, 1:10), predict(model, 1:10, 1:10)))
cat("saved and reloaded", path, "\n")
stopifnot(metrics[["rmse"]] < 0.2)
