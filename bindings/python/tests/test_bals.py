import numpy as np
import pytest
import scipy.sparse as sp

import sparsefac as sf


def random_matrix(ctx, rng, rows=300, cols=200, density=0.05):
    m = sp.random(rows, cols, density=density, format="csr", dtype=np.float32, random_state=rng)
    m.data[:] = rng.uniform(1, 5, m.nnz).astype(np.float32)
    return sf.SparseMatrix.from_scipy(m, context=ctx)


def assert_same_csr(a, b):
    assert a.shape == b.shape
    for x, y in zip(a.to_csr(), b.to_csr()):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("reorder", [False, True])
@pytest.mark.parametrize("tiles", [(0, 0), (32, 16), (7, 300), (1, 1)])
def test_roundtrip(ctx, rng, reorder, tiles):
    m = random_matrix(ctx, rng)
    bals = m.to_bals(*tiles, reorder=reorder)
    assert isinstance(bals, sf.Bals)
    rows, cols = m.shape
    assert bals.shape == (rows, cols)
    if tiles == (0, 0):
        assert (bals.tile_rows, bals.tile_cols) == (min(1024, rows), min(256, cols))
    else:
        assert (bals.tile_rows, bals.tile_cols) == tiles
    tiles_n = -(-rows // bals.tile_rows) * -(-cols // bals.tile_cols)
    assert bals.tiles == tiles_n
    assert bals.tile_ptr.dtype == np.int64 and bals.tile_ptr.size == tiles_n + 1
    assert bals.seg_ptr.dtype == np.int64 and bals.seg_ptr.size == tiles_n * bals.tile_rows + 1
    assert bals.tile_col.dtype == np.int32 and bals.tile_col.size == bals.tile_ptr[-1]
    assert bals.seg_col.dtype == np.int32 and bals.seg_col.size == m.nnz == bals.nnz
    assert bals.values.dtype == np.float32 and bals.values.size == m.nnz
    assert bals.row_order.dtype == np.int32 and bals.col_order.dtype == np.int32
    np.testing.assert_allclose(np.sort(bals.values), np.sort(m.values))
    with sf.SparseMatrix.from_bals(bals, context=ctx) as back:
        assert_same_csr(back, m)


def test_orders(ctx, rng):
    m = random_matrix(ctx, rng)
    rows, cols = m.shape
    plain = m.to_bals(16, 16)
    np.testing.assert_array_equal(plain.row_order, np.arange(rows))
    np.testing.assert_array_equal(plain.col_order, np.arange(cols))
    ordered = m.to_bals(16, 16, reorder=True)
    np.testing.assert_array_equal(ordered.row_order, m.degree_order("rows"))
    np.testing.assert_array_equal(ordered.col_order, m.degree_order("cols"))


def test_worked_example(ctx):
    # docs/bals-format.md
    dense = np.array([[1, 0, 2, 0, 3, 0],
                      [4, 5, 0, 6, 0, 0],
                      [0, 0, 0, 0, 0, 7],
                      [0, 0, 0, 0, 0, 0],
                      [0, 8, 9, 10, 0, 0]], np.float32)
    m = sf.SparseMatrix.from_scipy(sp.csr_matrix(dense), context=ctx)
    b = m.to_bals(2, 3)
    np.testing.assert_array_equal(b.tile_ptr, [0, 3, 5, 5, 6, 8, 9])
    np.testing.assert_array_equal(b.tile_col, [0, 2, 1, 4, 3, 5, 1, 2, 3])
    np.testing.assert_array_equal(b.seg_ptr, [0, 2, 4, 5, 6, 6, 6, 7, 7, 9, 9, 10, 10])
    np.testing.assert_array_equal(b.seg_col, [0, 1, 0, 2, 0, 1, 0, 0, 1, 0])
    np.testing.assert_array_equal(b.values, [1, 2, 4, 5, 3, 6, 7, 8, 9, 10])
    r = m.to_bals(2, 3, reorder=True)
    np.testing.assert_array_equal(r.row_order, [0, 1, 4, 2, 3])
    np.testing.assert_array_equal(r.col_order, np.arange(6))


def test_any_object_with_the_attributes(ctx, rng):
    m = random_matrix(ctx, rng)
    bals = m.to_bals(20, 20, reorder=True)

    class Plain:
        pass

    obj = Plain()
    for name in sf.Bals._fields:
        value = getattr(bals, name)
        # lists and wider integer types are converted
        setattr(obj, name, value.astype(np.int64).tolist()
                if isinstance(value, np.ndarray) and value.dtype == np.int32 else value)
    with sf.SparseMatrix.from_bals(obj, context=ctx) as back:
        assert_same_csr(back, m)
    # values None: a pattern (all ones); orders None: identities
    with sf.SparseMatrix.from_bals(bals._replace(values=None), context=ctx) as pattern:
        np.testing.assert_array_equal(pattern.values, np.ones(m.nnz, np.float32))


def test_empty_matrix(ctx):
    m = sf.SparseMatrix.from_coo([], [], [], shape=(4, 3), context=ctx)
    b = m.to_bals()
    assert b.nnz == 0 and b.tile_col.size == 0
    with sf.SparseMatrix.from_bals(b, context=ctx) as back:
        assert back.shape == (4, 3) and back.nnz == 0


def test_column_out_of_range_raises(ctx, rng):
    m = random_matrix(ctx, rng)
    bals = m.to_bals(32, 16)
    tile_col = bals.tile_col.copy()
    tile_col[0] = m.shape[1] + 5
    with pytest.raises(sf.OutOfRangeError, match=r"tile_col\[0\]") as info:
        sf.SparseMatrix.from_bals(bals._replace(tile_col=tile_col), context=ctx)
    assert isinstance(info.value, IndexError) and info.value.status == "out of range"
    seg_col = bals.seg_col.copy()
    seg_col[3] = 10**6
    with pytest.raises(sf.OutOfRangeError, match=r"seg_col\[3\]"):
        sf.SparseMatrix.from_bals(bals._replace(seg_col=seg_col), context=ctx)


def test_other_invalid_inputs_raise(ctx, rng):
    m = random_matrix(ctx, rng)
    bals = m.to_bals(32, 16)
    values = bals.values.copy()
    values[2] = np.nan
    with pytest.raises(sf.InvalidValueError, match=r"values\[2\]"):
        sf.SparseMatrix.from_bals(bals._replace(values=values), context=ctx)
    with pytest.raises(sf.InvalidArgumentError, match="row_order"):
        sf.SparseMatrix.from_bals(bals._replace(row_order=np.zeros(m.shape[0], np.int32)),
                                  context=ctx)
    with pytest.raises(sf.InvalidArgumentError, match="tile_rows"):
        sf.SparseMatrix.from_bals(bals._replace(tile_rows=0), context=ctx)
    # lengths are checked before the library reads the arrays
    with pytest.raises(ValueError, match="seg_ptr has"):
        sf.SparseMatrix.from_bals(bals._replace(seg_ptr=bals.seg_ptr[:-1]), context=ctx)
    with pytest.raises(ValueError, match="seg_col has"):
        sf.SparseMatrix.from_bals(bals._replace(seg_col=bals.seg_col[:-1]), context=ctx)
    with pytest.raises(sf.InvalidArgumentError, match="tile_rows"):
        m.to_bals(-1, 4)
    with pytest.raises(sf.InvalidArgumentError, match="limit"):
        m.to_bals(1 << 30, 1)


def test_training_from_bals_matches(explicit_data):
    train = explicit_data[0]
    with sf.Context("cpu", threads=2, seed=5) as c:
        bals = train.to_bals(256, 128, reorder=True)
        copy = sf.SparseMatrix.from_bals(bals, context=c)

        def fit(matrix):
            model = sf.AlternatingLeastSquares(factors=8, iterations=3, regularization=0.01,
                                               num_threads=2, deterministic=True,
                                               random_state=42)
            return model.fit(matrix)

        a, b = fit(train), fit(copy)
        np.testing.assert_array_equal(a.user_factors, b.user_factors)
        np.testing.assert_array_equal(a.item_factors, b.item_factors)
