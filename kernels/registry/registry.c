/* registry.c -- picking a compute backend (--device=auto|cpu|cpu-ref|cuda[:N]|opencl[:P:D]).
 *
 * The caller asks once, by name; everything after that goes through the
 * gh_backend_ops table (see backend.h).  When the toolkit is built without
 * CUDA (no nvcc: GH_HAVE_CUDA undefined) the CUDA constructor only reports that CUDA is absent: it
 * returns NULL and gh_cuda_device_count() is 0, so "auto" picks the CPU.  Likewise for OpenCL
 * (GH_HAVE_OPENCL: CL/cl.h present at build time).  "auto" = CUDA if a CUDA GPU is present, else
 * an OpenCL device of type GPU (never a CPU OpenCL device such as PoCL's), else the CPU.
 * "cpu" is the BLAS backend (kernels/cpu/cpu-blas.c, all cores); "cpu-ref" the
 * plain-loop reference (kernels/cpu/cpu.c) that the others are tested against.
 *
 * Also the CPU fallbacks of ops a backend lacks (HMM kernels, the HMM-GMM
 * E-step, shrinkage statistics, k-means distances, the Gaussian-selection
 * E-step): this folder is above every backend folder, so it alone may name
 * them all; the backends include only kernels/backend.h.
 */
#include "registry/registry.h"
#include "base/gh-base.h"

#include <math.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void gh_backend_check_name(const char *device) {
  if (!device || !*device || !strcmp(device, "auto") || !strcmp(device, "cpu") || !strcmp(device, "cpu-ref") ||
      !strcmp(device, "cuda") || !strcmp(device, "opencl") || !strncmp(device, "opencl:", 7))
    return;
  if (!strncmp(device, "cuda:", 5)) {
    char *end = NULL;
    const long n = strtol(device + 5, &end, 10);
    if (!device[5] || *end || n < 0 || n > 1024)
      gh_die("--device=%s: expected cuda:N with N a device number (0, 1, ...)", device);
    return;
  }
  gh_die("unknown --device=%s (expected auto, cpu, cpu-ref, cuda, cuda:N, opencl or opencl:P:D)", device);
}

/* The CUDA backend with the capabilities it brings (NULL as gh_backend_cuda_new). */
static gh_backend *cuda_new(void) {
  gh_backend *b = gh_backend_cuda_new();
  if (b) b->caps |= GH_BACKEND_CAP_NCCL;
  return b;
}

/* gh_backend_create without its log line. */
static gh_backend *create_quiet(const char *device) {
  if (!device || !*device) device = "auto";
  gh_backend_check_name(device);
  gh_backend *b = NULL;
  if (!strcmp(device, "cpu")) {
    b = gh_backend_blas_new();
  } else if (!strcmp(device, "cpu-ref")) {
    b = gh_backend_cpu_new();
  } else if (!strcmp(device, "cuda")) {
    if (gh_cuda_device_count() <= 0)
      gh_die("--device=cuda: no usable CUDA device (%s)",
             *gh_last_error() ? gh_last_error() : "built without CUDA or no GPU present");
    b = cuda_new();
    if (!b) gh_die("--device=cuda: cannot start the CUDA backend: %s", gh_last_error());
  } else if (!strncmp(device, "cuda:", 5)) {
    /* cuda:N -- device N as CUDA numbers them (after CUDA_VISIBLE_DEVICES; syntax checked above) */
    const long n = strtol(device + 5, NULL, 10);
    int count = gh_cuda_device_count();
    if (count <= 0)
      gh_die("--device=%s: no usable CUDA device (%s)", device,
             *gh_last_error() ? gh_last_error() : "built without CUDA or no GPU present");
    if (n >= count)
      gh_die("--device=%s: there %s only %d CUDA device%s (0..%d)", device, count == 1 ? "is" : "are",
             count, count == 1 ? "" : "s", count - 1);
    if (gh_cuda_set_device((int)n) != 0) gh_die("--device=%s: %s", device, gh_last_error());
    b = cuda_new();
    if (!b) gh_die("--device=%s: cannot start the CUDA backend: %s", device, gh_last_error());
  } else if (!strcmp(device, "opencl") || !strncmp(device, "opencl:", 7)) {
    b = gh_backend_opencl_new(device[6] == ':' ? device + 7 : NULL, 0);
    if (!b) gh_die("--device=%s: %s", device, gh_last_error());
  } else if (!strcmp(device, "auto")) {
    if (gh_cuda_device_count() > 0 && !(b = cuda_new())) /* e.g. a GPU the build has no code for */
      gh_warn("--device=auto: not using CUDA: %s", gh_last_error());
    if (!b && gh_opencl_gpu_count() > 0) b = gh_backend_opencl_new(NULL, 1);
    if (!b) b = gh_backend_blas_new();
  }
  if (!b) gh_die("cannot create the %s backend: %s", device, gh_last_error());
  return b;
}

/* create_quiet, timed for $GH_ACCOUNTING (gh_account: device_start, the
 * seconds the backend took to start, and device, its name). */
static gh_backend *create_timed(const char *device) {
  const double t0 = gh_seconds();
  gh_backend *b = create_quiet(device);
  gh_account("device_start", gh_seconds() - t0);
  gh_account_str("device", b->device_name);
  return b;
}

gh_backend *gh_backend_create(const char *device) {
  gh_backend *b = create_timed(device);
  gh_log("using device %s", b->device_name);
  return b;
}

struct gh_backend_start {
  char *device;
  gh_backend *b;
  pthread_t thread;
  int started;
};

static void *start_main(void *arg) {
  gh_backend_start *s = (gh_backend_start *)arg;
  s->b = create_timed(s->device);
  return NULL;
}

/* Whether CUDA could start at all: built with it and the driver library
 * there (dlopen, kept open: the runtime loads it anyway; no device is
 * touched, which is the part of the start worth a thread). */
static int cuda_driver_present(void) {
#ifdef GH_HAVE_CUDA
  return dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) != NULL;
#else
  return 0;
#endif
}

gh_backend_start *gh_backend_create_begin(const char *device) {
  gh_backend_start *s = (gh_backend_start *)gh_calloc(1, sizeof *s);
  s->device = gh_strdup(device && *device ? device : "auto");
  /* An OpenCL device named explicitly starts in _end, on the caller's
   * thread: PoCL installs a signal stack of its own on the thread that
   * loads it (and its LLVM on the one that compiles the kernels), which
   * AddressSanitizer then fails to unmap when that thread ends (make
   * test-asan: "unable to unmap").  So does "auto" where CUDA cannot start:
   * it would only probe OpenCL there.  The thread is for CUDA's start. */
  const int opencl = !strncmp(s->device, "opencl", 6);
  const int auto_no_cuda = !strcmp(s->device, "auto") && !cuda_driver_present();
  s->started = !opencl && !auto_no_cuda && pthread_create(&s->thread, NULL, start_main, s) == 0;
  return s;
}

gh_backend *gh_backend_create_end(gh_backend_start *s) {
  if (s->started) {
    if (pthread_join(s->thread, NULL) != 0) gh_die("internal: cannot join the backend's start-up thread");
  } else {
    s->b = create_timed(s->device); /* OpenCL, or no thread could be started: here, now */
  }
  gh_backend *b = s->b;
  free(s->device);
  free(s);
  gh_cuda_thread_attach(b); /* cuda:N: the device set on the start-up thread, here too */
  gh_log("using device %s", b->device_name);
  return b;
}

const gh_ops_hmm *gh_backend_hmm_ops(gh_backend *b) {
  if (!b->hmm_ops) {
    if (gh_backend_supports(b, GH_CAP_HMM)) {
      b->hmm_ops = b->ops->hmm;
    } else {
      b->hmm_ops = &gh_cpu_ref_hmm;
      gh_log("the %s backend has no HMM kernels: running them on the CPU reference", b->device_name);
    }
  }
  return b->hmm_ops;
}

/* 1 when b's HMM kernels are its own (not the CPU reference's fallback)
 * and it has the sub-table `what` that works on their graphs. */
static int hmm_own(gh_backend *b, gh_backend_cap what) {
  return gh_backend_hmm_ops(b) == b->ops->hmm && gh_backend_supports(b, what);
}

void gh_backend_hmm_reweight(gh_backend *b, gh_dev_hmm **h, const gh_hmm_graph *const *graphs, int32_t num_graphs) {
  const gh_ops_hmm *o = gh_backend_hmm_ops(b);
  if (hmm_own(b, GH_CAP_HMM_REWEIGHT)) {
    b->ops->hmm_reweight->hmm_reweight(b, *h, graphs, num_graphs);
    return;
  }
  o->hmm_free(b, *h);
  *h = o->hmm_upload(b, graphs, num_graphs);
}

void gh_backend_hmm_fb_pairs(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch,
                             const gh_hmm_graph *const *graphs, const int32_t *col_pdf, int32_t frame_base,
                             double min_post, double *loglik, double *stats, gh_pair_buf *out) {
  const gh_ops_hmm *o = gh_backend_hmm_ops(b);
  if (hmm_own(b, GH_CAP_HMM_DEV)) {
    b->ops->hmm_dev->hmm_fb_pairs(b, h, batch, graphs, col_pdf, frame_base, min_post, loglik, stats, out);
    return;
  }
  int64_t *soff = gh_malloc(sizeof(int64_t) * ((size_t)batch->num_utts + 1));
  gh_hmm_batch_state_off(batch, graphs, soff);
  float *gamma = gh_malloc(sizeof(float) * (size_t)(soff[batch->num_utts] ? soff[batch->num_utts] : 1));
  o->hmm_fb(b, h, batch, loglik, gamma, stats);
  gh_hmm_gamma_pairs(batch, graphs, gamma, loglik, col_pdf, frame_base, min_post, out);
  free(gamma);
  free(soff);
}

int64_t gh_backend_hmm_estep_pairs(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch,
                                   const gh_hmm_graph *const *graphs, gh_dev_data **d, const float *X, int32_t D,
                                   int32_t rows, const gh_score_seg *segs, int32_t nseg, int op, float *ll,
                                   double min_post, double *loglik, double *stats, gh_pair_buf *pb, double *wsum,
                                   double sec[4]) {
  const int32_t ld = batch->num_pdfs;
  if (op != GH_HMM_ESTEP_FB && op != GH_HMM_ESTEP_VITERBI) gh_die("HMM E-step: unknown op %d", op);
  int64_t r = 0;
  for (int32_t k = 0; k < nseg; ++k) {
    const gh_score_seg *sg = &segs[k];
    if (sg->row0 != r || sg->rows < 0 || sg->ncols < 0 || sg->ncols > ld)
      gh_die("HMM E-step: score segment %d (rows %d + %d, %d columns) does not follow row %lld of a block of %d "
             "rows and %d loglike columns", k, sg->row0, sg->rows, sg->ncols, (long long)r, rows, ld);
    r += sg->rows;
  }
  if (r != rows || batch->frame_off[batch->num_utts] != rows)
    gh_die("HMM E-step: score segments of %lld rows, utterances of %lld frames, a block of %d rows", (long long)r,
           (long long)batch->frame_off[batch->num_utts], rows);
  const char *env = getenv("GH_HMM_ESTEP");
  double t0 = gh_seconds();
  *wsum = 0.0;
  pb->n = 0;
  if (hmm_own(b, GH_CAP_HMM_DEV) && !(env && !strcmp(env, "host"))) {
    if (!*d) gh_backend_data_pairs(b, d, X, rows, D, NULL, 0);
    double s2[2] = {0, 0};
    const int64_t n = b->ops->hmm_dev->hmm_estep_pairs(b, h, batch, graphs, *d, segs, nseg, op, min_post, loglik, stats, wsum, s2);
    sec[0] += s2[0];
    sec[1] += s2[1];
    if (n >= 0) return n;
    t0 = gh_seconds(); /* declined: the host path */
  }
  for (int32_t k = 0; k < nseg; ++k) {
    if (segs[k].subset) {
      if (!gh_backend_supports(b, GH_CAP_SUBSET))
        gh_die("HMM E-step: score segment %d is a subset of the model, which this backend cannot score", k);
      if (!*d) gh_backend_data_pairs(b, d, X, rows, D, NULL, 0); /* the frames resident, as the device path has them */
      b->ops->subset->loglikes_subset(b, segs[k].m, *d, segs[k].row0, segs[k].rows, segs[k].map, segs[k].ncols,
                              ll + (size_t)segs[k].row0 * ld, ld);
      continue;
    }
    gh_backend_loglikes_rows(b, segs[k].m, *d, X, D, segs[k].row0, segs[k].rows, ll + (size_t)segs[k].row0 * ld,
                             segs[k].ncols, ld);
  }
  double t1 = gh_seconds();
  sec[0] += t1 - t0;
  gh_hmm_batch bt = *batch;
  bt.loglikes = ll;
  pb->n = 0;
  if (op == GH_HMM_ESTEP_FB) {
    gh_backend_hmm_fb_pairs(b, h, &bt, graphs, NULL, 0, min_post, loglik, stats, pb);
  } else { /* the best path's states, one pair per frame of an utterance with a complete path */
    int32_t *path = gh_malloc(sizeof(int32_t) * (size_t)(rows ? rows : 1));
    gh_backend_hmm_ops(b)->hmm_viterbi(b, h, &bt, path, loglik);
    gh_pair_buf_reserve(pb, rows);
    for (int32_t u = 0; u < batch->num_utts; ++u) {
      const int64_t f0 = batch->frame_off[u], f1 = batch->frame_off[u + 1];
      if (f1 <= f0) continue;
      if (loglik[u] == -INFINITY || path[f0] < 0) {
        loglik[u] = -INFINITY;
        continue;
      }
      const gh_hmm_graph *g = graphs[batch->graph ? batch->graph[u] : 0];
      for (int64_t f = f0; f < f1; ++f) {
        if (path[f] < 0 || path[f] >= g->num_states)
          gh_die("HMM E-step: Viterbi path of utterance %d has state %d at frame %lld (graph of %d states)", u,
                 path[f], (long long)(f - f0), g->num_states);
        pb->v[pb->n++] = (gh_frame_pdf){(int32_t)f, g->pdf[path[f]], 1.0f};
      }
    }
    free(path);
  }
  double t2 = gh_seconds();
  sec[1] += t2 - t1;
  /* pairs in frame order: each segment's columns -> pdf ids */
  int64_t q = 0;
  double w = 0.0;
  for (int32_t k = 0; k < nseg; ++k) {
    const int32_t *map = segs[k].map;
    const int64_t end = (int64_t)segs[k].row0 + segs[k].rows;
    for (; q < pb->n && pb->v[q].frame < end; ++q) {
      if (pb->v[q].pdf >= segs[k].ncols)
        gh_die("HMM E-step: a graph of score segment %d uses loglike column %d of its %d", k, pb->v[q].pdf,
               segs[k].ncols);
      if (map) pb->v[q].pdf = map[pb->v[q].pdf];
      w += pb->v[q].weight;
    }
  }
  *wsum = w;
  double t3 = gh_seconds();
  sec[2] += t3 - t2;
  if (pb->n > 0) gh_backend_data_pairs(b, d, X, rows, D, pb->v, pb->n);
  sec[3] += gh_seconds() - t3;
  return pb->n;
}

/* ---------------- shrinkage statistics: sub-table shrink, else the CPU reference's ---------------- */

void gh_backend_acc_shrink(gh_backend *b, const gh_gmm_set *model, const float *X, int32_t T,
                           const gh_frame_pdf *pairs, int64_t npairs, gh_accs_set *accs) {
  if (gh_backend_supports(b, GH_CAP_SHRINK)) {
    b->ops->shrink->acc_shrink(b, model, X, T, pairs, npairs, accs);
  } else {
    gh_log("the %s backend has no shrinkage-statistics kernel: running it on the CPU reference", b->device_name);
    gh_cpu_ref_shrink.acc_shrink(b, model, X, T, pairs, npairs, accs);
  }
}

/* ---------------- exact alignment: sub-table align, else the CPU reference's ---------------- */

void gh_backend_align_batch(gh_backend *b, const gh_align_batch *batch, gh_align_out *out) {
  if (gh_backend_supports(b, GH_CAP_ALIGN)) b->ops->align->align_batch(b, batch, out);
  else gh_cpu_ref_align.align_batch(b, batch, out);
}

/* ---------------- k-means distances: sub-table kmeans, else the CPU reference's ---------------- */

/* b's k-means sub-table, else the CPU reference's (b may be NULL). */
static const gh_ops_kmeans *kmeans_ops(const gh_backend *b) {
  return gh_backend_supports(b, GH_CAP_KMEANS) ? b->ops->kmeans : &gh_cpu_ref_kmeans;
}
gh_dev_kmeans *gh_backend_kmeans_upload(gh_backend *b, const double *Z, int64_t N, int32_t D) {
  return kmeans_ops(b)->kmeans_upload(b, Z, N, D);
}
void gh_backend_kmeans_nearest(gh_backend *b, gh_dev_kmeans *z, const double *C, int32_t k0, int32_t nk, int reset) {
  kmeans_ops(b)->kmeans_nearest(b, z, C, k0, nk, reset);
}
void gh_backend_kmeans_fetch(gh_backend *b, gh_dev_kmeans *z, double *d2, int32_t *asg) {
  kmeans_ops(b)->kmeans_fetch(b, z, d2, asg);
}
void gh_backend_kmeans_free(gh_backend *b, gh_dev_kmeans *z) {
  if (!z) return;
  kmeans_ops(b)->kmeans_free(b, z);
}

/* ---------------- E-step over Gaussian selections: sub-table gselect, else the CPU reference's ---------------- */

double gh_backend_acc_gselect(gh_backend *b, const gh_gmm *gmm, const float *X, int32_t T, const int32_t *sel_off,
                              const int32_t *sel, const float *w, gh_gmm_accs *accs, float *post,
                              double *frame_ll) {
  if (gh_backend_supports(b, GH_CAP_GSELECT))
    return b->ops->gselect->acc_gselect(b, gmm, X, T, sel_off, sel, w, accs, post, frame_ll);
  static int logged;
  if (!logged++) gh_vlog(1, "the %s backend has no Gaussian-selection E-step: running it on the CPU", b->device_name);
  return gh_cpu_ref_gselect.acc_gselect(b, gmm, X, T, sel_off, sel, w, accs, post, frame_ll);
}
