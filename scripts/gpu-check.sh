#!/usr/bin/env bash
# GPU check, run on the device machine (no internet, no Debian dev packages there): the test
# binary and libsparsefac are built here with CUDA and carried in .carry/bundle.tar.xz together
# with the runtime libraries they need (compressed: the device tool carries at most 64 MiB):
#   scripts/gpu-check.sh prepare     # on the dev machine: build-cuda/ (or $SFAC_BUILD_DIR) -> .carry/
#   scripts/gpu-check.sh run         # on the device: GPU tests, compute-sanitizer, the Python
#                                    # package's tests against the CUDA library, summary
#   scripts/gpu-check.sh bench-als   # on the device: the ALS table of BENCHMARKS.md
#   scripts/gpu-check.sh bench-serve # on the device: the top-n and fold-in tables of BENCHMARKS.md
#   scripts/gpu-check.sh bench-sddmm # on the device: the SDDMM table of BENCHMARKS.md
#   scripts/gpu-check.sh ab-als      # on the device: the ALS target shapes, the carried library
#                                    # against .carry/libB/, libC/, ... (SFAC_AB_BUILD_DIR at
#                                    # prepare: one build directory or several, space-separated)
#   scripts/gpu-check.sh ab-serve    # on the device: the same for bfloat16 top-10 (Netflix shape)
# `run` is also available in parts (each within one device call): gtest, sanitize, python, cli.
# The Python extension is compiled there (its Python differs from this machine's), from the
# SWIG wrapper generated here into .carry/py together with the package's modules.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

prepare() {
  local b=${SFAC_BUILD_DIR:-build-cuda}
  cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARSEFAC_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEFAC_BINDINGS=OFF && cmake --build "$b" --parallel 2 || exit 1
  rm -rf .carry && mkdir -p .carry/lib .carry/bin
  for lib in liblapacke.so.3 libopenblas.so.0 libblas.so.3 liblapack.so.3 libtmglib.so.3 \
    libgfortran.so.5 libquadmath.so.0 libgomp.so.1; do
    cp -L "/lib/x86_64-linux-gnu/$lib" .carry/lib/
  done
  cp -L "$b"/libsparsefac.so.0 .carry/lib/
  # Libraries to compare with (ab-als, ab-serve), compressed beside the bundle: libB, libC, ...
  local letter=B dir
  for dir in ${SFAC_AB_BUILD_DIR:-}; do
    mkdir -p ".carry/lib$letter"
    xz -T2 -c "$dir"/libsparsefac.so.0 >".carry/lib$letter/libsparsefac.so.0.xz" || exit 1
    letter=$(tr 'A-Y' 'B-Z' <<<"$letter")
  done
  cp "$b"/tests/sparsefac_tests .carry/bin/
  cp "$b"/bench/bench_sddmm_cuda "$b"/bench/bench_reorder_cuda "$b"/bench/bench_sddmm_mma_band \
    "$b"/bench/bench_als "$b"/bench/bench_sgd "$b"/tools/sparsefac .carry/bin/
  (cd .carry && tar -cf - lib bin | xz -T2 -6 >bundle.tar.xz && rm -rf lib bin) || exit 1
  mkdir -p .carry/py/sparsefac
  cp bindings/python/sparsefac/*.py .carry/py/sparsefac/
  swig -python -threads -DSWIGWORDSIZE64 -interface _core -Ibindings/swig -Iinclude \
    -outdir .carry/py -o .carry/py/sparsefac_python_wrap.c bindings/swig/sparsefac.i || exit 1
  rm -f .carry/py/sparsefac.py  # SWIG's proxy module: the package calls _core directly
  du -sh .carry
}

unpack() {
  OUT=${OUT:-/tmp/gpu-check}
  mkdir -p "$OUT"
  [[ -d .carry/lib ]] || tar -xJf .carry/bundle.tar.xz -C .carry || return 1
  export LD_LIBRARY_PATH="$PWD/.carry/lib:${LD_LIBRARY_PATH:-}"
}

# The whole suite: with a device, AUTO contexts are CUDA contexts, so every test of the suite
# runs against the CUDA backend where it does not name a backend.
gtest() {
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  .carry/bin/sparsefac_tests --gtest_filter='-SddmmCpu.NonzerosPast*' >"$OUT/gtest.log" 2>&1
  local rc=$?
  grep -E '^\[ +(FAILED|SKIPPED) +\]' "$OUT/gtest.log" | sort -u | tail -40
  grep -E '^\[ +(PASSED|FAILED) +\]|tests ran' "$OUT/gtest.log" | tail -3
  return $rc
}

sanitize() {
  local tests=.carry/bin/sparsefac_tests
  compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 "$tests" \
    --gtest_filter='Cuda.S*:Cuda.Dense*:Cuda.Coo*:Cuda.Degree*:*CudaAls.*Rank8*:*CudaAls.*Rank33*:*CudaAls.*Rank300*:*CudaAls.*CgRank100*:*CudaAls.*Rank100BiasesWeightedFloat16*:*CudaAls.*Rank64Float16Alpha*:*CudaAls.*Rank144*:CudaAlsLimits.*:FaultInjection.Device*:*CudaSgd.*Rank33*:*CudaSgd.*Rank256Bfloat16:CudaSgdLimits.*:Backends/Train.Sgd*/Cuda:Backends/Train.SameSeed*/Cuda:Backends/FoldInBatch.*/Cuda:AutoBackend.*:CudaRecommend.Metrics*:CudaRecommend.Bad*' \
    >"$OUT/memcheck.log" 2>&1
  local memcheck_rc=$?
  compute-sanitizer --tool racecheck --error-exitcode 9 "$tests" \
    --gtest_filter='Cuda.SddmmInPlace*:Cuda.SparseAndDense*:Cuda.SddmmTiled*:Cuda.SddmmDense*:Cuda.SddmmCellsOnACluster*:Cuda.SddmmCorner*:*CudaAls.*Rank3Biases*:*CudaAls.*CholeskyRank64*:*CudaAls.*Rank144*:*CudaAls.*CgRank16*:*CudaAls.*Rank16BiasesWeightedBfloat16*:Storage/CudaAls.OneEpochGivesTheCpuTrainersFactors/ImplicitCholeskyRank64Float16:CudaAlsLimits.Singular*:Backends/FoldInBatch.EveryRow*/Cuda' \
    >"$OUT/racecheck.log" 2>&1
  local racecheck_rc=$?
  tail -n 3 "$OUT/memcheck.log" "$OUT/racecheck.log"
  echo "memcheck $memcheck_rc racecheck $racecheck_rc"
  return $((memcheck_rc | racecheck_rc))
}

run() {
  unpack || return 1
  gtest
  local gtest_rc=$?
  sanitize
  local sanitize_rc=$?
  python_tests "$OUT"
  local python_rc=$?
  cli_train "$OUT"
  local cli_rc=$?
  echo
  printf '%-12s %s\n' check exit
  printf '%-12s %s\n' gtest "$gtest_rc" sanitizers "$sanitize_rc" python "$python_rc" cli "$cli_rc"
}

# The command-line tool trains ALS and SGD on both backends: the same epoch lines, close losses.
cli_train() {
  local out=$1 dir
  dir=$(mktemp -d)
  awk 'BEGIN { srand(7); for (u = 0; u < 2000; u++) for (i = 0; i < 300; i++)
    if (rand() < 0.1) printf "%d %d %.3f\n", u, i, 1 + 4 * rand() }' >"$dir/train.txt"
  local algo backend rc=0
  for algo in als sgd; do
    for backend in cpu cuda; do
      .carry/bin/sparsefac train "$algo" "$dir/train.txt" -o "$dir/${algo}_$backend.sfm" --rank 16 \
        --iters 4 --backend "$backend" --seed 5 >"$out/cli_${algo}_$backend.log" 2>&1 || rc=1
      echo "cli $algo $backend: $(grep -c '^epoch ' "$out/cli_${algo}_$backend.log") epoch lines;" \
        "$(grep '^epoch 4/4' "$out/cli_${algo}_$backend.log")"
    done
  done
  # The wavefront schedule, which only a CUDA context runs.
  .carry/bin/sparsefac train sgd "$dir/train.txt" -o "$dir/sgd_wavefront.sfm" --rank 16 --iters 4 \
    --backend cuda --schedule wavefront --seed 5 >"$out/cli_sgd_wavefront.log" 2>&1 || rc=1
  echo "cli sgd cuda wavefront: $(grep '^epoch 4/4' "$out/cli_sgd_wavefront.log")"
  rm -rf "$dir"
  return $rc
}

# The Python package on the CUDA library: all of its tests (its AUTO contexts are CUDA here).
python_tests() {
  local out=$1 py=.carry/py
  local ext inc
  ext=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))") || return 1
  inc=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])") || return 1
  gcc -O1 -shared -fPIC -fvisibility=hidden -I"$inc" -Iinclude "$py/sparsefac_python_wrap.c" \
    -L.carry/lib -l:libsparsefac.so.0 -o "$py/sparsefac/_core$ext" || return 1
  PYTHONPATH="$PWD/$py" PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=2 python3 -m pytest -q -rs \
    -p no:cacheprovider bindings/python/tests >"$out/python.log" 2>&1
  local rc=$?
  tail -n 2 "$out/python.log"
  return $rc
}

# The ALS table of BENCHMARKS.md: its three commands, outputs under $OUT, the rows last.
bench_als() {
  local out=${OUT:-/tmp/gpu-check}
  mkdir -p "$out"
  [[ -d .carry/lib ]] || tar -xJf .carry/bundle.tar.xz -C .carry || return 1
  export LD_LIBRARY_PATH="$PWD/.carry/lib:${LD_LIBRARY_PATH:-}"
  nvidia-smi --query-gpu=name --format=csv,noheader
  date -u
  local b=.carry/bin/bench_als
  "$b" --cases netflix,ml20m,lastfm --epochs 2 --cpu-epochs 0 --biases 1 >"$out/als_float32.txt" 2>&1
  "$b" --cases netflix,ml20m,lastfm --epochs 2 --cpu-epochs 0 --biases 1 --factor-dtype float16 \
    >"$out/als_float16.txt" 2>&1
  "$b" --cases ml20m --ranks 64,128 --epochs 2 --cpu-epochs 0 --solver cg >"$out/als_cg.txt" 2>&1
  date -u
  local f
  for f in als_float32 als_float16 als_cg; do
    echo "== $f"
    grep -E '^(case|netflix|ml20m|lastfm) ' "$out/$f.txt"
  done
}

# The top-n and fold-in tables of BENCHMARKS.md (the Netflix shape and the 1M-item catalogue).
bench_serve() {
  unpack || return 1
  nvidia-smi --query-gpu=name --format=csv,noheader
  date -u
  (cd bench && python3 bench_recommend.py --lib ../.carry/lib/libsparsefac.so.0 --backend cuda \
    --cases netflix --cpu-column) >"$OUT/recommend_netflix.txt" 2>&1
  (cd bench && python3 bench_recommend.py --lib ../.carry/lib/libsparsefac.so.0 --backend cuda \
    --cases netflix --dtype bfloat16 --reps 5) >"$OUT/recommend_netflix_bf16.txt" 2>&1
  (cd bench && python3 bench_recommend.py --lib ../.carry/lib/libsparsefac.so.0 --backend cuda \
    --cases yahoo --ranks 100 --reps 1 --cpu-column --cpu-users 1000) \
    >"$OUT/recommend_yahoo.txt" 2>&1
  (cd bench && python3 bench_fold_in.py --lib ../.carry/lib/libsparsefac.so.0) \
    >"$OUT/fold_in.txt" 2>&1
  date -u
  tail -n 6 "$OUT/recommend_netflix.txt" "$OUT/recommend_netflix_bf16.txt" \
    "$OUT/recommend_yahoo.txt" "$OUT/fold_in.txt"
}

# The compared libraries' sides: A (the carried one), then B, C, ... for .carry/libB, libC, ...
# (decompressed here); each side's LD_LIBRARY_PATH in `ab_paths`.
ab_sides() {
  ab_names=(A) ab_paths=("$PWD/.carry/lib")
  local dir
  for dir in .carry/lib[B-Z]; do
    [[ -d $dir ]] || continue
    [[ -f $dir/libsparsefac.so.0 ]] || xz -dk "$dir/libsparsefac.so.0.xz" || return 1
    ab_names+=("${dir#.carry/lib}") ab_paths+=("$PWD/$dir:$PWD/.carry/lib")
  done
  ((${#ab_names[@]} > 1)) || { echo "no .carry/libB: set SFAC_AB_BUILD_DIR at prepare" >&2; return 1; }
}

# The ALS targets' shapes (MovieLens-20M implicit k = 128, Netflix k = 100 without biases, float16
# storage, medians of 5 epochs) for each side in one call, alternating A B ... A B ... on
# MovieLens-20M, so that the libraries compare on one machine.
ab_als() {
  unpack && ab_sides || return 1
  nvidia-smi --query-gpu=name --format=csv,noheader
  date -u
  local flags=(--cpu-epochs 0 --epochs 5 --factor-dtype float16) i
  for _ in 1 2; do
    for i in "${!ab_names[@]}"; do
      echo "${ab_names[i]} $(LD_LIBRARY_PATH=${ab_paths[i]} .carry/bin/bench_als "${flags[@]}" \
        --cases ml20m --ranks 128 2>&1 | grep -E '^ml20m +[0-9]+ +cuda')"
    done
  done
  for i in "${!ab_names[@]}"; do
    echo "${ab_names[i]} $(LD_LIBRARY_PATH=${ab_paths[i]} .carry/bin/bench_als "${flags[@]}" \
      --cases netflix --ranks 100 2>&1 | grep -E '^netflix +[0-9]+ +cuda')"
  done
  date -u
}

# Top-10 for all Netflix-shape users at k = 100 with bfloat16 factors (the issue's 10 ms target;
# PyTorch left out), for each side, twice, alternating.
ab_serve() {
  unpack && ab_sides || return 1
  nvidia-smi --query-gpu=name --format=csv,noheader
  date -u
  local i
  for _ in 1 2; do
    for i in "${!ab_names[@]}"; do
      echo "${ab_names[i]} $(cd bench && python3 bench_recommend.py --lib \
        "${ab_paths[i]%%:*}/libsparsefac.so.0" --backend cuda --cases netflix --ranks 100 \
        --dtype bfloat16 --reps 5 --torch-device none 2>&1 | grep -E '^netflix ')"
    done
  done
  date -u
}

# The SDDMM table of BENCHMARKS.md: the suite, the cliff cases, cuSPARSE in the same process.
bench_sddmm() {
  unpack || return 1
  nvidia-smi --query-gpu=name --format=csv,noheader
  date -u
  .carry/bin/bench_sddmm_cuda --reps 10 >"$OUT/sddmm.txt" 2>&1
  local rc=$?
  date -u
  cut -c1-200 "$OUT/sddmm.txt"
  return $rc
}

case "${1:-run}" in
  prepare) prepare ;;
  run) run ;;
  gtest | sanitize) unpack && "$1" ;;
  python) unpack && python_tests "$OUT" ;;
  cli) unpack && cli_train "$OUT" ;;
  bench-als) bench_als ;;
  bench-serve) bench_serve ;;
  bench-sddmm) bench_sddmm ;;
  ab-als) ab_als ;;
  ab-serve) ab_serve ;;
  *) echo "usage: $0 prepare|run|gtest|sanitize|python|cli|bench-als|bench-serve|bench-sddmm|ab-als|ab-serve" >&2
    exit 2 ;;
esac
