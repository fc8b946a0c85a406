"""10k create/destroy cycles of every kind of object must not grow the process's memory."""

import gc

import numpy as np
import pytest

import sparsefac as sf


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def cycle(rows, cols, vals, dense, ratings, two_rows):
    with sf.Context("cpu", threads=1, seed=5) as ctx:
        s = sf.SparseMatrix.from_coo(rows, cols, vals, shape=(50, 40), context=ctx)
        d = sf.DenseMatrix(dense, context=ctx)
        p = sf.sddmm(d, dense[:40], s)
        p.to_scipy()
        with sf.AlternatingLeastSquares(factors=2, iterations=1, context=ctx) as m:
            m.fit(ratings, callback=lambda *a: None)
            m.recommend(0, N=3)
            m.recommend([0, 1], user_items=two_rows, N=3)  # per-user rows: a temporary matrix
        est = sf.AlternatingLeastSquares(factors=2, context=ctx)
        with sf.Trainer(est, ratings, callback=lambda *a: None) as trainer:
            trainer.run(1)
            trainer.loss
            with trainer.model() as snapshot:
                snapshot.user_factors
        try:  # the failure path must not leak either
            sf.SparseMatrix.from_coo([0], [99], [1.0], shape=(50, 40), context=ctx)
        except IndexError:
            pass
        s.close()
        d.close()
        p.close()


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/statm"), reason="needs /proc")
def test_no_leak_over_10k_cycles():
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 50, 200)
    cols = rng.integers(0, 40, 200)
    keep = np.unique(rows * 40 + cols)
    rows, cols = (keep // 40).astype(np.int32), (keep % 40).astype(np.int32)
    vals = rng.standard_normal(rows.size).astype(np.float32)
    dense = rng.standard_normal((50, 4)).astype(np.float32)
    ratings, _, _ = sf.synthesize_ratings(30, 20, 150, rank=2, seed=1)
    two_rows = ratings.to_scipy()[:2]
    for _ in range(500):  # warm-up: allocator pools, caches of numpy/scipy
        cycle(rows, cols, vals, dense, ratings, two_rows)
    gc.collect()
    before = rss_bytes()
    for _ in range(10000):
        cycle(rows, cols, vals, dense, ratings, two_rows)
    gc.collect()
    growth = rss_bytes() - before
    print(f"RSS growth over 10k cycles: {growth / 1024:.0f} KiB")
    # one leaked handle per cycle (a few hundred bytes at least) would exceed this
    assert growth < 4 * 1024 * 1024, growth
