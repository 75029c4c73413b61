/* kmeans.c -- the CPU implementation of the k-means distance ops
 * (backend.h kmeans_*; the fallback of every backend without them, and
 * what drivers/gmm/gmm-init.c runs with no backend).  Each frame's squared
 * distance to each centre is summed over d = 0..D-1 in order, with separate
 * rounded products and sums (C11 with GCC: no contraction into fused
 * multiply-adds), exactly as the plain loop sum_d (z_d - c_d)^2; the speed
 * comes from doing 16 frames x 64 centres at once (the centres of a tile
 * transposed, one SIMD lane per centre: each lane's sum keeps its order)
 * and from OpenMP over blocks of frames. */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "base/gh-base.h"

struct gh_dev_kmeans {
  double *Z;    /* [N x D] */
  double *zz;   /* [N] |z_i|^2 */
  double *d2;   /* [N] */
  int32_t *asg; /* [N] */
  int64_t N;
  int32_t D;
};

gh_dev_kmeans *gh_cpu_kmeans_upload(gh_backend *b, const double *Z, int64_t N, int32_t D) {
  (void)b;
  if (N < 0 || D < 1) gh_die("kmeans_upload: bad shape %lld x %d", (long long)N, D);
  gh_dev_kmeans *z = gh_calloc(1, sizeof *z);
  z->Z = gh_malloc(sizeof(double) * (size_t)(N > 0 ? N : 1) * D);
  memcpy(z->Z, Z, sizeof(double) * (size_t)N * D);
  z->d2 = gh_calloc((size_t)(N > 0 ? N : 1), sizeof(double));
  z->asg = gh_calloc((size_t)(N > 0 ? N : 1), sizeof(int32_t));
  z->zz = gh_malloc(sizeof(double) * (size_t)(N > 0 ? N : 1));
  for (int64_t i = 0; i < N; ++i) {
    double e = 0;
    for (int32_t d = 0; d < D; ++d) e += Z[i * D + d] * Z[i * D + d];
    z->zz[i] = e;
  }
  z->N = N;
  z->D = D;
  return z;
}

/* Two doubles, element-wise IEEE operations (GCC / Clang vector extension). */
typedef double km_v2d __attribute__((vector_size(16)));

/* Squared distances of frames z0, z1 [D] to the 8 centres whose coordinate
 * d is ct[d * ld .. + 7]: s0, s1 [8].  Each sum runs over d in order. */
static void dist_2x8(const double *z0, const double *z1, const double *ct, int64_t ld, int32_t D, double *s0,
                     double *s1) {
  /* eight accumulators in registers (written out: GCC keeps arrays of
   * vectors on the stack) */
  km_v2d a0 = {0, 0}, a1 = {0, 0}, a2 = {0, 0}, a3 = {0, 0}, b0 = {0, 0}, b1 = {0, 0}, b2 = {0, 0}, b3 = {0, 0};
  for (int32_t d = 0; d < D; ++d) {
    const double *c = ct + d * ld;
    const km_v2d x0 = {z0[d], z0[d]}, x1 = {z1[d], z1[d]};
    km_v2d c0, c1, c2, c3, t;
    memcpy(&c0, c, 16); memcpy(&c1, c + 2, 16); memcpy(&c2, c + 4, 16); memcpy(&c3, c + 6, 16);
    t = x0 - c0; a0 += t * t;
    t = x0 - c1; a1 += t * t;
    t = x0 - c2; a2 += t * t;
    t = x0 - c3; a3 += t * t;
    t = x1 - c0; b0 += t * t;
    t = x1 - c1; b1 += t * t;
    t = x1 - c2; b2 += t * t;
    t = x1 - c3; b3 += t * t;
  }
  memcpy(s0, &a0, 16); memcpy(s0 + 2, &a1, 16); memcpy(s0 + 4, &a2, 16); memcpy(s0 + 6, &a3, 16);
  memcpy(s1, &b0, 16); memcpy(s1 + 2, &b1, 16); memcpy(s1 + 4, &b2, 16); memcpy(s1 + 6, &b3, 16);
}

/* Lloyd's assignment step through one GEMM, with the exact result.
 * a_ik = |z_i|^2 + |c_k|^2 - 2 z_i.c_k (BLAS, any order) differs from the
 * plain loop's e_ik = sum_d (z_id - c_kd)^2 by at most
 * b_ik = 4 (D + 4) eps (|z_i| + |c_k|)^2 (Higham, Accuracy and Stability,
 * 3.1: each of the three sums errs by <= D eps times its sum of absolute
 * values, and e_ik itself by (D + 1) eps e_ik; the factor 4 is slack).
 * So with U_i = min_k (a_ik + b_ik) >= min_k e_ik, every centre whose e_ik
 * can be the minimum has a_ik - b_ik <= U_i: only those candidates get e_ik
 * computed by the plain loop, in increasing k (first minimum wins), which
 * is the plain assignment bit for bit.  A frame whose bounds are not finite
 * takes the plain loop over all centres. */
static void nearest_screened(gh_dev_kmeans *z, const double *C, int32_t k0, int32_t nk) {
  const int64_t N = z->N;
  const int32_t D = z->D;
  const double g = 4.0 * (D + 4) * DBL_EPSILON;
  double *cc = gh_malloc(sizeof(double) * nk), *cn = gh_malloc(sizeof(double) * nk);
  for (int32_t k = 0; k < nk; ++k) {
    double e = 0;
    for (int32_t d = 0; d < D; ++d) e += C[(size_t)k * D + d] * C[(size_t)k * D + d];
    cc[k] = e;
    cn[k] = sqrt(e);
  }
  /* blocks of frames: 4 M doubles of GEMM output (32 MB), 256 .. 8192 frames */
  int64_t FB = ((int64_t)1 << 22) / nk;
  if (FB < 256) FB = 256;
  if (FB > 8192) FB = 8192;
  double *A = gh_malloc(sizeof(double) * FB * nk);
  for (int64_t i0 = 0; i0 < N; i0 += FB) {
    const int nf = N - i0 < FB ? (int)(N - i0) : (int)FB;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nf, nk, D, -2.0, z->Z + i0 * D, D, C, D, 0.0, A, nk);
#pragma omp parallel for schedule(static) if ((double)nf * nk * D > 1e6)
    for (int f = 0; f < nf; ++f) {
      const int64_t i = i0 + f;
      const double *zi = z->Z + i * D, zz = z->zz[i], zn = sqrt(zz);
      double *row = A + (size_t)f * nk;
      double U = INFINITY;
      for (int32_t k = 0; k < nk; ++k) {
        const double a = zz + cc[k] + row[k], r = zn + cn[k];
        row[k] = a;
        if (a + g * r * r < U) U = a + g * r * r;
      }
      const int all = !isfinite(U);
      int32_t best = -1;
      double bd = 0;
      for (int32_t k = 0; k < nk; ++k) {
        const double r = zn + cn[k];
        if (!all && !(row[k] - g * r * r <= U)) continue;
        const double *c = C + (size_t)k * D;
        double e = 0;
        for (int32_t d = 0; d < D; ++d) { const double t = zi[d] - c[d]; e += t * t; }
        if (best < 0 || e < bd) { bd = e; best = k; }
      }
      z->d2[i] = bd;
      z->asg[i] = k0 + best;
    }
  }
  free(A); free(cc); free(cn);
}

void gh_cpu_kmeans_nearest(gh_backend *b, gh_dev_kmeans *z, const double *C, int32_t k0, int32_t nk, int reset) {
  (void)b;
  if (nk < 1) gh_die("kmeans_nearest: no centres");
  const int64_t N = z->N;
  const int32_t D = z->D;
  if (nk < 8) { /* k-means++'s one new centre: a pass over the frames, 4 at a time */
    const int64_t n4 = N / 4 * 4;
    /* a memory-bound pass: threads only for large ones */
#pragma omp parallel for schedule(static) if ((double)N * nk * D > 1e7)
    for (int64_t i0 = 0; i0 < N; i0 += 4) {
      const double *z0 = z->Z + i0 * D;
      for (int32_t k = 0; k < nk; ++k) {
        const double *c = C + (size_t)k * D;
        double e[4];
        if (i0 < n4) {
          const double *z1 = z0 + D, *z2 = z1 + D, *z3 = z2 + D;
          double e0 = 0, e1 = 0, e2 = 0, e3 = 0;
          for (int32_t d = 0; d < D; ++d) {
            const double cd = c[d], t0 = z0[d] - cd, t1 = z1[d] - cd, t2 = z2[d] - cd, t3 = z3[d] - cd;
            e0 += t0 * t0; e1 += t1 * t1; e2 += t2 * t2; e3 += t3 * t3;
          }
          e[0] = e0; e[1] = e1; e[2] = e2; e[3] = e3;
        } else {
          for (int64_t f = 0; f < N - i0; ++f) {
            double ef = 0;
            for (int32_t d = 0; d < D; ++d) { const double t = z0[f * D + d] - c[d]; ef += t * t; }
            e[f] = ef;
          }
        }
        const int nf = N - i0 < 4 ? (int)(N - i0) : 4;
        for (int f = 0; f < nf; ++f)
          if ((reset && k == 0) || e[f] < z->d2[i0 + f]) { z->d2[i0 + f] = e[f]; z->asg[i0 + f] = k0 + k; }
      }
    }
    return;
  }
  if (reset && nk >= 16) { /* Lloyd's assignment: GEMM-screened, exact */
    nearest_screened(z, C, k0, nk);
    return;
  }
  /* centres transposed and padded to a multiple of 8 (padding: copies of
   * centre 0, never chosen): Ct[d * ld + k] */
  const int64_t ld = (nk + 7) / 8 * 8;
  double *Ct = gh_malloc(sizeof(double) * (size_t)ld * D);
  for (int64_t k = 0; k < ld; ++k)
    for (int32_t d = 0; d < D; ++d) Ct[(size_t)d * ld + k] = C[(size_t)(k < nk ? k : 0) * D + d];
  const int64_t nblk = (N + 1) / 2;
#pragma omp parallel for schedule(static) if ((double)N * nk * D > 1e6)
  for (int64_t blk = 0; blk < nblk; ++blk) {
    const int64_t i0 = 2 * blk;
    const int nf = N - i0 < 2 ? 1 : 2;
    const double *z0 = z->Z + i0 * D, *z1 = nf == 2 ? z0 + D : z0;
    double bd[2] = {z->d2[i0], nf == 2 ? z->d2[i0 + 1] : 0};
    int32_t best[2] = {z->asg[i0], nf == 2 ? z->asg[i0 + 1] : 0};
    double s[2][8];
    for (int64_t kb = 0; kb < nk; kb += 8) {
      dist_2x8(z0, z1, Ct + kb, ld, D, s[0], s[1]);
      const int n = nk - kb < 8 ? (int)(nk - kb) : 8;
      for (int f = 0; f < nf; ++f)
        for (int kk = 0; kk < n; ++kk)
          if ((reset && kb + kk == 0) || s[f][kk] < bd[f]) { bd[f] = s[f][kk]; best[f] = (int32_t)(k0 + kb + kk); }
    }
    for (int f = 0; f < nf; ++f) { z->d2[i0 + f] = bd[f]; z->asg[i0 + f] = best[f]; }
  }
  free(Ct);
}

void gh_cpu_kmeans_fetch(gh_backend *b, gh_dev_kmeans *z, double *d2, int32_t *asg) {
  (void)b;
  if (d2) memcpy(d2, z->d2, sizeof(double) * (size_t)z->N);
  if (asg) memcpy(asg, z->asg, sizeof(int32_t) * (size_t)z->N);
}

void gh_cpu_kmeans_free(gh_backend *b, gh_dev_kmeans *z) {
  (void)b;
  if (!z) return;
  free(z->Z); free(z->zz); free(z->d2); free(z->asg); free(z);
}
