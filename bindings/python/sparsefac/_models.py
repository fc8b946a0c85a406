"""Estimators: AlternatingLeastSquares (explicit), ImplicitALS and SGD, with a surface close to
the `implicit` package (fit / recommend / similar_items / recalculate_user)."""

import os
import sys

import numpy as np

from . import _core
from ._context import Context
from ._errors import CallbackError, ClosedObjectError, SparsefacError
from ._lib import Handle, as_float32, as_int32, call
from ._sparse import as_sparse, is_scipy_sparse

_ALGO_ALS = _core.SFAC_ALGO_ALS
_ALGO_IALS = _core.SFAC_ALGO_IALS
_ALGO_SGD = _core.SFAC_ALGO_SGD


class _ModelHandle(Handle):
    _destroy = staticmethod(_core.sfac_model_destroy)
    _kind = "model"


class _Options(Handle):
    _destroy = staticmethod(_core.sfac_train_options_destroy)
    _kind = "training options"


class _EpochRelay:
    """The callable the trampoline calls after every epoch. It never raises into the library:
    the user's exception is kept and training aborts (-1); fit() re-raises it afterwards."""

    def __init__(self, callback, show_progress, iterations):
        self.callback = callback
        self.show_progress = show_progress
        self.iterations = iterations
        self.error = None

    def __call__(self, epoch, loss, validation_rmse, seconds):
        try:
            if self.show_progress:
                line = f"epoch {epoch}/{self.iterations}  loss {loss:.6g}"
                if not np.isnan(validation_rmse):
                    line += f"  validation rmse {validation_rmse:.6g}"
                print(line + f"  {seconds:.3f}s", file=sys.stderr, flush=True)
            if self.callback is not None and self.callback(epoch, loss, validation_rmse,
                                                           seconds):
                return 1
            return 0
        except BaseException as exc:  # KeyboardInterrupt too: stop training, re-raise after
            self.error = exc
            return -1


def _scalar_or_array(values, name):
    arr = np.asarray(values)
    return arr.ndim == 0, as_int32(arr, name)


class MatrixFactorization:
    """Common surface of the estimators. Hyperparameters left as None take the library's
    defaults for the algorithm. Without `context`, a private CPU context with `num_threads`
    threads and seed `random_state` is created."""

    _algorithm = None

    def __init__(self, factors=32, regularization=None, iterations=None, use_cg=False,
                 cg_steps=None, lambda_user=None, lambda_item=None, use_biases=False,
                 init_scale=None, deterministic=False, num_threads=0, random_state=0,
                 context=None):
        self.factors = factors
        self.regularization = regularization
        self.iterations = iterations
        self.use_cg = use_cg
        self.cg_steps = cg_steps
        self.lambda_user = lambda_user
        self.lambda_item = lambda_item
        self.use_biases = use_biases
        self.init_scale = init_scale
        self.deterministic = deterministic
        self.num_threads = num_threads
        self.random_state = random_state
        self.context = context
        self._model = None
        self._train = None  # training matrix, the default exclusion for recommend

    # ---- training --------------------------------------------------------------------------

    def _ints(self):
        return {_core.SFAC_OPT_RANK: self.factors, _core.SFAC_OPT_ITERATIONS: self.iterations,
                _core.SFAC_OPT_DETERMINISTIC: int(bool(self.deterministic))}

    def _doubles(self):
        return {_core.SFAC_OPT_LAMBDA: self.regularization,
                _core.SFAC_OPT_LAMBDA_USER: self.lambda_user,
                _core.SFAC_OPT_LAMBDA_ITEM: self.lambda_item,
                _core.SFAC_OPT_INIT_SCALE: self.init_scale}

    def _make_options(self):
        options = _Options(_core.sfac_train_options_create(self._algorithm))
        for key, value in self._ints().items():
            if value is not None:
                call(_core.sfac_train_options_set_int, options, key, int(value))
        for key, value in self._doubles().items():
            if value is not None:
                call(_core.sfac_train_options_set_double, options, key, float(value))
        return options

    def _context(self):
        if self.context is None:
            self.context = Context("cpu", threads=self.num_threads, seed=self.random_state)
        return self.context

    def fit(self, user_items, validation=None, callback=None, show_progress=False):
        """Trains on a users x items matrix (SparseMatrix or scipy.sparse). `validation`
        (same shape) is scored every epoch. `callback(epoch, train_loss, validation_rmse,
        seconds)` runs after every epoch; a truthy return stops training early. If it raises,
        training stops and CallbackError is raised from the callback's exception."""
        ctx = self._context()
        ratings = as_sparse(user_items, ctx, "user_items")
        with self._make_options() as options:
            if validation is not None:
                held = as_sparse(validation, ctx, "validation")
                call(_core.sfac_train_options_set_validation, options, held)
            relay = None
            if callback is not None or show_progress:
                if callback is not None and not callable(callback):
                    raise TypeError("callback must be callable")
                total = call(_core.sfac_train_options_get_int, options, _core.SFAC_OPT_ITERATIONS)
                relay = _EpochRelay(callback, show_progress, total)
                call(_core.sfac_train_options_set_callback, options, relay)
            try:
                ptr = call(_core.sfac_train, ctx, ratings, options)
            except CallbackError as err:
                if relay is not None and relay.error is not None:
                    if not isinstance(relay.error, Exception):
                        raise relay.error  # KeyboardInterrupt, SystemExit: as they are
                    raise err from relay.error
                raise
        self._replace(ptr)
        self._train = ratings
        return self

    def _replace(self, ptr):
        old, self._model = self._model, _ModelHandle(ptr)
        if old is not None:
            old.close()

    @property
    def _mh(self):
        if self._model is None:
            raise ClosedObjectError(f"{type(self).__name__} is not fitted (call fit or load)",
                                    "invalid handle", 2)
        return self._model

    def close(self):
        """Frees the model now (it is also freed when the estimator is collected)."""
        if self._model is not None:
            self._model.close()
        self._train = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ---- model contents ------------------------------------------------------------------

    @property
    def shape(self):
        """(users, items, factors) of the fitted model."""
        return tuple(call(_core.sfac_model_get_shape, self._mh))

    @property
    def user_factors(self):
        users, _, rank = self.shape
        out = np.empty((users, rank), np.float32)
        call(_core.sfac_model_get_user_factors, self._mh, out)
        return out

    @user_factors.setter
    def user_factors(self, factors):
        users, _, rank = self.shape
        arr = as_float32(factors, "user_factors")
        if arr.shape != (users, rank):
            raise ValueError(f"user_factors must have shape {(users, rank)}, got {arr.shape}")
        call(_core.sfac_model_set_user_factors, self._mh, arr)

    @property
    def item_factors(self):
        _, items, rank = self.shape
        out = np.empty((items, rank), np.float32)
        call(_core.sfac_model_get_item_factors, self._mh, out)
        return out

    @item_factors.setter
    def item_factors(self, factors):
        _, items, rank = self.shape
        arr = as_float32(factors, "item_factors")
        if arr.shape != (items, rank):
            raise ValueError(f"item_factors must have shape {(items, rank)}, got {arr.shape}")
        call(_core.sfac_model_set_item_factors, self._mh, arr)

    def biases(self):
        """(global_mean, user_biases, item_biases), or None for a model without biases."""
        users, items, _ = self.shape
        mean = np.empty(1, np.float32)
        ub = np.empty(users, np.float32)
        ib = np.empty(items, np.float32)
        if not call(_core.sfac_model_get_biases, self._mh, mean, ub, ib):
            return None
        return float(mean[0]), ub, ib

    # ---- scoring ---------------------------------------------------------------------------

    def predict(self, users, items):
        """Predicted ratings of the (users[i], items[i]) pairs; scalars give a scalar."""
        scalar_u, u = _scalar_or_array(users, "users")
        scalar_i, i = _scalar_or_array(items, "items")
        if u.size != i.size:
            if u.size == 1:
                u = np.full(i.size, u[0], np.int32)
            elif i.size == 1:
                i = np.full(u.size, i[0], np.int32)
            else:
                raise ValueError(f"users has {u.size} entries but items has {i.size}")
        out = np.empty(u.size, np.float32)
        call(_core.sfac_model_predict, self._mh, u.size, u, i, out)
        return out[0] if scalar_u and scalar_i else out

    def evaluate(self, matrix):
        """(rmse, mae) on the nonzeros of `matrix`."""
        m = as_sparse(matrix, self._context(), "matrix")
        rmse, mae = call(_core.sfac_model_evaluate, self._mh, m)
        return rmse, mae

    def ranking_metrics(self, test_user_items, K=10, train_user_items=None):
        """precision, recall, ndcg and map at K over the users with test items. The items of
        `train_user_items` (default: the matrix given to fit, if any) are never ranked."""
        ctx = self._context()
        test = as_sparse(test_user_items, ctx, "test_user_items")
        exclude = self._exclusion(train_user_items, True)
        p, r, n, m = call(_core.sfac_model_ranking_metrics, self._mh, exclude, test, int(K))
        return {"precision": p, "recall": r, "ndcg": n, "map": m}

    def _exclusion(self, user_items, wanted):
        if not wanted:
            return None
        if user_items is not None:
            return as_sparse(user_items, self._context(), "user_items")
        if self._train is not None and not self._train.closed:
            return self._train
        return None

    def recommend(self, userid, user_items=None, N=10, filter_already_liked_items=True,
                  filter_items=None, items=None):
        """Top-N items for one user id (1-D results) or an array of ids (2-D), best first, as
        (item_ids int32, scores float32). Seen items are excluded when
        filter_already_liked_items: those of `user_items` (a users x items matrix), else of
        the matrix given to fit. `items` restricts the candidates and `filter_items` removes
        some. Slots beyond the candidates hold id -1 and score -inf."""
        scalar, users = _scalar_or_array(userid, "userid")
        exclude = self._exclusion(user_items, filter_already_liked_items)
        allowed = None if items is None else as_int32(items, "items")
        if filter_items is not None:
            banned = as_int32(filter_items, "filter_items")
            pool = np.arange(self.shape[1], dtype=np.int32) if allowed is None else allowed
            allowed = np.ascontiguousarray(pool[~np.isin(pool, banned)])
        n = int(N)
        if n < 0:
            raise ValueError(f"N must be >= 0, got {N}")
        ids = np.empty((users.size, n), np.int32)
        scores = np.empty((users.size, n), np.float32)
        call(_core.sfac_model_recommend, self._mh, users.size, users, n, exclude,
             0 if allowed is None else allowed.size, allowed, ids, scores)
        return (ids[0], scores[0]) if scalar else (ids, scores)

    def similar_items(self, itemid, N=10):
        """The N items most similar by cosine of the factors (the item itself excluded)."""
        scalar, items = _scalar_or_array(itemid, "itemid")
        n = int(N)
        if n < 0:
            raise ValueError(f"N must be >= 0, got {N}")
        ids = np.empty((items.size, n), np.int32)
        scores = np.empty((items.size, n), np.float32)
        call(_core.sfac_model_similar_items, self._mh, items.size, items, n, ids, scores)
        return (ids[0], scores[0]) if scalar else (ids, scores)

    def recalculate_user(self, userid, user_items, ratings=None, replace=False):
        """Fold-in: the factors a user with these ratings gets against the fixed item factors,
        with the training objective. `user_items` is a 1 x items sparse row (SparseMatrix or
        scipy), or an array of item ids with `ratings` beside it. userid=None is a new user;
        with replace=True the model's row for `userid` is overwritten. Returns the factors
        (float32, length `factors`), and (factors, bias) for a model with biases."""
        if ratings is None:
            row = user_items
            if is_scipy_sparse(row):
                row = row.tocsr()
                if row.shape[0] != 1:
                    raise ValueError(f"user_items must be a single row, got shape {row.shape}")
                items, vals = row.indices, row.data
            elif hasattr(row, "to_coo"):
                if row.shape[0] != 1:
                    raise ValueError(f"user_items must be a single row, got shape {row.shape}")
                _, items, vals = row.to_coo()
            else:
                raise TypeError("user_items must be a sparse row, or item ids with ratings")
        else:
            items, vals = user_items, ratings
        it = as_int32(items, "items")
        rv = as_float32(vals, "ratings").reshape(-1)
        if it.size != rv.size:
            raise ValueError(f"items has {it.size} entries but ratings has {rv.size}")
        if replace and userid is None:
            raise ValueError("replace=True needs a userid")
        user = -1 if userid is None or not replace else int(userid)
        factors = np.empty(self.shape[2], np.float32)
        bias = np.zeros(1, np.float32)
        call(_core.sfac_model_recalculate_user, self._mh, user, it.size, it, rv, factors, bias)
        if self.biases() is not None:
            return factors, float(bias[0])
        return factors

    # ---- files -----------------------------------------------------------------------------

    def save(self, path):
        """Versioned binary model file, loadable from every language binding."""
        call(_core.sfac_model_save, self._mh, os.fspath(path))

    def export_libmf(self, path):
        call(_core.sfac_model_export_libmf, self._mh, os.fspath(path))

    @classmethod
    def load(cls, path, context=None):
        """Loads a model file; the estimator's class follows the file's algorithm."""
        ctx = context if context is not None else Context("cpu")
        ptr = call(_core.sfac_model_load, ctx, os.fspath(path))
        handle = _ModelHandle(ptr)
        algo = call(_core.sfac_model_get_algorithm, handle)
        target = _BY_ALGORITHM[algo]
        if cls not in (MatrixFactorization, target):
            handle.close()
            raise SparsefacError(f"{os.fspath(path)} holds a {target.__name__} model, "
                                 f"not {cls.__name__}", "invalid argument", 1)
        est = target(factors=call(_core.sfac_model_get_shape, handle)[2], context=ctx)
        est._model = handle
        return est

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self._params().items() if v is not None)
        state = "unfitted"
        if self._model is not None and not self._model.closed:
            users, items, _ = self.shape
            state = f"fitted: {users} users x {items} items"
        elif self._model is not None:
            state = "closed"
        return f"{type(self).__name__}({params}) <{state}>"

    def _params(self):
        return {"factors": self.factors, "regularization": self.regularization,
                "iterations": self.iterations}


class AlternatingLeastSquares(MatrixFactorization):
    """Explicit-feedback ALS: least squares on the observed ratings. weighted_regularization
    (default True) multiplies lambda by each row's number of ratings (ALS-WR)."""

    _algorithm = _ALGO_ALS

    def __init__(self, factors=32, regularization=None, iterations=None, use_cg=False,
                 cg_steps=None, use_biases=False, weighted_regularization=True, **kwargs):
        super().__init__(factors=factors, regularization=regularization, iterations=iterations,
                         use_cg=use_cg, cg_steps=cg_steps, use_biases=use_biases, **kwargs)
        self.weighted_regularization = weighted_regularization

    def _ints(self):
        ints = super()._ints()
        ints[_core.SFAC_OPT_USE_BIASES] = int(bool(self.use_biases))
        ints[_core.SFAC_OPT_ALS_SOLVER] = (_core.SFAC_SOLVER_CG if self.use_cg
                                           else _core.SFAC_SOLVER_CHOLESKY)
        ints[_core.SFAC_OPT_ALS_CG_STEPS] = self.cg_steps
        ints[_core.SFAC_OPT_ALS_REGULARIZATION] = (
            _core.SFAC_REG_WEIGHTED if self.weighted_regularization else _core.SFAC_REG_PLAIN)
        return ints

    def _params(self):
        p = super()._params()
        p.update(use_cg=self.use_cg, use_biases=self.use_biases)
        return p


class ImplicitALS(MatrixFactorization):
    """Implicit-feedback ALS (Hu, Koren, Volinsky): confidence 1 + alpha * r over all cells."""

    _algorithm = _ALGO_IALS

    def __init__(self, factors=32, regularization=None, alpha=None, iterations=None,
                 use_cg=False, cg_steps=None, **kwargs):
        super().__init__(factors=factors, regularization=regularization, iterations=iterations,
                         use_cg=use_cg, cg_steps=cg_steps, **kwargs)
        self.alpha = alpha

    def _ints(self):
        ints = super()._ints()
        ints[_core.SFAC_OPT_ALS_SOLVER] = (_core.SFAC_SOLVER_CG if self.use_cg
                                           else _core.SFAC_SOLVER_CHOLESKY)
        ints[_core.SFAC_OPT_ALS_CG_STEPS] = self.cg_steps
        return ints

    def _doubles(self):
        doubles = super()._doubles()
        doubles[_core.SFAC_OPT_IMPLICIT_ALPHA] = self.alpha
        return doubles

    def _params(self):
        p = super()._params()
        p.update(alpha=self.alpha, use_cg=self.use_cg)
        return p


class SGD(MatrixFactorization):
    """Stochastic gradient descent on the observed ratings, learning rate
    learning_rate / (1 + decay * t^1.5) at epoch t."""

    _algorithm = _ALGO_SGD

    def __init__(self, factors=32, learning_rate=None, decay=None, regularization=None,
                 lambda_user=None, lambda_item=None, iterations=None, use_biases=False,
                 scale_ratings=None, **kwargs):
        super().__init__(factors=factors, regularization=regularization, iterations=iterations,
                         lambda_user=lambda_user, lambda_item=lambda_item,
                         use_biases=use_biases, **kwargs)
        self.learning_rate = learning_rate
        self.decay = decay
        self.scale_ratings = scale_ratings

    def _ints(self):
        ints = super()._ints()
        ints[_core.SFAC_OPT_USE_BIASES] = int(bool(self.use_biases))
        ints[_core.SFAC_OPT_SGD_SCALE_RATINGS] = (None if self.scale_ratings is None
                                                  else int(bool(self.scale_ratings)))
        return ints

    def _doubles(self):
        doubles = super()._doubles()
        doubles[_core.SFAC_OPT_SGD_LEARNING_RATE] = self.learning_rate
        doubles[_core.SFAC_OPT_SGD_DECAY] = self.decay
        return doubles

    def _params(self):
        p = super()._params()
        p.update(learning_rate=self.learning_rate, decay=self.decay, use_biases=self.use_biases)
        return p


_BY_ALGORITHM = {_ALGO_ALS: AlternatingLeastSquares, _ALGO_IALS: ImplicitALS, _ALGO_SGD: SGD}


def load_model(path, context=None):
    """Loads a model file saved by any binding; returns the matching estimator."""
    return MatrixFactorization.load(path, context)
