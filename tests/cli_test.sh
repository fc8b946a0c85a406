#!/usr/bin/env bash
# End-to-end tests of the `sparsefac` command-line tool: train (als, ials, sgd), eval, predict,
# recommend, similar, convert, info; --help of every command; exit codes (0 success, 1 usage
# error, 2 library error); the error message format; the per-epoch line format when piped and
# the progress bar.
#
#   tests/cli_test.sh path/to/sparsefac
#
# Runs in a temporary directory on a small synthetic rating file; takes a few seconds.
set -u

if [[ $# -ne 1 || ! -x $1 ]]; then
  echo "usage: $0 path/to/sparsefac" >&2
  exit 2
fi
SFAC=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sparsefac-cli-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 2

passed=0
failed=0
ok() {
  passed=$((passed + 1))
  echo "ok:   $1"
}
not_ok() {
  failed=$((failed + 1))
  echo "FAIL: $1"
  if [[ -s out ]]; then sed 's/^/      stdout: /' out | tail -n 20; fi
  if [[ -s err ]]; then sed 's/^/      stderr: /' err | tail -n 20; fi
}
check() {  # check DESCRIPTION CONDITION...: passes when the command CONDITION... succeeds
  local what=$1
  shift
  if "$@"; then ok "$what"; else not_ok "$what"; fi
}
# run EXPECTED_RC DESCRIPTION ARGS...: runs sparsefac ARGS with stdout in ./out, stderr in ./err.
run() {
  local expected=$1 what=$2
  shift 2
  "$SFAC" "$@" >out 2>err </dev/null
  local rc=$?
  if [[ $rc -eq $expected ]]; then
    ok "$what (exit $rc)"
  else
    not_ok "$what: exit $rc, expected $expected: sparsefac $*"
  fi
}
lines() { wc -l <"$1" | tr -d ' '; }
has() { grep -q -- "$1" "$2"; }
below() { awk -v x="$1" -v bound="$2" 'BEGIN { exit !(x != "" && x + 0 < bound + 0) }'; }

# ---- Data: 300 users x 120 items, ~30% observed, rank-2 ratings plus noise in [-0.1, 0.1] -----
# User u has id 1000 + 7u, item i has id 50 + 3i (exercises --remap); about 10% of the ratings go
# to test.txt. Park-Miller's generator is exact in awk's doubles: the same data in every awk.
awk 'function uniform() { seed = (seed * 16807) % 2147483647; return seed / 2147483647 }
BEGIN {
  seed = 12345
  for (u = 0; u < 300; u++) { a[u] = 2 * uniform() - 1; c[u] = 2 * uniform() - 1 }
  for (i = 0; i < 120; i++) { b[i] = 2 * uniform() - 1; d[i] = 2 * uniform() - 1 }
  for (u = 0; u < 300; u++) for (i = 0; i < 120; i++) {
    if (uniform() >= 0.3) continue
    r = 3 + 1.5 * a[u] * b[i] + 1.5 * c[u] * d[i] + 0.2 * (uniform() - 0.5)
    line = sprintf("%d %d %.3f", 1000 + 7 * u, 50 + 3 * i, r)
    if (uniform() < 0.1) print line > "test.txt"; else print line > "train.txt"
  }
}'
check "synthetic data written" test "$(lines train.txt)" -gt 9000 -a "$(lines test.txt)" -gt 900

# ---- --help of every command, --version ----------------------------------------------------
for cmd in info demo convert train eval predict recommend similar; do
  run 0 "$cmd --help" "$cmd" --help
  check "$cmd --help prints a usage line" has "Usage:" out
done
run 0 "train --help" train --help
check "train --help lists --schedule and its values" \
  grep -qE -- '--schedule.*hogwild.*wavefront' out
run 0 "--help" --help
check "--help lists the train command" has "train" out
run 0 "--version" --version

# ---- train: the three algorithms, piped (one plain line per epoch) --------------------------
EPOCH_VAL='^epoch [0-9]+/[0-9]+ loss -?[0-9]+\.[0-9]{4} val_rmse [0-9]+\.[0-9]{4} [0-9]+\.[0-9]{2}s$'
EPOCH_PLAIN='^epoch [0-9]+/[0-9]+ loss -?[0-9]+\.[0-9]{4} [0-9]+\.[0-9]{2}s$'

run 0 "train als --remap --validation" train als train.txt -o als.sfm --remap --validation test.txt \
  --rank 4 --iters 6 --lambda 0.05
check "als: model file written" test -s als.sfm
check "als: id maps written" test -s als.sfm.users.ids -a -s als.sfm.items.ids
check "als: one user id per line" test "$(lines als.sfm.users.ids)" -eq 300
check "als: id maps hold the original ids" test "$(head -n 1 als.sfm.users.ids)" = 1000
check "als: 6 plain epoch lines with val_rmse" test "$(grep -cE "$EPOCH_VAL" out)" -eq 6
check "als: epoch lines count to 6/6" has "^epoch 6/6 " out
check "als: no progress bar when piped" test "$(tr -cd '\r' <out | wc -c)" -eq 0
check "als: summary line" has "^trained 6 epochs" out
check "als: names the backend it ran on" grep -qE "^als, rank 4, 6 epochs, (cpu|cuda) backend: " out

run 0 "train ials --remap" train ials train.txt -o ials.sfm --remap --rank 4 --iters 3 --alpha 5
check "ials: model file written" test -s ials.sfm
check "ials: 3 epoch lines without val_rmse" test "$(grep -cE "$EPOCH_PLAIN" out)" -eq 3
run 0 "eval an implicit model" eval ials.sfm test.txt --exclude train.txt
check "eval ials: ranking metrics at 10 by default" has "^ndcg@10 " out
check "eval ials: no RMSE for preference scores" test "$(grep -c '^rmse' out)" -eq 0
run 0 "eval an implicit model --ranking 5" eval ials.sfm test.txt --ranking 5
check "eval ials --ranking 5: at 5" has "^precision@5 " out

run 0 "train sgd --remap --holdout" train sgd train.txt -o sgd.sfm --remap --holdout 0.1 \
  --rank 4 --iters 12 --lr 0.05 --deterministic --threads 1
check "sgd: model file written" test -s sgd.sfm
check "sgd: 12 epoch lines with val_rmse" test "$(grep -cE "$EPOCH_VAL" out)" -eq 12
check "sgd: header names the holdout" has "validation ratings (--holdout 0.1)" out

run 0 "train als --solver cg --biases" train als train.txt -o cg.sfm --remap --rank 4 --iters 3 \
  --solver cg --cg-steps 2 --biases --regularization plain
check "als cg: model file written" test -s cg.sfm

run 0 "train als --factor-dtype float16" train als train.txt -o half.sfm --remap --rank 4 \
  --iters 3 --factor-dtype float16 --biases
check "als float16: model file written" test -s half.sfm

# ---- eval ----------------------------------------------------------------------------------
run 0 "eval als" eval als.sfm test.txt
rmse=$(awk '$1 == "rmse" { print $2 }' out)
check "eval als: rmse $rmse < 0.4" below "$rmse" 0.4
check "eval als: mae line" has "^mae [0-9]" out
check "eval als: counts every test rating" has "^ratings $(lines test.txt)$" out

run 0 "eval sgd" eval sgd.sfm test.txt
rmse=$(awk '$1 == "rmse" { print $2 }' out)
check "eval sgd: rmse $rmse < 0.8" below "$rmse" 0.8

run 0 "eval --ranking 5 --exclude" eval als.sfm test.txt --ranking 5 --exclude train.txt
for metric in precision recall ndcg map; do
  check "eval: $metric@5 line" grep -qE "^$metric@5 [0-9]+\.[0-9]+$" out
done
run 1 "eval --exclude without --ranking" eval als.sfm test.txt --exclude train.txt

# ---- predict, recommend, similar (original ids through the saved maps) ----------------------
printf '1000 50\n# a comment\n\n1007,53\n3093 407 4.5\n' >pairs.txt
run 0 "predict" predict als.sfm pairs.txt
check "predict: one line per pair" test "$(lines out)" -eq 3
check "predict: 'user item score' lines" test "$(awk 'NF == 3 && $3 ~ /^-?[0-9.]+(e[-+][0-9]+)?$/' out | wc -l)" -eq 3
check "predict: echoes the original ids" test "$(awk '{ print $1 "," $2 }' out | paste -sd ' ')" = "1000,50 1007,53 3093,407"
printf '1000 50\n' | "$SFAC" predict als.sfm - >out 2>err
check "predict: reads pairs from stdin" test "$(lines out)" -eq 1

run 0 "recommend two users" recommend als.sfm --user 1000 --user 1007 -n 4 --exclude train.txt
check "recommend: n lines per user" test "$(lines out)" -eq 8
check "recommend: names the backend on stderr" grep -qE "^sparsefac: (cpu|cuda) backend: " err
check "recommend: lines name the users" test "$(awk '{ print $1 }' out | sort -u | paste -sd ' ')" = "1000 1007"
check "recommend: items are original ids" test "$(awk '($2 - 50) % 3 != 0' out | wc -l)" -eq 0
check "recommend: best first" test "$(awk '$1 == 1000 { print $3 }' out | sort -g -r -c && echo sorted)" = sorted
if awk '{ print $1, $2 }' out >recommended && ! grep -qxFf recommended <(awk '{ print $1, $2 }' train.txt); then
  ok "recommend: --exclude leaves out training pairs"
else
  not_ok "recommend: --exclude leaves out training pairs"
fi

run 0 "similar" similar als.sfm --item 53 -n 3
check "similar: n lines" test "$(lines out)" -eq 3
run 0 "similar --backend cpu" similar als.sfm --item 53 -n 3 --backend cpu
check "similar --backend cpu: the cpu backend ran" has "^sparsefac: cpu backend: CPU" err
check "similar: not the item itself" test "$(awk '$2 == 53' out | wc -l)" -eq 0
run 0 "similar two items" similar als.sfm -i 53 -i 56 -n 2
check "similar: n lines per item" test "$(lines out)" -eq 4

# ---- Without --remap: ids are indices (--one-based shifts them by one) ---------------------
awk '{ print int(($1 - 1000) / 7) + 1, int(($2 - 50) / 3) + 1, $3 }' train.txt >train1.txt
run 0 "train als --one-based" train als train1.txt -o plain.sfm --one-based --rank 4 --iters 3
run 0 "recommend --one-based" recommend plain.sfm --user 1 --one-based -n 5
check "recommend --one-based: 5 lines" test "$(lines out)" -eq 5
check "recommend --one-based: 1-based item ids" test "$(awk '$2 < 1 || $2 > 120' out | wc -l)" -eq 0
# A model trained again without --remap must not keep the id maps of an earlier one.
run 0 "retrain without --remap over a remapped model" train als train1.txt -o als.sfm --one-based \
  --rank 4 --iters 1 --force
check "stale id maps removed" test ! -e als.sfm.users.ids -a ! -e als.sfm.items.ids

# ---- Progress bar: forced when piped, and automatic on a terminal --------------------------
run 0 "train --progress bar" train als train.txt -o bar.sfm --remap --holdout 0.1 --rank 4 \
  --iters 3 --progress bar
check "bar: redrawn in place with \\r" test "$(tr -cd '\r' <out | wc -c)" -ge 3
check "bar: shows the ETA" has "ETA" out
check "bar: erases to the end of the line" grep -q $'\x1b\\[K' out
check "bar: shows the last epoch" grep -q "epoch 3/3 \[=*\] 100%" out
check "bar: no plain epoch lines" test "$(grep -cE "$EPOCH_VAL" out)" -eq 0
check "bar: summary after the bar" has "^trained 3 epochs" out
if command -v script >/dev/null 2>&1; then
  script -qc "'$SFAC' train sgd train.txt -o tty.sfm --remap --rank 4 --iters 3" /dev/null \
    >out 2>err </dev/null
  check "terminal: progress bar by default" grep -q $'\x1b\\[K' out
  check "terminal: bar reaches the last epoch" has "epoch 3/3 \[" out
fi

# ---- convert and info still work -----------------------------------------------------------
run 0 "convert" convert train.txt out.mtx --remap
check "convert: Matrix Market banner" has "^%%MatrixMarket matrix coordinate real general" out.mtx
run 0 "info" info --backend cpu
check "info: prints the version" has "^libsparsefac " out

# ---- Errors: usage errors exit 1, library errors exit 2 with its message --------------------
run 2 "missing input file" train als no-such-file.txt -o x.sfm
check "missing input: 'cannot open' message" has "cannot open no-such-file.txt" err
check "missing input: 'sparsefac: call: status: message'" \
  grep -qE '^sparsefac: [a-z_]+: [A-Za-z /]+: .+' err
run 1 "--rank 0" train als train.txt -o x.sfm --rank 0
check "--rank 0: names the option" has "rank" err
check "--rank 0: no model written" test ! -e x.sfm
run 1 "unknown command" frobnicate
check "unknown command: says so" has "unknown command 'frobnicate'" err
run 1 "no command" 
run 1 "unknown algorithm" train xyz train.txt -o x.sfm
run 1 "missing -o" train als train.txt
run 1 "--alpha with als" train als train.txt -o x.sfm --alpha 3
run 1 "--lr with als" train als train.txt -o x.sfm --lr 0.1
run 0 "--factor-dtype with sgd" train sgd train.txt -o sgd16.sfm --factor-dtype float16 --no-scale --iters 2
run 1 "--workers with als" train als train.txt -o x.sfm --workers 4
run 1 "--workers -1" train sgd train.txt -o x.sfm --workers -1
check "--workers -1: names the option" has "workers" err
run 0 "--workers 64 (a CUDA setting; the CPU trains)" train sgd train.txt -o sgd64.sfm --workers 64 --iters 2
run 1 "--schedule with als" train als train.txt -o x.sfm --schedule wavefront
run 1 "--schedule lockfree" train sgd train.txt -o x.sfm --schedule lockfree
check "--schedule lockfree: names the option" has "schedule" err
check "--schedule lockfree: no model written" test ! -e x.sfm
for schedule in hogwild wavefront; do
  run 0 "--schedule $schedule (a CUDA setting; the CPU trains)" \
    train sgd train.txt -o "sgd-$schedule.sfm" --schedule "$schedule" --iters 2
done
run 1 "--reorder with sgd" train sgd train.txt -o x.sfm --reorder degree
run 1 "--reorder rcm" train als train.txt -o x.sfm --reorder rcm
check "--reorder rcm: names the option" has "reorder" err
for reorder in none degree auto; do
  run 0 "--reorder $reorder" train ials train.txt -o "ials-$reorder.sfm" --iters 2 --backend cpu \
    --reorder "$reorder"
done
check "--reorder auto on the CPU: the model of --reorder none" cmp -s ials-none.sfm ials-auto.sfm
run 1 "--factor-dtype float64" train als train.txt -o x.sfm --factor-dtype float64
run 1 "--holdout 1.5" train sgd train.txt -o x.sfm --holdout 1.5
run 1 "--holdout with --validation" train sgd train.txt -o x.sfm --holdout 0.1 --validation test.txt
run 1 "unknown option" train als train.txt -o x.sfm --no-such-option
run 1 "bad --format" train als train.txt -o x.sfm --format xml
run 1 "recommend -n 0" recommend als.sfm --user 1 -n 0
run 1 "recommend without --user" recommend sgd.sfm
run 2 "missing model" eval no-such-model.sfm test.txt
check "missing model: 'cannot open' message" has "cannot open no-such-model.sfm" err
run 2 "not a model file" recommend train.txt --user 1
run 2 "unknown user" recommend sgd.sfm --user 4
check "unknown user: names the id" has "user 4 is not in sgd.sfm" err
run 2 "unknown item" similar sgd.sfm --item 51
printf '1000 50\n1000 51\n' >bad_pairs.txt
run 2 "predict --unknown error: unknown item" predict sgd.sfm bad_pairs.txt --unknown error
check "predict --unknown error: names the line" has "bad_pairs.txt:2: item 51" err
run 0 "predict: unknown item skipped by default" predict sgd.sfm bad_pairs.txt
check "predict skip: the known pair scored" test "$(lines out)" -eq 1 -a "$(cut -d' ' -f1-2 out)" = "1000 50"
check "predict skip: noted on stderr" has "1 of 2 pairs of bad_pairs.txt have users or items" err
cp out known_pair.txt
run 0 "predict --unknown fallback" predict sgd.sfm bad_pairs.txt --unknown fallback
check "predict fallback: both pairs, the known one unchanged" \
  test "$(lines out)" -eq 2 -a "$(head -n 1 out)" = "$(cat known_pair.txt)"
check "predict fallback: the unknown pair has a finite score" \
  awk 'NR == 2 && $1 == 1000 && $2 == 51 && $3 == $3 + 0 { ok = 1 } END { exit !ok }' out
run 1 "predict --unknown bogus" predict sgd.sfm bad_pairs.txt --unknown bogus
printf '1000\n' >short_pairs.txt
run 2 "predict: malformed line" predict sgd.sfm short_pairs.txt
check "predict: parse error names the line" has "short_pairs.txt:1: expected 'user item'" err
run 2 "predict: missing pairs file" predict sgd.sfm no-such-pairs.txt
check "predict: 'cannot open' message" has "cannot open no-such-pairs.txt" err
# The model path is checked before anything is read or trained.
cp plain.sfm kept.sfm
run 1 "existing model without --force" train als train1.txt -o kept.sfm --one-based --rank 2
check "existing model: asks for --force" has "kept.sfm exists; pass --force to overwrite it" err
check "existing model: left as it was" cmp -s plain.sfm kept.sfm
run 2 "-o in a missing directory, checked first" train als no-such-file.txt -o no-dir/x.sfm
check "-o in a missing directory: names it" has "cannot write no-dir/x.sfm: no directory no-dir" err
run 1 "-o is a directory" train als train.txt -o . --force
# No ratings is an error, not an empty model; zero epochs save the start with a warning.
: >empty.txt
run 2 "empty ratings file" train als empty.txt -o empty.sfm
check "empty ratings file: says so" has "empty.txt: invalid argument: no ratings to train on" err
check "empty ratings file: no model written" test ! -e empty.sfm
printf 'user,item,rating\n' >header_only.csv
run 2 "CSV with only its header" train als header_only.csv -o empty.sfm
check "CSV with only its header: says so" has "no ratings to train on" err
run 0 "--iters 0" train als train1.txt -o zero.sfm --one-based --rank 2 --iters 0
check "--iters 0: warns" has "warning: --iters 0: zero.sfm will hold the untrained starting" err
# --holdout scores what --validation can: held-out ratings of users or items the split left
# without training ratings are skipped (users 2000.. have one rating each here).
awk '{ print } END { for (u = 0; u < 40; u++) print 2000 + u, 50, 3 }' train.txt >cold.txt
run 0 "--holdout with users left cold" train als cold.txt -o cold.sfm --remap --holdout 0.5 \
  --rank 2 --iters 1
check "--holdout: cold held-out ratings skipped with a note" \
  has "held-out ratings have users or items left without training ratings" err
run 1 "--lambda -1" train als train.txt -o x.sfm --lambda -1
check "--lambda -1: one short line naming the bound" has "^--lambda: -1 must be >= 0$" err
check "--lambda -1: no 309-digit DBL_MAX" test "$(wc -c <err)" -lt 120
printf '1 2 3\n1 \001\033[31mred\377 3\n' >binary.txt
run 2 "binary bytes in a rating file" train als binary.txt -o x.sfm
check "binary bytes: escaped in the message" has "invalid column id '\\\\x01\\\\x1b\\[31mred\\\\xff'" err
check "binary bytes: no raw control byte reaches the terminal" test "$(tr -d '\n' <err | tr -d '[:print:]' | wc -c)" -eq 0
printf '1 1 1\n1 1 2\n' >dup.txt
run 2 "duplicate entries" train als dup.txt -o x.sfm
check "duplicate entries: both lines named" \
  has "dup.txt:2: duplicate entry (row 1, col 1), first given on line 1 (pass --sum-duplicates to sum duplicates)" err
printf '# ratings\n1 1 5\n2 2 3\n1 1 4\n' >dup3.txt
run 2 "convert: duplicate entries" convert dup3.txt dup3.mtx --one-based
check "convert: duplicate entries: ids as written, lines counting the comment" \
  has "dup3.txt:4: duplicate entry (row 1, col 1), first given on line 2 (pass --sum-duplicates to sum duplicates)" err
run 0 "--sum-duplicates" train als dup.txt -o x.sfm --sum-duplicates --rank 1 --iters 1

echo "cli_test: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
