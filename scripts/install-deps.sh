#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages that libsparsefac's build and tests need.
# Idempotent: when every package is already installed it does not touch apt at all.
#   usage: scripts/install-deps.sh
set -euo pipefail

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
)

missing=()
for p in "${packages[@]}"; do
  if [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
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
echo "install-deps: done"
