"""CUDA backend through Python (skipped without a GPU): device-resident matrices and SDDMM with
float32, float16 and bfloat16 factor storage, against numpy on the same rounded inputs."""

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefac as sf

pytestmark = pytest.mark.skipif(sf.cuda_device_count() == 0, reason="no CUDA device")


def to_bfloat16(x):
    """float32 -> nearest bfloat16 (round to nearest even), returned as float32."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


STORAGE = {"float32": lambda x: x, "float16": lambda x: x.astype(np.float16).astype(np.float32),
           "bfloat16": to_bfloat16}


@pytest.fixture(scope="module")
def gpu():
    with sf.Context("cuda", device=0, seed=5) as c:
        yield c


def test_cuda_context(gpu):
    assert gpu.backend == "cuda"
    assert gpu.device_name and "CPU" not in gpu.device_name
    assert "cuda" in repr(gpu)


def test_cuda_context_stream(gpu):
    own = gpu.stream
    assert own != 0
    gpu.set_stream(own)  # its own stream, by handle
    gpu.set_stream(None)
    assert gpu.stream == own


def test_sparse_roundtrip_on_device(gpu):
    ref = sp.random(300, 200, density=0.05, random_state=1, format="csr", dtype=np.float32)
    m = sf.SparseMatrix.from_scipy(ref, context=gpu)
    np.testing.assert_array_equal(m.to_dense(), ref.toarray())
    p, i, v = m.to_csc()
    csc = ref.tocsc()
    csc.sort_indices()
    np.testing.assert_array_equal(p, csc.indptr)
    np.testing.assert_array_equal(i, csc.indices)
    np.testing.assert_array_equal(v, csc.data)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("mode", ["scaled", "residual"])
def test_sddmm_storage_types(gpu, dtype, mode):
    rng = np.random.default_rng(7)
    m, n, k = 500, 400, 32
    s = sp.random(m, n, density=0.02, random_state=2, format="csr", dtype=np.float32)
    s.data = rng.standard_normal(s.nnz).astype(np.float32)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k)).astype(np.float32)
    S = sf.SparseMatrix.from_scipy(s, context=gpu)
    A = sf.DenseMatrix(a, dtype=dtype, context=gpu)
    B = sf.DenseMatrix(b, dtype=dtype, context=gpu)
    assert A.dtype == dtype
    ar, br = STORAGE[dtype](a), STORAGE[dtype](b)
    np.testing.assert_array_equal(A.to_numpy(), ar)  # storage rounding is round-to-nearest
    P = sf.sddmm(A, B, S, mode=mode, alpha=2.0)
    coo = s.tocoo()
    d = np.einsum("ij,ij->i", ar[coo.row].astype(np.float64), br[coo.col].astype(np.float64))
    expect = 2.0 * (d * coo.data if mode == "scaled" else coo.data - d)
    got = P.to_scipy().tocoo()
    got_dense = np.zeros(s.shape)
    got_dense[got.row, got.col] = got.data
    np.testing.assert_allclose(got_dense[coo.row, coo.col], expect, rtol=1e-4, atol=1e-4)


def test_half_overflow_rejected(gpu):
    with pytest.raises(sf.SparsefacError):
        sf.DenseMatrix(np.full((2, 2), 1e6, np.float32), dtype="float16", context=gpu)


def test_plan_on_device(gpu):
    s = sp.random(1000, 800, density=0.01, random_state=3, format="csr", dtype=np.float32)
    S = sf.SparseMatrix.from_scipy(s, context=gpu)
    with sf.SddmmPlan(S, 16) as plan:
        assert plan.algorithm in ("row_split", "nnz_split", "tiled", "cusparse")
        a = np.ones((1000, 16), np.float32)
        b = np.ones((800, 16), np.float32)
        P = sf.sddmm(a, b, S, mode="pattern", plan=plan)
        np.testing.assert_allclose(P.values, 16.0)


def test_model_copied_to_device_answers_as_on_the_host(gpu):
    """A CPU-trained model copied to the GPU: same factors, and recommend / similar_items
    lists whose scores are the host's up to float rounding (near-equal scores may swap)."""
    cpu = sf.Context("cpu", threads=2, seed=4)
    ratings, _, _ = sf.synthesize_ratings(600, 400, 12000, rank=8, noise=0.1, context=cpu)
    host = sf.AlternatingLeastSquares(factors=8, iterations=3, context=cpu).fit(ratings)
    device = host.copy(gpu)
    assert device.context is gpu
    np.testing.assert_array_equal(device.item_factors, host.item_factors)
    users = np.arange(0, 600, 7, dtype=np.int32)
    seen = ratings.to_scipy()
    for _ in range(2):  # the second call is served by the copy made in the first
        ids, scores = device.recommend(users, N=10)  # the training items excluded on the GPU
        want_ids, want_scores = host.recommend(users, N=10)
        np.testing.assert_allclose(scores, want_scores, rtol=1e-4, atol=1e-5)
        pairs_u = np.repeat(users, 10)
        np.testing.assert_allclose(scores.ravel(), host.predict(pairs_u, ids.ravel()),
                                   rtol=1e-4, atol=1e-5)
        for row, user in enumerate(users):
            liked = set(seen.indices[seen.indptr[user]:seen.indptr[user + 1]])
            assert not liked & set(ids[row])
    items = np.arange(0, 400, 9, dtype=np.int32)
    sim_ids, sim_scores = device.similar_items(items, N=5)
    np.testing.assert_allclose(sim_scores, host.similar_items(items, N=5)[1], rtol=1e-4,
                               atol=1e-5)
    assert not np.any(sim_ids == items[:, None])
    # a change of the device copy's factors is what its next answers use
    device.user_factors = host.user_factors[::-1].copy()
    flipped = host.copy()
    flipped.user_factors = host.user_factors[::-1].copy()
    np.testing.assert_allclose(device.recommend(users, N=5)[1], flipped.recommend(users, N=5)[1],
                               rtol=1e-4, atol=1e-5)
