#!/usr/bin/env bash
# bench/run.sh -- `make bench`: the speed of the GMM E-step (one EM iteration)
# and scoring against peers measured in the same run on the same GPU, and the
# error of each against float64.  Every configuration tried is printed, then
# one table (bench/table.py) of the default configuration against the peers.
#   ceilings   bench/peers/ceilings.py: copy bandwidth, SGEMM fp32 / TF32
#   EM         build/bench/bench-em (gmm-est-gpu's iteration: resident frames and
#              model, E-step and M-step on the GPU) at these shapes:
#              full N=150k D=19 M=16; full 500k D=36 M=128; UBM 1 x 1024 full
#              and 1 x 2048 diag at N=262,144, D=40; each with --precision
#              auto / fp32 / tf32x3, the fused kernels (GH_CUDA_ESTEP=fused)
#              and the M-step on the host (GH_MSTEP=host: the code before the
#              device M-step)
#              peers: bench/peers/gemm_em_peer.py (PyTorch GEMM EM, fp32),
#              bench/peers/sklearn_em_peer.py (scikit-learn, all cores; the
#              smallest shape: 500k x 128 took 32 s per iteration)
#   CPU        the CPU BLAS backend (bench-em --device=cpu, all cores) against
#              the PyTorch CPU version of the same math (gemm_em_peer.py
#              --device cpu, all cores) at the EM shapes with fewer frames
#              (CPU_SHAPES); CPU_ONLY=1 runs only this part (no GPU needed)
#   scoring    build/bench/bench-score: 5000 x 16 full and 5000 x 256 diag
#              (D=36, FRAMES frames), 1 x 1024 full and 1 x 2048 diag (D=40,
#              UBM_FRAMES frames); default, fused, GEMM fp32, GEMM tf32x3
#              peer: bench/torch_peer.py (PyTorch GEMM + logsumexp, fp32)
#   HMM        build/bench/bench-hmm: hmm_forward (log, scaled) and hmm_viterbi
#              on a dense HMM at the PyTorch peer's shapes, 512 states x 512
#              sequences x 100 frames and 4096 x 256 x 100 (dense batched
#              path), 512 x 512 x 100 with the sparse kernels
#              (GH_CUDA_HMM=sparse) and with ragged lengths (100..50); the
#              scaled forward at --precision=fp32, tf32x3 and tf32; one
#              utterance of 50,000 frames on 64 states (the time-parallel
#              forward, and the sequential kernels with GH_CUDA_HMM=sparse)
#              peer: bench/peers/hmm_peer.py (the HMM forward of
#              ../shared/peers/torch_scoring_hmm_peer.py, fp32)
#              HMM_ONLY=1 runs only this part
#   recipe     bench/recipe.sh: the Arabic-digit recipe's GMM and HMM-GMM
#              trainings end to end, seconds per iteration, on DEVICE and on
#              the CPU backend (RECIPE=0 skips); bench/recipe-profile.sh:
#              the whole recipe (all stages) on DEVICE and on the CPU
#              backend, with seconds per tool ($GH_ACCOUNTING)
#   train      bench/train.sh: the whole GMM training job (2M x 40, 512 full,
#              20 iterations): gmm-train at 1 rank (and 2 where there are 2
#              GPUs, MPI and NCCL reductions) against ../shared/peers/e2e_job.py
#              and gmm-est-gpu, same run (TRAIN=0 skips)
#   real       bench/realspeech.sh: gmm-train on real speech (the Arabic-digit
#              training MFCCs + deltas replicated 8x, 2.1 M frames; FSDD MFCCs)
#              beside generated features of the same shape, 512 full and 2,048
#              diagonal Gaussians, 20 iterations, against ../shared/peers/e2e_job.py
#              on the same feats.scp; frames/s, candidates per frame and the
#              share of pairs on each arithmetic path (REAL=0 skips)
#   UBM        bench/ubm.sh: Kaldi's sid UBM loop (train_diag_ubm.sh +
#              train_full_ubm.sh calls, egs/fsdd/local/sid_ubm.sh) on FSDD,
#              against Kaldi's 12.7 s on 2 CPU cores, and on 36M replicated
#              frames (UBM=0 skips; UBM_BIG=0 skips the 36M run)
#   I/O        bench/io.sh: gmm-score-gpu end to end vs its own kernel time on
#              1M-frame archives in the page cache (IO=0 skips)
#   init       bench/init.sh: gmm-init 2048 diag / 1024 full (--max-frames=30000)
#              on DEVICE and on the CPU, and gmm-est-gpu's floored M-step on the
#              2 M x 512 full job, device vs GH_MSTEP=host (INIT=0 skips)
#   Python     bench/python.sh: gmmhmm.GaussianMixture / GaussianHMM fit against
#              scikit-learn / hmmlearn (all cores), and the Python layer's
#              overhead over the tools (PYTHON=0 skips; CPU_ONLY=1: small sizes)
#   align      bench/align.sh: gmm-align-compiled on cathy replicated to
#              ALIGN_HOURS (24) hours, exact (the batched aligner on the device)
#              and beam modes, on DEVICE and on the CPU backend (ALIGN=0 skips;
#              CPU_ONLY=1 runs it on the CPU at 0.5 hours)
#   mono       bench/mono-train.sh: monophone training (gmm-train-mono, read ->
#              40 passes -> final.mdl) on cathy replicated to MONO_HOURS (24)
#              hours, then at 1 hour against steps/train_mono.sh --nj $(nproc)
#              on our tools, same run (MONO=0 skips)
#   tri        bench/tri-model.sh: gmm-train-tri --mono=true (mono then tri in one
#              process, 2,000 leaves, 10,000 Gaussians) on cathy replicated to
#              TRI_TRAIN_FRAMES (8,640,000 = 24 h; 0: cathy once), then that triphone
#              model's scoring, E-step (with the path shares) and alignment (beam, exact)
#              on cathy replicated to TRI_FRAMES (8,000,000) frames, with the PyTorch
#              peer (batched per-pdf GEMMs) in the same run (TRI=0 skips)
#   OpenCL     the scoring shapes on OpenCL (NVIDIA's driver on the GPU machine;
#              --device=opencl or OCL_DEVICE=opencl:P:D; OPENCL=0 skips), same run
# Where results go: everything to stdout and the log BENCH_LOG
# (build/bench/bench.log), then bench/table.py's table of the log. The current
# figures are kept in bench/RESULTS.md: a new measurement replaces its row
# there, with the command, the machine and the date.
# Options via the environment: DEVICE (default cuda), FRAMES (4096), ITERS
# (5), UBM_FRAMES (65536), BENCH_LOG (build/bench/bench.log), CPU_SHAPES
# ("type N D M;..."), OMP_NUM_THREADS (our CPU backend's threads).
set -uo pipefail
cd "$(dirname "$0")/.."
DEVICE=${DEVICE:-cuda}; FRAMES=${FRAMES:-4096}; ITERS=${ITERS:-5}; UBM_FRAMES=${UBM_FRAMES:-65536}
LOG=${BENCH_LOG:-build/bench/bench.log}
GH_SHARED=${GH_SHARED:-$(cd .. && pwd)/shared}
make -s build/libgmmhmm-drivers.a build/libgmmhmm-kernels.a build/libgmmhmm.a build/bench/bench-score.o build/bench/bench-em.o build/bench/bench-hmm.o || exit 1
LIBS="-fopenmp $(make -s print-ldlibs)" # the Makefile's link line: CUDA and OpenCL libraries where built
for p in bench-score bench-em bench-hmm; do
  cc -o build/bench/$p build/bench/$p.o build/libgmmhmm-drivers.a build/libgmmhmm-kernels.a build/libgmmhmm.a $LIBS || exit 1
done
mkdir -p "$(dirname "$LOG")"
E="build/bench/bench-em --device=$DEVICE --iters=3"
S="build/bench/bench-score --device=$DEVICE --iters=$ITERS --estep=0"
torch_ok=0
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && torch_ok=1
torch_cpu=0
python3 -c 'import torch' 2>/dev/null && torch_cpu=1
CPU_SHAPES=${CPU_SHAPES:-full 150000 19 16;full 100000 36 128;full 32768 40 1024;diag 65536 40 2048}
cpu_rows() {
  local peer="" shape
  IFS=';' read -ra shapes <<<"$CPU_SHAPES"
  for shape in "${shapes[@]}"; do
    set -- $shape
    build/bench/bench-em --device=cpu --iters=3 --type=$1 --frames=$2 --dim=$3 --gauss=$4 --check=2048 2>&1 | grep '^em'
    peer+="${peer:+;}$1,$2,$3,$4"
  done
  [ $torch_cpu = 1 ] && OUT=$(dirname "$LOG") python3 bench/peers/gemm_em_peer.py --device cpu --shapes "$peer"
}
recipe_rows() {
  [ "${RECIPE:-1}" = 0 ] && return 0
  local d
  for d in $(echo "$DEVICE cpu" | tr ' ' '\n' | awk '!seen[$0]++'); do DEVICE=$d GH_SHARED=$GH_SHARED bench/recipe.sh; done
  for d in $(echo "$DEVICE cpu" | tr ' ' '\n' | awk '!seen[$0]++'); do DEVICE=$d GH_SHARED=$GH_SHARED bench/recipe-profile.sh; done
}
if [ "${CPU_ONLY:-0}" = 1 ]; then
  DEVICE=cpu; { cpu_rows; [ "${IO:-1}" = 0 ] || DEVICE=cpu IO_FRAMES=${IO_FRAMES:-200000} bench/io.sh; recipe_rows
    [ "${PYTHON:-1}" = 0 ] || DEVICE=cpu SIZES=${SIZES:-20000x20} COMPS=${COMPS:-64} SEQS=${SEQS:-40} ITERS=5 bench/python.sh
    [ "${ALIGN:-1}" = 0 ] || GH_SHARED=$GH_SHARED bench/align.sh --device cpu --hours "${ALIGN_HOURS:-0.5}"; } 2>&1 | tee "$LOG"
  python3 bench/table.py "$LOG"
  exit 0
fi
H="build/bench/bench-hmm --device=$DEVICE --iters=$ITERS"
hmm_rows() {
  $H --states=512 --seqs=512 --frames=100 --check=4 2>&1 | grep '^hmm'
  $H --states=4096 --seqs=256 --frames=100 --check=1 2>&1 | grep '^hmm'
  GH_CUDA_HMM=sparse $H --states=512 --seqs=512 --frames=100 --check=0 2>&1 | grep '^hmm'
  $H --states=512 --seqs=512 --frames=100 --check=4 --ragged=1 2>&1 | grep '^hmm' | sed 's/^hmm /hmm ragged /'
  # one long utterance on a small graph: the time-parallel forward, Viterbi and forward-backward
  # against the sequential kernels (whose fb takes 4.4 s a call here: one timed call)
  $H --states=64 --seqs=1 --frames=50000 --check=1 --ops=log,viterbi,fb 2>&1 | grep '^hmm' | sed 's/^hmm /hmm long /'
  GH_CUDA_HMM=sparse $H --states=64 --seqs=1 --frames=50000 --check=1 --ops=log,viterbi 2>&1 | grep '^hmm' | sed 's/^hmm /hmm long /'
  GH_CUDA_HMM=sparse $H --states=64 --seqs=1 --frames=50000 --check=1 --ops=fb --iters=1 2>&1 | grep '^hmm' | sed 's/^hmm /hmm long /'
  for p in fp32 tf32x3 tf32; do  # the scaled forward's products (auto: tf32x3 from 1024 states)
    $H --states=512 --seqs=512 --frames=100 --check=4 --ops=scaled --precision=$p 2>&1 | grep '^hmm'
    $H --states=4096 --seqs=256 --frames=100 --check=1 --ops=scaled --precision=$p 2>&1 | grep '^hmm'
  done
  [ $torch_ok = 1 ] && python3 bench/peers/hmm_peer.py 512 512 100 4096 256 100
}
if [ "${HMM_ONLY:-0}" = 1 ]; then
  hmm_rows 2>&1 | tee "$LOG"
  python3 bench/table.py "$LOG"
  exit 0
fi
{
  [ $torch_ok = 1 ] && python3 bench/peers/ceilings.py
  hmm_rows
  for shape in "full 150000 19 16 16384" "full 500000 36 128 4096" "full 262144 40 1024 1024" "diag 262144 40 2048 2048"; do
    set -- $shape
    for prec in auto fp32 tf32x3; do
      $E --type=$1 --frames=$2 --dim=$3 --gauss=$4 --check=$5 --precision=$prec 2>&1 | grep '^em'
    done
    GH_CUDA_ESTEP=fused $E --type=$1 --frames=$2 --dim=$3 --gauss=$4 --check=0 2>&1 | grep '^em'
    GH_MSTEP=host $E --type=$1 --frames=$2 --dim=$3 --gauss=$4 --check=0 2>&1 | grep '^em'
  done
  cpu_rows
  [ $torch_ok = 1 ] && OUT=$(dirname "$LOG") python3 bench/peers/gemm_em_peer.py
  if python3 -c 'import sklearn' 2>/dev/null; then
    timeout 300 python3 bench/peers/sklearn_em_peer.py full 150000 19 16
  fi
  for shape in "full 5000 16 36 $FRAMES" "diag 5000 256 36 $FRAMES" "full 1 1024 40 $UBM_FRAMES" "diag 1 2048 40 $UBM_FRAMES"; do
    set -- $shape
    a="--type=$1 --pdfs=$2 --gauss=$3 --dim=$4 --frames=$5"
    $S $a 2>&1 | grep '^score'
    GH_CUDA_SCORE=fused $S $a 2>&1 | grep '^score'
    for prec in fp32 tf32x3; do GH_CUDA_SCORE=gemm $S $a --precision=$prec 2>&1 | grep '^score'; done
  done
  # OpenCL rows, same shapes, same run (Vaněk et al. 2012b compared CUDA and OpenCL so).
  # A failure here does not stop the run.
  if [ "${OPENCL:-1}" != 0 ] && make -s print-ldlibs | grep -q OpenCL; then
    OCL=${OCL_DEVICE:-opencl}
    for shape in "full 5000 16 36 $FRAMES" "diag 5000 256 36 $FRAMES" "full 1 1024 40 $UBM_FRAMES" "diag 1 2048 40 $UBM_FRAMES"; do
      set -- $shape
      build/bench/bench-score --device="$OCL" --iters=$ITERS --type=$1 --pdfs=$2 --gauss=$3 --dim=$4 --frames=$5 2>&1 | grep '^score' ||
        echo "opencl $1 $2 x $3: failed"
    done
    echo "-- full-covariance shapes on our SGEMM with the 64 x 64 tile only (GH_OPENCL_GEMM=own GH_OPENCL_SGEMM=64) --"
    GH_OPENCL_GEMM=own GH_OPENCL_SGEMM=64 build/bench/bench-score --device="$OCL" --iters=$ITERS --type=full --pdfs=5000 --gauss=16 --dim=36 --frames=$FRAMES --estep=0 2>&1 | grep '^score' || echo "opencl full 5000x16 (64 tile): failed"
    GH_OPENCL_GEMM=own GH_OPENCL_SGEMM=64 build/bench/bench-score --device="$OCL" --iters=$ITERS --type=full --pdfs=1 --gauss=1024 --dim=40 --frames=$UBM_FRAMES --estep=0 2>&1 | grep '^score' || echo "opencl UBM full (64 tile): failed"
  fi
  [ $torch_ok = 1 ] && python3 bench/torch_peer.py --frames="$FRAMES" --iters="$ITERS" --ubm-frames="$UBM_FRAMES"
  [ "${IO:-1}" = 0 ] || DEVICE=$DEVICE GH_SHARED=$GH_SHARED bench/io.sh
  recipe_rows
  # the whole training job: gmm-train at 1 and 2 ranks against the PyTorch job (TRAIN=0 skips)
  if [ "${TRAIN:-1}" != 0 ]; then
    ng=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    GH_SHARED=$GH_SHARED bench/train.sh --device "$DEVICE" --ranks "$([ "$ng" -ge 2 ] && echo '1 2' || echo 1)" || echo "train: failed"
  fi
  # real speech beside generated features of the same shape, with the PyTorch job (REAL=0 skips)
  [ "${REAL:-1}" = 0 ] || GH_SHARED=$GH_SHARED bench/realspeech.sh --device "$DEVICE" || echo "real: failed"
  [ "${UBM:-1}" = 0 ] || DEVICE=$DEVICE GH_SHARED=$GH_SHARED bench/ubm.sh
  [ "${INIT:-1}" = 0 ] || DEVICE=$DEVICE bench/init.sh
  [ "${PYTHON:-1}" = 0 ] || DEVICE=$DEVICE bench/python.sh
  [ "${ALIGN:-1}" = 0 ] || GH_SHARED=$GH_SHARED bench/align.sh --device "$DEVICE" --hours "${ALIGN_HOURS:-24}" || echo "align: failed"
  if [ "${MONO:-1}" != 0 ]; then
    GH_SHARED=$GH_SHARED bench/mono-train.sh --device "$DEVICE" --hours "${MONO_HOURS:-24}" --script false ||
      echo "mono-train: failed"
    GH_SHARED=$GH_SHARED bench/mono-train.sh --device "$DEVICE" --hours 1 --nj "$(nproc)" || echo "mono-train: failed"
  fi
  [ "${TRI:-1}" = 0 ] || GH_SHARED=$GH_SHARED bench/tri-model.sh --device "$DEVICE" --frames "${TRI_FRAMES:-8000000}" \
    --train-frames "${TRI_TRAIN_FRAMES:-8640000}" ||
    echo "tri-model: failed"
  if [ -x bin/gmm-score-gpu ] && [ -f "$GH_SHARED/data/kaldi-fixtures/ami-full16.fgmm" ]; then
    bin/gmm-score-gpu --device="$DEVICE" "$GH_SHARED/data/kaldi-fixtures/ami-full16.fgmm" \
      "ark:$GH_SHARED/data/kaldi-ami-feats/feats.ark" ark:/dev/null
  fi
} 2>&1 | tee "$LOG"
python3 bench/table.py "$LOG"
echo "bench/run.sh: log in $LOG; the current figures are kept in bench/RESULTS.md (a new measurement replaces its row there, with the command, machine and date)" >&2
