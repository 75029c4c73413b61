/* gmm.cl -- OpenCL C 1.2 kernels of the GMM ops (loglikes, E-step) of the
 * opencl backend (host side: opencl.c).  Embedded into the library as a
 * string by the Makefile; compiled once per device (program cache).
 *
 * Every Gaussian's log-likelihood is one dot product of a parameter row with
 * the frame's expanded features phi(x) (the GEMM form; doc/kernels.md):
 *   diag: phi(x) = [1, x_0 .. x_{D-1}, x_0^2 .. x_{D-1}^2]           K = 1 + 2D
 *         w_g    = [gconst_g, b_g, -0.5 iv_g]
 *   full: phi(x) = [1, x, x_i x_j for i = 0..D-1, j = 0..i (packed)]  K = 1 + D + D(D+1)/2
 *         w_g    = [gconst_g, b_g, c_g] with c_ii = -0.5 P_ii, c_ij = -P_ij (j < i)
 * so ll_g(x) = w_g . phi(x) = gconst_g + x.b_g - 0.5 x' P_g x (Kaldi's natural
 * form, lib/gmm.h), and the E-step statistics of Gaussian g are
 * sum_k gamma_kg phi(x_k): element 0 the occupancy, 1..D the first order,
 * the rest the second order in Kaldi's layout (diag x_i^2, full packed
 * gh_packed_index(i, j) = i(i+1)/2 + j).  Element e of phi is
 * xa * xb with (a, b) = emap[e] and x_{-1} = 1.
 */

/* ---- expanded features: phi[t][e] = x[t][a] x[t][b] ---- */
__kernel void gh_expand(int T, int D, int K, __global const float *X, __global const int2 *emap,
                        __global float *phi) {
  int e = get_global_id(0), t = get_global_id(1);
  if (e >= K || t >= T) return;
  int2 ab = emap[e];
  const __global float *x = X + (size_t)t * D;
  float va = ab.x < 0 ? 1.0f : x[ab.x], vb = ab.y < 0 ? 1.0f : x[ab.y];
  phi[(size_t)t * K + e] = va * vb;
}

/* ---- our own SGEMM (used where CLBlast is absent or GH_OPENCL_GEMM=own) ----
 * C[coff + m ldc + n] = sum_k A[m lda + k] B[n ldb + k]   (C = A B', row-major)
 * 64 x 64 tile of C per 16 x 16 work-group, 4 x 4 outputs per work-item,
 * K in steps of 16 through local memory; edges zero-padded. */
#define GH_TS 64
#define GH_TK 16
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void gh_sgemm_nt(int M, int N, int K, __global const float *A, int lda, __global const float *B,
                 int ldb, __global float *C, int ldc, int coff) {
  __local float As[GH_TK][GH_TS + 1];
  __local float Bs[GH_TK][GH_TS + 1];
  const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * 16 + tx;
  const int n0 = get_group_id(0) * GH_TS, m0 = get_group_id(1) * GH_TS;
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += GH_TK) {
    for (int l = 0; l < 4; ++l) {
      int idx = tid + 256 * l, r = idx / GH_TK, c = idx % GH_TK, gk = k0 + c;
      int gm = m0 + r, gn = n0 + r;
      As[c][r] = (gm < M && gk < K) ? A[(size_t)gm * lda + gk] : 0.0f;
      Bs[c][r] = (gn < N && gk < K) ? B[(size_t)gn * ldb + gk] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < GH_TK; ++k) {
      float a[4], b[4];
      for (int i = 0; i < 4; ++i) a[i] = As[k][ty + 16 * i];
      for (int j = 0; j < 4; ++j) b[j] = Bs[k][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      int m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
      if (m < M && n < N) C[(size_t)coff + (size_t)m * ldc + n] = acc[i][j];
    }
}

/* ---- per-pdf log-sum-exp over the Gaussian columns of the GEMM output ----
 * S [T x Gtot] Gaussian log-likelihoods; pdf p owns columns goff[p] ..
 * goff[p] + gcnt[p] - 1; out[t][p] = log sum_g exp(S[t][g]) (natural log;
 * -inf for no Gaussians or all -inf).  Narrow: one work-item per (pdf,
 * frame). */
__kernel void gh_lse_narrow(int T, int P, int Gtot, __global const float *S,
                            __global const int *goff, __global const int *gcnt, __global float *out) {
  int p = get_global_id(0), t = get_global_id(1);
  if (p >= P || t >= T) return;
  const __global float *s = S + (size_t)t * Gtot + goff[p];
  int G = gcnt[p];
  float m = -INFINITY;
  for (int g = 0; g < G; ++g) m = fmax(m, s[g]);
  float r = m;
  if (m > -INFINITY) {
    float sum = 0.0f;
    for (int g = 0; g < G; ++g) sum += exp(s[g] - m);
    r = m + log(sum);
  }
  out[(size_t)t * P + p] = r;
}

/* Wide: one work-group of 64 work-items per (pdf, frame), for pdfs with many
 * Gaussians (global UBMs: one pdf x 1024 Gaussians); max and sum reduced in
 * local memory. */
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void gh_lse_wide(int T, int P, int Gtot, __global const float *S, __global const int *goff,
                 __global const int *gcnt, __global float *out) {
  __local float red[64];
  const int l = get_local_id(0);
  const int p = get_group_id(0) % P, t = get_group_id(0) / P;
  const __global float *s = S + (size_t)t * Gtot + goff[p];
  const int G = gcnt[p];
  float m = -INFINITY;
  for (int g = l; g < G; g += 64) m = fmax(m, s[g]);
  red[l] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = 32; h > 0; h >>= 1) {
    if (l < h) red[l] = fmax(red[l], red[l + h]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  m = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  float sum = 0.0f;
  if (m > -INFINITY)
    for (int g = l; g < G; g += 64) sum += exp(s[g] - m);
  red[l] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = 32; h > 0; h >>= 1) {
    if (l < h) red[l] += red[l + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) out[(size_t)t * P + p] = m > -INFINITY ? m + log(red[0]) : m;
}

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

/* ---- E-step, step 1: Gaussian posteriors of each (frame, pdf, w) pair ----
 * Pairs sorted by pdf; this chunk is pairs kbase .. kbase + npairs - 1
 * (k below counts from kbase; pair_off and gbase are chunk-local).  For pair k of pdf p:
 * ll_g = w_g . phi(x) for the pdf's Gaussians (parameter rows wrow[p] ..
 * of W, the diag or full matrix by ptype[p]), lse = log sum exp ll_g,
 * gamma[gbase[p] + (k - pair_off[p]) G + g] = w exp(ll_g - lse), and
 * tot[k] = w lse (double; 0 for a pdf without Gaussians). */
__kernel void gh_estep_post(int npairs, int D, int kbase, __global const float *X,
                            __global const int *frame, __global const int *pdf, __global const float *weight,
                            __global const int *ptype, __global const int *wrow,
                            __global const int *gcnt, __global const int *pair_off,
                            __global const long *gbase, __global const float *Wd,
                            __global const float *Wf, __global float *gamma, __global double *tot) {
  int k = get_global_id(0);
  if (k >= npairs) return;
  const int p = pdf[kbase + k], G = gcnt[p], full = ptype[p];
  const int K = full ? 1 + D + D * (D + 1) / 2 : 1 + 2 * D;
  const __global float *x = X + (size_t)frame[kbase + k] * D;
  const __global float *W = (full ? Wf : Wd) + (size_t)wrow[p] * K;
  __global float *gm = gamma + gbase[p] + (long)(k - pair_off[p]) * G;
  const float w = weight[kbase + k];
  float m = -INFINITY;
  for (int g = 0; g < G; ++g, W += K) {
    float ll = W[0];
    for (int i = 0; i < D; ++i) ll = fma(W[1 + i], x[i], ll);
    if (full) {
      const __global float *c = W + 1 + D;
      for (int i = 0; i < D; ++i) {
        float s = 0.0f;
        for (int j = 0; j <= i; ++j) s = fma(c[j], x[j], s);
        ll = fma(s, x[i], ll);
        c += i + 1;
      }
    } else {
      for (int i = 0; i < D; ++i) ll = fma(W[1 + D + i] * x[i], x[i], ll);
    }
    gm[g] = ll;
    m = fmax(m, ll);
  }
  if (G == 0 || m == -INFINITY) {
    for (int g = 0; g < G; ++g) gm[g] = 0.0f;
    tot[k] = G == 0 ? 0.0 : w * (double)m;
    return;
  }
  float sum = 0.0f;
  for (int g = 0; g < G; ++g) sum += exp(gm[g] - m);
  const float lse = m + log(sum);
  for (int g = 0; g < G; ++g) gm[g] = w * exp(gm[g] - lse);
  tot[k] = (double)w * (double)lse;
}

/* ---- E-step, step 2: statistics sum_k gamma_kg phi_e(x_k) in double ----
 * One work-item per (element e < K, Gaussian g < Gn of this covariance
 * type, segment s < nseg of the pdf's pairs); gpdf[g] is g's pdf, gl[g] its
 * index within the pdf.  Writes partial[(s Gn + g) K + e]; gh_estep_reduce
 * adds the segments into the accumulators. */
__kernel void gh_estep_stats(int Gn, int K, int nseg, int D, __global const float *X,
                             __global const int *frame, int kbase, __global const int *gpdf,
                             __global const int *gl, __global const int *gcnt,
                             __global const int *pair_off, __global const long *gbase,
                             __global const int2 *emap, __global const float *gamma,
                             __global double *partial) {
  int e = get_global_id(0), g = get_global_id(1), s = get_global_id(2);
  if (e >= K || g >= Gn || s >= nseg) return;
  const int p = gpdf[g], G = gcnt[p], k0 = pair_off[p], n = pair_off[p + 1] - k0;
  const int len = (n + nseg - 1) / nseg, a = s * len, b = min(n, a + len);
  const int2 ab = emap[e];
  const __global float *gm = gamma + gbase[p] + gl[g];
  double acc = 0.0;
  for (int k = a; k < b; ++k) {
    const __global float *x = X + (size_t)frame[kbase + k0 + k] * D;
    double v = gm[(long)k * G];
    if (ab.x >= 0) v *= x[ab.x];
    if (ab.y >= 0) v *= x[ab.y];
    acc += v;
  }
  partial[((size_t)s * Gn + g) * K + e] = acc;
}

/* acc[i] += sum_s partial[s n + i], i < n. */
__kernel void gh_estep_reduce(long n, int nseg, __global const double *partial, __global double *acc) {
  long i = get_global_id(0);
  if (i >= n) return;
  double v = 0.0;
  for (int s = 0; s < nseg; ++s) v += partial[s * n + i];
  acc[i] += v;
}
#endif
