#!/usr/bin/env bash
# bench/run.sh -- `make bench`: throughput of the GMM likelihood kernel.
#   1. seed 000's benchmark: 5,000 pdfs x 16 full-covariance Gaussians, D=36
#   2. seed 001's benchmark: 5,000 pdfs x 256 diagonal Gaussians, D=36
#   3. global UBMs (speaker ID / diarization): 1 pdf x 1024 full and 1 pdf x
#      2048 diagonal Gaussians, D=40, UBM_FRAMES frames per call
#   4. the same cases in PyTorch (bench/torch_peer.py), the peer
#   5. gmm-score-gpu end to end on the real AMI features (small; tool overhead)
#   6. the cases of 1-3 on OpenCL (--device=opencl or OCL_DEVICE; OPENCL=0 skips)
# Prints frames/s and GFLOP/s (Vaněk et al.'s flop count, see bench-score.c).
# Options via the environment: DEVICE (default auto), FRAMES (default 4096),
# ITERS (default 5), UBM_FRAMES (default 65536).
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE=${DEVICE:-auto}; FRAMES=${FRAMES:-4096}; ITERS=${ITERS:-5}
UBM_FRAMES=${UBM_FRAMES:-65536}
GH_SHARED=${GH_SHARED:-$(cd .. && pwd)/shared}
make -s build/libgmmhmm-kernels.a build/libgmmhmm.a build/bench/bench-score.o
LIBS="-llapacke -llapack -lblas -lz -lm"
NVCC=$(command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
if [ -n "$NVCC" ]; then LIBS="$LIBS -L$(dirname "$(dirname "$NVCC")")/lib64 -lcudart_static -lstdc++ -ldl -lpthread -lrt"; fi
LIBS=$(make -s print-ldlibs) # (the Makefile's link line: CUDA and OpenCL libraries where built)
cc -o build/bench/bench-score build/bench/bench-score.o build/libgmmhmm-kernels.a build/libgmmhmm.a $LIBS
./build/bench/bench-score --device="$DEVICE" --type=full --pdfs=5000 --gauss=16 --dim=36 --frames="$FRAMES" --iters="$ITERS"
./build/bench/bench-score --device="$DEVICE" --type=diag --pdfs=5000 --gauss=256 --dim=36 --frames="$FRAMES" --iters="$ITERS"
./build/bench/bench-score --device="$DEVICE" --type=full --pdfs=1 --gauss=1024 --dim=40 --frames="$UBM_FRAMES" --iters="$ITERS"
./build/bench/bench-score --device="$DEVICE" --type=diag --pdfs=1 --gauss=2048 --dim=40 --frames="$UBM_FRAMES" --iters="$ITERS"
# OpenCL rows, same shapes, same run (seed 001 compared CUDA and OpenCL so):
# NVIDIA's OpenCL on the GPU machine (--device=opencl picks the first OpenCL
# GPU; OCL_DEVICE=opencl:P:D to choose).  A failure here does not stop the run.
if [ "${OPENCL:-1}" != 0 ] && make -s print-ldlibs | grep -q OpenCL; then
  OCL=${OCL_DEVICE:-opencl}
  echo "== OpenCL ($OCL) =="
  ./build/bench/bench-score --device="$OCL" --type=full --pdfs=5000 --gauss=16 --dim=36 --frames="$FRAMES" --iters="$ITERS" || echo "opencl full 5000x16: failed"
  ./build/bench/bench-score --device="$OCL" --type=diag --pdfs=5000 --gauss=256 --dim=36 --frames="$FRAMES" --iters="$ITERS" || echo "opencl diag 5000x256: failed"
  ./build/bench/bench-score --device="$OCL" --type=full --pdfs=1 --gauss=1024 --dim=40 --frames="$UBM_FRAMES" --iters="$ITERS" || echo "opencl UBM full: failed"
  ./build/bench/bench-score --device="$OCL" --type=diag --pdfs=1 --gauss=2048 --dim=40 --frames="$UBM_FRAMES" --iters="$ITERS" || echo "opencl UBM diag: failed"
  echo "-- the same full-covariance shapes on our SGEMM with the 64 x 64 tile only (GH_OPENCL_GEMM=own GH_OPENCL_SGEMM=64) --"
  GH_OPENCL_GEMM=own GH_OPENCL_SGEMM=64 ./build/bench/bench-score --device="$OCL" --type=full --pdfs=5000 --gauss=16 --dim=36 --frames="$FRAMES" --iters="$ITERS" --estep=0 || echo "opencl full 5000x16 (64 tile): failed"
  GH_OPENCL_GEMM=own GH_OPENCL_SGEMM=64 ./build/bench/bench-score --device="$OCL" --type=full --pdfs=1 --gauss=1024 --dim=40 --frames="$UBM_FRAMES" --iters="$ITERS" --estep=0 || echo "opencl UBM full (64 tile): failed"
fi
# Peer in the same run on the same machine: PyTorch (GEMM + logsumexp, fp32).
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  python3 bench/torch_peer.py --frames="$FRAMES" --iters="$ITERS" --ubm-frames="$UBM_FRAMES"
else
  echo "torch-peer: skipped (no PyTorch with CUDA here)"
fi
if [ -x bin/gmm-score-gpu ] && [ -f "$GH_SHARED/data/kaldi-fixtures/ami-full16.fgmm" ]; then
  bin/gmm-score-gpu --device="$DEVICE" "$GH_SHARED/data/kaldi-fixtures/ami-full16.fgmm" \
    "ark:$GH_SHARED/data/kaldi-ami-feats/feats.ark" ark:/dev/null
fi
