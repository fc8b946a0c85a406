#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with Clang, ASan and UBSan in build-fuzz/ and runs each
# for a fixed time from its seed corpus (fuzz/corpus/<name>; new inputs go to a scratch copy, so
# the repository's corpus only changes by hand). A crash, leak, sanitizer report or timeout
# leaves the input in build-fuzz/findings/ and fails the run.
#   usage: scripts/fuzz.sh [seconds per target, default 60]
# CI runs it for a short time (scripts/test.sh); run it for longer by hand.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-60}
jobs=${SFAC_JOBS:-2}
dir=build-fuzz

mkdir -p "$dir"
CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSPARSEFAC_FUZZ=ON \
  -DSPARSEFAC_SANITIZE=ON -DSPARSEFAC_CUDA=OFF -DSPARSEFAC_BINDINGS=OFF \
  -DSPARSEFAC_BUILD_TESTS=OFF -DSPARSEFAC_BUILD_BENCH=OFF -DSPARSEFAC_BUILD_TOOLS=OFF \
  -DSPARSEFAC_WERROR=OFF >"$dir/configure.log" 2>&1 || {
  cat "$dir/configure.log"
  exit 1
}
cmake --build "$dir" --parallel "$jobs" >"$dir/build.log" 2>&1 || {
  tail -n 40 "$dir/build.log"
  exit 1
}

mkdir -p "$dir/findings"
failed=0
printf '%-20s %8s %12s %8s %s\n' target seconds executions corpus result
for name in read_sparse model_load create_arrays; do
  work=$(mktemp -d "${TMPDIR:-/tmp}/sfac-fuzz-$name-XXXXXX")
  cp fuzz/corpus/$name/* "$work"/
  log="$dir/fuzz_$name.log"
  rc=0
  # detect_leaks stays on: a leak is a finding. The scratch file of each process is removed
  # after the run.
  "$dir/fuzz/fuzz_$name" "$work" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/findings/$name-" \
    >"$log" 2>&1 || rc=$?
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')
  size=$(find "$work" -type f | wc -l)
  result=ok
  if [[ $rc -ne 0 ]]; then
    result="FAILED (exit $rc, see $log)"
    failed=1
  fi
  printf '%-20s %8s %12s %8s %s\n' "$name" "$seconds" "$runs" "$size" "$result"
  rm -rf "$work"
done
rm -f /tmp/sfac-fuzz-[0-9]*
exit $failed
