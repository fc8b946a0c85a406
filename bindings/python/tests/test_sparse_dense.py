import os

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefac as sf


def random_coo(rng, m, n, density):
    dense = rng.random((m, n)) < density
    r, c = np.nonzero(dense)
    perm = rng.permutation(r.size)
    return r[perm], c[perm], rng.standard_normal(r.size).astype(np.float32)


def test_coo_roundtrip_sorted(ctx, rng):
    r, c, v = random_coo(rng, 40, 30, 0.2)
    m = sf.SparseMatrix.from_coo(r, c, v, shape=(40, 30), context=ctx)
    assert m.shape == (40, 30) and m.nnz == r.size
    rr, cc, vv = m.to_coo()
    order = np.lexsort((c, r))
    np.testing.assert_array_equal(rr, r[order])
    np.testing.assert_array_equal(cc, c[order])
    np.testing.assert_array_equal(vv, v[order])
    assert rr.dtype == np.int32 and vv.dtype == np.float32
    ref = np.zeros((40, 30), np.float32)
    ref[r, c] = v
    np.testing.assert_array_equal(m.to_dense(), ref)
    np.testing.assert_array_equal(m.to_scipy().toarray(), ref)
    np.testing.assert_array_equal(m.to_scipy("csc").toarray(), ref)
    np.testing.assert_array_equal(m.to_scipy("coo").toarray(), ref)


def test_scipy_in_all_formats(ctx, rng):
    ref = sp.random(50, 20, density=0.15, random_state=3, format="csr", dtype=np.float64)
    for fmt in ("csr", "csc", "coo"):
        m = sf.SparseMatrix.from_scipy(ref.asformat(fmt), context=ctx)
        np.testing.assert_allclose(m.to_dense(), ref.toarray().astype(np.float32))
        p, i, v = m.to_csc()
        csc = ref.tocsc()
        csc.sort_indices()
        np.testing.assert_array_equal(p, csc.indptr)
        np.testing.assert_array_equal(i, csc.indices)


def test_scipy_duplicates_are_summed_like_scipy(ctx):
    coo = sp.coo_matrix(([1.0, 2.0, 5.0], ([0, 0, 1], [1, 1, 2])), shape=(2, 3))
    m = sf.SparseMatrix.from_scipy(coo, context=ctx)
    np.testing.assert_array_equal(m.to_dense(), coo.toarray())
    assert m.nnz == 2
    with pytest.raises(sf.DuplicateEntryError, match=r"duplicate") as info:
        sf.SparseMatrix.from_coo([0, 0], [1, 1], [1.0, 2.0], shape=(2, 3), context=ctx)
    # the Python spelling of the fix, and the library's detail (which entry, which inputs)
    msg = str(info.value)
    assert "pass sum_duplicates=True" in msg and "SFAC_" not in msg, msg
    assert "duplicate entry (row 0, col 1) at " in msg and " 0 and 1" in msg, msg
    assert info.value.status == "duplicate entry" and info.value.code == 6
    summed = sf.SparseMatrix.from_coo([0, 0], [1, 1], [1.0, 2.0], shape=(2, 3),
                                      sum_duplicates=True, context=ctx)
    np.testing.assert_array_equal(summed.to_dense(), [[0, 3, 0], [0, 0, 0]])
    # CSR and CSC constructors report it the same way
    with pytest.raises(sf.DuplicateEntryError, match=r"pass sum_duplicates=True"):
        sf.SparseMatrix.from_csr([0, 2, 2], [1, 1], [1.0, 2.0], (2, 3), context=ctx)
    with pytest.raises(sf.DuplicateEntryError, match=r"pass sum_duplicates=True"):
        sf.SparseMatrix.from_csc([0, 0, 2, 2], [0, 0], [1.0, 2.0], (2, 3), context=ctx)
    for make, indptr, indices in ((sf.SparseMatrix.from_csr, [0, 2, 2], [1, 1]),
                                  (sf.SparseMatrix.from_csc, [0, 0, 2, 2], [0, 0])):
        m = make(indptr, indices, [1.0, 2.0], (2, 3), sum_duplicates=True, context=ctx)
        np.testing.assert_array_equal(m.to_dense(), [[0, 3, 0], [0, 0, 0]])


def test_pattern_matrix_and_values(ctx):
    m = sf.SparseMatrix.from_coo([2, 0, 1], [0, 2, 1], shape=(3, 3), context=ctx)
    np.testing.assert_array_equal(m.values, [1, 1, 1])
    m.values = [4.0, 5.0, 6.0]
    np.testing.assert_array_equal(m.to_coo()[2], [4, 5, 6])
    like = m.like()
    np.testing.assert_array_equal(like.values, [0, 0, 0])
    np.testing.assert_array_equal(like.to_coo()[1], m.to_coo()[1])
    with pytest.raises(ValueError, match="3"):
        m.set_values([1.0, 2.0])
    with pytest.raises(sf.InvalidValueError):
        m.set_values([1.0, np.nan, 2.0])


def test_csr_csc_constructors(ctx):
    dense = np.array([[0, 1.5, 0], [2, 0, 3], [0, 0, 0], [0, 4, 0]], np.float32)
    csr = sp.csr_matrix(dense)
    m = sf.SparseMatrix.from_csr(csr.indptr, csr.indices, csr.data, csr.shape, context=ctx)
    np.testing.assert_array_equal(m.to_dense(), dense)
    csc = sp.csc_matrix(dense)
    m2 = sf.SparseMatrix.from_csc(csc.indptr, csc.indices, csc.data, csc.shape, context=ctx)
    np.testing.assert_array_equal(m2.to_dense(), dense)
    p, i, v = m2.to_csr()
    np.testing.assert_array_equal(p, csr.indptr)
    with pytest.raises(ValueError, match="indptr"):
        sf.SparseMatrix.from_csr([0, 1], [0], [1.0], (3, 3), context=ctx)
    # entries past indptr[-1] are unused, as in scipy
    m3 = sf.SparseMatrix.from_csr(csr.indptr, np.append(csr.indices, 9),
                                  np.append(csr.data, 7), csr.shape, context=ctx)
    np.testing.assert_array_equal(m3.to_dense(), dense)
    m4 = sf.SparseMatrix.from_csc(csc.indptr, np.append(csc.indices, 9), None, csc.shape,
                                  context=ctx)
    np.testing.assert_array_equal(m4.to_dense(), dense != 0)


@pytest.mark.parametrize("rows,cols,vals,shape,exc,pattern", [
    ([0, 1], [0, 5], [1, 2], (2, 3), IndexError, r"col_indices\[1\] = 5"),
    ([0, -1], [0, 1], [1, 2], (2, 3), IndexError, r"row_indices\[1\] = -1"),
    ([0, 1], [0, 1], [1, np.nan], (2, 3), ValueError, r"values\[1\]"),
    ([0, 1], [0, 1], [1, np.inf], (2, 3), ValueError, r"values\[1\]"),
    ([0, 1], [0, 1, 2], [1, 2], (2, 3), ValueError, r"rows has 2 entries but cols has 3"),
    ([0, 1], [0, 1], [1, 2, 3], (2, 3), ValueError, r"values has 3 entries"),
    ([0, 2**40], [0, 1], [1, 2], (2, 3), IndexError, r"int32"),
    ([0, 1], [0, 1], [1, 2], (-2, 3), ValueError, r"rows"),
])
def test_bad_coo_input(ctx, rows, cols, vals, shape, exc, pattern):
    with pytest.raises(exc, match=pattern) as info:
        sf.SparseMatrix.from_coo(rows, cols, vals, shape=shape, context=ctx)
    assert isinstance(info.value, sf.SparsefacError) or exc is ValueError


def test_library_error_carries_status(ctx):
    with pytest.raises(sf.SparsefacError) as info:
        sf.SparseMatrix.from_coo([0], [7], [1.0], shape=(1, 3), context=ctx)
    err = info.value
    assert isinstance(err, sf.OutOfRangeError) and isinstance(err, IndexError)
    assert err.status == "out of range" and err.code == 3
    assert "col_indices[0] = 7" in err.message


def test_wrong_dtypes_raise_type_error(ctx):
    with pytest.raises(TypeError, match="integers"):
        sf.SparseMatrix.from_coo(["a"], [0], [1.0], shape=(1, 1), context=ctx)
    with pytest.raises(TypeError, match="numbers"):
        sf.SparseMatrix.from_coo([0], [0], ["x"], shape=(1, 1), context=ctx)
    with pytest.raises(TypeError, match="scipy"):
        sf.SparseMatrix.from_scipy(np.eye(2), context=ctx)


def test_closed_objects_raise_never_crash(ctx):
    m = sf.SparseMatrix.from_coo([0], [0], [1.0], shape=(1, 1), context=ctx)
    m.close()
    m.close()  # idempotent
    assert m.closed and "closed" in repr(m)
    for op in (lambda: m.shape, m.to_coo, m.to_scipy, lambda: m.like(), lambda: m.values):
        with pytest.raises(sf.ClosedObjectError, match="closed"):
            op()
    with pytest.raises(ValueError):
        m.nnz
    c = sf.Context("cpu")
    c.close()
    with pytest.raises(sf.InvalidHandleError):
        sf.SparseMatrix.from_coo([0], [0], [1.0], shape=(1, 1), context=c)
    with pytest.raises(sf.ClosedObjectError):
        c.backend
    d = sf.DenseMatrix(np.ones((2, 2)), context=ctx)
    with d:
        pass
    with pytest.raises(sf.ClosedObjectError):
        d.to_numpy()
    with pytest.raises(sf.ClosedObjectError):
        with d:
            pass


def test_matrix_outlives_context():
    c = sf.Context("cpu", seed=1)
    m = sf.SparseMatrix.from_coo([0, 1], [1, 0], [2.0, 3.0], shape=(2, 2), context=c)
    c.close()
    np.testing.assert_array_equal(m.to_dense(), [[0, 2], [3, 0]])


def test_read_csv_with_id_maps(ctx, tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text("user,item,rating\n1001,7,4.5\n42,7,3\n1001,99,1\n")
    m = sf.SparseMatrix.read(path, remap_ids=True, context=ctx)
    assert m.shape == (2, 2) and m.nnz == 3
    np.testing.assert_array_equal(m.row_ids.ids, [42, 1001])
    np.testing.assert_array_equal(m.col_ids.ids, [7, 99])
    np.testing.assert_array_equal(m.row_ids.lookup([1001, 5, 42]), [1, -1, 0])
    np.testing.assert_array_equal(m.to_dense(), [[3, 0], [4.5, 1]])
    assert "2 ids" in repr(m.row_ids)
    plain = sf.SparseMatrix.read(tmp_path / "ratings.csv", context=ctx)
    assert plain.shape == (1002, 100) and plain.row_ids is None


def test_matrix_market_roundtrip(ctx, tmp_path, rng):
    r, c, v = random_coo(rng, 12, 9, 0.3)
    m = sf.SparseMatrix.from_coo(r, c, v, shape=(12, 9), context=ctx)
    path = os.fspath(tmp_path / "m.mtx")
    m.write_matrix_market(path)
    back = sf.SparseMatrix.read(path, context=ctx)
    np.testing.assert_array_equal(back.to_dense(), m.to_dense())
    import scipy.io
    # spmatrix=False: the sparse-array result, which SciPy 1.20 makes the default (no warning).
    expected = scipy.io.mmread(path, spmatrix=False).toarray().astype(np.float32)
    np.testing.assert_array_equal(expected, m.to_dense())


def test_unreadable_and_malformed_files(ctx, tmp_path):
    with pytest.raises(OSError, match="cannot open") as info:
        sf.SparseMatrix.read(tmp_path / "missing.mtx", context=ctx)
    assert isinstance(info.value, sf.SparsefacIOError)
    bad = tmp_path / "bad.csv"
    bad.write_text("u,i,r\n1,2,3\n4,5\n")
    with pytest.raises(sf.ParseError, match=r"bad.csv:3"):
        sf.SparseMatrix.read(bad, context=ctx)
    with pytest.raises(ValueError, match="format"):
        sf.SparseMatrix.read(bad, format="xml", context=ctx)


def test_dense_roundtrip_and_errors(ctx, rng):
    a = rng.standard_normal((7, 5))
    d = sf.DenseMatrix(a, context=ctx)
    assert d.shape == (7, 5) and d.dtype == "float32"
    np.testing.assert_array_equal(d.to_numpy(), a.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(d), a.astype(np.float32))
    d.upload(np.zeros((7, 5)))
    assert not d.to_numpy().any()
    with pytest.raises(ValueError, match="shape"):
        d.upload(np.zeros((5, 7)))
    with pytest.raises(sf.InvalidValueError):
        d.upload(np.full((7, 5), np.nan))
    with pytest.raises(ValueError, match="2-D"):
        sf.DenseMatrix(np.zeros(3), context=ctx)
    z = sf.DenseMatrix.zeros(3, 4, context=ctx)
    assert z.shape == (3, 4) and not z.to_numpy().any()
    assert repr(z) == "<sparsefac.DenseMatrix 3x4 float32>"
    with pytest.raises(ValueError, match="dtype"):
        sf.DenseMatrix(a, dtype="int8", context=ctx)


def test_half_storage_needs_cuda(ctx):
    if ctx.backend != "cpu":
        pytest.skip("CPU context expected")
    with pytest.raises(sf.UnsupportedError) as info:
        sf.DenseMatrix(np.ones((2, 2)), dtype="bfloat16", context=ctx)
    assert isinstance(info.value, NotImplementedError)


def test_context_properties_and_repr():
    with sf.Context("cpu", threads=1, seed=99) as c:
        assert c.backend == "cpu" and c.threads == 1 and c.seed == 99
        assert "CPU" in c.device_name
        assert "seed=99" in repr(c)
        c.synchronize()
    with pytest.raises(ValueError, match="backend"):
        sf.Context("tpu")
    if sf.cuda_device_count() == 0:
        with pytest.raises((sf.UnsupportedError, sf.DeviceError)):
            sf.Context("cuda")
    assert sf.Context("auto").backend in ("cpu", "cuda")
    assert '"version"' in sf.build_info()


def test_memory_limit_refuses_huge_shapes_before_allocating(tmp_path):
    with sf.Context("cpu", threads=1) as c:
        assert c.memory_limit == 0
        c.memory_limit = 64 << 20
        assert c.memory_limit == 64 << 20
        with pytest.raises(sf.OutOfMemoryError, match="context's limit") as info:
            sf.SparseMatrix.from_coo([5], [3], [1.0], shape=(2**31 - 1, 10), context=c)
        assert isinstance(info.value, MemoryError)
        huge = tmp_path / "huge.mtx"
        huge.write_text("%%MatrixMarket matrix coordinate real general\n268435456 10 0\n")
        with pytest.raises(sf.OutOfMemoryError, match="268435456 x 10"):
            sf.SparseMatrix.read(str(huge), context=c)
        with pytest.raises(sf.InvalidArgumentError, match="must be >= 0"):
            c.memory_limit = -1
        small = sf.SparseMatrix.from_coo([0, 1], [1, 0], [1.0, 2.0], shape=(2, 2), context=c)
        assert small.nnz == 2
        # the device budget of inference is kept on any context (used by CUDA ones)
        assert c.device_memory_limit == 0
        c.device_memory_limit = 1 << 30
        assert c.device_memory_limit == 1 << 30
        with pytest.raises(sf.InvalidArgumentError, match="must be >= 0"):
            c.device_memory_limit = -1


def test_cpu_contexts_have_no_stream():
    with sf.Context("cpu", threads=1) as c:
        assert c.stream == 0
        c.set_stream(None)
        c.set_stream(0)
        with pytest.raises(sf.UnsupportedError, match="no device streams"):
            c.set_stream(12345)

        class FakeTorchStream:
            cuda_stream = 777

        with pytest.raises(sf.UnsupportedError):
            c.set_stream(FakeTorchStream())
        assert c.stream == 0


def test_read_flags_reach_the_library(ctx, tmp_path):
    path = tmp_path / "u.data"
    path.write_text("1\t2\t5\t881250949\n3\t1\t4\t881250950\n1\t2\t1\t881250951\n")
    with pytest.raises(sf.DuplicateEntryError, match=r"duplicate entry \(row 1, col 2\)") as e:
        sf.SparseMatrix.read(path, context=ctx)
    assert "sum_duplicates=True" in str(e.value) and "SFAC_" not in str(e.value)
    m = sf.SparseMatrix.read(path, one_based=True, sum_duplicates=True, context=ctx)
    assert m.shape == (3, 2)
    np.testing.assert_array_equal(m.to_dense(), [[0, 6], [0, 0], [4, 0]])
    dat = tmp_path / "ratings.dat"
    dat.write_text("10::20::3::0\n11::20::4::0\n")
    d = sf.SparseMatrix.read(dat, format="movielens_dat", remap_ids=True, context=ctx)
    assert d.shape == (2, 1) and list(d.col_ids.ids) == [20]


# Row counts 1, 3, 0, 3, 1; column counts 2, 1, 2, 3; values 1..8 in row-major order.
DEGREE_ROWS = [0, 1, 1, 1, 3, 3, 3, 4]
DEGREE_COLS = [3, 0, 2, 3, 0, 1, 2, 3]


def degree_matrix(ctx):
    return sf.SparseMatrix.from_coo(DEGREE_ROWS, DEGREE_COLS, np.arange(1, 9), shape=(5, 4),
                                    context=ctx)


def test_degree_order_by_count_with_ties_in_index_order(ctx):
    m = degree_matrix(ctx)
    rows = m.degree_order("rows")
    assert rows.dtype == np.int32
    np.testing.assert_array_equal(rows, [1, 3, 0, 4, 2])
    np.testing.assert_array_equal(m.degree_order(), [1, 3, 0, 4, 2])
    np.testing.assert_array_equal(m.degree_order("cols"), [3, 0, 2, 1])
    np.testing.assert_array_equal(m.degree_order(1), [3, 0, 2, 1])  # SFAC_AXIS_COLS
    with pytest.raises(ValueError, match="axis"):
        m.degree_order("diagonal")
    empty = sf.SparseMatrix.from_coo([], [], shape=(0, 3), context=ctx)
    assert empty.degree_order("rows").size == 0
    np.testing.assert_array_equal(empty.degree_order("cols"), [0, 1, 2])


def test_permute_moves_every_entry_with_its_value(ctx):
    m = degree_matrix(ctx)
    before = m.to_dense()
    row_order = np.array([2, 4, 0, 3, 1])
    col_order = np.array([1, 3, 0, 2])
    p = m.permute(row_order, col_order)
    assert isinstance(p, sf.SparseMatrix) and p.shape == (5, 4) and p.nnz == 8
    # entry (row_order[r], col_order[c]) is now (r, c), with its value
    inv_r, inv_c = np.argsort(row_order), np.argsort(col_order)
    expected = sorted((int(inv_r[r]), int(inv_c[c]), float(v))
                      for r, c, v in zip(DEGREE_ROWS, DEGREE_COLS, range(1, 9)))
    r, c, v = p.to_coo()
    assert list(zip(r.tolist(), c.tolist(), v.tolist())) == expected
    np.testing.assert_array_equal(p.to_dense(), before[np.ix_(row_order, col_order)])
    # one side only; None keeps the other
    np.testing.assert_array_equal(m.permute(row_order=row_order).to_dense(), before[row_order])
    np.testing.assert_array_equal(m.permute(col_order=col_order).to_dense(),
                                  before[:, col_order])
    np.testing.assert_array_equal(m.permute().to_dense(), before)
    # degree order puts the fullest rows and columns first
    dp = m.permute(m.degree_order("rows"), m.degree_order("cols"))
    np.testing.assert_array_equal(dp.degree_order("rows"), np.arange(5))
    np.testing.assert_array_equal(dp.degree_order("cols"), np.arange(4))
    np.testing.assert_array_equal(m.to_dense(), before, "the source is unchanged")


def test_permute_rows_and_back(ctx, rng):
    a = rng.standard_normal((5, 3)).astype(np.float32)
    d = sf.DenseMatrix(a, context=ctx)
    order = np.array([3, 0, 4, 2, 1], np.int32)
    p = d.permute_rows(order)
    assert isinstance(p, sf.DenseMatrix) and p.shape == (5, 3) and p.dtype == "float32"
    np.testing.assert_array_equal(p.to_numpy(), a[order])
    back = p.permute_rows(np.argsort(order))
    np.testing.assert_array_equal(back.to_numpy(), a)
    np.testing.assert_array_equal(d.to_numpy(), a, "the source is unchanged")


def test_permuted_sddmm_is_the_permuted_product(ctx, rng):
    m = degree_matrix(ctx)
    a = rng.standard_normal((5, 3)).astype(np.float32)
    b = rng.standard_normal((4, 3)).astype(np.float32)
    rows, cols = m.degree_order("rows"), m.degree_order("cols")
    A, B = sf.DenseMatrix(a, context=ctx), sf.DenseMatrix(b, context=ctx)
    want = sf.sddmm(A, B, m).permute(rows, cols)
    got = sf.sddmm(A.permute_rows(rows), B.permute_rows(cols), m.permute(rows, cols))
    np.testing.assert_array_equal(got.to_coo()[0], want.to_coo()[0])
    np.testing.assert_allclose(got.values, want.values, rtol=1e-6)


def test_non_permutations_are_rejected_with_the_library_message(ctx):
    m = sf.SparseMatrix.from_coo([0, 1, 2], [0, 1, 1], [1.0, 2.0, 3.0], shape=(3, 2),
                                 context=ctx)
    with pytest.raises(sf.InvalidArgumentError, match="repeats") as info:
        m.permute([0, 0, 1])
    assert isinstance(info.value, ValueError)
    assert info.value.code == 1 and info.value.status == "invalid argument"
    assert "row_order[1] = 0 repeats row_order[0]" in info.value.message
    with pytest.raises(sf.InvalidArgumentError, match=r"col_order\[1\] = 1 repeats col_order"):
        m.permute(None, [1, 1])
    with pytest.raises(sf.InvalidArgumentError, match=r"row_order\[1\] = 3 is outside \[0, 3\)"):
        m.permute([0, 3, 1])
    with pytest.raises(ValueError, match="row_order has 2 entries, expected rows = 3"):
        m.permute([0, 1])
    with pytest.raises(TypeError, match="integers"):
        m.permute(["a", "b", "c"])
    d = sf.DenseMatrix(np.arange(6).reshape(3, 2), context=ctx)
    with pytest.raises(sf.InvalidArgumentError, match="repeats") as info:
        d.permute_rows([0, 0, 1])
    assert info.value.code == 1 and "order[1] = 0 repeats order[0]" in info.value.message
    with pytest.raises(ValueError, match="order has 4 entries, expected rows = 3"):
        d.permute_rows([0, 1, 2, 0])
    np.testing.assert_array_equal(m.to_coo()[0], [0, 1, 2], "a failed call changes nothing")
    m.close()
    with pytest.raises(sf.ClosedObjectError):
        m.degree_order("rows")
