#!/bin/sh
# Builds the source tarball of the staged package (generated SWIG files included, objects not).
# usage: tarball.sh <R> <staged package dir> <output dir>
set -e
R="$1"
stage="$2"
out="$3"
rm -rf "$out"
mkdir -p "$out"
cp -R "$stage" "$out/sparsefac"
cd "$out"
"$R" CMD build --no-build-vignettes --no-manual sparsefac
rm -rf sparsefac
ls "$out"/sparsefac_*.tar.gz
