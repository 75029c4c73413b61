/* opencl-align.c -- align_batch for the opencl backend (backend.h
 * gh_ops_align; kernel: align.cl gh_align_batch, one work-group per
 * utterance).  The batch's plan (kernels/align-plan.h) and log-likelihoods
 * are copied to the device in one go, the kernel runs the whole batch, and
 * the paths come back. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "align-plan.h"
#include "base/gh-base.h"
#include "opencl.h"

#define AL_WG 64 /* align.cl */

void gh_ocl_align_batch(gh_backend *b, const gh_align_batch *batch, gh_align_out *out) {
  ocl_ctx *c = b->ctx;
  gh_align_plan p;
  gh_align_plan_make(&p, batch);
  const int32_t B = p.B;
  if (B == 0) {
    gh_align_plan_free(&p);
    return;
  }
  float *ll = gh_malloc((size_t)(p.ll_off[B] ? p.ll_off[B] : 1) * sizeof(float));
  for (int32_t u = 0; u < B; ++u)
    memcpy(ll + p.ll_off[u], batch->loglikes[u], (size_t)(p.ll_off[u + 1] - p.ll_off[u]) * sizeof(float));
  const size_t nb = (size_t)B, na = (size_t)p.arc_off[B], ns = (size_t)p.st_off[B];
  const size_t nck = (size_t)p.ck_off[B], nbp = (size_t)p.bp_off[B], npath = (size_t)p.path_off[B];
  const size_t need[] = {sizeof(float) * (size_t)p.ll_off[B], sizeof(double) * nck, sizeof(int32_t) * nbp,
                         sizeof(int32_t) * npath};
  for (int i = 0; i < 4; ++i)
    if (need[i] > c->max_alloc)
      gh_die("align_batch: the OpenCL device %s cannot hold the batch (%zu bytes in one buffer, at most %llu); "
             "use a smaller --batch-size or --max-bp-memory", b->device_name, need[i],
             (unsigned long long)c->max_alloc);
  cl_mem m[28];
  int k = 0;
#define BUF(bytes, host, what) (m[k++] = gh_ocl_buffer(c, (bytes), (host), (what)))
  BUF(nb * 4, p.S, "align states");
  BUF(nb * 4, p.T, "align frames");
  BUF(nb * 4, p.K, "align intervals");
  BUF(nb * 4, p.start, "align starts");
  BUF(nb * 4, p.neps, "align epsilons");
  BUF(nb * 8, p.st_off, "align offsets");
  BUF(nb * 8, p.arc_off, "align offsets");
  BUF(nb * 8, p.ll_off, "align offsets");
  BUF(nb * 8, p.ck_off, "align offsets");
  BUF(nb * 8, p.bp_off, "align offsets");
  BUF(nb * 8, p.path_off, "align offsets");
  BUF(nb * 8, p.path_cap, "align offsets");
  BUF(na * 4, p.arc_src, "align arcs");
  BUF(na * 4, p.arc_col, "align arcs");
  BUF(na * 4, p.arc_w, "align arcs");
  BUF((ns + nb) * 4, p.in_off, "align in-arcs");
  BUF(ns * 4, p.in_mid, "align in-arcs");
  BUF(na * 4, p.in_arc, "align in-arcs");
  BUF(ns * 4, p.final, "align final costs");
  BUF(need[0], ll, "align log-likelihoods");
  const int nin = k;
  BUF(2 * ns * 8, NULL, "align costs");
  BUF(nck * 8, NULL, "align checkpoints");
  BUF(nck * 4, NULL, "align checkpoints");
  BUF(nbp * 4, NULL, "align back-pointers");
  BUF(npath * 4, NULL, "align paths");
  BUF(nb * 8, NULL, "align path lengths");
  BUF(nb * 8, NULL, "align costs");
#undef BUF
  free(ll);
  cl_kernel kr = c->k_align;
  cl_uint i = 0;
  for (int j = 0; j < nin; ++j) gh_ocl_arg(kr, i++, sizeof(cl_mem), &m[j]);
  const cl_int cld = p.ld;
  const cl_float cas = p.acoustic_scale;
  gh_ocl_arg(kr, i++, sizeof cld, &cld);
  gh_ocl_arg(kr, i++, sizeof cas, &cas);
  for (int j = nin; j < k; ++j) gh_ocl_arg(kr, i++, sizeof(cl_mem), &m[j]);
  size_t gl = nb * AL_WG, lo = AL_WG;
  gh_ocl_launch(c, kr, 1, &gl, &lo, "align_batch");
  int64_t *len = gh_malloc(nb * sizeof(int64_t));
  double *cost = gh_malloc(nb * sizeof(double));
  int32_t *path = gh_malloc((npath ? npath : 1) * sizeof(int32_t));
  gh_ocl_read(c, m[k - 2], 0, nb * 8, len);
  gh_ocl_read(c, m[k - 1], 0, nb * 8, cost);
  gh_ocl_read(c, m[k - 3], 0, npath * 4, path);
  for (int j = 0; j < k; ++j) gh_ocl_release(m[j]);
  for (int32_t u = 0; u < B; ++u) {
    gh_align_out *o = &out[u];
    o->arcs = NULL;
    o->num_arcs = 0;
    o->reached = len[u] >= 0;
    o->cost = o->reached ? cost[u] : INFINITY;
    if (len[u] < -1) gh_die("align_batch: internal: the OpenCL trace of utterance %d failed (%lld)", u,
                            (long long)len[u]);
    if (!o->reached) continue;
    const int64_t n = len[u];
    o->num_arcs = (int32_t)n;
    o->arcs = gh_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    for (int64_t j = 0; j < n; ++j) o->arcs[j] = path[p.path_off[u] + n - 1 - j];
  }
  free(len);
  free(cost);
  free(path);
  gh_align_plan_free(&p);
}
