#!/usr/bin/env bash
# kmeans-cpu.sh -- the CPU speed-up of gmm-init's k-means distances
# (doc/gmm-init.md quotes it): bench/experiments/kmeans-cpu.c times the
# CPU implementation of the kmeans ops (kernels/cpu/kmeans.c) against the plain
# loop gmm-init ran before, one thread (OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1;
# set them to compare with threads), and checks the same bits; then gmm-init
# end to end at 30,000 x 40 frames against the commit before the change
# (OLD=<gmm-init binary of that commit> to compare; the models must be
# byte-identical).
# Usage: bench/experiments/kmeans-cpu.sh [M K D]   (default 30000 2048 40)
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s build/libgmmhmm-drivers.a build/libgmmhmm-kernels.a build/libgmmhmm.a bin/gmm-init
mkdir -p build/bench
# shellcheck disable=SC2046 # the link line splits into words
cc -O2 -std=c11 -D_GNU_SOURCE -Ilib -Ikernels -fopenmp -o build/bench/kmeans-cpu bench/experiments/kmeans-cpu.c \
  build/libgmmhmm-drivers.a build/libgmmhmm-kernels.a build/libgmmhmm.a $(make -s print-ldlibs)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
for K in 256 ${2:-2048}; do build/bench/kmeans-cpu "${1:-30000}" "$K" "${3:-40}" 1; done
if [ -n "${OLD:-}" ]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  cc -O2 -o "$tmp/gen-feats" bench/gen-feats.c -lm
  "$tmp/gen-feats" --frames=30000 --dim=40 --clusters=256 "$tmp/data" >/dev/null
  for ct in diag full; do
    for v in old new; do
      b=bin/gmm-init; [ $v = old ] && b=$OLD
      /usr/bin/time -f "$v $ct 256: %U s user, %e s wall" "$b" --device=cpu --num-gauss=256 --cov-type=$ct --num-iters=0 \
        --max-frames=30000 "scp:$tmp/data/feats.scp" "$tmp/$v.$ct" 2>&1 | tail -1
    done
    cmp "$tmp/old.$ct" "$tmp/new.$ct" && echo "$ct: byte-identical models"
  done
fi
