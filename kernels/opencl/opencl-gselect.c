/* opencl-gselect.c -- the acc_gselect op of the opencl backend (backend.h;
 * kernels: gselect.cl; the same chunks, plan and order of sums as
 * kernels/cuda/gselect.cu, reference kernels/cpu/gselect.c).  Needs
 * cl_khr_fp64 (the backend's table without fp64 leaves the op NULL, so the
 * CPU reference runs). */
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/gh-base.h"
#include "opencl.h"

#define GS_MAXD 256
#define GS_TILE 32
#define GS_SEG 2048
#define GS_LS 64
#define GS_CHUNK_ENT (1 << 22)

static cl_kernel mk(ocl_ctx *c, const char *name) {
  cl_int err;
  cl_kernel k = clCreateKernel(c->prog, name, &err);
  gh_ocl_check(err, name);
  return k;
}

/* GS_CHUNK_ENT and GS_SEG, or $GH_GSELECT_CHUNK / $GH_GSELECT_SEG when set
 * (tests: many chunks and work items on small data). */
static int64_t gs_env(const char *name, int64_t dflt) {
  return (int64_t)gh_env_int(name, dflt, 1, INT64_MAX);
}

double gh_ocl_acc_gselect(gh_backend *b, const gh_gmm *gmm, const float *X, int32_t T, const int32_t *sel_off,
                          const int32_t *sel, const float *w, gh_gmm_accs *accs, float *post, double *frame_ll) {
  ocl_ctx *c = b->ctx;
  const cl_int D = gmm->dim, G = gmm->num_gauss, full = gmm->type == GH_COV_FULL;
  if (D > GS_MAXD) {
    gh_vlog(1, "Gaussian selection: dimension %d > %d, running it on the CPU reference", D, GS_MAXD);
    return gh_cpu_acc_gselect(b, gmm, X, T, sel_off, sel, w, accs, post, frame_ll);
  }
  gh_gselect_check(gmm, T, sel_off, sel, accs);
  if (T == 0) return 0.0;
  const int64_t S = full ? (int64_t)D * (D + 1) / 2 : D;
  const cl_int K = (cl_int)(1 + D + S);
  short *hei = gh_malloc(sizeof(short) * (size_t)K), *hej = gh_malloc(sizeof(short) * (size_t)K);
  int e = 0;
  hei[e] = -1; hej[e] = -1; ++e;
  for (int i = 0; i < D; ++i) { hei[e] = (short)i; hej[e] = -1; ++e; }
  for (int i = 0; i < D; ++i) {
    if (!full) { hei[e] = (short)i; hej[e] = (short)i; ++e; continue; }
    for (int j = 0; j <= i; ++j) { hei[e] = (short)i; hej[e] = (short)j; ++e; }
  }
  cl_kernel kll = mk(c, "gh_gs_ll"), knorm = mk(c, "gh_gs_norm"), kst = mk(c, "gh_gs_stats"),
            kred = mk(c, "gh_gs_reduce");
  double *hnorm, *hmu;
  gh_gselect_params(gmm, &hnorm, &hmu);
  cl_mem dgc = gh_ocl_buffer(c, sizeof(double) * (size_t)G, hnorm, "gselect normalisers");
  cl_mem dmi = gh_ocl_buffer(c, sizeof(double) * (size_t)G * D, hmu, "gselect means");
  free(hnorm); free(hmu);
  cl_mem div = gh_ocl_buffer(c, sizeof(float) * (size_t)(G * S), gmm->inv_vars, "gselect inv_vars");
  cl_mem dei = gh_ocl_buffer(c, sizeof(short) * (size_t)K, hei, "gselect elements");
  cl_mem dej = gh_ocl_buffer(c, sizeof(short) * (size_t)K, hej, "gselect elements");
  cl_mem dacc = NULL;
  const size_t GK = (size_t)G * K;
  double *h = NULL;
  if (accs) {
    h = gh_calloc(GK, sizeof(double));
    dacc = gh_ocl_buffer(c, sizeof(double) * GK, h, "gselect accumulators");
  }
  double *hfll = gh_malloc(sizeof(double) * (size_t)T);
  const int64_t chunk_ent = gs_env("GH_GSELECT_CHUNK", GS_CHUNK_ENT);
  const int32_t seg = (int32_t)gs_env("GH_GSELECT_SEG", GS_SEG);
  for (int32_t t0 = 0; t0 < T;) {
    int32_t t1 = t0 + 1;
    while (t1 < T && (int64_t)sel_off[t1 + 1] - sel_off[t0] <= chunk_ent) ++t1;
    const cl_int Tc = t1 - t0, n = sel_off[t1] - sel_off[t0];
    int *hoff = gh_malloc(sizeof(int) * ((size_t)Tc + 1));
    for (int t = 0; t <= Tc; ++t) hoff[t] = sel_off[t0 + t] - sel_off[t0];
    gh_gselect_plan pl;
    gh_gselect_plan_make(&pl, G, t0, t1, sel_off, sel, seg);
    cl_mem dent = gh_ocl_buffer(c, sizeof(int) * (size_t)n, pl.ent, "gselect plan");
    cl_mem defs = gh_ocl_buffer(c, sizeof(int) * (size_t)n, pl.efr, "gselect plan");
    cl_mem dX = gh_ocl_buffer(c, sizeof(float) * (size_t)Tc * D, X + (int64_t)t0 * D, "gselect frames");
    cl_mem dw = gh_ocl_buffer(c, sizeof(float) * (size_t)Tc, w ? w + t0 : NULL, "gselect weights");
    cl_mem doff = gh_ocl_buffer(c, sizeof(int) * ((size_t)Tc + 1), hoff, "gselect offsets");
    cl_mem dsel = gh_ocl_buffer(c, sizeof(int) * (size_t)n, sel + sel_off[t0], "gselect lists");
    cl_mem dll = gh_ocl_buffer(c, sizeof(double) * (size_t)n, NULL, "gselect loglikes");
    cl_mem dpost = gh_ocl_buffer(c, sizeof(float) * (size_t)n, NULL, "gselect posteriors");
    cl_mem dfll = gh_ocl_buffer(c, sizeof(double) * (size_t)Tc, NULL, "gselect frame loglikes");
    ARG(kll, 0, n); ARG(kll, 1, D); ARG(kll, 2, full); ARG(kll, 3, dX); ARG(kll, 4, dent); ARG(kll, 5, defs);
    ARG(kll, 6, dsel); ARG(kll, 7, dgc); ARG(kll, 8, dmi); ARG(kll, 9, div); ARG(kll, 10, dll);
    size_t gl = (size_t)n, lo = 64;
    gh_ocl_launch(c, kll, 1, &gl, &lo, "gselect loglikes");
    ARG(knorm, 0, Tc); ARG(knorm, 1, doff); ARG(knorm, 2, dll); ARG(knorm, 3, dpost); ARG(knorm, 4, dfll);
    gl = (size_t)Tc;
    gh_ocl_launch(c, knorm, 1, &gl, &lo, "gselect normalisation");
    gh_ocl_read(c, dfll, 0, sizeof(double) * (size_t)Tc, hfll + t0);
    if (post) gh_ocl_read(c, dpost, 0, sizeof(float) * (size_t)n, post + sel_off[t0]);
    if (accs) {
      cl_mem dis = gh_ocl_buffer(c, sizeof(int) * (size_t)(pl.nitems ? pl.nitems : 1), pl.item_start, "gselect plan");
      cl_mem dic = gh_ocl_buffer(c, sizeof(int) * (size_t)(pl.nitems ? pl.nitems : 1), pl.item_count, "gselect plan");
      cl_mem dgi = gh_ocl_buffer(c, sizeof(int) * ((size_t)G + 1), pl.gitem, "gselect plan");
      cl_mem dpart = gh_ocl_buffer(c, sizeof(double) * (size_t)(pl.nitems ? pl.nitems : 1) * K, NULL, "gselect partial sums");
      if (pl.nitems > 0) {
        const cl_int use_w = w != NULL;
        ARG(kst, 0, D); ARG(kst, 1, K); ARG(kst, 2, use_w); ARG(kst, 3, dis); ARG(kst, 4, dic); ARG(kst, 5, dent);
        ARG(kst, 6, defs); ARG(kst, 7, dX); ARG(kst, 8, dpost); ARG(kst, 9, dw); ARG(kst, 10, dei); ARG(kst, 11, dej);
        ARG(kst, 12, dpart);
        gh_ocl_arg(kst, 13, sizeof(float) * GS_TILE * (size_t)D, NULL);
        gh_ocl_arg(kst, 14, sizeof(double) * GS_TILE, NULL);
        size_t lls = GS_LS;
        if (lls > c->max_wg) lls = c->max_wg;
        size_t g2 = (size_t)pl.nitems * lls;
        gh_ocl_launch(c, kst, 1, &g2, &lls, "gselect statistics");
      }
      ARG(kred, 0, G); ARG(kred, 1, K); ARG(kred, 2, dgi); ARG(kred, 3, dpart); ARG(kred, 4, dacc);
      size_t g3 = GK;
      gh_ocl_launch(c, kred, 1, &g3, &lo, "gselect reduction");
      cl_mem fr[] = {dis, dic, dgi, dpart};
      gh_ocl_check(clFinish(c->q), "gselect statistics");
      for (size_t q = 0; q < sizeof fr / sizeof *fr; ++q) gh_ocl_release(fr[q]);
    }
    gh_ocl_check(clFinish(c->q), "gselect");
    gh_gselect_plan_free(&pl);
    cl_mem fr[] = {dX, dw, doff, dent, defs, dsel, dll, dpost, dfll};
    for (size_t q = 0; q < sizeof fr / sizeof *fr; ++q) gh_ocl_release(fr[q]);
    free(hoff);
    t0 = t1;
  }
  double total = 0.0;
  for (int32_t t = 0; t < T; ++t) total += (w ? (double)w[t] : 1.0) * hfll[t];
  if (frame_ll) memcpy(frame_ll, hfll, sizeof(double) * (size_t)T);
  if (accs) {
    gh_ocl_read(c, dacc, 0, sizeof(double) * GK, h);
    for (int g = 0; g < G; ++g) {
      const double *r = h + (size_t)g * K;
      accs->occupancy[g] += r[0];
      for (int i = 0; i < D; ++i) accs->mean_accs[(size_t)g * D + i] += r[1 + i];
      for (int64_t k = 0; k < S; ++k) accs->var_accs[(size_t)g * S + k] += r[1 + D + k];
    }
    gh_ocl_release(dacc);
    free(h);
  }
  cl_mem fr[] = {dgc, dmi, div, dei, dej};
  for (size_t q = 0; q < sizeof fr / sizeof *fr; ++q) gh_ocl_release(fr[q]);
  clReleaseKernel(kll); clReleaseKernel(knorm); clReleaseKernel(kst); clReleaseKernel(kred);
  free(hei); free(hej); free(hfll);
  return total;
}
