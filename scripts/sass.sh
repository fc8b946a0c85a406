#!/usr/bin/env bash
# The SASS of a CUDA source's kernels in a build, to read what the compiler made of them
# (dependency chains, spills, how many instructions of each kind) on a machine without a GPU.
# The toolkit here has no binary utilities; cuobjdump and the nvdisasm it runs come from PyPI's
# nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm wheels, unpacked once under .cache/cuda-tools
# (git-ignored).
#   scripts/sass.sh BUILD_DIR SOURCE_NAME [KERNEL_NAME_PART]
#   e.g. scripts/sass.sh build-cuda top_n_scan.cu 'top_n_scan_kernel<true, false>'
# Prints, for each kernel whose demangled name contains KERNEL_NAME_PART (all without one), its
# name, its instruction count and its ten most frequent opcodes (without modifiers), then writes
# the whole listing to .cache/sass/SOURCE_NAME.sass.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ $# -lt 2 ]]; then
  sed -n '2,11p' "$0" >&2
  exit 2
fi
build=$1 source=$2 pattern=${3:-}

tools=.cache/cuda-tools
for tool in cuobjdump nvdisasm; do
  if [[ -z "$(find "$tools" -name "$tool" -type f 2>/dev/null | head -1)" ]]; then
    mkdir -p "$tools"
    pip download --no-deps -q -d "$tools" "nvidia-cuda-$tool"
    python3 -m zipfile -e "$tools"/nvidia_cuda_"$tool"-*.whl "$tools"
    chmod +x "$(find "$tools" -name "$tool" -type f | head -1)"
  fi
done
cuobjdump=$(find "$tools" -name cuobjdump -type f | head -1)
export NVDISASM_PATH
NVDISASM_PATH=$(dirname "$(find "$tools" -name nvdisasm -type f | head -1)")

object=$(find "$build" -name "$source.o" | head -1)
if [[ -z "$object" ]]; then
  echo "sass.sh: no $source.o under $build (build it first)" >&2
  exit 1
fi
mkdir -p .cache/sass
listing=.cache/sass/$source.sass
"$cuobjdump" -sass "$object" >"$listing"

# One section per kernel: "Function : <mangled>" then its instructions ("/*addr*/ OPCODE ...").
awk '/Function :/ { name = $3; next }
     name != "" && /^ +\/\*[0-9a-f]+\*\// {
       op = $2; if (op ~ /^@/) op = $3; sub(/[.;].*$/, "", op); print name, op
     }' "$listing" |
  while read -r mangled op; do
    echo "$(c++filt "$mangled")	$op"
  done |
  awk -F'\t' -v pattern="$pattern" '
    pattern == "" || index($1, pattern) {
      if (!($1 in total)) order[++kernels] = $1
      total[$1]++; count[$1 SUBSEP $2]++
    }
    END {
      for (k = 1; k <= kernels; ++k) {
        name = order[k]
        printf "%s\n  %d instructions:", name, total[name]
        n = 0
        for (key in count) {
          split(key, part, SUBSEP)
          if (part[1] == name) { ops[++n] = part[2]; num[n] = count[key] }
        }
        for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (num[j] > num[i]) {
          t = num[i]; num[i] = num[j]; num[j] = t; t = ops[i]; ops[i] = ops[j]; ops[j] = t
        }
        for (i = 1; i <= n && i <= 10; ++i) printf " %s %d", ops[i], num[i]
        printf "\n"
        delete ops; delete num
      }
    }'
echo "listing: $listing"
