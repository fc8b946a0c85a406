#!/usr/bin/env bash
# Checks the dynamic symbol table of libsparsefac: every defined symbol is sfac_*, there is at
# least one, and no exported function carries C++ mangling.
#   usage: check_exported_symbols.sh <libsparsefac.so> [nm]
set -euo pipefail

lib=${1:?usage: check_exported_symbols.sh <library> [nm]}
nm_tool=${2:-nm}

symbols=$("$nm_tool" -D --defined-only "$lib")
count=$(grep -c ' sfac_' <<<"$symbols" || true)
echo "$lib: $count sfac_ symbols"

status=0
if [[ $count -eq 0 ]]; then
  echo "FAIL: no sfac_ symbols exported" >&2
  status=1
fi
others=$(grep -v ' sfac_' <<<"$symbols" || true)
if [[ -n $others ]]; then
  echo "FAIL: symbols outside the sfac_ namespace are exported:" >&2
  echo "$others" >&2
  status=1
fi
mangled=$(awk '$2 ~ /^[TtWw]$/ && $3 ~ /^_Z/' <<<"$symbols")
if [[ -n $mangled ]]; then
  echo "FAIL: C++-mangled functions are exported:" >&2
  echo "$mangled" >&2
  status=1
fi
[[ $status -eq 0 ]] && echo "exported_symbols: OK"
exit "$status"
