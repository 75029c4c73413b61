/* cuda-white.cu -- the batched E-step posteriors of the pdfs outside the
 * fp32 budget (cuda-route.h gh_cuda_batch_route): the whitened form for the
 * full pdfs within its estimate, the reference form in double for the
 * others, all such pdfs of a data block in a few launches (the fused
 * E-step's tasks: cuda-estep.cu), never one launch per pdf.
 *
 *  gh_cuda_white_upload (model_upload): per full pdf that may be batched
 *    (its centred or uncentred fp32 form fails), a slot per Gaussian for the
 *    float Cholesky factor L_g [D x D] of its precision (row-major lower
 *    triangle, gemm-forms.h gh_white_factor's layout) in one device array
 *    (dWhite, pdf p's first factor at float offset dWoff[p], -1 when none),
 *    filled by k_white_refresh with the largest gh_white_error of the pdf's
 *    Gaussians (hEwhite); the rule whitens a pdf only within the budget.
 *  k_batch_post: one block per task (<= SEG pairs of one pdf), tiles of
 *    BT pairs: the tile's frames in shared memory, then one thread per
 *    (Gaussian, pair) item (a warp's threads on one Gaussian) computes the
 *    log-likelihood in double into the scratch LL; then one warp per pair: log-sum-exp in double, gamma_g =
 *    w exp(ll_g - lse) (float, as k_estep_post writes it) and the task's
 *    sum of w lse in pair order, warps in order (no atomics:
 *    deterministic).  k_estep_stats and k_estep_reduce then make the
 *    statistics from gamma, in double, as for the fused pdfs.
 *  k_white_refresh (at upload, and after a device M-step before the next
 *    use): the factors and estimates from the model's parameters, on the
 *    device, block per Gaussian.
 *  k_batch_score (loglikes of a GEMM-form model whose double-path pdfs all
 *    have factors: gh_cuda_score_route): block per (64 frames, such pdf), a
 *    thread per frame, log-sum-exp over the pdf's Gaussians in double; the
 *    other pdfs are scored by the fp32 GEMM forms first.
 *
 * Unmeasured: written on a machine without a GPU; test/unit/test_cuda_white.c
 * (run by test/run-gpu.sh) compares it with float64 and the cpu backend.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda-ctx.h"
#include "cuda-route.h"

#define BT 32 /* pairs of a tile of k_batch_post */
#define BW 8  /* warps of k_batch_post (256 threads) */

/* A log-likelihood that is NaN or +inf counts as -inf (a non-finite frame;
 * as gh_ovf in the fp32 kernels, cuda-check.h). */
__device__ __forceinline__ double ll_ovf(double v) { return v < INFINITY ? v : -INFINITY; }

/* Log-likelihood in double of frame x [D] (float) against Gaussian gi:
 * form [norm, mu (D)] (gemm-forms.h gh_gauss_exact), and either Lf (the
 * float factor [D x D], row-major lower: whitened form) or q (the float
 * quadratic coefficients of its GEMM row, packed lower, -0.5 P_ii / -P_ij:
 * the reference form; full: 0 for a diagonal pdf, whose q is [D] and Lf
 * NULL). */
__device__ double batch_ll(const float *__restrict__ x, int D, const double *__restrict__ fm,
                           const float *__restrict__ Lf, const float *__restrict__ q, int full) {
  const double norm = fm[0];
  if (!(norm > -INFINITY)) return -INFINITY; /* a dead Gaussian */
  const double *mu = fm + 1;
  if (Lf) {
    /* d = fl(x - mu) (centred in double, rounded once), y_j = sum_{i >= j}
     * d_i L_ij by float FMAs, |y|^2 in double: the cpu backend's
     * whitened form (cpu-blas.c) element by element */
    float d[GH_CUDA_BATCH_MAX_D];
    for (int i = 0; i < D; ++i) d[i] = (float)((double)x[i] - mu[i]);
    double s = 0.0;
    for (int j = 0; j < D; ++j) {
      float y = 0.f;
      for (int i = j; i < D; ++i) y = fmaf(d[i], Lf[(long long)i * D + j], y);
      s += (double)y * (double)y;
    }
    return ll_ovf(norm - 0.5 * s);
  }
  /* norm + sum_{j <= i} q_ij y_i y_j = norm - 0.5 y'Py, y = x - mu in double
   * (diagonal: q_i = -0.5 / var_i, norm + sum_i q_i y_i^2) */
  double acc = 0.0;
  if (!full) {
    for (int i = 0; i < D; ++i) {
      const double y = (double)x[i] - mu[i];
      acc += (double)q[i] * y * y;
    }
    return ll_ovf(norm + acc);
  }
  for (int i = 0; i < D; ++i) {
    const float *qi = q + (long long)i * (i + 1) / 2;
    double r = 0.0;
    for (int j = 0; j <= i; ++j) r += (double)qi[j] * ((double)x[j] - mu[j]);
    acc += ((double)x[i] - mu[i]) * r;
  }
  return ll_ovf(norm + acc);
}

/* Posteriors of the batched tasks (one block of BW warps per task; see the
 * file's comment).  gamma, tot as k_estep_post writes them: gamma[goff + (k
 * - k0) G + g], tot[task].  LL: double scratch of the same layout as gamma.
 * form: [Gt x (D + 1)] exact forms; gfirst [P + 1]: pdf p's first Gaussian
 * (global index); rows / rowoff: the GEMM rows (q at rows + rowoff[gi] + 1 +
 * D); white / woff: the factors (white NULL: every pdf in the reference
 * form; woff[p] < 0: pdf p in the reference form). */
__global__ void __launch_bounds__(BW * 32)
k_batch_post(const float *__restrict__ X, int Dp, int D, const int32_t *__restrict__ frames,
             const float *__restrict__ wts, const Task *__restrict__ tasks, const EPdf *__restrict__ epdf,
             const long long *__restrict__ gfirst, const double *__restrict__ form, const float *__restrict__ rows,
             const long long *__restrict__ rowoff, const float *__restrict__ white, const long long *__restrict__ woff,
             double *LL, float *gamma, double *__restrict__ tot) { /* LL: written and read back (no __restrict__) */
  extern __shared__ float xsb[]; /* [BT][D + 1] (the odd row stride: no bank conflicts between a warp's pairs) */
  __shared__ double wsum[BW];
  const Task tk = tasks[blockIdx.x];
  const int G = epdf[tk.pdf].G, full = epdf[tk.pdf].full;
  const long long gf = gfirst[tk.pdf], wo = white && full ? woff[tk.pdf] : -1;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  double contrib = 0.0; /* lane 0: this warp's pairs' w lse, in pair order */
  for (long long kt = tk.k0; kt < tk.k1; kt += BT) {
    const int nt = (int)(tk.k1 - kt < BT ? tk.k1 - kt : BT);
    __syncthreads(); /* the previous tile's frames and LL are read */
    for (int idx = threadIdx.x; idx < nt * D; idx += blockDim.x) {
      const int r = idx / D, i = idx - r * D;
      xsb[r * (D + 1) + i] = X[(size_t)frames[kt + r] * Dp + i];
    }
    __syncthreads();
    const long long base = tk.goff + (kt - tk.k0) * G;
    /* item it: Gaussian it / nt, pair it % nt: a warp's threads share the
     * Gaussian (its parameters are read once for the warp) */
    for (long long it = threadIdx.x; it < (long long)nt * G; it += blockDim.x) {
      const int g = (int)(it / nt), r = (int)(it - (long long)g * nt);
      const long long gi = gf + g;
      const float *Lf = wo >= 0 ? white + wo + (long long)g * D * D : NULL;
      const float *q = rows + rowoff[gi] + 1 + D;
      LL[base + (long long)r * G + g] = batch_ll(xsb + r * (D + 1), D, form + gi * (D + 1), Lf, q, full);
    }
    __syncthreads(); /* LL of the tile complete (global writes of this block: visible after the barrier) */
    for (int r = warp; r < nt; r += BW) {
      const double *l = LL + base + (long long)r * G;
      float *gm = gamma + base + (long long)r * G;
      double mx = -INFINITY;
      for (int g = lane; g < G; g += 32) mx = fmax(mx, l[g]);
      for (int o = 16; o > 0; o >>= 1) mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      double s = 0.0;
      if (mx > -INFINITY)
        for (int g = lane; g < G; g += 32) s += exp(l[g] - mx);
      for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
      const double lse = mx + log(s), w = (double)wts[kt + r];
      for (int g = lane; g < G; g += 32) gm[g] = mx > -INFINITY ? (float)(w * exp(l[g] - lse)) : 0.f;
      if (lane == 0 && mx > -INFINITY) contrib += w * lse;
    }
  }
  if (lane == 0) wsum[warp] = contrib;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0.0;
    for (int w = 0; w < BW; ++w) t += wsum[w];
    tot[blockIdx.x] = t;
  }
}

void gh_cuda_batch_post(cuda_ctx *c, cuda_model *m, const cuda_data *v, int nt, long long ngamma, int use_white) {
  const int D = m->D;
  if (D < 1 || D > GH_CUDA_BATCH_MAX_D) gh_die("cuda E-step: batched path for dimension %d (at most %d)", D,
                                               GH_CUDA_BATCH_MAX_D);
  dgrow((void **)&c->dLL, &c->capLL, (size_t)ngamma + 1, sizeof(double), 0);
  const long long *rowoff = NULL;
  const float *rows = gg_model_rows(m->gg, &rowoff);
  const float *white = use_white && m->dWhite && !m->white_stale ? m->dWhite : NULL;
  const size_t shm = sizeof(float) * BT * (size_t)(D + 1); /* <= 16.1 KB at D = 128 */
  k_batch_post<<<(unsigned)nt, BW * 32, shm>>>(v->dX, v->Dp, D, v->dFrames, v->dW, c->dTasks, m->dEpdf, m->dGfirst,
                                               gg_model_exact_form(m->gg), rows, rowoff, white, m->dWoff, c->dLL,
                                               c->dGamma, c->dPart);
  CK(cudaGetLastError());
}

#define SF 64 /* frames (threads) per block of k_batch_score */
/* Scoring in the whitened form: block (frame tile, j) scores frames t0 ..
 * t0 + SF - 1 (a thread per frame, staged in shared memory) against pdf p =
 * pdfs[j]: out[t P + p] = log sum_g exp(ll_g) in double (online max and
 * scaled sum over the pdf's Gaussians in order), rounded to float once;
 * -inf when every Gaussian is dead.  Each Gaussian in the whitened form
 * when it has a factor (woff[p] >= 0), else in the reference form (the
 * caller sends only pdfs with factors). */
__global__ void __launch_bounds__(SF)
k_batch_score(const float *__restrict__ X, int Dp, int D, int n, const int *__restrict__ pdfs,
              const EPdf *__restrict__ epdf, const long long *__restrict__ gfirst, const double *__restrict__ form,
              const float *__restrict__ rows, const long long *__restrict__ rowoff, const float *__restrict__ white,
              const long long *__restrict__ woff, float *__restrict__ out, int P) {
  extern __shared__ float xsc[]; /* [SF][D + 1] */
  const int p = pdfs[blockIdx.y], t0 = blockIdx.x * SF;
  const int nt = n - t0 < SF ? n - t0 : SF;
  for (int idx = threadIdx.x; idx < nt * D; idx += blockDim.x) {
    const int r = idx / D, i = idx - r * D;
    xsc[r * (D + 1) + i] = X[(size_t)(t0 + r) * Dp + i];
  }
  __syncthreads();
  if ((int)threadIdx.x >= nt) return;
  const int G = epdf[p].G, full = epdf[p].full;
  const long long gf = gfirst[p], wo = full ? woff[p] : -1;
  const float *x = xsc + threadIdx.x * (D + 1);
  double mx = -INFINITY, s = 0.0;
  for (int g = 0; g < G; ++g) {
    const long long gi = gf + g;
    const float *Lf = wo >= 0 ? white + wo + (long long)g * D * D : NULL;
    const double ll = batch_ll(x, D, form + gi * (D + 1), Lf, rows + rowoff[gi] + 1 + D, full);
    if (!(ll > -INFINITY)) continue;
    if (ll > mx) { s = s * exp(mx - ll) + 1.0; mx = ll; }
    else s += exp(ll - mx);
  }
  out[(size_t)(t0 + threadIdx.x) * P + p] = mx > -INFINITY ? (float)(mx + log(s)) : -INFINITY;
}

int gh_cuda_batch_score_ok(cuda_model *m) {
  if (!m->gg || !m->hWoff || !m->dScorePdfs) return 0;
  static const char *const bwords[] = {"0", "1", "double", NULL};
  const int mode = gh_env_word("GH_CUDA_BATCH", 1, bwords);
  if (mode != 1) return 0;
  gh_cuda_white_refresh(m);
  /* the pdfs with factors whose estimate (refreshed after a device M-step) is within the budget */
  const double wb = gh_white_max_error();
  int nw = 0;
  for (int p = 0; p < m->P; ++p) nw += gg_model_exact(m->gg, p) && m->hWoff[p] >= 0 && m->hEwhite[p] <= wb;
  return gh_cuda_score_route(m->nScoreExact, nw, m->dWhite && !m->white_stale, mode);
}

void gh_cuda_batch_score(cuda_model *m, const float *dX, int n, float *dOut) {
  const int D = m->D;
  if (n <= 0 || m->nScorePdfs <= 0) return;
  const long long *rowoff = NULL;
  const float *rows = gg_model_rows(m->gg, &rowoff);
  const size_t shm = sizeof(float) * SF * (size_t)(D + 1); /* <= 33 KB at D = 128 */
  for (int j0 = 0; j0 < m->nScorePdfs; j0 += 65535) { /* gridDim.y <= 65535 */
    const int nj = m->nScorePdfs - j0 < 65535 ? m->nScorePdfs - j0 : 65535;
    const dim3 grid((unsigned)((n + SF - 1) / SF), (unsigned)nj);
    k_batch_score<<<grid, SF, shm>>>(dX, m->Dp, D, n, m->dScorePdfs + j0, m->dEpdf, m->dGfirst,
                                     gg_model_exact_form(m->gg), rows, rowoff, m->dWhite, m->dWoff, dOut, m->P);
    CK(cudaGetLastError());
  }
}

/* ------------------------------------ the factors after a device M-step
 * Block per Gaussian gi whose pdf has factors (woff >= 0; others return):
 * the precision P from its GEMM row (q_ii = -0.5 P_ii, q_ij = -P_ij:
 * exact), its Cholesky factor L and L^-1 in double (packed, shared memory),
 * serially by thread 0 (gemm-forms.c gh_gauss_exact / gh_white_error,
 * operation for operation), then the float factor into its slot of white
 * and its whitened estimate into ew[gi]: 0 for a dead Gaussian (norm -inf
 * in the exact form), INFINITY when P is not positive definite or the
 * factor or whitened components of frames within 1e4 sigma do not fit
 * float.  Shared memory: 2 D(D + 1)/2 doubles (white_refresh_shm_ok). */
__device__ __forceinline__ long long wpidx(int i, int j) { return (long long)i * (i + 1) / 2 + j; }
__global__ void __launch_bounds__(32)
k_white_refresh(int D, const int *__restrict__ gpdf, const long long *__restrict__ gfirst,
                const long long *__restrict__ woff, const float *__restrict__ rows, const long long *__restrict__ rowoff,
                const double *__restrict__ form, float *__restrict__ white, double *__restrict__ ew) {
  extern __shared__ double wsh[]; /* L [S], Li [S] packed lower */
  __shared__ int ok;
  const long long gi = blockIdx.x;
  const int p = gpdf[gi];
  const long long wo = woff[p];
  if (wo < 0) return; /* whole block */
  const long long S = (long long)D * (D + 1) / 2;
  double *L = wsh, *Li = wsh + S;
  const float *q = rows + rowoff[gi] + 1 + D;
  for (long long k = threadIdx.x; k < S; k += blockDim.x) {
    int i = 0;
    while (wpidx(i + 1, 0) <= k) ++i;
    const int j = (int)(k - wpidx(i, 0));
    L[k] = i == j ? -2.0 * (double)q[k] : -(double)q[k];
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double e = 0.0;
    int good = form[gi * (D + 1)] > -INFINITY; /* not dead */
    for (int j = 0; good && j < D; ++j) { /* Cholesky, in place */
      double d = L[wpidx(j, j)];
      for (int k = 0; k < j; ++k) d -= L[wpidx(j, k)] * L[wpidx(j, k)];
      if (!(d > 0.0)) { good = 0; e = INFINITY; break; }
      const double ljj = sqrt(d);
      L[wpidx(j, j)] = ljj;
      for (int i = j + 1; i < D; ++i) {
        double t = L[wpidx(i, j)];
        for (int k = 0; k < j; ++k) t -= L[wpidx(i, k)] * L[wpidx(j, k)];
        L[wpidx(i, j)] = t / ljj;
      }
    }
    if (good) {
      for (int c = 0; c < D; ++c) /* Li = L^-1, column by column */
        for (int i = c; i < D; ++i) {
          double t = i == c ? 1.0 : 0.0;
          for (int k = c; k < i; ++k) t -= L[wpidx(i, k)] * Li[wpidx(k, c)];
          Li[wpidx(i, c)] = t / L[wpidx(i, i)];
        }
      double V = 0.0, smax = 0.0, ymax = 0.0;
      for (int i = 0; i < D && e == 0.0; ++i) {
        double cii = 0.0;
        for (int r = i; r < D; ++r) cii += Li[wpidx(r, i)] * Li[wpidx(r, i)];
        const double si = sqrt(cii);
        if (si > smax) smax = si;
        for (int j = 0; j <= i; ++j) {
          const double lij = L[wpidx(i, j)];
          if (!(fabs(lij) < 1e36)) { e = INFINITY; break; }
          V += lij * lij * cii;
          if (fabs(lij) * si > ymax) ymax = fabs(lij) * si;
        }
      }
      if (e == 0.0)
        e = !(1e4 * smax < 1e36) || !(1e4 * ymax * D < 1e36)
                ? INFINITY : 0x1p-24 * sqrt(D + 1.0) * (4.0 * sqrt(V) + 50.0 * sqrt(V / D));
    }
    ew[gi] = e;
    ok = good;
  }
  __syncthreads();
  float *f = white + wo + (gi - gfirst[p]) * (long long)D * D;
  for (long long idx = threadIdx.x; idx < (long long)D * D; idx += blockDim.x) {
    const int i = (int)(idx / D), j = (int)(idx - (long long)i * D);
    f[idx] = ok && j <= i ? (float)L[wpidx(i, j)] : 0.f;
  }
}

/* k_white_refresh's dynamic shared memory for dimension D (bytes). */
static size_t white_refresh_shm(int D) { return sizeof(double) * (size_t)D * (D + 1); }
/* 1 when k_white_refresh can run at dimension D on this device (D <=
 * GH_CUDA_BATCH_MAX_D and its shared memory within the device's opt-in
 * limit: 132 KB at D = 128; an H100 allows 227 KB), its limit raised once. */
static int white_refresh_shm_ok(int D) {
  if (D < 1 || D > GH_CUDA_BATCH_MAX_D) return 0;
  const size_t need = white_refresh_shm(D);
  if (need <= 48 * 1024) return 1; /* D <= 77: the default limit */
  static size_t set[64]; /* per device (the attribute is) */
  int dev = 0, optin = 0;
  CK(cudaGetDevice(&dev));
  if (dev >= 0 && dev < 64 && need <= set[dev]) return 1;
  CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (need > (size_t)optin) return 0;
  CK(cudaFuncSetAttribute(k_white_refresh, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)need));
  if (dev >= 0 && dev < 64) set[dev] = need;
  return 1;
}

void gh_cuda_white_refresh(cuda_model *m) {
  if (!m->white_stale || !m->dWhite || !m->gg) return;
  const int D = m->D, P = m->P;
  if (!white_refresh_shm_ok(D) || m->Gt <= 0) return; /* stays stale: those pdfs take the double form */
  double *dEw = NULL;
  CK(cudaMalloc((void **)&dEw, sizeof(double) * (size_t)m->Gt));
  CK(cudaMemset(dEw, 0, sizeof(double) * (size_t)m->Gt));
  const long long *rowoff = NULL;
  const float *rows = gg_model_rows(m->gg, &rowoff);
  const size_t shm = white_refresh_shm(D);
  k_white_refresh<<<(unsigned)m->Gt, 32, shm>>>(D, m->dGpdf, m->dGfirst, m->dWoff, rows, rowoff,
                                                gg_model_exact_form(m->gg), m->dWhite, dEw);
  CK(cudaGetLastError());
  double *h = (double *)gh_malloc(sizeof(double) * (size_t)m->Gt);
  CK(cudaMemcpy(h, dEw, sizeof(double) * (size_t)m->Gt, cudaMemcpyDeviceToHost));
  CK(cudaFree(dEw));
  for (int p = 0; p < P; ++p) {
    if (m->hWoff[p] < 0) continue;
    double e = 0.0;
    for (long long gi = m->hGfirst[p]; gi < m->hGfirst[p + 1]; ++gi)
      if (!(h[gi] <= e)) e = h[gi];
    m->hEwhite[p] = e;
  }
  free(h);
  m->white_stale = 0;
}

void gh_cuda_white_upload(cuda_model *m, const gh_gmm_set *s, const unsigned char *exact) {
  const int D = s->dim, P = s->num_pdfs;
  m->hEwhite = (double *)gh_malloc(sizeof(double) * (P ? P : 1));
  m->hWoff = (long long *)gh_malloc(sizeof(long long) * (P ? P : 1));
  /* a factor slot for each Gaussian of a full pdf that may take the batched
   * path (its centred or uncentred fp32 form fails), when D <= the refresh
   * kernel's limit and the slots take at most a quarter of the free device
   * memory; the factors and estimates themselves are made on the device
   * (k_white_refresh: on the host, gh_gauss_exact's condition number alone
   * took 0.2 ms a Gaussian at D = 36, ~17 s for model B's 80,000) */
  long long nf = 0;
  for (int p = 0; p < P; ++p) {
    m->hEwhite[p] = INFINITY;
    m->hWoff[p] = -1;
    if ((exact[p] || m->nofused[p]) && s->pdfs[p].type == GH_COV_FULL && white_refresh_shm_ok(D)) {
      m->hWoff[p] = nf * D * D;
      nf += s->pdfs[p].num_gauss;
    }
  }
  size_t fr = 0, tot = 0;
  CK(cudaMemGetInfo(&fr, &tot));
  const size_t bytes = sizeof(float) * (size_t)nf * D * D;
  if (nf > 0 && bytes > fr / 4) {
    gh_vlog(1, "cuda: no whitened factors (%.3g GB for %lld Gaussians, a quarter of the free device memory is %.3g GB): "
            "the pdfs outside the fp32 budget take the double form", bytes / 1e9, nf, fr / 4e9);
    for (int p = 0; p < P; ++p) m->hWoff[p] = -1;
    nf = 0;
  }
  m->dWhite = NULL;
  if (nf > 0) CK(cudaMalloc((void **)&m->dWhite, bytes));
  CK(cudaMalloc((void **)&m->dWoff, sizeof(long long) * (P ? P : 1)));
  CK(cudaMemcpy(m->dWoff, m->hWoff, sizeof(long long) * P, cudaMemcpyHostToDevice));
  /* scoring (gh_cuda_score_route): the pdfs evaluated in double at
   * --precision=auto, and those of them with factors */
  int *sp = (int *)gh_malloc(sizeof(int) * (P ? P : 1));
  m->nScoreExact = m->nScorePdfs = 0;
  for (int p = 0; p < P; ++p) {
    if (!exact[p]) continue;
    m->nScoreExact++;
    if (m->hWoff[p] >= 0) sp[m->nScorePdfs++] = p;
  }
  m->dScorePdfs = NULL;
  if (m->nScorePdfs > 0) {
    CK(cudaMalloc((void **)&m->dScorePdfs, sizeof(int) * m->nScorePdfs));
    CK(cudaMemcpy(m->dScorePdfs, sp, sizeof(int) * m->nScorePdfs, cudaMemcpyHostToDevice));
  }
  free(sp);
  m->white_stale = 1;
  if (m->dWhite) gh_cuda_white_refresh(m); /* the factors and estimates, on the device */
}

void gh_cuda_white_free(cuda_model *m) {
  cudaFree(m->dWhite);
  cudaFree(m->dWoff);
  cudaFree(m->dScorePdfs);
  m->dScorePdfs = NULL;
  free(m->hEwhite);
  free(m->hWoff);
  m->dWhite = NULL; m->dWoff = NULL; m->hEwhite = NULL; m->hWoff = NULL;
}
