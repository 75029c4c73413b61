/* gselect.cu -- the CUDA acc_gselect op (backend.h): the E-step over given
 * Gaussian selections (Kaldi's --gselect); reference kernels/cpu/gselect.c.
 * Self-contained (uploads the GMM, frames and selections, frees them before
 * returning).  Frames go in chunks of at most GS_CHUNK_ENT entries; per
 * chunk:
 *  k_gs_ll:     one thread per selection entry, in the plan's order (below:
 *               grouped by Gaussian, so a warp reads one Gaussian's
 *               parameters): ll = norm - 0.5 (x - mu)' P (x - mu) of its
 *               Gaussian in double (gh_gselect_params: norm and mu in double
 *               from the float parameters; -inf for a dead Gaussian).
 *  k_gs_norm:   one thread per frame: lse over its entries, posteriors
 *               exp(ll - lse), the frame's lse.
 *  k_gs_stats:  one thread block per work item of the host plan
 *               (gh_gselect_plan: the chunk's entries grouped by Gaussian,
 *               in frame order, pieces of at most GS_SEG): threads own the
 *               K = 1 + D + S statistic elements (1, x_i, x_i x_j or x_i^2),
 *               the item's frames and weighted posteriors are staged in
 *               shared memory GS_TILE at a time; each item's sums go to its
 *               own row of a partial buffer.
 *  k_gs_reduce: one thread per (Gaussian, element): the Gaussian's items
 *               added in item order into the double accumulators.
 * No atomics: the sums are the same on every run.  The frame
 * log-likelihoods come back to the host and are summed there in frame
 * order.  D <= GS_MAXD; larger dimensions run on the CPU reference. */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "backend.h"
#include "base/env.h"
#include "base/gh-base.h"
#include "cuda-check.h"
}

#define GS_MAXD 256
#define GS_TILE 32
#define GS_SEG 2048
#define GS_THREADS 256
#define GS_CHUNK_ENT (1 << 22)

/* Thread k takes the k-th entry in the plan's order (grouped by Gaussian),
 * so the threads of a warp mostly read the same Gaussian's parameters. */
__global__ void k_gs_ll(int n, int D, int full, const float *__restrict__ X, const int *__restrict__ ent,
                        const int *__restrict__ efr_sorted, const int *__restrict__ sel,
                        const double *__restrict__ norm, const double *__restrict__ mu, const float *__restrict__ iv,
                        double *__restrict__ ll) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  const int e = ent[k], g = sel[e];
  const float *x = X + (long long)efr_sorted[k] * D;
  const double nm = norm[g];
  if (nm == -INFINITY) { ll[e] = nm; return; } /* dead Gaussian (gh_gselect_params) */
  const double *m = mu + (long long)g * D;
  double q = 0.0;
  if (!full) {
    const float *p = iv + (long long)g * D;
    for (int i = 0; i < D; ++i) {
      const double d = (double)x[i] - m[i];
      q += (double)p[i] * d * d;
    }
  } else {
    const float *P = iv + (long long)g * D * (D + 1) / 2;
    for (int i = 0; i < D; ++i) {
      const float *row = P + (long long)i * (i + 1) / 2;
      const double di = (double)x[i] - m[i];
      double t = 0.5 * (double)row[i] * di;
      for (int j = 0; j < i; ++j) t += (double)row[j] * ((double)x[j] - m[j]);
      q += 2.0 * di * t;
    }
  }
  ll[e] = nm - 0.5 * q;
}

__global__ void k_gs_norm(int T, const int *__restrict__ off, const double *__restrict__ ll, float *__restrict__ post,
                          double *__restrict__ fll) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= T) return;
  const int j0 = off[t], j1 = off[t + 1];
  double mx = -INFINITY;
  for (int j = j0; j < j1; ++j) mx = fmax(mx, ll[j]);
  double lse = mx;
  if (isfinite(mx)) {
    double s = 0.0;
    for (int j = j0; j < j1; ++j) s += exp(ll[j] - mx);
    lse = mx + log(s);
  }
  fll[t] = lse;
  for (int j = j0; j < j1; ++j) post[j] = isfinite(lse) ? (float)exp(ll[j] - lse) : 0.0f;
}

__global__ void __launch_bounds__(GS_THREADS)
k_gs_stats(int D, int K, const int *__restrict__ item_start, const int *__restrict__ item_count,
           const int *__restrict__ ent, const int *__restrict__ efr_sorted, const float *__restrict__ X,
           const int *__restrict__ off, const float *__restrict__ post, const double *__restrict__ ll,
           const float *__restrict__ w, const short *__restrict__ ei, const short *__restrict__ ej,
           double *__restrict__ part) {
  __shared__ float xs[GS_TILE * GS_MAXD];
  __shared__ double gs[GS_TILE];
  const int start = item_start[blockIdx.x], count = item_count[blockIdx.x];
  for (int e0 = 0; e0 < K; e0 += blockDim.x) {
    const int e = e0 + threadIdx.x;
    const int i = e < K ? ei[e] : -1, j = e < K ? ej[e] : -1;
    double acc = 0.0;
    for (int r0 = 0; r0 < count; r0 += GS_TILE) {
      const int nt = min(GS_TILE, count - r0);
      __syncthreads();
      for (int idx = threadIdx.x; idx < nt * D; idx += blockDim.x) {
        const int r = idx / D, d = idx - r * D;
        xs[r * D + d] = X[(long long)efr_sorted[start + r0 + r] * D + d];
      }
      for (int r = threadIdx.x; r < nt; r += blockDim.x) {
        const int k = start + r0 + r, en = ent[k], f = efr_sorted[k];
        gs[r] = (double)post[en] * (w ? (double)w[f] : 1.0);
      }
      __syncthreads();
      if (e < K) {
        if (i < 0) {
          for (int r = 0; r < nt; ++r) acc += gs[r];
        } else if (j < 0) {
          for (int r = 0; r < nt; ++r) acc += gs[r] * xs[r * D + i];
        } else {
          for (int r = 0; r < nt; ++r) acc += gs[r] * ((double)xs[r * D + i] * xs[r * D + j]);
        }
      }
    }
    if (e < K) part[(long long)blockIdx.x * K + e] = acc;
  }
}

__global__ void k_gs_reduce(int G, int K, const int *__restrict__ gitem, const double *__restrict__ part,
                            double *__restrict__ acc) {
  const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= (long long)G * K) return;
  const int g = (int)(q / K), e = (int)(q - (long long)g * K);
  double s = 0.0;
  for (int it = gitem[g]; it < gitem[g + 1]; ++it) s += part[(long long)it * K + e];
  acc[q] += s;
}

template <typename T> static T *dmalloc(size_t n) {
  T *d = NULL;
  CK(cudaMalloc((void **)&d, (n ? n : 1) * sizeof(T)));
  return d;
}
template <typename T> static void up(T *d, const T *h, size_t n) {
  if (n) CK(cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice));
}

/* GS_CHUNK_ENT and GS_SEG, or $GH_GSELECT_CHUNK / $GH_GSELECT_SEG when set
 * (tests: many chunks and work items on small data). */
static int64_t gs_env(const char *name, int64_t dflt) {
  return (int64_t)gh_env_int(name, dflt, 1, INT64_MAX);
}

extern "C" double gh_cuda_acc_gselect(gh_backend *b, const gh_gmm *gmm, const float *X, int32_t T,
                                      const int32_t *sel_off, const int32_t *sel, const float *w, gh_gmm_accs *accs,
                                      float *post, double *frame_ll) {
  const int D = gmm->dim, G = gmm->num_gauss, full = gmm->type == GH_COV_FULL;
  if (D > GS_MAXD) {
    gh_vlog(1, "Gaussian selection: dimension %d > %d, running it on the CPU reference", D, GS_MAXD);
    return gh_cpu_acc_gselect(b, gmm, X, T, sel_off, sel, w, accs, post, frame_ll);
  }
  gh_gselect_check(gmm, T, sel_off, sel, accs);
  if (T == 0) return 0.0;
  const long long S = full ? (long long)D * (D + 1) / 2 : D;
  const int K = (int)(1 + D + S);
  /* element table: (-1,-1) occupancy, (i,-1) x_i, (i,j) x_i x_j */
  short *hei = (short *)gh_malloc(sizeof(short) * K), *hej = (short *)gh_malloc(sizeof(short) * K);
  int e = 0;
  hei[e] = -1; hej[e] = -1; ++e;
  for (int i = 0; i < D; ++i) { hei[e] = (short)i; hej[e] = -1; ++e; }
  for (int i = 0; i < D; ++i) {
    if (!full) { hei[e] = (short)i; hej[e] = (short)i; ++e; continue; }
    for (int j = 0; j <= i; ++j) { hei[e] = (short)i; hej[e] = (short)j; ++e; }
  }
  double *dgc = dmalloc<double>(G), *dmi = dmalloc<double>((size_t)G * D);
  float *div = dmalloc<float>((size_t)G * S);
  double *hnorm, *hmu;
  gh_gselect_params(gmm, &hnorm, &hmu);
  up(dgc, hnorm, G); up(dmi, hmu, (size_t)G * D); up(div, gmm->inv_vars, (size_t)G * S);
  free(hnorm); free(hmu);
  short *dei = dmalloc<short>(K), *dej = dmalloc<short>(K);
  up(dei, hei, K); up(dej, hej, K);
  double *dacc = NULL;
  if (accs) {
    dacc = dmalloc<double>((size_t)G * K);
    CK(cudaMemset(dacc, 0, sizeof(double) * (size_t)G * K));
  }
  double total = 0.0;
  double *hfll = (double *)gh_malloc(sizeof(double) * (size_t)T);
  const int64_t chunk_ent = gs_env("GH_GSELECT_CHUNK", GS_CHUNK_ENT);
  const int32_t seg = (int32_t)gs_env("GH_GSELECT_SEG", GS_SEG);
  int32_t t0 = 0;
  while (t0 < T) {
    int32_t t1 = t0 + 1;
    while (t1 < T && (int64_t)sel_off[t1 + 1] - sel_off[t0] <= chunk_ent) ++t1;
    const int Tc = t1 - t0, n = sel_off[t1] - sel_off[t0];
    int *hoff = (int *)gh_malloc(sizeof(int) * ((size_t)Tc + 1));
    for (int t = 0; t <= Tc; ++t) hoff[t] = sel_off[t0 + t] - sel_off[t0];
    gh_gselect_plan pl;
    gh_gselect_plan_make(&pl, G, t0, t1, sel_off, sel, seg);
    float *dX = dmalloc<float>((size_t)Tc * D), *dw = w ? dmalloc<float>(Tc) : NULL, *dpost = dmalloc<float>(n);
    int *doff = dmalloc<int>((size_t)Tc + 1), *dsel = dmalloc<int>(n), *dent = dmalloc<int>(n), *defs = dmalloc<int>(n);
    double *dll = dmalloc<double>(n), *dfll = dmalloc<double>(Tc);
    up(dX, X + (int64_t)t0 * D, (size_t)Tc * D);
    if (w) up(dw, w + t0, Tc);
    up(doff, hoff, (size_t)Tc + 1); up(dsel, sel + sel_off[t0], n); up(dent, pl.ent, n); up(defs, pl.efr, n);
    k_gs_ll<<<(n + 255) / 256, 256>>>(n, D, full, dX, dent, defs, dsel, dgc, dmi, div, dll);
    CK_LAUNCH("k_gs_ll");
    k_gs_norm<<<(Tc + 255) / 256, 256>>>(Tc, doff, dll, dpost, dfll);
    CK_LAUNCH("k_gs_norm");
    CK(cudaMemcpy(hfll + t0, dfll, sizeof(double) * Tc, cudaMemcpyDeviceToHost));
    if (post) CK(cudaMemcpy(post + sel_off[t0], dpost, sizeof(float) * n, cudaMemcpyDeviceToHost));
    if (accs) {
      int *dis = dmalloc<int>(pl.nitems), *dic = dmalloc<int>(pl.nitems), *dgi = dmalloc<int>((size_t)G + 1);
      up(dis, pl.item_start, pl.nitems); up(dic, pl.item_count, pl.nitems);
      up(dgi, pl.gitem, (size_t)G + 1);
      double *dpart = dmalloc<double>((size_t)pl.nitems * K);
      if (pl.nitems > 0) {
        k_gs_stats<<<pl.nitems, GS_THREADS>>>(D, K, dis, dic, dent, defs, dX, doff, dpost, dll, dw, dei, dej, dpart);
        CK_LAUNCH("k_gs_stats");
      }
      const long long GK = (long long)G * K;
      k_gs_reduce<<<(unsigned)((GK + 255) / 256), 256>>>(G, K, dgi, dpart, dacc);
      CK_LAUNCH("k_gs_reduce");
      void *fr[] = {dis, dic, dgi, dpart};
      for (size_t q = 0; q < sizeof fr / sizeof *fr; ++q) CK(cudaFree(fr[q]));
    }
    gh_gselect_plan_free(&pl);
    void *fr[] = {dX, dw, dpost, doff, dsel, dent, defs, dll, dfll};
    for (size_t q = 0; q < sizeof fr / sizeof *fr; ++q)
      if (fr[q]) CK(cudaFree(fr[q]));
    free(hoff);
    t0 = t1;
  }
  for (int32_t t = 0; t < T; ++t) total += (w ? (double)w[t] : 1.0) * hfll[t];
  if (frame_ll) memcpy(frame_ll, hfll, sizeof(double) * (size_t)T);
  if (accs) {
    double *h = (double *)gh_malloc(sizeof(double) * (size_t)G * K);
    CK(cudaMemcpy(h, dacc, sizeof(double) * (size_t)G * K, cudaMemcpyDeviceToHost));
    for (int g = 0; g < G; ++g) {
      const double *r = h + (size_t)g * K;
      accs->occupancy[g] += r[0];
      for (int i = 0; i < D; ++i) accs->mean_accs[(size_t)g * D + i] += r[1 + i];
      for (long long k = 0; k < S; ++k) accs->var_accs[(size_t)g * S + k] += r[1 + D + k];
    }
    free(h);
    CK(cudaFree(dacc));
  }
  void *fr[] = {dgc, dmi, div, dei, dej};
  for (size_t q = 0; q < sizeof fr / sizeof *fr; ++q) CK(cudaFree(fr[q]));
  free(hei); free(hej); free(hfll);
  return total;
}
