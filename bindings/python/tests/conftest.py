import numpy as np
import pytest

import sparsefac as sf


@pytest.fixture
def ctx():
    with sf.Context("cpu", threads=2, seed=11) as c:
        yield c


@pytest.fixture(scope="module")
def explicit_data():
    """2000 x 1000 explicit ratings of planted rank 8 with noise 0.1, 10% held out."""
    ratings, users, items = sf.synthesize_ratings(2000, 1000, 100000, rank=8, noise=0.1, seed=7)
    train, test = sf.train_test_split(ratings, 0.1, seed=1)
    return train, test, users, items


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
