"""Data with a known answer, and train/test splits."""

from . import _core
from ._context import Context
from ._dense import DenseMatrix
from ._lib import call
from ._sparse import SparseMatrix, as_sparse, is_scipy_sparse


def synthesize_ratings(users, items, nnz, rank=8, noise=0.1, skew=0.0, implicit=False, seed=0,
                       context=None):
    """Ratings drawn from planted rank-`rank` factors: explicit values are the planted dot plus
    N(0, noise^2) noise (so the planted model's RMSE is `noise`); implicit ones are counts
    observed where the planted affinity is high. Returns (ratings SparseMatrix, planted user
    factors, planted item factors) with the factors as float32 arrays. Seeded by `seed` (or by
    the given context's seed)."""
    ctx = context if context is not None else Context("cpu", seed=seed)
    feedback = _core.SFAC_FEEDBACK_IMPLICIT if implicit else _core.SFAC_FEEDBACK_EXPLICIT
    ratings, uf, itf = call(_core.sfac_synthesize_ratings, ctx, feedback, int(users),
                            int(items), int(nnz), int(rank), float(noise), float(skew))
    matrix = SparseMatrix(ratings, ctx)
    factors = []
    for ptr in (uf, itf):
        with DenseMatrix._adopt(ptr, ctx) as dense:
            factors.append(dense.to_numpy())
    return matrix, factors[0], factors[1]


def _split(fn, ratings, *args):
    was_scipy = is_scipy_sparse(ratings)
    m = as_sparse(ratings, name="ratings")
    train, test = call(fn, m, *args)
    train, test = SparseMatrix(train, m.context), SparseMatrix(test, m.context)
    if was_scipy:
        out = train.to_scipy(), test.to_scipy()
        train.close()
        test.close()
        return out
    return train, test


def train_test_split(ratings, test_fraction=0.2, seed=0):
    """Each nonzero goes to test with probability test_fraction. Returns (train, test) of the
    input's kind (SparseMatrix, or scipy csr for scipy input), both of the input's shape."""
    return _split(_core.sfac_split_random, ratings, float(test_fraction), int(seed))


def leave_k_out_split(ratings, K=1, seed=0):
    """K random ratings of every user with more than K ratings go to test."""
    return _split(_core.sfac_split_leave_k_out, ratings, int(K), int(seed))
