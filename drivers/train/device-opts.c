/* device-opts.c -- the --device / --precision registrar and the rank ->
 * device policy; see device-opts.h. */
#include "train/device-opts.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "base/gh-base.h"
#include "base/opts.h"
#include "train/comm.h"

const char gh_device_help[] =
    "Compute device: auto (cuda if a CUDA GPU is present, else an OpenCL GPU, else cpu), cpu (BLAS, all cores), "
    "cpu-ref (plain-C reference), cuda (CUDA GPU 0), cuda:N (CUDA GPU N), opencl ($GH_OPENCL_DEVICE, else the "
    "first OpenCL GPU, else the first OpenCL device), opencl:P:D (OpenCL platform P, device D, as clinfo -l "
    "numbers them)";

const char gh_precision_help[] =
    "Arithmetic of the GPU matrix products: auto (the backend's fastest within fp32-level error, "
    "doc/kernels.md), fp32, tf32x3 (split-precision tensor cores, fp32-level error) or tf32 (fast, ~1e-3 "
    "relative error, not for training); backends without tensor cores (cpu, cpu-ref, opencl) compute fp32";

static const char accepted[] = "expected auto, cpu, cpu-ref, cuda, cuda:N, opencl or opencl:P:D";

/* s is a non-empty run of decimal digits up to `end` (or the string's end
 * if end is NULL) whose value is at most max. */
static int is_number(const char *s, const char *end, long max) {
  if (!end) end = s + strlen(s);
  if (s == end || end - s > 9) return 0;
  for (const char *p = s; p < end; ++p)
    if (!isdigit((unsigned char)*p)) return 0;
  return strtol(s, NULL, 10) <= max;
}

/* Dies with one line unless dev is one of the spellings of gh_device_help. */
static void check_device(const char *dev) {
  if (!strcmp(dev, "auto") || !strcmp(dev, "cpu") || !strcmp(dev, "cpu-ref") || !strcmp(dev, "cuda") ||
      !strcmp(dev, "opencl"))
    return;
  if (!strncmp(dev, "cuda:", 5)) {
    if (!is_number(dev + 5, NULL, 1024)) gh_die("--device=%s: expected cuda:N with N a device number (0, 1, ...)", dev);
    return;
  }
  if (!strncmp(dev, "opencl:", 7)) {
    const char *p = dev + 7, *colon = strchr(p, ':');
    if (!colon || !is_number(p, colon, 1024) || !is_number(colon + 1, NULL, 1024))
      gh_die("--device=%s: expected opencl:P:D with P and D numbers (platform and device, as clinfo -l numbers "
             "them)", dev);
    return;
  }
  gh_die("unknown --device=%s (%s)", dev, accepted);
}

void gh_device_opts_check(gh_device_opts *d) {
  if (!d->device || !*d->device) d->device = "auto";
  check_device(d->device);
  if (!d->precision || !*d->precision) d->precision = "auto";
  if (gh_precision_parse(d->precision, &d->prec) != 0)
    gh_die("--precision must be auto, fp32, tf32x3 or tf32 (got '%s')", d->precision);
}

static void check_cb(void *ctx) { gh_device_opts_check((gh_device_opts *)ctx); }

void gh_device_opts_register(struct gh_opts *po, gh_device_opts *d, unsigned what) {
  memset(d, 0, sizeof *d);
  d->device = "auto";
  d->precision = "auto";
  d->what = what;
  if (what & GH_DEVICE_OPT) gh_opts_string(po, "device", &d->device, gh_device_help);
  if (what & GH_PRECISION_OPT) gh_opts_string(po, "precision", &d->precision, gh_precision_help);
  gh_opts_check(po, check_cb, d);
}

void gh_device_opts_auto_small(gh_device_opts *d, double frames_per_core_s, const char *what) {
  if ((d->device && *d->device && strcmp(d->device, "auto")) || frames_per_core_s <= 0) return;
  const long cores = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
  const double rate = (double)cores * frames_per_core_s;
  if (rate < 1e6) {
    gh_vlog(1, "--device=auto: %s: an estimated %.3g frames/s on this host's %ld cores (the CPU is taken from 1e6)",
            what, rate, cores);
    return;
  }
  gh_log("--device=auto: %s is small work (an estimated %.3g frames/s on this host's %ld cores), less than a GPU "
         "context costs: using the CPU (--device=cuda to use the GPU)",
         what, rate, cores);
  d->device = "cpu";
}

double gh_cpu_rate_gmm(const gh_gmm_set *s, double passes) {
  double flops = 0;
  for (int32_t p = 0; p < s->num_pdfs; ++p) {
    const gh_gmm *g = &s->pdfs[p];
    flops += (double)g->num_gauss * (g->type == GH_COV_FULL ? (double)g->dim * (g->dim + 1) : 3.0 * g->dim);
  }
  return flops > 0 && passes > 0 ? 1.0 / (passes * (flops / 1e10 + 0.5e-6)) : 0;
}

double gh_cpu_rate_hmm(int64_t states, int64_t arcs) {
  return states + arcs > 0 ? 1e8 / (double)(states + arcs) : 0;
}

gh_backend *gh_device_opts_open(gh_device_opts *d) {
  gh_device_opts_check(d);
  gh_backend *b = gh_backend_create(d->device);
  b->precision = d->prec;
  return b;
}

void gh_device_opts_begin(gh_device_opts *d) {
  gh_device_opts_check(d);
  if (d->start) gh_die("internal error: gh_device_opts_begin twice without _end");
  d->start = gh_backend_create_begin(d->device);
}

gh_backend *gh_device_opts_end(gh_device_opts *d) {
  if (!d->start) gh_die("internal error: gh_device_opts_end without _begin");
  gh_backend *b = gh_backend_create_end(d->start);
  d->start = NULL;
  b->precision = d->prec;
  return b;
}

const char *gh_device_opts_bind_rank(gh_device_opts *d, const struct gh_comm *c) {
  gh_device_opts_check(d);
  const int lsize = c ? gh_comm_local_size(c) : 1;
  if (lsize <= 1) return d->device;
  if (!strcmp(d->device, "auto") || !strcmp(d->device, "cuda")) {
    const int ng = gh_cuda_device_count();
    if (ng > 0) {
      snprintf(d->rank_device, sizeof d->rank_device, "cuda:%d", gh_comm_local_rank(c) % ng);
      d->device = d->rank_device;
    }
  }
  /* the host's cores shared among its ranks (CPU backends, the host M-step) */
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const int nth = (int)(cores / lsize);
#ifdef _OPENMP
  omp_set_num_threads(nth > 0 ? nth : 1);
#else
  (void)nth;
#endif
  return d->device;
}
