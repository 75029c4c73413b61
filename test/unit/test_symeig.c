/* test_symeig.c -- the parallel-ordered cyclic Jacobi eigensolver
 * (kernels/jacobi-eig.c, the plain-C reference of the device M-step's
 * eigenvalue floor) against LAPACK's dsyev, and its floor
 * (gh_cov_floor_jacobi) against the host M-step's (lib/gmm/gmm-est.c
 * gh_cov_floor, dsyev).
 *
 * Matrices: A = Q diag(lambda) Q' with Q orthogonal (QR of a Gaussian
 * matrix) and lambda log-spaced from 1 down to 1/cond (cond = 1, 1e2, 1e4,
 * 1e6, 1e8), scaled by 10^u, u in [-3, 3]; also indefinite ones (a few
 * negative eigenvalues, as a covariance S/n - mu mu' can be after rounding),
 * ones with a zero row and column (a constant feature dimension), repeated
 * eigenvalues, and a diagonal one; D = 1, 2, 3, 5, 13, 16, 24, 39, 40, 64.
 *
 * Tolerances (eps = DBL_EPSILON, |A| = max |lambda|):
 *   eigenvalues, sorted, vs dsyev:            |dw| <= 20 D eps |A|
 *   residual max |A V - V diag(w)|:            <= 20 D eps |A|
 *   orthogonality max |V'V - I|:               <= 20 D eps
 *   sweeps to convergence:                     <= 20 (16 at D=64, cond 1e8)
 *   floored covariance vs gh_cov_floor:        max |dC| <= 100 D eps |A|,
 *                                              the same number floored
 * (dsyev's own backward error is O(D eps |A|); a count differs only if an
 * eigenvalue lies within rounding of the floor, which these matrices avoid:
 * their eigenvalues are at least 1% away from it.)
 */
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "gh-test.h"
#include "gmm/gmm-est.h"
#include "jacobi-eig.h"

static uint64_t rs = 0x243F6A8885A308D3ULL;
static double urand(void) {
  rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
  return ((rs >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double nrand(void) { return sqrt(-2.0 * log(urand())) * cos(2 * M_PI * urand()); }

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A [D x D] = Q diag(lam) Q' with a random orthogonal Q. */
static void make_sym(double *A, int D, const double *lam) {
  double *Q = malloc(sizeof(double) * D * D), *tau = malloc(sizeof(double) * D);
  for (int i = 0; i < D * D; ++i) Q[i] = nrand();
  LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, D, D, Q, D, tau);
  LAPACKE_dorgqr(LAPACK_ROW_MAJOR, D, D, D, Q, D, tau);
  for (int i = 0; i < D; ++i)
    for (int j = 0; j <= i; ++j) {
      double s = 0;
      for (int k = 0; k < D; ++k) s += Q[i * D + k] * lam[k] * Q[j * D + k];
      A[i * D + j] = A[j * D + i] = s;
    }
  free(Q); free(tau);
}

/* One matrix: eigendecomposition and floor checks; kind names it. */
static void check(const double *A, int D, const char *kind, double maxcond_floor, double absrel) {
  const int N = D + (D & 1);
  double *work = malloc(sizeof(double) * gh_cov_floor_jacobi_work(D));
  double *w = malloc(sizeof(double) * D), *V = malloc(sizeof(double) * D * D);
  double *wl = malloc(sizeof(double) * D), *Al = malloc(sizeof(double) * D * D), *ws = malloc(sizeof(double) * D);
  (void)N;
  int sweeps = gh_sym_eig_jacobi(A, D, w, V, work);
  memcpy(Al, A, sizeof(double) * D * D);
  int info = LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'N', 'L', D, Al, D, wl);
  double norm = 0;
  for (int k = 0; k < D; ++k) norm = fmax(norm, fabs(wl[k]));
  if (norm == 0) norm = 1;
  memcpy(ws, w, sizeof(double) * D);
  qsort(ws, D, sizeof(double), cmp_d);
  double ew = 0, res = 0, orth = 0;
  for (int k = 0; k < D; ++k) ew = fmax(ew, fabs(ws[k] - wl[k]));
  for (int i = 0; i < D; ++i)
    for (int k = 0; k < D; ++k) {
      double s = 0, o = 0;
      for (int j = 0; j < D; ++j) {
        s += A[i * D + j] * V[j * D + k];
        o += V[j * D + i] * V[j * D + k];
      }
      res = fmax(res, fabs(s - V[i * D + k] * w[k]));
      orth = fmax(orth, fabs(o - (i == k ? 1.0 : 0.0)));
    }
  const double tol = 20.0 * D * DBL_EPSILON;
  GH_TEST_OK(info == 0 && sweeps >= 1 && sweeps <= 20 && ew <= tol * norm && res <= tol * norm && orth <= tol,
             "jacobi %s D=%d: %d sweeps, eigenvalues vs dsyev %.2g |A|, residual %.2g |A|, orthogonality %.2g (tol %.2g)",
             kind, D, sweeps, ew / norm, res / norm, orth, tol);
  /* the floor: Jacobi reference vs the host M-step's (dsyev) */
  const int S = D * (D + 1) / 2;
  double *C1 = malloc(sizeof(double) * S), *C2 = malloc(sizeof(double) * S);
  for (int i = 0; i < D; ++i)
    for (int j = 0; j <= i; ++j) C1[i * (i + 1) / 2 + j] = C2[i * (i + 1) / 2 + j] = A[i * D + j];
  const double absf = absrel * norm;
  int n1 = gh_cov_floor_jacobi(C1, D, absf, maxcond_floor, work);
  int n2 = gh_cov_floor(C2, D, absf, maxcond_floor);
  double ec = 0;
  for (int q = 0; q < S; ++q) ec = fmax(ec, fabs(C1[q] - C2[q]));
  GH_TEST_OK(n1 == n2 && ec <= 100.0 * D * DBL_EPSILON * norm,
             "jacobi floor %s D=%d max-condition %g: %d floored (host %d), max |dC| %.2g |A| (tol %.2g)", kind, D,
             maxcond_floor, n1, n2, ec / norm, 100.0 * D * DBL_EPSILON);
  free(work); free(w); free(V); free(wl); free(Al); free(ws); free(C1); free(C2);
}

/* Eigenvalues that keep 1% away from the floor max|lam| / mc (so that the
 * floored count is not decided by rounding). */
static void away_from_floor(double *lam, int D, double mc) {
  double mx = 0;
  for (int k = 0; k < D; ++k) mx = fmax(mx, fabs(lam[k]));
  const double f = mx / mc;
  for (int k = 0; k < D; ++k)
    if (fabs(lam[k] - f) < 0.01 * f) lam[k] = lam[k] < f ? 0.98 * f : 1.02 * f;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const int dims[] = {1, 2, 3, 5, 13, 16, 24, 39, 40, 64};
  const double conds[] = {1, 1e2, 1e4, 1e6, 1e8};
  for (size_t di = 0; di < sizeof dims / sizeof dims[0]; ++di) {
    const int D = dims[di];
    double *A = malloc(sizeof(double) * D * D), *lam = malloc(sizeof(double) * D);
    char kind[64];
    for (size_t ci = 0; ci < sizeof conds / sizeof conds[0]; ++ci) {
      const double scale = pow(10.0, 6.0 * urand() - 3.0);
      for (int k = 0; k < D; ++k) lam[k] = scale * pow(conds[ci], -(D > 1 ? (double)k / (D - 1) : 0.0));
      away_from_floor(lam, D, 1e4);
      make_sym(A, D, lam);
      snprintf(kind, sizeof kind, "SPD cond %g", conds[ci]);
      check(A, D, kind, 1e4, 1e-9);
    }
    if (D >= 3) {
      /* indefinite: two small negative eigenvalues */
      for (int k = 0; k < D; ++k) lam[k] = 1.0 + urand();
      lam[0] = -1e-3; lam[1] = -2e-7;
      make_sym(A, D, lam);
      check(A, D, "indefinite", 1e4, 1e-9);
      /* repeated eigenvalues (a cluster of 3) */
      for (int k = 0; k < D; ++k) lam[k] = k < 3 ? 0.5 : 2.0 + k;
      make_sym(A, D, lam);
      check(A, D, "repeated", 1e4, 1e-9);
      /* a constant dimension: row and column 1 zero */
      for (int k = 0; k < D; ++k) lam[k] = 0.1 + urand();
      make_sym(A, D, lam);
      for (int k = 0; k < D; ++k) A[1 * D + k] = A[k * D + 1] = 0.0;
      check(A, D, "zero row", 1e4, 1e-9);
      /* no floor from the condition (max-condition <= 0): the absolute floor only */
      for (int k = 0; k < D; ++k) lam[k] = pow(1e8, -(double)k / (D - 1));
      away_from_floor(lam, D, 1.0 / 3e-5);
      make_sym(A, D, lam);
      check(A, D, "abs floor only", 0, 3e-5);
    }
    /* diagonal: nothing to rotate */
    memset(A, 0, sizeof(double) * D * D);
    for (int k = 0; k < D; ++k) A[k * D + k] = 1.0 + k;
    check(A, D, "diagonal", 1e4, 1e-9);
    free(A); free(lam);
  }
  return gh_test_done();
}
