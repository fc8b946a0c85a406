"""Cross-language model files (protocol shared by every binding; run by ctest).

save: train the reference ALS model and write $SFAC_XLANG_DIR/python.sfm plus python.pred, the
      float32 bit patterns of its predictions for users 0..9 x items 0..9.
load: load every *.sfm in the directory (whatever language wrote it) and require bit-identical
      predictions to the .pred file beside it.
"""

import glob
import os
import sys

import numpy as np

import sparsefac as sf

PAIRS_U, PAIRS_I = (a.ravel().astype(np.int32) for a in np.meshgrid(np.arange(10), np.arange(10),
                                                                        indexing="ij"))


def xlang_dir():
    path = os.environ.get("SFAC_XLANG_DIR")
    if not path:
        sys.exit("SFAC_XLANG_DIR is not set")
    return path


def save():
    out = xlang_dir()
    os.makedirs(out, exist_ok=True)
    with sf.Context("cpu", threads=1, seed=7) as ctx:
        ratings, _, _ = sf.synthesize_ratings(300, 200, 6000, rank=4, noise=0.1, skew=0.0,
                                              context=ctx)
        model = sf.AlternatingLeastSquares(factors=4, iterations=5, deterministic=True,
                                           context=ctx).fit(ratings)
        model.save(os.path.join(out, "python.sfm"))
        bits = model.predict(PAIRS_U, PAIRS_I).view(np.uint32)
    with open(os.path.join(out, "python.pred"), "w") as f:
        for u, i, b in zip(PAIRS_U, PAIRS_I, bits):
            f.write(f"{u} {i} {b}\n")
    print(f"xlang save: {out}/python.sfm, rmse on training data "
          f"{model.evaluate(ratings)[0]:.4f}")


def load():
    models = sorted(glob.glob(os.path.join(xlang_dir(), "*.sfm")))
    if not models:
        sys.exit(f"xlang load: no .sfm file in {xlang_dir()}")
    failures = 0
    for path in models:
        pred = os.path.splitext(path)[0] + ".pred"
        expect = np.loadtxt(pred, dtype=np.int64, ndmin=2)
        if expect.shape != (100, 3):
            print(f"FAIL {pred}: expected 100 lines of 'u i bits', got shape {expect.shape}")
            failures += 1
            continue
        model = sf.load_model(path)
        got = model.predict(expect[:, 0], expect[:, 1]).view(np.uint32).astype(np.int64)
        bad = np.nonzero(got != expect[:, 2])[0]
        if bad.size:
            k = bad[0]
            print(f"FAIL {path}: {bad.size} of 100 scores differ, first ({expect[k, 0]}, "
                  f"{expect[k, 1]}): {got[k]} != {expect[k, 2]}")
            failures += 1
        else:
            print(f"ok   {path}: 100 scores bit-identical")
        model.close()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    {"save": save, "load": load}[sys.argv[1]]()
