/* cuda-gemm.cu -- GEMM-shaped likelihoods and E-step (see cuda-gemm.h for
 * the forms; doc/kernels.md "GEMM forms").
 *
 * Kernels (ours) around cuBLAS GEMMs:
 *  k_recentre  parameter rows for a centre c (warp per Gaussian, double)
 *  k_expand    expanded centred features of n (gathered) frames, optionally
 *              split into TF32 big + small parts (3xTF32)
 *  k_lse_pdf   per-pdf log-sum-exp of a [n x G_total] likelihood block
 *  k_post      E-step posteriors w exp(ll - lse) in place + w lse per row
 *  k_acc_add   double accumulators += uncentred statistics of one chunk
 *  k_sum_part, k_sum_into  fixed-order sum of a double vector into one value
 * Precision (backend.h gh_precision): FP32 = cuBLAS SGEMM (CUBLAS_COMPUTE_32F);
 * TF32 = one tensor-core GEMM (CUBLAS_COMPUTE_32F_FAST_TF32); TF32X3 = three
 * (a_s b + a b_s + a b, with a = a_big + a_small split in TF32, a_big the
 * operand rounded to TF32 and a_small the rounded remainder; the a_s b_s
 * term is dropped) -- fp32-level accuracy from TF32 tensor cores (the
 * 3xTF32 of CUTLASS; Ootomo & Yokota 2022).
 * Determinism: no floating atomics; every accumulation is done by one
 * thread in a fixed order, and cuBLAS gives bitwise-identical results for
 * the same shapes on the same GPU (its documented reproducibility), so two
 * runs give byte-identical statistics.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "backend.h"
#include "base/env.h"
#include "base/gh-base.h"
#include "cuda-check.h"
#include "cuda-pool.h"
#include "gemm-forms.h"
}
#include "cuda-gemm.h"
#include "cuda-tc.h"
#include "cuda-wg.h"

/* ------------------------------------------------------ cuBLAS, by dlopen */

typedef cublasStatus_t (*p_create)(cublasHandle_t *);
typedef cublasStatus_t (*p_destroy)(cublasHandle_t);
typedef cublasStatus_t (*p_gemmsb)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                   const void *, const void *, cudaDataType, int, long long, const void *,
                                   cudaDataType, int, long long, const void *, void *, cudaDataType, int,
                                   long long, int, cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*p_gemmex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                   const void *, const void *, cudaDataType, int, const void *,
                                   cudaDataType, int, const void *, void *, cudaDataType, int,
                                   cublasComputeType_t, cublasGemmAlgo_t);
static struct {
  int ok;
  p_create create;
  p_destroy destroy;
  p_gemmex gemmex;
  p_gemmsb gemmsb;
} blas;

/* $GH_CUDA_NO_CUBLAS, read on the thread that calls gg_preload or first
 * gg_available, never on the preload thread (a getenv there could race a
 * setenv of the caller's: the unit tests set variables between cases). */
static int blas_off = -1;
static void blas_load(void) {
  if (blas_off < 0) blas_off = gh_env_set("GH_CUDA_NO_CUBLAS");
  if (blas_off) return;
  const char *names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                         "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so"};
  void *h = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; ++i) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    gh_log("cuBLAS not found (%s): CUDA backend uses its fused kernels only", dlerror());
    return;
  }
  blas.create = (p_create)dlsym(h, "cublasCreate_v2");
  blas.destroy = (p_destroy)dlsym(h, "cublasDestroy_v2");
  blas.gemmex = (p_gemmex)dlsym(h, "cublasGemmEx");
  blas.gemmsb = (p_gemmsb)dlsym(h, "cublasGemmStridedBatchedEx");
  blas.ok = blas.create && blas.destroy && blas.gemmex && blas.gemmsb;
  if (!blas.ok) gh_log("cuBLAS lacks cublasCreate_v2/cublasGemmEx: CUDA backend uses its fused kernels only");
}

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
int gg_available(void) {
  pthread_once(&blas_once, blas_load);
  return blas.ok;
}

static void *preload_main(void *arg) {
  (void)arg;
  gg_available();
  return NULL;
}
static void preload_start(void) {
  if (blas_off < 0) blas_off = gh_env_set("GH_CUDA_NO_CUBLAS"); /* here, before the thread starts */
  pthread_t t;
  pthread_attr_t at;
  if (pthread_attr_init(&at)) return;
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  (void)pthread_create(&t, &at, preload_main, NULL); /* detached: callers wait in pthread_once */
  pthread_attr_destroy(&at);
}
void gg_preload(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, preload_start);
}

#define CKB(call)                                                                     \
  do {                                                                                \
    cublasStatus_t s_ = (call);                                                       \
    if (s_ != CUBLAS_STATUS_SUCCESS) gh_die("cuBLAS error %d in %s (%s:%d)", (int)s_, #call, __FILE__, __LINE__); \
  } while (0)

/* ------------------------------------------------------------- kernels */

/* The arithmetic of the kernels written once for float and double
 * (k_expand, k_lse_warp, k_post): float as the fp32 paths always did it
 * (__expf in the per-pdf log-sum-exp, expf in the posteriors), double (the
 * exact pdfs' path) with exp / log. */
template <typename T> struct Fp;
template <> struct Fp<float> {
  static __device__ __forceinline__ float max(float a, float b) { return fmaxf(a, b); }
  static __device__ __forceinline__ float ovf(float x) { return gh_ovf(x); } /* cuda-check.h */
  static __device__ __forceinline__ float exp_lse(float x) { return __expf(x); }
  static __device__ __forceinline__ float exp(float x) { return expf(x); }
  static __device__ __forceinline__ float log(float x) { return logf(x); }
};
template <> struct Fp<double> {
  static __device__ __forceinline__ double max(double a, double b) { return fmax(a, b); }
  static __device__ __forceinline__ double ovf(double x) { return x; } /* double terms of float parameters do not overflow */
  static __device__ __forceinline__ double exp_lse(double x) { return ::exp(x); }
  static __device__ __forceinline__ double exp(double x) { return ::exp(x); }
  static __device__ __forceinline__ double log(double x) { return ::log(x); }
};
/* Warp reductions in a fixed (butterfly) order: every lane gets the result. */
template <typename T> __device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <typename T> __device__ __forceinline__ T warp_max(T v) {
  for (int o = 16; o > 0; o >>= 1) v = Fp<T>::max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/* One warp per Gaussian row r (Gt rows): row r of A0 at off[r] (floats),
 * full[r] its type, form[r (D + 1) ..] its exact [norm, mu] in double
 * (gemm-forms.h gh_gemm_set_errors; the row's own float gconst a[0] is not
 * read: for features with a large offset its rounding alone is 1e-2 nats
 * and more, and gconst + b.c - ... cancels).
 * Writes the centred row to Ac (same layout), split into TF32 big (Ac) +
 * small (As) parts when As != NULL, or in double to Ad when Ad != NULL
 * (then Ac, As unused).  Row: [gconst, b (D), q (S)] with
 * ll(x) = gconst + b.x + sum_{j<=i} q_ij x_i x_j.
 *   gconst' = ll(c) = norm - 0.5 (c - mu)'P(c - mu),   b' = b - P c = P (mu - c)
 * (in double from the float q and the exact mu: the exact form at c,
 * gemm-forms.h gh_gemm_param_row_d, rounded once; both from c - mu, so no
 * large terms cancel).  A dead Gaussian (norm -inf) gets [-inf, 0, 0]. */
__global__ void __launch_bounds__(256)
k_recentre(const float *__restrict__ A0, const double *__restrict__ form, const long long *__restrict__ off,
           const unsigned char *__restrict__ full, long long Gt, int D, const double *__restrict__ c,
           float *__restrict__ Ac, float *__restrict__ As, double *__restrict__ Ad) {
  const long long r = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (r >= Gt) return;
  const float *a = A0 + off[r];
  const double norm = form[r * (D + 1)], *mu = form + r * (D + 1) + 1;
  const bool dead = !(norm > -INFINITY); /* gemm-forms.h: a dead Gaussian's row is [-inf, 0, 0] */
  /* element e of the output row: double (Ad), or float split into TF32
   * parts (As; a non-finite value keeps a zero small part), or float */
  auto put = [&](int e, double v) {
    if (Ad) { Ad[off[r] + e] = v; return; }
    const float f = (float)v;
    if (As) {
      const float big = gg_tf32_round(f);
      Ac[off[r] + e] = big;
      As[off[r] + e] = isfinite(f) ? gg_tf32_round(f - big) : 0.f;
    } else {
      Ac[off[r] + e] = f;
    }
  };
  const int F = full[r];
  const float *q = a + 1 + D;
  const int S = F ? D * (D + 1) / 2 : D;
  double quad = 0.0; /* sum_i e_i (-(P e)_i), e = c - mu: -e'Pe */
  for (int i = lane; i < D; i += 32) {
    /* b'_i = b_i - (P c)_i = -(P e)_i (b = P mu exactly for the exact mu):
     * from e, not as the difference of two large terms */
    double pe = 0.0;
    const double ei = c[i] - mu[i];
    if (F) {
      const float *qi = q + (long long)i * (i + 1) / 2;
      for (int j = 0; j < i; ++j) pe += (double)qi[j] * (c[j] - mu[j]);
      pe += 2.0 * (double)qi[i] * ei;
      for (int j = i + 1; j < D; ++j) pe += (double)q[(long long)j * (j + 1) / 2 + i] * (c[j] - mu[j]);
    } else {
      pe = 2.0 * (double)q[i] * ei;
    }
    quad += ei * pe;
    put(1 + i, dead ? 0.0 : pe);
  }
  quad = warp_sum(quad);
  if (lane == 0) put(0, dead ? -INFINITY : norm + 0.5 * quad);
  for (int e = lane; e < S; e += 32) put(1 + D + e, dead ? 0.0 : (double)q[e]);
}

#define XR 4 /* rows per block of k_expand */
/* Expanded centred features of rows r < n: frame f = frames ? frames[r] :
 * row0 + r of X [. x Dp]; out Xe [n x Ep] (row-major; E values, then zeros
 * up to the padded row length Ep, a multiple of 8).  T = float: x' = x - c
 * rounded to float and the products in float, split into TF32 big (Xe) +
 * small (Xs) when Xs != NULL; perm: each row in the tensor-core kernels'
 * order (cuda-tc.h gt_kpos).  T = double (the exact pdfs' path, gg_model
 * exact): in double, no split (Xs NULL), no permutation (perm 0).  ij[q] =
 * (i, j) of packed index q. */
template <bool FULL, typename T>
__global__ void __launch_bounds__(256)
k_expand(const float *__restrict__ X, int Dp, int D, const int32_t *__restrict__ frames, long long row0, int n,
         const double *__restrict__ c, const short2 *__restrict__ ij, int E, int Ep, T *__restrict__ Xe,
         float *__restrict__ Xs, int perm) {
  extern __shared__ __align__(8) unsigned char xraw[];
  T *xs = (T *)xraw; /* [XR][D] */
  const int r0 = blockIdx.x * XR;
  for (int idx = threadIdx.x; idx < XR * D; idx += blockDim.x) {
    const int rr = idx / D, i = idx - rr * D, r = r0 + rr;
    T v = 0;
    if (r < n) {
      const long long f = frames ? frames[r] : row0 + r;
      v = (T)((double)X[f * Dp + i] - c[i]);
    }
    xs[idx] = v;
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < XR * Ep; idx += blockDim.x) {
    const int rr = idx / Ep, e = idx - rr * Ep, r = r0 + rr;
    if (r >= n) break;
    const T *x = xs + rr * D;
    T v;
    if (e >= E) v = 0; /* padding of the row to Ep (aligned GEMM operands) */
    else if (e == 0) v = 1;
    else if (e <= D) v = x[e - 1];
    else if (FULL) { const short2 p = ij[e - 1 - D]; v = x[p.x] * x[p.y]; }
    else { const T t = x[e - 1 - D]; v = t * t; }
    const long long o = (long long)r * Ep + (perm ? gt_kpos(e) : e);
    if constexpr (sizeof(T) == sizeof(float)) {
      if (Xs) { const float big = gg_tf32_round(v); Xe[o] = big; Xs[o] = gg_tf32_round(v - big); }
      else Xe[o] = v;
    } else {
      Xe[o] = v;
    }
  }
}

/* out[t][p] = log sum_{g in pdf p} exp(L[t][goff[p] + g]) for t < n, p < P;
 * L [n x Gt] row-major; out [n x P].  Thread per (t, p) (small pdfs). */
__global__ void __launch_bounds__(256)
k_lse_thread(const float *__restrict__ L, long long Gt, const long long *__restrict__ goff, int P, int n,
             float *__restrict__ out) {
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (long long)n * P) return;
  const int t = (int)(idx / P), p = (int)(idx - (long long)t * P);
  const float *l = L + (long long)t * Gt + goff[p];
  const int G = (int)(goff[p + 1] - goff[p]);
  float mx = -INFINITY;
  for (int g = 0; g < G; ++g) mx = fmaxf(mx, gh_ovf(l[g]));
  float r = -INFINITY;
  if (mx > -INFINITY) {
    float s = 0.f;
    for (int g = 0; g < G; ++g) s += __expf(gh_ovf(l[g]) - mx);
    r = mx + logf(s);
  }
  out[idx] = r;
}
/* The same, one warp per (t, p) (pdfs of many Gaussians: UBMs); T =
 * double: the exact pdfs' double likelihood block, the result rounded to
 * float once. */
template <typename T>
__global__ void __launch_bounds__(256)
k_lse_warp(const T *__restrict__ L, long long Gt, const long long *__restrict__ goff, int P, int n,
           float *__restrict__ out) {
  const long long idx = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (idx >= (long long)n * P) return;
  const int t = (int)(idx / P), p = (int)(idx - (long long)t * P);
  const T *l = L + (long long)t * Gt + goff[p];
  const int G = (int)(goff[p + 1] - goff[p]);
  T mx = -INFINITY;
  for (int g = lane; g < G; g += 32) mx = Fp<T>::max(mx, Fp<T>::ovf(l[g]));
  mx = warp_max(mx);
  T s = 0;
  if (mx > -INFINITY)
    for (int g = lane; g < G; g += 32) s += Fp<T>::exp_lse(Fp<T>::ovf(l[g]) - mx);
  s = warp_sum(s);
  if (lane == 0) out[idx] = mx > -INFINITY ? (float)(mx + Fp<T>::log(s)) : -INFINITY;
}

/* E-step posteriors, one warp per row r < n of L [n x G], row stride ld (in place):
 * L[r][g] <- w_r exp(L[r][g] - lse_r) (T = float: TF32 big part when Rs !=
 * NULL, small part into Rs; T = double, the exact pdfs' path: Rs NULL),
 * rows G..ld-1 zeroed, tot[r] = w_r lse_r (0 when every Gaussian is -inf).
 * NV > 0: G <= 32 NV, the row held in registers and read once; NV = 0: any
 * G, the row read three times (UBM 1 x 1024 full EM on an H200: 12.75 ms
 * with NV = 0, 12.38 with 32; bench/RESULTS.md D8). */
template <int NV, typename T>
__global__ void __launch_bounds__(256)
k_post(T *__restrict__ L, float *__restrict__ Rs, int G, int ld, int n, const float *__restrict__ w,
       double *__restrict__ tot) {
  const int r = blockIdx.x * 8 + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (r >= n) return;
  T *l = L + (long long)r * ld;
  float *ls = Rs ? Rs + (long long)r * ld : NULL;
  T v[NV > 0 ? NV : 1], mx = -INFINITY;
  if constexpr (NV > 0) {
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const int g = lane + 32 * i;
      v[i] = g < G ? Fp<T>::ovf(l[g]) : -INFINITY;
      mx = Fp<T>::max(mx, v[i]);
    }
  } else {
    for (int g = lane; g < G; g += 32) mx = Fp<T>::max(mx, Fp<T>::ovf(l[g]));
  }
  mx = warp_max(mx);
  T s = 0;
  if (mx > -INFINITY) {
    if constexpr (NV > 0) {
#pragma unroll
      for (int i = 0; i < NV; ++i) s += Fp<T>::exp(v[i] - mx);
    } else {
      for (int g = lane; g < G; g += 32) s += Fp<T>::exp(Fp<T>::ovf(l[g]) - mx);
    }
  }
  s = warp_sum(s);
  const T lse = mx + Fp<T>::log(s);
  const T wr = w ? (T)w[r] : (T)1;
  auto put = [&](int g, T ll) {
    const T x = mx > -INFINITY ? wr * Fp<T>::exp(ll - lse) : (T)0;
    if constexpr (sizeof(T) == sizeof(float)) {
      if (ls) { const float big = gg_tf32_round(x); l[g] = big; ls[g] = gg_tf32_round(x - big); return; }
    }
    l[g] = x;
  };
  if constexpr (NV > 0) {
#pragma unroll
    for (int i = 0; i < NV; ++i)
      if (lane + 32 * i < G) put(lane + 32 * i, v[i]);
  } else {
    for (int g = lane; g < G; g += 32) put(g, Fp<T>::ovf(l[g]));
  }
  for (int g = G + lane; g < ld; g += 32) { /* the GEMM's rows G..Gp-1 (GG_ROW_TAIL): no posterior */
    l[g] = 0;
    if (ls) ls[g] = 0.f;
  }
  if (lane == 0) tot[r] = mx > -INFINITY ? (double)wr * (double)lse : 0.0;
}

/* E-step posteriors of nr rows (k_post; in registers for G <= 1024). */
static void post(float *L, float *Rs, int G, int ld, int nr, const float *w, double *tot) {
  const unsigned nb = (unsigned)((nr + 7) / 8);
  if (G <= 256) k_post<8, float><<<nb, 256>>>(L, Rs, G, ld, nr, w, tot);
  else if (G <= 512) k_post<16, float><<<nb, 256>>>(L, Rs, G, ld, nr, w, tot);
  else if (G <= 1024) k_post<32, float><<<nb, 256>>>(L, Rs, G, ld, nr, w, tot);
  else k_post<0, float><<<nb, 256>>>(L, Rs, G, ld, nr, w, tot);
  CK(cudaGetLastError());
}

/* acc [G x E] double += uncentred statistics of S = sum over the nslice
 * slices b of S + b sstride, each [G x Ep] (float partial sums over a slice
 * of the frames, centred by c; summed here in double, in slice order):
 * block per Gaussian g; with o = S[0], m = S[1..D]:
 *   occ: o;  first order: m_i + o c_i;
 *   full (i, j): S + c_i m_j + c_j m_i + o c_i c_j;  diag: S + 2 c_i m_i + o c_i^2. */
template <typename TS>
__global__ void __launch_bounds__(256)
k_acc_add(const TS *__restrict__ S, int nslice, long long sstride, int Ep, int E, int D, int full,
          const short2 *__restrict__ ij, const double *__restrict__ c, double *__restrict__ acc) {
  const int g = blockIdx.x;
  extern __shared__ double ssum[]; /* [1 + D]: occupancy and first order, summed over slices */
  const TS *s = S + (long long)g * Ep;
  double *a = acc + (long long)g * E;
  for (int e = threadIdx.x; e <= D; e += blockDim.x) {
    double v = 0.0;
    for (int b = 0; b < nslice; ++b) v += (double)s[b * sstride + e];
    ssum[e] = v;
  }
  __syncthreads();
  const double o = ssum[0];
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    double v;
    if (e == 0) v = o;
    else if (e <= D) v = ssum[e] + o * c[e - 1];
    else {
      int i, j;
      if (full) { const short2 p = ij[e - 1 - D]; i = p.x; j = p.y; }
      else { i = j = e - 1 - D; }
      double t = 0.0;
      for (int b = 0; b < nslice; ++b) t += (double)s[b * sstride + e];
      v = t + c[i] * ssum[1 + j] + c[j] * ssum[1 + i] + o * c[i] * c[j];
    }
    a[e] += v;
  }
}

/* ------------------------------------------- the candidate E-step (estep_cand)
 * For a full-covariance pdf: the likelihoods of every (frame, Gaussian) in
 * 3xTF32 (fp32-level, error estimated per pdf: eps), then, per frame, the
 * exact log-likelihood norm - 0.5 (x - mu)'P(x - mu) in double of just the
 * Gaussians within delta = GG_CAND_MARGIN + 8 eps of the frame's largest
 * approximate one (the "candidates"); posteriors from those, and the
 * statistics of the candidates accumulated in double, Gaussian by Gaussian
 * in frame order (no statistics GEMM).  A Gaussian left out is at least
 * GG_CAND_MARGIN nats below the frame's best even after both errors: its
 * posterior is below e^-40 (4e-18), under double rounding.  So the
 * log-likelihoods and statistics are those of the exact form, as the cpu
 * backend's DGEMM path gives them, for about the cost of one fp32 GEMM. */
#define CAND_SB 256 /* threads of the scanning kernels k_cand_exact / k_cand_stats */
#define CAND_PT 8   /* consecutive frames per thread in their scans */
#define CAND_FR (CAND_SB * CAND_PT) /* frames of one block (blockIdx.y: the slice) */
#define CAND_NB 64  /* frames staged at a time in k_cand_stats */
#define GG_CAND_MARGIN 40.0 /* nats below a frame's best that a Gaussian may be left out */

/* mx[t] = max over g < G of Lt[g ld + t] (thread per frame t < n). */
__global__ void __launch_bounds__(256)
k_cand_max(const float *__restrict__ Lt, long long ld, int G, int n, float *__restrict__ mx) {
  const int t = blockIdx.x * 256 + threadIdx.x;
  if (t >= n) return;
  float m = -INFINITY;
#pragma unroll 8
  for (int g = 0; g < G; ++g) m = fmaxf(m, gh_ovf(Lt[(long long)g * ld + t]));
  mx[t] = m;
}

/* The candidate test, the same expression in every kernel: frame t is a
 * candidate of Gaussian g when its best approximate log-likelihood m =
 * mx[t] is finite and the Gaussian's approximate one v >= m - delta. */
__device__ __forceinline__ bool cand_is(float v, float m, float delta) { return m > -INFINITY && v >= m - delta; }

/* The test for this thread's CAND_PT consecutive frames t0 = f0 + CAND_PT
 * threadIdx.x .. of the row l (< f1): bit k set when frame t0 + k is a
 * candidate.  All loads are issued first (16-byte loads where the CAND_PT
 * frames are in range: the rows start at multiples of 8 floats). */
__device__ __forceinline__ unsigned cand_bits(const float *__restrict__ l, const float *__restrict__ mx, int f0,
                                              int f1, float delta) {
  const int t0 = f0 + CAND_PT * threadIdx.x;
  float v[CAND_PT], m[CAND_PT];
  if (t0 + CAND_PT <= f1) {
#pragma unroll
    for (int k = 0; k < CAND_PT; k += 4) {
      const float4 a = *(const float4 *)(l + t0 + k), b = *(const float4 *)(mx + t0 + k);
      v[k] = a.x; v[k + 1] = a.y; v[k + 2] = a.z; v[k + 3] = a.w;
      m[k] = b.x; m[k + 1] = b.y; m[k + 2] = b.z; m[k + 3] = b.w;
    }
  } else {
#pragma unroll
    for (int k = 0; k < CAND_PT; ++k) {
      v[k] = t0 + k < f1 ? l[t0 + k] : -INFINITY;
      m[k] = t0 + k < f1 ? mx[t0 + k] : -INFINITY;
    }
  }
  unsigned bits = 0;
#pragma unroll
  for (int k = 0; k < CAND_PT; ++k)
    if (cand_is(v[k], m[k], delta)) bits |= 1u << k;
  return bits;
}

/* Writes the block's candidate frames (bits of cand_bits) into list in
 * frame order and returns their number (the same in every thread).  wsum:
 * CAND_SB / 32 ints of shared memory.  Barriers: list is complete on
 * return, and wsum may be reused after the caller's next barrier. */
__device__ __forceinline__ int cand_list(unsigned bits, int f0, int *list, int *wsum) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, cnt = __popc(bits);
  int x = cnt; /* inclusive prefix within the warp */
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  if (lane == 31) wsum[w] = x;
  __syncthreads();
  int base = 0, total = 0;
  for (int k = 0; k < CAND_SB / 32; ++k) {
    if (k < w) base += wsum[k];
    total += wsum[k];
  }
  int pos = base + x - cnt;
  const int t0 = f0 + CAND_PT * threadIdx.x;
  for (int k = 0; k < CAND_PT; ++k)
    if ((bits >> k) & 1u) list[pos++] = t0 + k;
  __syncthreads();
  return total;
}

/* Block per Gaussian g of the pdf (blockIdx.x; rows: its float rows,
 * Gaussian g at rows + g Ep, q from 1 + D; form: its [norm, mu] in double,
 * D + 1 per Gaussian) and slice of CAND_FR frames (blockIdx.y): for the
 * candidate frames t (cand_is) of the slice, Lx[g ld + t] := (float)(ll -
 * mx[t]) with ll = norm + sum_{j<=i} q_ij y_i y_j, y = x - mu, in double (=
 * norm - 0.5 y'Py); nothing else is written (Lx is read only where the
 * test holds).  One scan of the slice (CAND_PT frames a thread, loads
 * first), then a warp per candidate (lanes over the rows of q, a fixed
 * shuffle sum). */
__global__ void __launch_bounds__(CAND_SB)
k_cand_exact(const float *__restrict__ Lt, float *__restrict__ Lx, long long ld, int n, const float *__restrict__ mx,
             float delta, const float *__restrict__ X, int Dp, const int32_t *__restrict__ frames,
             const float *__restrict__ rows, int Ep, const double *__restrict__ form, int D) {
  extern __shared__ double ysw[]; /* [CAND_SB / 32][D]: each warp's y */
  __shared__ int list[CAND_FR], wsum[CAND_SB / 32];
  const int g = blockIdx.x, f0 = blockIdx.y * CAND_FR, f1 = n - f0 < CAND_FR ? n : f0 + CAND_FR;
  const unsigned bits = cand_bits(Lt + (long long)g * ld, mx, f0, f1, delta);
  const int total = cand_list(bits, f0, list, wsum);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const float *q = rows + (long long)g * Ep + 1 + D;
  const double *fm = form + (long long)g * (D + 1);
  const double norm = fm[0];
  double *y = ysw + warp * D;
  for (int k = warp; k < total; k += CAND_SB / 32) {
    const int t = list[k];
    const long long f = frames ? frames[t] : t;
    for (int i = lane; i < D; i += 32) y[i] = (double)X[f * Dp + i] - fm[1 + i];
    __syncwarp();
    double acc = 0.0;
    for (int i = lane; i < D; i += 32) {
      const float *qi = q + i * (i + 1) / 2;
      double r = 0.0;
      for (int j = 0; j <= i; ++j) r += (double)qi[j] * y[j];
      acc += y[i] * r;
    }
    acc = warp_sum(acc);
    if (lane == 0) Lx[(long long)g * ld + t] = (float)((norm > -INFINITY ? norm + acc : -INFINITY) - (double)mx[t]);
    __syncwarp(); /* y is rewritten for the next candidate */
  }
}

/* Thread per frame t < n: lr[t] = log sum over the candidates g of
 * exp(Lx[g ld + t]) (their exact log-likelihoods relative to mx[t]; in
 * double) and tot[t] = w_t (mx[t] + lr[t]) (0 when no Gaussian is finite).
 * Eight loads of Lt in flight. */
__global__ void __launch_bounds__(256)
k_cand_lse(const float *__restrict__ Lt, const float *__restrict__ Lx, long long ld, int G, int n,
           const float *__restrict__ mx, float delta, const float *__restrict__ w, double *__restrict__ lr,
           double *__restrict__ tot) {
  const int t = blockIdx.x * 256 + threadIdx.x;
  if (t >= n) return;
  const float m = mx[t];
  double s = 0.0;
  int g = 0;
  for (; g + 8 <= G; g += 8) {
    float v[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = Lt[(long long)(g + k) * ld + t];
#pragma unroll
    for (int k = 0; k < 8; ++k)
      if (cand_is(v[k], m, delta)) s += exp((double)Lx[(long long)(g + k) * ld + t]);
  }
  for (; g < G; ++g)
    if (cand_is(Lt[(long long)g * ld + t], m, delta)) s += exp((double)Lx[(long long)g * ld + t]);
  const bool ok = m > -INFINITY && s > 0;
  lr[t] = ok ? log(s) : 0.0;
  tot[t] = ok ? (double)(w ? w[t] : 1.f) * ((double)m + log(s)) : 0.0;
}

/* Block per Gaussian g (blockIdx.x) and slice b of CAND_FR frames
 * (blockIdx.y): its centred statistics in double over the slice's
 * candidate frames t, gamma = w_t exp(Lx[g ld + t] - lr[t]), in frame
 * order: Sd[(b G + g) Ep + e], e < E0: [sum gamma, sum gamma x', sum gamma
 * vech(x'x')], x' = x - c (k_acc_add sums the slices in order and
 * uncentres them).  One scan (as k_cand_exact), then each thread owns the
 * entries e = tid, tid + CAND_SB, ... (kept in shared memory); CAND_NB
 * frames staged at a time. */
__global__ void __launch_bounds__(CAND_SB)
k_cand_stats(const float *__restrict__ Lt, const float *__restrict__ Lx, long long ld, int n,
             const float *__restrict__ mx, float delta, const double *__restrict__ lr, const float *__restrict__ w,
             const float *__restrict__ X, int Dp, const int32_t *__restrict__ frames, const double *__restrict__ c,
             const short2 *__restrict__ ij, int D, int E0, int Ep, double *__restrict__ Sd) {
  extern __shared__ double sh[];
  __shared__ int list[CAND_FR], wsum[CAND_SB / 32];
  const int g = blockIdx.x, tid = threadIdx.x, f0 = blockIdx.y * CAND_FR, f1 = n - f0 < CAND_FR ? n : f0 + CAND_FR;
  double *acc = sh, *xs = acc + E0, *gam = xs + CAND_NB * D; /* xs [CAND_NB][D], gam [CAND_NB] */
  for (int e = tid; e < E0; e += CAND_SB) acc[e] = 0.0;
  const unsigned bits = cand_bits(Lt + (long long)g * ld, mx, f0, f1, delta);
  const int total = cand_list(bits, f0, list, wsum);
  for (int k0 = 0; k0 < total; k0 += CAND_NB) {
    const int nb = total - k0 < CAND_NB ? total - k0 : CAND_NB;
    for (int idx = tid; idx < nb * D; idx += CAND_SB) {
      const int k = idx / D, i = idx - k * D;
      const long long f = frames ? frames[list[k0 + k]] : list[k0 + k];
      xs[idx] = (double)X[f * Dp + i] - c[i];
    }
    for (int k = tid; k < nb; k += CAND_SB) {
      const int t = list[k0 + k];
      gam[k] = (double)(w ? w[t] : 1.f) * exp((double)Lx[(long long)g * ld + t] - lr[t]);
    }
    __syncthreads();
    for (int e = tid; e < E0; e += CAND_SB) {
      double a = acc[e];
      if (e == 0) {
        for (int k = 0; k < nb; ++k) a += gam[k];
      } else if (e <= D) {
        for (int k = 0; k < nb; ++k) a += gam[k] * xs[k * D + e - 1];
      } else {
        const short2 pq = ij[e - 1 - D];
        for (int k = 0; k < nb; ++k) a += gam[k] * (xs[k * D + pq.x] * xs[k * D + pq.y]);
      }
      acc[e] = a;
    }
    __syncthreads();
  }
  for (int e = tid; e < E0; e += CAND_SB) Sd[((long long)blockIdx.y * gridDim.x + g) * Ep + e] = acc[e];
}

/* Sum of v[0..n) in a fixed order into *out (set, or added when add):
 * thread k sums k, k+256, ... in order, then a fixed tree.  One block of
 * 256 threads. */
__device__ __forceinline__ void block_sum_fixed(const double *__restrict__ v, long long n, double *out, int add) {
  __shared__ double sh[256];
  double s = 0.0;
  for (long long k = threadIdx.x; k < n; k += 256) s += v[k];
  sh[threadIdx.x] = s;
  __syncthreads();
  for (int h = 128; h > 0; h >>= 1) {
    if (threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = add ? *out + sh[0] : sh[0];
}

/* Partial sums of gg_sum_into for long vectors: block b sums
 * v[b chunk, min(n, (b + 1) chunk)) into g_sum_part[b]; k_sum_into then adds
 * the parts in block order.  (One block over 262,144 values took 76 us of a
 * 4.0 ms UBM EM iteration on an H200; bench/RESULTS.md D19.)  The
 * scratch is a device global: gg_sum_into is for the default stream only. */
#define SUM_PARTS 128
__device__ double g_sum_part[SUM_PARTS];
__global__ void __launch_bounds__(256) k_sum_part(const double *__restrict__ v, long long n, long long chunk) {
  const long long b0 = (long long)blockIdx.x * chunk, m = n - b0 < chunk ? n - b0 : chunk;
  block_sum_fixed(v + b0, m > 0 ? m : 0, &g_sum_part[blockIdx.x], 0);
}
/* *dst += the fixed-order sum of v[0..n), or of g_sum_part[0..n) when v is NULL. */
__global__ void __launch_bounds__(256) k_sum_into(const double *__restrict__ v, long long n, double *dst) {
  block_sum_fixed(v ? v : g_sum_part, n, dst, 1);
}

void gg_sum_into(const double *v, int64_t n, double *dst) {
  if (n <= 0) return;
  if (n <= 16 * 1024) { /* one block: one launch */
    k_sum_into<<<1, 256>>>(v, (long long)n, dst);
  } else { /* SUM_PARTS blocks of >= 128 values, then their parts in order; the order depends on n only */
    const long long chunk = (n + SUM_PARTS - 1) / SUM_PARTS;
    const int nb = (int)((n + chunk - 1) / chunk);
    k_sum_part<<<nb, 256>>>(v, (long long)n, chunk);
    k_sum_into<<<1, 256>>>(NULL, nb, dst);
  }
  CK(cudaGetLastError());
}

/* ---------------------------------------------------------- host side */

struct gg_ctx {
  cublasHandle_t h;
  float *Xe, *Xs; size_t capX, capXs; /* expanded features (+ small parts) */
  float *L, *Ls; size_t capL, capLs;   /* likelihoods / posteriors (+ small parts) */
  float *lse; size_t capLse;     /* per-row log-sum-exp (estep_wg) */
  size_t ll_bytes;               /* estep_wg's log-likelihoods at most (from the device's memory: reproducible) */
  float *S; size_t capS;         /* one chunk's statistics [G x E] */
  double *tot; size_t capT;      /* per-row w lse */
  double *Xd, *Ld, *Sd; size_t capXd, capLd, capSd; /* the exact pdfs' path, in double */
  double *lr; size_t capLr;      /* estep_cand: per-row log-sum-exp of the candidates */
  float *Lx; size_t capLx;       /* estep_cand: the candidates' exact log-likelihoods (read only at candidates) */
  int sms;                       /* multiprocessors of the device */
};

struct gg_model {
  int D, P, homog, full0;
  int *G, *full;
  long long *aoff;      /* [P] first float of pdf p's rows */
  long long *goff;      /* [P + 1] first Gaussian of pdf p */
  long long *dGoff;
  long long Gt, asize;
  long long acap;         /* floats allocated per row array: asize + GG_ROW_TAIL rows of zeros */
  float *dA0, *dAc, *dAs; /* uncentred rows, centred (big), centred small part */
  float *dAt;             /* centred rows in the tensor-core kernels' order (cuda-tc.h) */
  int have_perm;          /* dAt is dAc's current copy */
  long long *dRowOff;
  unsigned char *dRowFull;
  short2 *dIJ;
  double *centre;         /* current centre of dAc (host [D]) */
  int have_centre, have_split;
  double *dC;             /* current centre on the device [D] */
  double *model_centre;   /* host [D] */
  double *dForm;          /* [Gt x (D + 1)] exact [norm, mu] in double (k_recentre's a0; the device M-step rewrites them) */
  double *dAd;            /* centred rows in double (the exact pdfs), for the current centre when have_d */
  int have_d;
  unsigned char *exact;   /* [P] host: 1 = the pdf is evaluated in double (GEMM forms in FP64) */
  double *eps;            /* [P] host: the pdf's centred fp32 error estimate (estep_cand's margin) */
  int any_exact;
};

static void grow(void **p, size_t *cap, size_t n) {
  if (n <= *cap && *p) return;
  if (*p) CK(cudaFree(*p));
  *p = NULL;
  CK(cudaMalloc(p, n));
  *cap = n;
}

gg_ctx *gg_ctx_new(void) {
  if (!gg_available()) return NULL;
  gg_ctx *g = (gg_ctx *)gh_calloc(1, sizeof *g);
  CKB(blas.create(&g->h));
  int dev = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, dev));
  size_t fr = 0, total = 0;
  CK(cudaMemGetInfo(&fr, &total));
  g->ll_bytes = total / 16 < ((size_t)4 << 30) ? total / 16 : ((size_t)4 << 30); /* 4 GB on an H100 or H200 */
  if (g->ll_bytes < ((size_t)64 << 20)) g->ll_bytes = (size_t)64 << 20;
  return g;
}

void gg_ctx_free(gg_ctx *g) {
  if (!g) return;
  blas.destroy(g->h);
  cudaFree(g->Xe); cudaFree(g->Xs); cudaFree(g->L); cudaFree(g->Ls); cudaFree(g->lse); cudaFree(g->S); cudaFree(g->tot);
  cudaFree(g->Xd); cudaFree(g->Ld); cudaFree(g->Sd); cudaFree(g->lr); cudaFree(g->Lx);
  free(g);
}

static int row_len(int D, int full) { return full ? 1 + D + D * (D + 1) / 2 : 1 + 2 * D; }
/* Stored row length: E rounded up to a multiple of 8 floats (zeros), so
 * that every GEMM operand's leading dimension is 32-byte aligned (cuBLAS's
 * tensor-core kernels need 16-byte aligned leading dimensions). */
static int row_pad(int D, int full) { return (row_len(D, full) + 7) & ~7; }

float *gg_model_rows(gg_model *m, const long long **dRowOff) {
  *dRowOff = m->dRowOff;
  return m->dA0;
}
void gg_model_rows_changed(gg_model *m) { m->have_centre = 0; m->have_split = 0; m->have_d = 0; }
double *gg_model_exact_form(gg_model *m) { return m->dForm; }
int gg_model_exact(const gg_model *m, int p) { return m->exact ? m->exact[p] : 0; }
const double *gg_model_centre(const gg_model *m) { return m->model_centre; }

/* Rows of zeros after the last pdf's rows: the GEMMs take M = G rounded up
 * to 8 (Gp) rows from a pdf's first row, so that every operand's leading
 * dimension and C's contiguous dimension are multiples of 8.  cuBLAS picks
 * Ampere "align1" kernels when G is not a multiple of 4: on the H200 the
 * E-step of 505 full Gaussians (D = 40) took 0.49 s for 8 M frames, 2.0x
 * the per-frame time at G = 500 (bench/RESULTS.md D23).  Rows
 * G..Gp-1 of a pdf are the next pdf's (or these zeros): k_post zeroes
 * their posteriors, and k_lse and k_acc_add never read them. */
#define GG_ROW_TAIL 8

gg_model *gg_model_new(const gh_gmm_set *s, const double *centre, const double *form, const double *e_cen) {
  gg_model *m = (gg_model *)gh_calloc(1, sizeof *m);
  const int D = s->dim, P = s->num_pdfs;
  m->D = D; m->P = P;
  m->G = (int *)gh_malloc(sizeof(int) * (P ? P : 1));
  m->full = (int *)gh_malloc(sizeof(int) * (P ? P : 1));
  m->aoff = (long long *)gh_malloc(sizeof(long long) * (P ? P : 1));
  m->goff = (long long *)gh_malloc(sizeof(long long) * (P + 1));
  m->homog = 1;
  m->full0 = P ? s->pdfs[0].type == GH_COV_FULL : 0;
  long long a = 0, gt = 0;
  for (int p = 0; p < P; ++p) {
    m->G[p] = s->pdfs[p].num_gauss;
    m->full[p] = s->pdfs[p].type == GH_COV_FULL;
    if (m->full[p] != m->full0) m->homog = 0;
    m->aoff[p] = a;
    m->goff[p] = gt;
    a += (long long)m->G[p] * row_pad(D, m->full[p]);
    gt += m->G[p];
  }
  m->goff[P] = gt;
  m->Gt = gt;
  m->asize = a;
  m->acap = a + (long long)GG_ROW_TAIL * row_pad(D, 1);
  float *h = (float *)gh_calloc(m->acap, sizeof(float)); /* zero padding and tail */
  long long *roff = (long long *)gh_malloc(sizeof(long long) * (gt ? gt : 1));
  unsigned char *rfull = (unsigned char *)gh_malloc(gt ? gt : 1);
  for (int p = 0; p < P; ++p) {
    const gh_gmm *g = &s->pdfs[p];
    const int E = row_len(D, m->full[p]), Ep = row_pad(D, m->full[p]), S = E - 1 - D;
    for (int k = 0; k < g->num_gauss; ++k) {
      float *r = h + m->aoff[p] + (long long)k * Ep;
      roff[m->goff[p] + k] = m->aoff[p] + (long long)k * Ep;
      rfull[m->goff[p] + k] = (unsigned char)m->full[p];
      r[0] = g->gconsts[k];
      memcpy(r + 1, g->means_invvars + (size_t)k * D, sizeof(float) * D);
      const float *iv = g->inv_vars + (size_t)k * S;
      if (m->full[p]) {
        for (int i = 0; i < D; ++i)
          for (int j = 0; j <= i; ++j) {
            long long q = (long long)i * (i + 1) / 2 + j;
            r[1 + D + q] = i == j ? -0.5f * iv[q] : -iv[q];
          }
      } else {
        for (int i = 0; i < D; ++i) r[1 + D + i] = -0.5f * iv[i];
      }
    }
  }
  m->dA0 = (decltype(m->dA0))gh_cuda_pool_alloc(sizeof(float) * m->acap);
  CK(cudaMemcpy(m->dA0, h, sizeof(float) * m->acap, cudaMemcpyHostToDevice));
  m->dAc = (decltype(m->dAc))gh_cuda_pool_alloc(sizeof(float) * m->acap);
  CK(cudaMemset(m->dAc, 0, sizeof(float) * m->acap));
  m->dRowOff = (decltype(m->dRowOff))gh_cuda_pool_alloc(sizeof(long long) * (gt ? gt : 1));
  CK(cudaMemcpy(m->dRowOff, roff, sizeof(long long) * gt, cudaMemcpyHostToDevice));
  m->dRowFull = (decltype(m->dRowFull))gh_cuda_pool_alloc(gt ? gt : 1);
  CK(cudaMemcpy(m->dRowFull, rfull, gt, cudaMemcpyHostToDevice));
  m->dGoff = (decltype(m->dGoff))gh_cuda_pool_alloc(sizeof(long long) * (P + 1));
  CK(cudaMemcpy(m->dGoff, m->goff, sizeof(long long) * (P + 1), cudaMemcpyHostToDevice));
  const int S = D * (D + 1) / 2;
  short2 *ij = (short2 *)gh_malloc(sizeof(short2) * S);
  for (int i = 0, q = 0; i < D; ++i)
    for (int j = 0; j <= i; ++j, ++q) { ij[q].x = (short)i; ij[q].y = (short)j; }
  m->dIJ = (decltype(m->dIJ))gh_cuda_pool_alloc(sizeof(short2) * S);
  CK(cudaMemcpy(m->dIJ, ij, sizeof(short2) * S, cudaMemcpyHostToDevice));
  free(ij);
  m->dC = (decltype(m->dC))gh_cuda_pool_alloc(sizeof(double) * D);
  m->centre = (double *)gh_calloc(D, sizeof(double));
  /* Model centre (gemm-forms.h): any point near the data will do, it only
   * keeps the fp32 terms small. */
  m->model_centre = (double *)gh_calloc(D, sizeof(double));
  memcpy(m->model_centre, centre, sizeof(double) * D);
  m->dForm = (decltype(m->dForm))gh_cuda_pool_alloc(sizeof(double) * (gt ? gt : 1) * (D + 1));
  CK(cudaMemcpy(m->dForm, form, sizeof(double) * gt * (D + 1), cudaMemcpyHostToDevice));
  m->exact = (unsigned char *)gh_calloc(P ? P : 1, 1);
  m->eps = (double *)gh_calloc(P ? P : 1, sizeof(double));
  for (int p = 0; p < P; ++p) {
    m->eps[p] = e_cen ? e_cen[p] : 0.0;
    m->exact[p] = !(m->eps[p] <= GH_GEMM_MAX_ROW_ERROR);
    m->any_exact |= m->exact[p];
  }
  free(h); free(roff); free(rfull);
  return m;
}

void gg_model_free(gg_model *m) {
  if (!m) return;
  /* (the caller, cuda_model_free, has synchronised the device) */
  void *pooled[] = {m->dA0, m->dAc, m->dRowOff, m->dRowFull, m->dGoff, m->dIJ, m->dC, m->dForm};
  for (size_t k = 0; k < sizeof pooled / sizeof pooled[0]; ++k) gh_cuda_pool_free(pooled[k]);
  cudaFree(m->dAs); cudaFree(m->dAt); cudaFree(m->dAd);
  free(m->exact); free(m->eps);
  free(m->G); free(m->full); free(m->aoff); free(m->goff); free(m->centre); free(m->model_centre);
  free(m);
}

int gg_model_homogeneous(const gg_model *m) { return m->homog; }
int gg_model_gauss(const gg_model *m, int p) { return m->G[p]; }
int64_t gg_model_total_gauss(const gg_model *m) { return m->Gt; }
int gg_model_full(const gg_model *m, int p) { return m->full[p]; }

int gg_resolve_precision(int prec, int64_t cols, int depth) {
  if (prec != GH_PREC_AUTO) return prec;
  return cols >= GG_SPLIT_MIN_COLS && depth >= GG_SPLIT_MIN_DEPTH ? GH_PREC_TF32X3 : GH_PREC_FP32;
}

int gg_use_tc(int full, int Ep, int maxG, int prec, int min_gauss) {
  if (full || Ep > GT_MAX_EP || prec == GH_PREC_FP32) return 0;
  static const char *const words[] = {"0", "1", NULL};
  const int e = gh_env_word("GH_CUDA_TC", -1, words); /* benchmarks and tests: 0 = never, 1 = always */
  if (e >= 0) return e;
  return maxG >= min_gauss;
}

int gg_diag_set_tc(int D, int maxG, int prec) { return gg_use_tc(0, row_pad(D, 0), maxG, prec, GG_TC_MIN_GAUSS); }

int gg_model_tc(const gg_model *m, int prec) {
  int maxG = 0;
  for (int p = 0; p < m->P; ++p) if (m->G[p] > maxG) maxG = m->G[p];
  return m->homog && m->P > 0 && gg_use_tc(m->full0, row_pad(m->D, m->full0), maxG, prec, GG_TC_MIN_GAUSS);
}

/* Centred rows for centre c (host [D]); split parts when split. */
static void set_centre(gg_model *m, const double *c, int split) {
  if (m->have_centre && !memcmp(c, m->centre, sizeof(double) * m->D) && split == m->have_split) return;
  if (memcmp(c, m->centre, sizeof(double) * m->D)) m->have_d = 0; /* the double rows were for another centre */
  memcpy(m->centre, c, sizeof(double) * m->D);
  CK(cudaMemcpy(m->dC, c, sizeof(double) * m->D, cudaMemcpyHostToDevice));
  if (split && !m->dAs) {
    CK(cudaMalloc((void **)&m->dAs, sizeof(float) * m->acap));
    CK(cudaMemset(m->dAs, 0, sizeof(float) * m->acap));
  }
  if (m->Gt)
    k_recentre<<<(unsigned)((m->Gt + 7) / 8), 256>>>(m->dA0, m->dForm, m->dRowOff, m->dRowFull, m->Gt, m->D, m->dC,
                                                      m->dAc, split ? m->dAs : NULL, NULL);
  CK(cudaGetLastError());
  m->have_centre = 1;
  m->have_split = split;
  m->have_perm = 0;
}

/* Centred rows in double (dAd) for centre c (host [D]): the exact pdfs'
 * path.  Shares the centre (m->centre, dC) with set_centre: a new centre
 * makes the float rows stale. */
static void set_centre_d(gg_model *m, const double *c) {
  if (memcmp(c, m->centre, sizeof(double) * m->D) || !m->have_centre) {
    memcpy(m->centre, c, sizeof(double) * m->D);
    CK(cudaMemcpy(m->dC, c, sizeof(double) * m->D, cudaMemcpyHostToDevice));
    m->have_centre = 0;
    m->have_d = 0;
  }
  if (m->have_d) return;
  if (!m->dAd) {
    CK(cudaMalloc((void **)&m->dAd, sizeof(double) * m->acap));
    CK(cudaMemset(m->dAd, 0, sizeof(double) * m->acap));
  }
  if (m->Gt)
    k_recentre<<<(unsigned)((m->Gt + 7) / 8), 256>>>(m->dA0, m->dForm, m->dRowOff, m->dRowFull, m->Gt, m->D, m->dC,
                                                      NULL, NULL, m->dAd);
  CK(cudaGetLastError());
  m->have_d = 1;
}

/* The centred rows in the tensor-core kernels' order (after set_centre). */
static const float *tc_rows(gg_model *m) {
  if (!m->dAt) CK(cudaMalloc((void **)&m->dAt, sizeof(float) * (m->asize ? m->asize : 1)));
  if (!m->have_perm) gt_perm8(m->dAc, m->asize, m->dAt);
  m->have_perm = 1;
  return m->dAt;
}

/* C [m x n col-major, ldc] = op(A) op(B) (+ beta C) at precision prec; As,
 * Bs: TF32 small parts (TF32X3 only). */
static void gemm(gg_ctx *g, cublasOperation_t ta, cublasOperation_t tb, int mm, int nn, int kk, const float *A,
                 const float *As, int lda, const float *B, const float *Bs, int ldb, float *C, int ldc, int prec) {
  const float one = 1.f, zero = 0.f;
  if (prec == GH_PREC_FP32) {
    CKB(blas.gemmex(g->h, ta, tb, mm, nn, kk, &one, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, &zero, C, CUDA_R_32F,
                    ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  } else if (prec == GH_PREC_TF32) {
    CKB(blas.gemmex(g->h, ta, tb, mm, nn, kk, &one, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, &zero, C, CUDA_R_32F,
                    ldc, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
  } else { /* TF32X3: small terms first */
    CKB(blas.gemmex(g->h, ta, tb, mm, nn, kk, &one, As, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, &zero, C, CUDA_R_32F,
                    ldc, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
    CKB(blas.gemmex(g->h, ta, tb, mm, nn, kk, &one, A, CUDA_R_32F, lda, Bs, CUDA_R_32F, ldb, &one, C, CUDA_R_32F,
                    ldc, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
    CKB(blas.gemmex(g->h, ta, tb, mm, nn, kk, &one, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, &one, C, CUDA_R_32F,
                    ldc, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
  }
}

/* Batched C_b = op(A_b) op(B_b), b < nb, strides sA, sB, sC (elements),
 * at precision prec (TF32X3: three batched products as in gemm()). */
static void gemm_batched(gg_ctx *g, cublasOperation_t ta, cublasOperation_t tb, int mm, int nn, int kk,
                         const float *A, const float *As, int lda, long long sA, const float *B, const float *Bs,
                         int ldb, long long sB, float *C, int ldc, long long sC, int nb, int prec) {
  const float one = 1.f, zero = 0.f;
  const cublasComputeType_t ct = prec == GH_PREC_FP32 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
  if (prec != GH_PREC_TF32X3) {
    CKB(blas.gemmsb(g->h, ta, tb, mm, nn, kk, &one, A, CUDA_R_32F, lda, sA, B, CUDA_R_32F, ldb, sB, &zero, C,
                    CUDA_R_32F, ldc, sC, nb, ct, CUBLAS_GEMM_DEFAULT));
  } else {
    CKB(blas.gemmsb(g->h, ta, tb, mm, nn, kk, &one, As, CUDA_R_32F, lda, sA, B, CUDA_R_32F, ldb, sB, &zero, C,
                    CUDA_R_32F, ldc, sC, nb, ct, CUBLAS_GEMM_DEFAULT));
    CKB(blas.gemmsb(g->h, ta, tb, mm, nn, kk, &one, A, CUDA_R_32F, lda, sA, Bs, CUDA_R_32F, ldb, sB, &one, C,
                    CUDA_R_32F, ldc, sC, nb, ct, CUBLAS_GEMM_DEFAULT));
    CKB(blas.gemmsb(g->h, ta, tb, mm, nn, kk, &one, A, CUDA_R_32F, lda, sA, B, CUDA_R_32F, ldb, sB, &one, C,
                    CUDA_R_32F, ldc, sC, nb, ct, CUBLAS_GEMM_DEFAULT));
  }
}

/* Double-precision C = op(A) op(B) (DGEMM through cublasGemmEx,
 * CUBLAS_COMPUTE_64F), and its strided-batched form: the exact pdfs' path. */
static void gemm_d(gg_ctx *g, cublasOperation_t ta, cublasOperation_t tb, int mm, int nn, int kk, const double *A,
                   int lda, const double *B, int ldb, double *C, int ldc) {
  const double one = 1.0, zero = 0.0;
  CKB(blas.gemmex(g->h, ta, tb, mm, nn, kk, &one, A, CUDA_R_64F, lda, B, CUDA_R_64F, ldb, &zero, C, CUDA_R_64F, ldc,
                  CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT));
}
static void gemm_batched_d(gg_ctx *g, cublasOperation_t ta, cublasOperation_t tb, int mm, int nn, int kk,
                           const double *A, int lda, long long sA, const double *B, int ldb, long long sB, double *C,
                           int ldc, long long sC, int nb) {
  const double one = 1.0, zero = 0.0;
  CKB(blas.gemmsb(g->h, ta, tb, mm, nn, kk, &one, A, CUDA_R_64F, lda, sA, B, CUDA_R_64F, ldb, sB, &zero, C,
                  CUDA_R_64F, ldc, sC, nb, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT));
}

static void expand_d(gg_model *m, const float *dX, int Dp, const int32_t *frames, long long row0, int n, int full,
                     double *Xd) {
  const int E = row_len(m->D, full), Ep = row_pad(m->D, full);
  const unsigned nb = (unsigned)((n + XR - 1) / XR);
  const size_t sh = sizeof(double) * XR * m->D;
  if (full) k_expand<true, double><<<nb, 256, sh>>>(dX, Dp, m->D, frames, row0, n, m->dC, m->dIJ, E, Ep, Xd, NULL, 0);
  else k_expand<false, double><<<nb, 256, sh>>>(dX, Dp, m->D, frames, row0, n, m->dC, m->dIJ, E, Ep, Xd, NULL, 0);
  CK(cudaGetLastError());
}

static void expand(gg_model *m, const float *dX, int Dp, const int32_t *frames, long long row0, int n, int full,
                   float *Xe, float *Xs, int perm = 0) {
  const int E = row_len(m->D, full), Ep = row_pad(m->D, full);
  const unsigned nb = (unsigned)((n + XR - 1) / XR);
  const size_t sh = sizeof(float) * XR * m->D;
  if (full) k_expand<true, float><<<nb, 256, sh>>>(dX, Dp, m->D, frames, row0, n, m->dC, m->dIJ, E, Ep, Xe, Xs, perm);
  else k_expand<false, float><<<nb, 256, sh>>>(dX, Dp, m->D, frames, row0, n, m->dC, m->dIJ, E, Ep, Xe, Xs, perm);
  CK(cudaGetLastError());
}

/* ------------------------------------------- expanded-feature cache */

/* What an entry holds, from how it was expanded (k_expand's full, split
 * into TF32 parts, permuted for the mma.sync kernels): paths that expand
 * alike share it (the cuBLAS forms and the warpgroup kernels, unsplit). */
static int xkind(int full, int split, int perm) { return 1 + full + 2 * split + 4 * perm; }
static int xkind_d(int full) { return 9 + full; } /* double features (estep_fp64) */
typedef struct {
  int kind, Ep;
  long long n;
  float *buf[4];
  size_t bytes;
} gg_xent;
struct gg_xcache {
  int npdf, init;
  size_t budget, used;
  gg_xent *e;
};

gg_xcache *gg_xcache_new(int npdf) {
  gg_xcache *c = (gg_xcache *)gh_calloc(1, sizeof *c);
  c->npdf = npdf > 0 ? npdf : 0;
  c->e = (gg_xent *)gh_calloc(c->npdf ? c->npdf : 1, sizeof(gg_xent));
  return c;
}

static void xc_drop(gg_xcache *c, gg_xent *e) {
  for (int i = 0; i < 4; ++i) { if (e->buf[i]) cudaFree(e->buf[i]); e->buf[i] = NULL; }
  c->used -= e->bytes;
  memset(e, 0, sizeof *e);
}

void gg_xcache_free(gg_xcache *c) {
  if (!c) return;
  for (int p = 0; p < c->npdf; ++p) xc_drop(c, &c->e[p]);
  free(c->e);
  free(c);
}

/* nb device buffers of bytes[i] for the expanded features (`kind`: xkind,
 * row length Ep) of pdf p's n pairs: 1 when the cache holds them already (out
 * filled), 0 when taken now (out filled; the caller expands into them), -1
 * when not cached (no cache, or no room within a quarter of the device
 * memory free at the first use; GH_CUDA_XCACHE=0): the caller uses its
 * scratch. */
static int xc_take(gg_xcache *c, int p, int kind, int Ep, long long n, int nb, const size_t *bytes, float **out) {
  if (!c || p < 0 || p >= c->npdf) return -1;
  static const char *const words[] = {"0", "1", NULL};
  if (gh_env_word("GH_CUDA_XCACHE", 1, words) == 0) return -1; /* benchmarks: 0 = expand at every E-step */
  gg_xent *e = &c->e[p];
  if (e->kind == kind && e->Ep == Ep && e->n == n) {
    for (int i = 0; i < nb; ++i) out[i] = e->buf[i];
    return 1;
  }
  xc_drop(c, e);
  if (!c->init) {
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) { cudaGetLastError(); fr = 0; }
    c->budget = fr / 4;
    c->init = 1;
  }
  size_t want = 0;
  for (int i = 0; i < nb; ++i) want += bytes[i];
  static int told; /* once per process: the E-steps that follow expand again every time */
  if (c->used + want > c->budget) {
    if (!told) {
      told = 1;
      gh_log("CUDA: the expanded-feature cache of a data block is full (%.3g of %.3g GB; %.3g GB more asked): "
             "such blocks are expanded again at every E-step", c->used / 1e9, c->budget / 1e9, want / 1e9);
    }
    return -1;
  }
  for (int i = 0; i < nb; ++i)
    if (cudaMalloc((void **)&e->buf[i], bytes[i]) != cudaSuccess) {
      cudaGetLastError();
      xc_drop(c, e);
      if (!told) {
        told = 1;
        gh_log("CUDA: no device memory for the expanded-feature cache (%.3g GB asked): such blocks are expanded "
               "again at every E-step", want / 1e9);
      }
      return -1;
    }
  e->kind = kind; e->Ep = Ep; e->n = n; e->bytes = want;
  c->used += want;
  for (int i = 0; i < nb; ++i) out[i] = e->buf[i];
  return 0;
}

#define GG_MIN_SLICES 8

/* Rows per chunk so that the chunk's floats (per row: `per_row`, times 2
 * when split) stay under 2^30 (4 GB), between 32 and cap. */
static long long chunk_rows(long long per_row, int split, long long cap) {
  long long r = (1LL << 30) / (per_row * (split ? 2 : 1));
  if (r > cap) r = cap;
  if (r < 32) r = 32;
  return r;
}

/* gg_loglikes through the tensor-core kernels (cuda-tc.h): expanded
 * features of up to 65536 frames per chunk, then k_tc_lse per (128 frames,
 * pdf) -- the [frames x Gaussians] matrix is never stored. */
static void loglikes_tc(gg_ctx *g, gg_model *m, const float *dX, int Dp, int64_t n, float *dOut, int prec) {
  const int E = row_pad(m->D, 0), split = prec != GH_PREC_TF32;
  set_centre(m, m->model_centre, 0);
  const float *A = tc_rows(m);
  const long long nc = 65536, rows = n < nc ? n : nc;
  grow((void **)&g->Xe, &g->capX, sizeof(float) * rows * E);
  for (long long r0 = 0; r0 < n; r0 += nc) {
    const int nr = (int)(n - r0 < nc ? n - r0 : nc);
    expand(m, dX, Dp, NULL, r0, nr, 0, g->Xe, NULL, 1);
    for (int p0 = 0; p0 < m->P; p0 += 65535) {
      const int np = m->P - p0 < 65535 ? m->P - p0 : 65535;
      gt_lse(g->Xe, E, nr, A, m->dGoff + p0, np, 0, dOut + r0 * m->P + p0, m->P, NULL, NULL, split);
    }
  }
}

/* gg_loglikes through the warpgroup kernels (cuda-wg.h): expanded
 * features of up to 65536 frames per chunk, then k_wg_lse per (128 frames,
 * pdf). */
static void loglikes_wg(gg_ctx *g, gg_model *m, const float *dX, int Dp, int64_t n, float *dOut) {
  const int E = row_pad(m->D, 0);
  set_centre(m, m->model_centre, 1);
  const long long nc = 65536, rows = n < nc ? n : nc;
  grow((void **)&g->Xe, &g->capX, sizeof(float) * rows * E);
  for (long long r0 = 0; r0 < n; r0 += nc) {
    const int nr = (int)(n - r0 < nc ? n - r0 : nc);
    expand(m, dX, Dp, NULL, r0, nr, 0, g->Xe, NULL);
    for (int p0 = 0; p0 < m->P; p0 += 65535) {
      const int np = m->P - p0 < 65535 ? m->P - p0 : 65535;
      gw_lse(g->Xe, E, nr, m->dAc, m->dAs, m->dGoff + p0, np, 0, dOut + r0 * m->P + p0, m->P, NULL, NULL, NULL, 0);
    }
  }
}

/* gg_loglikes in double (a set with exact pdfs at GH_PREC_AUTO: the fp32
 * forms' estimated error is above the numerical contract's budget,
 * gemm-forms.h GH_GEMM_MAX_ROW_ERROR): double rows centred at the model's
 * centre, double expanded features, DGEMM, log-sum-exp in double.  Every
 * pdf of the set (one GEMM). */
static void loglikes_fp64(gg_ctx *g, gg_model *m, const float *dX, int Dp, int64_t n, float *dOut) {
  const int full = m->full0, E = row_pad(m->D, full);
  set_centre_d(m, m->model_centre);
  const long long nc = chunk_rows(E + m->Gt, 1, 65536);
  const long long rows = n < nc ? n : nc;
  const long long ldL = (m->Gt + 7) & ~7LL;
  grow((void **)&g->Xd, &g->capXd, sizeof(double) * rows * E);
  grow((void **)&g->Ld, &g->capLd, sizeof(double) * rows * ldL);
  for (long long r0 = 0; r0 < n; r0 += nc) {
    const int nr = (int)(n - r0 < nc ? n - r0 : nc);
    expand_d(m, dX, Dp, NULL, r0, nr, full, g->Xd);
    gemm_d(g, CUBLAS_OP_T, CUBLAS_OP_N, (int)ldL, nr, E, m->dAd, E, g->Xd, E, g->Ld, (int)ldL);
    const long long items = (long long)nr * m->P;
    k_lse_warp<double><<<(unsigned)((items + 7) / 8), 256>>>(g->Ld, ldL, m->dGoff, m->P, nr, dOut + r0 * m->P);
    CK(cudaGetLastError());
  }
}

void gg_loglikes(gg_ctx *g, gg_model *m, const float *dX, int Dp, int64_t n, float *dOut, int prec) {
  if (m->any_exact && prec == GH_PREC_AUTO) {
    loglikes_fp64(g, m, dX, Dp, n, dOut);
    return;
  }
  if (gg_model_tc(m, prec)) {
    /* the warpgroup kernels only when forced (GH_CUDA_WG=1: tests): k_tc_lse
     * scores faster (0.53 against 0.62 ms at 1 x 2048; bench/RESULTS.md D9) */
    if (prec != GH_PREC_TF32 && gw_mode() == 1 && row_pad(m->D, 0) <= GW_MAX_EP) loglikes_wg(g, m, dX, Dp, n, dOut);
    else loglikes_tc(g, m, dX, Dp, n, dOut, prec);
    return;
  }
  const int full = m->full0, D = m->D, E = row_pad(D, full);
  prec = gg_resolve_precision(prec, m->Gt, E);
  const int split = prec == GH_PREC_TF32X3;
  set_centre(m, m->model_centre, split);
  const long long nc = chunk_rows(E + m->Gt, split, 65536);
  const long long rows = n < nc ? n : nc;
  grow((void **)&g->Xe, &g->capX, sizeof(float) * rows * E);
  if (split) grow((void **)&g->Xs, &g->capXs, sizeof(float) * rows * E);
  const long long ldL = (m->Gt + 7) & ~7LL; /* aligned rows of L */
  grow((void **)&g->L, &g->capL, sizeof(float) * rows * ldL);
  int maxG = 0;
  for (int p = 0; p < m->P; ++p) if (m->G[p] > maxG) maxG = m->G[p];
  for (long long r0 = 0; r0 < n; r0 += nc) {
    const int nr = (int)(n - r0 < nc ? n - r0 : nc);
    expand(m, dX, Dp, NULL, r0, nr, full, g->Xe, split ? g->Xs : NULL);
    /* L [nr x Gt] row-major = (A [Gt x E] row-major)^T-ish: col-major Gt x nr = A_cm^T Xe_cm */
    gemm(g, CUBLAS_OP_T, CUBLAS_OP_N, (int)ldL, nr, E, m->dAc, m->dAs, E, g->Xe, g->Xs, E, g->L, (int)ldL, prec);
    const long long items = (long long)nr * m->P;
    if (maxG > 32)
      k_lse_warp<float><<<(unsigned)((items + 7) / 8), 256>>>(g->L, ldL, m->dGoff, m->P, nr, dOut + r0 * m->P);
    else
      k_lse_thread<<<(unsigned)((items + 255) / 256), 256>>>(g->L, ldL, m->dGoff, m->P, nr, dOut + r0 * m->P);
    CK(cudaGetLastError());
  }
}

/* gg_estep_pdf through the tensor-core kernels (cuda-tc.h) for a diagonal
 * pdf: per chunk of up to 2^20 pairs, the expanded features, k_tc_lse (the
 * per-row log-sum-exp and w lse), k_tc_stats (R = w exp(L - lse)
 * recomputed per tile, S = R^T Xe in fixed slices of rows) and k_acc_add
 * summing the slices in double. */
static void estep_tc(gg_ctx *g, gg_model *m, int p, const float *dX, int Dp, const int32_t *dFrames,
                     const float *dW, int64_t n, const double *centre, double *dAcc, double *dTotal, int prec,
                     gg_xcache *xc) {
  const int G = m->G[p], D = m->D, E = row_pad(D, 0), E0 = row_len(D, 0), split = prec != GH_PREC_TF32;
  set_centre(m, centre, 0);
  const long long nc = 1LL << 20, rows = n < nc ? n : nc;
  const size_t bytes = sizeof(float) * rows * E;
  float *Xe = NULL;
  const int have = n <= nc ? xc_take(xc, p, xkind(0, 0, 1), E, n, 1, &bytes, &Xe) : -1;
  if (have < 0) { grow((void **)&g->Xe, &g->capX, bytes); Xe = g->Xe; }
  grow((void **)&g->L, &g->capL, sizeof(float) * rows); /* the rows' log-sum-exp */
  grow((void **)&g->tot, &g->capT, sizeof(double) * rows);
  const float *A = tc_rows(m) + m->aoff[p];
  for (long long k0 = 0; k0 < n; k0 += nc) {
    const int nr = (int)(n - k0 < nc ? n - k0 : nc);
    if (have != 1) expand(m, dX, Dp, dFrames + k0, 0, nr, 0, Xe, NULL, 1);
    gt_lse(Xe, E, nr, A, NULL, 1, G, g->L, 1, dW + k0, g->tot, split);
    gg_sum_into(g->tot, nr, dTotal);
    int nsl = 0;
    const int rs = gt_slice_rows(nr, G, g->sms, &nsl);
    grow((void **)&g->S, &g->capS, sizeof(float) * (size_t)G * E * nsl);
    gt_post_stats(Xe, E, nr, A, G, g->L, dW + k0, rs, nsl, g->S, split);
    k_acc_add<<<G, 256, sizeof(double) * (1 + D)>>>(g->S, nsl, (long long)G * E, E, E0, D, 0, m->dIJ, m->dC, dAcc);
    CK(cudaGetLastError());
  }
}

/* The same through the warpgroup kernels (cuda-wg.h; 3xTF32): k_wg_lse
 * (which also writes the [rows x G] log-likelihoods), k_wg_stats (reading
 * them back), k_acc_add, on the expanded features (kept in the data's cache
 * across E-steps when there is room).  The log-likelihoods of at most
 * g->ll_bytes at a time (GH_CUDA_WG_LL_BYTES: tests): a chunk's rows in
 * equal parts of fewer bytes. */
static void estep_wg(gg_ctx *g, gg_model *m, int p, const float *dX, int Dp, const int32_t *dFrames,
                     const float *dW, int64_t n, const double *centre, double *dAcc, double *dTotal,
                     gg_xcache *xc) {
  const int G = m->G[p], D = m->D, E = row_pad(D, 0), E0 = row_len(D, 0), Gp = (G + 7) & ~7;
  set_centre(m, centre, 1);
  const long long nc = 1LL << 20, rows = n < nc ? n : nc;
  const size_t bytes = sizeof(float) * rows * E;
  float *Xe = NULL;
  const int have = n <= nc ? xc_take(xc, p, xkind(0, 0, 0), E, n, 1, &bytes, &Xe) : -1;
  if (have < 0) { grow((void **)&g->Xe, &g->capX, bytes); Xe = g->Xe; }
  /* GH_CUDA_WG_LL_BYTES: tests, several parts on small problems */
  const long long ll_bytes = gh_env_int("GH_CUDA_WG_LL_BYTES", (long long)g->ll_bytes, 1, 1LL << 40);
  const long long nparts = ((long long)sizeof(float) * rows * Gp + ll_bytes - 1) / ll_bytes;
  const long long prow = (rows + nparts - 1) / nparts; /* rows per part */
  grow((void **)&g->L, &g->capL, sizeof(float) * prow * Gp); /* the part's log-likelihoods */
  grow((void **)&g->lse, &g->capLse, sizeof(float) * prow);  /* the rows' log-sum-exp */
  grow((void **)&g->tot, &g->capT, sizeof(double) * prow);
  const float *AB = m->dAc + m->aoff[p], *AS = m->dAs + m->aoff[p];
  for (long long k0 = 0; k0 < n; k0 += nc) {
    const int nr = (int)(n - k0 < nc ? n - k0 : nc);
    if (have != 1) expand(m, dX, Dp, dFrames + k0, 0, nr, 0, Xe, NULL);
    for (long long s0 = 0; s0 < nr; s0 += prow) {
      const int ns = (int)(nr - s0 < prow ? nr - s0 : prow);
      const float *Xp = Xe + s0 * E, *Wp = dW + k0 + s0;
      gw_lse(Xp, E, ns, AB, AS, NULL, 1, G, g->lse, 1, Wp, g->tot, g->L, Gp);
      gg_sum_into(g->tot, ns, dTotal);
      int nsl = 0;
      const int rs = gw_slice_rows(ns, G, E, g->sms, &nsl);
      grow((void **)&g->S, &g->capS, sizeof(float) * (size_t)G * E * nsl);
      gw_post_stats(Xp, E, ns, g->L, Gp, G, g->lse, Wp, rs, nsl, g->S);
      k_acc_add<<<G, 256, sizeof(double) * (1 + D)>>>(g->S, nsl, (long long)G * E, E, E0, D, 0, m->dIJ, m->dC, dAcc);
      CK(cudaGetLastError());
    }
  }
}

/* The statistics split-K's slice count: enough 128 x 128 output tiles to
 * fill the GPU twice, at least GG_MIN_SLICES (or $GH_CUDA_ESTEP_SLICES).
 * At least GG_MIN_SLICES: cuBLAS picked slow kernels for 2-5 slices of the
 * UBM's statistics GEMM (1 x 1024 full D=40 on an H200: E-step 14.3 /
 * 14.4 / 16.1 ms with 2 / 3 / 5 slices, 12.3-12.4 with 8, 12 or 20; 500k
 * x 128 full D=36: 10.0 / 7.3 / 7.6 / 5.1 / 4.4 / 4.2 ms with 2 / 3 / 5
 * / 8 / 12 / 20, 4.2 with the rule's 44; bench/RESULTS.md D2). */
static long long splitk_slices(const gg_ctx *g, int G, int E) {
  const long long tiles = (long long)((E + 127) / 128) * ((G + 127) / 128);
  long long nsl_max = (2 * g->sms + tiles - 1) / tiles;
  if (nsl_max < GG_MIN_SLICES) nsl_max = GG_MIN_SLICES;
  /* benchmarks (bench/experiments/splitk-sweep.sh) */
  return gh_env_int("GH_CUDA_ESTEP_SLICES", nsl_max, 1, 1 << 20);
}

/* gg_estep_pdf in double (an exact pdf at GH_PREC_AUTO, as the cpu
 * backend's DGEMM path): double rows centred at `centre`, double expanded
 * features (kept in the data's cache when there is room), L = Xe A^T by DGEMM, posteriors in double
 * (k_post<0, double>), S = R^T Xe as the same deterministic split-K of DGEMMs,
 * k_acc_add summing the slices. */
static void estep_fp64(gg_ctx *g, gg_model *m, int p, const float *dX, int Dp, const int32_t *dFrames,
                       const float *dW, int64_t n, const double *centre, double *dAcc, double *dTotal,
                       gg_xcache *xc) {
  const int G = m->G[p], full = m->full[p], D = m->D, E = row_pad(D, full), E0 = row_len(D, full);
  const int Gp = (G + 7) & ~7;
  set_centre_d(m, centre);
  const long long nc = chunk_rows(E + Gp, 1, 1LL << 20); /* doubles: two floats a value */
  const long long rows = n < nc ? n : nc;
  const long long nsl_max = splitk_slices(g, G, E);
  const size_t xbytes = sizeof(double) * rows * E;
  float *xbuf = NULL;
  const int have = n <= nc ? xc_take(xc, p, xkind_d(full), E, n, 1, &xbytes, &xbuf) : -1;
  if (have < 0) { grow((void **)&g->Xd, &g->capXd, xbytes); xbuf = (float *)g->Xd; }
  double *const Xd = (double *)xbuf;
  grow((void **)&g->Ld, &g->capLd, sizeof(double) * rows * Gp);
  grow((void **)&g->Sd, &g->capSd, sizeof(double) * (size_t)Gp * E * (nsl_max + 1));
  grow((void **)&g->tot, &g->capT, sizeof(double) * rows);
  const double *A = m->dAd + m->aoff[p];
  for (long long k0 = 0; k0 < n; k0 += nc) {
    const int nr = (int)(n - k0 < nc ? n - k0 : nc);
    if (have != 1) expand_d(m, dX, Dp, dFrames + k0, 0, nr, full, Xd);
    gemm_d(g, CUBLAS_OP_T, CUBLAS_OP_N, Gp, nr, E, A, E, Xd, E, g->Ld, Gp);
    k_post<0, double><<<(unsigned)((nr + 7) / 8), 256>>>(g->Ld, NULL, G, Gp, nr, dW + k0, g->tot);
    CK(cudaGetLastError());
    gg_sum_into(g->tot, nr, dTotal);
    long long nsl = nr / 256 < nsl_max ? nr / 256 : nsl_max;
    if (nsl < 1) nsl = 1;
    const int ks = (int)(nr / nsl), rem = (int)(nr - nsl * ks);
    const long long sS = (long long)Gp * E;
    gemm_batched_d(g, CUBLAS_OP_N, CUBLAS_OP_T, E, Gp, ks, Xd, E, (long long)ks * E, g->Ld, Gp,
                   (long long)ks * Gp, g->Sd, E, sS, (int)nsl);
    if (rem)
      gemm_d(g, CUBLAS_OP_N, CUBLAS_OP_T, E, Gp, rem, Xd + nsl * ks * E, E, g->Ld + nsl * ks * Gp, Gp,
             g->Sd + nsl * sS, E);
    const int nslices = (int)nsl + (rem ? 1 : 0);
    k_acc_add<<<G, 256, sizeof(double) * (1 + D)>>>(g->Sd, nslices, sS, E, E0, D, full, m->dIJ, m->dC, dAcc);
    CK(cudaGetLastError());
  }
}

/* Dynamic shared memory of k_cand_exact / k_cand_stats for dimension D
 * (bytes), the kernel's limit raised to it once (beside its static list
 * the default allows 48 KB in all). */
static size_t cand_shm(int D, int stats) {
  const size_t S = (size_t)D * (D + 1) / 2;
  const size_t b = stats ? sizeof(double) * (1 + D + S + (size_t)CAND_NB * D + CAND_NB)
                         : sizeof(double) * (size_t)(CAND_SB / 32) * D;
  static size_t set[2];
  if (b > set[stats]) {
    if (stats) CK(cudaFuncSetAttribute(k_cand_stats, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)b));
    else CK(cudaFuncSetAttribute(k_cand_exact, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)b));
    set[stats] = b;
  }
  return b;
}

/* gg_estep_pdf for a full-covariance pdf by candidates (see k_cand_exact):
 * per chunk of up to 2^20 pairs, the expanded features (3xTF32 split, kept
 * in the data's cache when there is room), Lt = A Xe^T [G x nr] (row per
 * Gaussian, frames contiguous), k_cand_max, k_cand_exact, k_cand_lse,
 * k_cand_stats and k_acc_add.  Deterministic: every sum in a fixed order. */
static void estep_cand(gg_ctx *g, gg_model *m, int p, const float *dX, int Dp, const int32_t *dFrames,
                       const float *dW, int64_t n, const double *centre, double *dAcc, double *dTotal,
                       gg_xcache *xc) {
  const int G = m->G[p], D = m->D, E = row_pad(D, 1), E0 = row_len(D, 1);
  set_centre(m, centre, 1);
  const long long nc = chunk_rows(E + G, 1, 1LL << 20);
  const long long rows = n < nc ? n : nc, ldmax = (rows + 7) & ~7LL;
  const size_t xbytes[2] = {sizeof(float) * rows * E, sizeof(float) * rows * E};
  float *X[2] = {NULL, NULL};
  const int have = n <= nc ? xc_take(xc, p, xkind(1, 1, 0), E, n, 2, xbytes, X) : -1;
  if (have < 0) {
    grow((void **)&g->Xe, &g->capX, xbytes[0]);
    grow((void **)&g->Xs, &g->capXs, xbytes[1]);
    X[0] = g->Xe; X[1] = g->Xs;
  }
  grow((void **)&g->L, &g->capL, sizeof(float) * ldmax * G);
  grow((void **)&g->Lx, &g->capLx, sizeof(float) * ldmax * G);
  grow((void **)&g->lse, &g->capLse, sizeof(float) * rows);
  float *const mx = g->lse; /* the lse scratch holds each row's largest approximate log-likelihood here */
  grow((void **)&g->lr, &g->capLr, sizeof(double) * rows);
  grow((void **)&g->tot, &g->capT, sizeof(double) * rows);
  const long long nslmax = (rows + CAND_FR - 1) / CAND_FR;
  grow((void **)&g->Sd, &g->capSd, sizeof(double) * (size_t)G * E * nslmax);
  const size_t shx = cand_shm(D, 0), shs = cand_shm(D, 1);
  const float delta = (float)(GG_CAND_MARGIN + 8.0 * m->eps[p]);
  const float *A = m->dAc + m->aoff[p], *As = m->dAs + m->aoff[p];
  const float *rows0 = m->dA0 + m->aoff[p];
  const double *form = m->dForm + m->goff[p] * (D + 1);
  for (long long k0 = 0; k0 < n; k0 += nc) {
    const int nr = (int)(n - k0 < nc ? n - k0 : nc);
    const long long ld = (nr + 7) & ~7LL;
    if (have != 1) expand(m, dX, Dp, dFrames + k0, 0, nr, 1, X[0], X[1]);
    /* Lt col-major [nr x G], ld: element (t, g) at g ld + t */
    gemm(g, CUBLAS_OP_T, CUBLAS_OP_N, nr, G, E, X[0], X[1], E, A, As, E, g->L, (int)ld, GH_PREC_TF32X3);
    const unsigned nbt = (unsigned)((nr + 255) / 256), nsl = (unsigned)((nr + CAND_FR - 1) / CAND_FR);
    k_cand_max<<<nbt, 256>>>(g->L, ld, G, nr, mx);
    k_cand_exact<<<dim3(G, nsl), CAND_SB, shx>>>(g->L, g->Lx, ld, nr, mx, delta, dX, Dp, dFrames + k0, rows0, E,
                                                 form, D);
    k_cand_lse<<<nbt, 256>>>(g->L, g->Lx, ld, G, nr, mx, delta, dW + k0, g->lr, g->tot);
    CK(cudaGetLastError());
    gg_sum_into(g->tot, nr, dTotal);
    k_cand_stats<<<dim3(G, nsl), CAND_SB, shs>>>(g->L, g->Lx, ld, nr, mx, delta, g->lr, dW + k0, dX, Dp,
                                                 dFrames + k0, m->dC, m->dIJ, D, E0, E, g->Sd);
    k_acc_add<<<G, 256, sizeof(double) * (1 + D)>>>(g->Sd, (int)nsl, (long long)G * E, E, E0, D, 1, m->dIJ, m->dC,
                                                    dAcc);
    CK(cudaGetLastError());
  }
}

/* The candidate E-step's choice (gg_estep_pdf at GH_PREC_AUTO): a
 * full-covariance pdf of at least GG_CAND_MIN_GAUSS Gaussians (fewer: the
 * dense forms cost little), dimension <= GG_CAND_MAX_D (shared memory),
 * centred fp32 error estimate <= GG_CAND_MAX_EPS nats (above: the DGEMM
 * path).  GH_CUDA_CAND=0|1 forces it off / on (benchmarks, tests). */
#define GG_CAND_MIN_GAUSS 64
#define GG_CAND_MAX_D 96
#define GG_CAND_MAX_EPS 2.0
static int use_cand(const gg_model *m, int p) {
  if (!m->full[p] || m->D > GG_CAND_MAX_D || !(m->eps[p] <= GG_CAND_MAX_EPS)) return 0;
  static const char *const words[] = {"0", "1", NULL};
  const int e = gh_env_word("GH_CUDA_CAND", -1, words);
  if (e >= 0) return e;
  return m->G[p] >= GG_CAND_MIN_GAUSS;
}

int gg_estep_path(const gg_model *m, int p, int prec) {
  if (prec == GH_PREC_AUTO && use_cand(m, p)) return GH_PATH_CAND;
  if ((m->exact[p] && prec == GH_PREC_AUTO) || prec == GG_PREC_FP64) return GH_PATH_DOUBLE;
  return GH_PATH_FP32;
}

void gg_estep_pdf(gg_ctx *g, gg_model *m, int p, const float *dX, int Dp, const int32_t *dFrames, const float *dW,
                  int64_t n, const double *centre, double *dAcc, double *dTotal, int prec, gg_xcache *xc) {
  const int G = m->G[p], full = m->full[p], D = m->D, E = row_pad(D, full), E0 = row_len(D, full);
  const int Gp = (G + 7) & ~7; /* aligned rows of L / R */
  if (G == 0 || n == 0) return;
  if (prec == GH_PREC_AUTO && use_cand(m, p)) {
    estep_cand(g, m, p, dX, Dp, dFrames, dW, n, centre, dAcc, dTotal, xc);
    return;
  }
  if ((m->exact[p] && prec == GH_PREC_AUTO) || prec == GG_PREC_FP64) {
    estep_fp64(g, m, p, dX, Dp, dFrames, dW, n, centre, dAcc, dTotal, xc);
    return;
  }
  if (gg_use_tc(full, E, G, prec, GG_TC_MIN_ESTEP_GAUSS)) {
    if (prec != GH_PREC_TF32 && gw_mode() && E <= GW_MAX_EP)
      estep_wg(g, m, p, dX, Dp, dFrames, dW, n, centre, dAcc, dTotal, xc);
    else
      estep_tc(g, m, p, dX, Dp, dFrames, dW, n, centre, dAcc, dTotal, prec, xc);
    return;
  }
  prec = gg_resolve_precision(prec, G, E);
  const int split = prec == GH_PREC_TF32X3;
  set_centre(m, centre, split);
  const long long nc = chunk_rows(E + Gp, split, 1LL << 20);
  const long long rows = n < nc ? n : nc;
  /* Statistics S = R^T Xe as a deterministic split-K: the chunk's rows in
   * nsl slices of ks rows (one strided-batched GEMM; the remainder rows as
   * one more slice), each slice's [G x E] partial sum in float, summed over
   * the slices in double in k_acc_add.  nsl: enough 128 x 128 output tiles
   * to fill the GPU twice, slices of at least 256 rows. */
  const long long nsl_max = splitk_slices(g, G, E);
  const size_t xbytes[2] = {sizeof(float) * rows * E, sizeof(float) * rows * E};
  float *X[2] = {NULL, NULL};
  const int have = n <= nc ? xc_take(xc, p, xkind(full, split, 0), E, n, split ? 2 : 1, xbytes, X) : -1;
  if (have < 0) {
    grow((void **)&g->Xe, &g->capX, xbytes[0]);
    if (split) grow((void **)&g->Xs, &g->capXs, xbytes[1]);
    X[0] = g->Xe; X[1] = split ? g->Xs : NULL;
  }
  float *const Xe = X[0], *const Xs = X[1];
  grow((void **)&g->L, &g->capL, sizeof(float) * rows * Gp);
  if (split) grow((void **)&g->Ls, &g->capLs, sizeof(float) * rows * Gp);
  grow((void **)&g->S, &g->capS, sizeof(float) * (size_t)Gp * E * (nsl_max + 1));
  grow((void **)&g->tot, &g->capT, sizeof(double) * rows);
  const float *A = m->dAc + m->aoff[p], *As = split ? m->dAs + m->aoff[p] : NULL;
  for (long long k0 = 0; k0 < n; k0 += nc) {
    const int nr = (int)(n - k0 < nc ? n - k0 : nc);
    if (have != 1) expand(m, dX, Dp, dFrames + k0, 0, nr, full, Xe, Xs);
    gemm(g, CUBLAS_OP_T, CUBLAS_OP_N, Gp, nr, E, A, As, E, Xe, Xs, E, g->L, Gp, prec);
    post(g->L, split ? g->Ls : NULL, G, Gp, nr, dW + k0, g->tot);
    gg_sum_into(g->tot, nr, dTotal);
    long long nsl = nr / 256 < nsl_max ? nr / 256 : nsl_max;
    if (nsl < 1) nsl = 1;
    const int ks = (int)(nr / nsl), rem = (int)(nr - nsl * ks);
    const long long sS = (long long)Gp * E;
    /* slice b: S_b [Gp x E] row-major = col-major E x Gp = Xe_b_cm (E x ks) R_b_cm^T (ks x Gp) */
    gemm_batched(g, CUBLAS_OP_N, CUBLAS_OP_T, E, Gp, ks, Xe, Xs, E, (long long)ks * E, g->L, g->Ls, Gp,
                 (long long)ks * Gp, g->S, E, sS, (int)nsl, prec);
    if (rem)
      gemm(g, CUBLAS_OP_N, CUBLAS_OP_T, E, Gp, rem, Xe + nsl * ks * E, split ? Xs + nsl * ks * E : NULL, E,
           g->L + nsl * ks * Gp, split ? g->Ls + nsl * ks * Gp : NULL, Gp, g->S + nsl * sS, E, prec);
    const int nslices = (int)nsl + (rem ? 1 : 0);
    k_acc_add<<<G, 256, sizeof(double) * (1 + D)>>>(g->S, nslices, sS, E, E0, D, full, m->dIJ, m->dC, dAcc);
    CK(cudaGetLastError());
  }
}

/* gg_hmm_gemm (cuda-gemm.h): C = A B, column-major, for the dense HMM path. */
int gg_hmm_gemm(int type, int m, int n, int k, const void *A, int lda, const void *B, int ldb, void *C,
                int ldc) {
  static cublasHandle_t hh = NULL;
  if (!gg_available()) return -1;
  if (!hh) CKB(blas.create(&hh));
  const double one_d = 1.0, zero_d = 0.0;
  const float one_f = 1.0f, zero_f = 0.0f;
  if (type == GG_HMM_FP64)
    CKB(blas.gemmex(hh, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one_d, A, CUDA_R_64F, lda, B, CUDA_R_64F, ldb,
                    &zero_d, C, CUDA_R_64F, ldc, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT));
  else
    CKB(blas.gemmex(hh, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one_f, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb,
                    &zero_f, C, CUDA_R_32F, ldc,
                    type == GG_HMM_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return 0;
}
