#!/usr/bin/env bash
# bench/experiments/score-pipeline.sh -- gmm-score-gpu's pipeline start and
# end (bench/RESULTS.md D20): OLD_BIN (another build's tools, e.g. of
# 084bee5, before the tail batches and the early threads) against this
# tree's bin/, alternating, ROUNDS rounds.  1M frames x 40 from
# bench/gen-feats.c in the page cache and a random UBM of 2048 diagonal
# Gaussians (bench/io.sh's UBM diag row), output to ark:/dev/null.  Prints
# each run's end-to-end frames/s, the tool's own kernel rate and their
# ratio, then the --verbose=2 timeline of one run of this tree's tool
# (per batch: taken, laid out, read, begun, ended, ms from the pipeline's
# start).  Without OLD_BIN only this tree's tool runs.
# Usage: [OLD_BIN=<dir>] [ROUNDS=5] [DEVICE=cuda] [FRAMES=1000000] bench/experiments/score-pipeline.sh [work-dir]
#        (from the repository root on a GPU machine, after make all and the
#        bench-score build of bench/run.sh)
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd)
W=${1:-/tmp/score-pipeline}; mkdir -p "$W"; cd "$W"
cc -O2 -o gen "$R/bench/gen-feats.c" -lm || exit 1
N=${FRAMES:-1000000}
if [ ! -f f/feats.ark ] || [ "$(cat f/frames 2> /dev/null)" != "$N" ]; then
  ./gen --frames="$N" --dim=40 --clusters=64 --utt-frames=1000 f > /dev/null 2>&1 && echo "$N" > f/frames || exit 1
fi
cat f/feats.ark > /dev/null # into the page cache
[ -f m ] || "$R/build/bench/bench-score" --type=diag --pdfs=1 --gauss=2048 --dim=40 --write-model=m > /dev/null 2>&1
run() { # $1 label, $2 bin dir
  "$2/gmm-score-gpu" --device="${DEVICE:-cuda}" m ark:f/feats.ark ark:/dev/null 2>&1 | grep 'frames/s on' |
    sed -E 's/.* ([0-9]+) frames\/s on .*kernel alone ([0-9]+) frames\/s.*/\1 \2/' |
    awk -v l="$1" '{ printf "%s: end to end %.3g frames/s, kernel %.3g, ratio %.2f\n", l, $1, $2, $1 / $2 }'
}
"$R/bin/gmm-score-gpu" --device="${DEVICE:-cuda}" m ark:f/feats.ark ark:/dev/null > /dev/null 2>&1 # warm-up
for r in $(seq "${ROUNDS:-5}"); do
  [ -n "${OLD_BIN:-}" ] && run old "$OLD_BIN"
  run new "$R/bin"
done
"$R/bin/gmm-score-gpu" --device="${DEVICE:-cuda}" --verbose=2 m ark:f/feats.ark ark:/dev/null 2>&1 | grep -E 'batch [0-9]+:|frames/s on'
