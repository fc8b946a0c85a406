#!/usr/bin/env bash
# Installs a build tree into a temporary prefix and builds examples/c/quickstart.c against the
# installed library twice: with pkg-config and with CMake's find_package(sparsefac).
#   usage: install_consumer_test.sh <build dir> <source dir> [extra C flags]
# The extra C flags (e.g. -fsanitize=address,undefined for a sanitizer build of the library)
# are passed to both consumer builds. Set SFAC_KEEP_INSTALL=1 to keep the prefix.
set -euo pipefail

build=$(cd "${1:?usage: install_consumer_test.sh <build dir> <source dir> [cflags]}" && pwd)
source=$(cd "${2:?missing source dir}" && pwd)
extra_cflags=${3:-}
cc=${CC:-cc}

work=$(mktemp -d "${TMPDIR:-/tmp}/sfac-install-XXXXXX")
if [[ ${SFAC_KEEP_INSTALL:-0} != 1 ]]; then
  trap 'rm -rf "$work"' EXIT
fi
prefix=$work/prefix
echo "== install $build -> $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || {
  cat "$work/install.log"
  exit 1
}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Layout: header, library with its soname chain, pkg-config file, CMake package.
[[ -f $prefix/include/sparsefac/sparsefac.h ]] || fail "header not installed"
libdir=$(dirname "$(find "$prefix" -name 'libsparsefac.so.0' -print -quit)")
[[ -d $libdir && $libdir != . ]] || fail "libsparsefac.so.0 not installed"
[[ -L $libdir/libsparsefac.so && -L $libdir/libsparsefac.so.0 ]] ||
  fail "libsparsefac.so -> libsparsefac.so.0 -> libsparsefac.so.X.Y.Z symlinks missing"
[[ $(readlink "$libdir/libsparsefac.so") == libsparsefac.so.0 ]] ||
  fail "libsparsefac.so does not point at libsparsefac.so.0"
objdump -p "$libdir/libsparsefac.so.0" | grep -E 'SONAME +libsparsefac\.so\.0$' >/dev/null ||
  fail "installed library's SONAME is not libsparsefac.so.0"
[[ -f $libdir/pkgconfig/sparsefac.pc ]] || fail "sparsefac.pc not installed in $libdir/pkgconfig"
[[ -f $libdir/cmake/sparsefac/sparsefacConfig.cmake ]] || fail "sparsefacConfig.cmake missing"
[[ -f $libdir/cmake/sparsefac/sparsefacConfigVersion.cmake ]] || fail "ConfigVersion missing"

check_output() {  # <log> <what>
  grep -q '^quickstart: OK$' "$1" || fail "$2: no 'quickstart: OK' in its output"
  echo "$2: OK"
}

# (a) pkg-config; the program finds the library through LD_LIBRARY_PATH.
echo "== pkg-config consumer"
export PKG_CONFIG_PATH=$libdir/pkgconfig
pkg-config --exists --print-errors 'sparsefac >= 0.1'
flags=$(pkg-config --cflags --libs sparsefac)
echo "pkg-config --cflags --libs sparsefac: $flags"
# shellcheck disable=SC2086  # word splitting of the flags is intended
"$cc" -std=c99 -Wall -Wextra -pedantic -Werror $extra_cflags -o "$work/quickstart_pc" \
  "$source/examples/c/quickstart.c" $flags -lm
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$work/quickstart_pc" |
  tee "$work/pc.log"
LD_LIBRARY_PATH=$libdir ldd "$work/quickstart_pc" | grep -F "$libdir/libsparsefac.so.0" >/dev/null ||
  fail "pkg-config consumer does not load the installed library"
check_output "$work/pc.log" "pkg-config consumer"

# (b) find_package; CMake's build-tree RPATH points at the installed library, so no
# LD_LIBRARY_PATH is needed.
echo "== CMake consumer"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$source/examples/c" -B "$work/cmake-consumer" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_FLAGS="-Wall -Wextra -pedantic -Werror $extra_cflags" >"$work/configure.log" || {
  cat "$work/configure.log"
  exit 1
}
cmake --build "$work/cmake-consumer" >"$work/build.log" || {
  cat "$work/build.log"
  exit 1
}
env -u LD_LIBRARY_PATH "$work/cmake-consumer/quickstart" | tee "$work/cmake.log"
check_output "$work/cmake.log" "CMake consumer"

echo "install_consumer: OK"
