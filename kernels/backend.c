/* backend.c -- the host helpers below the backends (kernels/backend.h):
 * the pair checks and sorts of the E-step data, the HMM batch offsets and
 * the pdf posteriors of forward-backward, the score segments' column maps,
 * the Gaussian-selection plan, row packing, --precision names, and the
 * wrappers of optional sub-tables that fall back on the same backend's other ops.
 * Device selection and the CPU fallbacks are kernels/registry/registry.c.
 * Without CUDA (no nvcc: GH_HAVE_CUDA undefined) or OpenCL (no CL/cl.h:
 * GH_HAVE_OPENCL undefined) the constructors below only report that the
 * backend is absent: NULL, and 0 devices.
 */
#include "backend.h"
#include "base/gh-base.h"

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#include <stdio.h>
#endif
#include <stdlib.h>
#include <string.h>

int gh_precision_parse(const char *s, int *p) {
  static const char *names[] = {"auto", "fp32", "tf32x3", "tf32"};
  for (int i = 0; s && i < 4; ++i)
    if (!strcmp(s, names[i])) { *p = i; return 0; }
  return -1;
}

void gh_backend_free(gh_backend *b) {
  if (b) b->ops->gmm->free(b);
}

/* The sub-tables in gh_backend_cap's order, with their names and sizes. */
#define GH_OPS_TABLES(X) \
  X(GH_CAP_GMM, gmm) X(GH_CAP_PAIRS, pairs) X(GH_CAP_RESIDENT, resident) X(GH_CAP_MSTEP, mstep) \
  X(GH_CAP_HASH, hash) X(GH_CAP_HMM, hmm) X(GH_CAP_HMM_DEV, hmm_dev) X(GH_CAP_HMM_REWEIGHT, hmm_reweight) \
  X(GH_CAP_SHRINK, shrink) X(GH_CAP_HOST_MEM, host_mem) X(GH_CAP_PIPELINE, pipeline) X(GH_CAP_DIST, dist) \
  X(GH_CAP_NCCL, nccl) X(GH_CAP_GSELECT, gselect) X(GH_CAP_KMEANS, kmeans) X(GH_CAP_SUBSET, subset) \
  X(GH_CAP_ALIGN, align)

void gh_backend_paths_describe(const gh_backend *b, char *buf, size_t n) {
  static const char *names[GH_PATH_N] = {"fp32", "whitened", "cand", "double", "host"};
  int64_t tot = 0;
  for (int i = 0; i < GH_PATH_N; ++i) tot += b->path_pairs[i];
  if (tot <= 0) { snprintf(buf, n, "paths: not counted"); return; }
  size_t k = (size_t)snprintf(buf, n, "paths:");
  for (int i = 0; i < GH_PATH_N && k < n; ++i)
    k += (size_t)snprintf(buf + k, n - k, "%s %s %.3g%%", i ? "," : "", names[i], 100.0 * (double)b->path_pairs[i] / (double)tot);
  if (k < n) k += (size_t)snprintf(buf + k, n - k, " of %lld (frame, pdf) pairs", (long long)tot);
  if (k < n && b->cand_pairs > 0)
    snprintf(buf + k, n - k, "; %.3g Gaussians per pair within %g nats of the best", (double)b->cand_gauss / (double)b->cand_pairs,
             GH_CAND_NATS);
}

const void *gh_backend_ops_table(const gh_backend_ops *o, gh_backend_cap what, size_t *bytes, const char **name) {
  switch (what) {
#define GH_OPS_CASE(cap, f) \
  case cap: \
    if (bytes) *bytes = sizeof *o->f; \
    if (name) *name = #f; \
    return o->f;
    GH_OPS_TABLES(GH_OPS_CASE)
#undef GH_OPS_CASE
  default: break;
  }
  gh_die("internal: no backend sub-table %d", (int)what);
  return NULL;
}

int gh_backend_supports(const gh_backend *b, gh_backend_cap what) {
  if (!b) return 0;
  const int has = gh_backend_ops_table(b->ops, what, NULL, NULL) != NULL;
  if (what == GH_CAP_NCCL) return has && (b->caps & GH_BACKEND_CAP_NCCL) != 0;
  return has;
}

#ifndef GH_HAVE_CUDA
gh_backend *gh_backend_cuda_new(void) {
  gh_set_error("this build of gmmhmm has no CUDA support (nvcc was not found at build time)");
  return NULL;
}
void gh_cuda_thread_attach(gh_backend *b) { (void)b; }
int gh_cuda_device_count(void) {
  gh_set_error("this build of gmmhmm has no CUDA support");
  return 0;
}
int gh_cuda_set_device(int device) {
  gh_set_error("this build of gmmhmm has no CUDA support");
  return -1;
}
#endif
#ifndef GH_HAVE_OPENCL
gh_backend *gh_backend_opencl_new(const char *spec, int gpu_only) {
  gh_set_error("this build of gmmhmm has no OpenCL support (CL/cl.h was not found at build time)");
  return NULL;
}
int gh_opencl_gpu_count(void) { return 0; }
#endif

/* ---------------- HMM batch helpers ---------------- */

void gh_hmm_batch_state_off(const gh_hmm_batch *batch, const gh_hmm_graph *const *graphs,
                            int64_t *state_off) {
  state_off[0] = 0;
  for (int32_t u = 0; u < batch->num_utts; ++u) {
    const gh_hmm_graph *g = graphs[batch->graph ? batch->graph[u] : 0];
    state_off[u + 1] = state_off[u] + (batch->frame_off[u + 1] - batch->frame_off[u]) * g->num_states;
  }
}

int64_t gh_hmm_stats_offset(const gh_hmm_graph *const *graphs, int32_t g) {
  int64_t off = 0;
  for (int32_t h = 0; h < g; ++h) off += gh_hmm_graph_stats_size(graphs[h]);
  return off;
}

void gh_hmm_gamma_pairs(const gh_hmm_batch *bt, const gh_hmm_graph *const *graphs, const float *gamma,
                        const double *loglik, const int32_t *col_pdf, int32_t frame_base, double min_post,
                        gh_pair_buf *out) {
  const int32_t P = bt->num_pdfs;
  double *sum = gh_calloc(P > 0 ? P : 1, sizeof(double));
  int32_t *touched = gh_malloc((P > 0 ? P : 1) * sizeof(int32_t));
  int64_t soff = 0;
  for (int32_t u = 0; u < bt->num_utts; ++u) {
    const gh_hmm_graph *g = graphs[bt->graph ? bt->graph[u] : 0];
    const int32_t S = g->num_states;
    const int64_t f0 = bt->frame_off[u], T = bt->frame_off[u + 1] - f0;
    const float *gu = gamma + soff;
    soff += T * S;
    if (!(loglik[u] > -INFINITY) || T == 0) continue;
    if (frame_base + f0 + T - 1 > INT32_MAX) gh_die("HMM pairs: frame %lld beyond int32", (long long)(frame_base + f0 + T - 1));
    gh_pair_buf_reserve(out, T * (S < P ? S : P));
    for (int64_t t = 0; t < T; ++t) {
      const float *gr = gu + t * S;
      int32_t nt = 0;
      for (int32_t j = 0; j < S; ++j) {
        if (gr[j] <= 0) continue;
        const int32_t p = g->pdf[j];
        if (sum[p] == 0) touched[nt++] = p;
        sum[p] += gr[j];
      }
      for (int32_t q = 0; q < nt; ++q) {
        const int32_t p = touched[q];
        if (sum[p] >= min_post && sum[p] > 0) {
          const float w = (float)sum[p];
          if (w != 0.0f) {
            gh_frame_pdf *pr = &out->v[out->n++];
            pr->frame = (int32_t)(frame_base + f0 + t);
            pr->pdf = col_pdf ? col_pdf[p] : p;
            pr->weight = w;
          }
        }
        sum[p] = 0;
      }
    }
  }
  free(sum);
  free(touched);
}

void gh_backend_loglikes_rows(gh_backend *b, gh_dev_model *m, gh_dev_data *d, const float *X, int32_t D,
                              int32_t row0, int32_t T, float *out, int32_t P, int32_t ldo) {
  if (ldo < P) gh_die("loglikes rows: output stride %d below the %d pdfs", ldo, P);
  if (d && gh_backend_supports(b, GH_CAP_RESIDENT)) {
    b->ops->resident->loglikes_data(b, m, d, row0, T, out, ldo);
    return;
  }
  if (ldo == P) {
    b->ops->gmm->loglikes(b, m, X + (size_t)row0 * (size_t)D, T, out);
    return;
  }
  float *tmp = gh_malloc(sizeof(float) * ((size_t)T * (size_t)P + 1));
  b->ops->gmm->loglikes(b, m, X + (size_t)row0 * (size_t)D, T, tmp);
  for (int64_t t = 0; t < T; ++t) memcpy(out + t * ldo, tmp + t * P, (size_t)P * sizeof(float));
  free(tmp);
}

int32_t *gh_score_seg_maps(const gh_hmm_batch *batch, const gh_hmm_graph *const *graphs, int32_t num_graphs,
                           const gh_score_seg *segs, int32_t nseg, int32_t *ncol, int32_t *ucol, int32_t *bound) {
  int32_t n = 0, bd = 1;
  for (int32_t k = 0; k < nseg; ++k) {
    if (segs[k].map) n += segs[k].ncols;
    else if (segs[k].ncols > bd) bd = segs[k].ncols;
  }
  int32_t *cols = gh_malloc(sizeof(int32_t) * (size_t)(n + 1));
  int32_t *soff = gh_malloc(sizeof(int32_t) * (size_t)(nseg + 1));
  int32_t c0 = 0;
  for (int32_t k = 0; k < nseg; ++k) {
    soff[k] = segs[k].map ? c0 : -1;
    if (!segs[k].map) continue;
    for (int32_t q = 0; q < segs[k].ncols; ++q) {
      cols[c0 + q] = segs[k].map[q];
      if (segs[k].map[q] + 1 > bd) bd = segs[k].map[q] + 1;
    }
    c0 += segs[k].ncols;
  }
  for (int32_t u = 0, k = 0; u < batch->num_utts; ++u) {
    const int64_t f = batch->frame_off[u], e = batch->frame_off[u + 1];
    ucol[u] = -1;
    if (e <= f) continue; /* no frames, no pairs (the HMM ops check the offsets) */
    while (k + 1 < nseg && f >= (int64_t)segs[k].row0 + segs[k].rows) ++k;
    if (nseg == 0 || f < segs[k].row0 || e > (int64_t)segs[k].row0 + segs[k].rows)
      gh_die("HMM E-step: utterance %d (frames %lld .. %lld) is not inside one score segment", u, (long long)f,
             (long long)e - 1);
    const int32_t g = batch->graph ? batch->graph[u] : 0;
    if (g < 0 || g >= num_graphs) gh_die("HMM batch: utterance %d refers to graph %d of %d", u, g, num_graphs);
    if (graphs[g]->num_pdfs > segs[k].ncols)
      gh_die("HMM E-step: graph %d of utterance %d uses %d loglike columns, its score segment %d has %d", g, u,
             graphs[g]->num_pdfs, k, segs[k].ncols);
    ucol[u] = soff[k];
  }
  free(soff);
  *ncol = n;
  *bound = bd;
  return cols;
}

void gh_backend_loglikes_begin(gh_backend *b, gh_dev_model *m, const float *X, int32_t T, float *out) {
  if (gh_backend_supports(b, GH_CAP_PIPELINE)) b->ops->pipeline->loglikes_begin(b, m, X, T, out);
  else b->ops->gmm->loglikes(b, m, X, T, out);
}

void gh_backend_loglikes_end(gh_backend *b) {
  if (gh_backend_supports(b, GH_CAP_PIPELINE)) b->ops->pipeline->loglikes_end(b);
}

void gh_backend_data_pairs(gh_backend *b, gh_dev_data **d, const float *X, int32_t T, int32_t D,
                           const gh_frame_pdf *pairs, int64_t npairs) {
  if (*d && gh_backend_supports(b, GH_CAP_PAIRS)) {
    b->ops->pairs->data_set_pairs(b, *d, pairs, npairs);
    return;
  }
  if (*d) b->ops->gmm->data_free(b, *d);
  *d = b->ops->gmm->data_upload(b, X, T, D, pairs, npairs);
}

void gh_pack_rows(float *dst, size_t ld, const float *src, size_t D, size_t n) {
#pragma omp parallel for schedule(static) if (n * ld >= ((size_t)1 << 18))
  for (size_t t = 0; t < n; ++t) {
    memcpy(dst + t * ld, src + t * D, D * sizeof(float));
    if (ld > D) memset(dst + t * ld + D, 0, (ld - D) * sizeof(float));
  }
}

void *gh_backend_host_alloc(gh_backend *b, size_t bytes) {
  return gh_backend_supports(b, GH_CAP_HOST_MEM) ? b->ops->host_mem->host_alloc(b, bytes) : gh_malloc(bytes);
}

void gh_backend_host_free(gh_backend *b, void *p) {
  if (!p) return;
  if (gh_backend_supports(b, GH_CAP_HOST_MEM)) b->ops->host_mem->host_free(b, p);
  else free(p);
}

int32_t gh_pairs_check(const gh_frame_pdf *pairs, int64_t npairs, int32_t T) {
  int32_t max_pdf = -1;
  for (int64_t k = 0; k < npairs; ++k) {
    if (pairs[k].frame < 0 || pairs[k].frame >= T || pairs[k].pdf < 0)
      gh_die("data upload: pair %lld (frame %d, pdf %d) out of range (%d frames)", (long long)k, pairs[k].frame,
             pairs[k].pdf, T);
    if (pairs[k].pdf > max_pdf) max_pdf = pairs[k].pdf;
  }
  return max_pdf;
}

/* Chunks of pairs for gh_pairs_sort_by_pdf's threads: one per thread, and
 * none below 2^19 pairs (about 3.5 ms of one thread's work; the counts'
 * per-thread tables cost P each).  Each pass is one static chunk per
 * thread, so a smaller chunk mostly waited for a descheduled thread on a
 * loaded host: hmm-train's 360,008 pairs of GaussianHMM(8) took 0.06-0.11 s
 * on 2 threads against 0.0025 s on one (bench/RESULTS.md Y3). */
static int pair_chunks(int64_t npairs) {
  int n = 1;
#ifdef _OPENMP
  n = omp_get_max_threads();
#endif
  while (n > 1 && npairs / n < ((int64_t)1 << 19)) --n;
  return n;
}

int64_t *gh_pairs_sort_by_pdf(const gh_frame_pdf *pairs, int64_t npairs, int32_t T, int32_t *max_pdf,
                              int32_t *frame, float *weight) {
  const int nc = pair_chunks(npairs);
  int64_t *bad = gh_malloc(sizeof(int64_t) * (size_t)nc);
  int32_t *mx = gh_malloc(sizeof(int32_t) * (size_t)nc);
  /* pass 1: each chunk's first bad pair and largest pdf */
#pragma omp parallel for num_threads(nc) schedule(static, 1)
  for (int c = 0; c < nc; ++c) {
    const int64_t k0 = npairs * c / nc, k1 = npairs * (c + 1) / nc;
    int32_t m = -1;
    bad[c] = -1;
    for (int64_t k = k0; k < k1; ++k) {
      if (pairs[k].frame < 0 || pairs[k].frame >= T || pairs[k].pdf < 0) { bad[c] = k; break; }
      if (pairs[k].pdf > m) m = pairs[k].pdf;
    }
    mx[c] = m;
  }
  int32_t P1 = -1;
  for (int c = 0; c < nc; ++c) {
    if (bad[c] >= 0) gh_pairs_check(pairs, bad[c] + 1, T); /* dies with its message */
    if (mx[c] > P1) P1 = mx[c];
  }
  free(bad);
  free(mx);
  *max_pdf = P1;
  const int64_t np1 = (int64_t)P1 + 1;
  int64_t *off = gh_calloc((size_t)np1 + 1, sizeof(int64_t));
  /* pass 2: per-chunk counts; pdf p's pairs of chunk c start after those of
   * chunks < c, so each chunk places its pairs in order */
  int64_t *pos = gh_calloc((size_t)nc * (size_t)np1 + 1, sizeof(int64_t));
#pragma omp parallel for num_threads(nc) schedule(static, 1)
  for (int c = 0; c < nc; ++c) {
    int64_t *h = pos + (size_t)c * np1;
    for (int64_t k = npairs * c / nc; k < npairs * (c + 1) / nc; ++k) h[pairs[k].pdf]++;
  }
  int64_t at = 0;
  for (int64_t p = 0; p < np1; ++p) {
    off[p] = at;
    for (int c = 0; c < nc; ++c) {
      const int64_t n = pos[(size_t)c * np1 + p];
      pos[(size_t)c * np1 + p] = at;
      at += n;
    }
  }
  off[np1] = at;
#pragma omp parallel for num_threads(nc) schedule(static, 1)
  for (int c = 0; c < nc; ++c) {
    int64_t *h = pos + (size_t)c * np1;
    for (int64_t k = npairs * c / nc; k < npairs * (c + 1) / nc; ++k) {
      const int64_t q = h[pairs[k].pdf]++;
      frame[q] = pairs[k].frame;
      weight[q] = pairs[k].weight;
    }
  }
  free(pos);
  return off;
}

void gh_gselect_check(const gh_gmm *gmm, int32_t T, const int32_t *sel_off, const int32_t *sel,
                      const gh_gmm_accs *accs) {
  if (T < 0) gh_die("Gaussian selection: %d frames", T);
  if (T > 0 && sel_off[0] != 0) gh_die("Gaussian selection: offsets do not start at 0");
  for (int32_t t = 0; t < T; ++t) {
    if (sel_off[t + 1] <= sel_off[t]) gh_die("Gaussian selection: frame %d has an empty list", t);
    for (int32_t j = sel_off[t]; j < sel_off[t + 1]; ++j)
      if (sel[j] < 0 || sel[j] >= gmm->num_gauss)
        gh_die("Gaussian selection: frame %d selects Gaussian %d, the model has %d", t, sel[j], gmm->num_gauss);
  }
  if (accs && (accs->num_gauss != gmm->num_gauss || accs->dim != gmm->dim || accs->type != gmm->type))
    gh_die("Gaussian selection: accumulators (%d Gaussians, dim %d) do not match the model (%d Gaussians, dim %d)",
           accs->num_gauss, accs->dim, gmm->num_gauss, gmm->dim);
}

void gh_gselect_plan_make(gh_gselect_plan *p, int32_t G, int32_t t0, int32_t t1, const int32_t *sel_off,
                          const int32_t *sel, int32_t seg) {
  memset(p, 0, sizeof *p);
  const int32_t base = sel_off[t0];
  p->n = (int64_t)sel_off[t1] - base;
  p->ent = gh_malloc(sizeof(int32_t) * (size_t)(p->n > 0 ? p->n : 1));
  p->efr = gh_malloc(sizeof(int32_t) * (size_t)(p->n > 0 ? p->n : 1));
  p->gstart = gh_calloc((size_t)G + 1, sizeof(int32_t));
  p->gitem = gh_calloc((size_t)G + 1, sizeof(int32_t));
  for (int64_t k = 0; k < p->n; ++k) p->gstart[sel[base + k] + 1]++;
  for (int32_t g = 0; g < G; ++g) p->gstart[g + 1] += p->gstart[g];
  int32_t *fill = gh_malloc(sizeof(int32_t) * (size_t)(G > 0 ? G : 1));
  memcpy(fill, p->gstart, sizeof(int32_t) * (size_t)G);
  for (int32_t t = t0; t < t1; ++t)
    for (int32_t j = sel_off[t]; j < sel_off[t + 1]; ++j) {
      int32_t q = fill[sel[j]]++;
      p->ent[q] = j - base;
      p->efr[q] = t - t0;
    }
  free(fill);
  for (int32_t g = 0; g < G; ++g) {
    int32_t c = p->gstart[g + 1] - p->gstart[g];
    p->gitem[g + 1] = p->gitem[g] + (c + seg - 1) / seg;
  }
  p->nitems = p->gitem[G];
  size_t ni = (size_t)(p->nitems > 0 ? p->nitems : 1);
  p->item_g = gh_malloc(sizeof(int32_t) * ni);
  p->item_start = gh_malloc(sizeof(int32_t) * ni);
  p->item_count = gh_malloc(sizeof(int32_t) * ni);
  for (int32_t g = 0, i = 0; g < G; ++g)
    for (int32_t s = p->gstart[g]; s < p->gstart[g + 1]; s += seg, ++i) {
      p->item_g[i] = g;
      p->item_start[i] = s;
      p->item_count[i] = p->gstart[g + 1] - s < seg ? p->gstart[g + 1] - s : seg;
    }
}

void gh_gselect_plan_free(gh_gselect_plan *p) {
  free(p->ent); free(p->efr); free(p->gstart); free(p->gitem);
  free(p->item_g); free(p->item_start); free(p->item_count);
  memset(p, 0, sizeof *p);
}
