#!/usr/bin/env bash
# bench/experiments/read-speed.sh -- how fast gh_data_load reads a job's
# features (bench/RESULTS.md D17): 1M frames x
# 40 from bench/gen-feats.c, a 1-Gaussian model so that the read is most of
# the run, gmm-acc-stats-gpu --device=cpu on the scp (read by index, in
# parallel) and on the archive (sequential reader), wall seconds of five
# alternating runs each; OLD_BIN=dir of another build's tools adds its scp
# runs (the before of a change).  The accumulators must be byte-identical.
# Usage: bench/experiments/read-speed.sh [work-dir]   (from the repository root)
set -euo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd)
W=${1:-/tmp/read-speed}; mkdir -p "$W"; cd "$W"
cc -O2 -o gen "$R/bench/gen-feats.c" -lm
[ -f syn/feats.scp ] || ./gen --frames=1000000 --dim=40 --clusters=8 --utts-per-spk=50 syn
"$R/bin/gmm-init" --device=cpu --cov-type=diag --num-gauss=1 --num-iters=0 --max-frames=10000 scp:syn/feats.scp m1 2> /dev/null
cat syn/feats.ark > /dev/null   # into the page cache
secs() { local s e; s=$(date +%s.%N); "$@" 2> /dev/null; e=$(date +%s.%N); awk -v a=$s -v b=$e 'BEGIN { printf " %.2f", b - a }'; }
declare -A t
for r in 1 2 3 4 5; do
  t[scp]+=$(secs "$R/bin/gmm-acc-stats-gpu" --device=cpu m1 scp:syn/feats.scp scp.acc)
  t[ark]+=$(secs "$R/bin/gmm-acc-stats-gpu" --device=cpu m1 ark:syn/feats.ark ark.acc)
  [ -n "${OLD_BIN:-}" ] && t[old]+=$(secs "$OLD_BIN/gmm-acc-stats-gpu" --device=cpu m1 scp:syn/feats.scp old.acc)
done
for k in "${!t[@]}"; do echo "$k:${t[$k]} s"; done
cmp scp.acc ark.acc && echo "scp and ark accumulators byte-identical"
[ -z "${OLD_BIN:-}" ] || { cmp scp.acc old.acc && echo "old and new accumulators byte-identical"; }
