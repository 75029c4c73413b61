# gmmhmm -- GNU Make build.
#   make            build every tool into bin/
#   make deps       install build/test dependencies (Debian: apt-get, pip)
#   make test       C unit tests + Bats tool tests (CPU; no GPU needed)
#   make test-gpu   CUDA-vs-CPU and OpenCL-vs-CPU checks (run on a machine with an NVIDIA GPU)
#   make bench      benchmarks (GPU)
#   make install PREFIX=/usr/local
#
# ---- Layers (doc/DESIGN.md), bottom to top: three archives, linked
# drivers -> kernels -> lib, each calling only the ones after it.
#   lib/      build/libgmmhmm.a          host code: formats, models, numerics
#   kernels/  build/libgmmhmm-kernels.a  backend.h, the backends, the registry
#   drivers/  build/libgmmhmm-drivers.a  the loops that drive a backend
#   tools/    one main per binary
# Which folders each folder may include: its own and those named here, and
# what they may include in turn.  Written once, here; test/check-layers.sh
# reads these LAYER lines and fails on any other `#include "..."` and on
# any cycle between folders.  A new folder gets its line before its files.
#LAYER lib/base:
#LAYER lib/io: lib/base
#LAYER lib/feat: lib/io
#LAYER lib/tree: lib/io
#LAYER lib/lang: lib/io
#LAYER lib/hmm: lib/io lib/tree
#LAYER lib/decoder: lib/hmm
#LAYER lib/gmm: lib/hmm
#LAYER kernels: lib/gmm lib/feat
#LAYER kernels/cpu: kernels
#LAYER kernels/cuda: kernels
#LAYER kernels/opencl: kernels
#LAYER kernels/registry: kernels/cpu kernels/cuda kernels/opencl
#LAYER drivers/gmm: kernels/registry
#LAYER drivers/train: drivers/gmm drivers/align
#LAYER drivers/adapt: drivers/train
#LAYER drivers/align: kernels/registry lib/decoder
#LAYER tools: drivers/adapt drivers/align lib/decoder lib/lang
PREFIX ?= /usr/local
CC ?= gcc
CFLAGS ?= -O2 -g
# "override": a CFLAGS given on the command line adds to these (flags the build
# needs are appended with "override CFLAGS +=" so `make CFLAGS=...` keeps them).
override CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Ilib -Ikernels -Idrivers -MMD -MP
LDLIBS := -llapacke -llapack -lblas -lz -lm

# Audio input (lib/feat/wav.c) needs libsndfile, the FFT (lib/feat/feat.c) FFTW.  Without
# libsndfile's header the tools still build and reading audio is a clear error at
# run time (the GPU machine has no libsndfile); FFTW is required.
SNDFILE_H := $(wildcard /usr/include/sndfile.h /usr/local/include/sndfile.h)
ifneq ($(SNDFILE_H),)
LDLIBS += -lsndfile
else
override CFLAGS += -DGH_NO_SNDFILE
endif
LDLIBS += -lfftw3
# OpenMP: the host M-step's per-Gaussian inverses (lib/gmm/gmm.c, plain loops) on all cores.
override CFLAGS += -fopenmp

NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_HOME ?= $(if $(NVCC),$(patsubst %/bin/nvcc,%,$(NVCC)),)
NVCCFLAGS ?= -O3 -lineinfo
# sm_90a (the warpgroup-MMA kernels of kernels/cuda/cuda-wg.cu) from CUDA 12.0
# on; an older toolkit (Debian bookworm's 11.8) builds sm_90 without them.
NVCC_MAJOR := $(if $(NVCC),$(shell $(NVCC) --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p'),0)
comma := ,
NVCC_SM90 := $(if $(filter 1 2 3 4 5 6 7 8 9 10 11,$(NVCC_MAJOR)),arch=compute_90$(comma)code=sm_90,arch=compute_90a$(comma)code=sm_90a)
NVCC_GENCODE := $(NVCC_SM90) arch=compute_90$(comma)code=compute_90
# GH_CUDA_ARCHS: the code= values ("sm_90a compute_90"), for the device check
# at start-up (kernels/cuda/cuda.cu: a GPU the build has no code for is refused).
NVCCFLAGS += -std=c++17 -Ilib -Ikernels -Idrivers -Ikernels/cuda -MMD -MP -Xcompiler -Wall \
  $(foreach g,$(NVCC_GENCODE),-gencode $(g)) \
  -DGH_CUDA_ARCHS='"$(foreach g,$(NVCC_GENCODE),$(lastword $(subst =, ,$(g))))"'

B ?= build
BIN ?= bin
LIB_SRC := $(wildcard lib/*/*.c)
DRV_SRC := $(wildcard drivers/*/*.c)
KER_SRC := $(wildcard kernels/*.c kernels/cpu/*.c kernels/registry/*.c)
CU_SRC  := $(if $(NVCC),$(wildcard kernels/cuda/*.cu),)
TOOL_SRC := $(wildcard tools/*.c)
UNIT_SRC := $(wildcard test/unit/*.c)

LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
DRV_OBJ := $(DRV_SRC:%.c=$(B)/%.o)
KER_OBJ := $(KER_SRC:%.c=$(B)/%.o) $(CU_SRC:%.cu=$(B)/%.cu.o)
TOOLS := $(TOOL_SRC:tools/%.c=$(BIN)/%)
UNITS := $(UNIT_SRC:test/unit/%.c=$(B)/test/%)

ifneq ($(NVCC),)
override CFLAGS += -DGH_HAVE_CUDA
LDLIBS += -L$(CUDA_HOME)/lib64 -lcudart_static -lstdc++ -ldl -lpthread -lrt
endif

# OpenCL (kernels/opencl/): built when CL/cl.h and an ICD loader (libOpenCL) are
# present, left out otherwise (as CUDA is).  The OpenCL C sources are embedded
# as one string (cl-source.c).  CLBlast is optional: without it the backend
# uses its own SGEMM kernel.
OPENCL_H := $(wildcard /usr/include/CL/cl.h /usr/local/include/CL/cl.h)
OPENCL_H += $(if $(CUDA_HOME),$(wildcard $(CUDA_HOME)/include/CL/cl.h),)
OPENCL_LIB ?= $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/libOpenCL.so /usr/lib64/libOpenCL.so \
  /usr/local/lib/libOpenCL.so /usr/lib/x86_64-linux-gnu/libOpenCL.so.1 /usr/lib64/libOpenCL.so.1 \
  $(if $(CUDA_HOME),$(CUDA_HOME)/lib64/libOpenCL.so,)))
CLBLAST_H := $(wildcard /usr/include/clblast_c.h /usr/local/include/clblast_c.h)
# MPI (drivers/train/comm.c: the distributed trainers, gmm-train): built when mpicc is
# present (its --showme flags give mpi.h's directory and the library), left out
# otherwise as CUDA and OpenCL are.  --as-needed: only the tools that use the
# communicator load libmpi; a plain run of them never calls MPI_Init.
MPICC ?= $(shell command -v mpicc 2>/dev/null)
MPI_LIBS := $(if $(MPICC),$(shell $(MPICC) --showme:link 2>/dev/null),)
ifneq ($(MPI_LIBS),)
override CFLAGS += -DGH_HAVE_MPI $(shell $(MPICC) --showme:compile 2>/dev/null)
LDLIBS += -Wl,--as-needed $(MPI_LIBS) -Wl,--no-as-needed
endif
LINK_LIBS = $(B)/libgmmhmm-drivers.a $(B)/libgmmhmm-kernels.a $(B)/libgmmhmm.a
.DEFAULT_GOAL := all
ifneq ($(and $(OPENCL_H),$(OPENCL_LIB)),)
CL_SRC := $(sort $(wildcard kernels/opencl/*.cl))
KER_OBJ += $(patsubst %.c,$(B)/%.o,$(wildcard kernels/opencl/*.c)) $(B)/kernels/opencl/cl-source.o
override CFLAGS += -DGH_HAVE_OPENCL $(if $(wildcard /usr/include/CL/cl.h /usr/local/include/CL/cl.h),,-I$(CUDA_HOME)/include)
ifneq ($(CLBLAST_H),)
override CFLAGS += -DGH_HAVE_CLBLAST
LDLIBS += -lclblast
endif
LDLIBS += $(OPENCL_LIB)
endif
$(B)/kernels/opencl/cl-source.c: $(CL_SRC)
	@mkdir -p $(@D)
	{ echo '/* generated by the Makefile from $^ */'; echo 'const char gh_opencl_source[] ='; \
	  for f in $^; do sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $$f; done; echo ';'; } > $@
$(B)/kernels/opencl/cl-source.o: $(B)/kernels/opencl/cl-source.c
	$(CC) $(CFLAGS) -c $< -o $@

all: $(TOOLS)

$(B)/libgmmhmm.a: $(LIB_OBJ)
	@mkdir -p $(@D); rm -f $@; ar rcs $@ $^
$(B)/libgmmhmm-kernels.a: $(KER_OBJ)
	@mkdir -p $(@D); rm -f $@; ar rcs $@ $^
$(B)/libgmmhmm-drivers.a: $(DRV_OBJ)
	@mkdir -p $(@D); rm -f $@; ar rcs $@ $^

$(B)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@
$(B)/%.cu.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -DGH_HAVE_CUDA -c $< -o $@

LIBS := $(B)/libgmmhmm-drivers.a $(B)/libgmmhmm-kernels.a $(B)/libgmmhmm.a
$(BIN)/%: $(B)/tools/%.o $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(LINK_LIBS) $(LDLIBS)

$(B)/test/%: $(B)/test/unit/%.o $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(LINK_LIBS) $(LDLIBS)

deps:
	./tools/install-deps.sh

units: $(UNITS)

# ---- Hardening (doc/reliability.md): sanitizer build + whole suite, fuzzing.
# Separate build dirs; CUDA is not built (NVCC=).  Sanitizer reports go to
# files under build-asan/san-logs, which test/run.sh counts as failures.
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
asan-build:
	$(MAKE) B=build-asan BIN=bin-asan NVCC= CFLAGS="$(SAN_FLAGS)" all units
SAN_LOGS := $(CURDIR)/build-asan/san-logs
test-asan: asan-build
	rm -rf $(SAN_LOGS); mkdir -p $(SAN_LOGS)
	GH_SANITIZED=1 GH_HARDENING=0 GH_BIN=$(CURDIR)/bin-asan GH_BUILD=build-asan GH_SAN_LOGS=$(SAN_LOGS) \
	ASAN_OPTIONS=detect_leaks=1:log_path=$(SAN_LOGS)/asan \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$(SAN_LOGS)/ubsan ./test/run.sh

FUZZ_SECONDS ?= 60
FUZZ_SRC := $(wildcard test/fuzz/fuzz_*.c)
FUZZERS := $(FUZZ_SRC:test/fuzz/%.c=$(B)/fuzz/%)
$(B)/fuzz/%: test/fuzz/%.c test/fuzz/fuzz-common.h $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(LINK_LIBS) $(LDLIBS)
fuzzers: $(FUZZERS)
fuzz-build:
	$(MAKE) CC=clang B=build-fuzz BIN=bin-fuzz NVCC= CFLAGS="$(SAN_FLAGS) -fsanitize=fuzzer-no-link -DGH_IBUF_SIZE=4096" fuzzers
fuzz: fuzz-build all
	./test/fuzz/run.sh run $(FUZZ_SECONDS)
fuzz-regress: fuzz-build
	./test/fuzz/run.sh replay

test: all $(UNITS)
	./test/run.sh

test-gpu: all $(UNITS)
	./test/run-gpu.sh

bench: all
	./bench/run.sh

print-ldlibs:
	@echo $(LDLIBS)

# ---- make install: the tools; the three static archives (drivers, kernels,
# lib: link them in that order, as gmmhmm.pc's Libs does); the public headers
# under include/gmmhmm/ laid out as the compiler finds them with -Ilib
# -Ikernels -Idrivers (lib/<folder>/*.h and drivers/<folder>/*.h ->
# <folder>/*.h, kernels/backend.h -> backend.h, kernels/registry/registry.h ->
# registry/registry.h), so that their includes ("gmm/gmm.h", "backend.h",
# "train/gmm-data.h") work with -I$(PREFIX)/include/gmmhmm; the job launchers
# of the recipes (egs/utils: run.pl, slurm.pl, queue.pl, the run.sh and
# slurm.sh they call, launcher_args.sh) in share/gmmhmm/utils/, together, as
# the .pl wrappers find their siblings next to themselves; the pkg-config
# file gmmhmm.pc (static libraries only: link with pkg-config --static, which
# adds Libs.private: BLAS/LAPACKE, FFTW, sndfile, zlib, OpenMP, CUDA/OpenCL/MPI
# as built), which names libraries by -l and pkg-config modules only, never a
# path of the build machine: Open MPI through its module (mpi-c) when
# pkg-config knows it, the OpenCL loader as -lOpenCL, and CUDA's static
# runtime (libcudart_static.a, redistributable) installed in
# $(LIBDIR)/gmmhmm/ and found there through ${libdir}; man pages made from
# each tool's --help by help2man (left out with a message when help2man is
# missing).  test/bats/install.bats checks the installed tree.
VERSION ?= $(shell git describe --tags --always 2>/dev/null || echo 0)
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share/gmmhmm
PUBLIC_H := $(wildcard lib/*/*.h) kernels/backend.h kernels/registry/registry.h $(wildcard drivers/*/*.h)
LAUNCHERS := $(addprefix egs/utils/,run.pl slurm.pl queue.pl run.sh slurm.sh launcher_args.sh)
CUDART_A := $(if $(NVCC),$(wildcard $(CUDA_HOME)/lib64/libcudart_static.a),)
PC_MPI := $(if $(MPI_LIBS),$(shell pkg-config --exists mpi-c 2>/dev/null && echo mpi-c),)
PC_LIBS := $(patsubst $(OPENCL_LIB),-lOpenCL,$(filter-out -L% -Wl%,$(LDLIBS)))
PC_LIBS := $(if $(PC_MPI),$(filter-out -lmpi,$(PC_LIBS)),$(PC_LIBS))
pc_dir = $(patsubst $(PREFIX)%,$${prefix}%,$(1))
$(B)/gmmhmm.pc:
	@mkdir -p $(@D)
	{ echo 'prefix=$(PREFIX)'; echo 'libdir=$(call pc_dir,$(LIBDIR))'; \
	  echo 'includedir=$(call pc_dir,$(INCLUDEDIR))'; echo; \
	  echo 'Name: gmmhmm'; echo 'Description: GMM/HMM kernels (CUDA, OpenCL, CPU) and Kaldi-format I/O'; \
	  echo 'Version: $(VERSION)'; echo 'Cflags: -I$${includedir}/gmmhmm'; \
	  echo 'Libs: -L$${libdir} -lgmmhmm-drivers -lgmmhmm-kernels -lgmmhmm'; \
	  $(if $(PC_MPI),echo 'Requires.private: $(PC_MPI)';) \
	  echo 'Libs.private: -fopenmp $(if $(CUDART_A),-L$${libdir}/gmmhmm )$(PC_LIBS)'; } > $@
man: all
	@if ! command -v help2man >/dev/null; then echo "make man: help2man not found: no man pages (tools/install-deps.sh installs it)" >&2; \
	else mkdir -p $(B)/man && for t in $(TOOLS); do n=$$(basename $$t); \
	  d=$$($$t --help 2>&1 | awk 'NF { print; exit }' | sed -e 's/[.:;(].*//' -e 's/ *$$//'); \
	  help2man --no-discard-stderr -N --version-string='$(VERSION)' -n "$$d" -o $(B)/man/$$n.1 $$t || exit 1; done; fi
install: all $(LIBS) $(B)/gmmhmm.pc man
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/gmmhmm $(DESTDIR)$(DATADIR)/utils
	install -m 755 $(TOOLS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(LIBS) $(DESTDIR)$(LIBDIR)/
	$(if $(CUDART_A),install -d $(DESTDIR)$(LIBDIR)/gmmhmm && install -m 644 $(CUDART_A) $(DESTDIR)$(LIBDIR)/gmmhmm/)
	install -m 644 $(B)/gmmhmm.pc $(DESTDIR)$(LIBDIR)/pkgconfig/
	for h in $(PUBLIC_H); do d=$$(dirname $$h | sed -e 's|^lib/*||' -e 's|^drivers/*||' -e 's|^kernels/*||'); \
	  install -d $(DESTDIR)$(INCLUDEDIR)/gmmhmm/$$d && install -m 644 $$h $(DESTDIR)$(INCLUDEDIR)/gmmhmm/$$d/ || exit 1; done
	install -m 755 $(filter-out %/launcher_args.sh,$(LAUNCHERS)) $(DESTDIR)$(DATADIR)/utils/
	install -m 644 egs/utils/launcher_args.sh $(DESTDIR)$(DATADIR)/utils/
	if ls $(B)/man/*.1 >/dev/null 2>&1; then install -d $(DESTDIR)$(MANDIR)/man1 && \
	  install -m 644 $(B)/man/*.1 $(DESTDIR)$(MANDIR)/man1/; fi
	install -d $(DESTDIR)$(DATADIR)/python/gmmhmm
	install -m 644 python/pyproject.toml python/README.md $(DESTDIR)$(DATADIR)/python/
	install -m 644 python/gmmhmm/*.py $(DESTDIR)$(DATADIR)/python/gmmhmm/
	echo 'PREFIX = "$(PREFIX)"  # written by make install: the tools are in PREFIX/bin' \
	  > $(DESTDIR)$(DATADIR)/python/gmmhmm/_prefix.py
	@echo "make install: the Python package gmmhmm: pip install $(DATADIR)/python (it finds the tools in $(PREFIX)/bin)"

clean:
	rm -rf $(B) $(BIN) build-asan bin-asan build-tsan bin-tsan build-fuzz

.PHONY: all deps test test-gpu bench install man clean $(B)/gmmhmm.pc units asan-build test-asan fuzzers fuzz-build fuzz fuzz-regress print-ldlibs
.SECONDARY:
-include $(shell find $(B) -name '*.d' 2>/dev/null)
