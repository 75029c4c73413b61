/* fuzz-common.h -- shared scaffolding of the libFuzzer harnesses (test/fuzz/).
 *
 * The library reports bad input through gh_die(), which exits.  A harness
 * instead installs a die hook that longjmps back to LLVMFuzzerTestOneInput,
 * so one process can run millions of inputs.  What the aborted parse had
 * allocated is freed afterwards: every allocation made during an input is
 * tracked through the sanitizer allocator's malloc/free hooks, and file
 * descriptors opened during it are closed.  Every name the library opens is
 * checked by gh_io_set_filter: only plain relative names inside the
 * harness's private working directory (no pipes, no stdin, no '/', no "..").
 *
 * Use:  FUZZ_BEGIN(); ... library calls on data ...; FUZZ_END();
 * (gh_die inside jumps to FUZZ_END's cleanup; the input then counts as
 * rejected, which is fine: only crashes, sanitizer reports and hangs are
 * findings).
 */
#ifndef GH_FUZZ_COMMON_H
#define GH_FUZZ_COMMON_H

#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sanitizer/allocator_interface.h>

#include "base/gh-base.h"
#include "io/kaldi-io.h"

/* The scaffolding below is not coverage-instrumented: its loops (hash
 * probes, descriptor cleanup) are not the code under test, and tracing
 * their comparisons cost about a fifth of fuzz_archive's time. */
#define FZ_NOCOV __attribute__((no_sanitize("coverage")))

/* ---- allocation tracking (open addressing, generation-stamped) ---- */
#define FZ_SLOTS (1u << 20)
#define FZ_LOG (1u << 18)
typedef struct { const volatile void *p; uint32_t gen; } fz_slot;
static fz_slot *fz_tab;
static const volatile void **fz_log;
static uint32_t fz_nlog, fz_gen = 1;
static int fz_overflow;
static __thread int fz_tracking;
#define FZ_TOMB ((const volatile void *)1)

FZ_NOCOV static size_t fz_hash(const volatile void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33;
  return (size_t)(x & (FZ_SLOTS - 1));
}

FZ_NOCOV static void fz_malloc_hook(const volatile void *p, size_t n) {
  (void)n;
  if (!fz_tracking || !p) return;
  if (fz_nlog >= FZ_LOG) { fz_overflow = 1; return; }
  size_t i = fz_hash(p);
  for (uint32_t k = 0; k < FZ_SLOTS; k++, i = (i + 1) & (FZ_SLOTS - 1)) {
    if (fz_tab[i].gen != fz_gen || fz_tab[i].p == FZ_TOMB) {
      fz_tab[i].p = p; fz_tab[i].gen = fz_gen;
      fz_log[fz_nlog++] = p;
      return;
    }
  }
  fz_overflow = 1;
}

/* Slot holding p in this generation, or -1. */
FZ_NOCOV static long fz_find(const volatile void *p) {
  size_t i = fz_hash(p);
  for (uint32_t k = 0; k < FZ_SLOTS; k++, i = (i + 1) & (FZ_SLOTS - 1)) {
    if (fz_tab[i].gen != fz_gen) return -1;
    if (fz_tab[i].p == p) return (long)i;
  }
  return -1;
}

FZ_NOCOV static void fz_free_hook(const volatile void *p) {
  if (!fz_tracking || !p) return;
  long i = fz_find(p);
  if (i >= 0) fz_tab[i].p = FZ_TOMB;
}

/* ---- die hook, I/O filter, private directory ---- */
static jmp_buf fz_jmp;
static int fz_fd_lo;
static char fz_dir[64];

static void fz_die_hook(const char *msg) {
  (void)msg;
  longjmp(fz_jmp, 1);
}

FZ_NOCOV static int fz_filter(const char *name) {
  if (!name[0] || name[0] == '/' || strstr(name, "..") || strchr(name, '|')) return 0;
  if (!strcmp(name, "-")) return 0;
  for (const char *c = name; *c; c++)
    if (*c == ' ' || *c == '\t' || *c == '\n' || *c == '\r' || *c == ':' || *c == '~') return 0;
  return 1;
}

/* At exit: remove the private directory (flat: files only). */
static void fz_rmdir(void) {
  if (!fz_dir[0] || chdir("/") != 0) return;
  DIR *d = opendir(fz_dir);
  if (d) {
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)) != NULL)
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
        snprintf(p, sizeof p, "%s/%s", fz_dir, e->d_name);
        unlink(p);
      }
    closedir(d);
  }
  rmdir(fz_dir);
}

/* Starts the OpenMP runtime before any input runs: fz_cleanup frees what
 * an input allocated after a gh_die, and libomp allocates its thread pool,
 * teams (serialized ones too) and named-critical locks lazily, on first
 * use; made inside an input they were freed there and used again at exit
 * (a use-after-free in libomp's destructor: fuzz_models on a GMM input that
 * reached lib/gmm/gmm.c's parallel loops and then died).  This runs each kind
 * of region the library uses once, outside tracking. */
static void fz_omp_warmup(void) {
#ifdef _OPENMP
  int sum = 0;
#pragma omp parallel reduction(+ : sum)
  {
#pragma omp for schedule(static)
    for (int i = 0; i < 256; ++i) sum += i;
#pragma omp for schedule(dynamic, 1)
    for (int i = 0; i < 256; ++i) sum += i;
#pragma omp critical(gh_set_moments_bad)
    sum += 1;
  }
#pragma omp parallel if (sum < 0)
  { (void)0; }
  if (sum < 0) abort();
#endif
}

static void fz_init(void) {
  if (fz_tab) return;
  fz_omp_warmup();
  fz_tab = calloc(FZ_SLOTS, sizeof *fz_tab);
  fz_log = calloc(FZ_LOG, sizeof *fz_log);
  __sanitizer_install_malloc_and_free_hooks(fz_malloc_hook, fz_free_hook);
  gh_set_die_hook(fz_die_hook);
  gh_io_set_filter(fz_filter);
  gh_verbose = getenv("GH_FUZZ_VERBOSE") ? 0 : -2; /* no LOG/WARNING lines */
  snprintf(fz_dir, sizeof fz_dir, "%s/gh-fuzz.%ld", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
           (long)getpid());
  mkdir(fz_dir, 0700);
  if (chdir(fz_dir) != 0) abort();
  atexit(fz_rmdir);
  fz_fd_lo = dup(0);
  close(fz_fd_lo);
}

/* After a gh_die: free what the input allocated, close what it opened. */
FZ_NOCOV static void fz_cleanup(void) {
  fz_tracking = 0;
  if (!fz_overflow)
    for (uint32_t k = 0; k < fz_nlog; k++)
      if (fz_find(fz_log[k]) >= 0) { fz_tab[fz_find(fz_log[k])].p = FZ_TOMB; free((void *)fz_log[k]); }
  close_range((unsigned)fz_fd_lo, ~0U, 0); /* one syscall, not one per descriptor */
}

FZ_NOCOV static void fz_reset(void) {
  fz_tracking = 0;
  fz_nlog = 0;
  fz_overflow = 0;
  if (++fz_gen == 0) { memset(fz_tab, 0, FZ_SLOTS * sizeof *fz_tab); fz_gen = 1; }
}

/* Writes data to a file in the private directory (name relative). */
__attribute__((unused)) static void fz_write_file(const char *name, const uint8_t *data, size_t size) {
  FILE *f = fopen(name, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  fclose(f);
}

/* Bytes of a file in the private directory (malloc'd), size in *n. */
__attribute__((unused)) static uint8_t *fz_slurp(const char *name, size_t *n) {
  FILE *f = fopen(name, "rb");
  if (!f) abort();
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)sz + 1);
  if (fread(b, 1, (size_t)sz, f) != (size_t)sz) abort();
  fclose(f);
  *n = (size_t)sz;
  return b;
}

/* on_abort: forgets (does not free) harness state allocated during the
 * input, since fz_cleanup frees every such allocation. */
#define FUZZ_BEGIN_WITH(on_abort)        \
  fz_init();                             \
  fz_reset();                            \
  if (setjmp(fz_jmp)) { on_abort; fz_cleanup(); fz_reset(); return 0; } \
  fz_tracking = 1
#define FUZZ_BEGIN() FUZZ_BEGIN_WITH((void)0)
#define FUZZ_END() \
  fz_reset();      \
  return 0

#endif
