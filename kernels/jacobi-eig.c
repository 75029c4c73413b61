/* jacobi-eig.c -- parallel-ordered cyclic Jacobi eigendecomposition, the
 * plain-C reference of the device M-step's eigenvalue floor; see
 * jacobi-eig.h (method and sources). */
#include "jacobi-eig.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* The rotation of pair (p, q) of the padded N x N matrix A (row-major):
 * c, s, t, and whether it rotates (GvL symSchur2 with the Demmel-Veselic
 * skip test).  The device kernels compute it with the same expressions. */
static int rotation(const double *A, int N, int p, int q, double *c, double *s, double *t, double *f) {
  const double apq = A[(int64_t)p * N + q], app = A[(int64_t)p * N + p], aqq = A[(int64_t)q * N + q];
  if (!(fabs(apq) > DBL_EPSILON * sqrt(fabs(app * aqq)))) {
    *c = 1.0; *s = 0.0; *t = 0.0; *f = 0.0;
    return 0;
  }
  const double tau = (aqq - app) / (2.0 * apq);
  double tt;
  if (fabs(tau) > 1e150) tt = 0.5 / tau; /* 1 / (|tau| + sqrt(1 + tau^2)) without overflow */
  else tt = (tau >= 0 ? 1.0 : -1.0) / (fabs(tau) + sqrt(1.0 + tau * tau));
  *t = tt;
  *c = 1.0 / sqrt(1.0 + tt * tt);
  *s = tt * *c;
  *f = 1.0;
  return 1;
}

int gh_sym_eig_jacobi(const double *Ain, int32_t D, double *w, double *Vout, double *work) {
  const int N = D + (D & 1), P = N / 2;
  double *A = work, *V = work + (int64_t)N * N, *rc = V + (int64_t)N * N, *rs = rc + P, *rt = rs + P, *rf = rt + P;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      double a = 0;
      if (i < D && j < D) a = i >= j ? Ain[(int64_t)i * D + j] : Ain[(int64_t)j * D + i];
      A[(int64_t)i * N + j] = a;
      V[(int64_t)i * N + j] = i == j ? 1.0 : 0.0;
    }
  int sweeps = -1;
  for (int sw = 0; sw < GH_JACOBI_MAX_SWEEPS; ++sw) {
    int rotated = 0;
    for (int r = 0; r < N - 1; ++r) {
      /* phase 1: the round's rotations (one device thread per pair) */
      for (int k = 0; k < P; ++k) {
        int p, q;
        gh_jacobi_pair(N, r, k, &p, &q);
        rotated |= rotation(A, N, p, q, &rc[k], &rs[k], &rt[k], &rf[k]);
      }
      /* phase 2: A := J' A J by 2 x 2 blocks of pairs (a, b), a <= b (one
       * device thread per block), V := V J by (row, pair) */
      for (int64_t blk = 0; blk < (int64_t)P * (P + 1) / 2; ++blk) {
        int b = (int)((sqrt(8.0 * (double)blk + 1.0) - 1.0) * 0.5);
        while ((int64_t)b * (b + 1) / 2 > blk) --b;
        while ((int64_t)(b + 1) * (b + 2) / 2 <= blk) ++b;
        const int a = (int)(blk - (int64_t)b * (b + 1) / 2); /* a <= b */
        int p1, q1, p2, q2;
        gh_jacobi_pair(N, r, a, &p1, &q1);
        gh_jacobi_pair(N, r, b, &p2, &q2);
        const double c1 = rc[a], s1 = rs[a], c2 = rc[b], s2 = rs[b];
        if (a == b) {
          if (rf[a] == 0.0) continue; /* not rotated: unchanged */
          const double apq = A[(int64_t)p1 * N + q1];
          A[(int64_t)p1 * N + p1] -= rt[a] * apq;
          A[(int64_t)q1 * N + q1] += rt[a] * apq;
          A[(int64_t)p1 * N + q1] = 0.0;
          A[(int64_t)q1 * N + p1] = 0.0;
          continue;
        }
        const double x00 = A[(int64_t)p1 * N + p2], x01 = A[(int64_t)p1 * N + q2];
        const double x10 = A[(int64_t)q1 * N + p2], x11 = A[(int64_t)q1 * N + q2];
        const double y00 = c1 * x00 - s1 * x10, y01 = c1 * x01 - s1 * x11;
        const double y10 = s1 * x00 + c1 * x10, y11 = s1 * x01 + c1 * x11;
        const double z00 = c2 * y00 - s2 * y01, z01 = s2 * y00 + c2 * y01;
        const double z10 = c2 * y10 - s2 * y11, z11 = s2 * y10 + c2 * y11;
        A[(int64_t)p1 * N + p2] = z00; A[(int64_t)p2 * N + p1] = z00;
        A[(int64_t)p1 * N + q2] = z01; A[(int64_t)q2 * N + p1] = z01;
        A[(int64_t)q1 * N + p2] = z10; A[(int64_t)p2 * N + q1] = z10;
        A[(int64_t)q1 * N + q2] = z11; A[(int64_t)q2 * N + q1] = z11;
      }
      for (int64_t e = 0; e < (int64_t)N * P; ++e) {
        const int i = (int)(e / P), k = (int)(e % P);
        int p, q;
        gh_jacobi_pair(N, r, k, &p, &q);
        const double vp = V[(int64_t)i * N + p], vq = V[(int64_t)i * N + q];
        V[(int64_t)i * N + p] = rc[k] * vp - rs[k] * vq;
        V[(int64_t)i * N + q] = rs[k] * vp + rc[k] * vq;
      }
    }
    if (!rotated) { sweeps = sw + 1; break; }
  }
  for (int k = 0; k < D; ++k) w[k] = A[(int64_t)k * N + k];
  for (int i = 0; i < D; ++i)
    for (int k = 0; k < D; ++k) Vout[(int64_t)i * D + k] = V[(int64_t)i * N + k];
  return sweeps;
}

int gh_cov_floor_jacobi(double *C, int32_t D, double abs_floor, double max_condition, double *work) {
  const int64_t N = D + (D & 1);
  double *A = work + 2 * N * N + 2 * N, *w = A + (int64_t)D * D;
  /* A is both the input and, after the call, the eigenvectors */
  for (int32_t i = 0; i < D; ++i)
    for (int32_t j = 0; j <= i; ++j) A[(int64_t)i * D + j] = A[(int64_t)j * D + i] = C[(int64_t)i * (i + 1) / 2 + j];
  if (gh_sym_eig_jacobi(A, D, w, A, work) < 0) return -1;
  double maxabs = 0;
  for (int32_t k = 0; k < D; ++k) maxabs = fmax(maxabs, fabs(w[k]));
  double floor = abs_floor;
  if (max_condition > 0 && maxabs / max_condition > floor) floor = maxabs / max_condition;
  int n = 0;
  for (int32_t k = 0; k < D; ++k)
    if (w[k] < floor) { w[k] = floor; ++n; }
  if (n == 0) return 0;
  for (int32_t i = 0; i < D; ++i)
    for (int32_t j = 0; j <= i; ++j) {
      double s = 0;
      for (int32_t k = 0; k < D; ++k) s += A[(int64_t)i * D + k] * w[k] * A[(int64_t)j * D + k];
      C[(int64_t)i * (i + 1) / 2 + j] = s;
    }
  return n;
}
