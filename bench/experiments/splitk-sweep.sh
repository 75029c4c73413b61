#!/bin/bash
# The statistics GEMM's split-K slice count against the E-step time (bench/RESULTS.md
# D2): GH_CUDA_ESTEP_SLICES=k sets the largest number of slices (the rule:
# kernels/cuda/cuda-gemm.cu GG_MIN_SLICES).
# Run on the GPU machine from the repository root; OUT: a folder for the logs.
make -j16 build/libgmmhmm-drivers.a build/libgmmhmm-kernels.a build/libgmmhmm.a >${OUT:-/tmp}/build.log 2>&1 || { tail -20 ${OUT:-/tmp}/build.log; exit 1; }
make -s build/bench/bench-em.o && cc -o build/bench/bench-em build/bench/bench-em.o build/libgmmhmm-drivers.a build/libgmmhmm-kernels.a build/libgmmhmm.a -fopenmp $(make -s print-ldlibs) || exit 1
for a in "--type=full --frames=262144 --dim=40 --gauss=1024" "--type=full --frames=500000 --dim=36 --gauss=128" "--type=diag --frames=262144 --dim=40 --gauss=2048"; do
  for k in default 1 2 3 5 8 12 20; do
    if [ $k = default ]; then unset GH_CUDA_ESTEP_SLICES; else export GH_CUDA_ESTEP_SLICES=$k; fi
    echo -n "splitk=$k "; build/bench/bench-em --device=cuda --iters=3 --check=1024 $a 2>&1 | grep '^em' | sed -E 's/GFLOP.*stats err (\S+).*/stats \1/' | cut -c1-170
  done
done
