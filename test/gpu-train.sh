#!/usr/bin/env bash
# test/gpu-train.sh -- gmm-train (resident, R ranks) on the GPU machine, called by
# test/run-gpu.sh (section 9); prints "ok - ..." / "not ok - ..." lines.
#  a. one process with one block = gmm-est-gpu --device=$DEV, bit for bit;
#  b. --device=$DEV against --device=cpu (BLAS; average log-likelihood per
#     frame of every iteration within 1e-4 relative; the models within
#     compare_models.py's GPU tolerances);
#  c. --max-device-memory (streamed blocks) = resident, bit for bit;
#  e. the candidate E-step against the double GEMM path and the cpu backend (accumulators, 1e-7);
#  d. with 2 or more GPUs: 2 ranks (one per GPU) against 1 rank: accumulators
#     and models byte-identical (the blocks combined in double-double on the
#     device, reduced in rank order, rounded once: lib/base/dd.h), through
#     the MPI host path (--comm=mpi) and NCCL (--comm=nccl), with the
#     accumulators fetched (GH_TRAIN_DUMP_ACCS) and with every M-step on the
#     device, also after 20 iterations; two NCCL runs byte-identical.
# Data: bench/gen-feats.c, 200,000 frames x 40 of 64 clusters; 64 full Gaussians.
# (A dry run of the script elsewhere: DEV=opencl FRAMES=4000 GAUSS=4 test/gpu-train.sh)
set -u
DEV=${DEV:-cuda}; FRAMES=${FRAMES:-200000}; GAUSS=${GAUSS:-64}
cd "$(dirname "$0")/.."
root=$PWD
export PATH="$root/bin:$PATH"
[ "$(id -u)" != 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/gen-feats" bench/gen-feats.c -lm || { notok "gen-feats did not build"; exit 0; }
"$tmp/gen-feats" --frames=$FRAMES --dim=40 --clusters=$GAUSS --utt-frames=1000 "$tmp/data" >/dev/null 2>&1
F=scp:$tmp/data/feats.scp
gmm-init --device=$DEV --cov-type=full --num-gauss=$GAUSS --num-iters=0 --max-frames=50000 "$F" "$tmp/0.mdl" 2>"$tmp/init.log" ||
  { notok "gmm-init: $(tail -1 "$tmp/init.log")"; exit 0; }
acc_rel() {
  python3 -c "
import numpy as np; a = np.fromfile('$1'); b = np.fromfile('$2'); assert a.shape == b.shape
print('%.3g' % np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-12 * np.abs(a).max())))"
}

# a.
gmm-est-gpu --device=$DEV --num-iters=5 "$tmp/0.mdl" "$F" "$tmp/est.mdl" 2>"$tmp/est.log"
gmm-train --device=$DEV --num-iters=5 --block-frames=1000000 "$tmp/0.mdl" "$F" "$tmp/one.mdl" 2>"$tmp/one.log"
if cmp -s "$tmp/est.mdl" "$tmp/one.mdl"; then ok "gmm-train (1 process, 1 block) = gmm-est-gpu on CUDA, bit for bit"
else notok "gmm-train (1 block) differs from gmm-est-gpu on CUDA ($(egs/utils/compare_gmms.sh "$tmp/est.mdl" "$tmp/one.mdl" 2>&1 | tail -1))"; fi

# b.
gmm-train --device=$DEV --binary=false --num-iters=4 "$tmp/0.mdl" "$F" "$tmp/gpu.mdl" 2>"$tmp/gpu.log"
gmm-train --device=cpu --binary=false --num-iters=4 "$tmp/0.mdl" "$F" "$tmp/ref.mdl" 2>"$tmp/ref.log"
if r=$(paste <(grep -o 'iteration [0-9]*: avg loglike per frame [-0-9.e+]*' "$tmp/gpu.log" | awk '{ print $7 }') \
             <(grep -o 'iteration [0-9]*: avg loglike per frame [-0-9.e+]*' "$tmp/ref.log" | awk '{ print $7 }') |
       awk 'NF == 2 { n++; d = ($1 - $2) / ($2 < 0 ? -$2 : $2); if (d < 0) d = -d; if (d > m) m = d }
            END { printf "%d iterations, max rel diff %.2g", n, m; exit !(n == 4 && m <= 1e-4) }'); then
  ok "gmm-train cuda vs cpu: avg loglike per frame ($r)"
else notok "gmm-train cuda vs cpu: avg loglike per frame ($r)"; fi
if r=$(python3 test/python/compare_models.py "$tmp/gpu.mdl" "$tmp/ref.mdl" --rtol 1e-3 --cov-rtol 1e-2 2>&1); then
  ok "gmm-train cuda vs cpu models ($r)"; else notok "gmm-train cuda vs cpu models ($r)"; fi

# c. (blocks of 20 utterances; room for three: one resident, two streaming)
BF=$(( FRAMES / 10 > 1000 ? FRAMES / 10 : 1000 ))
gmm-train --device=$DEV --num-iters=3 --block-frames=$BF "$tmp/0.mdl" "$F" "$tmp/res.mdl" 2>"$tmp/res.log"
gmm-train --device=$DEV --num-iters=3 --block-frames=$BF --max-device-memory=$((BF * 172 * 3)) "$tmp/0.mdl" "$F" "$tmp/str.mdl" 2>"$tmp/str.log"
if grep -q "streamed from page-locked" "$tmp/str.log" && cmp -s "$tmp/res.mdl" "$tmp/str.mdl"; then
  ok "gmm-train --max-device-memory on CUDA: $(grep -o '[0-9]* of [0-9]* blocks resident.*' "$tmp/str.log"); = resident, bit for bit"
else notok "gmm-train --max-device-memory on CUDA ($(grep -E 'stream|ERROR' "$tmp/str.log" | tail -1); cmp: $(cmp "$tmp/res.mdl" "$tmp/str.mdl" 2>&1))"; fi

# e. the candidate E-step (full pdfs of >= 64 Gaussians: kernels/cuda/cuda-gemm.cu estep_cand, exact in
#    double for each frame's candidates) against the whole-pdf double GEMM path (GH_CUDA_CAND=0) and the
#    cpu backend's DGEMM, every pdf in double (GH_GEMM_MAX_ROW_ERROR=1e-9: above the double forms'
#    estimates, below the fp32 ones): one iteration's accumulators within 1e-7 of their largest (the
#    candidates' log-likelihoods are kept as float offsets from the frame's best: ~6e-8 relative in a
#    posterior; the fp32 forms differ by ~1e-5)
for v in cand:1 dgemm:0; do
  GH_GEMM_MAX_ROW_ERROR=1e-9 GH_CUDA_CAND=${v#*:} GH_TRAIN_DUMP_ACCS=$tmp/e${v%:*}.acc \
    gmm-train --device=$DEV --num-iters=1 "$tmp/0.mdl" "$F" "$tmp/e${v%:*}.mdl" 2>"$tmp/e${v%:*}.log"
done
GH_GEMM_MAX_ROW_ERROR=1e-9 GH_TRAIN_DUMP_ACCS=$tmp/ecpu.acc gmm-train --device=cpu --num-iters=1 "$tmp/0.mdl" "$F" \
  "$tmp/ecpu.mdl" 2>"$tmp/ecpu.log"
for ref in dgemm cpu; do
  if r=$(python3 -c "
import numpy as np, sys; a = np.fromfile('$tmp/ecand.acc'); b = np.fromfile('$tmp/e$ref.acc'); assert a.shape == b.shape
d = np.max(np.abs(a - b)) / np.abs(b).max(); print('max |diff| / max %.2g' % d); sys.exit(0 if d <= 1e-7 else 1)" 2>&1); then
    ok "candidate E-step vs $ref (double): accumulators ($r)"
  else notok "candidate E-step vs $ref (double): accumulators ($r)"; fi
done

# d.
ng=${NG:-$(nvidia-smi -L 2>/dev/null | grep -c "^GPU")}
if [ "$ng" -lt 2 ] || ! command -v mpirun >/dev/null; then
  echo "ok - # SKIP 2-rank CUDA checks: $ng GPU(s), mpirun $(command -v mpirun >/dev/null && echo found || echo missing)"
  exit 0
fi
M="mpirun -np 2 --bind-to none --oversubscribe"
GH_TRAIN_DUMP_ACCS=$tmp/r1.acc gmm-train --device=$DEV --num-iters=4 "$tmp/0.mdl" "$F" "$tmp/r1.mdl" 2>"$tmp/r1.log"
for c in mpi nccl; do
  GH_TRAIN_DUMP_ACCS=$tmp/r2$c.acc $M gmm-train --device=$DEV --comm=$c --num-iters=4 "$tmp/0.mdl" "$F" "$tmp/r2$c.mdl" \
    2>"$tmp/r2$c.log" || notok "2 ranks --comm=$c failed: $(grep ERROR "$tmp/r2$c.log" | head -2)"
  if grep -q "device $DEV.*communicator $c" "$tmp/r2$c.log" && grep -q "rank 1 on host" "$tmp/r2$c.log"; then
    ok "2 ranks --comm=$c on CUDA: $(grep -o 'reduce [0-9.]* s ([a-z-]*)' "$tmp/r2$c.log" | head -1)"
  else notok "2 ranks --comm=$c: not on CUDA with that communicator ($(grep 'communicator' "$tmp/r2$c.log"))"; fi
  if cmp -s "$tmp/r1.acc" "$tmp/r2$c.acc"; then ok "2 ranks ($c) vs 1: accumulators byte-identical"
  else notok "2 ranks ($c) vs 1: accumulators differ (max rel diff $(acc_rel "$tmp/r1.acc" "$tmp/r2$c.acc" 2>&1))"; fi
  if cmp -s "$tmp/r1.mdl" "$tmp/r2$c.mdl"; then ok "2 ranks ($c) vs 1: models byte-identical"
  else notok "2 ranks ($c) vs 1: models differ ($(egs/utils/compare_gmms.sh "$tmp/r1.mdl" "$tmp/r2$c.mdl" 2>&1 | tail -1))"; fi
done
if grep -q "combined in double-double on the device (acc_commit)" "$tmp/r2mpi.log"; then ok "2 ranks: blocks combined by acc_commit on CUDA"
else notok "2 ranks: blocks not combined on the device ($(grep "double-double" "$tmp/r2mpi.log"))"; fi
# without the dump (every iteration's M-step on the device after the reduction)
gmm-train --device=$DEV --num-iters=4 "$tmp/0.mdl" "$F" "$tmp/d1.mdl" 2>"$tmp/d1.log"
for c in mpi nccl nccl; do
  $M gmm-train --device=$DEV --comm=$c --num-iters=4 "$tmp/0.mdl" "$F" "$tmp/d$c.mdl" 2>"$tmp/d$c.log"
  [ -f "$tmp/d${c}1.mdl" ] || cp "$tmp/d$c.mdl" "$tmp/d${c}1.mdl"
done
if cmp -s "$tmp/dmpi.mdl" "$tmp/dnccl.mdl"; then ok "2 ranks: NCCL and MPI reductions give byte-identical models"
else notok "2 ranks: NCCL and MPI models differ ($(egs/utils/compare_gmms.sh "$tmp/dmpi.mdl" "$tmp/dnccl.mdl" 2>&1 | tail -1))"; fi
if cmp -s "$tmp/dnccl1.mdl" "$tmp/dnccl.mdl"; then ok "2 ranks NCCL: two runs byte-identical"; else notok "2 NCCL runs differ"; fi
if cmp -s "$tmp/d1.mdl" "$tmp/dnccl.mdl"; then ok "2 ranks (NCCL, device M-steps) vs 1: models byte-identical"
else notok "2 ranks (NCCL, device M-steps) vs 1: models differ ($(egs/utils/compare_gmms.sh "$tmp/d1.mdl" "$tmp/dnccl.mdl" 2>&1 | tail -1))"; fi
# 20 iterations (eigenvalue floors on this data): the 2-rank models once drifted from the 1-rank model here
gmm-train --device=$DEV --num-iters=20 "$tmp/0.mdl" "$F" "$tmp/l1.mdl" 2>"$tmp/l1.log"
$M gmm-train --device=$DEV --num-iters=20 "$tmp/0.mdl" "$F" "$tmp/l2.mdl" 2>"$tmp/l2.log"
if cmp -s "$tmp/l1.mdl" "$tmp/l2.mdl"; then ok "20 iterations: 2 ranks ($(grep -o 'reduce [0-9.]* s ([a-z-]*)' "$tmp/l2.log" | tail -1)) vs 1: models byte-identical"
else notok "20 iterations: 2 ranks vs 1: models differ ($(egs/utils/compare_gmms.sh "$tmp/l1.mdl" "$tmp/l2.mdl" 2>&1 | tail -1))"; fi
