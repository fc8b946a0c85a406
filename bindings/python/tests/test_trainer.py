"""sparsefac.Trainer: step-wise training over sfac_trainer_*."""

import numpy as np
import pytest

import sparsefac as sf


def _als(**kw):
    kw.setdefault("iterations", 5)
    return sf.AlternatingLeastSquares(factors=8, regularization=0.01, deterministic=True,
                                      num_threads=2, random_state=5, **kw)


def _sgd(**kw):
    return sf.SGD(factors=8, iterations=5, learning_rate=0.05, regularization=0.02,
                  deterministic=True, num_threads=2, random_state=5, **kw)


def _ials(**kw):
    return sf.ImplicitALS(factors=8, iterations=5, alpha=2.0, regularization=0.1,
                          deterministic=True, num_threads=2, random_state=5, **kw)


@pytest.mark.parametrize("make", [_als, _sgd, _ials], ids=["als", "sgd", "ials"])
def test_steps_equal_one_run_bit_for_bit(explicit_data, make):
    train, _, _, _ = explicit_data
    if make is _ials:  # implicit feedback needs nonnegative ratings (counts)
        train = train.like(np.abs(train.values))
    with sf.Trainer(make(), train) as whole:
        assert whole.run(5) == 5
        one_go = whole.model()
    with sf.Trainer(make(), train) as steps:
        assert steps.run(3) == 3
        after3 = steps.model()
        assert steps.run(2) == 5 and steps.epochs == 5
        stepped = steps.model()
    fitted = make().fit(train)  # fit runs iterations=5 epochs the same way
    for other in (stepped, fitted):
        np.testing.assert_array_equal(other.user_factors, one_go.user_factors)
        np.testing.assert_array_equal(other.item_factors, one_go.item_factors)
    # a snapshot is independent of later epochs
    assert not np.array_equal(after3.user_factors, stepped.user_factors)
    assert type(stepped) is type(make()) and stepped.shape == (2000, 1000, 8)


def test_als_loss_decreases_and_matches_callback(explicit_data):
    train, test, _, _ = explicit_data
    reported = []
    trainer = sf.Trainer(_als(iterations=20), train, validation=test,
                         callback=lambda e, loss, rmse, s: reported.append((e, loss, rmse)))
    assert np.isnan(trainer.loss)
    losses = []
    for epoch in range(1, 7):
        assert trainer.run(1) == epoch
        losses.append(trainer.loss)
    assert all(a > b for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] > 0 and losses[0] > 1.5 * losses[-1]
    assert [r[0] for r in reported] == list(range(1, 7))
    np.testing.assert_allclose([r[1] for r in reported], losses, rtol=1e-6)
    model = trainer.model()
    np.testing.assert_allclose(reported[-1][2], model.evaluate(test)[0], rtol=1e-6)
    # the snapshot recommends, excluding the training matrix by default
    ids, _ = model.recommend(0, N=5)
    csr = train.to_scipy()
    assert not set(ids) & set(csr.indices[csr.indptr[0]:csr.indptr[1]])
    trainer.close()
    assert trainer.closed
    with pytest.raises(sf.ClosedObjectError):
        trainer.run(1)
    assert model.evaluate(test)[0] < 0.3  # the snapshot outlives the trainer


def test_callback_stops_a_run_and_training_goes_on(explicit_data):
    train, _, _, _ = explicit_data
    seen = []

    def stop_at_3(epoch, *_):
        seen.append(epoch)
        return epoch == 3

    with sf.Trainer(_als(), train, callback=stop_at_3) as trainer:
        assert trainer.run(10) == 3 and seen == [1, 2, 3]
        assert trainer.run(2) == 5 and seen == [1, 2, 3, 4, 5]
        resumed = trainer.model()
    # stopping early and resuming is the same training as 5 epochs in one go
    fitted = _als().fit(train)
    np.testing.assert_array_equal(resumed.user_factors, fitted.user_factors)


def test_callback_exception_and_bad_arguments(explicit_data):
    train, _, _, _ = explicit_data

    class Boom(Exception):
        pass

    def cb(epoch, *_):
        if epoch == 2:
            raise Boom("stop")

    trainer = sf.Trainer(sf.AlternatingLeastSquares(factors=4, num_threads=2), train,
                         callback=cb)
    with pytest.raises(sf.CallbackError) as info:
        trainer.run(5)
    assert isinstance(info.value.__cause__, Boom)
    trainer.close()

    def interrupt(*_):
        raise KeyboardInterrupt

    with sf.Trainer(_als(), train, callback=interrupt) as t2:
        with pytest.raises(KeyboardInterrupt):
            t2.run(1)
    with pytest.raises(TypeError):
        sf.Trainer(object(), train)
    with pytest.raises(TypeError):
        sf.Trainer(_als(), train, callback=42)
    with pytest.raises(ValueError):
        sf.Trainer(_als(), train).run(-1)
    # a class is accepted and gets its defaults
    with sf.Trainer(sf.ImplicitALS, train.like(np.abs(train.values))) as t3:
        assert t3.run(1) == 1 and np.isfinite(t3.loss)
        assert isinstance(t3.model(), sf.ImplicitALS)
        assert "ImplicitALS" in repr(t3)


def test_show_progress_counts_epochs_across_runs(explicit_data, capsys):
    train, test, _, _ = explicit_data
    with sf.Trainer(_als(), train, validation=test, show_progress=True) as trainer:
        trainer.run(2)
        trainer.run(1)
    lines = capsys.readouterr().err.strip().splitlines()
    assert [line.split()[1] for line in lines] == ["1", "2", "3"], lines
    assert all("validation rmse" in line for line in lines)
    _als(iterations=3).fit(train, show_progress=True)
    fit_lines = capsys.readouterr().err.strip().splitlines()
    assert [line.split()[1] for line in fit_lines] == ["1/3", "2/3", "3/3"], fit_lines
