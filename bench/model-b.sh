#!/usr/bin/env bash
# bench/model-b.sh -- doc/scaling.md's model B on one GPU: an HMM-GMM's pdfs,
# --pdfs (5,000) x --gauss (16) full-covariance Gaussians of dimension --dim
# (36), trained with pdf labels by the resident trainer (gmm-train
# --label-type=utt: each utterance's frames train one pdf), to measure the
# figures doc/scaling.md had to assume: the device M-step of the 80,000 full
# Gaussians (eigenvalue floors by Jacobi on the device) and the E-step rate
# per (frame, pdf) pair.  Data: bench/gen-feats.c, --frames (8 M) of 100-frame
# utterances (two of --pdfs clusters each), utterance u labelled pdf u mod
# --pdfs (so ~1,600 frames a pdf at the defaults); the initial model
# --init random (bench-score --write-model: random Gaussians near 0, so the
# first iteration moves them to the data; trained with
# --min-gaussian-occupancy=10 and no removal, so that nearly every Gaussian
# is re-estimated, most from few frames: eigenvalue floors, the M-step's
# worst case) or kmeans (gmm-init per pdf, --num-iters=0, Kaldi's
# occupancy defaults), then --iters EM iterations.  Prints the init time
# and, per iteration (gmm-train's log), E-step, reduce and M-step seconds;
# the medians over iterations 2..N.
# Usage (repository root, tools built):
#   bench/model-b.sh [--device cuda] [--frames 8000000] [--pdfs 5000] [--gauss 16] [--dim 36] [--iters 4]
#                    [--init random|kmeans] [--work DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH="${GH_BIN:-$root/bin}:$PATH"
device=cuda; frames=8000000; pdfs=5000; gauss=16; dim=36; iters=4; init=random; work=/tmp/gmmhmm-bench-b
. "$root/egs/utils/parse_options.sh"
mkdir -p "$work"; cd "$work"
cc -O2 -o gen-feats "$root/bench/gen-feats.c" -lm
[ -f data/feats.scp ] && [ "$(cat data/.made 2>/dev/null)" = "$frames $dim $pdfs" ] ||
  { rm -rf data; ./gen-feats --frames=$frames --dim=$dim --clusters=$pdfs --utt-frames=100 data > /dev/null; echo "$frames $dim $pdfs" > data/.made; }
awk -v P=$pdfs '{ print $1, (NR - 1) % P }' data/feats.scp > utt.lab
echo "# model B: $pdfs pdfs x $gauss full Gaussians, D = $dim, $frames frames ($(wc -l < data/feats.scp) utterances), $device; $(date -u); $(nvidia-smi -L 2>/dev/null | head -1)"
t0=$(date +%s.%N)
occ=()
if [ "$init" = kmeans ]; then
  gmm-init --labels=ark,t:utt.lab --label-type=utt --num-pdfs=$pdfs --num-gauss=$gauss --cov-type=full --num-iters=0 \
    --device=$device scp:data/feats.scp b.0 2> init.log || { tail -3 init.log >&2; exit 1; }
else
  (cd "$root" && make -s build/libgmmhmm-drivers.a build/libgmmhmm-kernels.a build/libgmmhmm.a build/bench/bench-score.o &&
    cc -o build/bench/bench-score build/bench/bench-score.o build/libgmmhmm-drivers.a build/libgmmhmm-kernels.a build/libgmmhmm.a \
      -fopenmp $(make -s print-ldlibs))
  "$root/build/bench/bench-score" --device=cpu --type=full --pdfs=$pdfs --gauss=$gauss --dim=$dim --write-model=b.0
  occ=(--min-gaussian-occupancy=10 --remove-low-count-gaussians=false)
fi
echo "initial model ($init): $(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN { printf "%.2f", b - a }') s"
t0=$(date +%s.%N)
gmm-train --verbose=1 --device=$device --label-type=utt --num-iters=$iters "${occ[@]}" b.0 scp:data/feats.scp ark,t:utt.lab \
  b.$iters 2> train.log || { tail -3 train.log >&2; exit 1; }
echo "gmm-train, $iters iterations: $(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN { printf "%.2f", b - a }') s"
grep -E "LOG: iteration [0-9]+:" train.log | sed 's/.*LOG: //'
grep -iE "floored|M-step on the host" train.log | tail -2
awk 'BEGIN { n = 0 } /LOG: iteration [0-9]+:/ { it = $4 + 0; if (it < 2) next
       match($0, /E-step [0-9.e+-]+ s/); e[n] = substr($0, RSTART + 7, RLENGTH - 9) + 0
       match($0, /M-step [0-9.e+-]+ s/); m[n] = substr($0, RSTART + 7, RLENGTH - 9) + 0; n++ }
     function med(a, n,   i, j, t) { for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
       return n % 2 ? a[(n - 1) / 2] : (a[n / 2 - 1] + a[n / 2]) / 2 }
     END { if (n) printf "median over iterations 2..: E-step %.4f s, M-step %.4f s\n", med(e, n), med(m, n) }' train.log
