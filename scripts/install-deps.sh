#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages that libsparsefac's build and tests need.
# Idempotent: when every package is already installed it does not touch apt at all.
#   usage: scripts/install-deps.sh
# The language bindings list their own needs: bindings/*/apt-packages.txt (Debian packages, one
# per line, '#' comments) and bindings/*/pip-requirements.txt (PyPI, installed with the python3
# on PATH). SFAC_NO_BINDINGS=1 skips both.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(
  build-essential   # gcc/g++ >= 9 (C++17), make, binutils (nm, objdump for the ABI tests)
  cmake             # >= 3.25
  ninja-build
  pkg-config        # the install test builds a consumer with pkg-config
  libopenblas-dev   # BLAS (OpenBLAS) and LAPACK
  liblapacke-dev    # LAPACKE C interface
  libfast-float-dev # float parsing in the file readers
  libcli11-dev      # command-line parser of the sparsefac tool
  libgtest-dev      # GoogleTest
  googletest
  clang             # libFuzzer targets (scripts/fuzz.sh), with the next two
  libclang-rt-14-dev # libFuzzer and Clang's sanitizer runtimes (Debian 12's Clang is 14)
  libomp-14-dev     # OpenMP for Clang
)
pip_files=()
if [[ ${SFAC_NO_BINDINGS:-0} != 1 ]]; then
  for f in bindings/*/apt-packages.txt; do
    [[ -f $f ]] || continue
    while read -r p; do
      [[ -n $p ]] && packages+=("$p")
    done < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$f")
  done
  for f in bindings/*/pip-requirements.txt; do
    [[ -f $f ]] && pip_files+=("$f")
  done
fi

# PyPI packages of the Python binding's tests; pip is quick when they are already present.
install_pip() {
  [[ ${#pip_files[@]} -eq 0 ]] && return 0
  # Debian's own python3 refuses pip (PEP 668) and gets these modules from apt
  # (bindings/python/apt-packages.txt); other interpreters (pyenv) get them from PyPI. The
  # distributions to look for are the requirement files' names, without version specifiers.
  local names=()
  mapfile -t names < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e 's/[<>=!~;[].*//' \
    "${pip_files[@]}" | grep -v '^$')
  if python3 -c 'import importlib.metadata as m, sys; [m.version(n) for n in sys.argv[1:]]' \
    "${names[@]}" 2>/dev/null; then
    echo "install-deps: python modules of ${pip_files[*]} present"
    return 0
  fi
  local args=()
  for f in "${pip_files[@]}"; do args+=(-r "$f"); done
  if python3 -m pip install --disable-pip-version-check -q "${args[@]}"; then
    echo "install-deps: pip requirements of ${pip_files[*]} present"
  else
    echo "install-deps: pip install of ${pip_files[*]} failed" >&2
    return 1
  fi
}

missing=()
for p in "${packages[@]}"; do
  if [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  install_pip
  exit 0
fi

if ! command -v apt-get >/dev/null; then
  echo "install-deps: missing ${missing[*]}, and apt-get is not available;" \
    "install them with your package manager" >&2
  exit 1
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || {
    echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  }
  sudo=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_pip
echo "install-deps: done"
