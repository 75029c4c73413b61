#!/usr/bin/env bash
# bench/init.sh -- initialisation and the device M-step (bench/RESULTS.md I1-I3),
# run by bench/run.sh (INIT=0 skips):
#  init    gmm-init --num-iters=0 --max-frames=30000 (k-means++ seeding and
#          Lloyd iterations; the distances on the backend, kernels/backend.h
#          kmeans_*): 2048 diag and 1024 full Gaussians on DEVICE and on the
#          CPU backend, wall seconds; the two models must be byte-identical
#          (the k-means result does not depend on the device).
#  floor   gmm-est-gpu on the 2 M x 40 job (INIT_FRAMES frames x 40, 512 full
#          Gaussians from gmm-init, 10 iterations) with the device M-step
#          (eigenvalue floors by Jacobi on the device) and with GH_MSTEP=host
#          (the host M-step every iteration, the code before), wall seconds
#          per iteration and the eigenvalues floored in the last iteration.
# Data: bench/gen-feats.c (INIT_FRAMES, default 2,000,000, 512 clusters, as
# bench/multi-gpu.sh) in build/bench/init-data (reused when present).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
DEVICE=${DEVICE:-cuda}; INIT_FRAMES=${INIT_FRAMES:-2000000}
dir=build/bench/init-data
mkdir -p build/bench
cc -O2 -o build/bench/gen-feats bench/gen-feats.c -lm || exit 1
if [ ! -s $dir/feats.scp ] || [ "$(cat $dir/frames 2>/dev/null)" != "$INIT_FRAMES" ]; then
  rm -rf $dir
  build/bench/gen-feats --frames=$INIT_FRAMES --dim=40 --clusters=512 $dir >/dev/null || exit 1
  echo "$INIT_FRAMES" >$dir/frames
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" -v n="${3:-1}" 'BEGIN { printf "%.3f", (b - a) / n }'; }
for shape in "diag 2048" "full 1024"; do
  set -- $shape
  for dev in $(echo "$DEVICE cpu" | tr ' ' '\n' | awk '!seen[$0]++'); do
    t0=$(now)
    bin/gmm-init --device=$dev --num-gauss=$2 --cov-type=$1 --num-iters=0 --max-frames=30000 \
      scp:$dir/feats.scp $tmp/init-$1-$dev.mdl 2>$tmp/log || { echo "init $1 $2 $dev: failed"; cat $tmp/log; continue; }
    t1=$(now)
    echo "init $1 G=$2 max-frames=30000 device=$dev: $(sub $t0 $t1) s wall (process start to model written)"
  done
  if [ "$DEVICE" != cpu ]; then
    if cmp -s $tmp/init-$1-$DEVICE.mdl $tmp/init-$1-cpu.mdl; then echo "init $1 G=$2: $DEVICE and cpu models byte-identical"
    else echo "init $1 G=$2: $DEVICE and cpu models DIFFER"; fi
  fi
done
# the floored M-step: 512 full Gaussians on the 2 M x 40 job
bin/gmm-init --device=$DEVICE --num-gauss=512 --cov-type=full --num-iters=0 --max-frames=200000 \
  scp:$dir/feats.scp $tmp/ubm.0 2>/dev/null || { echo "floor: gmm-init failed"; exit 0; }
for mode in device host; do
  env=(); [ $mode = host ] && env=(GH_MSTEP=host)
  t0=$(now)
  env "${env[@]}" bin/gmm-est-gpu --device=$DEVICE --num-iters=10 --verbose=1 $tmp/ubm.0 scp:$dir/feats.scp $tmp/ubm.$mode \
    2>$tmp/log-$mode || { echo "floor $mode: gmm-est-gpu failed"; tail -3 $tmp/log-$mode; continue; }
  t1=$(now)
  fl=$(grep -o '[0-9]* variances (or eigenvalues) floored' $tmp/log-$mode | tail -1 | cut -d' ' -f1)
  nh=$(grep -c 'M-step on the host' $tmp/log-$mode)
  echo "floor full G=512 frames=$INIT_FRAMES M-step=$mode: $(sub $t0 $t1 10) s per iteration (10 iterations incl. read and upload), ${fl:-0} eigenvalues floored in the last iteration, $nh device M-steps declined to the host"
done
if cmp -s $tmp/ubm.device $tmp/ubm.host; then echo "floor: device and host M-step models byte-identical"
else echo "floor: device and host M-step models differ (rounding: compare with bench/cmp-gmms or gmm-info)"; fi
