#!/usr/bin/env bash
# GPU check, run on the device machine (no internet, no Debian dev packages there): the test
# binary and libsparsefac are built here with CUDA and carried in .carry/ together with the
# runtime libraries they need:
#   scripts/gpu-check.sh prepare     # on the dev machine: build-cuda/ -> .carry/
#   scripts/gpu-check.sh run         # on the device: GPU tests, compute-sanitizer, summary
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

prepare() {
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARSEFAC_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEFAC_BINDINGS=OFF && cmake --build build-cuda --parallel 2 || exit 1
  rm -rf .carry && mkdir -p .carry/lib .carry/bin
  for lib in liblapacke.so.3 libopenblas.so.0 libblas.so.3 liblapack.so.3 libtmglib.so.3 \
    libgfortran.so.5 libquadmath.so.0 libgomp.so.1; do
    cp -L "/lib/x86_64-linux-gnu/$lib" .carry/lib/
  done
  cp -L build-cuda/libsparsefac.so.0 .carry/lib/
  cp build-cuda/tests/sparsefac_tests .carry/bin/
  cp build-cuda/bench/bench_sddmm_cuda .carry/bin/
  du -sh .carry
}

run() {
  local out=${OUT:-/tmp/gpu-check}
  mkdir -p "$out"
  export LD_LIBRARY_PATH="$PWD/.carry/lib:${LD_LIBRARY_PATH:-}"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  local tests=.carry/bin/sparsefac_tests
  "$tests" --gtest_filter='Cuda*:Context*:Sddmm*:Reorder*' >"$out/gtest.log" 2>&1
  local gtest_rc=$?
  grep -E '^\[ +(OK|FAILED|SKIPPED) +\]' "$out/gtest.log" | tail -40
  compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 "$tests" \
    --gtest_filter='Cuda.S*:Cuda.Coo*:Cuda.Degree*' >"$out/memcheck.log" 2>&1
  local memcheck_rc=$?
  compute-sanitizer --tool racecheck --error-exitcode 9 "$tests" \
    --gtest_filter='Cuda.SddmmInPlace*:Cuda.SparseAndDense*:Cuda.SddmmTiled*:Cuda.SddmmDense*:Cuda.SddmmCorner*' >"$out/racecheck.log" 2>&1
  local racecheck_rc=$?
  tail -n 3 "$out/memcheck.log" "$out/racecheck.log"
  echo
  printf '%-12s %s\n' check exit
  printf '%-12s %s\n' gtest "$gtest_rc" memcheck "$memcheck_rc" racecheck "$racecheck_rc"
}

case "${1:-run}" in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac
