/* jacobi-eig.h -- symmetric eigendecomposition by parallel-ordered cyclic
 * Jacobi, the plain-C reference of the device kernels that floor the
 * eigenvalues of full covariances in the device M-step
 * (kernels/cuda/cuda-mstep.cu ms_block_jacobi, kernels/opencl/mstep.cl
 * ms_jacobi; doc/kernels.md "M-step on the device").
 *
 * Method (Golub & Van Loan, Matrix Computations, 4th ed., 8.5.2 "the
 * classical/cyclic Jacobi algorithm" and 8.5.5 "parallel ordering"):
 * the matrix is padded to N = D + (D & 1) (a zero row and column, never
 * rotated).  A sweep is N - 1 rounds; round r rotates the N / 2 disjoint
 * pairs gh_jacobi_pair(N, r, k), k = 0 .. N/2 - 1 (the round-robin
 * "tournament" ordering: every pair (p, q) once per sweep), all at once:
 * A := J' A J, V := V J, J the product of the round's plane rotations.
 * Rotation of (p, q): tau = (a_qq - a_pp) / (2 a_pq),
 * t = sign(tau) / (|tau| + sqrt(1 + tau^2)), c = 1 / sqrt(1 + t^2), s = t c
 * (GvL Algorithm 8.5.1 symSchur2); a_pp -= t a_pq, a_qq += t a_pq,
 * a_pq := 0.  A pair is skipped when |a_pq| <= eps sqrt(|a_pp a_qq|)
 * (eps = DBL_EPSILON; Demmel & Veselic 1992's stopping test, which keeps
 * the small eigenvalues of a positive definite matrix to high relative
 * accuracy); the iteration stops after the first sweep that rotated
 * nothing, or after GH_JACOBI_MAX_SWEEPS.  The device kernels do the same
 * operations in the same order, one thread per pair / per 2 x 2 block of
 * pairs (blocks (a, b), a <= b, both halves written from one computation so
 * that A stays exactly symmetric), one thread block per matrix.
 */
#ifndef GH_JACOBI_EIG_H
#define GH_JACOBI_EIG_H
#include <stdint.h>

#define GH_JACOBI_MAX_SWEEPS 40

#ifdef __CUDACC__
#define GH_JACOBI_HD __host__ __device__ /* the CUDA kernels call gh_jacobi_pair too */
#else
#define GH_JACOBI_HD
#endif

/* Pair k (0 <= k < N/2) of round r (0 <= r < N - 1) of the round-robin
 * ordering of N (even) indices: p < q. */
GH_JACOBI_HD static inline void gh_jacobi_pair(int N, int r, int k, int *p, int *q) {
  int a, b;
  if (k == 0) {
    a = N - 1;
    b = r;
  } else {
    a = (r + k) % (N - 1);
    b = (r - k + N - 1) % (N - 1);
  }
  *p = a < b ? a : b;
  *q = a < b ? b : a;
}

/* Eigendecomposition of the symmetric A [D x D] (row-major, only the lower
 * triangle read): eigenvalues w [D] in no particular order and
 * eigenvectors as the columns of V [D x D] (row-major: V[i * D + k] is
 * component i of the eigenvector of w[k]), A = V diag(w) V'.
 * work: 2 N^2 + 2 N doubles, N = D + (D & 1).  Returns the number of
 * sweeps run, or -1 when GH_JACOBI_MAX_SWEEPS sweeps did not converge (w, V
 * are then the last iterate).  D >= 1. */
int gh_sym_eig_jacobi(const double *A, int32_t D, double *w, double *V, double *work);

/* The device M-step's eigenvalue floor (the reference of its kernels): the
 * packed symmetric covariance C [D(D+1)/2] (Kaldi's packed lower triangle)
 * gets its eigenvalues floored at max(abs_floor, max |eig| / max_condition)
 * (max_condition <= 0: abs_floor only) -- the arithmetic of
 * lib/gmm/gmm-est.c floor_eigenvalues (Kaldi SpMatrix::ApplyFloor with
 * the floor of MleFullGmmUpdate) with Jacobi in place of LAPACK's dsyev:
 * when no eigenvalue is below the floor, C is left as it was; otherwise
 * C := V diag(max(w, floor)) V'.  Returns the number of eigenvalues
 * floored, or -1 (C unchanged) when Jacobi did not converge.
 * work: 2 N^2 + 2 N + D^2 + D doubles. */
int gh_cov_floor_jacobi(double *C, int32_t D, double abs_floor, double max_condition, double *work);

/* Doubles of work gh_cov_floor_jacobi needs for dimension D. */
static inline int64_t gh_cov_floor_jacobi_work(int32_t D) {
  const int64_t N = D + (D & 1);
  return 2 * N * N + 2 * N + (int64_t)D * D + D;
}

#endif
