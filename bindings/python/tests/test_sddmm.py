import numpy as np
import pytest
import scipy.sparse as sp

import sparsefac as sf


def problem(rng, m=60, n=45, k=16, density=0.1):
    s = sp.random(m, n, density=density, random_state=int(rng.integers(1 << 30)), format="csr",
                  dtype=np.float32)
    s.data = rng.standard_normal(s.nnz).astype(np.float32)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k)).astype(np.float32)
    return a, b, s


def reference(mode, alpha, a, b, s, beta, p_old):
    d = (a.astype(np.float64) @ b.astype(np.float64).T)
    coo = s.tocoo()
    dots = d[coo.row, coo.col]
    if mode == "scaled":
        val = alpha * dots * coo.data
    elif mode == "pattern":
        val = alpha * dots
    else:
        val = alpha * (coo.data - dots)
    return sp.csr_matrix((val + beta * p_old, (coo.row, coo.col)), shape=s.shape)


@pytest.mark.parametrize("mode", ["scaled", "pattern", "residual"])
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (-0.5, 2.0)])
def test_sddmm_matches_numpy(ctx, rng, mode, alpha, beta):
    a, b, s = problem(rng)
    S = sf.SparseMatrix.from_scipy(s, context=ctx)
    p_old = rng.standard_normal(S.nnz).astype(np.float32)
    P = S.like(p_old)
    out = sf.sddmm(a, b, S, mode=mode, alpha=alpha, beta=beta, out=P)
    assert out is P
    coo = s.tocoo()  # canonical (row, col) order, as the library stores it
    order = np.lexsort((coo.col, coo.row))
    s_sorted = sp.coo_matrix((coo.data[order], (coo.row[order], coo.col[order])), shape=s.shape)
    ref = reference(mode, alpha, a, b, s_sorted, beta, p_old)
    np.testing.assert_allclose(P.to_dense(), ref.toarray(), rtol=1e-5, atol=1e-5)


def test_sddmm_new_output_dense_inputs_and_plan(ctx, rng):
    a, b, s = problem(rng, m=200, n=150, k=8, density=0.05)
    S = sf.SparseMatrix.from_scipy(s, context=ctx)
    A = sf.DenseMatrix(a, context=ctx)
    B = sf.DenseMatrix(b, context=ctx)
    with sf.SddmmPlan(S, 8) as plan:
        assert plan.algorithm in ("row_split", "nnz_split")
        P1 = sf.sddmm(A, B, S, plan=plan)
        P2 = sf.sddmm(A, B, S, plan=plan, out=S.like())
    ref = reference("scaled", 1.0, a, b, s, 0.0, 0.0)
    np.testing.assert_allclose(P1.to_dense(), ref.toarray(), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(P1.values, P2.values)
    nnz_plan = sf.SddmmPlan(S, 8, algorithm="nnz_split")
    assert nnz_plan.algorithm == "nnz_split"
    P3 = sf.sddmm(a, b, S, plan=nnz_plan)
    np.testing.assert_allclose(P3.values, P1.values, rtol=1e-5, atol=1e-6)
    # scipy input works directly
    np.testing.assert_allclose(sf.sddmm(a, b, s).values, P1.values, rtol=1e-5, atol=1e-6)


def test_sddmm_in_place_on_s(ctx, rng):
    a, b, s = problem(rng, k=4)
    S = sf.SparseMatrix.from_scipy(s, context=ctx)
    ref = reference("residual", 1.0, a, b, s, 0.0, 0.0)
    sf.sddmm(a, b, S, mode="residual", out=S)
    np.testing.assert_allclose(S.to_dense(), ref.toarray(), rtol=1e-5, atol=1e-5)


def test_sddmm_bad_input(ctx, rng):
    a, b, s = problem(rng, k=8)
    S = sf.SparseMatrix.from_scipy(s, context=ctx)
    with pytest.raises(sf.ShapeMismatchError) as info:
        sf.sddmm(a[:, :4], b, S)
    assert isinstance(info.value, ValueError)
    with pytest.raises(sf.ShapeMismatchError):
        sf.sddmm(a[:10], b, S)
    with pytest.raises(sf.InvalidValueError):
        sf.sddmm(np.full_like(a, np.nan), b, S)
    other = sf.SparseMatrix.from_coo([0], [0], [1.0], shape=s.shape, context=ctx)
    with pytest.raises(sf.SparsefacError):
        sf.sddmm(a, b, S, out=other)
    with pytest.raises(ValueError, match="mode"):
        sf.sddmm(a, b, S, mode="hadamard")
    S.close()
    with pytest.raises(sf.ClosedObjectError):
        sf.sddmm(a, b, S)
