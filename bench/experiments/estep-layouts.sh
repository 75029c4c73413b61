#!/bin/bash
# Run on the GPU machine from the repository root (OUT: a folder for the logs).  Builds the
# E-step as measured (kernels/cuda/cuda-gemm.cu of commit 9c30882, before the split-K rule; the
# patch applies to it) and its K-major variant (estep-kmajor.patch), times both (bench-em) and
# prints per-kernel times (ncu); restores kernels/cuda/cuda-gemm.cu at the end (an experiment not
# kept; its figures are in the git history of doc/perf.md).  base = frame-major statistics operands; kmajor = the patch.
set -u
git show 9c30882:kernels/cuda/cuda-gemm.cu > kernels/cuda/cuda-gemm.cu || exit 1
summ() { python3 - "$1" <<'PY'
import sys,re
name=None
for l in open(sys.argv[1]):
    m=re.match(r"\s+(\S.*?) \((\d+, \d+, \d+)\)x\((\d+, \d+, \d+)\), Device 0, CC 9.0, Invocations (\d+)",l)
    if m: name=m.group(1)[:60]; inv=int(m.group(4)); continue
    m=re.match(r"\s+gpu__time_duration.sum\s+(\w+)\s+(\S+)\s+(\S+)\s+(\S+)",l)
    if m and name:
        u=m.group(1); avg=float(m.group(3).replace(',',''))
        ms=avg/1000 if u=='us' else avg if u=='ms' else avg/1e6
        print(f"  {name:60s} x{inv:2d} avg {ms:8.3f} ms"); name=None
PY
}
for v in base kmajor; do
  [ $v = kmajor ] && git apply bench/experiments/estep-kmajor.patch
  make -j16 build/libgmmhmm-drivers.a build/libgmmhmm-kernels.a build/libgmmhmm.a >${OUT:-/tmp}/build-$v.log 2>&1 || { tail -20 ${OUT:-/tmp}/build-$v.log; exit 1; }
  make -s build/bench/bench-em.o && cc -o build/bench/bench-em build/bench/bench-em.o build/libgmmhmm-drivers.a build/libgmmhmm-kernels.a build/libgmmhmm.a -fopenmp $(make -s print-ldlibs) || exit 1
  for a in "--type=full --frames=262144 --dim=40 --gauss=1024" "--type=full --frames=500000 --dim=36 --gauss=128"; do
    build/bench/bench-em --device=cuda --iters=3 --check=1024 $a 2>&1 | grep '^em' | sed -E 's/GFLOP.*stats err (\S+).*/stats \1/' | cut -c1-170
    f=${OUT:-/tmp}/ncu-$v-$(echo $a | tr -dc 0-9 | cut -c1-12).log
    timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel build/bench/bench-em --device=cuda --iters=1 --check=0 $a > $f 2>&1
    echo "$v $a"; summ $f
  done
done
git checkout kernels/cuda/cuda-gemm.cu
