#!/usr/bin/env bash
# The whole test suite of libsparsefac, as CI runs it (.ci/run):
#   1. installs the build dependencies (scripts/install-deps.sh; skipped when present),
#   2. Release build in build/ (CUDA files compiled when nvcc is found; CUDA tests skip without
#      a device) and its ctest,
#   3. ASan + UBSan Debug build in build-asan/ (CPU only) and its ctest,
#   4. the libFuzzer targets (scripts/fuzz.sh), SFAC_FUZZ_SECONDS (default 30) each, counted
#      as one test per target,
#   5. one summary line: "N passed, N failed, N skipped" over all runs (a build that fails
#      counts as one failure; its tests are then not run).
# Exits non-zero when a build or a test failed.
#
# Environment: SFAC_JOBS (parallel build/test jobs, default 2), SFAC_SKIP_ASAN=1 (no sanitizer
# build), SFAC_SKIP_FUZZ=1 (no fuzzing), SFAC_FUZZ_SECONDS,
# SFAC_CMAKE_ARGS (extra arguments for both configure steps), SFAC_BINDINGS (AUTO|ON|OFF for the
# Release build; default ON: every language binding must build and pass).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
jobs=${SFAC_JOBS:-2}
read -r -a extra_args <<<"${SFAC_CMAKE_ARGS:-}"

bash scripts/install-deps.sh

total_passed=0
total_failed=0
total_skipped=0
problems=()

# Configures and builds one tree. usage: build <dir> <cmake args...>
build() {
  local dir=$1
  shift
  echo "== configure $dir: $*"
  cmake -S "$root" -B "$dir" -G Ninja "$@" "${extra_args[@]}" || return 1
  echo "== build $dir"
  cmake --build "$dir" --parallel "$jobs" || return 1
}

# Runs ctest in one tree and adds its counts to the totals. usage: run_tests <dir> <ctest args..>
run_tests() {
  local dir=$1
  shift
  local log="$dir/ctest.log" rc=0
  echo "== test $dir"
  # --timeout: default for tests without their own TIMEOUT, so that a hang cannot eat CI.
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 900 "$@" 2>&1 |
    tee "$log" || rc=$?

  # ctest's summary: "97% tests passed, 3 tests failed out of 100". "out of" counts skipped
  # tests (as passed) but not disabled ones; those are listed under "did not run" as
  # "(Skipped)" / "(Disabled)". Executables that cannot be found are "Not Run" failures.
  local summary total=0 failed=0 skipped disabled
  summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" || true)
  if [[ -n $summary ]]; then
    failed=$(sed -E 's/^[0-9]+% tests passed, ([0-9]+) tests? failed.*/\1/' <<<"$summary")
    total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$summary")
  fi
  skipped=$(grep -cE '^[[:space:]]+[0-9]+ - .* \(Skipped\)$' "$log" || true)
  disabled=$(grep -cE '^[[:space:]]+[0-9]+ - .* \(Disabled\)$' "$log" || true)
  if [[ -z $summary || $total -eq 0 ]]; then
    echo "test.sh: no tests ran in $dir" >&2
    problems+=("no tests ran in $dir")
    failed=$((failed + 1))
  elif [[ $rc -ne 0 && $failed -eq 0 ]]; then
    problems+=("ctest in $dir exited with $rc")
    failed=1
  fi
  total_passed=$((total_passed + total - failed - skipped))
  total_failed=$((total_failed + failed))
  total_skipped=$((total_skipped + skipped + disabled))
  echo "== $dir: $((total - failed - skipped)) passed, $failed failed, $((skipped + disabled)) skipped"
}

start=$SECONDS

# ---- 1. Release build, CUDA AUTO -------------------------------------------------------------
if build build -DCMAKE_BUILD_TYPE=Release -DSPARSEFAC_CUDA=AUTO -DSPARSEFAC_BINDINGS="${SFAC_BINDINGS:-ON}"; then
  run_tests build
else
  problems+=("Release build failed")
  total_failed=$((total_failed + 1))
fi

# ---- 2. Sanitizer build: ASan + UBSan, Debug, CPU only ---------------------------------------
if [[ ${SFAC_SKIP_ASAN:-0} != 1 ]]; then
  if build build-asan -DCMAKE_BUILD_TYPE=Debug -DSPARSEFAC_CUDA=OFF -DSPARSEFAC_SANITIZE=ON \
    -DSPARSEFAC_BUILD_BENCH=OFF -DSPARSEFAC_BINDINGS=OFF; then
    # Guard against a silently unsanitized build.
    if ! ldd build-asan/libsparsefac.so | grep -E 'libasan|libubsan' >/dev/null; then
      problems+=("build-asan/libsparsefac.so is not linked against the sanitizer runtimes")
      total_failed=$((total_failed + 1))
    fi
    # Per-flag overrides of the defaults compiled into the test binary
    # (tests/sanitizer_options.cpp keeps allocator_may_return_null=1). Known false positives
    # of uninstrumented dependencies go to tests/sanitizers/*.supp (none needed so far).
    ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:strict_init_order=1"
    export ASAN_OPTIONS="$ASAN_OPTIONS:detect_stack_use_after_return=1"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    if [[ -f tests/sanitizers/lsan.supp ]]; then
      export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp"
    fi
    run_tests build-asan
  else
    problems+=("sanitizer build failed")
    total_failed=$((total_failed + 1))
  fi
fi

# ---- 3. Fuzzing: the libFuzzer targets (Clang, ASan + UBSan), a short fixed time each ----------
if [[ ${SFAC_SKIP_FUZZ:-0} != 1 ]]; then
  if bash scripts/fuzz.sh "${SFAC_FUZZ_SECONDS:-30}"; then
    total_passed=$((total_passed + 3))
  else
    problems+=("fuzzing failed: build-fuzz/findings, build-fuzz/fuzz_*.log")
    total_failed=$((total_failed + 1))
  fi
fi

elapsed=$((SECONDS - start))
echo
for p in "${problems[@]}"; do
  echo "test.sh: $p" >&2
done
echo "test.sh: finished in $((elapsed / 60))m$((elapsed % 60))s"
echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
if [[ $total_failed -ne 0 || ${#problems[@]} -ne 0 ]]; then
  exit 1
fi
