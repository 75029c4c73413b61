#!/usr/bin/env bash
# bench/opencl-startup.sh -- what the OpenCL program binary cache saves at tool
# start-up: wall time of `gmm-score-gpu --device=opencl` on the small AMI set
# (10 utterances, 2,395 frames, Kaldi's diag16 GMM), median of N runs, with
#   1. our cache ($XDG_CACHE_HOME/gmmhmm) warm (the default),
#   2. our cache off (GH_OPENCL_CACHE=0), the driver's own cache (PoCL's
#      kcache) warm,
#   3. our cache warm, PoCL's cache off (POCL_KERNEL_CACHE=0),
#   4. both off: every start compiles from source,
#   and --device=cpu for reference.  Usage: bench/opencl-startup.sh [N=5]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-5}
GH_SHARED=${GH_SHARED:-$(cd .. && pwd)/shared}
D=$GH_SHARED/data
run() {  # run <label> <env...>: median wall seconds of N runs
  local label=$1; shift
  local ts=()
  for _ in $(seq "$N"); do
    local t0 t1
    t0=$(date +%s.%N)
    env "$@" bin/gmm-score-gpu "${DEV:---device=opencl}" "$D/kaldi-fixtures/ami-diag16.gmm" \
      "ark:$D/kaldi-ami-feats/feats.ark" ark:/dev/null 2>/dev/null
    t1=$(date +%s.%N)
    ts+=("$(echo "$t1 - $t0" | bc)")
  done
  printf '%-52s %s s\n' "$label" "$(printf '%s\n' "${ts[@]}" | sort -n | sed -n "$(( (N + 1) / 2 ))p")"
}
bin/gmm-score-gpu --device=opencl "$D/kaldi-fixtures/ami-diag16.gmm" "ark:$D/kaldi-ami-feats/feats.ark" ark:/dev/null 2>&1 | grep 'using device'
run "our cache warm (default)"
run "our cache warm, built-in SGEMM (no CLBlast)" GH_OPENCL_GEMM=own
run "our cache off, driver cache warm, built-in SGEMM" GH_OPENCL_CACHE=0 GH_OPENCL_GEMM=own
run "our cache off, driver cache warm" GH_OPENCL_CACHE=0
run "our cache warm, PoCL cache off" POCL_KERNEL_CACHE=0
run "both off (compile every start)" GH_OPENCL_CACHE=0 POCL_KERNEL_CACHE=0
DEV=--device=cpu run "--device=cpu"
