/* cuda-hmm-timepar.cu -- the time-parallel path of the CUDA HMM ops
 * (cuda-hmm.cu): the log-domain forward, the Viterbi and forward-backward
 * of 1-8 long utterances on small graphs, their frames cut into chunks
 * whose transfer matrices are computed in parallel and chained (doc/kernels.md
 * "Long utterances").
 *
 * Every CUDA call is checked; failures die with the call and CUDA's message.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda-hmm.h"

/* ---------------------------- time-parallel forward and Viterbi (long utterances)
 *
 * One long utterance leaves the GPU idle in the general path's kernels (one block,
 * 1.5-5 us a frame whatever the GPU).  The forward recursion is linear:
 * alpha_t = (alpha_{t-1} A) o b_t, so the frames 1 .. T-1 are cut into K
 * chunks of L frames, every chunk computes in parallel its S x S transfer
 * matrix P_k = prod_t A diag(b_t) (Rabiner 1989 eq. 20 applied to every
 * start state at once), and one block chains them: alpha_{end of chunk k}
 * = alpha_{start} P_k.  The work is S^3 per frame instead of S^2 (so only
 * small graphs, S <= TP_MAX_S) but the depth is L + K instead of T.
 *
 * Numerics: in the LOG domain and in double, like k_hmm_forward<0> (every
 * entry a log-sum-exp over the S intermediate states), so nothing
 * underflows: a first version in the probability domain with a scale per
 * row lost up to 5e-3 of log P on left-to-right graphs, whose rows span
 * more than double's ~700 nats.  The log-domain forward (flags 0) and
 * the Viterbi (the same chunks in the max-plus semiring, below) take this
 * path; GH_HMM_SCALED keeps the scaled recursion of the reference.  Per
 * frame the chunk subtracts the frame's largest loglike over the graph's
 * states (summed into its offset) so that the values stay small. */

#define TP_MAX_S 64       /* graphs of at most this many states (logA and the chunk's matrix in shared memory) */
#define TP_MIN_T 1024     /* every utterance of the batch at least this long ... */
#define TP_MAX_UTTS 8     /* ... and at most this many of them (more fill the GPU with the general path) */
#define TP_MAX_CHUNKS 1024
#define TP_MIN_L 64       /* frames per chunk at least */

static long long g_tp_utts = 0;
/* Utterances done by the time-parallel forward so far (tests). */
extern "C" long long gh_cuda_hmm_timepar_utts(void) { return g_tp_utts; }

/* lA[i][j] = log sum of exp(logp) over the arcs i -> j of graph gi, or
 * with vmax their largest logp (the Viterbi's), -inf without an arc (lA
 * filled with -inf first), row-major S x S. */
__global__ void k_tp_dense(HArrays g, int gi, double *__restrict__ lA, int vmax) {
  const HGraph G = g.G[gi];
  const int *ioff = g.in_off + G.obase, *src = g.arc_src + G.abase;
  const double *ap = g.arc_p + G.abase;
  const float *lp = g.arc_logp + G.abase;
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < G.S; j += gridDim.x * blockDim.x) {
    if (vmax) {
      for (int a = ioff[j]; a < ioff[j + 1]; ++a) {
        double *e = lA + (size_t)src[a] * G.S + j;
        *e = fmax(*e, (double)lp[a]);
      }
      continue;
    }
    for (int a = ioff[j]; a < ioff[j + 1]; ++a) { /* sum parallel arcs in probability, then log */
      double *e = lA + (size_t)src[a] * G.S + j;
      *e = *e == -INFINITY ? ap[a] : *e + ap[a];
    }
    for (int i = 0; i < G.S; ++i) {
      double *e = lA + (size_t)i * G.S + j;
      *e = *e == -INFINITY ? -INFINITY : log(*e);
    }
  }
}

/* Chunk k = blockIdx.x of one utterance (loglikes llu [T x P]): frames
 * 1 + k L ... min(T, 1 + (k + 1) L) - 1.  Out: LP [K][S][S], LP_k[i][j] =
 * log P_k[i][j] - off_k (-inf: no path from i to j through the chunk;
 * VIT: the best path's log-probability, a max-plus product), and
 * off [K] (the sum of the frames' largest loglikes).  Block of 256 threads
 * (8 warps); warp w owns rows w, w + 8, ..., lane the columns lane and
 * lane + 32, so rows advance without block barriers.  Dynamic shared memory
 * 2 S^2 doubles (lA, then the chunk's matrix). */
template <int VIT>
__global__ void __launch_bounds__(256)
k_tp_chunk(const double *__restrict__ lA, int S, const float *__restrict__ llu, int P, const int *__restrict__ pdf,
           long long T, int L, double *__restrict__ LP, double *__restrict__ off) {
  extern __shared__ double sh[];
  double *As = sh, *Ps = sh + S * S;
  const int k = blockIdx.x, lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
  for (int e = threadIdx.x; e < S * S; e += blockDim.x) {
    As[e] = lA[e];
    Ps[e] = e / S == e % S ? 0.0 : -INFINITY;
  }
  __syncthreads();
  const long long t0 = 1 + (long long)k * L, t1 = t0 + L < T ? t0 + L : T;
  const int j0 = lane, j1 = lane + 32, ok0 = j0 < S, ok1 = j1 < S;
  const int c0 = ok0 ? j0 : 0, c1 = ok1 ? j1 : 0; /* columns read (valid even when unused) */
  int alive = 0xff;                               /* bit q: row w + q nw still has a finite entry */
  double moff = 0.0;
  for (long long t = t0; t < t1; ++t) {
    const float *lt = llu + t * P;
    const double l0 = ok0 ? (double)lt[pdf[j0]] : -INFINITY, l1 = ok1 ? (double)lt[pdf[j1]] : -INFINITY;
    const double m = warp_max(fmax(l0, l1));
    if (!(m > -INFINITY)) { alive = 0; moff = -INFINITY; break; } /* no state can emit: no path at all */
    moff += m;
#pragma unroll
    for (int q = 0; q < TP_MAX_S / 8; ++q) {
      const int r = w + q * nw;
      if (r >= S || !(alive >> q & 1)) continue; /* warp-uniform */
      double *pr = Ps + r * S;
      double m0 = -INFINITY, m1 = -INFINITY;
      for (int l = 0; l < S; ++l) {
        const double p = pr[l];
        m0 = fmax(m0, p + As[l * S + c0]);
        m1 = fmax(m1, p + As[l * S + c1]);
      }
      double s0 = 1.0, s1 = 1.0; /* VIT: max-plus, the max itself */
      if (!VIT && m0 > -INFINITY) {
        s0 = 0.0;
        for (int l = 0; l < S; ++l) s0 += exp(pr[l] + As[l * S + c0] - m0);
      }
      if (!VIT && m1 > -INFINITY) {
        s1 = 0.0;
        for (int l = 0; l < S; ++l) s1 += exp(pr[l] + As[l * S + c1] - m1);
      }
      const double v0 = ok0 && m0 > -INFINITY && l0 > -INFINITY ? m0 + log(s0) + (l0 - m) : -INFINITY;
      const double v1 = ok1 && m1 > -INFINITY && l1 > -INFINITY ? m1 + log(s1) + (l1 - m) : -INFINITY;
      const double vm = warp_max(fmax(v0, v1));
      __syncwarp();
      if (ok0) pr[j0] = v0;
      if (ok1) pr[j1] = v1;
      if (!(vm > -INFINITY)) alive &= ~(1 << q);
      __syncwarp();
    }
  }
  double *po = LP + (size_t)k * S * S;
#pragma unroll
  for (int q = 0; q < TP_MAX_S / 8; ++q) {
    const int r = w + q * nw;
    if (r >= S) continue;
    const int live = alive >> q & 1;
    if (ok0) po[r * S + j0] = live ? Ps[r * S + j0] : -INFINITY;
    if (ok1) po[r * S + j1] = live ? Ps[r * S + j1] : -INFINITY;
  }
  if (threadIdx.x == 0) off[k] = moff;
}

/* Chains the K chunks of one utterance (one block of TP_MAX_S threads,
 * thread j = state j), in the log domain: la = init + ll_0, then per chunk
 * la(j) <- logsumexp_i (la(i) + LP_k[i][j]) + off_k (kept relative to its
 * largest entry, which goes into log P), and at the end log P = logsumexp_j
 * (la(j) + final_j) (Rabiner eq. 21).  *out = log P (natural log) or -inf.
 * Ak: NULL, or [K + 1][S] the absolute log alpha of frame k L (the frame
 * before chunk k; Ak[K] = frame T - 1), written while log P is finite. */
__global__ void __launch_bounds__(TP_MAX_S)
k_tp_combine(const double *__restrict__ LP, const double *__restrict__ off, int K, int S,
             const float *__restrict__ llu, const int *__restrict__ pdf, const float *__restrict__ init,
             const float *__restrict__ fin, double *out, double *__restrict__ Ak) {
  __shared__ double red[32], la[TP_MAX_S];
  const int j = threadIdx.x, ok = j < S;
  const double x = ok ? (double)init[j] + (double)llu[pdf[j]] : -INFINITY;
  if (Ak && ok) Ak[j] = x;
  const double m = block_max(x, red);
  if (!(m > -INFINITY)) {
    if (j == 0) *out = -INFINITY;
    return;
  }
  if (ok) la[j] = x - m;
  double lp = m;
  __syncthreads();
  for (int k = 0; k < K; ++k) {
    const double *pk = LP + (size_t)k * S * S;
    double mx = -INFINITY, v = -INFINITY;
    if (ok) {
      for (int i = 0; i < S; ++i) mx = fmax(mx, la[i] + pk[(size_t)i * S + j]);
      if (mx > -INFINITY) {
        double s = 0.0;
        for (int i = 0; i < S; ++i) s += exp(la[i] + pk[(size_t)i * S + j] - mx);
        v = mx + log(s);
      }
    }
    const double vm = block_max(v, red); /* its barriers also end every thread's reads of la */
    if (!(vm > -INFINITY) || !(off[k] > -INFINITY)) { lp = -INFINITY; break; } /* block-uniform */
    if (ok) la[j] = v - vm;
    lp += vm + off[k];
    if (Ak && ok) Ak[(size_t)(k + 1) * S + j] = v - vm + lp;
    __syncthreads();
  }
  const double f = lp > -INFINITY && ok ? la[j] + (double)fin[j] : -INFINITY;
  const double fm = block_max(f, red);
  const double fs = block_sum(fm > -INFINITY && f > -INFINITY ? exp(f - fm) : 0.0, red);
  if (j == 0) *out = lp > -INFINITY && fm > -INFINITY ? lp + fm + log(fs) : -INFINITY;
}

/* The time-parallel Viterbi of one utterance (after k_tp_chunk<1>): pass A
 * chains the chunks' max-plus matrices into the delta vector at the end of
 * every chunk (k_tp_vchain), pass B reruns every chunk from its start
 * vector in parallel with back-pointers (k_tp_vpass; each chunk also maps
 * every end state to the state before its first frame), and the path is
 * traced through those maps (k_tp_vtrace, K steps) and then inside every
 * chunk in parallel (k_tp_vpath).  Additions, maxima and the tie rule
 * (lowest source state) are the reference's inside a chunk; the start
 * vectors come from the chained products, whose additions are associated
 * differently: scores agree to ~1e-15 relative, paths are the same except
 * on ties that close. */

/* One block of TP_MAX_S threads (thread j = state j): Dk[0] = init + ll_0,
 * Dk[k + 1](j) = max_i (Dk[k](i) + LP_k[i][j]) + off_k (absolute log
 * values, [K + 1][S]); res[0] = max_j Dk[K](j) + final_j (the score), res[1]
 * = its state (lowest j on ties; -1 and score -inf when there is no path). */
__global__ void __launch_bounds__(TP_MAX_S)
k_tp_vchain(const double *__restrict__ LP, const double *__restrict__ off, int K, int S,
            const float *__restrict__ llu, const int *__restrict__ pdf, const float *__restrict__ init,
            const float *__restrict__ fin, double *__restrict__ Dk, double *res) {
  __shared__ double d[TP_MAX_S], rv[2];
  __shared__ int ri[2];
  const int j = threadIdx.x, ok = j < S;
  double x = ok ? (double)init[j] + (double)llu[pdf[j]] : -INFINITY;
  if (ok) { d[j] = x; Dk[j] = x; }
  __syncthreads();
  for (int k = 0; k < K; ++k) {
    const double *pk = LP + (size_t)k * S * S;
    double m = -INFINITY;
    if (ok) {
      for (int i = 0; i < S; ++i) m = fmax(m, d[i] + pk[(size_t)i * S + j]);
      x = m > -INFINITY && off[k] > -INFINITY ? m + off[k] : -INFINITY;
      Dk[(size_t)(k + 1) * S + j] = x;
    }
    __syncthreads();
    if (ok) d[j] = x;
    __syncthreads();
  }
  double bv = ok ? x + (double)fin[j] : -INFINITY;
  int bi = ok && bv > -INFINITY ? j : -1;
  warp_argmax(bv, bi);
  if ((j & 31) == 0) { rv[j >> 5] = bv; ri[j >> 5] = bi; }
  __syncthreads();
  if (j == 0) {
    bv = -INFINITY; bi = -1;
    for (int w = 0; w < (int)(blockDim.x >> 5); ++w) arg_combine(bv, bi, rv[w], ri[w]);
    res[0] = bi >= 0 ? bv : -INFINITY;
    res[1] = bi;
  }
}

/* Pass B, chunk k = blockIdx.x (TP_MAX_S threads, thread j = state j;
 * dynamic shared memory S^2 + 2 S doubles): from Dk[k] (the delta of frame
 * t0 - 1), delta_t(j) = max_i (delta_{t-1}(i) + lA[i][j]) + ll_t(pdf j) for
 * the chunk's frames t0 .. t1 - 1, the reference's strict > over increasing
 * i (lowest source on ties); bp[t][j] = the arg max (255: none).  Then
 * jump[k][j] = the state at frame t0 - 1 that state j at frame t1 - 1
 * traces back to (255: none). */
__global__ void __launch_bounds__(TP_MAX_S)
k_tp_vpass(const double *__restrict__ lA, int S, const float *__restrict__ llu, int P, const int *__restrict__ pdf,
           long long T, int L, const double *__restrict__ Dk, unsigned char *__restrict__ bp,
           unsigned char *__restrict__ jump) {
  extern __shared__ double sh[];
  double *As = sh, *prev = sh + S * S, *cur = prev + S;
  const int k = blockIdx.x, j = threadIdx.x, ok = j < S;
  for (int e = j; e < S * S; e += blockDim.x) As[e] = lA[e];
  if (ok) prev[j] = Dk[(size_t)k * S + j];
  __syncthreads();
  const long long t0 = 1 + (long long)k * L, t1 = t0 + L < T ? t0 + L : T;
  for (long long t = t0; t < t1; ++t) {
    if (ok) {
      double m = -INFINITY;
      int arg = -1;
      for (int i = 0; i < S; ++i) {
        const double v = prev[i] + As[i * S + j];
        if (v > m) { m = v; arg = i; }
      }
      cur[j] = m > -INFINITY ? m + (double)llu[t * P + pdf[j]] : -INFINITY;
      bp[t * S + j] = m > -INFINITY ? (unsigned char)arg : 255;
    }
    __syncthreads();
    double *tmp = prev; prev = cur; cur = tmp;
  }
  if (ok) {
    int q = j;
    for (long long t = t1 - 1; t >= t0 && q != 255; --t) q = bp[t * S + q];
    jump[(size_t)k * S + j] = (unsigned char)q;
  }
}

/* One thread: the state at the last frame of every chunk, from the best
 * final state res[1] back through the chunks' jump maps; ends[k] (-1: no
 * path). */
__global__ void k_tp_vtrace(const unsigned char *__restrict__ jump, int K, int S, const double *res,
                            int *__restrict__ ends) {
  int q = (int)res[1];
  for (int k = K - 1; k >= 0; --k) {
    ends[k] = q;
    if (q >= 0) q = jump[(size_t)k * S + q];
    if (q == 255) q = -1;
  }
}

/* The path: thread k (of K, or one thread when K = 0) traces chunk k from
 * ends[k] through bp and writes its frames; the thread of chunk 0 also
 * writes frame 0.  -1 everywhere when there is no path. */
__global__ void k_tp_vpath(const unsigned char *__restrict__ bp, int K, int S, long long T, int L,
                           const int *__restrict__ ends, const double *res, int *__restrict__ path) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (K == 0) {
    if (k == 0) path[0] = (int)res[1];
    return;
  }
  if (k >= K) return;
  const long long t0 = 1 + (long long)k * L, t1 = t0 + L < T ? t0 + L : T;
  int q = ends[k];
  for (long long t = t1 - 1; t >= t0; --t) {
    path[t] = q;
    if (q >= 0) { q = bp[t * S + q]; if (q == 255) q = -1; }
  }
  if (k == 0) path[0] = q;
}

/* The time-parallel forward-backward of one utterance (after k_tp_chunk<0>
 * and k_tp_combine with Ak): k_tp_bchain chains the chunks' matrices from
 * the end into the log beta of the frame before every chunk, k_tp_fbpass
 * reruns every chunk in parallel -- the forward from Ak[k] (log alpha kept
 * in alphaD), then the backward from Bk[k + 1] with gamma and the arcs'
 * expected counts (Rabiner eqs. 23-27, 36-37, as the reference's hmm_fb) --
 * and k_tp_fbsum adds the chunks' counts in a fixed order, with the entries
 * gamma_0 and the exits, into the graph's stats block. */

/* One block of TP_MAX_S threads: Bk[K](i) = final_i (frame T - 1), Bk[k](i)
 * = logsumexp_j (LP_k[i][j] + Bk[k + 1](j)) + off_k, the absolute log beta
 * of frame k L; [K + 1][S]. */
__global__ void __launch_bounds__(TP_MAX_S)
k_tp_bchain(const double *__restrict__ LP, const double *__restrict__ off, int K, int S,
            const float *__restrict__ fin, double *__restrict__ Bk) {
  __shared__ double b[TP_MAX_S];
  const int i = threadIdx.x, ok = i < S;
  if (ok) { b[i] = (double)fin[i]; Bk[(size_t)K * S + i] = b[i]; }
  __syncthreads();
  for (int k = K - 1; k >= 0; --k) {
    const double *pk = LP + (size_t)k * S * S + (size_t)i * S;
    double v = -INFINITY;
    if (ok && off[k] > -INFINITY) {
      double m = -INFINITY;
      for (int j = 0; j < S; ++j) m = fmax(m, pk[j] + b[j]);
      if (m > -INFINITY) {
        double sum = 0.0;
        for (int j = 0; j < S; ++j) sum += exp(pk[j] + b[j] - m);
        v = m + log(sum) + off[k];
      }
    }
    __syncthreads();
    if (ok) { b[i] = v; Bk[(size_t)k * S + i] = v; }
    __syncthreads();
  }
}

/* Pass B of chunk k = blockIdx.x (TP_MAX_S threads, thread j = state j;
 * dynamic shared memory 2 S + A doubles): frames t0 .. t1 - 1 of the chunk.
 * Forward from Ak[k] over the graph's incoming arcs (the reference's
 * log-sum-exp), log alpha into alphaD [T][S]; backward from Bk[k + 1] over
 * the outgoing arcs: gamma_t(j) = exp(alpha_t(j) + beta_t(j) - log P) into
 * gamma (if not NULL), and for every arc a = i -> j the sum over the
 * chunk's frames t of exp(alpha_{t-1}(i) + logp_a + ll_t(j) + beta_t(j) -
 * log P) (alpha_{t0-1} = Ak[k]; thread j owns the arcs into j) into xiK
 * [K][A].  Nothing when log P is -inf. */
__global__ void __launch_bounds__(TP_MAX_S)
k_tp_fbpass(HArrays g, int gi, const float *__restrict__ llu, int P, long long T, int L,
            const double *__restrict__ Ak, const double *__restrict__ Bk, const double *__restrict__ logP,
            double *__restrict__ alphaD, float *__restrict__ gamma, double *__restrict__ xiK) {
  extern __shared__ double sh[];
  const HGraph G = g.G[gi];
  const int S = G.S, A = G.A, k = blockIdx.x, j = threadIdx.x, ok = j < S;
  const double LL = *logP;
  if (!(LL > -INFINITY)) return;
  double *prev = sh, *bn = sh + S, *xi = sh + 2 * S;
  const int *pdf = g.pdf + G.sbase, *ioff = g.in_off + G.obase, *src = g.arc_src + G.abase;
  const int *ooff = g.out_off + G.obase, *odst = g.out_dst + G.abase;
  const float *lp = g.arc_logp + G.abase, *olp = g.out_logp + G.abase;
  const long long t0 = 1 + (long long)k * L, t1 = t0 + L < T ? t0 + L : T;
  for (int a = j; a < A; a += blockDim.x) xi[a] = 0.0;
  if (ok) prev[j] = Ak[(size_t)k * S + j];
  __syncthreads();
  for (long long t = t0; t < t1; ++t) { /* forward */
    double x = -INFINITY;
    if (ok) {
      double m = -INFINITY;
      for (int a = ioff[j]; a < ioff[j + 1]; ++a) m = fmax(m, prev[src[a]] + (double)lp[a]);
      if (m > -INFINITY) {
        double sum = 0.0;
        for (int a = ioff[j]; a < ioff[j + 1]; ++a) sum += exp(prev[src[a]] + (double)lp[a] - m);
        x = m + log(sum) + (double)llu[t * P + pdf[j]];
      }
      alphaD[t * S + j] = x;
    }
    __syncthreads();
    if (ok) prev[j] = x;
    __syncthreads();
  }
  if (ok) bn[j] = Bk[(size_t)(k + 1) * S + j];
  __syncthreads();
  for (long long t = t1 - 1; t >= t0; --t) { /* backward: gamma_t, xi of t-1 -> t, beta_{t-1} */
    const double *ap = t > t0 ? alphaD + (t - 1) * S : Ak + (size_t)k * S;
    double bc = -INFINITY;
    if (ok) {
      if (gamma) gamma[t * S + j] = (float)exp(alphaD[t * S + j] + bn[j] - LL);
      const double ej = (double)llu[t * P + pdf[j]];
      for (int a = ioff[j]; a < ioff[j + 1]; ++a) {
        const double v = ap[src[a]] + (double)lp[a] + ej + bn[j] - LL;
        if (v > -INFINITY) xi[a] += exp(v);
      }
      double m = -INFINITY;
      for (int q = ooff[j]; q < ooff[j + 1]; ++q) {
        const int d = odst[q];
        m = fmax(m, (double)olp[q] + (double)llu[t * P + pdf[d]] + bn[d]);
      }
      if (m > -INFINITY) {
        double sum = 0.0;
        for (int q = ooff[j]; q < ooff[j + 1]; ++q) {
          const int d = odst[q];
          sum += exp((double)olp[q] + (double)llu[t * P + pdf[d]] + bn[d] - m);
        }
        bc = m + log(sum);
      }
    }
    __syncthreads();
    if (ok) bn[j] = bc;
    __syncthreads();
  }
  for (int a = j; a < A; a += blockDim.x) xiK[(size_t)k * A + a] = xi[a];
}

/* One block: the utterance's stats block st [2 S + A] (device) =
 * [gamma_0 | sum over chunks of xiK, in chunk order | exits
 * exp(alpha_{T-1}(j) + final_j - log P)], and gamma of frame 0; zeros and
 * no gamma when log P is -inf. */
__global__ void k_tp_fbsum(const double *__restrict__ xiK, int K, int S, int A, const double *__restrict__ Ak,
                           const double *__restrict__ Bk, const float *__restrict__ fin, const double *__restrict__ logP,
                           float *__restrict__ gamma, double *__restrict__ st) {
  const double LL = *logP;
  for (int e = threadIdx.x; e < 2 * S + A; e += blockDim.x) {
    double v = 0.0;
    if (LL > -INFINITY) {
      if (e < S) {
        v = exp(Ak[e] + Bk[e] - LL);
      } else if (e < S + A) {
        for (int k = 0; k < K; ++k) v += xiK[(size_t)k * A + (e - S)];
      } else {
        const int j = e - S - A;
        v = exp(Ak[(size_t)K * S + j] + (double)fin[j] - LL);
      }
    }
    st[e] = v;
    if (gamma && e < S) gamma[e] = LL > -INFINITY ? (float)v : 0.f;
  }
}

/* Whether a batch takes the time-parallel path: the log-domain forward
 * (op OP_FWD), the Viterbi (OP_VIT) or forward-backward (OP_FB, graphs of
 * 2 S + A <= 6144: k_tp_fbpass's shared memory), $GH_CUDA_HMM not "sparse"
 * or "dense", no alpha output, 1 to TP_MAX_UTTS utterances, each
 * on a valid graph of <= TP_MAX_S states with enough loglike columns and at
 * least TP_MIN_T frames ($GH_CUDA_HMM=timepar: any length, for tests). */
int gh_cuda_hmm_tp_batch(gh_dev_hmm *h, const gh_hmm_batch *bt, int op, const float *alpha) {
  static const char *const words[] = {"sparse", "dense", "timepar", NULL}; /* GH_CUDA_HMM */
  const int e = gh_env_word("GH_CUDA_HMM", -1, words);
  const int force = e == 2;
  if (e == 0 || e == 1 || alpha || (op != OP_FWD && op != OP_VIT && op != OP_FB)) return 0;
  if (bt->num_utts <= 0 || bt->num_utts > TP_MAX_UTTS) return 0;
  for (int32_t u = 0; u < bt->num_utts; ++u) {
    const int32_t gi = bt->graph ? bt->graph[u] : 0;
    if (gi < 0 || gi >= h->num_graphs) return 0; /* gh_cuda_hmm_run dies with the message */
    const HGraph &G = h->hG[gi];
    const int64_t T = bt->frame_off[u + 1] - bt->frame_off[u];
    if (G.S > TP_MAX_S || G.S < 1 || G.num_pdfs > bt->num_pdfs || T < 1 || T > INT32_MAX) return 0;
    if (op == OP_FB && 2 * G.S + G.A > 6144) return 0;
    if (T < (force ? 1 : TP_MIN_T)) return 0;
  }
  return 1;
}

/* The time-parallel forward (op OP_FWD: vals = log P), Viterbi (OP_VIT:
 * vals = score, path [frames] state indices, -1 throughout without a path)
 * or forward-backward (OP_FB: vals = log P, gamma NULL or [sum T S] float,
 * stats NULL or host doubles ADDED to, as hmm_fb) of every utterance of bt
 * (gh_cuda_hmm_tp_batch said yes), one after the other (each fills the GPU with its
 * chunks). */
void gh_cuda_hmm_tp_run(gh_dev_hmm *h, const gh_hmm_batch *bt, int op, double *vals, int32_t *path, float *gamma,
                        double *stats) {
  static int smem_set = 0;
  if (!smem_set) {
    CK(cudaFuncSetAttribute(k_tp_chunk<0>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            2 * TP_MAX_S * TP_MAX_S * (int)sizeof(double)));
    CK(cudaFuncSetAttribute(k_tp_chunk<1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            2 * TP_MAX_S * TP_MAX_S * (int)sizeof(double)));
    CK(cudaFuncSetAttribute(k_tp_vpass, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (TP_MAX_S * TP_MAX_S + 2 * TP_MAX_S) * (int)sizeof(double)));
    smem_set = 1;
  }
  const int P = bt->num_pdfs, vit = op == OP_VIT, fb = op == OP_FB;
  long long soff = 0; /* the utterance's first gamma element */
  cudaEvent_t ev0, ev1;
  CK(cudaEventCreate(&ev0));
  CK(cudaEventCreate(&ev1));
  hgrow_dev((void **)&h->s->dLoglik, &h->s->capLoglik, 2, sizeof(double));
  for (int32_t u = 0; u < bt->num_utts; ++u) {
    const int gi = bt->graph ? bt->graph[u] : 0;
    const HGraph &G = h->hG[gi];
    const int S = G.S;
    const long long T = bt->frame_off[u + 1] - bt->frame_off[u];
    double **lA = vit ? h->dAtpV : h->dAtp;
    if (!lA[gi]) {
      CK(cudaMalloc((void **)&lA[gi], (size_t)S * S * sizeof(double)));
      k_dn_fill<<<(S * S + 255) / 256, 256>>>(lA[gi], (long long)S * S, -INFINITY);
      k_tp_dense<<<(S + 63) / 64, 64>>>(h->d, gi, lA[gi], vit);
      CK_LAUNCH("time-parallel HMM: dense A");
    }
    long long L = (T - 1 + TP_MAX_CHUNKS - 1) / TP_MAX_CHUNKS;
    if (L < TP_MIN_L) L = TP_MIN_L;
    const int K = (int)((T - 1 + L - 1) / L);
    hgrow_dev((void **)&h->s->dLL, &h->s->capLL, (size_t)T * P + 1, sizeof(float));
    CK(cudaMemcpy(h->s->dLL, bt->loglikes + bt->frame_off[u] * P, (size_t)T * P * sizeof(float),
                  cudaMemcpyHostToDevice));
    /* doubles: LP [K S^2], off [K], (Viterbi) Dk [(K + 1) S], (fb) Ak and Bk [(K + 1) S], xiK [K A],
     * st [2 S + A]; bytes: bp [T S], jump [K S], ints ends [K] */
    const int A = G.A;
    const size_t extra = vit ? (size_t)(K + 1) * S : fb ? 2 * (size_t)(K + 1) * S + (size_t)K * A + 2 * S + A : 0;
    hgrow_dev((void **)&h->s->dRows, &h->s->capRows, (size_t)K * (S * S + 1) + extra + 1, sizeof(double));
    double *LP = h->s->dRows, *off = LP + (size_t)K * S * S, *Dk = off + K;
    double *Ak = Dk, *Bk = Ak + (size_t)(K + 1) * S, *xiK = Bk + (size_t)(K + 1) * S, *st = xiK + (size_t)K * A;
    const int *pdf = h->d.pdf + G.sbase;
    const float *init = h->d.init + G.sbase, *fin = h->d.fin + G.sbase;
    CK(cudaEventRecord(ev0));
    if (!vit) {
      if (K > 0) k_tp_chunk<0><<<K, 256, 2 * (size_t)S * S * sizeof(double)>>>(lA[gi], S, h->s->dLL, P, pdf, T, (int)L,
                                                                               LP, off);
      k_tp_combine<<<1, TP_MAX_S>>>(LP, off, K, S, h->s->dLL, pdf, init, fin, h->s->dLoglik, fb ? Ak : NULL);
      CK_LAUNCH("time-parallel forward");
      if (fb) {
        float *dg = NULL;
        if (gamma) {
          hgrow_dev((void **)&h->s->dState, &h->s->capState, (size_t)T * S + 1, sizeof(float));
          dg = h->s->dState;
        }
        hgrow_dev((void **)&h->s->dAlphaD, &h->s->capAlphaD, (size_t)T * S + 1, sizeof(double));
        k_tp_bchain<<<1, TP_MAX_S>>>(LP, off, K, S, fin, Bk);
        if (K > 0)
          k_tp_fbpass<<<K, TP_MAX_S, (2 * (size_t)S + A) * sizeof(double)>>>(h->d, gi, h->s->dLL, P, T, (int)L, Ak, Bk,
                                                                           h->s->dLoglik, h->s->dAlphaD, dg, xiK);
        k_tp_fbsum<<<1, 256>>>(xiK, K, S, A, Ak, Bk, fin, h->s->dLoglik, dg, st);
        CK_LAUNCH("time-parallel forward-backward");
      }
    } else {
      const size_t nbp = (size_t)T * S + (size_t)K * S, nint = (nbp + 3) / 4 + K + 1;
      hgrow_dev((void **)&h->s->dBp, &h->s->capBp, nint, sizeof(int));
      hgrow_dev((void **)&h->s->dPath, &h->s->capPath, (size_t)T + 1, sizeof(int));
      unsigned char *bp = (unsigned char *)h->s->dBp, *jump = bp + (size_t)T * S;
      int *ends = h->s->dBp + (nbp + 3) / 4;
      if (K > 0) k_tp_chunk<1><<<K, 256, 2 * (size_t)S * S * sizeof(double)>>>(lA[gi], S, h->s->dLL, P, pdf, T, (int)L,
                                                                               LP, off);
      k_tp_vchain<<<1, TP_MAX_S>>>(LP, off, K, S, h->s->dLL, pdf, init, fin, Dk, h->s->dLoglik);
      if (K > 0) {
        k_tp_vpass<<<K, TP_MAX_S, ((size_t)S * S + 2 * S) * sizeof(double)>>>(lA[gi], S, h->s->dLL, P, pdf, T, (int)L, Dk,
                                                                           bp, jump);
        k_tp_vtrace<<<1, 1>>>(jump, K, S, h->s->dLoglik, ends);
      }
      k_tp_vpath<<<K > 0 ? (K + 127) / 128 : 1, 128>>>(bp, K, S, T, (int)L, ends, h->s->dLoglik, h->s->dPath);
      CK_LAUNCH("time-parallel viterbi");
    }
    gh_cuda_hmm_kernel_time_end(ev0, ev1);
    CK(cudaMemcpy(&vals[u], h->s->dLoglik, sizeof(double), cudaMemcpyDeviceToHost));
    if (vit) CK(cudaMemcpy(path + bt->frame_off[u], h->s->dPath, (size_t)T * sizeof(int32_t), cudaMemcpyDeviceToHost));
    if (fb && gamma) {
      if (vals[u] > -INFINITY)
        CK(cudaMemcpy(gamma + soff, h->s->dState, (size_t)T * S * sizeof(float), cudaMemcpyDeviceToHost));
      else
        memset(gamma + soff, 0, (size_t)T * S * sizeof(float));
    }
    if (fb && stats && vals[u] > -INFINITY) {
      double *hs = (double *)gh_malloc((2 * (size_t)S + A) * sizeof(double));
      CK(cudaMemcpy(hs, st, (2 * (size_t)S + A) * sizeof(double), cudaMemcpyDeviceToHost));
      for (int e = 0; e < 2 * S + A; ++e) stats[G.stats_off + e] += hs[e];
      free(hs);
    }
    soff += T * S;
    ++g_tp_utts;
  }
  CK(cudaEventDestroy(ev0));
  CK(cudaEventDestroy(ev1));
}
