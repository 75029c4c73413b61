# gmmhmm -- GNU Make build.
#   make            build every tool into bin/
#   make deps       install build/test dependencies (Debian: apt-get, pip)
#   make test       C unit tests + Bats tool tests (CPU; no GPU needed)
#   make test-gpu   CUDA-vs-CPU checks (run on a machine with an NVIDIA GPU)
#   make bench      benchmarks (GPU)
#   make install PREFIX=/usr/local
PREFIX ?= /usr/local
CC ?= gcc
CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Ilib -Ikernels -MMD -MP
LDLIBS := -llapacke -llapack -lblas -lz -lm

# Audio input (lib/wav.c) needs libsndfile, the FFT (lib/feat.c) FFTW.  Without
# libsndfile's header the tools still build and reading audio is a clear error at
# run time (the GPU machine has no libsndfile); FFTW is required.
SNDFILE_H := $(wildcard /usr/include/sndfile.h /usr/local/include/sndfile.h)
ifneq ($(SNDFILE_H),)
LDLIBS += -lsndfile
else
CFLAGS += -DGH_NO_SNDFILE
endif
LDLIBS += -lfftw3
# OpenMP: the host M-step's per-Gaussian inverses (lib/gmm.c, plain loops) on all cores.
CFLAGS += -fopenmp

NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_HOME ?= $(if $(NVCC),$(patsubst %/bin/nvcc,%,$(NVCC)),)
NVCCFLAGS ?= -O3 -lineinfo
NVCCFLAGS += -std=c++17 -Ilib -Ikernels -Ikernels/cuda -MMD -MP -Xcompiler -Wall \
  -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90

B := build
LIB_SRC := $(wildcard lib/*.c)
KER_SRC := $(wildcard kernels/*.c kernels/cpu/*.c)
CU_SRC  := $(if $(NVCC),$(wildcard kernels/cuda/*.cu),)
TOOL_SRC := $(wildcard tools/*.c)
UNIT_SRC := $(wildcard test/unit/*.c)

LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
KER_OBJ := $(KER_SRC:%.c=$(B)/%.o) $(CU_SRC:%.cu=$(B)/%.cu.o)
TOOLS := $(TOOL_SRC:tools/%.c=bin/%)
UNITS := $(UNIT_SRC:test/unit/%.c=$(B)/test/%)

ifneq ($(NVCC),)
CFLAGS += -DGH_HAVE_CUDA
LDLIBS += -L$(CUDA_HOME)/lib64 -lcudart_static -lstdc++ -ldl -lpthread -lrt
endif

all: $(TOOLS)

$(B)/libgmmhmm.a: $(LIB_OBJ)
	@mkdir -p $(@D); rm -f $@; ar rcs $@ $^
$(B)/libgmmhmm-kernels.a: $(KER_OBJ)
	@mkdir -p $(@D); rm -f $@; ar rcs $@ $^

$(B)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@
$(B)/%.cu.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -DGH_HAVE_CUDA -c $< -o $@

LIBS := $(B)/libgmmhmm-kernels.a $(B)/libgmmhmm.a
bin/%: $(B)/tools/%.o $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(B)/libgmmhmm-kernels.a $(B)/libgmmhmm.a $(LDLIBS)

$(B)/test/%: $(B)/test/unit/%.o $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(B)/libgmmhmm-kernels.a $(B)/libgmmhmm.a $(LDLIBS)

deps:
	./tools/install-deps.sh

test: all $(UNITS)
	./test/run.sh

test-gpu: all $(UNITS)
	./test/run-gpu.sh

bench: all
	./bench/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(TOOLS) $(DESTDIR)$(PREFIX)/bin/

clean:
	rm -rf $(B) bin

.PHONY: all deps test test-gpu bench install clean
.SECONDARY:
-include $(shell find $(B) -name '*.d' 2>/dev/null)
