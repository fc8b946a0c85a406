#!/usr/bin/env bash
# pip-installs the binding from a copy of the source tree into a private target directory
# (no network: --no-build-isolation --no-deps) and checks that the installed package works.
# Usage: pip_install_test.sh <python> <source root> <work dir>; SPARSEFAC_BUILD_DIR is set.
set -euo pipefail
python=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work/tree/bindings" "$work/target"
cp -r "$src/bindings/python" "$src/bindings/swig" "$work/tree/bindings/"
rm -rf "$work/tree/bindings/python/build" "$work/tree/bindings/python/"*.egg-info
"$python" -m pip install --disable-pip-version-check --no-cache-dir --no-deps \
  --no-build-isolation --target "$work/target" "$work/tree/bindings/python"
cd "$work"  # not the source tree: the import must come from the target directory
PYTHONPATH="$work/target" "$python" - <<'PY'
import os
import numpy as np
import sparsefac as sf
assert os.path.realpath(sf.__file__).startswith(os.path.realpath(os.getcwd())), sf.__file__
ratings, _, _ = sf.synthesize_ratings(200, 100, 3000, rank=3, noise=0.1, seed=3)
model = sf.AlternatingLeastSquares(factors=3, iterations=10, regularization=0.01).fit(ratings)
rmse, _ = model.evaluate(ratings)
assert rmse < 0.3, rmse
print(f"installed {sf.__version__} from {os.path.dirname(sf.__file__)}, training RMSE {rmse:.3f}")
PY
echo "pip install OK"
