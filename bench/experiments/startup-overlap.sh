#!/usr/bin/env bash
# bench/experiments/startup-overlap.sh -- the backend started on a thread
# while gmm-acc-stats-gpu / gmm-est-gpu read their data, and the staged
# upload (bench/RESULTS.md D22): OLD_BIN (another build's tools, e.g.
# of 0c89913, before the change) against this tree's bin/, on one GPU.
# 2M frames x 40 from bench/gen-feats.c and a 512-Gaussian full model:
# gmm-acc-stats-gpu on all of it and on a twentieth (102 utterances), three
# alternating rounds, wall seconds; gmm-est-gpu, 3 iterations, once each.
# Accumulators and models must be byte-identical.
# Usage: OLD_BIN=<dir> bench/experiments/startup-overlap.sh [work-dir]
#        (from the repository root, on a GPU machine, tools built)
set -euo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd)
: "${OLD_BIN:?set OLD_BIN to the bin/ of the build to compare against}"
W=${1:-/tmp/startup-overlap}; mkdir -p "$W"; cd "$W"
nvidia-smi -L | head -1
cc -O2 -o gen "$R/bench/gen-feats.c" -lm
[ -f syn/feats.scp ] || ./gen --frames=2000000 --dim=40 --clusters=512 --utts-per-spk=125 syn > /dev/null
[ -f 0.mdl ] || "$R/bin/gmm-init" --device=cuda --cov-type=full --num-gauss=512 --num-iters=0 --max-frames=50000 \
  --kmeans-iters=2 scp:syn/feats.scp 0.mdl 2> /dev/null
head -c $(( $(wc -c < syn/feats.scp) / 20 )) syn/feats.scp | sed '$d' > small.scp
secs() { local s e; s=$(date +%s.%N); "$@" 2> /dev/null; e=$(date +%s.%N); awk -v a=$s -v b=$e 'BEGIN { printf "%.3f", b - a }'; }
for r in 1 2 3; do
  for v in old new; do
    B=$R/bin; [ $v = old ] && B=$OLD_BIN
    for d in syn/feats.scp small.scp; do
      echo "$v $d $(secs "$B/gmm-acc-stats-gpu" --device=cuda 0.mdl scp:$d $v.$(basename $d).acc) s"
    done
  done
done
cmp old.feats.scp.acc new.feats.scp.acc && cmp old.small.scp.acc new.small.scp.acc && echo "accumulators byte-identical"
for v in old new; do
  B=$R/bin; [ $v = old ] && B=$OLD_BIN
  echo "gmm-est-gpu --num-iters=3 $v $(secs "$B/gmm-est-gpu" --device=cuda --num-iters=3 0.mdl scp:syn/feats.scp $v.mdl) s"
done
cmp old.mdl new.mdl && echo "models byte-identical"
