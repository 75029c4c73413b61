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
 * form, lib/gmm/gmm.h), and the E-step statistics of Gaussian g are
 * sum_k gamma_kg phi(x_k): element 0 the occupancy, 1..D the first order,
 * the rest the second order in Kaldi's layout (diag x_i^2, full packed
 * gh_packed_index(i, j) = i(i+1)/2 + j).  Element e of phi is
 * xa * xb with (a, b) = emap[e] and x_{-1} = 1.
 *
 * Centring (doc/reliability.md, "Numerical contract"): every kernel that
 * reads frames reads x - ctr (ctr [D], the model's centre rounded to float,
 * or 0), and the rows w_g are those of the same centre
 * (gemm-forms.h gh_gemm_param_row), so the fp32 terms stay small for
 * features with a large offset; the statistics are then about ctr and the
 * host uncentres them in double (opencl.c acc_fetch).
 */

/* ---- expanded features: phi[t][e] = x[t][a] x[t][b] ---- */
__kernel void gh_expand(int T, int D, int K, __global const float *X, __global const int2 *emap,
                        __global float *phi, __global const float *ctr) {
  int e = get_global_id(0), t = get_global_id(1);
  if (e >= K || t >= T) return;
  int2 ab = emap[e];
  const __global float *x = X + (size_t)t * D;
  float va = ab.x < 0 ? 1.0f : x[ab.x] - ctr[ab.x], vb = ab.y < 0 ? 1.0f : x[ab.y] - ctr[ab.y];
  phi[(size_t)t * K + e] = va * vb;
}

/* ---- our own SGEMM (used where CLBlast is absent or GH_OPENCL_GEMM=own) ----
 * C[coff + m ldc + n] = sum_k A[m lda + k] B[boff + n ldb + k]   (C = A B', row-major)
 * A 16 x 16 work-group computes a (16 WPT) x (16 WPT) tile of C, WPT x WPT
 * outputs per work-item (rows ty + 16 i, columns tx + 16 j), K in steps of
 * 16 through local memory; edges zero-padded.  gh_sgemm_nt: WPT = 4 (64 x 64
 * tiles, for small M or N); gh_sgemm_nt128: WPT = 8 (128 x 128 tiles, twice
 * the FMAs per local-memory load). */
#define GH_SGEMM_NT(NAME, WPT)                                                                   \
  __kernel __attribute__((reqd_work_group_size(16, 16, 1))) void NAME(                           \
      int M, int N, int K, __global const float *A, int lda, __global const float *B, long boff, \
      int ldb, __global float *C, int ldc, int coff) {                                           \
    __local float As[16][16 * WPT + 1];                                                          \
    __local float Bs[16][16 * WPT + 1];                                                          \
    const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * 16 + tx;                    \
    const int n0 = get_group_id(0) * 16 * WPT, m0 = get_group_id(1) * 16 * WPT;                  \
    B += boff;                                                                                   \
    float acc[WPT][WPT];                                                                         \
    for (int i = 0; i < WPT; ++i)                                                                \
      for (int j = 0; j < WPT; ++j) acc[i][j] = 0.0f;                                            \
    for (int k0 = 0; k0 < K; k0 += 16) {                                                         \
      for (int l = 0; l < WPT; ++l) {                                                            \
        int idx = tid + 256 * l, r = idx / 16, c = idx % 16, gk = k0 + c;                        \
        int gm = m0 + r, gn = n0 + r;                                                            \
        As[c][r] = (gm < M && gk < K) ? A[(size_t)gm * lda + gk] : 0.0f;                         \
        Bs[c][r] = (gn < N && gk < K) ? B[(size_t)gn * ldb + gk] : 0.0f;                         \
      }                                                                                          \
      barrier(CLK_LOCAL_MEM_FENCE);                                                              \
      for (int k = 0; k < 16; ++k) {                                                             \
        float a[WPT], b[WPT];                                                                    \
        for (int i = 0; i < WPT; ++i) a[i] = As[k][ty + 16 * i];                                 \
        for (int j = 0; j < WPT; ++j) b[j] = Bs[k][tx + 16 * j];                                 \
        for (int i = 0; i < WPT; ++i)                                                            \
          for (int j = 0; j < WPT; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);                  \
      }                                                                                          \
      barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    }                                                                                            \
    for (int i = 0; i < WPT; ++i)                                                                \
      for (int j = 0; j < WPT; ++j) {                                                            \
        int m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;                                          \
        if (m < M && n < N) C[(size_t)coff + (size_t)m * ldc + n] = acc[i][j];                   \
      }                                                                                          \
  }
GH_SGEMM_NT(gh_sgemm_nt, 4)
GH_SGEMM_NT(gh_sgemm_nt128, 8)

/* An fp32 term that is NaN or +inf is an overflow artifact (inf - inf, or
 * cross terms that overflow first, of a frame far outside the contract's
 * range: its true value is hugely negative): it counts as -inf and never
 * poisons the pdf's other Gaussians (doc/reliability.md; as cpu-blas.c). */
static float ovf(float v) { return v < INFINITY ? v : -INFINITY; }

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
  for (int g = 0; g < G; ++g) m = fmax(m, ovf(s[g]));
  float r = m;
  if (m > -INFINITY) {
    float sum = 0.0f;
    for (int g = 0; g < G; ++g) sum += exp(ovf(s[g]) - m);
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
  for (int g = l; g < G; g += 64) m = fmax(m, ovf(s[g]));
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
    for (int g = l; g < G; g += 64) sum += exp(ovf(s[g]) - m);
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

/* ---- the whitened form (kernels/gemm-forms.h gh_white_error) of full
 * Gaussians: S[t * Gt + g] = norm_g - 0.5 |Lf_g'(x_t - mu_g)|^2, the frame
 * centred at mu_g in double and rounded to float, the products in float
 * (fma, each whitened component summed in order), the squares summed in
 * double; -inf for a dead Gaussian, and for NaN or overflow far outside the
 * range.  D <= GH_WHITE_MAX_D (the host checks). */
#define GH_WHITE_MAX_D 128
__kernel void gh_white_ll(int T, int D, int Gt, __global const float *X, __global const double *mu,
                          __global const double *norm, __global const float *L, __global float *S) {
  int g = get_global_id(0), t = get_global_id(1);
  if (g >= Gt || t >= T) return;
  const double nm = norm[g];
  if (!(nm > -INFINITY)) { S[(size_t)t * Gt + g] = -INFINITY; return; }
  float d[GH_WHITE_MAX_D];
  const __global float *x = X + (size_t)t * D;
  const __global double *m = mu + (size_t)g * D;
  for (int i = 0; i < D; ++i) d[i] = (float)((double)x[i] - m[i]);
  const __global float *Lg = L + (size_t)g * D * D;
  double q = 0.0;
  for (int j = 0; j < D; ++j) {
    float y = 0.0f;
    for (int i = j; i < D; ++i) y = fma(Lg[(size_t)i * D + j], d[i], y);
    q += (double)y * y;
  }
  const double ll = nm - 0.5 * q;
  S[(size_t)t * Gt + g] = ll == ll ? (float)ll : -INFINITY;
}

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
                            __global const float *Wf, __global float *gamma, __global double *tot,
                            __global const float *ctr) {
  int k = get_global_id(0);
  if (k >= npairs) return;
  const int p = pdf[kbase + k], G = gcnt[p], full = ptype[p];
  const int K = full ? 1 + D + D * (D + 1) / 2 : 1 + 2 * D;
  if (gbase[p] < 0) { tot[k] = 0.0; return; } /* a big pdf: gh_softmax_rows does it */
  const __global float *x = X + (size_t)frame[kbase + k] * D;
  const __global float *W = (full ? Wf : Wd) + (size_t)wrow[p] * K;
  __global float *gm = gamma + gbase[p] + (long)(k - pair_off[p]) * G;
  const float w = weight[kbase + k];
  float m = -INFINITY;
  for (int g = 0; g < G; ++g, W += K) {
    float ll = W[0];
    for (int i = 0; i < D; ++i) ll = fma(W[1 + i], x[i] - ctr[i], ll);
    if (full) {
      const __global float *c = W + 1 + D;
      for (int i = 0; i < D; ++i) {
        float s = 0.0f;
        for (int j = 0; j <= i; ++j) s = fma(c[j], x[j] - ctr[j], s);
        ll = fma(s, x[i] - ctr[i], ll);
        c += i + 1;
      }
    } else {
      for (int i = 0; i < D; ++i) {
        const float xi = x[i] - ctr[i];
        ll = fma(W[1 + D + i] * xi, xi, ll);
      }
    }
    gm[g] = ovf(ll);
    m = fmax(m, gm[g]);
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
 * index within the pdf.  Writes partial[(s Gn + g) K + e] (0 for the big
 * pdfs of the GEMM path, gbase < 0); gh_estep_reduce adds the segments into
 * the accumulators. */
__kernel void gh_estep_stats(int Gn, int K, int nseg, int D, __global const float *X,
                             __global const int *frame, int kbase, __global const int *gpdf,
                             __global const int *gl, __global const int *gcnt,
                             __global const int *pair_off, __global const long *gbase,
                             __global const int2 *emap, __global const float *gamma,
                             __global double *partial, __global const float *ctr) {
  int e = get_global_id(0), g = get_global_id(1), s = get_global_id(2);
  if (e >= K || g >= Gn || s >= nseg) return;
  const int p = gpdf[g], G = gcnt[p], k0 = pair_off[p], n = gbase[p] < 0 ? 0 : pair_off[p + 1] - k0;
  const int len = (n + nseg - 1) / nseg, a = s * len, b = min(n, a + len);
  const int2 ab = emap[e];
  const __global float *gm = gamma + gbase[p] + gl[g];
  double acc = 0.0;
  for (int k = a; k < b; ++k) {
    const __global float *x = X + (size_t)frame[kbase + k0 + k] * D;
    double v = gm[(long)k * G];
    if (ab.x >= 0) v *= x[ab.x] - ctr[ab.x];
    if (ab.y >= 0) v *= x[ab.y] - ctr[ab.y];
    acc += v;
  }
  partial[((size_t)s * Gn + g) * K + e] = acc;
}

/* acc[aoff + i] += sum_s partial[s n + i], i < n. */
__kernel void gh_estep_reduce(long n, int nseg, __global const double *partial, __global double *acc,
                              long aoff) {
  long i = get_global_id(0);
  if (i >= n) return;
  double v = 0.0;
  for (int s = 0; s < nseg; ++s) v += partial[s * n + i];
  acc[aoff + i] += v;
}

/* ---- E-step of a pdf with many Gaussians and many pairs (global UBMs):
 * the GEMM path.  For a block of n of its pairs (sorted indices kbase ..):
 * gh_expand_pairs gathers Phi [n x K], an SGEMM gives ll = Phi W_p' [n x G],
 * gh_softmax_rows turns each row into posteriors in place, and
 * gh_stats_tn sums Gamma' Phi [G x K] in double. ---- */

/* phi[k][e] = x_a x_b of the frame of sorted pair kbase + k (k < n). */
__kernel void gh_expand_pairs(int n, int D, int K, int kbase, __global const float *X,
                              __global const int *frame, __global const int2 *emap, __global float *phi,
                              __global const float *ctr) {
  int e = get_global_id(0), k = get_global_id(1);
  if (e >= K || k >= n) return;
  int2 ab = emap[e];
  const __global float *x = X + (size_t)frame[kbase + k] * D;
  float va = ab.x < 0 ? 1.0f : x[ab.x] - ctr[ab.x], vb = ab.y < 0 ? 1.0f : x[ab.y] - ctr[ab.y];
  phi[(size_t)k * K + e] = va * vb;
}

/* Row k of S [n x G] (Gaussian loglikes of pair kbase + k): S = w exp(S -
 * lse) in place, tot[k] = w lse (double).  64 work-items per row. */
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void gh_softmax_rows(int n, int G, int kbase, __global const float *weight, __global float *S,
                     __global double *tot) {
  __local float red[64];
  const int l = get_local_id(0), k = get_group_id(0);
  __global float *s = S + (size_t)k * G;
  float m = -INFINITY;
  for (int g = l; g < G; g += 64) m = fmax(m, ovf(s[g]));
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
    for (int g = l; g < G; g += 64) sum += exp(ovf(s[g]) - m);
  red[l] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = 32; h > 0; h >>= 1) {
    if (l < h) red[l] += red[l + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float w = weight[kbase + k];
  if (m == -INFINITY) {
    for (int g = l; g < G; g += 64) s[g] = 0.0f;
    if (l == 0) tot[k] = w * (double)m;
    return;
  }
  const float lse = m + log(red[0]);
  for (int g = l; g < G; g += 64) s[g] = w * exp(ovf(s[g]) - lse);
  if (l == 0) tot[k] = (double)w * (double)lse;
}

/* partial[(s G + g) K + e] = sum over k in segment s of A[k G + g] B[k K + e]
 * (Gamma' Phi), products and sums in double.  64 x 64 tile of the output per
 * 16 x 16 work-group (4 x 4 per work-item), pairs in steps of 16 through
 * local memory; segment s = group id 2 covers pairs s len .. (s+1) len - 1. */
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void gh_stats_tn(int n, int G, int K, int nseg, __global const float *A, __global const float *B,
                 __global double *partial) {
  __local float As[16][64];
  __local float Bs[16][64];
  const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * 16 + tx;
  const int e0 = get_group_id(0) * 64, g0 = get_group_id(1) * 64, s = get_group_id(2);
  const int len = (n + nseg - 1) / nseg, ka = s * len, kb = min(n, ka + len);
  double acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  for (int k0 = ka; k0 < kb; k0 += 16) {
    for (int l = 0; l < 4; ++l) {
      int idx = tid + 256 * l, r = idx / 64, c = idx % 64, k = k0 + r;
      As[r][c] = (k < kb && g0 + c < G) ? A[(size_t)k * G + g0 + c] : 0.0f;
      Bs[r][c] = (k < kb && e0 + c < K) ? B[(size_t)k * K + e0 + c] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < 16; ++k) {
      double a[4], b[4];
      for (int i = 0; i < 4; ++i) a[i] = As[k][ty + 16 * i];
      for (int j = 0; j < 4; ++j) b[j] = Bs[k][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      int g = g0 + ty + 16 * i, e = e0 + tx + 16 * j;
      if (g < G && e < K) partial[((size_t)s * G + g) * K + e] = acc[i][j];
    }
}
#endif
