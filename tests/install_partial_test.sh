#!/usr/bin/env bash
# `cmake --install` on a tree where only some targets were built installs what was built: the
# main command of the README (scripts/demo.sh) builds the library and the command-line tool
# only, and the install rules of the bindings (the Java JNI library and jar) must not fail it.
#   usage: install_partial_test.sh <source dir> [c compiler]
set -euo pipefail

source=$(cd "${1:?usage: install_partial_test.sh <source dir>}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/sfac-partial-XXXXXX")
[[ ${SFAC_KEEP_INSTALL:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

cmake -S "$source" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARSEFAC_CUDA=OFF \
  -DSPARSEFAC_BUILD_TESTS=OFF >"$work/configure.log" || {
  cat "$work/configure.log"
  exit 1
}
cmake --build "$work/build" --parallel "${SFAC_JOBS:-2}" --target sparsefac_cli >"$work/build.log" || {
  tail -n 30 "$work/build.log"
  exit 1
}
cmake --install "$work/build" --prefix "$work/prefix" >"$work/install.log" 2>&1 || {
  cat "$work/install.log"
  fail "cmake --install failed on a build of the library and the tool only"
}
[[ -f $work/prefix/include/sparsefac/sparsefac.h ]] || fail "header not installed"
[[ -n $(find "$work/prefix" -name 'libsparsefac.so.0' -print -quit) ]] || fail "library not installed"
[[ -n $(find "$work/prefix" -name 'sparsefac.pc' -print -quit) ]] || fail "sparsefac.pc not installed"
[[ -x $work/prefix/bin/sparsefac ]] || fail "the command-line tool was built but not installed"
[[ -z $(find "$work/prefix" -type f -name '*jni*' -print -quit) ]] || fail "an unbuilt JNI library installed"
echo "install of a partial build: ok"
