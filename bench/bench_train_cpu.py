#!/usr/bin/env python3
"""CPU training benchmark: libsparsefac vs `implicit` (implicit ALS) and LIBMF (SGD).

One process builds ONE seeded synthetic data set shaped like MovieLens-20M (138,493 users x
26,744 items, 20,000,263 ratings at --scale 1) and hands the same COO arrays to all three
libraries:

  * libsparsefac through ctypes (sfac_sparse_create_csr on the numpy arrays),
  * implicit.cpu.als.AlternatingLeastSquares through scipy.sparse.csr_matrix (user x item),
  * LIBMF through the `libmf` PyPI package's numpy (n, 3) triplet input.

Data set
  Users: Lomax (Pareto II) degrees, minimum 20, shape 2, scale 116, capped at 34.6% of the items
  (MovieLens-20M: min 20, median 68, mean 144, max 9,254 of 26,744), rescaled to the exact
  nonzero count. Items: Zipf-Mandelbrot popularity weights (rank + 392)^-2.3 (alone they would
  give MovieLens-20M's top item, ~67k ratings, and median, ~18). Ids are shuffled. A planted
  rank-r model (unit-variance dot products) decides which cells are observed: every user draws
  3 x degree candidate items by popularity and keeps the degree candidates with the highest
  planted dot + N(0, 1) noise (so held-out items are predictable); heavy users who draw too few
  distinct items are topped up uniformly. The affinity filter flattens popularity somewhat: at
  scale 1 the item degrees come out median 62, max 34k; the run prints the realized degrees.
  Explicit value = planted dot + N(0, noise^2) (the planted model's RMSE is `noise`); implicit
  value = 1 + Poisson(2 max(dot, 0)) (a positive count). 1% of the nonzeros, drawn at random,
  are held out; the same train/test split serves every run.

Timing (wall clock, time.perf_counter, per epoch). The table reports the median of epochs 2..N
that ran while other processes used less than 0.25 cores (from /proc/stat minus this process's
own CPU time, sampled at every epoch boundary); when none did, the median of all of epochs 2..N,
marked "(disturbed)". Every epoch's time and load are printed to stderr and kept in --json.
The "CPU s/epoch" column is the median over epochs 2..N (disturbed ones included) of this
process's CPU time (all its threads, os.times) between the same epoch boundaries: on a shared
machine it moves far less with others' load than wall time, so it serves A/B comparisons there.
  * ours: sfac_trainer_run(trainer, 1) per epoch. One call runs the epoch and the library's
    divergence check (no loss pass without a callback); nothing is subtracted.
  * implicit: its fit() callback, which receives time.time() - s with s taken at the start of
    each iteration (both half-sweeps; training loss off, implicit's default).
  * LIBMF: the binding's fit() runs all iterations in one C call, and LIBMF prints one line per
    iteration (flushed) after the iteration's updates and its (cheap, accumulated) loss. The
    benchmark points file descriptor 1 at a pipe and timestamps each line in a reader thread:
    iteration i takes line_i - line_{i-1}. Iteration 1 cannot be separated from LIBMF's setup
    (the header line is not flushed), so for LIBMF the median covers iterations 2..N.
  * end-to-end column: everything from the library's input arrays to the trained model
    (ours: sfac_sparse_create_csr + sfac_trainer_create + epochs; implicit: fit(), including
    its transpose; LIBMF: fit(), including its copy of the triplets, grid partition and
    shuffle), divided by the number of epochs: "total / iterations", nothing subtracted.

Quality, computed in Python from each library's factors in the same way:
  * SGD / ALS: RMSE on the held-out 1% (entries whose user and item occur in training).
  * IALS: precision@10 on held-out items, training items excluded, for up to --eval-users users
    with at least one held-out item (implicit's definition: hits / min(10, #held-out items)).

Threads: OMP_NUM_THREADS=--threads and OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=1 are set before
numpy or any library loads (implicit asks for single-threaded BLAS; libsparsefac sets its own
OpenBLAS thread count per call); --threads is passed as num_threads (ours, implicit) and
nr_threads (LIBMF).

  python3 bench/bench_train_cpu.py [--lib build/libsparsefac.so] [--scale 1.0] [--k 64]
      [--threads 2] [--epochs 5] [--runs ials-chol,ials-cg,sgd,als] [--json out.json]
      [--libmf-so build-bench/libmf_avx.so] [--skip-peers]

The table goes to stdout (Markdown); progress, per-epoch times and load go to stderr. At scale 1
(20M nonzeros) a run takes about 4 minutes on 2 cores and about 4 GB of memory.
"""
import argparse
import os
import sys


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", default="build/libsparsefac.so", help="path of libsparsefac.so")
    p.add_argument("--scale", type=float, default=1.0,
                   help="fraction of the MovieLens-20M shape (users, items and nonzeros)")
    p.add_argument("--k", type=int, default=64, help="rank (factor length)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--epochs", type=int, default=5, help="epochs (iterations) of every run")
    p.add_argument("--runs", default="ials-chol,ials-cg,sgd,als",
                   help="comma-separated subset of ials-chol, ials-cg, sgd, als")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--planted-rank", type=int, default=16)
    p.add_argument("--noise", type=float, default=0.5, help="explicit rating noise (std)")
    p.add_argument("--ials-alpha", type=float, default=40.0,
                   help="confidence c = 1 + alpha * count (ours: SFAC_OPT_IMPLICIT_ALPHA; "
                        "implicit gets the matrix of c with its alpha = 1)")
    p.add_argument("--ials-lambda", type=float, default=0.01)
    p.add_argument("--sgd-lambda", type=float, default=0.05,
                   help="L2 regularization of SGD (ours SFAC_OPT_LAMBDA; LIBMF lambda_p2/q2)")
    p.add_argument("--als-lambda", type=float, default=0.05)
    p.add_argument("--eval-users", type=int, default=10000)
    p.add_argument("--libmf-so", default="",
                   help="optional extra LIBMF shared object (e.g. the same PyPI source rebuilt "
                        "with -DUSEAVX -march=native) timed as one more SGD peer")
    p.add_argument("--skip-peers", action="store_true",
                   help="time libsparsefac only (for profiling)")
    p.add_argument("--json", default="", help="write raw per-epoch times here")
    return p.parse_args()


ARGS = parse_args()
# Thread settings must be in the environment before numpy, scipy, implicit or libsparsefac
# load their OpenMP / OpenBLAS runtimes.
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"

import ctypes  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from importlib import metadata  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse  # noqa: E402
import threadpoolctl  # noqa: E402
from sfac_ctypes import (  # noqa: E402
    OPT_ALS_CG_STEPS, OPT_ALS_REGULARIZATION, OPT_ALS_SOLVER, OPT_IMPLICIT_ALPHA, OPT_ITERATIONS,
    OPT_LAMBDA, OPT_RANK, REG_PLAIN, SFAC_ALGO_ALS, SFAC_ALGO_IALS, SFAC_ALGO_SGD,
    SFAC_BACKEND_CPU, SOLVER_CG, SOLVER_CHOLESKY, Sfac, ptr)

ML20M_USERS, ML20M_ITEMS, ML20M_NNZ = 138493, 26744, 20000263


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---- machine load ------------------------------------------------------------------------------

def cpu_sample():
    """(wall seconds, CPU seconds used by all processes, CPU seconds used by this process)."""
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    # user nice system idle iowait irq softirq steal
    busy = (f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) / os.sysconf("SC_CLK_TCK")
    return time.perf_counter(), busy, sum(os.times()[:2])


def others_between(a, b):
    """Cores used by OTHER processes between two cpu_sample()s."""
    return max(0.0, ((b[1] - a[1]) - (b[2] - a[2])) / max(b[0] - a[0], 1e-9))


class LoadMeter:
    """CPU time used by OTHER processes during an interval (cores), from /proc/stat minus our
    own process time, plus the 1-minute load average at the start."""

    def __init__(self):
        self.loadavg = float(open("/proc/loadavg").read().split()[0])
        self.busy0 = self._busy()
        self.self0 = sum(os.times()[:2])
        self.t0 = time.perf_counter()

    @staticmethod
    def _busy():
        f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
        # user nice system idle iowait irq softirq steal
        return (f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        wall = time.perf_counter() - self.t0
        others = (self._busy() - self.busy0) - (sum(os.times()[:2]) - self.self0)
        return {"loadavg1": self.loadavg, "other_cores": max(0.0, others / max(wall, 1e-9))}


# ---- data --------------------------------------------------------------------------------------

def sorted_unique(keys):
    """np.unique for int64 keys via sort (numpy 2's hash-based unique is much slower here)."""
    keys = np.sort(keys)
    if keys.size:
        keep = np.empty(keys.size, bool)
        keep[0] = True
        np.not_equal(keys[1:], keys[:-1], out=keep[1:])
        keys = keys[keep]
    return keys


def make_data(scale, seed, planted_rank, noise):
    rng = np.random.default_rng(seed)
    n_users = max(2, round(ML20M_USERS * scale))
    n_items = max(2, round(ML20M_ITEMS * scale))
    nnz = max(1, round(ML20M_NNZ * scale))
    min_deg = 20
    max_deg = max(min_deg, int(0.346 * n_items))
    if nnz > n_users * max_deg:
        raise SystemExit("scale too small for the degree bounds")

    # User degrees: Lomax(shape 2, scale 116) + 20, capped, then the excess over the minimum is
    # rescaled (twice, for the cap) so the total is exactly nnz.
    excess = 116.0 * ((1.0 - rng.random(n_users)) ** -0.5 - 1.0)
    cap = float(max_deg - min_deg)
    for _ in range(3):
        excess = np.minimum(excess * ((nnz - min_deg * n_users) / excess.sum()), cap)
    deg = min_deg + np.floor(excess).astype(np.int64)
    short = nnz - int(deg.sum())
    while short > 0:
        room = np.flatnonzero(deg < max_deg)
        pick = rng.choice(room, size=min(short, room.size), replace=False)
        deg[pick] += 1
        short = nnz - int(deg.sum())

    # Item popularity: Zipf-Mandelbrot over shuffled ids.
    rank = np.arange(1, n_items + 1, dtype=np.float64)
    pop = np.empty(n_items)
    pop[rng.permutation(n_items)] = (rank + 392.0 * n_items / ML20M_ITEMS) ** -2.3
    cdf = np.cumsum(pop)
    cdf /= cdf[-1]

    # Planted factors, unit-variance dot products.
    pu = rng.standard_normal((n_users, planted_rank)).astype(np.float32) / np.sqrt(planted_rank)
    qi = rng.standard_normal((n_items, planted_rank)).astype(np.float32)

    def dots(u, i):
        out = np.empty(u.size, np.float32)
        for s in range(0, u.size, 1 << 16):
            e = min(u.size, s + (1 << 16))
            out[s:e] = np.einsum("ij,ij->i", pu[u[s:e]], qi[i[s:e]])
        return out

    # Candidates: 3 x degree draws by popularity per user; keep the distinct ones with the
    # highest planted dot + N(0, 1) noise.
    cu = np.repeat(np.arange(n_users, dtype=np.int64), 3 * deg)
    ci = np.searchsorted(cdf, rng.random(cu.size)).astype(np.int64)
    np.minimum(ci, n_items - 1, out=ci)
    keys = sorted_unique(cu * n_items + ci)
    del cu, ci
    cu = (keys // n_items).astype(np.int32)
    ci = (keys % n_items).astype(np.int32)
    del keys
    score = dots(cu, ci) + rng.standard_normal(cu.size, dtype=np.float32)
    order = np.lexsort((-score, cu))  # by user, best score first
    del score
    cu, ci = cu[order], ci[order]
    del order
    start = np.zeros(n_users + 1, np.int64)
    np.cumsum(np.bincount(cu, minlength=n_users), out=start[1:])
    pos = np.arange(cu.size, dtype=np.int64) - start[cu]
    keep = pos < deg[cu]
    del pos
    keys = np.sort(cu[keep].astype(np.int64) * n_items + ci[keep])
    del cu, ci, keep
    # Heavy users may draw fewer distinct popular items than their degree: top up uniformly.
    for _ in range(50):
        have = np.bincount((keys // n_items).astype(np.int64), minlength=n_users)
        need = deg - have
        if not need.any():
            break
        users = np.flatnonzero(need > 0)
        nu = np.repeat(users, 2 * need[users])
        extra = nu * n_items + rng.integers(0, n_items, nu.size)
        extra = sorted_unique(extra)
        at = np.minimum(np.searchsorted(keys, extra), keys.size - 1)
        extra = extra[keys[at] != extra]
        eu = extra // n_items
        first = np.searchsorted(eu, users)  # extra is sorted, so grouped by user
        pos = np.arange(extra.size) - np.repeat(first, np.diff(np.append(first, extra.size)))
        extra = extra[pos < need[eu]]
        keys = np.sort(np.concatenate([keys, extra]))
    rows = (keys // n_items).astype(np.int32)
    cols = (keys % n_items).astype(np.int32)
    del keys
    d = dots(rows, cols)
    explicit = (d + noise * rng.standard_normal(d.size, dtype=np.float32)).astype(np.float32)
    counts = (1 + rng.poisson(2.0 * np.maximum(d, 0.0))).astype(np.float32)
    test = rng.random(rows.size) < 0.01
    return {
        "users": n_users, "items": n_items, "rows": rows, "cols": cols,
        "explicit": explicit, "counts": counts, "test": test, "pu": pu, "qi": qi,
    }


def csr_offsets(rows, n_rows):
    off = np.zeros(n_rows + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=off[1:])
    return off


# ---- libsparsefac through ctypes (sfac_ctypes.py) ----------------------------------------------

def run_ours(sf, data, train, values, algo, solver, epochs):
    """Returns per-epoch seconds, end-to-end seconds and (user, item) factors."""
    k, threads, n_users, n_items = ARGS.k, ARGS.threads, data["users"], data["items"]
    rows, cols = data["rows"][train], data["cols"][train]
    vals = np.ascontiguousarray(values[train], dtype=np.float32)
    off = csr_offsets(rows, n_users)
    cols = np.ascontiguousarray(cols)
    ctx, mat, opt, tr, model = (ctypes.c_void_p() for _ in range(5))
    sf("sfac_context_create", SFAC_BACKEND_CPU, 0, threads, ARGS.seed, ctypes.byref(ctx))
    try:
        t0 = time.perf_counter()
        # nnz: the length of the index and value arrays (the library checks it against off[-1])
        sf("sfac_sparse_create_csr", ctx, n_users, n_items, ptr(off), ptr(cols), ptr(vals),
           min(cols.size, vals.size), 0, ctypes.byref(mat))
        sf("sfac_train_options_create", algo, ctypes.byref(opt))
        sf("sfac_train_options_set_int", opt, OPT_RANK, k)
        sf("sfac_train_options_set_int", opt, OPT_ITERATIONS, epochs)
        if algo == SFAC_ALGO_IALS:
            sf("sfac_train_options_set_double", opt, OPT_LAMBDA, ARGS.ials_lambda)
            sf("sfac_train_options_set_double", opt, OPT_IMPLICIT_ALPHA, ARGS.ials_alpha)
            sf("sfac_train_options_set_int", opt, OPT_ALS_REGULARIZATION, REG_PLAIN)
            sf("sfac_train_options_set_int", opt, OPT_ALS_CG_STEPS, 3)  # implicit's cg_steps
        elif algo == SFAC_ALGO_ALS:
            sf("sfac_train_options_set_double", opt, OPT_LAMBDA, ARGS.als_lambda)
        else:
            sf("sfac_train_options_set_double", opt, OPT_LAMBDA, ARGS.sgd_lambda)
        if algo != SFAC_ALGO_SGD:
            sf("sfac_train_options_set_int", opt, OPT_ALS_SOLVER, solver)
        sf("sfac_trainer_create", ctx, mat, opt, ctypes.byref(tr))
        setup = time.perf_counter() - t0
        times, others, cpu = [], [], []
        done = ctypes.c_int()
        for _ in range(epochs):
            a = cpu_sample()
            t = time.perf_counter()
            sf("sfac_trainer_run", tr, 1, ctypes.byref(done))
            times.append(time.perf_counter() - t)
            b = cpu_sample()
            others.append(others_between(a, b))
            cpu.append(b[2] - a[2])
        total = time.perf_counter() - t0
        sf("sfac_trainer_get_model", tr, ctypes.byref(model))
        x = np.empty((n_users, k), np.float32)
        y = np.empty((n_items, k), np.float32)
        sf("sfac_model_get_user_factors", model, ptr(x), x.size)  # size: elements, not rows
        sf("sfac_model_get_item_factors", model, ptr(y), y.size)
    finally:
        for name, h in (("sfac_model_destroy", model), ("sfac_trainer_destroy", tr),
                        ("sfac_train_options_destroy", opt), ("sfac_sparse_destroy", mat),
                        ("sfac_context_destroy", ctx)):
            if h.value:
                sf(name, h)
    return ({"epoch_s": times, "epoch_others": others, "epoch_cpu_s": cpu, "setup_s": setup,
             "total_s": total}, x, y)


# ---- implicit ----------------------------------------------------------------------------------

def run_implicit(data, train, use_cg, epochs):
    from implicit.cpu.als import AlternatingLeastSquares
    n_users, n_items = data["users"], data["items"]
    rows, cols = data["rows"][train], data["cols"][train]
    conf = (1.0 + ARGS.ials_alpha * data["counts"][train]).astype(np.float32)
    cui = scipy.sparse.csr_matrix((conf, cols, csr_offsets(rows, n_users)),
                                  shape=(n_users, n_items))
    model = AlternatingLeastSquares(factors=ARGS.k, regularization=ARGS.ials_lambda, alpha=1.0,
                                    dtype=np.float32, use_cg=use_cg, iterations=epochs,
                                    calculate_training_loss=False, num_threads=ARGS.threads,
                                    random_state=ARGS.seed)
    times, samples = [], []

    def callback(iteration, elapsed, loss):
        times.append(elapsed)
        samples.append(cpu_sample())

    t0 = time.perf_counter()
    start = cpu_sample()
    model.fit(cui, show_progress=False, callback=callback)
    total = time.perf_counter() - t0
    # The first interval also holds fit()'s setup (transpose, initialization).
    others = [others_between(a, b) for a, b in zip([start] + samples[:-1], samples)]
    # The process CPU time between callbacks; it includes the callback's own few milliseconds.
    cpu = [b[2] - a[2] for a, b in zip([start] + samples[:-1], samples)]
    return ({"epoch_s": times, "epoch_others": others, "epoch_cpu_s": cpu,
             "setup_s": total - sum(times), "total_s": total},
            np.asarray(model.user_factors), np.asarray(model.item_factors))


# ---- LIBMF -------------------------------------------------------------------------------------

class StdoutLines:
    """Points fd 1 at a pipe and timestamps each line written to it."""

    def __enter__(self):
        sys.stdout.flush()
        self.saved = os.dup(1)
        r, w = os.pipe()
        os.dup2(w, 1)
        os.close(w)
        self.lines = []
        self.reader = threading.Thread(target=self._read, args=(r,), daemon=True)
        self.reader.start()
        return self

    def _read(self, fd):
        buf = b""
        while True:
            chunk = os.read(fd, 65536)
            now = cpu_sample()
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                self.lines.append((now, line.decode(errors="replace")))
        os.close(fd)

    def __exit__(self, *exc):
        sys.stdout.flush()
        os.dup2(self.saved, 1)  # closes the pipe's last write end: the reader sees EOF
        os.close(self.saved)
        self.reader.join()


def libmf_fit(cdll, triplets, epochs):
    """Calls LIBMF's fit_interface (the `libmf` binding's entry point) on (n, 3) float32
    triplets; returns per-iteration times (iterations 2..N), total seconds and P, Q."""
    from libmf import mf as libmf_mf
    param = libmf_mf.MFParam()
    param.fun = libmf_mf.P_L2_MFR
    param.k = ARGS.k
    param.nr_threads = ARGS.threads
    param.nr_bins = 26  # the binding's default (LIBMF needs > 2 x threads)
    param.nr_iters = epochs
    param.lambda_p1 = param.lambda_q1 = 0.0  # L1 off
    param.lambda_p2 = param.lambda_q2 = ARGS.sgd_lambda
    param.eta = 0.1  # LIBMF's default learning rate
    param.do_nmf = False
    param.quiet = False  # per-iteration lines are the clock
    param.copy_data = True
    fit = cdll.fit_interface
    fit.restype = ctypes.POINTER(libmf_mf.MFModel)
    fit.argtypes = (ctypes.c_int, ctypes.POINTER(ctypes.c_float),
                    ctypes.POINTER(libmf_mf.MFParam))
    with StdoutLines() as out:
        t0 = time.perf_counter()
        # The binding's MF.fit does X.astype(np.float32) and then this call; same here.
        d = triplets.astype(np.float32)
        model = fit(d.shape[0], d.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                    ctypes.byref(param)).contents
        total = time.perf_counter() - t0
    iters = [(t, s) for t, s in out.lines if s.strip()[:1].isdigit()]
    if len(iters) != epochs:
        raise RuntimeError("LIBMF printed %d iteration lines, expected %d: %r"
                           % (len(iters), epochs, out.lines[-5:]))
    samples = [t for t, _ in iters]
    stamps = [t[0] for t in samples]
    times = list(np.diff(stamps))
    others = [others_between(a, b) for a, b in zip(samples[:-1], samples[1:])]
    cpu = [b[2] - a[2] for a, b in zip(samples[:-1], samples[1:])]
    m, n, k = model.m, model.n, model.k
    p = np.ctypeslib.as_array(model.P, shape=(m * k,)).reshape(m, k).copy()
    q = np.ctypeslib.as_array(model.Q, shape=(n * k,)).reshape(n, k).copy()
    first = stamps[0] - t0  # setup + iteration 1, inseparable
    return ({"epoch_s": [float("nan")] + times, "epoch_others": [float("nan")] + others,
             "epoch_cpu_s": [float("nan")] + cpu,
             "setup_plus_first_s": first, "total_s": total,
             "log": [s for _, s in out.lines]}, p, q, float(model.b))


def run_libmf(data, train, epochs, so_path=None):
    from libmf import mf as libmf_mf
    cdll = libmf_mf.mf if not so_path else ctypes.CDLL(so_path)
    t = np.empty((int(train.sum()), 3), np.float32)
    t[:, 0] = data["rows"][train]
    t[:, 1] = data["cols"][train]
    t[:, 2] = data["explicit"][train]
    res, p, q, b = libmf_fit(cdll, t, epochs)
    del t
    # LIBMF's model covers ids up to the largest one seen; pad (cold rows predict b).
    x = np.full((data["users"], ARGS.k), np.nan, np.float32)
    y = np.full((data["items"], ARGS.k), np.nan, np.float32)
    x[:p.shape[0]] = p
    y[:q.shape[0]] = q
    return res, x, y, b


# ---- quality -----------------------------------------------------------------------------------

def heldout_rmse(data, train, x, y):
    test = data["test"]
    seen_u = np.bincount(data["rows"][train], minlength=data["users"]) > 0
    seen_i = np.bincount(data["cols"][train], minlength=data["items"]) > 0
    u, i = data["rows"][test], data["cols"][test]
    ok = seen_u[u] & seen_i[i]
    u, i, r = u[ok], i[ok], data["explicit"][test][ok]
    pred = np.einsum("ij,ij->i", x[u].astype(np.float64), y[i].astype(np.float64))
    return float(np.sqrt(np.mean((r - pred) ** 2)))


class RankingEval:
    def __init__(self, data, train):
        n_users, n_items = data["users"], data["items"]
        rows, cols = data["rows"], data["cols"]
        test = data["test"]
        self.n_items = n_items
        self.train = scipy.sparse.csr_matrix(
            (np.ones(int(train.sum()), np.float32), cols[train], csr_offsets(rows[train], n_users)),
            shape=(n_users, n_items))
        self.test = scipy.sparse.csr_matrix(
            (np.ones(int(test.sum()), np.float32), cols[test], csr_offsets(rows[test], n_users)),
            shape=(n_users, n_items))
        candidates = np.flatnonzero(np.diff(self.test.indptr) > 0)
        rng = np.random.default_rng(ARGS.seed + 7)
        if candidates.size > ARGS.eval_users:
            candidates = np.sort(rng.choice(candidates, ARGS.eval_users, replace=False))
        self.users = candidates

    def precision_at(self, x, y, k=10):
        total = 0.0
        with threadpoolctl.threadpool_limits(ARGS.threads, user_api="blas"):
            for s in range(0, self.users.size, 1024):
                us = self.users[s:s + 1024]
                scores = x[us] @ y.T
                tr = self.train[us]
                scores[np.repeat(np.arange(us.size), np.diff(tr.indptr)), tr.indices] = -np.inf
                top = np.argpartition(-scores, k, axis=1)[:, :k]
                te = self.test[us]
                relevant = np.zeros((us.size, self.n_items), bool)
                relevant[np.repeat(np.arange(us.size), np.diff(te.indptr)), te.indices] = True
                hits = np.take_along_axis(relevant, top, axis=1).sum(1)
                total += float((hits / np.minimum(k, np.diff(te.indptr))).sum())
        return total / self.users.size


# ---- main --------------------------------------------------------------------------------------

BUSY = 0.25  # cores used by other processes above which an epoch counts as disturbed


def med(res):
    """Median of epochs 2..N that ran while other processes used < BUSY cores (all of epochs
    2..N when none did); returns (median, number of epochs used, whether they were clean)."""
    pairs = [(t, o) for t, o in zip(res["epoch_s"][1:], res["epoch_others"][1:]) if t == t]
    clean = [t for t, o in pairs if o < BUSY]
    use = clean or [t for t, _ in pairs]
    return (float(np.median(use)) if use else float("nan")), len(use), bool(clean)


def med_cpu(res):
    """Median process CPU seconds (all threads) of epochs 2..N, disturbed epochs included: on a
    shared machine it moves much less with others' load than wall time does."""
    use = [c for c in res["epoch_cpu_s"][1:] if c == c]
    return float(np.median(use)) if use else float("nan")


def main():
    runs = [r.strip() for r in ARGS.runs.split(",") if r.strip()]
    for r in runs:
        if r not in ("ials-chol", "ials-cg", "sgd", "als"):
            raise SystemExit("unknown run %r" % r)
    if ARGS.epochs < 2:
        raise SystemExit("--epochs must be >= 2 (the median covers epochs 2..N)")
    sf = Sfac(ARGS.lib)
    versions = {"libsparsefac": sf.version(), "numpy": np.__version__,
                "scipy": scipy.__version__, "python": platform.python_version()}
    for pkg in ("implicit", "libmf", "threadpoolctl"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = "not installed"
    log("versions:", versions)

    t = time.perf_counter()
    data = make_data(ARGS.scale, ARGS.seed, ARGS.planted_rank, ARGS.noise)
    train = ~data["test"]
    nnz = data["rows"].size
    user_deg = np.bincount(data["rows"], minlength=data["users"])
    item_deg = np.bincount(data["cols"], minlength=data["items"])
    log("data: %d x %d, %d nonzeros (%d train, %d test) in %.1f s; user degree min/median/max "
        "%d/%d/%d, item degree median/max %d/%d, items without ratings %d"
        % (data["users"], data["items"], nnz, int(train.sum()), nnz - int(train.sum()),
           time.perf_counter() - t, user_deg.min(), np.median(user_deg), user_deg.max(),
           np.median(item_deg), item_deg.max(), int((item_deg == 0).sum())))

    results = []
    ranking = None

    def record(library, algorithm, res, quality, load, peer=None):
        median, used, clean = med(res)
        row = {"library": library, "algorithm": algorithm, "k": ARGS.k, "threads": ARGS.threads,
               "median_s": median, "epochs_used": used, "clean": clean, "cpu_s": med_cpu(res),
               "e2e_per_epoch_s": res["total_s"] / ARGS.epochs,
               "quality": quality, "peer": peer, **load, **res}
        results.append(row)
        log("  %-10s %-28s median %.3f s/epoch over %d %s epochs (epochs %s; others' cores %s; "
            "CPU s %s), end-to-end %.2f s, %s, other load %.2f cores, loadavg %.2f"
            % (library, algorithm, median, used, "clean" if clean else "DISTURBED",
               " ".join("%.3f" % x for x in res["epoch_s"]),
               " ".join("%.2f" % x for x in res["epoch_others"]),
               " ".join("%.2f" % x for x in res["epoch_cpu_s"]), res["total_s"], quality,
               load["other_cores"], load["loadavg1"]))
        return row

    if "ials-chol" in runs or "ials-cg" in runs:
        ranking = RankingEval(data, train)
        log("IALS: precision@10 over %d users with held-out items" % ranking.users.size)
    for run in runs:
        log("run %s (uptime: %s)" % (run, os.popen("uptime").read().strip()))
        if run in ("ials-chol", "ials-cg"):
            cg = run == "ials-cg"
            name = "IALS " + ("CG (3 steps)" if cg else "Cholesky")
            lm = LoadMeter()
            res, x, y = run_ours(sf, data, train, data["counts"], SFAC_ALGO_IALS,
                                 SOLVER_CG if cg else SOLVER_CHOLESKY, ARGS.epochs)
            load = lm.stop()
            ours = record("sparsefac", name, res, "p@10 %.4f" % ranking.precision_at(x, y), load)
            del x, y
            gc.collect()
            if ARGS.skip_peers:
                continue
            lm = LoadMeter()
            res, x, y = run_implicit(data, train, cg, ARGS.epochs)
            load = lm.stop()
            peer = record("implicit", name.replace("Cholesky", "Cholesky (use_cg=False)")
                          .replace("(3 steps)", "(use_cg=True, 3 steps)"),
                          res, "p@10 %.4f" % ranking.precision_at(x, y), load)
            ours["peer"] = peer["library"]
            ours["ratio"] = ours["median_s"] / peer["median_s"]
            ours["ratio_e2e"] = ours["e2e_per_epoch_s"] / peer["e2e_per_epoch_s"]
            del x, y
        elif run == "sgd":
            lm = LoadMeter()
            res, x, y = run_ours(sf, data, train, data["explicit"], SFAC_ALGO_SGD, None,
                                 ARGS.epochs)
            load = lm.stop()
            ours = record("sparsefac", "SGD (FPSGD blocks)", res,
                          "RMSE %.4f" % heldout_rmse(data, train, x, y), load)
            del x, y
            gc.collect()
            peers = [("libmf", "")] + ([("libmf-simd", ARGS.libmf_so)] if ARGS.libmf_so else [])
            if ARGS.skip_peers:
                peers = []
            for label, so in peers:
                lm = LoadMeter()
                res, x, y, b = run_libmf(data, train, ARGS.epochs, so or None)
                load = lm.stop()
                peer = record(label, "SGD (FPSGD)", res,
                              "RMSE %.4f" % heldout_rmse(data, train, x, y), load)
                if label == "libmf":
                    ours["peer"] = "libmf"
                    ours["ratio"] = ours["median_s"] / peer["median_s"]
                    ours["ratio_e2e"] = ours["e2e_per_epoch_s"] / peer["e2e_per_epoch_s"]
                else:
                    ours["ratio_simd"] = ours["median_s"] / peer["median_s"]
                del x, y
        elif run == "als":
            lm = LoadMeter()
            res, x, y = run_ours(sf, data, train, data["explicit"], SFAC_ALGO_ALS,
                                 SOLVER_CHOLESKY, ARGS.epochs)
            load = lm.stop()
            record("sparsefac", "explicit ALS Cholesky", res,
                   "RMSE %.4f" % heldout_rmse(data, train, x, y), load)
            del x, y
        gc.collect()

    print("\nlibsparsefac CPU training benchmark: %d x %d, %d nonzeros (scale %g), k=%d, "
          "%d threads, %d epochs; seconds/epoch = median of the undisturbed epochs among 2..%d; e2e = (input arrays "
          "-> trained model) / epochs; ratio = ours / peer (< 1: ours faster); noise floor "
          "RMSE %.2f\n" % (data["users"], data["items"], nnz, ARGS.scale, ARGS.k, ARGS.threads,
                           ARGS.epochs, ARGS.epochs, ARGS.noise))
    print("| library | algorithm | k | threads | s/epoch (median) | e2e s/epoch | ratio ours/peer "
          "(median; e2e) | CPU s/epoch (median) | quality | load: others' cores over the run; "
          "loadavg at start |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        ratio = ("%.2f; %.2f (vs %s)" % (r["ratio"], r["ratio_e2e"], r["peer"])
                 if r.get("ratio") else ("-" if r["library"] != "sparsefac" else "no peer"))
        if r.get("ratio_simd"):
            ratio += "; %.2f vs libmf-simd" % r["ratio_simd"]
        print("| %s | %s | %d | %d | %.3f%s | %.3f | %s | %.2f | %s | %.2f; %.2f |"
              % (r["library"], r["algorithm"], r["k"], r["threads"], r["median_s"],
                 "" if r["clean"] else " (disturbed)", r["e2e_per_epoch_s"], ratio, r["cpu_s"],
                 r["quality"], r["other_cores"], r["loadavg1"]))
    if ARGS.json:
        with open(ARGS.json, "w") as f:
            json.dump({"args": vars(ARGS), "versions": versions, "nnz": int(nnz),
                       "results": results}, f, indent=1, default=float)


if __name__ == "__main__":
    main()
