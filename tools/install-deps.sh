#!/usr/bin/env bash
# Installs what gmmhmm needs to build and test on Debian/Ubuntu:
# C toolchain, zlib, LAPACKE/OpenBLAS, libsndfile, FFTW, Bats, Open MPI, Slurm + munge (a test
# cluster), and Python's numpy +
# scikit-learn + kaldiio + kaldi-native-fbank + hmmlearn (independent references used by the
# tests and the recipe's baseline), this checkout's Python package gmmhmm (python/) and pytest, matplotlib (the recipes' pictures), help2man and
# pkg-config (make install's man pages, the install test).
# CUDA (nvcc) is optional: without it the CUDA backend is not built.
# OpenCL: headers, the ICD loader, PoCL and CLBlast (the OpenCL backend and its tests).
# Idempotent: installs only what is missing.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=$(command -v sudo || true); fi

need=()
command -v gcc >/dev/null || need+=(build-essential)
command -v make >/dev/null || need+=(make)
[ -f /usr/include/zlib.h ] || need+=(zlib1g-dev)
[ -f /usr/include/sndfile.h ] || need+=(libsndfile1-dev)
[ -f /usr/include/fftw3.h ] || need+=(libfftw3-dev)
[ -f /usr/include/lapacke.h ] || [ -f /usr/include/x86_64-linux-gnu/lapacke.h ] || need+=(liblapacke-dev libopenblas-dev)
# OpenBLAS (threaded; cblas.h): the CPU backend's GEMMs (kernels/cpu/cpu-blas.c) and LAPACK.
dpkg -s libopenblas-dev >/dev/null 2>&1 || need+=(libopenblas-dev)
command -v bats >/dev/null || need+=(bats)
command -v gzip >/dev/null || need+=(gzip)
# flac: test/bats/compressed.bats makes FLAC copies of recordings (the FSDD recipe reads either form).
command -v flac >/dev/null || need+=(flac)
command -v python3 >/dev/null || need+=(python3)
# A one-node Slurm cluster for test/bats/slurm.bats (utils/slurm.sh).
[ -x /usr/sbin/slurmctld ] || command -v slurmctld >/dev/null || need+=(slurm-wlm)
[ -x /usr/sbin/munged ] || command -v munged >/dev/null || need+=(munge)
# OpenCL: headers + ICD loader (build), PoCL (a CPU OpenCL device, so CI tests
# --device=opencl without a GPU), CLBlast (optional GEMMs; the build works without).
[ -f /usr/include/CL/cl.h ] || need+=(opencl-c-headers)
[ -e /usr/lib/x86_64-linux-gnu/libOpenCL.so ] || [ -e /usr/lib64/libOpenCL.so ] || need+=(ocl-icd-opencl-dev)
ls /etc/OpenCL/vendors/pocl*.icd >/dev/null 2>&1 || need+=(pocl-opencl-icd)
[ -f /usr/include/clblast_c.h ] || need+=(libclblast-dev)
# Open MPI: the distributed trainers (drivers/train/comm.c, gmm-train under mpirun / srun)
# and test/bats/train-mpi.bats.
command -v mpicc >/dev/null || need+=(libopenmpi-dev)
command -v mpirun >/dev/null || need+=(openmpi-bin)
# clang: libFuzzer harnesses (test/fuzz/, run by make test); its runtimes are in
# libclang-common-*-dev (a clang dependency) or, on newer releases, libclang-rt-*-dev.
command -v clang >/dev/null || need+=(clang)
# help2man: make install's man pages (from each tool's --help); pkg-config: the
# install test builds a program against the installed tree with it.
command -v help2man >/dev/null || need+=(help2man)
command -v pkg-config >/dev/null || need+=(pkg-config)
# OpenFst's command-line tools (fstcompile, fstarcsort, fstprint, fstinfo): test/bats/lang.bats
# compares our FST files with OpenFst's and runs Kaldi's prepare_lang.sh with them (skipped
# without); the tools themselves never need OpenFst.
[ -x /usr/bin/fstcompile ] || need+=(libfst-tools)

# matplotlib: the recipes' pictures (egs/utils/plot_results.py: loglike.png, confusion.png).
py_ok() { python3 -c 'import numpy, sklearn, kaldiio, kaldi_native_fbank, hmmlearn, matplotlib, praatio' >/dev/null 2>&1; }
# Debian's python3 (already there, or installed now) takes numpy/scikit-learn from apt.
if ! command -v python3 >/dev/null || { ! py_ok && [ "$(command -v python3)" = /usr/bin/python3 ]; }; then
  need+=(python3-numpy python3-sklearn python3-matplotlib)
fi

if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
if ! py_ok; then
  # kaldiio (and, for a non-system python3, numpy/scikit-learn) come from PyPI.
  # On Debian's own python3, pip needs --break-system-packages (PEP 668).
  command -v pip3 >/dev/null || python3 -m pip --version >/dev/null 2>&1 || \
    { $SUDO apt-get update -qq; $SUDO apt-get install -y -qq python3-pip >/dev/null; }
  flags=""
  python3 -m pip install --help 2>/dev/null | grep -q break-system-packages && \
    [ "$(command -v python3)" = /usr/bin/python3 ] && flags="--break-system-packages"
  echo "install-deps: pip install numpy scikit-learn kaldiio kaldi-native-fbank hmmlearn matplotlib praatio" >&2
  python3 -m pip install -q $flags numpy scikit-learn kaldiio kaldi-native-fbank hmmlearn matplotlib praatio
fi
# libFuzzer runtime: with clang from bookworm it is libclang-rt-<version>-dev.
fuzz_ok() {
  local t; t=$(mktemp -d)
  echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' > "$t/f.c"
  clang -fsanitize=fuzzer "$t/f.c" -o "$t/f" >/dev/null 2>&1; local rc=$?
  rm -rf "$t"; return $rc
}
if command -v clang >/dev/null && ! fuzz_ok; then
  v=$(clang -dumpversion | cut -d. -f1)
  echo "install-deps: apt-get install libclang-rt-$v-dev" >&2
  $SUDO apt-get install -y -qq "libclang-rt-$v-dev" >/dev/null || true
fi
py_ok || { echo "install-deps: numpy/scikit-learn/kaldiio/kaldi-native-fbank/hmmlearn/matplotlib still not importable by python3" >&2; exit 1; }
# The checkout's Python package gmmhmm (python/: test/bats/python.bats) and pytest, which its tests run under.
root=$(cd "$(dirname "$0")/.." && pwd)
if ! python3 -c 'import gmmhmm, pytest' >/dev/null 2>&1; then
  flags=""
  python3 -m pip install --help 2>/dev/null | grep -q break-system-packages && \
    [ "$(command -v python3)" = /usr/bin/python3 ] && flags="--break-system-packages"
  echo "install-deps: pip install pytest $root/python" >&2
  python3 -m pip install -q $flags pytest "$root/python"
fi
echo "install-deps: ok" >&2
