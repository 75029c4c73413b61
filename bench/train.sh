#!/usr/bin/env bash
# bench/train.sh -- the whole GMM training job (bench/RESULTS.md T1-T4): gmm-train as a plain
# process and as R MPI ranks (one per GPU), against the PyTorch user's job
# ($GH_SHARED/peers/e2e_job.py) and gmm-est-gpu on the same feats.scp, same run.
#   data: bench/gen-feats.c, --frames (2M) x --dim (40), --gauss clusters;
#   model: gmm-init, --gauss (512) full-covariance Gaussians (k-means on 100k frames);
#   job: --iters (20) EM iterations.
# Timing convention (bench/RESULTS.md): per-iteration = median wall time of iterations
# 3..--iters (gmm-train's own "wall" per iteration; the peer reports only its
# mean); whole job = wall time from the start of the process (mpirun) to the
# written model.  For R > 1 also: the MPI host reduction (--comm=mpi) against
# NCCL (--comm=auto picks it on CUDA when libnccl.so.2 loads; GH_NCCL_LIB), and
# whether the R-rank model equals the 1-rank model (utils/compare_gmms.sh) and
# the accumulators agree (max relative difference, GH_TRAIN_DUMP_ACCS).
# Also the cost of one reduction (bench/bench-comm.c) of 1.8 MB and 450 MB of
# accumulators (225 MB in float) over R ranks, both paths.
# Rows start with "train " (one per run); "train fixed" rows: the load (read, device ready), the walls of
# iterations 1 and 2 and the number of host M-steps, from rank 0's log.
#
# Usage (from the repository root, tools built):
#   GH_SHARED=/path/to/shared bench/train.sh [--device cuda] [--ranks "1 2"] [--frames 2000000]
#     [--dim 40] [--gauss 512] [--iters 20] [--work /tmp/gmmhmm-bench] [--peer true] [--precision auto]
# --precision: the tools' --precision (auto: the numerical contract's choice, double for pdfs whose
# fp32 forms could err beyond it, doc/reliability.md; tf32x3, fp32: those forms whatever the estimate).
# Quick CPU check: bench/train.sh --device cpu --frames 20000 --gauss 8 --iters 4 --peer false
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
egs=$root/egs
export PATH="${GH_BIN:-$root/bin}:$PATH"
shared=${GH_SHARED:-$root/../shared}
device=cuda; ranks="1 2"; frames=2000000; dim=40; gauss=512; iters=20; work=/tmp/gmmhmm-bench; peer=true; precision=auto
. "$egs/utils/parse_options.sh"
[ $# -eq 0 ] || { echo "train.sh: unexpected argument $1" >&2; exit 1; }
for t in gmm-init gmm-train gmm-est-gpu feat-to-len; do
  command -v $t >/dev/null || { echo "train.sh: $t not built (run make in $root)" >&2; exit 1; }
done
[ "$(id -u)" != 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
mkdir -p "$work/build"; cd "$work"
now() { date +%s.%N; }
since() { awk -v a=$1 -v b=$(now) 'BEGIN { printf "%.3f", b - a }'; }
# median of the "wall" seconds (or another field) of iterations >= 3 of a gmm-train log
med() {  # med <log> <field: wall|E-step|reduce|M-step>
  awk -v f="$2" '/iteration [0-9]+: avg loglike/ { it = 0; for (i = 1; i <= NF; i++) if ($i == "iteration") it = $(i + 1) + 0;
      if (it < 3) next; for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) + 0 }' "$1" | sort -g |
    awk '{ a[++n] = $1 } END { if (!n) printf "-"; else printf "%.4f", n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }'
}

syn=data/syn_${frames}_${dim}_$gauss
cc -O2 -o build/gen-feats "$root/bench/gen-feats.c" -lm
if [ ! -f $syn/feats.scp ] || [ "$(feat-to-len scp:$syn/feats.scp 2>/dev/null)" != "$frames" ]; then
  rm -rf $syn; mkdir -p data
  build/gen-feats --frames=$frames --dim=$dim --clusters=$gauss $syn
fi
echo "train.sh: $frames frames x $dim, $gauss full Gaussians, $iters iterations, device $device, precision $precision ($(date -u))"
[ "$device" = cpu ] || nvidia-smi -L 2>/dev/null | sed 's/^/  /'
init=exp/train_init_$gauss; mkdir -p $init
if [ ! -f $init/0.mdl ]; then
  gmm-init --device=$device --cov-type=full --num-gauss=$gauss --num-iters=0 --max-frames=100000 --kmeans-iters=3 \
    scp:$syn/feats.scp $init/0.mdl 2> $init/init.log || { echo "train.sh: gmm-init failed: $work/$init/init.log" >&2; exit 1; }
fi
# warm the page cache for every job alike
cat $syn/feats.ark > /dev/null

# gmm-est-gpu: the single-process tool
t0=$(now); gmm-est-gpu --device=$device --precision=$precision --num-iters=$iters $init/0.mdl scp:$syn/feats.scp $init/est.mdl 2> $init/est.log
echo "train gmm-est-gpu R=1 whole_s=$(since $t0)"

run_train() {  # run_train <R> <comm> <tag>
  local R=$1 comm=$2 tag=$3 t0 launch=
  [ $R -eq 1 ] && [ $comm = none ] || launch="mpirun -np $R --bind-to none --oversubscribe"
  t0=$(now)
  GH_TRAIN_DUMP_ACCS=$init/$tag.acc $launch gmm-train --device=$device --precision=$precision --comm=$comm --num-iters=$iters \
    $init/0.mdl scp:$syn/feats.scp $init/$tag.mdl 2> $init/$tag.log || { echo "train.sh: $tag failed: $work/$init/$tag.log" >&2; tail -5 $init/$tag.log >&2; return 0; }
  local whole=$(since $t0) same=- rel=-
  if [ -f $init/r1.mdl ] && [ $tag != r1 ]; then
    "$egs/utils/compare_gmms.sh" $init/r1.mdl $init/$tag.mdl > $init/$tag.cmp 2>&1 && same=yes || same=NO
    rel=$(python3 -c "
import numpy as np; a = np.fromfile('$init/r1.acc'); b = np.fromfile('$init/$tag.acc')
print('%.2g' % np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-12 * np.abs(a).max())))" 2>/dev/null || echo -)
  fi
  local path; path=$(grep -o 'reduce [0-9.]* s ([a-z-]*)' $init/$tag.log | tail -1 | sed 's/.*(\(.*\))/\1/')
  [ "$tag" != r1 ] || { r1_whole=$whole; r1_iter=$(med $init/$tag.log wall); }
  echo "train gmm-train R=$R comm=$comm($path) whole_s=$whole iter_med_s=$(med $init/$tag.log wall)" \
    "estep_med_s=$(med $init/$tag.log E-step) reduce_med_s=$(med $init/$tag.log reduce) mstep_med_s=$(med $init/$tag.log M-step)" \
    "same_model_as_R1=$same accs_rel_diff=$rel"
  # where the fixed part of the whole job goes (rank 0's log): load (read, device ready), iterations 1 and 2
  # (model uploads, host M-steps where Gaussians are removed), host M-steps in all
  local fx
  fx=$(awk '/loaded and uploaded in/ { for (i = 1; i <= NF; i++) { if ($i == "in" && $(i+2) == "s") l = $(i+1); if ($i == "(read") r = $(i+1); if ($i == "at") d = $(i+1) } }
      /iteration [0-9]+: avg loglike/ { it = 0; for (i = 1; i <= NF; i++) if ($i == "iteration") it = $(i+1) + 0
        for (i = 1; i < NF; i++) if ($i == "wall") w = $(i+1) + 0
        if (it == 1) w1 = w; if (it == 2) w2 = w; if ($0 ~ /\(host\), wall/) h++ }
      END { printf "load_s=%s read_s=%s device_ready_s=%s it1_s=%s it2_s=%s host_msteps=%d", l, r, d, w1, w2, h }' $init/$tag.log)
  echo "train fixed R=$R comm=$comm $fx"
}
for R in $ranks; do
  if [ $R -eq 1 ]; then
    run_train 1 none r1
  else
    run_train $R mpi r${R}mpi
    [ "$device" = cpu ] || run_train $R auto r${R}auto
  fi
done
# one reduction of 1.8 MB and 450 MB (225 MB in float) of accumulators, MPI host path and NCCL
for R in $ranks; do
  [ $R -gt 1 ] || continue
  ( cd "$root" && make -s build/bench/bench-comm.o build/libgmmhmm-drivers.a build/libgmmhmm-kernels.a build/libgmmhmm.a &&
    cc -fopenmp -o build/bench/bench-comm build/bench/bench-comm.o -Wl,--start-group build/libgmmhmm-kernels.a \
      build/libgmmhmm.a -Wl,--end-group $(make -s print-ldlibs) ) || { echo "train.sh: bench-comm did not build" >&2; continue; }
  mpirun -np $R --bind-to none --oversubscribe "$root/build/bench/bench-comm" --device=$device --iters=10 \
    2> $init/comm$R.log | sed 's/^comm/train comm/' || echo "train comm R=$R: failed ($work/$init/comm$R.log)"
done
if [ "$peer" = true ] && [ "$device" != cpu ]; then
  if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && [ -f $shared/peers/e2e_job.py ]; then
    t0=$(now)
    j=$(OUT=$work python3 $shared/peers/e2e_job.py $syn/feats.scp $gauss full $iters 2>/dev/null | tail -1)
    echo "train peer e2e_job.py whole_s=$(since $t0) $j"
    # the ratios: gmm-train (1 rank) whole job against the peer's total_s, per iteration against em_s_per_iter
    if [ -n "${r1_whole:-}" ]; then
      python3 -c "
import json, sys
p = json.loads(sys.argv[1]); w, it = float(sys.argv[2]), sys.argv[3]
print('train ratio R=1 vs peer: whole_job %.2fx (peer total_s %.3f / %.3f s)' % (p['total_s'] / w, p['total_s'], w)
      + ('' if it == '-' else ', per_iteration %.2fx (%.4f / %s s)' % (p['em_s_per_iter'] / float(it), p['em_s_per_iter'], it)))
" "$j" "$r1_whole" "$r1_iter" 2>/dev/null || echo "train ratio R=1 vs peer: - (no peer figures)"
    fi
  else
    echo "train peer e2e_job.py: skipped (no CUDA torch or no $shared/peers/e2e_job.py)"
  fi
fi
