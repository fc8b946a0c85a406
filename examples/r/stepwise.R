# sparsefac from R, owning the training loop: ALS one epoch at a time, stopping when the
# held-out RMSE stops improving and keeping the best snapshot; then SDDMM with a reusable plan
# computes the training residuals of that model. Run with the package installed:
#   Rscript examples/r/stepwise.R
library(sparsefac)

ctx <- sfac_context("cpu", threads = 1, seed = 7)
ratings <- synthesize_ratings(1000, 600, 40000, rank = 6, noise = 0.1, ctx = ctx)
parts <- split_random(ratings, test_fraction = 0.2, seed = 2, ctx = ctx)

trainer <- sfac_trainer(parts$train, "als", rank = 6, lambda = 0.02, ctx = ctx)
best <- NULL
best_rmse <- Inf
repeat {
  train_epochs(trainer, 1)
  model <- trainer_model(trainer)
  rmse <- evaluate(model, parts$test, ctx = ctx)[["rmse"]]
  cat(sprintf("epochs %2d  loss %.4f  held-out RMSE %.4f\n", trainer_epochs(trainer),
              trainer_loss(trainer), rmse))
  gain <- best_rmse - rmse
  if (gain > 0) {
    best <- model
    best_rmse <- rmse
  }
  if (gain < 1e-4 || trainer_epochs(trainer) >= 30) break
}
close(trainer)
cat(sprintf("best held-out RMSE %.4f\n", best_rmse))

# Residuals r - u.v at the training ratings, twice through one plan.
train <- sfac_sparse(parts$train, ctx)
plan <- sfac_sddmm_plan(train, k = best$rank, ctx = ctx)
print(plan)
u <- user_factors(best)
v <- item_factors(best)
residual <- sfac_sddmm(u, v, plan$pattern, mode = "residual", plan = plan, ctx = ctx)
train_rmse <- sqrt(mean(Matrix::summary(residual)$x^2))
cat(sprintf("training RMSE from the SDDMM residuals %.4f\n", train_rmse))
# Same plan, beta = -1: (r - u.v) - r = -u.v, the negated predictions.
negated <- sfac_sddmm(u, v, plan$pattern, mode = "residual", beta = -1, plan = plan, ctx = ctx)
t <- Matrix::summary(parts$train)
stopifnot(isTRUE(all.equal(-Matrix::summary(negated)$x[order(t$i, t$j)][1:10],
                           predict(best, t$i, t$j)[order(t$i, t$j)][1:10], tolerance = 1e-4)))
stopifnot(best_rmse < 0.2, train_rmse < best_rmse + 0.05)
