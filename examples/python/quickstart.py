"""sparsefac from Python: train ALS on synthetic ratings, report held-out RMSE and a user's
top-5 items, train step-wise with a Trainer until the loss stalls, then run one SDDMM. Run with the package importable (pip install bindings/python,
or PYTHONPATH=<build>/bindings/python/pkg)."""

import numpy as np
import scipy.sparse as sp

import sparsefac as sf

# 5,000 users x 2,000 items, ~200k ratings from planted rank-8 factors plus N(0, 0.1^2) noise:
# a perfect model would have RMSE 0.1 on held-out ratings.
ratings, _, _ = sf.synthesize_ratings(5000, 2000, 200_000, rank=8, noise=0.1, skew=0.5, seed=42)
train, test = sf.train_test_split(ratings, test_fraction=0.1, seed=1)
print(f"ratings: {ratings!r}  train nnz {train.nnz}, test nnz {test.nnz}")

model = sf.AlternatingLeastSquares(factors=8, regularization=0.01, iterations=10,
                                   random_state=42)
model.fit(train, validation=test,
          callback=lambda epoch, loss, rmse, secs: print(
              f"  epoch {epoch:2d}  train loss {loss:.4f}  held-out RMSE {rmse:.4f}"))
rmse, mae = model.evaluate(test)
print(f"held-out RMSE {rmse:.4f} (noise floor 0.1), MAE {mae:.4f}")

user = 0
ids, scores = model.recommend(user, N=5)  # items the user already rated are excluded
print(f"top-5 items for user {user}: " +
      ", ".join(f"{i} ({s:.2f})" for i, s in zip(ids, scores)))

# implicit-style per-user rows: one row per requested user (here: hide the first 100 items
# from user 7 instead of the items it rated).
hide = sp.csr_matrix((np.ones(100, np.float32), (np.zeros(100, int), np.arange(100))),
                     shape=(1, 2000))
ids7, _ = model.recommend(7, user_items=hide, N=5)
assert np.all(ids7 >= 100)
print(f"top-5 items for user 7 beyond the first 100: {ids7.tolist()}")

# Step-wise: the caller owns the loop and stops when an epoch gains less than 1% of the loss.
with sf.Trainer(sf.AlternatingLeastSquares(factors=8, regularization=0.01, random_state=42),
                train) as trainer:
    previous = np.inf
    while trainer.run(1) < 50 and trainer.loss < 0.99 * previous:
        previous = trainer.loss
    epochs, loss, stepped = trainer.epochs, trainer.loss, trainer.model()
step_rmse = stepped.evaluate(test)[0]
print(f"Trainer: stopped after {epochs} epochs, loss {loss:.4f}, held-out RMSE {step_rmse:.4f}")

# SDDMM: the residuals r_ij - <u_i, v_j> at the held-out ratings, checked against numpy.
residual = sf.sddmm(model.user_factors, model.item_factors, test, mode="residual")
r, c, v = test.to_coo()
expect = v - np.einsum("ij,ij->i", model.user_factors[r], model.item_factors[c])
assert np.allclose(residual.values, expect, atol=1e-4)
print(f"SDDMM residual RMSE {np.sqrt(np.mean(residual.values ** 2)):.4f}")

if max(rmse, step_rmse) > 0.2:
    raise SystemExit(f"RMSE {max(rmse, step_rmse):.4f} is far above the noise floor")
print("quickstart OK")
