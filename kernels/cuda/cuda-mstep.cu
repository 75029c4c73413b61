/* cuda-mstep.cu -- the EM M-step on the GPU (backend.h mstep, model_fetch:
 * the EM loop stays on the device).
 *
 * From the device accumulators of a model (cuda.cu's E-step: per Gaussian
 * [occupancy, first order, second order] in double, uncentred) to the new
 * parameters, written into the model's canonical device copy (dEparams: the
 * expanded parameter rows of the GEMM forms, column by column per pdf) and
 * from there into the GEMM rows of cuda-gemm.cu, so the next E-step runs
 * on the new model with no host round trip.  The arithmetic is that of
 * lib/gmm/gmm-est.c gh_gmm_update (Kaldi MleDiagGmmUpdate / MleFullGmmUpdate)
 * and lib/gmm/gmm.c gh_gmm_set_moments / gh_gmm_compute_gconsts, in double:
 *
 *   w_g = occ_g / sum_g occ_g,  mu_g = m_g / occ_g,
 *   diag: var_g = s_g / occ_g - mu_g^2, floored at min_variance (with
 *         --rel-variance-floor at max(min_variance, rel x the pdf's data
 *         variance) per dimension: k_rel_vfloor);
 *   full: C_g = S_g / occ_g - mu_g mu_g';  Kaldi floors its eigenvalues at
 *         f = max(min_variance, max|eig| / max_condition).  As the host
 *         M-step (lib/gmm/gmm-est.c floor_eigenvalues), the device first
 *         proves that nothing is floored (C_g - f' I has a Cholesky factor
 *         for f' = max(min_variance, Gershgorin bound / max_condition) >= f);
 *         otherwise it decomposes C_g = V diag(w) V' by parallel-ordered
 *         cyclic Jacobi (ms_block_jacobi, one block per matrix; the plain-C
 *         reference is kernels/jacobi-eig.c, where the method is described),
 *         floors w at f from its max |w|, and when some w_k < f rebuilds
 *         C_g = V diag(max(w, f)) V' (with none below f, C_g is kept as it
 *         was).  The device declines (the host floors) only when Jacobi
 *         does not converge in GH_JACOBI_MAX_SWEEPS sweeps or the
 *         dimension needs more shared memory than the device has
 *         (max(D(D+1), N^2) + N^2 + 2 N + 2 D doubles, N = D + (D & 1):
 *         D <= 118 on an H100 / H200);
 *   P_g = C_g^-1 (Cholesky, triangular inverse, L^-T L^-1), b_g = P_g mu_g,
 *   rounded to float as the model stores them, and
 *   gconst_g = log w_g - D/2 log 2 pi + 1/2 log det P_g - 1/2 b_g' P_g^-1 b_g
 *   from the float parameters (Kaldi FullGmm::ComputeGconsts).
 * Gaussians below min_gaussian_occupancy / min_gaussian_weight keep their
 * parameters with weight max(w, min_gaussian_weight) when
 * remove_low_count_gaussians is off; when it is on, the device declines
 * (removal changes the model's shape: the host does it).  Pdfs without
 * data keep their parameters.  The auxiliary function of each Gaussian
 * (Kaldi MlObjective) is the dot product of its parameter row and its
 * statistics row: occ gconst + m . b - 1/2 tr(S P).
 *
 * Kernels: k_occ_sum (one block per pdf: the pdf's total occupancy, fixed
 * order), k_mstep (one block of MS_THREADS threads per Gaussian: the
 * factorisations in shared memory, double; run once over all Gaussians
 * without the Jacobi work, then, when some floor test failed, once more
 * over just those Gaussians with it: the large shared memory of the
 * eigensolver does not cut the occupancy of the common case), k_rows_to_gg (the new rows into
 * the GEMM layout).  No atomics on floating values: two runs give the same
 * bits.  The new rows go to scratch and are swapped in only when every
 * Gaussian succeeded, so a declined M-step leaves the model as it was.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "backend.h"
#include "base/gh-base.h"
#include "gmm/gmm-est.h"
#include "cuda-check.h"
#include "cuda-pool.h"
#include "gemm-forms.h"
#include "jacobi-eig.h"
}
#include "cuda-gemm.h"
#include "cuda-model.h"

#define MS_THREADS 128 /* threads per Gaussian (power of two: block reductions) */

enum { MS_NOT_UPDATED = 1, MS_HOST_REMOVE = 2, MS_HOST_FLOOR = 4, MS_HOST_BAD = 8 };

/* Options of gh_est_opts the kernels read (resolved on the host). */
struct MsOpts {
  double min_w, min_occ_diag, min_occ_full, min_var, max_cond;
  int remove;
  int jacobi; /* 1: shared memory holds the Jacobi work (V, rotations): floor on the device */
  long long r0; /* doubles of the C / L (and Jacobi A) region: max(D(D+1), N^2) */
};

/* Per-Gaussian result: auxiliary function before and after (natural log,
 * total), MS_* flags, variances floored (diag). */
struct MsStat {
  double obj_old, obj_new;
  int flags, floored;
};

__device__ __forceinline__ long long pidx(int i, int j) { return (long long)i * (i + 1) / 2 + j; }

/* Packed lower-triangle index q -> (i, j), j <= i. */
__device__ __forceinline__ void unpack_q(long long q, int *i, int *j) {
  int r = (int)((sqrt(8.0 * (double)q + 1.0) - 1.0) * 0.5);
  while ((long long)r * (r + 1) / 2 > q) --r;
  while ((long long)(r + 1) * (r + 2) / 2 <= q) ++r;
  *i = r;
  *j = (int)(q - (long long)r * (r + 1) / 2);
}

/* Block reductions over MS_THREADS threads in a fixed order. */
static __device__ double ms_block_sum(double v, double *red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int s = MS_THREADS / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  const double r = red[0];
  __syncthreads();
  return r;
}
static __device__ double ms_block_max(double v, double *red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int s = MS_THREADS / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmax(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  const double r = red[0];
  __syncthreads();
  return r;
}

/* In-place Cholesky factor of the packed symmetric A (lower triangle,
 * right-looking, all threads of the block).  Returns 1, or 0 when a pivot
 * is not > 0 (A is then partly overwritten). */
static __device__ int ms_block_chol(double *A, int D, int *fail) {
  if (threadIdx.x == 0) *fail = 0;
  __syncthreads();
  for (int k = 0; k < D; ++k) {
    if (threadIdx.x == 0) {
      const double d = A[pidx(k, k)];
      if (!(d > 0)) *fail = 1;
      else A[pidx(k, k)] = sqrt(d);
    }
    __syncthreads();
    if (*fail) return 0;
    const double dk = A[pidx(k, k)];
    for (int i = k + 1 + threadIdx.x; i < D; i += MS_THREADS) A[pidx(i, k)] /= dk;
    __syncthreads();
    const int n = D - k - 1;
    const long long T = (long long)n * (n + 1) / 2;
    for (long long t = threadIdx.x; t < T; t += MS_THREADS) {
      int ii, jj;
      unpack_q(t, &ii, &jj);
      const int i = k + 1 + ii, j = k + 1 + jj;
      A[pidx(i, j)] -= A[pidx(i, k)] * A[pidx(j, k)];
    }
    __syncthreads();
  }
  return 1;
}

/* The eigenvalue floor of the full covariance whose accumulator row is a
 * (occupancy occ, mean mu [D] in shared memory), all threads of the block
 * (kernels/jacobi-eig.c gh_cov_floor_jacobi is the reference, step by
 * step).  A [N x N] overlays the C / L region; V [N x N] and rot [2 N] are
 * the Jacobi work.  On return C (packed) is the covariance to invert:
 * V diag(max(w, f)) V' when some eigenvalue w_k < f = max(min_var,
 * max |w| / max_cond), else C as computed from the accumulators.  Returns
 * the number of eigenvalues floored, or -1 (C undefined) when Jacobi did
 * not converge.  Block-uniform result. */
static __device__ int ms_block_jacobi(double *A, double *V, double *rot, const double *__restrict__ a, double occ,
                                      const double *mu, int D, double min_var, double max_cond, int *s_flag,
                                      double *red) {
  const int N = D + (D & 1), P = N / 2, tid = threadIdx.x;
  double *rc = rot, *rs = rot + P, *rt = rs + P, *rf = rt + P;
  for (int e = tid; e < N * N; e += MS_THREADS) {
    const int i = e / N, j = e % N;
    double v = 0;
    if (i < D && j < D) {
      const int r = i > j ? i : j, c = i > j ? j : i;
      v = a[1 + D + pidx(r, c)] / occ - mu[r] * mu[c];
    }
    A[e] = v;
    V[e] = i == j ? 1.0 : 0.0;
  }
  int sweeps = -1;
  for (int sw = 0; sw < GH_JACOBI_MAX_SWEEPS; ++sw) {
    __syncthreads();
    if (tid == 0) *s_flag = 0;
    __syncthreads();
    for (int r = 0; r < N - 1; ++r) {
      /* phase 1: the round's rotations (GvL symSchur2, Demmel-Veselic skip) */
      for (int k = tid; k < P; k += MS_THREADS) {
        int p, q;
        gh_jacobi_pair(N, r, k, &p, &q);
        const double apq = A[p * N + q], app = A[p * N + p], aqq = A[q * N + q];
        if (!(fabs(apq) > 2.220446049250313e-16 * sqrt(fabs(app * aqq)))) {
          rc[k] = 1.0; rs[k] = 0.0; rt[k] = 0.0; rf[k] = 0.0;
        } else {
          const double tau = (aqq - app) / (2.0 * apq);
          const double t = fabs(tau) > 1e150 ? 0.5 / tau : (tau >= 0 ? 1.0 : -1.0) / (fabs(tau) + sqrt(1.0 + tau * tau));
          const double c = 1.0 / sqrt(1.0 + t * t);
          rc[k] = c; rs[k] = t * c; rt[k] = t; rf[k] = 1.0;
          *s_flag = 1;
        }
      }
      __syncthreads();
      /* phase 2: A := J' A J by 2 x 2 blocks of pairs (a, b), a <= b; V := V J */
      const int nb = P * (P + 1) / 2;
      for (int blk = tid; blk < nb; blk += MS_THREADS) {
        int b, ai;
        unpack_q(blk, &b, &ai);
        int p1, q1, p2, q2;
        gh_jacobi_pair(N, r, ai, &p1, &q1);
        gh_jacobi_pair(N, r, b, &p2, &q2);
        if (ai == b) {
          if (rf[ai] == 0.0) continue;
          const double apq = A[p1 * N + q1];
          A[p1 * N + p1] -= rt[ai] * apq;
          A[q1 * N + q1] += rt[ai] * apq;
          A[p1 * N + q1] = 0.0;
          A[q1 * N + p1] = 0.0;
          continue;
        }
        const double c1 = rc[ai], s1 = rs[ai], c2 = rc[b], s2 = rs[b];
        const double x00 = A[p1 * N + p2], x01 = A[p1 * N + q2], x10 = A[q1 * N + p2], x11 = A[q1 * N + q2];
        const double y00 = c1 * x00 - s1 * x10, y01 = c1 * x01 - s1 * x11;
        const double y10 = s1 * x00 + c1 * x10, y11 = s1 * x01 + c1 * x11;
        const double z00 = c2 * y00 - s2 * y01, z01 = s2 * y00 + c2 * y01;
        const double z10 = c2 * y10 - s2 * y11, z11 = s2 * y10 + c2 * y11;
        A[p1 * N + p2] = z00; A[p2 * N + p1] = z00;
        A[p1 * N + q2] = z01; A[q2 * N + p1] = z01;
        A[q1 * N + p2] = z10; A[p2 * N + q1] = z10;
        A[q1 * N + q2] = z11; A[q2 * N + q1] = z11;
      }
      for (int e = tid; e < N * P; e += MS_THREADS) {
        const int i = e / P, k = e % P;
        int p, q;
        gh_jacobi_pair(N, r, k, &p, &q);
        const double vp = V[i * N + p], vq = V[i * N + q];
        V[i * N + p] = rc[k] * vp - rs[k] * vq;
        V[i * N + q] = rs[k] * vp + rc[k] * vq;
      }
      __syncthreads();
    }
    const int any = *s_flag;
    __syncthreads();
    if (!any) { sweeps = sw + 1; break; }
  }
  if (sweeps < 0) return -1;
  /* the floor (Kaldi SpMatrix::ApplyFloor at max(min_var, max|w| / max_cond)) */
  double *w = rot; /* the rotations are done with */
  for (int k = tid; k < D; k += MS_THREADS) w[k] = A[k * N + k];
  __syncthreads();
  double mx = 0;
  for (int k = tid; k < D; k += MS_THREADS) mx = fmax(mx, fabs(w[k]));
  const double maxabs = ms_block_max(mx, red);
  double fl = min_var;
  if (max_cond > 0 && maxabs / max_cond > fl) fl = maxabs / max_cond;
  double cnt = 0;
  for (int k = tid; k < D; k += MS_THREADS)
    if (w[k] < fl) { w[k] = fl; cnt += 1; }
  const int n = (int)ms_block_sum(cnt, red); /* its barriers also order w before the rebuild */
  const long long S = (long long)D * (D + 1) / 2;
  double *C = A; /* A is dead: its diagonal is in w */
  for (long long q = tid; q < S; q += MS_THREADS) {
    int i, j;
    unpack_q(q, &i, &j);
    double s;
    if (n == 0) {
      s = a[1 + D + q] / occ - mu[i] * mu[j];
    } else {
      s = 0;
      for (int k = 0; k < D; ++k) s += V[i * N + k] * w[k] * V[j * N + k];
    }
    C[q] = s;
  }
  __syncthreads();
  return n;
}

/* Total occupancy of each pdf (one block per pdf; fixed order). */
__global__ void __launch_bounds__(256)
k_occ_sum(const EPdf *__restrict__ epdf, const double *__restrict__ acc, int D, double *__restrict__ occ_sum) {
  __shared__ double red[256];
  const EPdf e = epdf[blockIdx.x];
  const long long E = 1 + D + (e.full ? (long long)D * (D + 1) / 2 : D);
  double s = 0;
  for (int g = threadIdx.x; g < e.G; g += 256) s += acc[e.accoff + g * E];
  red[threadIdx.x] = s;
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) occ_sum[blockIdx.x] = red[0];
}

/* --rel-variance-floor (diagonal pdfs; lib/gmm/gmm-est.c gh_gmm_update):
 * vfl[p][d] = max(min_var, rel (m2 - m1^2)) with m1, m2 the pdf's data mean
 * and second moment of dimension d (its Gaussians' statistics summed in
 * index order, as the host does, over the pdf's total occupancy).  One
 * block per pdf, one thread per dimension; rounded operations (no fused
 * multiply-add) as the host's. */
__global__ void __launch_bounds__(128)
k_rel_vfloor(const EPdf *__restrict__ epdf, const double *__restrict__ acc, int D, const double *__restrict__ occ_sum,
             double rel, double min_var, double *__restrict__ vfl) {
  const int p = blockIdx.x;
  const EPdf e = epdf[p];
  for (int d = threadIdx.x; d < D; d += 128) {
    double f = min_var;
    if (!e.full) {
      const long long E = 1 + 2 * (long long)D;
      double m1 = 0, m2 = 0;
      for (int g = 0; g < e.G; ++g) {
        m1 = __dadd_rn(m1, acc[e.accoff + g * E + 1 + d]);
        m2 = __dadd_rn(m2, acc[e.accoff + g * E + 1 + D + d]);
      }
      m1 = __ddiv_rn(m1, occ_sum[p]);
      m2 = __ddiv_rn(m2, occ_sum[p]);
      const double r = __dmul_rn(rel, __dsub_rn(m2, __dmul_rn(m1, m1)));
      if (r > f) f = r;
    }
    vfl[(long long)p * D + d] = f;
  }
}

/* One Gaussian per block (see top of file).  Shared memory (dynamic):
 * full: o.r0 doubles (C and L, two packed D x D; the Jacobi A [N x N]
 * overlays them) + 2 D (mu, b) + with o.jacobi N^2 + 2 N (V, rotations);
 * diag: 2 D. */
__global__ void __launch_bounds__(MS_THREADS)
k_mstep(int D, const EPdf *__restrict__ epdf, const int *__restrict__ gpdf, const long long *__restrict__ gfirst,
        const double *__restrict__ acc, const double *__restrict__ occ_sum, const float *__restrict__ eold,
        const float *__restrict__ wold, MsOpts o, float *__restrict__ enew, float *__restrict__ wnew,
        MsStat *__restrict__ stat, const int *__restrict__ glist, const double *__restrict__ vfl,
        const double *__restrict__ nold, double *__restrict__ nnew) {
  extern __shared__ double sh[];
  __shared__ double red[MS_THREADS];
  __shared__ int s_fail, s_floored;
  const long long gi = glist ? glist[blockIdx.x] : blockIdx.x; /* glist: the second pass's Gaussians */
  const int p = gpdf[gi];
  const EPdf e = epdf[p];
  const int G = e.G, g = (int)(gi - gfirst[p]), full = e.full;
  const long long S = full ? (long long)D * (D + 1) / 2 : D, E = 1 + D + S;
  const double *a = acc + e.accoff + (long long)g * E;
  const float *ro = eold + e.eoff + g;  /* element k at ro[k * G] */
  float *rn = enew + e.eoff + g;
  double *C = sh, *L = sh + (full ? S : 0);    /* full only */
  double *mu = sh + (full ? o.r0 : 0), *bv = mu + D;
  double *JV = bv + D, *Jrot = JV + (long long)(D + (D & 1)) * (D + (D & 1)); /* full with o.jacobi */
  const double occ = a[0], tot = occ_sum[p];
  const int tid = threadIdx.x;

  double v = 0;
  if (occ != 0)
    for (long long k = tid; k < E; k += MS_THREADS) v += (double)ro[k * G] * a[k];
  const double obj_old = ms_block_sum(v, red);

  if (!(tot > 0)) { /* pdf without data: unchanged */
    for (long long k = tid; k < E; k += MS_THREADS) rn[k * G] = ro[k * G];
    if (tid == 0) {
      wnew[gi] = wold[gi];
      if (nnew) /* the exact form [norm, mu (D)] of the unchanged Gaussian */
        for (int k = 0; k <= D; ++k) nnew[gi * (D + 1) + k] = nold[gi * (D + 1) + k];
      MsStat st = {0, 0, 0, 0};
      stat[gi] = st;
    }
    return;
  }
  const double prob = occ / tot;
  const double min_occ = full ? o.min_occ_full : o.min_occ_diag;
  const int update = occ > min_occ && prob > o.min_w;
  int flags = 0;
  if (!update) {
    if (o.remove && G > 1) { /* the host removes it */
      if (tid == 0) {
        MsStat st = {obj_old, obj_old, MS_HOST_REMOVE, 0};
        stat[gi] = st;
      }
      return;
    }
    flags = MS_NOT_UPDATED;
  }
  const float wf = (float)(update ? prob : fmax(prob, o.min_w));
  if (tid == 0) { s_fail = 0; s_floored = 0; }
  __syncthreads();

  /* L (full) / bv: the new inverse covariance and b, as floats in doubles */
  if (update) {
    for (int i = tid; i < D; i += MS_THREADS) mu[i] = a[1 + i] / occ;
    __syncthreads();
    if (!full) {
      for (int i = tid; i < D; i += MS_THREADS) {
        double var = a[1 + D + i] / occ - mu[i] * mu[i];
        const double vf = vfl ? vfl[(long long)p * D + i] : o.min_var; /* --rel-variance-floor */
        if (var < vf) { var = vf; atomicAdd(&s_floored, 1); }
        const double iv = 1.0 / var;
        mu[i] = (double)(float)iv;                 /* now the float inverse variance */
        bv[i] = (double)(float)(a[1 + i] / occ * iv);
      }
      __syncthreads();
    } else {
      for (long long q = tid; q < S; q += MS_THREADS) {
        int i, j;
        unpack_q(q, &i, &j);
        C[q] = a[1 + D + q] / occ - mu[i] * mu[j];
      }
      __syncthreads();
      /* the floor test: Gershgorin bound of max |eig| */
      double gm = 0;
      for (int i = tid; i < D; i += MS_THREADS) {
        double r = 0;
        for (int j = 0; j < D; ++j) r += fabs(C[i >= j ? pidx(i, j) : pidx(j, i)]);
        gm = fmax(gm, r);
      }
      const double gmax = ms_block_max(gm, red);
      double f = o.min_var;
      if (o.max_cond > 0 && gmax / o.max_cond > f) f = gmax / o.max_cond;
      for (long long q = tid; q < S; q += MS_THREADS) {
        int i, j;
        unpack_q(q, &i, &j);
        L[q] = C[q] - (i == j ? f : 0.0);
      }
      __syncthreads();
      int ok = f > 0 && ms_block_chol(L, D, &s_fail);
      if (!ok && o.jacobi) { /* some eigenvalue may be below the floor: decompose */
        const int nfl = ms_block_jacobi(C, JV, Jrot, a, occ, mu, D, o.min_var, o.max_cond, &s_fail, red);
        if (nfl >= 0) {
          ok = 1;
          if (tid == 0) s_floored = nfl;
        }
      }
      if (!ok) flags |= MS_HOST_FLOOR;
      if (ok) {
        for (long long q = tid; q < S; q += MS_THREADS) L[q] = C[q];
        __syncthreads();
        ok = ms_block_chol(L, D, &s_fail);
        if (!ok) flags |= MS_HOST_BAD;
      }
      if (!ok) {
        if (tid == 0) {
          MsStat st = {obj_old, obj_old, flags, 0};
          stat[gi] = st;
        }
        return;
      }
      /* C := L^-1 (column j by thread j: forward substitution) */
      for (int j = tid; j < D; j += MS_THREADS) {
        C[pidx(j, j)] = 1.0 / L[pidx(j, j)];
        for (int i = j + 1; i < D; ++i) {
          double s = 0;
          for (int k = j; k < i; ++k) s += L[pidx(i, k)] * C[pidx(k, j)];
          C[pidx(i, j)] = -s / L[pidx(i, i)];
        }
      }
      __syncthreads();
      /* L := P = L^-T L^-1, P_ij = sum_{k >= i} Linv_ki Linv_kj (i >= j) */
      for (long long q = tid; q < S; q += MS_THREADS) {
        int i, j;
        unpack_q(q, &i, &j);
        double s = 0;
        for (int k = i; k < D; ++k) s += C[pidx(k, i)] * C[pidx(k, j)];
        L[q] = s;
      }
      __syncthreads();
      /* b = P mu in double, then both rounded to float */
      for (int i = tid; i < D; i += MS_THREADS) {
        double s = 0;
        for (int j = 0; j < D; ++j) s += L[i >= j ? pidx(i, j) : pidx(j, i)] * mu[j];
        bv[i] = (double)(float)s;
      }
      __syncthreads();
      for (long long q = tid; q < S; q += MS_THREADS) L[q] = (double)(float)L[q];
      __syncthreads();
    }
  } else { /* kept: the stored float parameters */
    for (int i = tid; i < D; i += MS_THREADS) bv[i] = (double)ro[(1 + i) * G];
    if (!full)
      for (int i = tid; i < D; i += MS_THREADS) mu[i] = -2.0 * (double)ro[(1 + D + i) * G];
    else
      for (long long q = tid; q < S; q += MS_THREADS) {
        int i, j;
        unpack_q(q, &i, &j);
        const double r = (double)ro[(1 + D + q) * G];
        L[q] = i == j ? -2.0 * r : -r;
      }
    __syncthreads();
  }

  /* gconst from the float parameters (lib/gmm/gmm.c gconst_one), and the
   * exact form of the same float parameters (gemm-forms.h gh_gauss_exact):
   * norm = log w + 0.5 log det P - D/2 log 2 pi and mu = P^-1 b in double */
  double gc, norm = NAN;
  if (!full) {
    double t = 0, tl = 0;
    int bad = 0;
    for (int i = tid; i < D; i += MS_THREADS) {
      if (!(mu[i] > 0)) bad = 1;
      t += 0.5 * log(mu[i]) - 0.5 * bv[i] * bv[i] / mu[i];
      tl += 0.5 * log(mu[i]);
    }
    const double sum = ms_block_sum(t, red);
    const double sum_l = ms_block_sum(tl, red);
    const double nbad = ms_block_sum((double)bad, red);
    gc = nbad > 0 ? NAN : log((double)wf) - 0.5 * 1.8378770664093453 * D + sum;
    norm = log((double)wf) - 0.5 * 1.8378770664093453 * D + sum_l;
  } else {
    for (long long q = tid; q < S; q += MS_THREADS) C[q] = L[q];
    __syncthreads();
    if (!ms_block_chol(C, D, &s_fail)) {
      gc = NAN;
    } else {
      /* y = Lp^-1 b, |y|^2 = b' P^-1 b; log det P = 2 sum log Lp_ii; then
       * mu = Lp^-T y, the exact mean of the float parameters (one thread: O(D^2)) */
      if (tid == 0) {
        double quad = 0, logdet = 0;
        for (int i = 0; i < D; ++i) {
          double s = bv[i];
          for (int j = 0; j < i; ++j) s -= C[pidx(i, j)] * mu[j];
          mu[i] = s / C[pidx(i, i)]; /* mu is free now: y */
          quad += mu[i] * mu[i];
          logdet += 2.0 * log(C[pidx(i, i)]);
        }
        for (int i = D - 1; i >= 0; --i) { /* in place: mu[j > i] are already the mean's */
          double s = mu[i];
          for (int j = i + 1; j < D; ++j) s -= C[pidx(j, i)] * mu[j];
          mu[i] = s / C[pidx(i, i)];
        }
        red[0] = log((double)wf) - 0.5 * 1.8378770664093453 * D - 0.5 * (-logdet + quad);
        red[1] = log((double)wf) - 0.5 * 1.8378770664093453 * D + 0.5 * logdet;
      }
      __syncthreads();
      gc = red[0];
      norm = red[1];
      __syncthreads();
    }
  }
  if (!isfinite(gc)) {
    if (tid == 0) {
      MsStat st = {obj_old, obj_old, flags | MS_HOST_BAD, 0};
      stat[gi] = st;
    }
    return;
  }

  /* the new row, and the auxiliary function with it */
  v = 0;
  for (long long k = tid; k < E; k += MS_THREADS) {
    float r;
    if (k == 0) r = (float)gc;
    else if (k <= D) r = (float)bv[k - 1];
    else if (!full) r = -0.5f * (float)mu[k - 1 - D];
    else {
      int i, j;
      unpack_q(k - 1 - D, &i, &j);
      r = i == j ? -0.5f * (float)L[k - 1 - D] : -(float)L[k - 1 - D];
    }
    rn[k * G] = r;
    if (occ != 0) v += (double)r * a[k];
  }
  if (nnew)
    for (int i = tid; i < D; i += MS_THREADS) nnew[gi * (D + 1) + 1 + i] = full ? mu[i] : bv[i] / mu[i];
  const double obj_new = ms_block_sum(v, red);
  if (tid == 0) {
    wnew[gi] = wf;
    if (nnew) nnew[gi * (D + 1)] = norm; /* the exact form (cuda-gemm.h gg_model_exact_form) */
    MsStat st = {obj_old, obj_new, flags, s_floored};
    stat[gi] = st;
  }
}

/* dEparams (column layout) -> the GEMM rows (one block per Gaussian). */
__global__ void __launch_bounds__(128)
k_rows_to_gg(int D, const EPdf *__restrict__ epdf, const int *__restrict__ gpdf,
             const long long *__restrict__ gfirst, const float *__restrict__ ep,
             const long long *__restrict__ row_off, float *__restrict__ rows) {
  const long long gi = blockIdx.x;
  const int p = gpdf[gi];
  const EPdf e = epdf[p];
  const int g = (int)(gi - gfirst[p]);
  const long long E = 1 + D + (e.full ? (long long)D * (D + 1) / 2 : D);
  for (long long k = threadIdx.x; k < E; k += 128) rows[row_off[gi] + k] = ep[e.eoff + k * e.G + g];
}

/* ------------------------------------------------------------------ host */

void cuda_mstep_free(cuda_model *m) {
  /* dEnew and dWnew trade places with the model's dEparams and dWeights at
   * every M-step: all four are the pool's (cuda-pool.h; cuda_model_free
   * has synchronised the device) */
  gh_cuda_pool_free(m->dEnew); gh_cuda_pool_free(m->dWnew); cudaFree(m->dOccSum); cudaFree(m->dGstat); cudaFree(m->dGlist); cudaFree(m->dVfloor);
  cudaFree(m->dNormNew); cudaFree(m->dHash);
  m->dNormNew = NULL; m->dHash = NULL;
  free(m->hOccSum); free(m->hGstat); free(m->hGlist);
  m->dGlist = NULL; m->hGlist = NULL; m->dVfloor = NULL;
  m->dEnew = NULL; m->dWnew = NULL; m->dOccSum = NULL; m->dGstat = NULL; m->hOccSum = NULL; m->hGstat = NULL;
}

/* Largest dynamic shared memory a block may have on the current device. */
static size_t max_shared(void) {
  int dev = 0, v = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return (size_t)v;
}

int cuda_mstep(gh_backend *b, gh_dev_model *dm, const gh_est_opts *o, gh_est_stats *st) {
  if (((cuda_model *)dm)->host_m) { gh_set_error("the model is evaluated on the host (numerical contract)"); return 1; }
  (void)b;
  cuda_model *m = (cuda_model *)dm;
  const int D = m->D, P = m->P;
  if (o->shrink) { gh_set_error("covariance shrinkage runs on the host"); return 1; }
  if (P == 0 || m->Gt == 0) return 0;
  int anyfull = 0;
  for (int p = 0; p < P; ++p) anyfull |= m->hEpdf[p].full;
  const long long S = (long long)D * (D + 1) / 2, N = D + (D & 1);
  /* Two passes: every Gaussian without the Jacobi work (small shared
   * memory, the occupancy of before), then only the full-covariance ones
   * whose floor test failed, with it (when it fits the device). */
  const size_t shm = (size_t)((anyfull ? 2 * S : 0) + 2 * D) * sizeof(double);
  const long long r0j = 2 * S > N * N ? 2 * S : N * N;
  const size_t shm_j = (size_t)(r0j + N * N + 2 * N + 2 * D) * sizeof(double);
  if (shm > 48 * 1024) {
    if (shm > max_shared()) {
      gh_set_error("dimension %d is too large for the device M-step (%zu bytes of shared memory)", D, shm);
      return 1;
    }
  }
  const int jacobi = anyfull && shm_j <= max_shared();
  const size_t shm_max = jacobi && shm_j > shm ? shm_j : shm;
  if (shm_max > 48 * 1024) CK(cudaFuncSetAttribute(k_mstep, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm_max));
  if (!m->dEnew) {
    m->dEnew = (float *)gh_cuda_pool_alloc((m->esize + 1) * sizeof(float));
    m->dWnew = (float *)gh_cuda_pool_alloc((m->Gt + 1) * sizeof(float));
    CK(cudaMalloc((void **)&m->dOccSum, P * sizeof(double)));
    CK(cudaMalloc(&m->dGstat, m->Gt * sizeof(MsStat)));
    m->hOccSum = (double *)gh_malloc(P * sizeof(double));
    m->hGstat = gh_malloc(m->Gt * sizeof(MsStat));
  }
  if (jacobi && !m->dGlist) {
    CK(cudaMalloc((void **)&m->dGlist, m->Gt * sizeof(int)));
    m->hGlist = (int *)gh_malloc(m->Gt * sizeof(int));
  }
  MsOpts mo;
  mo.min_w = o->min_gaussian_weight;
  mo.min_occ_diag = o->min_gaussian_occupancy >= 0 ? o->min_gaussian_occupancy : 10.0;
  mo.min_occ_full = o->min_gaussian_occupancy >= 0 ? o->min_gaussian_occupancy : 100.0;
  mo.min_var = o->variance_floor >= 0 ? o->variance_floor : o->min_variance;
  mo.max_cond = o->max_condition;
  mo.remove = o->remove_low_count_gaussians;
  mo.jacobi = 0;
  mo.r0 = 2 * S;
  const double *nold = NULL; /* the GEMM rows' exact form: rewritten beside the rows */
  if (m->gg) {
    nold = gg_model_exact_form(m->gg);
    if (!m->dNormNew) CK(cudaMalloc((void **)&m->dNormNew, m->Gt * (D + 1) * sizeof(double)));
  }
  k_occ_sum<<<P, 256>>>(m->dEpdf, m->dAcc, D, m->dOccSum);
  CK(cudaGetLastError());
  const double *vfl = NULL;
  if (o->rel_variance_floor > 0) {
    if (!m->dVfloor) CK(cudaMalloc((void **)&m->dVfloor, (size_t)P * D * sizeof(double)));
    k_rel_vfloor<<<P, 128>>>(m->dEpdf, m->dAcc, D, m->dOccSum, o->rel_variance_floor, mo.min_var, m->dVfloor);
    CK(cudaGetLastError());
    vfl = m->dVfloor;
  }
  k_mstep<<<(unsigned)m->Gt, MS_THREADS, shm>>>(D, m->dEpdf, m->dGpdf, m->dGfirst, m->dAcc, m->dOccSum,
                                                 m->dEparams, m->dWeights, mo, m->dEnew, m->dWnew,
                                                 (MsStat *)m->dGstat, NULL, vfl, nold, m->dNormNew);
  CK_LAUNCH("M-step");
  CK(cudaMemcpy(m->hOccSum, m->dOccSum, P * sizeof(double), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(m->hGstat, m->dGstat, m->Gt * sizeof(MsStat), cudaMemcpyDeviceToHost));
  MsStat *hs = (MsStat *)m->hGstat;
  if (jacobi) { /* the second pass: the Gaussians whose floor test failed */
    int nf = 0, other = 0;
    for (long long gi = 0; gi < m->Gt; ++gi) {
      if (hs[gi].flags & (MS_HOST_REMOVE | MS_HOST_BAD)) other = 1;
      else if (hs[gi].flags & MS_HOST_FLOOR) m->hGlist[nf++] = (int)gi;
    }
    if (nf > 0 && !other) { /* (with a Gaussian to remove or a bad one the host M-step runs anyway) */
      mo.jacobi = 1;
      mo.r0 = r0j;
      CK(cudaMemcpy(m->dGlist, m->hGlist, nf * sizeof(int), cudaMemcpyHostToDevice));
      k_mstep<<<(unsigned)nf, MS_THREADS, shm_j>>>(D, m->dEpdf, m->dGpdf, m->dGfirst, m->dAcc, m->dOccSum,
                                                    m->dEparams, m->dWeights, mo, m->dEnew, m->dWnew,
                                                    (MsStat *)m->dGstat, m->dGlist, vfl, nold, m->dNormNew);
      CK_LAUNCH("M-step (eigenvalue floors)");
      CK(cudaMemcpy(m->hGstat, m->dGstat, m->Gt * sizeof(MsStat), cudaMemcpyDeviceToHost));
    }
  }
  /* declined: name the first Gaussian that decided it (a removal or an
   * unusable covariance before a floor, whose pass is then not run) */
  for (int pass = 0; pass < 2; ++pass)
    for (int p = 0; p < P; ++p) {
      if (!(m->hOccSum[p] > 0)) continue;
      for (long long gi = m->hGfirst[p]; gi < m->hGfirst[p + 1]; ++gi) {
        const int f = hs[gi].flags & (pass == 0 ? MS_HOST_REMOVE | MS_HOST_BAD : MS_HOST_FLOOR);
        if (!f) continue;
        gh_set_error("pdf %d, Gaussian %lld: %s", p, gi - m->hGfirst[p],
                     f & MS_HOST_REMOVE ? "too little data: to be removed"
                     : f & MS_HOST_BAD  ? "the re-estimated covariance is not usable"
                                        : "an eigenvalue of the covariance may need flooring and the device cannot "
                                          "(dimension too large for its shared memory, or Jacobi did not converge)");
        return 1;
      }
    }
  gh_est_stats loc;
  memset(&loc, 0, sizeof loc);
  for (int p = 0; p < P; ++p) {
    if (!(m->hOccSum[p] > 0)) { loc.num_pdfs_no_data++; continue; }
    double before = 0, after = 0;
    for (long long gi = m->hGfirst[p]; gi < m->hGfirst[p + 1]; ++gi) {
      const int f = hs[gi].flags;
      if (f & MS_NOT_UPDATED) loc.num_not_updated++;
      loc.num_floored += hs[gi].floored;
      before += hs[gi].obj_old;
      after += hs[gi].obj_new;
    }
    loc.objf_change += after - before;
    loc.count += m->hOccSum[p];
  }
  /* complete: the new parameters become the model's */
  float *t = m->dEparams; m->dEparams = m->dEnew; m->dEnew = t;
  t = m->dWeights; m->dWeights = m->dWnew; m->dWnew = t;
  if (m->gg) {
    const long long *roff = NULL;
    float *rows = gg_model_rows(m->gg, &roff);
    k_rows_to_gg<<<(unsigned)m->Gt, 128>>>(D, m->dEpdf, m->dGpdf, m->dGfirst, m->dEparams, roff, rows);
    CK_LAUNCH("M-step rows");
    CK(cudaMemcpy(gg_model_exact_form(m->gg), m->dNormNew, m->Gt * (D + 1) * sizeof(double), cudaMemcpyDeviceToDevice));
    gg_model_rows_changed(m->gg);
  }
  m->scoring_stale = 1;
  m->white_stale = 1; /* the batched path's float factors predate the new parameters (cuda-white.cu) */
  *st = loc;
  return 0;
}

/* splitmix64's finaliser (Steele, Lea and Flood 2014): a bijective mix of 64 bits. */
__device__ __forceinline__ unsigned long long hash_mix(unsigned long long x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27; x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* *out += sum over i < n of mix(mix(i + salt) ^ w[i]) mod 2^64 (the words
 * of one parameter array; integer atomics: the sum is exact in any order). */
__global__ void __launch_bounds__(256)
k_hash_words(const uint32_t *__restrict__ w, long long n, unsigned long long salt, unsigned long long *out) {
  unsigned long long h = 0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    h += hash_mix(hash_mix((unsigned long long)i + salt) ^ w[i]);
  for (int o = 16; o > 0; o >>= 1) h += __shfl_xor_sync(0xffffffffu, h, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, h);
}

int cuda_model_hash(gh_backend *b, gh_dev_model *dm, uint64_t *h) {
  (void)b;
  cuda_model *m = (cuda_model *)dm;
  if (m->host_m || m->orig) return 1;
  unsigned long long r = 0;
  if (!m->dHash) CK(cudaMalloc((void **)&m->dHash, sizeof r));
  unsigned long long *d = m->dHash;
  CK(cudaMemset(d, 0, sizeof r));
  /* the canonical parameters (dEparams: model_fetch's rows; dWeights) and
   * the shapes, salted apart */
  const long long n[2] = {m->esize, m->Gt};
  const float *a[2] = {m->dEparams, m->dWeights};
  for (int k = 0; k < 2; ++k)
    if (n[k] > 0) {
      const long long nb = (n[k] + 255) / 256;
      k_hash_words<<<(unsigned)(nb < 1024 ? nb : 1024), 256>>>((const uint32_t *)a[k], n[k],
                                                              (unsigned long long)(k + 1) << 56, d);
    }
  CK_LAUNCH("model hash");
  CK(cudaMemcpy(&r, d, sizeof r, cudaMemcpyDeviceToHost));
  r ^= (unsigned long long)m->P * 0x9e3779b97f4a7c15ULL ^ (unsigned long long)m->D << 40 ^ (unsigned long long)m->Gt;
  *h = r;
  return 0;
}

void cuda_model_fetch(gh_backend *b, gh_dev_model *dm, gh_gmm_set *s) {
  if (((cuda_model *)dm)->orig) { gh_model_fetch_copy(((cuda_model *)dm)->orig, s); return; }
  (void)b;
  cuda_model *m = (cuda_model *)dm;
  const int D = m->D;
  if (s->num_pdfs != m->P || s->dim != D)
    gh_die("model fetch: the set has %d pdfs of dimension %d, the device model %d of dimension %d", s->num_pdfs,
           s->dim, m->P, D);
  for (int p = 0; p < m->P; ++p)
    if (s->pdfs[p].num_gauss != m->hEpdf[p].G || (s->pdfs[p].type == GH_COV_FULL) != (m->hEpdf[p].full != 0))
      gh_die("model fetch: pdf %d has %d Gaussians (%s), the device model %d (%s)", p, s->pdfs[p].num_gauss,
             s->pdfs[p].type == GH_COV_FULL ? "full" : "diag", m->hEpdf[p].G, m->hEpdf[p].full ? "full" : "diag");
  float *he = (float *)gh_malloc((m->esize + 1) * sizeof(float));
  float *hw = (float *)gh_malloc((m->Gt + 1) * sizeof(float));
  CK(cudaMemcpy(he, m->dEparams, m->esize * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hw, m->dWeights, m->Gt * sizeof(float), cudaMemcpyDeviceToHost));
  for (int p = 0; p < m->P; ++p) {
    gh_gmm *g = &s->pdfs[p];
    const EPdf *e = &m->hEpdf[p];
    const int G = e->G;
    const float *ep = he + e->eoff;
    for (int k = 0; k < G; ++k) {
      g->weights[k] = hw[m->hGfirst[p] + k];
      gh_gemm_row_to_gmm(ep + k, G, g, k); /* element e of Gaussian k at ep[e * G + k] */
    }
  }
  free(he);
  free(hw);
}
