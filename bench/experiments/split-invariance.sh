#!/usr/bin/env bash
# bench/experiments/split-invariance.sh -- the diagnosis of --nj N against
# --nj 1 on a GPU (bench/RESULTS.md D16): on a machine with 2 GPUs, from the repository root, tools built.
#  1. synthetic 2M x 40, 512 full Gaussians (bench/gen-feats.c, gmm-init):
#     accumulators of 1 job against the sum of 2 jobs (utils/split_data.sh,
#     one job per GPU), with --precision=auto and fp32, and the CPU backend's
#     1 job; per kind of block, bench/cmp-accs.py (largest |a-b| / largest
#     |a|), and the models gmm-est makes of them (utils/compare_gmms.sh);
#  2. AMI (GH_SHARED's kaldi-ami-feats), 8 Gaussians full and diag: 3 jobs +
#     gmm-sum-accs against 1 job on cuda and on cpu-ref, and cuda against
#     cpu-ref (max |a-b| / (1 + |b|), as test/run-gpu.sh).
# Usage: GH_SHARED=/path/to/shared bench/experiments/split-invariance.sh [work-dir]
set -euo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd)
export PATH=$R/bin:$PATH
D=${GH_SHARED:-$R/../shared}/data
W=${1:-/tmp/split-invariance}; mkdir -p "$W"; cd "$W"; ln -sfn "$R/egs/utils" utils

cc -O2 -o gen "$R/bench/gen-feats.c" -lm
[ -f syn/feats.scp ] || ./gen --frames=2000000 --dim=40 --clusters=512 --utts-per-spk=125 syn
[ -f 0.mdl ] || gmm-init --device=cuda --cov-type=full --num-gauss=512 --num-iters=0 --max-frames=100000 \
  --kmeans-iters=3 scp:syn/feats.scp 0.mdl 2> init.log
utils/split_data.sh syn 2 > /dev/null
acc() { # name device precision scp...: one job per scp (GPU j-1 mod 2), summed; text accs and model
  local n=$1 d=$2 p=$3 i=0 f parts= pids=; shift 3
  for f in "$@"; do
    i=$((i + 1))
    CUDA_VISIBLE_DEVICES=$(( (i - 1) % 2 )) gmm-acc-stats-gpu --device=$d --precision=$p 0.mdl scp:$f $n.$i.acc 2> $n.$i.log &
    parts+=" $n.$i.acc"; pids+=" $!"
  done
  wait $pids
  gmm-sum-accs $n.acc $parts 2> /dev/null; gmm-sum-accs --binary=false $n.txt $n.acc 2> /dev/null
  gmm-est 0.mdl $n.acc $n.mdl 2> /dev/null; gmm-copy --binary=false $n.mdl $n.mdl.txt 2> /dev/null
  grep -h "avg loglike" $n.*.log | sed "s/^/  $n: /"
}
acc g1 cuda auto syn/feats.scp; acc g2 cuda auto syn/split2/1/feats.scp syn/split2/2/feats.scp
acc f1 cuda fp32 syn/feats.scp; acc f2 cuda fp32 syn/split2/1/feats.scp syn/split2/2/feats.scp
acc c1 cpu auto syn/feats.scp
for p in "g1 g2" "f1 f2" "g1 c1" "f1 c1" "g1 f1"; do
  set -- $p
  echo "== accs $1 vs $2"; python3 "$R/bench/cmp-accs.py" $1.txt $2.txt
  echo "== models $1 vs $2"; utils/compare_gmms.sh $1.mdl $2.mdl 2>&1 | tail -1
done

cmp_nums() { python3 - "$@" <<'PY'
import sys
a, b = open(sys.argv[1]).read().split(), open(sys.argv[2]).read().split()
w = 0.0
for x, y in zip(a, b):
    try: fx, fy = float(x), float(y)
    except ValueError: continue
    w = max(w, abs(fx - fy) / (1 + abs(fy)))
print("max |a-b| / (1 + |b|) %.3g" % w)
PY
}
sed "s| | $D/kaldi-ami-feats/|" "$D/kaldi-ami-feats/feats.scp" > ami.scp
sed -n 1,3p ami.scp > j1.scp; sed -n 4,7p ami.scp > j2.scp; sed -n '8,$p' ami.scp > j3.scp
for cov in full diag; do
  gmm-init --device=cpu-ref --cov-type=$cov --num-gauss=8 --num-iters=0 scp:ami.scp r$cov.0 2> /dev/null
  for dev in cuda cpu-ref; do
    gmm-acc-stats-gpu --device=$dev --binary=false r$cov.0 scp:ami.scp one.$dev.acc 2> /dev/null
    for j in 1 2 3; do gmm-acc-stats-gpu --device=$dev r$cov.0 scp:j$j.scp j$j.acc 2> /dev/null; done
    gmm-sum-accs --binary=false three.$dev.acc j1.acc j2.acc j3.acc 2> /dev/null
    echo "AMI $cov, $dev, 3 jobs vs 1: $(cmp_nums three.$dev.acc one.$dev.acc)"
  done
  echo "AMI $cov, cuda 1 job vs cpu-ref 1 job: $(cmp_nums one.cuda.acc one.cpu-ref.acc)"
done
