#!/usr/bin/env python3
"""Top-n recommendation benchmark: libsparsefac against PyTorch on the same model and data.

One process builds, per case, a seeded set of seen items (sfac_synthesize_ratings: power-law
degrees, skew 0.6) and random float32 factors (N(0, 1/k) entries), and times top-n for users
0 .. --users - 1 with their seen items excluded:

  * ours: sfac_model_recommend on a model holding those factors (a 0-epoch sfac_train on the
    seen items, then sfac_model_set_user/_item_factors), on the context of --backend;
  * torch: chunks of users, S = U_c @ V^T, the chunk's seen items set to -inf, torch.topk; the
    column is skipped with a note where PyTorch is absent. --torch-device picks cuda or cpu.
  * cpu (with --cpu-column and --backend cuda): the same call on a CPU context's copy of the
    model (sfac_model_copy) for the first --cpu-users users (the host takes minutes for all of
    a Netflix shape), --cpu-reps runs after a warm-up; the column is that time scaled to the
    timed users (times users / --cpu-users).

Each timing is the median of --reps runs (the first run, not counted, warms both up). The
lists are compared on a sample of users: the same items in the same order, or, where they
differ, scores within 1e-4 relative (near-ties may order differently: the two sum the dot
products in different orders). Floor: the fp32 FLOPs 2 * users * items * k at --peak-tflops
(67, an H100's fp32 rate without tensor cores); floor% = floor / time (above 100% where ours
multiplies 16-bit values on the tensor cores). With --dtype bfloat16 the
factors are rounded to bfloat16 values: ours keeps float32 semantics (exact products, fp32
sums) on the 16-bit values themselves, PyTorch multiplies bfloat16 tensors into bfloat16 scores, so its
lists differ by rounding and are not compared. --user-scale keeps a
case's catalogue and takes a fraction of its users (and seen items): the 1M-item case's
catalogue without synthesizing all of its 250M seen items.

  python3 bench/bench_recommend.py [--lib build/libsparsefac.so] [--cases netflix,yahoo]
      [--ranks 64,100,128] [--users 0 (all)] [--n 10] [--backend cpu|cuda] [--threads 0]
      [--torch-device cuda|cpu|none] [--scale 1.0] [--user-scale 1.0] [--reps 3]
      [--cpu-column] [--cpu-reps 1]
"""
import argparse
import ctypes
import sys

import numpy as np

from bench_timing import median_s
from sfac_ctypes import (FEEDBACK_IMPLICIT, OPT_ITERATIONS, OPT_RANK, SFAC_ALGO_IALS,
                         SFAC_BACKEND_CPU, SFAC_BACKEND_CUDA, Sfac, ptr)

# (users, items, seen items) of the shapes.
CASES = {
    "netflix": (480189, 17770, 99000000),
    "yahoo": (1000990, 624961, 250000000),
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", default="build/libsparsefac.so", help="path of libsparsefac.so")
    p.add_argument("--cases", default="netflix,yahoo", help="comma-separated: netflix, yahoo")
    p.add_argument("--ranks", default="64,100,128")
    p.add_argument("--users", type=int, default=0, help="users timed (0 = all)")
    p.add_argument("--n", type=int, default=10, help="items per user")
    p.add_argument("--backend", choices=["cpu", "cuda"], default="cpu",
                   help="the context of ours")
    p.add_argument("--threads", type=int, default=0, help="CPU threads of ours (0 = all cores)")
    p.add_argument("--torch-device", choices=["cuda", "cpu", "none"], default="cuda")
    p.add_argument("--scale", type=float, default=1.0,
                   help="fraction of each shape (users, items and seen items)")
    p.add_argument("--user-scale", type=float, default=1.0,
                   help="fraction of each shape's users and seen items (items kept)")
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                   help="factors: float32, or rounded to bfloat16 values (ours then scores them "
                        "on the 16-bit values; PyTorch multiplies bfloat16 tensors)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--cpu-column", action="store_true",
                   help="also time a CPU context's copy of the model (with --backend cuda)")
    p.add_argument("--cpu-reps", type=int, default=1)
    p.add_argument("--cpu-users", type=int, default=10000,
                   help="users the CPU column times (scaled to all timed users)")
    p.add_argument("--check-users", type=int, default=2000, help="users whose lists are compared")
    p.add_argument("--peak-tflops", type=float, default=67.0)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    for name in a.cases.split(","):
        if name not in CASES:
            p.error("unknown case %r (cases: %s)" % (name, ", ".join(CASES)))
    try:
        a.ranks = [int(k) for k in a.ranks.split(",")]
    except ValueError:
        p.error("--ranks must be comma-separated integers")
    if min(a.ranks) < 1 or a.n < 1 or a.reps < 1 or a.users < 0 or not 0 < a.scale <= 1 \
            or not 0 < a.user_scale <= 1:
        p.error("ranks, --n and --reps must be >= 1, --users >= 0, scales in (0, 1]")
    return a


def load_torch(device):
    if device == "none":
        return None, "not asked for"
    try:
        import torch
    except ImportError:
        return None, "PyTorch is not installed"
    if device == "cuda" and not torch.cuda.is_available():
        return None, "PyTorch sees no CUDA device"
    return torch, "torch %s on %s" % (torch.__version__, device)


def round_bf16(a):
    """float32 values rounded to the nearest bfloat16 (ties to even), as float32."""
    bits = a.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000
    return bits.astype(np.uint32).view(np.float32)


class Seen:
    """The seen items (a CSR on the host) and the matrix ours excludes, on a context."""

    def __init__(self, sf, ctx, users, items, nnz):
        ratings = ctypes.c_void_p()
        sf("sfac_synthesize_ratings", ctx, FEEDBACK_IMPLICIT, users, items, nnz, 16, 0.0, 0.6,
           ctypes.byref(ratings), None, None)
        self.matrix = ratings
        rows, cols, count = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
        sf("sfac_sparse_get_shape", ratings, ctypes.byref(rows), ctypes.byref(cols),
           ctypes.byref(count))
        self.offsets = np.empty(users + 1, np.int64)
        self.cols = np.empty(count.value, np.int32)
        sf("sfac_sparse_download_csr", ratings, ptr(self.offsets), self.offsets.size,
           ptr(self.cols), None, self.cols.size)


def model_with(sf, ctx, seen, user_factors, item_factors):
    """A model of the seen items' shape holding the given factors."""
    k = user_factors.shape[1]
    opt, model = ctypes.c_void_p(), ctypes.c_void_p()
    sf("sfac_train_options_create", SFAC_ALGO_IALS, ctypes.byref(opt))
    try:
        sf("sfac_train_options_set_int", opt, OPT_RANK, k)
        sf("sfac_train_options_set_int", opt, OPT_ITERATIONS, 0)
        sf("sfac_train", ctx, seen.matrix, opt, ctypes.byref(model))
    finally:
        sf("sfac_train_options_destroy", opt)
    sf("sfac_model_set_user_factors", model, ptr(user_factors))
    sf("sfac_model_set_item_factors", model, ptr(item_factors))
    return model


def torch_top_n(torch, device, u, v, seen, off, cols, users, n):
    """Top-n of users 0 .. users - 1 by chunked U_c @ V^T with seen items masked (`off` and
    `cols`: the seen items' CSR, already on the device)."""
    items = v.shape[0]
    chunk = max(1, min(users, (1 << 28) // max(items, 1)))  # 1 GiB of float32 scores a chunk
    out_items = torch.empty((users, n), dtype=torch.int64, device=device)
    out_scores = torch.empty((users, n), dtype=torch.float32, device=device)
    for c0 in range(0, users, chunk):
        c1 = min(users, c0 + chunk)
        scores = u[c0:c1] @ v.T
        lo, hi = int(seen.offsets[c0]), int(seen.offsets[c1])
        counts = off[c0 + 1:c1 + 1] - off[c0:c1]
        rows = torch.repeat_interleave(torch.arange(c1 - c0, device=device), counts)
        scores[rows, cols[lo:hi]] = float("-inf")
        top = torch.topk(scores, min(n, items), dim=1)
        out_scores[c0:c1, :top.values.shape[1]] = top.values
        out_items[c0:c1, :top.indices.shape[1]] = top.indices
    return out_items, out_scores


def lists_agree(ours_items, ours_scores, their_items, their_scores):
    """Users whose lists differ beyond near-ties (see the module's docstring)."""
    bad = 0
    for r in range(ours_items.shape[0]):
        if np.array_equal(ours_items[r], their_items[r]):
            continue
        if not np.allclose(ours_scores[r], their_scores[r], rtol=1e-4, atol=1e-5):
            bad += 1
    return bad


def main():
    args = parse_args()
    sf = Sfac(args.lib)
    torch, torch_note = load_torch(args.torch_device)
    print("libsparsefac %s, ours on %s, %s factors; %s" % (sf.version(), args.backend, args.dtype,
                                                           torch_note))
    header = ("case", "users", "items", "seen", "k", "ours_ms", "torch_ms", "ours/torch",
              "cpu_ms", "cpu/ours", "GFLOP/s", "floor%", "mismatch")
    print("%-8s %9s %9s %11s %4s %10s %10s %10s %10s %8s %8s %7s %8s" % header)
    cpu_ctx = None
    if args.cpu_column and args.backend == "cuda":
        cpu_ctx = ctypes.c_void_p()
        sf("sfac_context_create", SFAC_BACKEND_CPU, 0, args.threads, args.seed,
           ctypes.byref(cpu_ctx))
    backend = SFAC_BACKEND_CUDA if args.backend == "cuda" else SFAC_BACKEND_CPU
    for name in args.cases.split(","):
        shape = [max(1, int(x * args.scale)) for x in CASES[name]]
        n_users, n_items, n_seen = shape
        n_users = max(1, int(n_users * args.user_scale))
        n_seen = max(1, int(n_seen * args.user_scale))
        n_seen = min(n_seen, n_users * n_items // 3)  # small scales: at most a third of the cells
        ctx = ctypes.c_void_p()
        sf("sfac_context_create", backend, 0, args.threads, args.seed, ctypes.byref(ctx))
        seen = Seen(sf, ctx, n_users, n_items, n_seen)
        if torch is not None:  # the seen items' CSR on PyTorch's device, outside the timings
            t_off = torch.from_numpy(seen.offsets).to(args.torch_device)
            t_cols = torch.from_numpy(seen.cols.astype(np.int64)).to(args.torch_device)
        users = n_users if args.users == 0 else min(args.users, n_users)
        user_ids = np.arange(users, dtype=np.int32)
        rng = np.random.default_rng(args.seed)
        for k in args.ranks:
            u = (rng.standard_normal((n_users, k)) / np.sqrt(k)).astype(np.float32)
            v = (rng.standard_normal((n_items, k)) / np.sqrt(k)).astype(np.float32)
            if args.dtype == "bfloat16":
                u, v = round_bf16(u), round_bf16(v)
            model = model_with(sf, ctx, seen, u, v)
            ours_items = np.empty((users, args.n), np.int32)
            ours_scores = np.empty((users, args.n), np.float32)

            def ours():
                sf("sfac_model_recommend", model, users, ptr(user_ids), args.n, seen.matrix, 0,
                   None, ptr(ours_items), ptr(ours_scores), ours_items.size)

            ours_s = median_s(args.reps, ours)
            cpu_s = float("nan")
            if cpu_ctx is not None:
                twin, cpu_seen = ctypes.c_void_p(), ctypes.c_void_p()
                sf("sfac_model_copy", model, cpu_ctx, ctypes.byref(twin))
                ones = np.ones(seen.cols.size, np.float32)
                sf("sfac_sparse_create_csr", cpu_ctx, n_users, n_items, ptr(seen.offsets),
                   ptr(seen.cols), ptr(ones), seen.cols.size, 0, ctypes.byref(cpu_seen))
                cpu_users = max(1, min(users, args.cpu_users))
                cpu_items = np.empty((cpu_users, args.n), np.int32)
                cpu_scores = np.empty((cpu_users, args.n), np.float32)

                def on_cpu():
                    sf("sfac_model_recommend", twin, cpu_users, ptr(user_ids), args.n, cpu_seen,
                       0, None, ptr(cpu_items), ptr(cpu_scores), cpu_items.size)

                cpu_s = median_s(args.cpu_reps, on_cpu) * users / cpu_users
                sf("sfac_sparse_destroy", cpu_seen)
                sf("sfac_model_destroy", twin)
            torch_s, mismatch = float("nan"), "-"
            if torch is not None:
                dev = args.torch_device
                tu, tv = torch.from_numpy(u).to(dev), torch.from_numpy(v).to(dev)
                if args.dtype == "bfloat16":
                    tu, tv = tu.to(torch.bfloat16), tv.to(torch.bfloat16)
                sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
                result = {}

                def theirs():
                    result["lists"] = torch_top_n(torch, dev, tu, tv, seen, t_off, t_cols, users,
                                                  args.n)

                torch_s = median_s(args.reps, theirs, sync)
                check = min(users, args.check_users)
                their_items = result["lists"][0][:check].cpu().numpy()
                their_scores = result["lists"][1][:check].cpu().numpy()
                if args.dtype == "float32":
                    mismatch = str(lists_agree(ours_items[:check], ours_scores[:check],
                                               their_items, their_scores.astype(np.float32)))
            flops = 2.0 * users * n_items * k
            floor_s = flops / (args.peak_tflops * 1e12)
            print("%-8s %9d %9d %11d %4d %10.2f %10.2f %10.2f %10.1f %8.1f %8.0f %6.1f%% %8s" % (
                name, users, n_items, seen.cols.size, k, ours_s * 1e3, torch_s * 1e3,
                ours_s / torch_s if torch is not None else float("nan"), cpu_s * 1e3,
                cpu_s / ours_s, flops / ours_s / 1e9, 100.0 * floor_s / ours_s, mismatch))
            sys.stdout.flush()
            sf("sfac_model_destroy", model)
        sf("sfac_sparse_destroy", seen.matrix)
        sf("sfac_context_destroy", ctx)


if __name__ == "__main__":
    main()
