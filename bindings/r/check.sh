#!/bin/sh
# R CMD check of the staged package, from a tarball as CRAN would. Fails on any ERROR or
# WARNING (R CMD check itself only fails on ERRORs).
# usage: check.sh <R> <staged package dir> <work dir>
set -e
R="$1"
stage="$2"
work="$3"
sh "$(dirname "$0")/tarball.sh" "$R" "$stage" "$work"
cd "$work"
# An empty local repository: CI has no CRAN, and looking it up only slows the check.
mkdir -p repo/src/contrib
: > repo/src/contrib/PACKAGES
echo "options(repos = c(CRAN = 'file://$work/repo'))" > Rprofile
export R_PROFILE_USER="$work/Rprofile"
"$R" CMD check --no-manual --no-build-vignettes sparsefac_*.tar.gz || status=$?
cat sparsefac.Rcheck/00check.log
if [ -n "$status" ]; then exit "$status"; fi
if grep -Eq "^Status: .*(WARNING|ERROR)" sparsefac.Rcheck/00check.log; then
  echo "check.sh: R CMD check reported a WARNING or ERROR" >&2
  exit 1
fi
