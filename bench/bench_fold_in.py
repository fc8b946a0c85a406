#!/usr/bin/env python3
"""Batched fold-in benchmark: sfac_model_recalculate_users on a CUDA context against the CPU
backend, on the same model and ratings, in one process.

Per case, a Netflix-shaped model (480,189 users x 17,770 items) holds random float32 factors
(N(0, 1/k) entries); the users folded in are users 0 .. --users - 1 with their seeded ratings
(sfac_synthesize_ratings: power-law degrees, skew 0.6; implicit counts, taken as ratings by
explicit ALS too). Each call only computes (users = NULL): the model does not change between
repetitions. Timings are medians of --reps calls after one untimed call (which also moves the
item side to the device). The factors of the two backends are compared row by row (largest
difference relative to the row's largest entry). The floor: the fp32 FLOPs of the normal
equations and Cholesky, sum over users of n_u d (d + 1) + d^3 / 3, at --peak-tflops (67, an
H100's fp32 rate without tensor cores); floor% = floor / time. With --cg-steps S both backends
solve by S conjugate-gradient steps from zero (sfac_model_set_fold_in_solver), and the FLOPs are
those of CG without forming the systems: (S + 1) (4 n_u d, plus 2 d^2 for implicit feedback).

  python3 bench/bench_fold_in.py [--lib build/libsparsefac.so] [--users 10000]
      [--ranks 64,100,128] [--algorithms als,ials] [--seen 99000000] [--reps 5] [--threads 0]
      [--backend cuda|cpu] [--cg-steps 0 (Cholesky)]
"""
import argparse
import ctypes
import sys

import numpy as np

from bench_timing import median_s
from sfac_ctypes import (FEEDBACK_IMPLICIT, OPT_ITERATIONS, OPT_RANK, SFAC_ALGO_ALS,
                         SFAC_ALGO_IALS, SFAC_BACKEND_CPU, SFAC_BACKEND_CUDA, Sfac, ptr)

USERS, ITEMS = 480189, 17770
SFAC_SOLVER_CG = 1


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", default="build/libsparsefac.so", help="path of libsparsefac.so")
    p.add_argument("--users", type=int, default=10000, help="users folded in per call")
    p.add_argument("--backend", choices=["cuda", "cpu"], default="cuda",
                   help="the context of ours (cpu: a smoke test of the script)")
    p.add_argument("--ranks", default="64,100,128")
    p.add_argument("--algorithms", default="als,ials")
    p.add_argument("--seen", type=int, default=99000000, help="ratings of the whole shape")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--cpu-reps", type=int, default=1)
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0 = all cores)")
    p.add_argument("--peak-tflops", type=float, default=67.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cg-steps", type=int, default=0, help="CG steps (0: Cholesky)")
    a = p.parse_args()
    a.ranks = [int(k) for k in a.ranks.split(",")]
    a.algorithms = a.algorithms.split(",")
    if any(x not in ("als", "ials") for x in a.algorithms):
        p.error("--algorithms: als, ials")
    if min(a.ranks) < 1 or not 1 <= a.users <= USERS or a.reps < 1:
        p.error("ranks >= 1, --users in [1, %d], --reps >= 1" % USERS)
    return a


def main():
    args = parse_args()
    sf = Sfac(args.lib)
    print("libsparsefac %s; fold-in of %d users, Netflix shape" % (sf.version(), args.users))
    print("%-5s %4s %9s %9s %9s %9s %8s %7s %9s" % ("algo", "k", "ratings", "ours_ms", "cpu_ms",
                                                    "cpu/ours", "GFLOP/s", "floor%", "max_rel"))
    gpu, cpu = ctypes.c_void_p(), ctypes.c_void_p()
    sf("sfac_context_create", SFAC_BACKEND_CUDA if args.backend == "cuda" else SFAC_BACKEND_CPU, 0,
       args.threads, args.seed, ctypes.byref(gpu))
    sf("sfac_context_create", SFAC_BACKEND_CPU, 0, args.threads, args.seed, ctypes.byref(cpu))
    ratings = ctypes.c_void_p()
    sf("sfac_synthesize_ratings", gpu, FEEDBACK_IMPLICIT, USERS, ITEMS, args.seen, 16, 0.0, 0.6,
       ctypes.byref(ratings), None, None)
    rows, cols, count = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
    sf("sfac_sparse_get_shape", ratings, ctypes.byref(rows), ctypes.byref(cols),
       ctypes.byref(count))
    offsets = np.empty(USERS + 1, np.int64)
    items = np.empty(count.value, np.int32)
    values = np.empty(count.value, np.float32)
    sf("sfac_sparse_download_csr", ratings, ptr(offsets), offsets.size, ptr(items), ptr(values),
       items.size)
    u = args.users
    b_off = np.ascontiguousarray(offsets[:u + 1])
    nnz = int(b_off[-1])
    b_items, b_values = np.ascontiguousarray(items[:nnz]), np.ascontiguousarray(values[:nnz])
    lengths = np.diff(b_off).astype(np.float64)
    rng = np.random.default_rng(args.seed)
    for algo in args.algorithms:
        for k in args.ranks:
            opt, model, twin = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
            sf("sfac_train_options_create", SFAC_ALGO_IALS if algo == "ials" else SFAC_ALGO_ALS,
               ctypes.byref(opt))
            sf("sfac_train_options_set_int", opt, OPT_RANK, k)
            sf("sfac_train_options_set_int", opt, OPT_ITERATIONS, 0)
            sf("sfac_train", gpu, ratings, opt, ctypes.byref(model))
            sf("sfac_train_options_destroy", opt)
            uf = (rng.standard_normal((USERS, k)) / np.sqrt(k)).astype(np.float32)
            vf = (rng.standard_normal((ITEMS, k)) / np.sqrt(k)).astype(np.float32)
            sf("sfac_model_set_user_factors", model, ptr(uf))
            sf("sfac_model_set_item_factors", model, ptr(vf))
            if args.cg_steps > 0:
                sf("sfac_model_set_fold_in_solver", model, SFAC_SOLVER_CG, args.cg_steps)
            sf("sfac_model_copy", model, cpu, ctypes.byref(twin))  # the solver comes along
            outs = {}
            for name, m in (("cuda", model), ("cpu", twin)):
                out = np.empty((u, k), np.float32)
                outs[name] = out

                def run(m=m, out=out):
                    sf("sfac_model_recalculate_users", m, u, None, ptr(b_off), ptr(b_items),
                       ptr(b_values), ptr(out), out.size, None)

                outs[name + "_s"] = median_s(args.reps if name == "cuda" else args.cpu_reps, run)
            scale = np.maximum(np.abs(outs["cpu"]).max(axis=1), 1e-6)
            rel = float((np.abs(outs["cuda"] - outs["cpu"]).max(axis=1) / scale).max())
            d = float(k)
            if args.cg_steps > 0:
                flops = float((args.cg_steps + 1) * (
                    (lengths * 4 * d).sum() + (u * 2 * d * d if algo == "ials" else 0)))
            else:
                flops = float((lengths * d * (d + 1)).sum() + u * d ** 3 / 3)
            t = outs["cuda_s"]
            print("%-5s %4d %9d %9.2f %9.1f %9.1f %8.0f %6.1f%% %9.2e" % (
                algo, k, nnz, t * 1e3, outs["cpu_s"] * 1e3, outs["cpu_s"] / t, flops / t / 1e9,
                100.0 * flops / (args.peak_tflops * 1e12) / t, rel))
            sys.stdout.flush()
            sf("sfac_model_destroy", twin)
            sf("sfac_model_destroy", model)
    sf("sfac_sparse_destroy", ratings)
    sf("sfac_context_destroy", cpu)
    sf("sfac_context_destroy", gpu)


if __name__ == "__main__":
    main()
