#!/usr/bin/env bash
# Old (main before this branch) against new gmm-acc-stats-gpu on 2M x 40 frames, 512 full Gaussians, one GPU:
# wall time per run and byte-identical accumulators.  Run from the repository root on a GPU machine.
nvidia-smi -L | head -1
mkdir -p /tmp/old && git archive "$(git merge-base HEAD main)" | tar -x -C /tmp/old
(make -s -j16 all 2>&1 | grep -i error) & p1=$!
(cd /tmp/old && make -s -j16 all 2>&1 | grep -i error) & p2=$!
wait $p1 $p2
echo "built at $SECONDS s"
R=$PWD; W=/tmp/up; mkdir -p $W; cd $W
cc -O2 -o gen $R/bench/gen-feats.c -lm && ./gen --frames=2000000 --dim=40 --clusters=512 --utts-per-spk=125 syn >/dev/null
timeout 40 $R/bin/gmm-init --device=cuda --cov-type=full --num-gauss=512 --num-iters=0 --max-frames=50000 --kmeans-iters=2 scp:syn/feats.scp 0.mdl 2>/dev/null
echo "data at $SECONDS s"
for r in 1 2 3; do
  for v in old new; do B=$R/bin; [ $v = old ] && B=/tmp/old/bin
    s=$(date +%s.%N); $B/gmm-acc-stats-gpu --device=cuda 0.mdl scp:syn/feats.scp $v.acc 2>$v.log; e=$(date +%s.%N)
    echo "$v $(awk -v a=$s -v b=$e 'BEGIN{printf "%.3f", b-a}') s  $(grep -o '[0-9.e+]* frames/s' $v.log)"
  done
done
cmp old.acc new.acc && echo "accs byte-identical"
echo "end $SECONDS s"
