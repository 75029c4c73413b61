#!/usr/bin/env bash
# bench/experiments/small-job-start.sh -- what a small CUDA job pays to start
# (bench/RESULTS.md D21, D22):
# bench/cuda-startup.cu three times and two at once, then gmm-score-gpu
# (80 pdfs x 8 diagonal Gaussians, the Arabic recipe's shape) and
# gmm-acc-stats-gpu (1 x 8) on 100,000 frames x 39 from bench/gen-feats.c,
# wall seconds of three runs on the CPU backend and on CUDA, and on CUDA
# without cuBLAS (GH_CUDA_NO_CUBLAS=1) and with eager module loading.
# Usage: [BIN=dir] [TOOLS_ONLY=1] bench/experiments/small-job-start.sh [work-dir]
#        (from the repository root on a GPU machine, after make all and the
#        bench-score build of bench/run.sh; BIN: the tools to time, default
#        bin/, e.g. an older build's to compare; TOOLS_ONLY=1 skips
#        cuda-startup)
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd)
W=${1:-/tmp/small-job-start}; mkdir -p "$W"; cd "$W"
if [ -z "${TOOLS_ONLY:-}" ]; then
  nvcc -o cs "$R/bench/cuda-startup.cu" -ldl
  for r in 1 2 3; do ./cs; done
  echo "two at once:"; ./cs & p=$!; ./cs; wait $p
fi
cc -O2 -o gen "$R/bench/gen-feats.c" -lm && ./gen --frames=100000 --dim=39 --clusters=16 --utt-frames=1000 f > /dev/null
"$R/build/bench/bench-score" --device=cpu --type=diag --pdfs=80 --gauss=8 --dim=39 --write-model=m80 > /dev/null 2>&1
"$R/build/bench/bench-score" --device=cpu --type=diag --pdfs=1 --gauss=8 --dim=39 --write-model=m1 > /dev/null 2>&1
T() { local s e; s=$(date +%s.%N); "$@" 2> /dev/null > /dev/null; e=$(date +%s.%N); awk -v a=$s -v b=$e 'BEGIN { printf " %.3f", b - a }'; }
B=${BIN:-$R/bin}
score() { T "$B/gmm-score-gpu" --device=$1 m80 scp:f/feats.scp ark:/dev/null; }
acc() { T "$B/gmm-acc-stats-gpu" --device=$1 m1 scp:f/feats.scp a.acc; }
for dev in cpu cuda; do
  echo "gmm-score-gpu $dev 80x8:$(score $dev)$(score $dev)$(score $dev)"
  echo "gmm-acc-stats-gpu $dev 1x8:$(acc $dev)$(acc $dev)$(acc $dev)"
done
export GH_CUDA_NO_CUBLAS=1
echo "GH_CUDA_NO_CUBLAS=1: gmm-score-gpu$(score cuda)$(score cuda); gmm-acc-stats-gpu$(acc cuda)$(acc cuda)"
unset GH_CUDA_NO_CUBLAS
echo "CUDA_MODULE_LOADING=EAGER: gmm-score-gpu$(CUDA_MODULE_LOADING=EAGER score cuda)"
