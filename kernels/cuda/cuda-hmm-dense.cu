/* cuda-hmm-dense.cu -- the dense batched path of the CUDA HMM ops
 * (cuda-hmm.cu): a batch on one dense graph, each time step of all its
 * sequences one matrix product (Liu 2009, cuHMM): a cuBLAS GEMM for the
 * forward, a max-plus product of our own for the Viterbi.
 *
 * Every CUDA call is checked; failures die with the call and CUDA's message.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda-hmm.h"

/* ------------------------------------------------- dense batched path
 * For a batch whose utterances all use ONE graph that is dense (S >= 64 and
 * A >= S^2/4: ergodic models, cuHMM's and the PyTorch peer's shapes), each
 * time step of all M sequences is one matrix product (Liu 2009, cuHMM:
 * "one time step of all sequences as a matrix product"): the rows of the
 * M x S matrix alpha (or delta) are the sequences, sorted by length, longest
 * first, so the sequences still running at frame t are the first M_t rows
 * and every product shrinks to them (no time padding).
 *   forward:  C = alpha_{t-1} A  (cuBLAS GEMM, A[i][j] = sum of exp(logp)
 *             over the arcs i -> j), then per row
 *             alpha_t = normalise(C o exp(ll_t - m_t)) with m_t the largest
 *             loglike among states with C > 0, log c_t = m_t + log sum,
 *             log P = sum_t log c_t + log sum_j alpha_{T-1}(j) exp(final_j)
 *             (Rabiner 1989 eqs. 91-92, scale factors summed in double).
 *             GH_HMM_SCALED: float products at the backend's precision
 *             (hmm_precision: fp32 FMAs, or 3xTF32 -- alpha and A split into
 *             TF32 big + small parts, the three products Ab ab + As ab + Ab as
 *             as ONE tensor-core GEMM over the stacked operands [Ab|As|Ab] and
 *             [ab; ab; as], depth 3S -- or one TF32 product); log domain:
 *             double GEMM (same result as the log-sum-exp recurrence up to
 *             rounding, ~1e-15 relative per step; states more than ~700 nats
 *             below the frame's best underflow to 0, as in the reference's
 *             scaled variant).
 *   Viterbi:  delta_t(j) = max_i (delta_{t-1}(i) + logA[i][j]) + ll_t(pdf j)
 *             (Rabiner eqs. 32-33), a max-plus product (own tiled kernel,
 *             k_dn_maxplus), in double with the reference's additions and
 *             tie rule (lowest source state), so scores and paths equal the
 *             CPU's bit for bit; backpointers [sum_t M_t x S] int on the
 *             device, one backtrace thread per sequence. */

#define VT 64             /* max-plus tile: VT sequences x VT states per block */
#define VK 16             /* max-plus depth step (source states per shared tile) */

/* One sequence (row) of the dense path: first loglike row in the batch
 * (= first path index), length, index in the batch. */
struct DRow {
  long long frame0;
  int T, u;
};

/* C[r][j] = exp(init[j]) for rows r < M: the predicted occupancy at t = 0. */
template <typename R>
__global__ void k_dn_start(R *__restrict__ C, int S, long long n, const float *__restrict__ init) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x)
    C[e] = (R)exp((double)init[e % S]);
}

/* x[0..n) = v. */
__global__ void k_dn_fill(double *__restrict__ x, long long n, double v) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x)
    x[e] = v;
}

/* A3 = [Ab | As | Ab]: the S x S matrix A (n = S^2 floats) split into its
 * TF32 big part Ab and rounded remainder As, stacked for the 3xTF32 product
 * (k_dn_norm's split rows are the other operand). */
__global__ void k_dn_split3(const float *__restrict__ A, float *__restrict__ A3, long long n) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
    const float big = gg_tf32_round(A[e]);
    A3[e] = big; A3[n + e] = gg_tf32_round(A[e] - big); A3[2 * n + e] = big;
  }
}

/* Scaling step of the dense forward, one block per running row r: alpha[r] =
 * normalise(C[r] o exp(ll_t - m)), logscale[r] += m + log c_t (double); at
 * the row's last frame loglik[u] = logscale + log sum_j alpha_j exp(final_j).
 * A row with no reachable state gets logscale -inf and alpha 0 from then on.
 * split (R = float, 3xTF32): alpha rows are 3S long and get [big, big,
 * small] of the normalised row (the stacked operand of the next product);
 * else S long. */
template <typename R>
__global__ void __launch_bounds__(256)
k_dn_norm(const R *__restrict__ C, R *__restrict__ alpha, int S, const DRow *__restrict__ rows,
          const float *__restrict__ ll, int P, const int *__restrict__ pdf, const float *__restrict__ fin, int t,
          double *__restrict__ logscale, double *__restrict__ loglik, int split) {
  __shared__ double red[32];
  const int r = blockIdx.x, tid = threadIdx.x, nt = blockDim.x;
  const DRow d = rows[r];
  const R *c = C + (size_t)r * S;
  R *a = alpha + (size_t)r * S * (split ? 3 : 1);
  const float *lt = ll + (d.frame0 + t) * P;
  const double ls = t == 0 ? 0.0 : logscale[r];
  double m = -INFINITY;
  for (int j = tid; j < S; j += nt)
    if (c[j] > (R)0) m = fmax(m, (double)lt[pdf[j]]);
  m = block_max(m, red);
  double ct = 0.0;
  if (ls > -INFINITY && m > -INFINITY) {
    for (int j = tid; j < S; j += nt) {
      const R v = c[j] > (R)0 ? c[j] * (R)exp((double)lt[pdf[j]] - m) : (R)0;
      a[j] = v;
      ct += (double)v;
    }
  }
  ct = block_sum(ct, red);
  if (!(ct > 0) || !(ls > -INFINITY)) {
    for (int j = tid; j < S * (split ? 3 : 1); j += nt) a[j] = (R)0;
    if (tid == 0) {
      logscale[r] = -INFINITY;
      if (t == d.T - 1) loglik[d.u] = -INFINITY;
    }
    return;
  }
  const R inv = (R)(1.0 / ct);
  double fs = 0.0;
  for (int j = tid; j < S; j += nt) {
    const R v = a[j] * inv;
    if (split) {
      const float big = gg_tf32_round((float)v);
      a[j] = (R)big; a[S + j] = (R)big; a[2 * S + j] = (R)gg_tf32_round((float)v - big);
    } else {
      a[j] = v;
    }
    if (t == d.T - 1) fs += (double)v * exp((double)fin[j]);
  }
  const double ls2 = ls + m + log(ct);
  if (t == d.T - 1) {
    fs = block_sum(fs, red);
    if (tid == 0) loglik[d.u] = fs > 0 ? ls2 + log(fs) : -INFINITY;
  }
  if (tid == 0) logscale[r] = ls2;
}

/* delta_0[r][j] = init_j + ll_0(pdf j) for rows r < M. */
__global__ void k_dn_vstart(double *__restrict__ delta, int S, int M, const DRow *__restrict__ rows,
                            const float *__restrict__ ll, int P, const int *__restrict__ pdf,
                            const float *__restrict__ init) {
  const long long n = (long long)M * S;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
    const int r = (int)(e / S), j = (int)(e % S);
    delta[e] = (double)init[j] + ll[rows[r].frame0 * P + pdf[j]];
  }
}

/* One Viterbi step of rows [0, Mt) as a max-plus product: dcur[r][j] =
 * max_i (dprev[r][i] + logA[i][j]) + ll_t(pdf j), bp[r][j] = the arg max
 * (lowest i on ties; -1 and -inf when no i is finite).  Block: 256 threads,
 * a VT x VT output tile (4 x 4 per thread), source states in steps of VK
 * through shared memory (both operands in double). */
__global__ void __launch_bounds__(256)
k_dn_maxplus(const double *__restrict__ dprev, double *__restrict__ dcur, const float *__restrict__ logA, int S,
             int Mt, const DRow *__restrict__ rows, const float *__restrict__ ll, int P,
             const int *__restrict__ pdf, int t, int *__restrict__ bp) {
  __shared__ double sa[VK][VT + 1];
  __shared__ double sb[VK][VT];
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const int r0 = blockIdx.y * VT, c0 = blockIdx.x * VT;
  double best[4][4];
  int arg[4][4];
#pragma unroll
  for (int q = 0; q < 4; ++q)
#pragma unroll
    for (int p = 0; p < 4; ++p) { best[q][p] = -INFINITY; arg[q][p] = -1; }
  for (int k0 = 0; k0 < S; k0 += VK) {
    for (int e = threadIdx.x; e < VK * VT; e += 256) {
      const int rr = e / VK, kk = e % VK, r = r0 + rr, i = k0 + kk;
      sa[kk][rr] = (r < Mt && i < S) ? dprev[(size_t)r * S + i] : -INFINITY;
    }
    for (int e = threadIdx.x; e < VK * VT; e += 256) {
      const int kk = e / VT, cc = e % VT, i = k0 + kk, j = c0 + cc;
      sb[kk][cc] = (i < S && j < S) ? (double)logA[(size_t)i * S + j] : -INFINITY;
    }
    __syncthreads();
#pragma unroll 4
    for (int kk = 0; kk < VK; ++kk) {
      double av[4], bv[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) av[q] = sa[kk][ty + 16 * q];
#pragma unroll
      for (int p = 0; p < 4; ++p) bv[p] = sb[kk][tx + 16 * p];
#pragma unroll
      for (int q = 0; q < 4; ++q)
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          const double v = av[q] + bv[p];
          if (v > best[q][p]) { best[q][p] = v; arg[q][p] = k0 + kk; }
        }
    }
    __syncthreads();
  }
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int r = r0 + ty + 16 * q;
    if (r >= Mt) continue;
    const float *lt = ll + (rows[r].frame0 + t) * P;
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      const int j = c0 + tx + 16 * p;
      if (j >= S) continue;
      const double m = best[q][p];
      dcur[(size_t)r * S + j] = m > -INFINITY ? m + (double)lt[pdf[j]] : -INFINITY;
      bp[(size_t)r * S + j] = m > -INFINITY ? arg[q][p] : -1;
    }
  }
}

/* Rows r0 + blockIdx.x that end at this frame: best final state
 * argmax_j delta(j) + final_j (lowest j on ties, -1 if none) and score[u]. */
__global__ void __launch_bounds__(256)
k_dn_vfinal(const double *__restrict__ delta, int S, int r0, const DRow *__restrict__ rows,
            const float *__restrict__ fin, int *__restrict__ bstate, double *__restrict__ score) {
  __shared__ double rv[32];
  __shared__ int ri[32];
  const int r = r0 + blockIdx.x, tid = threadIdx.x, nt = blockDim.x;
  const double *dr = delta + (size_t)r * S;
  double bv = -INFINITY;
  int bi = -1;
  for (int j = tid; j < S; j += nt) {
    const double v = dr[j] + (double)fin[j];
    if (v > bv) { bv = v; bi = j; }
  }
  warp_argmax(bv, bi);
  if ((tid & 31) == 0) { rv[tid >> 5] = bv; ri[tid >> 5] = bi; }
  __syncthreads();
  if (tid == 0) {
    bv = -INFINITY;
    bi = -1;
    for (int k = 0; k < (nt >> 5); ++k) arg_combine(bv, bi, rv[k], ri[k]);
    bstate[r] = bi;
    score[rows[r].u] = bi < 0 ? -INFINITY : bv;
  }
}

/* Backtrace, one thread per row: path[frame0 + t] from the backpointers of
 * step t at bp + boff[t] (row-major [M_t x S]); all -1 when no path. */
__global__ void k_dn_vback(const DRow *__restrict__ rows, int M, const int *__restrict__ bstate, const int *__restrict__ bp,
                           const long long *__restrict__ boff, int S, int *__restrict__ path) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= M) return;
  const DRow d = rows[r];
  int *pu = path + d.frame0;
  int q = bstate[r];
  if (q < 0) {
    for (int t = 0; t < d.T; ++t) pu[t] = -1;
    return;
  }
  for (int t = d.T - 1; t >= 0; --t) {
    pu[t] = q;
    if (t > 0) q = bp[boff[t] + (size_t)r * S + q];
  }
}

/* Which path a batch takes (doc/kernels.md "Dense graphs"): the dense
 * batched path when $GH_CUDA_HMM is not "sparse", every utterance uses the
 * same graph g, g is dense (built at upload: S >= DENSE_MIN_S and A >=
 * S^2/4, or $GH_CUDA_HMM=dense and S <= DENSE_MAX_S), no alpha output is
 * asked for, cuBLAS is loaded (forward) and the batch fits half the free
 * device memory in one piece; else -1 (the sparse per-utterance kernels). */
int gh_cuda_hmm_dense_graph(gh_dev_hmm *h, const gh_hmm_batch *bt, int op, const float *outs) {
  static const char *const words[] = {"sparse", "dense", "timepar", NULL}; /* GH_CUDA_HMM */
  if (gh_env_word("GH_CUDA_HMM", -1, words) == 0 || outs || bt->num_utts <= 0) return -1;
  const int g = bt->graph ? bt->graph[0] : 0;
  if (g < 0 || g >= h->num_graphs || !h->dLogA[g]) return -1;
  for (int32_t u = 1; u < bt->num_utts; ++u)
    if ((bt->graph ? bt->graph[u] : 0) != g) return -1;
  if (op != OP_VIT && !gg_available()) return -1;
  if (h->hG[g].num_pdfs > bt->num_pdfs) return -1; /* gh_cuda_hmm_run dies with the message */
  const size_t S = h->hG[g].S, B = bt->num_utts, F = bt->frame_off[B];
  size_t need = F * bt->num_pdfs * 4 + 2 * B * S * 8 + B * 64 + F * 4;
  if (op == OP_VIT) need += F * S * 4;
  size_t freeb = 0, totalb = 0;
  CK(cudaMemGetInfo(&freeb, &totalb));
  return need <= freeb / 2 ? g : -1;
}

/* The frames of the dense forward: per frame t one GEMM of the M_t running
 * rows (R = double: OP_FWD; float: OP_SCALED at precision prec, FP32,
 * TF32X3 or TF32, resolved) and one k_dn_norm. */
template <typename R>
static void dense_forward_steps(gh_dev_hmm *h, int g, int M, const int *Mt, int Tmax, const DRow *dRows, int P,
                                double *dLogscale, int prec) {
  const HGraph &G = h->hG[g];
  const int S = G.S, split = sizeof(R) == 4 && prec == GH_PREC_TF32X3;
  const int type = sizeof(R) == 8 ? GG_HMM_FP64 : prec == GH_PREC_FP32 ? GG_HMM_FP32 : GG_HMM_TF32;
  /* dRows holds 2 M S doubles: C [M x S] then alpha [M x S] (split: [M x 3S] floats) */
  R *C = (R *)h->s->dRows, *alpha = C + (size_t)M * S;
  const R *A = sizeof(R) == 8 ? (const R *)h->dA64[g] : (const R *)h->dA32[g];
  if (split && !h->dA3[g]) {
    const long long n = (long long)S * S;
    CK(cudaMalloc((void **)&h->dA3[g], 3 * n * sizeof(float)));
    k_dn_split3<<<(int)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096), 256>>>(h->dA32[g], h->dA3[g], n);
  }
  if (split) A = (const R *)h->dA3[g];
  const int *pdf = h->d.pdf + G.sbase;
  const float *init = h->d.init + G.sbase, *fin = h->d.fin + G.sbase;
  for (int t = 0; t < Tmax; ++t) {
    const int m = Mt[t];
    if (t == 0) {
      const long long n = (long long)m * S;
      k_dn_start<R><<<(int)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096), 256>>>(C, S, n, init);
    } else {
      /* column-major: C^T [S x m] = A^T [S x S] alpha^T [S x m]; row-major A is A^T column-major;
       * split: A^T -> [Ab^T As^T Ab^T] [S x 3S], alpha^T -> [ab; ab; as] [3S x m] */
      gg_hmm_gemm(type, S, m, split ? 3 * S : S, A, S, alpha, split ? 3 * S : S, C, S);
    }
    k_dn_norm<R><<<m, 256>>>(C, alpha, S, dRows, h->s->dLL, P, pdf, fin, t, dLogscale, h->s->dLoglik, split);
  }
  CK(cudaGetLastError());
}

/* The dense batched forward (op OP_FWD: double GEMM; OP_SCALED: float GEMM)
 * or Viterbi (OP_VIT) of a whole batch on graph g (see "dense batched path"
 * above).  vals: loglik / score [B] (natural log); path: [frames] (OP_VIT).
 * gh_die on a negative or too long utterance, or a CUDA/cuBLAS failure. */
void gh_cuda_hmm_dense_run(gh_dev_hmm *h, int g, const gh_hmm_batch *bt, int op, int prec, double *vals,
                           int32_t *path) {
  const int32_t B = bt->num_utts;
  const int P = bt->num_pdfs;
  const HGraph &G = h->hG[g];
  const int S = G.S;
  DRow *hr = (DRow *)gh_malloc(B * sizeof(DRow));
  UDesc *ord = (UDesc *)gh_malloc(B * sizeof(UDesc));
  for (int32_t u = 0; u < B; ++u) {
    const int64_t T = bt->frame_off[u + 1] - bt->frame_off[u];
    if (T < 0 || T > INT32_MAX) gh_die("HMM batch: utterance %d has %lld frames", u, (long long)T);
    ord[u].frame0 = bt->frame_off[u]; ord[u].T = (int)T; ord[u].u = u; ord[u].g = g; ord[u].state0 = 0; ord[u].pad = 0;
  }
  qsort(ord, B, sizeof(UDesc), cmp_udesc); /* longest first */
  int M = 0;
  for (int32_t r = 0; r < B; ++r) {
    hr[r].frame0 = ord[r].frame0; hr[r].T = ord[r].T; hr[r].u = ord[r].u;
    if (ord[r].T > 0) M = r + 1;
  }
  const int Tmax = B ? hr[0].T : 0;
  int *Mt = (int *)gh_malloc((Tmax + 1) * sizeof(int));
  long long *boff = (long long *)gh_malloc((Tmax + 1) * sizeof(long long));
  for (int t = 0, r = M; t < Tmax; ++t) {
    while (r > 0 && hr[r - 1].T <= t) --r;
    Mt[t] = r;
  }
  long long nbp = 0;
  for (int t = 0; t < Tmax; ++t) { boff[t] = nbp; if (t > 0) nbp += (long long)Mt[t] * S; }
  const int64_t F = bt->frame_off[B];
  hgrow_dev((void **)&h->s->dLL, &h->s->capLL, (size_t)F * P + 1, sizeof(float));
  if (F > 0) CK(cudaMemcpy(h->s->dLL, bt->loglikes, (size_t)F * P * sizeof(float), cudaMemcpyHostToDevice));
  hgrow_dev((void **)&h->s->dLoglik, &h->s->capLoglik, (size_t)B + 1, sizeof(double));
  hgrow_dev((void **)&h->s->dUd, &h->s->capUd, ((size_t)B * sizeof(DRow) + 3 * (size_t)B * 8 + (Tmax + 1) * 8) / sizeof(UDesc) + 2,
            sizeof(UDesc));
  DRow *dRows = (DRow *)h->s->dUd;
  double *dLs = (double *)(dRows + B);           /* logscale [B] (forward) */
  int *dBest = (int *)(dLs + B);                 /* best final state [B] (Viterbi) */
  long long *dBoff = (long long *)(dLs + 2 * B); /* [Tmax] */
  CK(cudaMemcpy(dRows, hr, B * sizeof(DRow), cudaMemcpyHostToDevice));
  if (Tmax > 0) CK(cudaMemcpy(dBoff, boff, Tmax * sizeof(long long), cudaMemcpyHostToDevice));
  hgrow_dev((void **)&h->s->dRows, &h->s->capRows, 2 * (size_t)(M ? M : 1) * S, sizeof(double));
  double *hv = (double *)gh_malloc((B + 1) * sizeof(double));
  for (int32_t r = M; r < B; ++r) hv[hr[r].u] = -INFINITY; /* T = 0 */
  cudaEvent_t ev0, ev1;
  CK(cudaEventCreate(&ev0));
  CK(cudaEventCreate(&ev1));
  CK(cudaEventRecord(ev0));
  if (M > 0 && op == OP_FWD) dense_forward_steps<double>(h, g, M, Mt, Tmax, dRows, P, dLs, prec);
  if (M > 0 && op == OP_SCALED) dense_forward_steps<float>(h, g, M, Mt, Tmax, dRows, P, dLs, prec);
  if (M > 0 && op == OP_VIT) {
    hgrow_dev((void **)&h->s->dBp, &h->s->capBp, (size_t)nbp + 1, sizeof(int));
    hgrow_dev((void **)&h->s->dPath, &h->s->capPath, (size_t)F + 1, sizeof(int));
    double *dp = h->s->dRows, *dc = dp + (size_t)M * S;
    const int *pdf = h->d.pdf + G.sbase;
    const float *init = h->d.init + G.sbase, *fin = h->d.fin + G.sbase;
    const long long n = (long long)M * S;
    k_dn_vstart<<<(int)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096), 256>>>(dp, S, M, dRows, h->s->dLL, P, pdf, init);
    for (int t = 0; t < Tmax; ++t) {
      if (t > 0) {
        dim3 grid((S + VT - 1) / VT, (Mt[t] + VT - 1) / VT);
        k_dn_maxplus<<<grid, 256>>>(dp, dc, h->dLogA[g], S, Mt[t], dRows, h->s->dLL, P, pdf, t, h->s->dBp + boff[t]);
        double *tmp = dp; dp = dc; dc = tmp;
      }
      const int ending = Mt[t] - (t + 1 < Tmax ? Mt[t + 1] : 0);
      if (ending > 0)
        k_dn_vfinal<<<ending, 256>>>(dp, S, Mt[t] - ending, dRows, fin, dBest, h->s->dLoglik);
    }
    k_dn_vback<<<(M + 127) / 128, 128>>>(dRows, M, dBest, h->s->dBp, dBoff, S, h->s->dPath);
    CK_LAUNCH("dense viterbi");
  }
  CK(cudaGetLastError());
  gh_cuda_hmm_kernel_time_end(ev0, ev1);
  if (M > 0) {
    double *tmp = (double *)gh_malloc(B * sizeof(double));
    CK(cudaMemcpy(tmp, h->s->dLoglik, B * sizeof(double), cudaMemcpyDeviceToHost));
    for (int32_t r = 0; r < M; ++r) hv[hr[r].u] = tmp[hr[r].u];
    free(tmp);
  }
  for (int32_t u = 0; u < B; ++u) vals[u] = hv[u];
  if (op == OP_VIT && F > 0 && M > 0)
    CK(cudaMemcpy(path, h->s->dPath, (size_t)F * sizeof(int32_t), cudaMemcpyDeviceToHost));
  CK(cudaEventDestroy(ev0));
  CK(cudaEventDestroy(ev1));
  free(hr); free(ord); free(Mt); free(boff); free(hv);
}

