#!/usr/bin/env bash
# The benchmarks' command-line flags (bench/bench_flags.h): a bad command line must stop a
# benchmark with exit status 2 and a message naming the problem before any work starts (no GPU
# is touched, so the CUDA benchmarks run this on machines without one), and --help must print
# the usage and exit 0.
#
#   tests/bench_flags_test.sh path/to/bench_binary <a valid "--name value" pair of that binary>
set -u

if [[ $# -ne 3 || ! -x $1 ]]; then
  echo "usage: $0 path/to/bench_binary --flag value" >&2
  exit 2
fi
BIN=$1
FLAG=$2
VALUE=$3
passed=0
failed=0

# expect <rc> <regex on stderr+stdout> <args...>
expect() {
  local want_rc=$1 pattern=$2
  shift 2
  local out rc
  out=$("$BIN" "$@" 2>&1)
  rc=$?
  if [[ $rc -eq $want_rc ]] && grep -qE -- "$pattern" <<<"$out"; then
    passed=$((passed + 1))
    echo "ok:   $* -> $rc"
  else
    failed=$((failed + 1))
    echo "FAIL: $* -> rc $rc (want $want_rc), output must match '$pattern':"
    sed 's/^/      /' <<<"$out" | head -n 5
  fi
}

expect 0 '^usage: .*--' --help
expect 2 'unknown flag --bogus' --bogus 1
expect 2 'unknown flag --bogus' "$FLAG" "$VALUE" --bogus 1
expect 2 "flag $FLAG needs a value" "$FLAG"
expect 2 "flag $FLAG given twice" "$FLAG" "$VALUE" "$FLAG" "$VALUE"
expect 2 "expected a flag, got 'stray'" stray
expect 2 "flag $FLAG: 'x' is not" "$FLAG" x
expect 2 "flag $FLAG: '' is not" "$FLAG" ''
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
