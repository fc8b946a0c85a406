"""Estimators: AlternatingLeastSquares (explicit), ImplicitALS and SGD, with a surface close to
the `implicit` package (fit / recommend / similar_items / recalculate_user)."""

import copy
import os
import sys

import numpy as np

from . import _core
from ._context import Context
from ._errors import CallbackError, ClosedObjectError, SparsefacError
from ._dense import DTYPES
from ._lib import Handle, as_float32, as_int32, call, enum_value, shared_length
from ._sparse import SparseMatrix, as_sparse, is_scipy_sparse

_ALGO_ALS = _core.SFAC_ALGO_ALS
_ALGO_IALS = _core.SFAC_ALGO_IALS
_ALGO_SGD = _core.SFAC_ALGO_SGD

_SGD_SCHEDULES = {"hogwild": _core.SFAC_SGD_HOGWILD, "wavefront": _core.SFAC_SGD_WAVEFRONT}
_REORDERS = {"none": _core.SFAC_REORDER_NONE, "degree": _core.SFAC_REORDER_DEGREE,
             "auto": _core.SFAC_REORDER_AUTO}


# The keyword argument behind each option, for error messages.
_OPTION_PARAMETERS = {
    _core.SFAC_OPT_RANK: "factors",
    _core.SFAC_OPT_ITERATIONS: "iterations",
    _core.SFAC_OPT_DETERMINISTIC: "deterministic",
    _core.SFAC_OPT_LAMBDA: "regularization",
    _core.SFAC_OPT_LAMBDA_USER: "lambda_user",
    _core.SFAC_OPT_LAMBDA_ITEM: "lambda_item",
    _core.SFAC_OPT_INIT_SCALE: "init_scale",
    _core.SFAC_OPT_USE_BIASES: "use_biases",
    _core.SFAC_OPT_ALS_SOLVER: "use_cg",
    _core.SFAC_OPT_ALS_CG_STEPS: "cg_steps",
    _core.SFAC_OPT_ALS_REGULARIZATION: "weighted_regularization",
    _core.SFAC_OPT_IMPLICIT_ALPHA: "alpha",
    _core.SFAC_OPT_ALS_REORDER: "reorder",
    _core.SFAC_OPT_FACTOR_DTYPE: "factor_dtype",
    _core.SFAC_OPT_SGD_SCALE_RATINGS: "scale_ratings",
    _core.SFAC_OPT_SGD_LEARNING_RATE: "learning_rate",
    _core.SFAC_OPT_SGD_DECAY: "decay",
    _core.SFAC_OPT_SGD_WORKERS: "workers",
    _core.SFAC_OPT_SGD_SCHEDULE: "schedule",
}

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
                total = f"/{self.iterations}" if self.iterations else ""
                line = f"epoch {epoch}{total}  loss {loss:.6g}"
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


def _run_relayed(relay, fn, *args):
    """call(fn, *args); when the epoch callback raised, CallbackError is raised from the
    callback's exception (KeyboardInterrupt and SystemExit as they are)."""
    if relay is not None:
        relay.error = None
    try:
        return call(fn, *args)
    except CallbackError as err:
        if relay is not None and relay.error is not None:
            cause, relay.error = relay.error, None
            if not isinstance(cause, Exception):
                raise cause
            raise err from cause
        raise


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
        for setter, convert, values in ((_core.sfac_train_options_set_int, int, self._ints()),
                                        (_core.sfac_train_options_set_double, float,
                                         self._doubles())):
            for key, value in values.items():
                if value is None:
                    continue
                try:
                    call(setter, options, key, convert(value))
                except SparsefacError as err:
                    # Name the keyword argument the caller wrote, not the C option.
                    name = _OPTION_PARAMETERS.get(key)
                    if name is None:
                        raise
                    raise type(err)(f"{name}={value!r}: {err.message}", err.status,
                                    err.code) from None
        return options

    def _context(self):
        if self.context is None:
            self.context = Context("cpu", threads=self.num_threads, seed=self.random_state)
        return self.context

    def _prepare(self, user_items, validation, callback, show_progress):
        """What fit and Trainer share: (context, ratings, options, relay). The options carry
        the validation matrix and the callback relay (None without callback/progress)."""
        if callback is not None and not callable(callback):
            raise TypeError("callback must be callable")
        ctx = self._context()
        ratings = as_sparse(user_items, ctx, "user_items")
        held = None if validation is None else as_sparse(validation, ctx, "validation")
        options = self._make_options()
        try:
            if held is not None:
                call(_core.sfac_train_options_set_validation, options, held)
            relay = None
            if callback is not None or show_progress:
                total = call(_core.sfac_train_options_get_int, options, _core.SFAC_OPT_ITERATIONS)
                relay = _EpochRelay(callback, show_progress, total)
                call(_core.sfac_train_options_set_callback, options, relay)
        except BaseException:
            options.close()
            raise
        return ctx, ratings, options, relay

    def fit(self, user_items, validation=None, callback=None, show_progress=False):
        """Trains on a users x items matrix (SparseMatrix or scipy.sparse). `validation`
        (same shape) is scored every epoch. `callback(epoch, train_loss, validation_rmse,
        seconds)` runs after every epoch; a truthy return stops training early. If it raises,
        training stops and CallbackError is raised from the callback's exception."""
        ctx, ratings, options, relay = self._prepare(user_items, validation, callback,
                                                     show_progress)
        with options:
            ptr = _run_relayed(relay, _core.sfac_train, ctx, ratings, options)
        self._replace(ptr)
        self._train = ratings
        return self

    def _snapshot(self, ptr, train):
        """A copy of this estimator (same hyperparameters and context) owning model `ptr`."""
        est = copy.copy(self)
        est._model = _ModelHandle(ptr)
        est._train = train
        return est

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

    # (index in shape, getter, setter) of each side's factor matrix
    _SIDES = {"user_factors": (0, _core.sfac_model_get_user_factors,
                               _core.sfac_model_set_user_factors),
              "item_factors": (1, _core.sfac_model_get_item_factors,
                               _core.sfac_model_set_item_factors)}

    def _get_factors(self, side):
        axis, get, _ = self._SIDES[side]
        shape = self.shape
        out = np.empty((shape[axis], shape[2]), np.float32)
        call(get, self._mh, out, out.size)
        return out

    def _set_factors(self, side, factors):
        axis, _, put = self._SIDES[side]
        shape = self.shape
        expected = (shape[axis], shape[2])
        arr = as_float32(factors, side)
        if arr.shape != expected:
            raise ValueError(f"{side} must have shape {expected}, got {arr.shape}")
        call(put, self._mh, arr)

    @property
    def user_factors(self):
        """users x factors float32 matrix (a copy; assign to replace)."""
        return self._get_factors("user_factors")

    @user_factors.setter
    def user_factors(self, factors):
        self._set_factors("user_factors", factors)

    @property
    def item_factors(self):
        """items x factors float32 matrix (a copy; assign to replace)."""
        return self._get_factors("item_factors")

    @item_factors.setter
    def item_factors(self, factors):
        self._set_factors("item_factors", factors)

    def biases(self):
        """(global_mean, user_biases, item_biases), or None for a model without biases."""
        users, items, _ = self.shape
        mean = np.empty(1, np.float32)
        ub = np.empty(users, np.float32)
        ib = np.empty(items, np.float32)
        if not call(_core.sfac_model_get_biases, self._mh, mean, ub, ub.size, ib, ib.size):
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
        filter_already_liked_items: those of `user_items`, else of the matrix given to fit.
        `user_items` is either the users x items matrix or, as in `implicit` >= 0.5, one row
        per requested user (len(userid) rows, row r holding user userid[r]'s items; 1 row for
        a single id); when it has len(userid) rows it is read that way. `items` restricts the
        candidates and `filter_items` removes some. Slots beyond the candidates hold id -1 and
        score -inf."""
        scalar, users = _scalar_or_array(userid, "userid")
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
        rows = None
        if filter_already_liked_items and user_items is not None:
            rows = self._per_user_rows(user_items, users.size)
        if rows is None:
            exclude = self._exclusion(user_items, filter_already_liked_items)
            self._recommend_into(users, n, exclude, allowed, ids, scores)
        else:
            # The library excludes through a users x items matrix, which holds one row per
            # user: a user asked for twice (with possibly different rows) goes in a second
            # call. occurrence[r] = how many times users[r] came before position r.
            order = np.argsort(users, kind="stable")
            sorted_users = users[order]
            first = np.searchsorted(sorted_users, sorted_users, side="left")
            occurrence = np.empty(users.size, np.int64)
            occurrence[order] = np.arange(users.size) - first
            for k in range(int(occurrence.max()) + 1 if users.size else 0):
                pick = np.flatnonzero(occurrence == k)
                exclude = self._spread_rows(rows, pick, users[pick])
                part_ids = np.empty((pick.size, n), np.int32)
                part_scores = np.empty((pick.size, n), np.float32)
                self._recommend_into(np.ascontiguousarray(users[pick]), n, exclude, allowed,
                                     part_ids, part_scores)
                ids[pick], scores[pick] = part_ids, part_scores
        return (ids[0], scores[0]) if scalar else (ids, scores)

    def _recommend_into(self, users, n, exclude, allowed, ids, scores):
        call(_core.sfac_model_recommend, self._mh, users.size, users, n, exclude,
             0 if allowed is None else allowed.size, allowed, ids, scores,
             shared_length(ids, scores))

    def _per_user_rows(self, user_items, count):
        """user_items as a scipy CSR when it has one row per requested user, else None (a
        users x items matrix)."""
        n_items = self.shape[1]
        if not (is_scipy_sparse(user_items) or isinstance(user_items, SparseMatrix)):
            return None  # as_sparse reports the type
        if user_items.shape[0] != count or user_items is self._train:
            return None
        if user_items.shape[1] != n_items:
            raise ValueError(f"user_items has {user_items.shape[1]} columns, the model has "
                             f"{n_items} items")
        return user_items.tocsr() if is_scipy_sparse(user_items) else user_items.to_scipy()

    def _spread_rows(self, rows, pick, targets):
        """users x items pattern whose row targets[j] is row pick[j] of `rows`."""
        import scipy.sparse as sp

        sub = rows[pick].tocoo()
        n_users, n_items = self.shape[:2]
        if targets.size and (targets.min() < 0 or targets.max() >= n_users):
            return None  # the library reports the bad user id
        full = sp.csr_matrix((np.ones(sub.nnz, np.float32), (targets[sub.row], sub.col)),
                             shape=(n_users, n_items))
        return SparseMatrix.from_scipy(full, self._context())

    def similar_items(self, itemid, N=10, similarity="cosine"):
        """The N items most similar to `itemid` (or each of an array of ids) by cosine
        (similarity="cosine") or inner product ("inner_product") of the factors, the item
        itself excluded. Returns (ids, scores), one row per query for an array."""
        return self._similar(_core.SFAC_AXIS_COLS, itemid, N, similarity, "itemid")

    def similar_users(self, userid, N=10, similarity="cosine"):
        """The N users most similar to `userid` (or each of an array of ids), as similar_items
        for items."""
        return self._similar(_core.SFAC_AXIS_ROWS, userid, N, similarity, "userid")

    def _similar(self, side, query, N, similarity, name):
        kinds = {"cosine": _core.SFAC_SIMILARITY_COSINE,
                 "inner_product": _core.SFAC_SIMILARITY_INNER_PRODUCT}
        if similarity not in kinds:
            raise ValueError(f"similarity must be one of {sorted(kinds)}, got {similarity!r}")
        scalar, ids = _scalar_or_array(query, name)
        n = int(N)
        if n < 0:
            raise ValueError(f"N must be >= 0, got {N}")
        out_ids = np.empty((ids.size, n), np.int32)
        scores = np.empty((ids.size, n), np.float32)
        call(_core.sfac_model_similar, self._mh, side, kinds[similarity], ids.size, ids, n,
             out_ids, scores, shared_length(out_ids, scores))
        return (out_ids[0], scores[0]) if scalar else (out_ids, scores)

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
        call(_core.sfac_model_recalculate_user, self._mh, user, it.size, it, rv, factors,
             factors.size, bias)
        if self.biases() is not None:
            return factors, float(bias[0])
        return factors

    def set_fold_in_solver(self, use_cg, cg_steps=3):
        """How recalculate_user(s) solve: exactly by Cholesky (use_cg=False, the default), or
        by `cg_steps` conjugate-gradient steps from the user's current row when it is replaced
        (from zero for a new user). A setting of this model object, not saved with it."""
        solver = _core.SFAC_SOLVER_CG if use_cg else _core.SFAC_SOLVER_CHOLESKY
        call(_core.sfac_model_set_fold_in_solver, self._mh, solver, int(cg_steps))

    @property
    def fold_in_solver(self):
        """(use_cg, cg_steps): how recalculate_user(s) solve (see set_fold_in_solver)."""
        solver, steps = call(_core.sfac_model_get_fold_in_solver, self._mh)
        return solver == _core.SFAC_SOLVER_CG, steps

    def recalculate_users(self, user_items, userids=None):
        """Fold-in of many users in one call (on the GPU for a model of a CUDA context): row i
        of `user_items` (a users x items SparseMatrix or scipy sparse matrix, any context) holds
        user i's ratings; each row is what recalculate_user gives for it. With `userids` (one
        per row, None or -1 for a new user) the model's rows of those users are replaced.
        Returns the factors (float32, rows x factors), and (factors, biases) for a model with
        biases."""
        if is_scipy_sparse(user_items):
            csr = user_items.tocsr()
            offsets = np.ascontiguousarray(csr.indptr, dtype=np.int64)
            items = as_int32(csr.indices, "items")
            vals = as_float32(csr.data, "ratings").reshape(-1)
            rows = csr.shape[0]
        elif hasattr(user_items, "to_csr"):
            offsets, items, vals = user_items.to_csr()
            offsets = np.ascontiguousarray(offsets, dtype=np.int64)
            items, vals = as_int32(items, "items"), as_float32(vals, "ratings").reshape(-1)
            rows = user_items.shape[0]
        else:
            raise TypeError("user_items must be a sparse matrix (SparseMatrix or scipy)")
        users = None
        if userids is not None:
            users = np.array([-1 if u is None else int(u) for u in userids], dtype=np.int32)
            if users.size != rows:
                raise ValueError(f"userids has {users.size} entries but user_items has {rows} rows")
        factors = np.empty((rows, self.shape[2]), np.float32)
        biases = np.zeros(rows, np.float32)
        call(_core.sfac_model_recalculate_users, self._mh, rows, users, offsets, items, vals,
             factors, factors.size, biases)
        if self.biases() is not None:
            return factors, biases
        return factors

    # ---- files -----------------------------------------------------------------------------

    def save(self, path):
        """Versioned binary model file, loadable from every language binding."""
        call(_core.sfac_model_save, self._mh, os.fspath(path))

    def export_libmf(self, path):
        call(_core.sfac_model_export_libmf, self._mh, os.fspath(path))

    def copy(self, context=None):
        """An independent copy of the fitted model: an estimator of the same class and
        hyperparameters whose model is bound to `context` (None: this estimator's context),
        which may have another backend, e.g. trained on the CPU and served on CUDA. Changing
        or closing either leaves the other. The matrix given to fit stays the default
        exclusion of recommend (copied to `context` when its backend needs that)."""
        ctx = self._context() if context is None else context
        ptr = call(_core.sfac_model_copy, self._mh, ctx)
        try:
            train = self._train_on(ctx)
        except BaseException:
            _ModelHandle(ptr).close()
            raise
        est = self._snapshot(ptr, train)
        est.context = ctx
        return est

    def _train_on(self, ctx):
        """The training matrix as an exclusion for models of `ctx`: itself where the library
        takes it (its own context, or CPU contexts on both sides), else a copy made on `ctx`."""
        train = self._train
        if train is None or train.closed:
            return None
        if train.context is ctx:
            return train
        try:
            both_cpu = train.context.backend == "cpu" and ctx.backend == "cpu"
        except ClosedObjectError:  # train's context is closed: ask nothing of it
            both_cpu = False
        return train if both_cpu else SparseMatrix.from_scipy(train.to_scipy(), ctx)

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


def _als_ints(model, ints):
    """The options both ALS estimators share."""
    ints[_core.SFAC_OPT_ALS_SOLVER] = (_core.SFAC_SOLVER_CG if model.use_cg
                                       else _core.SFAC_SOLVER_CHOLESKY)
    ints[_core.SFAC_OPT_ALS_CG_STEPS] = model.cg_steps
    ints[_core.SFAC_OPT_FACTOR_DTYPE] = enum_value("factor_dtype", model.factor_dtype, DTYPES)
    ints[_core.SFAC_OPT_ALS_REORDER] = enum_value("reorder", model.reorder, _REORDERS)
    return ints


class AlternatingLeastSquares(MatrixFactorization):
    """Explicit-feedback ALS: least squares on the observed ratings. weighted_regularization
    (default True) multiplies lambda by each row's number of ratings (ALS-WR). factor_dtype
    "float16" or "bfloat16" stores the factors in 16 bits between solves (faster on a GPU).
    reorder is how users and items are numbered while training: "degree" trains on a copy of
    the ratings renumbered by rating count, most first (faster on a GPU; the copy lives as long
    as the training), "none" on the ratings as given, "auto" (the default) "degree" on a CUDA
    context and "none" on the CPU. The model keeps the caller's ids either way, and the factors
    differ only by the order of floating-point sums."""

    _algorithm = _ALGO_ALS

    def __init__(self, factors=32, regularization=None, iterations=None, use_cg=False,
                 cg_steps=None, use_biases=False, weighted_regularization=True,
                 factor_dtype="float32", reorder="auto", **kwargs):
        super().__init__(factors=factors, regularization=regularization, iterations=iterations,
                         use_cg=use_cg, cg_steps=cg_steps, use_biases=use_biases, **kwargs)
        self.weighted_regularization = weighted_regularization
        self.factor_dtype = factor_dtype
        self.reorder = reorder

    def _ints(self):
        ints = _als_ints(self, super()._ints())
        ints[_core.SFAC_OPT_USE_BIASES] = int(bool(self.use_biases))
        ints[_core.SFAC_OPT_ALS_REGULARIZATION] = (
            _core.SFAC_REG_WEIGHTED if self.weighted_regularization else _core.SFAC_REG_PLAIN)
        return ints

    def _params(self):
        p = super()._params()
        p.update(use_cg=self.use_cg, use_biases=self.use_biases)
        return p


class ImplicitALS(MatrixFactorization):
    """Implicit-feedback ALS (Hu, Koren, Volinsky): confidence 1 + alpha * r over all cells.
    factor_dtype and reorder as for AlternatingLeastSquares."""

    _algorithm = _ALGO_IALS

    def __init__(self, factors=32, regularization=None, alpha=None, iterations=None,
                 use_cg=False, cg_steps=None, factor_dtype="float32", reorder="auto", **kwargs):
        super().__init__(factors=factors, regularization=regularization, iterations=iterations,
                         use_cg=use_cg, cg_steps=cg_steps, **kwargs)
        self.alpha = alpha
        self.factor_dtype = factor_dtype
        self.reorder = reorder

    def _ints(self):
        return _als_ints(self, super()._ints())

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
    learning_rate / (1 + decay * t^1.5) at epoch t. factor_dtype "float16" or "bfloat16"
    rounds every updated row to 16 bits (faster on a GPU); the model's factors are the stored
    values, times sqrt(scale) when scale_ratings is on (the default). workers is how many SGD
    workers update at once on a CUDA context (None or 0: as many as fit the device, at most
    one per 4096 ratings; more run faster but lose more updates to collisions on popular
    items); a CPU context ignores it and runs one worker per thread. schedule is how the
    workers of a CUDA context share the items: "hogwild" (the default, faster) updates them
    without locks and loses an update when two workers meet on one item, "wavefront" locks
    ranges of items so that no update is lost (fewer workers, slower); deterministic training
    and a CPU context ignore it."""

    _algorithm = _ALGO_SGD

    def __init__(self, factors=32, learning_rate=None, decay=None, regularization=None,
                 lambda_user=None, lambda_item=None, iterations=None, use_biases=False,
                 scale_ratings=None, factor_dtype="float32", workers=None, schedule="hogwild",
                 **kwargs):
        super().__init__(factors=factors, regularization=regularization, iterations=iterations,
                         lambda_user=lambda_user, lambda_item=lambda_item,
                         use_biases=use_biases, **kwargs)
        self.learning_rate = learning_rate
        self.decay = decay
        self.scale_ratings = scale_ratings
        self.factor_dtype = factor_dtype
        self.workers = workers
        self.schedule = schedule

    def _ints(self):
        ints = super()._ints()
        ints[_core.SFAC_OPT_USE_BIASES] = int(bool(self.use_biases))
        ints[_core.SFAC_OPT_SGD_SCALE_RATINGS] = (None if self.scale_ratings is None
                                                  else int(bool(self.scale_ratings)))
        ints[_core.SFAC_OPT_FACTOR_DTYPE] = enum_value("factor_dtype", self.factor_dtype, DTYPES)
        ints[_core.SFAC_OPT_SGD_WORKERS] = self.workers
        ints[_core.SFAC_OPT_SGD_SCHEDULE] = enum_value("schedule", self.schedule, _SGD_SCHEDULES)
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


class _TrainerHandle(Handle):
    _destroy = staticmethod(_core.sfac_trainer_destroy)
    _kind = "Trainer"


class Trainer:
    """Step-wise training for callers that own the loop:

        with Trainer(ImplicitALS(factors=64), user_items) as trainer:
            while trainer.run(1) and trainer.loss > target: ...
            model = trainer.model()

    `estimator` is an estimator instance (or class, for its defaults) whose hyperparameters
    and context are used; its model is left alone (like fit, it gets a private CPU context if
    it has none). `validation` and `callback(epoch, train_loss, validation_rmse,
    seconds)` behave as in fit: a truthy callback return stops the current run() early, an
    exception in it raises CallbackError from it. Epochs count on across run() calls, and
    running 3 then 2 epochs gives the factors of one 5-epoch run."""

    def __init__(self, estimator, user_items, validation=None, callback=None,
                 show_progress=False):
        if isinstance(estimator, type) and issubclass(estimator, MatrixFactorization):
            estimator = estimator()
        if not isinstance(estimator, MatrixFactorization) or estimator._algorithm is None:
            raise TypeError("estimator must be an AlternatingLeastSquares, ImplicitALS or SGD "
                            f"instance, got {type(estimator).__name__}")
        self._estimator = estimator
        ctx, ratings, options, self._relay = estimator._prepare(user_items, validation, callback,
                                                                show_progress)
        if self._relay is not None:
            self._relay.iterations = None  # the caller decides how many epochs run
        with options:  # the trainer copies the options; the relay stays referenced here
            self._handle = _TrainerHandle(call(_core.sfac_trainer_create, ctx, ratings, options))
        self._ratings = ratings
        self._epochs = 0

    def run(self, epochs=1):
        """Runs up to `epochs` more epochs; returns the total number of epochs run so far
        (fewer than asked when the callback stopped the run)."""
        n = int(epochs)
        if n < 0:
            raise ValueError(f"epochs must be >= 0, got {epochs}")
        self._epochs = _run_relayed(self._relay, _core.sfac_trainer_run, self._handle, n)
        return self._epochs

    @property
    def epochs(self):
        """Epochs run so far."""
        return self._epochs

    @property
    def loss(self):
        """The training objective after the last epoch (per rating, regularization included);
        NaN before the first epoch."""
        return call(_core.sfac_trainer_get_loss, self._handle)

    def model(self):
        """A snapshot of the current factors: a new fitted estimator of the estimator's class
        (independent of later run() calls), with the training matrix as its default
        exclusion for recommend."""
        ptr = call(_core.sfac_trainer_get_model, self._handle)
        return self._estimator._snapshot(ptr, self._ratings)

    @property
    def closed(self):
        return self._handle.closed

    def close(self):
        """Frees the trainer now (it is also freed when collected)."""
        self._handle.close()

    def __enter__(self):
        self._handle._check_open()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        state = "closed" if self.closed else f"{self._epochs} epochs"
        return f"<sparsefac.Trainer {type(self._estimator).__name__} <{state}>>"


_BY_ALGORITHM = {_ALGO_ALS: AlternatingLeastSquares, _ALGO_IALS: ImplicitALS, _ALGO_SGD: SGD}


def load_model(path, context=None):
    """Loads a model file saved by any binding; returns the matching estimator."""
    return MatrixFactorization.load(path, context)
