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
# "override": a CFLAGS given on the command line adds to these (flags the build
# needs are appended with "override CFLAGS +=" so `make CFLAGS=...` keeps them).
override CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Ilib -Ikernels -MMD -MP
LDLIBS := -llapacke -llapack -lblas -lz -lm

# Audio input (lib/wav.c) needs libsndfile, the FFT (lib/feat.c) FFTW.  Without
# libsndfile's header the tools still build and reading audio is a clear error at
# run time (the GPU machine has no libsndfile); FFTW is required.
SNDFILE_H := $(wildcard /usr/include/sndfile.h /usr/local/include/sndfile.h)
ifneq ($(SNDFILE_H),)
LDLIBS += -lsndfile
else
override CFLAGS += -DGH_NO_SNDFILE
endif
LDLIBS += -lfftw3

NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_HOME ?= $(if $(NVCC),$(patsubst %/bin/nvcc,%,$(NVCC)),)
NVCCFLAGS ?= -O3 -lineinfo
NVCCFLAGS += -std=c++17 -Ilib -Ikernels -Ikernels/cuda -MMD -MP -Xcompiler -Wall \
  -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90

B ?= build
BIN ?= bin
LIB_SRC := $(wildcard lib/*.c)
KER_SRC := $(wildcard kernels/*.c kernels/cpu/*.c)
CU_SRC  := $(if $(NVCC),$(wildcard kernels/cuda/*.cu),)
TOOL_SRC := $(wildcard tools/*.c)
UNIT_SRC := $(wildcard test/unit/*.c)

LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
KER_OBJ := $(KER_SRC:%.c=$(B)/%.o) $(CU_SRC:%.cu=$(B)/%.cu.o)
TOOLS := $(TOOL_SRC:tools/%.c=$(BIN)/%)
UNITS := $(UNIT_SRC:test/unit/%.c=$(B)/test/%)

ifneq ($(NVCC),)
override CFLAGS += -DGH_HAVE_CUDA
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
$(BIN)/%: $(B)/tools/%.o $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(B)/libgmmhmm-kernels.a $(B)/libgmmhmm.a $(LDLIBS)

$(B)/test/%: $(B)/test/unit/%.o $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(B)/libgmmhmm-kernels.a $(B)/libgmmhmm.a $(LDLIBS)

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
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(B)/libgmmhmm-kernels.a $(B)/libgmmhmm.a $(LDLIBS)
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

install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(TOOLS) $(DESTDIR)$(PREFIX)/bin/

clean:
	rm -rf $(B) $(BIN) build-asan bin-asan build-fuzz

.PHONY: all deps test test-gpu bench install clean units asan-build test-asan fuzzers fuzz-build fuzz fuzz-regress
.SECONDARY:
-include $(shell find $(B) -name '*.d' 2>/dev/null)
