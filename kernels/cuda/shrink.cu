/* shrink.cu -- the CUDA acc_shrink op (backend.h): shrinkage statistics
 * (lib/gmm/shrink.h) on the GPU; reference kernels/cpu/shrink.c, checked
 * against it by test/run-gpu.sh.  Self-contained: it uploads the host model
 * (full-covariance pdfs, parameters as double), the frames, the pairs and
 * the centres, and frees everything before returning (it runs once per
 * accumulation pass, not in a hot loop, so no persistent buffers).
 *
 *  k_shr_post: one thread per pair (pairs sorted by pdf on the host):
 *    per-Gaussian log-likelihoods in double, Kaldi's natural form
 *    ll_g = gconst + x.b - 0.5 x' P x (as gh_gmm_loglike_ref), log-sum-exp,
 *    gamma_g = w exp(ll_g - lse) into a [pairs of p x G_p] block per pdf.
 *  k_shr_stats: one thread block per (Gaussian, segment of <= SEG pairs);
 *    threads own statistic elements (kind, i, j) from a table built on the
 *    host (K = 1 + D + D(D+1) + D^2 per Gaussian), the segment's centred
 *    frames z = x - c_g and gammas are staged in shared memory TILE pairs at
 *    a time, each thread sums gamma * (its product of z's) in double, and
 *    the block result is added with double atomicAdd (sm_60+).
 * D <= SHR_MAXD (64); larger dimensions run on the CPU reference. */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "backend.h"
#include "base/gh-base.h"
#include "gmm/shrink.h"
#include "cuda-check.h"
}

#define SHR_MAXD 64   /* largest dimension done on the GPU */
#define SHR_TILE 32   /* pairs staged per step */
#define SHR_SEG 4096  /* pairs per thread block */
#define SHR_THREADS 256

__global__ void k_shr_post(int npairs, int D, const float *__restrict__ X, const int *__restrict__ frame,
                           const float *__restrict__ weight, const int *__restrict__ pdf,
                           const int *__restrict__ pstart, const long long *__restrict__ gbase,
                           const int *__restrict__ goff, const int *__restrict__ ng,
                           const double *__restrict__ gconst, const double *__restrict__ mi,
                           const double *__restrict__ icov, double *__restrict__ gamma) {
  int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= npairs) return;
  const int p = pdf[k], G = ng[p], r = k - pstart[p];
  const long long P = (long long)D * (D + 1) / 2;
  const float *x = X + (long long)frame[k] * D;
  double *out = gamma + gbase[p] + (long long)r * G;
  double mx = -INFINITY;
  for (int g = 0; g < G; ++g) {
    const int gg = goff[p] + g;
    const double *b = mi + (long long)gg * D, *iv = icov + gg * P;
    double lin = 0, quad = 0;
    for (int i = 0; i < D; ++i) {
      const double xi = x[i];
      const double *row = iv + (long long)i * (i + 1) / 2;
      double s = 0;
      for (int j = 0; j < i; ++j) s += row[j] * (double)x[j];
      lin += b[i] * xi;
      quad += 2.0 * s * xi + row[i] * xi * xi;
    }
    const double v = gconst[gg] + lin - 0.5 * quad;
    out[g] = v;
    if (v > mx) mx = v;
  }
  if (!isfinite(mx)) {
    for (int g = 0; g < G; ++g) out[g] = 0.0;
    return;
  }
  double s = 0;
  for (int g = 0; g < G; ++g) s += exp(out[g] - mx);
  const double lse = mx + log(s), w = weight[k];
  for (int g = 0; g < G; ++g) out[g] = w * exp(out[g] - lse);
}

/* One work item: Gaussian gg (global index) of pdf p, sorted pairs
 * [start, start + count) of that pdf. */
struct ShrItem { int gg, p, start, count; };

__global__ void __launch_bounds__(SHR_THREADS)
k_shr_stats(int D, int K, const ShrItem *__restrict__ items, const float *__restrict__ X,
            const int *__restrict__ frame, const int *__restrict__ pstart, const long long *__restrict__ gbase,
            const int *__restrict__ goff, const int *__restrict__ ng, const double *__restrict__ centre,
            const double *__restrict__ gamma, const unsigned char *__restrict__ ekind,
            const short *__restrict__ ei, const short *__restrict__ ej, double *__restrict__ out) {
  __shared__ double z[SHR_TILE * SHR_MAXD];
  __shared__ double y[SHR_TILE];
  const ShrItem it = items[blockIdx.x];
  const int G = ng[it.p], gl = it.gg - goff[it.p];
  const double *c = centre + (long long)it.gg * D;
  for (int e0 = 0; e0 < K; e0 += blockDim.x) {
    const int e = e0 + threadIdx.x;
    int kind = 0, i = 0, j = 0;
    if (e < K) { kind = ekind[e]; i = ei[e]; j = ej[e]; }
    double acc = 0;
    for (int t0 = 0; t0 < it.count; t0 += SHR_TILE) {
      const int nt = min(SHR_TILE, it.count - t0);
      __syncthreads();
      for (int idx = threadIdx.x; idx < nt * D; idx += blockDim.x) {
        const int r = idx / D, d = idx - r * D, k = it.start + t0 + r;
        z[r * D + d] = (double)X[(long long)frame[k] * D + d] - c[d];
      }
      for (int r = threadIdx.x; r < nt; r += blockDim.x) {
        const int k = it.start + t0 + r;
        y[r] = gamma[gbase[it.p] + (long long)(k - pstart[it.p]) * G + gl];
      }
      __syncthreads();
      if (e < K) {
        for (int r = 0; r < nt; ++r) {
          const double *zr = z + r * D, g = y[r];
          double v;
          switch (kind) {
            case 0: v = g * g; break;
            case 1: v = g * zr[i]; break;
            case 2: v = g * zr[i] * zr[j]; break;
            case 3: v = g * zr[i] * zr[i] * zr[j]; break;
            default: v = g * zr[i] * zr[i] * zr[j] * zr[j]; break;
          }
          acc += v;
        }
      }
    }
    if (e < K && acc != 0.0) atomicAdd(out + (long long)it.gg * K + e, acc);
  }
}

template <typename T> static T *dev_copy(const T *h, size_t n) {
  T *d = NULL;
  CK(cudaMalloc((void **)&d, (n ? n : 1) * sizeof(T)));
  if (n) CK(cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

extern "C" void gh_cuda_acc_shrink(gh_backend *b, const gh_gmm_set *model, const float *X, int32_t T,
                                   const gh_frame_pdf *pairs, int64_t npairs, gh_accs_set *accs) {
  const int D = model->dim, NP = model->num_pdfs;
  if (D > SHR_MAXD) {
    gh_log("shrinkage statistics: dimension %d > %d, running them on the CPU reference", D, SHR_MAXD);
    gh_cpu_acc_shrink(b, model, X, T, pairs, npairs, accs);
    return;
  }
  if (npairs > INT32_MAX) gh_die("shrinkage statistics: %lld pairs, at most %d per call", (long long)npairs, INT32_MAX);
  if (accs->num_pdfs != NP)
    gh_die("shrinkage statistics: accumulators have %d pdfs, the model %d", accs->num_pdfs, NP);
  const long long P = (long long)D * (D + 1) / 2;
  const int K = (int)gh_shrink_stats_size(D);
  /* pdf table, counting sort of the pairs by pdf */
  int *ng = (int *)gh_calloc(NP, sizeof(int)), *goff = (int *)gh_calloc(NP + 1, sizeof(int));
  int *pstart = (int *)gh_calloc(NP + 1, sizeof(int));
  for (int p = 0; p < NP; ++p) {
    const gh_gmm *g = &model->pdfs[p];
    ng[p] = g->num_gauss;
    goff[p + 1] = goff[p] + g->num_gauss;
  }
  for (int64_t k = 0; k < npairs; ++k) {
    const gh_frame_pdf *pr = &pairs[k];
    if (pr->frame < 0 || pr->frame >= T || pr->pdf < 0 || pr->pdf >= NP)
      gh_die("shrinkage statistics: pair %lld (frame %d, pdf %d) out of range (%d frames, %d pdfs)", (long long)k,
             pr->frame, pr->pdf, T, NP);
    const gh_gmm *g = &model->pdfs[pr->pdf];
    const gh_gmm_accs *a = &accs->pdfs[pr->pdf];
    if (g->type != GH_COV_FULL || !a->shrink || a->num_gauss != g->num_gauss || a->dim != D)
      gh_die("shrinkage statistics: pdf %d is not a full-covariance pdf with shrinkage accumulators of its shape",
             pr->pdf);
    pstart[pr->pdf + 1]++;
  }
  for (int p = 0; p < NP; ++p) pstart[p + 1] += pstart[p];
  const int Gtot = goff[NP];
  int *sframe = (int *)gh_malloc(sizeof(int) * (npairs ? npairs : 1));
  int *spdf = (int *)gh_malloc(sizeof(int) * (npairs ? npairs : 1));
  float *sw = (float *)gh_malloc(sizeof(float) * (npairs ? npairs : 1));
  int *fill = (int *)gh_malloc(sizeof(int) * (NP ? NP : 1));
  memcpy(fill, pstart, sizeof(int) * NP);
  for (int64_t k = 0; k < npairs; ++k) {
    int q = fill[pairs[k].pdf]++;
    sframe[q] = pairs[k].frame; spdf[q] = pairs[k].pdf; sw[q] = pairs[k].weight;
  }
  long long *gbase = (long long *)gh_calloc(NP + 1, sizeof(long long));
  for (int p = 0; p < NP; ++p) gbase[p + 1] = gbase[p] + (long long)(pstart[p + 1] - pstart[p]) * ng[p];
  /* parameters (double, from the stored floats) and centres */
  double *hgc = (double *)gh_malloc(sizeof(double) * (Gtot ? Gtot : 1));
  double *hmi = (double *)gh_malloc(sizeof(double) * ((size_t)Gtot * D + 1));
  double *hiv = (double *)gh_malloc(sizeof(double) * ((size_t)Gtot * P + 1));
  double *hc = (double *)gh_malloc(sizeof(double) * ((size_t)Gtot * D + 1));
  int nitems = 0;
  for (int p = 0; p < NP; ++p) {
    const gh_gmm *g = &model->pdfs[p];
    int npp = pstart[p + 1] - pstart[p];
    if (npp > 0) nitems += ng[p] * ((npp + SHR_SEG - 1) / SHR_SEG);
    if (g->type != GH_COV_FULL) continue; /* no pairs (checked above) */
    for (int k = 0; k < ng[p]; ++k) {
      const int gg = goff[p] + k;
      hgc[gg] = g->gconsts[k];
      for (int d = 0; d < D; ++d) hmi[(size_t)gg * D + d] = g->means_invvars[(size_t)k * D + d];
      for (long long e = 0; e < P; ++e) hiv[gg * P + e] = g->inv_vars[k * P + e];
      if (accs->pdfs[p].shrink_centre)
        memcpy(hc + (size_t)gg * D, accs->pdfs[p].shrink_centre + (size_t)k * D, sizeof(double) * D);
      else
        memset(hc + (size_t)gg * D, 0, sizeof(double) * D);
    }
  }
  ShrItem *items = (ShrItem *)gh_malloc(sizeof(ShrItem) * (nitems ? nitems : 1));
  int ni = 0;
  for (int p = 0; p < NP; ++p) {
    const int npp = pstart[p + 1] - pstart[p];
    for (int k = 0; k < ng[p] && npp > 0; ++k)
      for (int s = 0; s < npp; s += SHR_SEG) {
        items[ni].gg = goff[p] + k; items[ni].p = p;
        items[ni].start = pstart[p] + s; items[ni].count = npp - s < SHR_SEG ? npp - s : SHR_SEG;
        ++ni;
      }
  }
  /* element table: kind 0 sum gamma^2, 1 s1_i, 2 s2_ij (packed), 3 s3_ij (row-major), 4 s4_ij (packed) */
  unsigned char *ek = (unsigned char *)gh_malloc(K);
  short *ei = (short *)gh_malloc(sizeof(short) * K), *ej = (short *)gh_malloc(sizeof(short) * K);
  int e = 0;
  ek[e] = 0; ei[e] = ej[e] = 0; ++e;
  for (int i = 0; i < D; ++i) { ek[e] = 1; ei[e] = (short)i; ej[e] = 0; ++e; }
  for (int i = 0; i < D; ++i)
    for (int j = 0; j <= i; ++j) { ek[e] = 2; ei[e] = (short)i; ej[e] = (short)j; ++e; }
  for (int i = 0; i < D; ++i)
    for (int j = 0; j < D; ++j) { ek[e] = 3; ei[e] = (short)i; ej[e] = (short)j; ++e; }
  for (int i = 0; i < D; ++i)
    for (int j = 0; j <= i; ++j) { ek[e] = 4; ei[e] = (short)i; ej[e] = (short)j; ++e; }
  if (e != K) gh_die("shrinkage statistics: internal element count %d != %d", e, K);

  float *dX = dev_copy(X, (size_t)T * D);
  int *dframe = dev_copy(sframe, (size_t)npairs), *dpdf = dev_copy(spdf, (size_t)npairs);
  float *dw = dev_copy(sw, (size_t)npairs);
  int *dpstart = dev_copy(pstart, (size_t)NP + 1), *dgoff = dev_copy(goff, (size_t)NP + 1);
  int *dng = dev_copy(ng, (size_t)NP);
  long long *dgbase = dev_copy(gbase, (size_t)NP + 1);
  double *dgc = dev_copy(hgc, (size_t)Gtot), *dmi = dev_copy(hmi, (size_t)Gtot * D);
  double *div = dev_copy(hiv, (size_t)Gtot * P), *dc = dev_copy(hc, (size_t)Gtot * D);
  ShrItem *ditems = dev_copy(items, (size_t)ni);
  unsigned char *dek = dev_copy(ek, (size_t)K);
  short *dei = dev_copy(ei, (size_t)K), *dej = dev_copy(ej, (size_t)K);
  double *dgamma = NULL, *dout = NULL;
  CK(cudaMalloc((void **)&dgamma, sizeof(double) * (gbase[NP] ? gbase[NP] : 1)));
  CK(cudaMalloc((void **)&dout, sizeof(double) * ((size_t)Gtot * K + 1)));
  CK(cudaMemset(dout, 0, sizeof(double) * ((size_t)Gtot * K + 1)));
  if (npairs > 0) {
    k_shr_post<<<(unsigned)((npairs + 255) / 256), 256>>>((int)npairs, D, dX, dframe, dw, dpdf, dpstart, dgbase,
                                                           dgoff, dng, dgc, dmi, div, dgamma);
    CK_LAUNCH("k_shr_post");
  }
  if (ni > 0) {
    k_shr_stats<<<ni, SHR_THREADS>>>(D, K, ditems, dX, dframe, dpstart, dgbase, dgoff, dng, dc, dgamma, dek, dei,
                                     dej, dout);
    CK_LAUNCH("k_shr_stats");
  }
  double *hout = (double *)gh_malloc(sizeof(double) * ((size_t)Gtot * K + 1));
  CK(cudaMemcpy(hout, dout, sizeof(double) * ((size_t)Gtot * K + 1), cudaMemcpyDeviceToHost));
  for (int p = 0; p < NP; ++p) {
    if (pstart[p + 1] == pstart[p]) continue;
    double *st = accs->pdfs[p].shrink;
    const double *src = hout + (size_t)goff[p] * K;
    for (long long q = 0; q < (long long)ng[p] * K; ++q) st[q] += src[q];
  }
  void *dev[] = {dX, dframe, dpdf, dw, dpstart, dgoff, dng, dgbase, dgc, dmi, div, dc, ditems, dek, dei, dej,
                 dgamma, dout};
  for (size_t q = 0; q < sizeof dev / sizeof *dev; ++q) CK(cudaFree(dev[q]));
  free(ng); free(goff); free(pstart); free(sframe); free(spdf); free(sw); free(fill); free(gbase);
  free(hgc); free(hmi); free(hiv); free(hc); free(items); free(ek); free(ei); free(ej); free(hout);
}
