/* mstep.cl -- the EM M-step on the device for the opencl backend (host side:
 * opencl-mstep.c; the CUDA twin and the arithmetic: kernels/cuda/cuda-mstep.cu,
 * doc/kernels.md "M-step on the device").  Double precision (cl_khr_fp64),
 * one work-group of MS_WG work-items per Gaussian row, the factorisations in
 * local memory; no atomics on floating values (two runs, same bits).
 *
 * Layouts (gmm.cl): parameter rows W [rows x K] float, w_g = [gconst, b, q]
 * with q_ii = -0.5 P_ii, q_ij = -P_ij (full, packed i(i+1)/2 + j) or
 * q_i = -0.5 / var_i (diag); accumulator rows acc [rows x K] double,
 * [occupancy, sum x, sum x x' packed / sum x^2], uncentred. */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define MS_WG 128
#define MS_NOT_UPDATED 1
#define MS_HOST_REMOVE 2
#define MS_HOST_FLOOR 4
#define MS_HOST_BAD 8

static long ms_pidx(int i, int j) { return (long)i * (i + 1) / 2 + j; }

static void ms_unpack(long q, int *i, int *j) {
  int r = (int)((sqrt(8.0 * (double)q + 1.0) - 1.0) * 0.5);
  while ((long)r * (r + 1) / 2 > q) --r;
  while ((long)(r + 1) * (r + 2) / 2 <= q) ++r;
  *i = r;
  *j = (int)(q - (long)r * (r + 1) / 2);
}

static double ms_sum(double v, __local double *red) {
  const int t = get_local_id(0);
  red[t] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = MS_WG / 2; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const double r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

static double ms_max(double v, __local double *red) {
  const int t = get_local_id(0);
  red[t] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = MS_WG / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = fmax(red[t], red[t + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const double r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

/* In-place Cholesky factor of the packed A by all work-items when active;
 * returns 1 when active and every pivot was > 0.  Every work-item meets the
 * same barriers whatever the data (no early exit: PoCL and other OpenCL
 * compilers need barriers in uniform control flow). */
static int ms_chol(__local double *A, int D, int active, __local int *fail) {
  const int t = get_local_id(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (t == 0) *fail = !active;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int k = 0; k < D; ++k) {
    if (t == 0 && !*fail) {
      const double d = A[ms_pidx(k, k)];
      if (!(d > 0)) *fail = 1;
      else A[ms_pidx(k, k)] = sqrt(d);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int go = !*fail;
    if (go) {
      const double dk = A[ms_pidx(k, k)];
      for (int i = k + 1 + t; i < D; i += MS_WG) A[ms_pidx(i, k)] /= dk;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (go) {
      const int n = D - k - 1;
      const long T = (long)n * (n + 1) / 2;
      for (long q = t; q < T; q += MS_WG) {
        int ii, jj;
        ms_unpack(q, &ii, &jj);
        const int i = k + 1 + ii, j = k + 1 + jj;
        A[ms_pidx(i, j)] -= A[ms_pidx(i, k)] * A[ms_pidx(j, k)];
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const int ok = active && !*fail;
  barrier(CLK_LOCAL_MEM_FENCE);
  return ok;
}

/* Pair k of round r of the round-robin ordering of N (even) indices, p < q
 * (kernels/jacobi-eig.h gh_jacobi_pair). */
static void ms_pair(int N, int r, int k, int *p, int *q) {
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

#define MS_JACOBI_MAX_SWEEPS 40 /* kernels/jacobi-eig.h GH_JACOBI_MAX_SWEEPS */

/* The eigenvalue floor of the full covariance of accumulator row a (mean
 * mu), by parallel-ordered cyclic Jacobi: the CUDA kernel's ms_block_jacobi
 * (kernels/cuda/cuda-mstep.cu) step by step, whose plain-C reference is
 * kernels/jacobi-eig.c gh_cov_floor_jacobi.  A [N x N] overlays the C / L
 * region, V [N x N] and rot [2 N] are the Jacobi work.  When active: on
 * return C (packed, = A's first doubles) is V diag(max(w, f)) V' if some
 * eigenvalue w_k < f = max(min_var, max |w| / max_cond), else C from the
 * accumulators; returns the number floored or -1 (not converged).
 * Inactive work-groups meet the same barriers (empty sweeps) and get 0. */
static int ms_jacobi(__local double *A, __local double *V, __local double *rot, __global const double *a,
                     double occ, __local const double *mu, int D, double min_var, double max_cond, int active,
                     __local int *flag, __local double *red) {
  const int N = D + (D & 1), P = N / 2, t = get_local_id(0);
  __local double *rc = rot, *rs = rot + P, *rt = rs + P, *rf = rt + P;
  if (active)
    for (int e = t; e < N * N; e += MS_WG) {
      const int i = e / N, j = e % N;
      double v = 0;
      if (i < D && j < D) {
        const int r = i > j ? i : j, c = i > j ? j : i;
        v = a[1 + D + ms_pidx(r, c)] / occ - mu[r] * mu[c];
      }
      A[e] = v;
      V[e] = i == j ? 1.0 : 0.0;
    }
  /* A fixed number of sweeps, the barriers outside every data-dependent
   * branch (PoCL's work-group compiler takes minutes over a barrier loop
   * with a data-dependent exit); after convergence the sweeps are empty. */
  int sweeps = -1, done = !active;
  for (int sw = 0; sw < MS_JACOBI_MAX_SWEEPS; ++sw) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t == 0) *flag = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = 0; r < N - 1; ++r) {
      if (!done)
        for (int k = t; k < P; k += MS_WG) {
          int p, q;
          ms_pair(N, r, k, &p, &q);
          const double apq = A[p * N + q], app = A[p * N + p], aqq = A[q * N + q];
          if (!(fabs(apq) > 2.220446049250313e-16 * sqrt(fabs(app * aqq)))) {
            rc[k] = 1.0; rs[k] = 0.0; rt[k] = 0.0; rf[k] = 0.0;
          } else {
            const double tau = (aqq - app) / (2.0 * apq);
            const double tt = fabs(tau) > 1e150 ? 0.5 / tau : (tau >= 0 ? 1.0 : -1.0) / (fabs(tau) + sqrt(1.0 + tau * tau));
            const double c = 1.0 / sqrt(1.0 + tt * tt);
            rc[k] = c; rs[k] = tt * c; rt[k] = tt; rf[k] = 1.0;
            *flag = 1;
          }
        }
      barrier(CLK_LOCAL_MEM_FENCE);
      if (!done) {
        const int nb = P * (P + 1) / 2;
        for (int blk = t; blk < nb; blk += MS_WG) {
          int b, ai;
          ms_unpack(blk, &b, &ai);
          int p1, q1, p2, q2;
          ms_pair(N, r, ai, &p1, &q1);
          ms_pair(N, r, b, &p2, &q2);
          if (ai == b) {
            if (rf[ai] != 0.0) {
              const double apq = A[p1 * N + q1];
              A[p1 * N + p1] -= rt[ai] * apq;
              A[q1 * N + q1] += rt[ai] * apq;
              A[p1 * N + q1] = 0.0;
              A[q1 * N + p1] = 0.0;
            }
          } else {
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
        }
        for (int e = t; e < N * P; e += MS_WG) {
          const int i = e / P, k = e % P;
          int p, q;
          ms_pair(N, r, k, &p, &q);
          const double vp = V[i * N + p], vq = V[i * N + q];
          V[i * N + p] = rc[k] * vp - rs[k] * vq;
          V[i * N + q] = rs[k] * vp + rc[k] * vq;
        }
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    const int any = *flag;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!done && !any) {
      done = 1;
      sweeps = sw + 1;
    }
  }
  /* the floor (Kaldi SpMatrix::ApplyFloor at max(min_var, max|w| / max_cond)) */
  __local double *w = rot;
  if (active && sweeps > 0)
    for (int k = t; k < D; k += MS_WG) w[k] = A[k * N + k];
  barrier(CLK_LOCAL_MEM_FENCE);
  double mx = 0;
  if (active && sweeps > 0)
    for (int k = t; k < D; k += MS_WG) mx = fmax(mx, fabs(w[k]));
  const double maxabs = ms_max(mx, red);
  double fl = min_var;
  if (max_cond > 0 && maxabs / max_cond > fl) fl = maxabs / max_cond;
  double cnt = 0;
  if (active && sweeps > 0)
    for (int k = t; k < D; k += MS_WG)
      if (w[k] < fl) { w[k] = fl; cnt += 1; }
  const int n = (int)ms_sum(cnt, red);
  const long S = (long)D * (D + 1) / 2;
  __local double *C = A;
  if (active && sweeps > 0)
    for (long q = t; q < S; q += MS_WG) {
      int i, j;
      ms_unpack(q, &i, &j);
      double s;
      if (n == 0) {
        s = a[1 + D + q] / occ - mu[i] * mu[j];
      } else {
        s = 0;
        for (int k = 0; k < D; ++k) s += V[i * N + k] * w[k] * V[j * N + k];
      }
      C[q] = s;
    }
  barrier(CLK_LOCAL_MEM_FENCE);
  return !active ? 0 : sweeps < 0 ? -1 : n;
}

/* occ_sum[p] = the total occupancy of pdf p (one work-group per pdf, fixed
 * order); rows of p: wrow[p] .. + gcnt[p] of its type's accumulators. */
__kernel __attribute__((reqd_work_group_size(MS_WG, 1, 1))) void gh_mstep_occ(
    int Kd, int Kf, __global const double *acc_d, __global const double *acc_f, __global const int *ptype,
    __global const int *wrow, __global const int *gcnt, __global double *occ_sum) {
  __local double red[MS_WG];
  const int p = get_group_id(0), t = get_local_id(0);
  const int full = ptype[p], K = full ? Kf : Kd;
  __global const double *acc = full ? acc_f : acc_d;
  double s = 0;
  for (int g = t; g < gcnt[p]; g += MS_WG) s += acc[(long)(wrow[p] + g) * K];
  s = ms_sum(s, red);
  if (t == 0) occ_sum[p] = s;
}

/* Results of row r: obj[2 r] / obj[2 r + 1] = auxiliary function before /
 * after (total, natural log), flags[2 r] = MS_* flags, flags[2 r + 1] =
 * variances floored.  Options: min_w, min_occ, min_var, max_cond, remove. */

/* --rel-variance-floor (diagonal pdfs; lib/gmm/gmm-est.c gh_gmm_update, the
 * CUDA twin k_rel_vfloor): vfl[p D + d] = max(min_var, rel (m2 - m1^2)),
 * m1, m2 the pdf's data mean and second moment of dimension d (its rows'
 * statistics summed in index order over the pdf's total occupancy); one
 * work-group per pdf, work-items over d, no contraction. */
__kernel __attribute__((reqd_work_group_size(MS_WG, 1, 1))) void gh_mstep_relfloor(
    int D, __global const double *acc_d, __global const int *ptype, __global const int *wrow,
    __global const int *gcnt, __global const double *occ_sum, double rel, double min_var, __global double *vfl) {
#pragma OPENCL FP_CONTRACT OFF
  const int p = get_group_id(0), K = 1 + 2 * D;
  for (int d = get_local_id(0); d < D; d += MS_WG) {
    double f = min_var;
    if (!ptype[p]) {
      double m1 = 0, m2 = 0;
      for (int g = 0; g < gcnt[p]; ++g) {
        __global const double *a = acc_d + (long)(wrow[p] + g) * K;
        m1 += a[1 + d];
        m2 += a[1 + D + d];
      }
      m1 /= occ_sum[p];
      m2 /= occ_sum[p];
      const double r = rel * (m2 - m1 * m1);
      if (r > f) f = r;
    }
    vfl[(long)p * D + d] = f;
  }
}

/* Diagonal rows: one work-item per row, sequential over the D dimensions
 * (no barriers).  use_vfl: the floors of --rel-variance-floor, vfl [P x D]. */
__kernel void gh_mstep_diag(int rows, int D, __global const float *W, __global const double *acc,
                            __global const int *gpdf, __global const int *gcnt, __global const double *occ_sum,
                            __global const float *wold, double min_w, double min_occ, double min_var, int remove,
                            __global float *Wn, __global float *wn, __global double *obj, __global int *flags_out,
                            __global const double *vfl, int use_vfl) {
  const int row = get_global_id(0);
  if (row >= rows) return;
  const int K = 1 + 2 * D, p = gpdf[row], G = gcnt[p];
  __global const double *a = acc + (long)row * K;
  __global const float *ro = W + (long)row * K;
  __global float *rn = Wn + (long)row * K;
  const double occ = a[0], tot = occ_sum[p];
  double old = 0;
  if (occ != 0)
    for (int k = 0; k < K; ++k) old += (double)ro[k] * a[k];
  obj[2 * row] = old;
  obj[2 * row + 1] = old;
  flags_out[2 * row] = 0;
  flags_out[2 * row + 1] = 0;
  if (!(tot > 0)) { /* pdf without data: unchanged */
    for (int k = 0; k < K; ++k) rn[k] = ro[k];
    wn[row] = wold[row];
    obj[2 * row + 1] = 0; obj[2 * row] = 0;
    return;
  }
  const double prob = occ / tot;
  const int update = occ > min_occ && prob > min_w;
  if (!update && remove && G > 1) { flags_out[2 * row] = MS_HOST_REMOVE; return; }
  const float wf = (float)(update ? prob : fmax(prob, min_w));
  double gc = log((double)wf) - 0.5 * 1.8378770664093453 * D;
  int floored = 0, bad = 0;
  for (int i = 0; i < D; ++i) {
    double ivf, bf;
    if (update) {
      const double m = a[1 + i] / occ;
      double var = a[1 + D + i] / occ - m * m;
      const double vf = use_vfl ? vfl[(long)p * D + i] : min_var;
      if (var < vf) { var = vf; ++floored; }
      const double iv = 1.0 / var;
      ivf = (double)(float)iv;
      bf = (double)(float)(m * iv);
    } else {
      ivf = -2.0 * (double)ro[1 + D + i];
      bf = (double)ro[1 + i];
    }
    if (!(ivf > 0)) bad = 1;
    gc += 0.5 * log(ivf) - 0.5 * bf * bf / ivf;
    rn[1 + i] = (float)bf;
    rn[1 + D + i] = -0.5f * (float)ivf;
  }
  if (bad || !isfinite(gc)) { flags_out[2 * row] = MS_HOST_BAD; return; }
  rn[0] = (float)gc;
  wn[row] = wf;
  double nw = 0;
  if (occ != 0)
    for (int k = 0; k < K; ++k) nw += (double)rn[k] * a[k];
  obj[2 * row + 1] = nw;
  flags_out[2 * row] = update ? 0 : MS_NOT_UPDATED;
  flags_out[2 * row + 1] = floored;
}

/* Full-covariance rows: one work-group of MS_WG per row (use_list: per row
 * glist[group], the second pass over the rows whose floor test failed);
 * sh: dynamic local memory of r0 (C and L, D(D+1); the Jacobi A [N x N]
 * overlays them, N = D + (D & 1)) + 2 D (mu, b) + with jacobi N^2 + 2 N
 * (V, rotations) doubles.  jacobi = 0: an eigenvalue to floor is flagged
 * MS_HOST_FLOOR (for the second pass, or the host).  Every
 * work-item meets every barrier: the cases (no data, kept, updated,
 * declined) only guard the work between them. */
__kernel __attribute__((reqd_work_group_size(MS_WG, 1, 1))) void gh_mstep_full(
    int D, __global const float *W, __global const double *acc, __global const int *gpdf,
    __global const int *gcnt, __global const double *occ_sum, __global const float *wold, double min_w,
    double min_occ, double min_var, double max_cond, int remove, __global float *Wn, __global float *wn,
    __global double *obj, __global int *flags_out, int jacobi, int r0, __global const int *glist, int use_list,
    __local double *sh) {
  __local double red[MS_WG];
  __local int s_fail;
  const int t = get_local_id(0);
  const int row = use_list ? glist[get_group_id(0)] : (int)get_group_id(0); /* list: the second pass's rows */
  const int p = gpdf[row], G = gcnt[p];
  const long S = (long)D * (D + 1) / 2;
  const int K = 1 + D + (int)S;
  __global const double *a = acc + (long)row * K;
  __global const float *ro = W + (long)row * K;
  __global float *rn = Wn + (long)row * K;
  const int N = D + (D & 1);
  __local double *C = sh, *L = sh + S, *mu = sh + r0, *bv = mu + D;
  __local double *JV = bv + D, *Jrot = JV + N * N; /* with jacobi */
  const double occ = a[0], tot = occ_sum[p];

  double v = 0;
  if (occ != 0)
    for (int k = t; k < K; k += MS_WG) v += (double)ro[k] * a[k];
  const double obj_old = ms_sum(v, red);
  /* mode: 0 no data (copy), 1 update, 2 keep (weight only), 3 declined */
  const double prob = tot > 0 ? occ / tot : 0.0;
  const int update = occ > min_occ && prob > min_w;
  int mode = !(tot > 0) ? 0 : update ? 1 : (remove && G > 1) ? 3 : 2;
  int flags = mode == 3 ? MS_HOST_REMOVE : mode == 2 ? MS_NOT_UPDATED : 0;
  const float wf = (float)(update ? prob : fmax(prob, min_w));

  if (mode == 1)
    for (int i = t; i < D; i += MS_WG) mu[i] = a[1 + i] / occ;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (long q = t; q < S; q += MS_WG) {
    int i, j;
    ms_unpack(q, &i, &j);
    if (mode == 1) C[q] = a[1 + D + q] / occ - mu[i] * mu[j];
    else if (mode == 2) { const double r = (double)ro[1 + D + q]; L[q] = i == j ? -2.0 * r : -r; }
  }
  if (mode == 2)
    for (int i = t; i < D; i += MS_WG) bv[i] = (double)ro[1 + i];
  barrier(CLK_LOCAL_MEM_FENCE);
  /* the floor test (Gershgorin bound of max |eig|), the inverse */
  double gm = 0;
  if (mode == 1)
    for (int i = t; i < D; i += MS_WG) {
      double r = 0;
      for (int j = 0; j < D; ++j) r += fabs(C[i >= j ? ms_pidx(i, j) : ms_pidx(j, i)]);
      gm = fmax(gm, r);
    }
  const double gmax = ms_max(gm, red);
  double f = min_var;
  if (max_cond > 0 && gmax / max_cond > f) f = gmax / max_cond;
  if (mode == 1)
    for (long q = t; q < S; q += MS_WG) {
      int i, j;
      ms_unpack(q, &i, &j);
      L[q] = C[q] - (i == j ? f : 0.0);
    }
  const int ok1 = ms_chol(L, D, mode == 1 && f > 0, &s_fail);
  const int need = mode == 1 && !ok1; /* some eigenvalue may be below the floor */
  int nfl = 0;
  if (jacobi) nfl = ms_jacobi(C, JV, Jrot, a, occ, mu, D, min_var, max_cond, need, &s_fail, red);
  if (need && (!jacobi || nfl < 0)) { mode = 3; flags |= MS_HOST_FLOOR; }
  if (mode == 1)
    for (long q = t; q < S; q += MS_WG) L[q] = C[q];
  const int ok2 = ms_chol(L, D, mode == 1, &s_fail);
  if (mode == 1 && !ok2) { mode = 3; flags |= MS_HOST_BAD; }
  if (mode == 1)
    for (int j = t; j < D; j += MS_WG) { /* C := L^-1, column j */
      C[ms_pidx(j, j)] = 1.0 / L[ms_pidx(j, j)];
      for (int i = j + 1; i < D; ++i) {
        double s = 0;
        for (int k = j; k < i; ++k) s += L[ms_pidx(i, k)] * C[ms_pidx(k, j)];
        C[ms_pidx(i, j)] = -s / L[ms_pidx(i, i)];
      }
    }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (mode == 1)
    for (long q = t; q < S; q += MS_WG) { /* L := P = L^-T L^-1 */
      int i, j;
      ms_unpack(q, &i, &j);
      double s = 0;
      for (int k = i; k < D; ++k) s += C[ms_pidx(k, i)] * C[ms_pidx(k, j)];
      L[q] = s;
    }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (mode == 1)
    for (int i = t; i < D; i += MS_WG) { /* b = P mu, rounded to float */
      double s = 0;
      for (int j = 0; j < D; ++j) s += L[i >= j ? ms_pidx(i, j) : ms_pidx(j, i)] * mu[j];
      bv[i] = (double)(float)s;
    }
  barrier(CLK_LOCAL_MEM_FENCE);
  /* gconst from the float parameters (lib/gmm/gmm.c gconst_one) */
  const int live = mode == 1 || mode == 2;
  if (live)
    for (long q = t; q < S; q += MS_WG) {
      if (mode == 1) L[q] = (double)(float)L[q]; /* P as the model stores it */
      C[q] = L[q];
    }
  const int ok3 = ms_chol(C, D, live, &s_fail);
  if (t == 0) {
    double gc = NAN;
    if (ok3) {
      double quad = 0, logdet = 0;
      for (int i = 0; i < D; ++i) {
        double s = bv[i];
        for (int j = 0; j < i; ++j) s -= C[ms_pidx(i, j)] * mu[j];
        mu[i] = s / C[ms_pidx(i, i)]; /* y = Lp^-1 b (mu is free now) */
        quad += mu[i] * mu[i];
        logdet += 2.0 * log(C[ms_pidx(i, i)]);
      }
      gc = log((double)wf) - 0.5 * 1.8378770664093453 * D - 0.5 * (-logdet + quad);
    }
    red[0] = gc;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const double gc = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (live && !isfinite(gc)) { mode = 3; flags |= MS_HOST_BAD; }
  v = 0;
  for (int k = t; k < K; k += MS_WG) {
    float r = ro[k];
    if (mode == 1 || mode == 2) {
      if (k == 0) r = (float)gc;
      else if (k <= D) r = (float)bv[k - 1];
      else {
        int i, j;
        ms_unpack(k - 1 - D, &i, &j);
        r = i == j ? -0.5f * (float)L[k - 1 - D] : -(float)L[k - 1 - D];
      }
    }
    rn[k] = r;
    if (occ != 0) v += (double)r * a[k];
  }
  const double obj_new = ms_sum(v, red);
  if (t == 0) {
    wn[row] = mode == 0 ? wold[row] : wf;
    obj[2 * row] = mode == 0 ? 0.0 : obj_old;
    obj[2 * row + 1] = mode == 0 ? 0.0 : mode == 3 ? obj_old : obj_new;
    flags_out[2 * row] = flags;
    flags_out[2 * row + 1] = mode == 1 && need ? nfl : 0;
  }
}
#endif
