#!/usr/bin/env bash
# The main job on a fresh machine: installs the dependencies, builds libsparsefac and its
# command-line tool (Release, in build/; CUDA files compiled when nvcc is found) and runs
# `sparsefac demo`. Extra arguments go to the demo: scripts/demo.sh --help
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs=${SFAC_JOBS:-2}

bash scripts/install-deps.sh

# Same configuration as scripts/test.sh, so both scripts share build/.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARSEFAC_CUDA=AUTO
cmake --build build --parallel "$jobs" --target sparsefac_cli

exec ./build/tools/sparsefac demo "$@"
