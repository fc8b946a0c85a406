"""The generated layer itself: statuses raise, NULL handles and wrong buffers are refused."""

import threading
import time

import numpy as np
import pytest

import sparsefac as sf
from sparsefac import _core


def test_status_raises_package_exception_with_message():
    ctx = _core.sfac_context_create(_core.SFAC_BACKEND_CPU, 0, 1, 0)
    try:
        with pytest.raises(sf.OutOfRangeError, match=r"row_indices\[0\] = 9"):
            _core.sfac_sparse_create_coo(ctx, 2, 2, 1, np.array([9], np.int32),
                                         np.array([0], np.int32), None, 0)
    finally:
        _core.sfac_context_destroy(ctx)


def test_null_handles_are_errors_not_crashes():
    with pytest.raises(sf.InvalidHandleError):
        _core.sfac_sparse_get_shape(None)
    with pytest.raises(sf.InvalidHandleError):
        _core.sfac_model_predict(None, 0, np.zeros(0, np.int32), np.zeros(0, np.int32),
                                 np.zeros(0, np.float32))
    _core.sfac_sparse_destroy(None)  # destroy accepts NULL
    ctx = _core.sfac_context_create(_core.SFAC_BACKEND_CPU, 0, 1, 0)
    try:
        with pytest.raises(TypeError):  # a handle of the wrong type never reaches C
            _core.sfac_sparse_get_shape(ctx)
    finally:
        _core.sfac_context_destroy(ctx)


def test_buffers_must_match_the_c_type():
    ctx = _core.sfac_context_create(_core.SFAC_BACKEND_CPU, 0, 1, 0)
    try:
        with pytest.raises(TypeError, match="format 'f'"):
            _core.sfac_dense_create(ctx, 2, 2, 0, np.zeros(4, np.float64))
        with pytest.raises(TypeError, match="4-byte"):
            _core.sfac_sparse_create_coo(ctx, 2, 2, 1, np.array([0], np.int64),
                                         np.array([0], np.int32), None, 0)
        with pytest.raises((BufferError, ValueError, TypeError)):
            _core.sfac_dense_create(ctx, 2, 2, 0, np.zeros((4, 4), np.float32)[:, ::2])
        d = _core.sfac_dense_create(ctx, 2, 2, 0, np.arange(4, dtype=np.float32))
        readonly = np.zeros(4, np.float32)
        readonly.flags.writeable = False
        with pytest.raises((BufferError, ValueError, TypeError)):
            _core.sfac_dense_download(d, readonly, readonly.size)
        out = np.empty(4, np.float32)
        _core.sfac_dense_download(d, out, out.size)
        np.testing.assert_array_equal(out, [0, 1, 2, 3])
        _core.sfac_dense_destroy(d)
    finally:
        _core.sfac_context_destroy(ctx)


def test_too_small_buffers_raise_and_are_left_untouched():
    """Each output's capacity is the real length of its buffer: a short one raises
    BufferTooSmallError (status 13) naming the array, and the call writes nothing."""
    ctx = _core.sfac_context_create(_core.SFAC_BACKEND_CPU, 0, 1, 0)
    m = None
    try:
        m = _core.sfac_sparse_create_coo(ctx, 2, 3, 3, np.array([0, 1, 1], np.int32),
                                         np.array([2, 0, 1], np.int32),
                                         np.array([1, 2, 3], np.float32), 0)
        rows = np.full(2, -7, np.int32)
        with pytest.raises(sf.BufferTooSmallError,
                           match="row_indices needs 3 elements but its capacity is 2") as info:
            _core.sfac_sparse_download_coo(m, rows, None, None, rows.size)
        err = info.value
        assert err.code == 13 and err.status == _core.sfac_status_string(13)
        assert isinstance(err, ValueError)
        np.testing.assert_array_equal(rows, [-7, -7])
        offsets = np.full(2, -7, np.int64)  # rows + 1 = 3 needed
        with pytest.raises(sf.BufferTooSmallError, match=r"row_offsets needs 3 elements"):
            _core.sfac_sparse_download_csr(m, offsets, offsets.size, None, None, 0)
        np.testing.assert_array_equal(offsets, [-7, -7])
        with pytest.raises(sf.InvalidArgumentError, match=r"capacity of values = -1"):
            _core.sfac_sparse_download_coo(m, None, None, np.empty(3, np.float32), -1)
        values = np.empty(3, np.float32)
        _core.sfac_sparse_download_coo(m, None, None, values, values.size)
        np.testing.assert_array_equal(values, [1, 2, 3])
        # Inputs: the count must match the offsets (the lengths of the arrays passed).
        with pytest.raises(sf.InvalidArgumentError, match=r"row_offsets\[rows\] = 3 but nnz = 2"):
            _core.sfac_sparse_create_csr(ctx, 2, 3, np.array([0, 1, 3], np.int64),
                                         np.array([2, 0], np.int32), None, 2, 0)
    finally:
        _core.sfac_sparse_destroy(m)
        _core.sfac_context_destroy(ctx)


def test_gil_released_during_training():
    """Another Python thread keeps running while the library trains."""
    ratings, _, _ = sf.synthesize_ratings(4000, 2000, 400000, rank=32, seed=3)
    model = sf.AlternatingLeastSquares(factors=64, iterations=4, num_threads=1)
    worker = threading.Thread(target=model.fit, args=(ratings,))
    # a stall of this thread shows as a gap between two consecutive samples of the clock
    ticks, longest = 0, 0.0
    started = last = time.perf_counter()
    worker.start()
    while worker.is_alive():
        time.sleep(0.001)  # needs the GIL back to return
        now = time.perf_counter()
        longest = max(longest, now - last)
        last = now
        ticks += 1
    worker.join()
    elapsed = time.perf_counter() - started
    assert elapsed > 0.3, f"training too short ({elapsed:.2f}s) to tell"
    # with the GIL held, this thread would stall for the whole sfac_train call
    assert longest < 0.5 * elapsed, (longest, elapsed, ticks)


def test_close_during_a_call_waits_for_it():
    """Closing an object that a running call uses (here from the epoch callback, while
    sfac_train runs) retires it: new uses raise at once, the handle is freed when the call
    ends."""
    ratings, _, _ = sf.synthesize_ratings(300, 200, 5000, rank=4, seed=2)
    ctx = sf.Context("cpu", threads=1)
    model = sf.AlternatingLeastSquares(factors=4, iterations=4, context=ctx)
    states = []

    def cb(epoch, *_):
        if epoch == 1:
            ratings.close()
            ctx.close()
        states.append((ratings.closed, ratings._retired is not None, ctx._retired is not None))
        with pytest.raises(sf.ClosedObjectError):
            ratings.shape

    model.fit(ratings, callback=cb)
    assert states == [(True, True, True)] * 4
    assert ratings._retired is None and ratings._busy == 0 and ctx._retired is None
    assert model.shape == (300, 200, 4)
    with pytest.raises(sf.ClosedObjectError):
        model.fit(ratings)
