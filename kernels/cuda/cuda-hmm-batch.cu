/* cuda-hmm-batch.cu -- the general path of the CUDA HMM ops (cuda-hmm.cu):
 * forward (log domain and Rabiner-scaled), Viterbi and forward-backward over
 * a batch of utterances, and their driver gh_cuda_hmm_run (chunks that fit the
 * device memory; the plan of hmm_estep_pairs' repeated batches).
 *
 * Mapping (Liu 2009, cuHMM, Sec. 3: one time step of all sequences and
 * all states in parallel, each state a log-sum-exp / max over its incoming
 * arcs): ONE THREAD BLOCK PER UTTERANCE, threads over the utterance's states
 * (thread k owns states k, k + blockDim, ...), the block loops over the
 * utterance's frames with one __syncthreads per frame; all utterances of a
 * batch run concurrently (one launch per pass), so the grid is the cuHMM
 * "slice" (utterances x states) and time is the sequential loop inside the
 * kernel.  No time padding (a block stops at its own T; blocks are issued
 * longest first) and no state padding beyond rounding the block to whole
 * warps (< 32 idle lanes per utterance and frame when S <= 1024).  States
 * with more than HEAVY incoming (forward, Viterbi) or outgoing (backward)
 * arcs -- a word loop's entry and exit -- are done by a whole warp, lanes
 * over the arcs, with warp-shuffle max/sum (listed per graph at upload), so
 * a frame's time is not that of the longest serial arc loop.  Graphs of <= 16
 * states (forward-backward, Viterbi) take the packed kernels instead: a group
 * of 4-16 lanes per utterance, several utterances per block ("packed small
 * graphs" below).
 *
 * Numerics: the recurrences keep alpha / delta / beta rows in DOUBLE (shared
 * memory when S <= HMM_SMEM_S, else a global scratch row pair per block), so
 * |log P| ~ 1e6 keeps ~1e-10 absolute precision with no renormalisation;
 * exp/log are double too (float exps moved log P by ~2e-4 nats over
 * 12,000 frames), at one double exp per arc and one double log per state
 * and frame.  Viterbi uses only double additions and the reference's tie
 * rule, so its scores and paths equal the CPU's bit for bit.
 * Forward-backward keeps the whole alpha trellis in device memory in double
 * (8 bytes per state and frame: float alpha relative to the frame's max
 * lost 2^-13 nats at gaps of ~1000 nats, 1.2e-4 in gamma where the states
 * of highest alpha have no way to the end); gamma is written as float.
 * The scaled forward (Rabiner eqs. 91-92) is computed in double like the
 * reference.
 *
 * Every CUDA call is checked; failures die with the call and CUDA's message.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda-hmm.h"

#define HMM_SMEM_S 2048  /* double rows in shared memory up to this many states */
#define HMM_SMEM_A 1536  /* xi accumulators (double) in shared memory up to this many arcs */
#define KP 4             /* emissions prefetched one frame ahead per thread */
#define SUM_BATCH 32     /* k_hmm_stats_sum: per-utterance blocks loaded at once */
#define SUM_TILE 1024    /* ... and their offsets staged in shared memory at once */
#define RED 96           /* doubles of reduction scratch at the start of shared memory */

/* Row storage of a block: shared memory after the reduction scratch, or the
 * block's pair of rows in the global scratch grow (stride 2 growS). */
__device__ __forceinline__ double *block_rows(double *sh, double *grow, int growS) {
  return growS ? grow + (size_t)blockIdx.x * 2 * growS : sh + RED;
}

/* One state's step of the recursions, shared by the one-block-per-utterance
 * kernels and the packed ones (the same operations in the same order, so the
 * same bits).  fwd_state: log alpha_t(j) (eq. 20) = log-sum-exp over j's
 * incoming arcs a0 .. a1 - 1 (sources src, log-probs lp) of the previous
 * row, + the emission e; -inf when no arc has a finite value. */
__device__ __forceinline__ double fwd_state(const double *prev, const int *__restrict__ src,
                                            const float *__restrict__ lp, int a0, int a1, float e) {
  double m = -INFINITY;
  for (int a = a0; a < a1; ++a) m = fmax(m, prev[src[a]] + (double)lp[a]);
  double x = -INFINITY;
  if (m > -INFINITY) {
    double s = 0.0;
    for (int a = a0; a < a1; ++a) s += exp(prev[src[a]] + (double)lp[a] - m);
    x = m + log(s) + (double)e;
  }
  return x;
}
/* vit_state: delta_t(j) without the emission (eq. 33) = the max over j's
 * incoming arcs of the previous row + log-prob, its source in *arg (ties:
 * the lowest source, as the reference; -1 when none is finite). */
__device__ __forceinline__ double vit_state(const double *prev, const int *__restrict__ src,
                                            const float *__restrict__ lp, int a0, int a1, int *arg) {
  double m = -INFINITY;
  int g = -1;
  for (int a = a0; a < a1; ++a) {
    const int i = src[a];
    const double v = prev[i] + (double)lp[a];
    if (v > m || (v == m && g >= 0 && i < g)) { m = v; g = i; }
  }
  *arg = g;
  return m;
}
/* bwd_state: log beta_t(i) (eq. 24) = log-sum-exp over i's outgoing arcs
 * k0 .. k1 - 1 (destinations odst, log-probs olp) of wn = w_{t+1} (emission
 * + beta); with acc, each arc's xi_t = exp(a + olp + wn - L) (a = log
 * alpha_t(i), L = log P) added to acc[oarc[k]]. */
__device__ __forceinline__ double bwd_state(const double *wn, const int *__restrict__ odst,
                                            const float *__restrict__ olp, const int *__restrict__ oarc, int k0,
                                            int k1, double a, double L, double *acc) {
  double m = -INFINITY;
  for (int k = k0; k < k1; ++k) {
    const double v = (double)olp[k] + wn[odst[k]];
    m = fmax(m, v);
    if (acc) {
      const double x = a + v - L;
      if (x > -INFINITY) acc[oarc[k]] += exp(x);
    }
  }
  double beta = -INFINITY;
  if (m > -INFINITY) {
    double s = 0.0;
    for (int k = k0; k < k1; ++k) s += exp((double)olp[k] + wn[odst[k]] - m);
    beta = m + log(s);
  }
  return beta;
}

/* The Viterbi path's end, for the n threads r = 0 .. n - 1 of one
 * utterance: no complete path (bi < 0): every frame's state -1 and the score
 * -inf; else the score bv and the backtrace from state bi through the
 * back-pointers bpu [T x S] by thread 0 (one dependent load per frame). */
__device__ __forceinline__ void vit_finish(double bv, int bi, long long T, int S, const int *bpu, int *pu,
                                           double *score, int r, int n) {
  if (bi < 0) {
    for (long long t = r; t < T; t += n) pu[t] = -1;
    if (r == 0) *score = -INFINITY;
    return;
  }
  if (r == 0) {
    *score = bv;
    int q = bi;
    for (long long t = T - 1; t >= 0; --t) {
      pu[t] = q;
      if (t > 0) q = bpu[t * S + q];
    }
  }
}

/* Log-domain forward (Rabiner eqs. 19-21; cuHMM's forward kernel), one block
 * per utterance ud[blockIdx.x].  ll: the chunk's loglikes [frames x P]
 * (natural log).  MODE 0 (hmm_forward): alpha = NULL or the chunk's output
 * [sum T S] float, log alpha_t(j).  MODE 1 (first pass of hmm_fb):
 * alphad [sum T S] double receives log alpha_t(j) for the backward pass
 * (double: a float relative to the frame's max loses 2^-13 nats at gaps of
 * ~1000 nats, which shows in gamma where the states of highest alpha have
 * no way to the end, e.g. at the end of a forced alignment).
 * loglik[u] = log P(O) (natural log), -inf for T = 0 or no complete path. */
template <int MODE>
__global__ void __launch_bounds__(1024)
k_hmm_forward(HArrays g, const UDesc *__restrict__ ud, const float *__restrict__ ll, int P,
              double *grow, int growS, float *alpha, double *alphad, double *loglik) {
  extern __shared__ double sh[];
  const UDesc d = ud[blockIdx.x];
  const HGraph G = g.G[d.g];
  const int S = G.S, nt = blockDim.x, tid = threadIdx.x, lane = tid & 31, w = tid >> 5, nw = nt >> 5;
  const long long T = d.T;
  if (T == 0) {
    if (tid == 0) loglik[d.u] = -INFINITY;
    return;
  }
  double *red = sh;
  double *prev = block_rows(sh, grow, growS), *cur = prev + S;
  const int *pdf = g.pdf + G.sbase, *ioff = g.in_off + G.obase, *src = g.arc_src + G.abase;
  const float *init = g.init + G.sbase, *fin = g.fin + G.sbase, *lp = g.arc_logp + G.abase;
  const int *heavy = g.heavy + G.hbase;
  const float *llu = ll + d.frame0 * P;
  float *al = alpha ? alpha + d.state0 : NULL;
  double *ad = alphad ? alphad + d.state0 : NULL;

  for (int j = tid; j < S; j += nt) {
    const double x = (double)init[j] + llu[pdf[j]];
    prev[j] = x;
    if (MODE == 0 && al) al[j] = (float)x;
    if (MODE == 1) ad[j] = x;
  }
  float e[KP], nx[KP];
#pragma unroll
  for (int k = 0; k < KP; ++k) {
    const int j = tid + k * nt;
    e[k] = (T > 1 && j < S) ? llu[P + pdf[j]] : 0.f;
  }
  __syncthreads();
  for (long long t = 1; t < T; ++t) {
    const float *lt = llu + t * P;
#pragma unroll
    for (int k = 0; k < KP; ++k) {
      const int j = tid + k * nt;
      nx[k] = (t + 1 < T && j < S) ? lt[P + pdf[j]] : 0.f;
    }
    auto body = [&](int j, float ej) {
      const int a0 = ioff[j], a1 = ioff[j + 1];
      if (a1 - a0 > HEAVY) return; /* warp pass below */
      const double x = fwd_state(prev, src, lp, a0, a1, ej);
      cur[j] = x;
      if (MODE == 0 && al) al[t * S + j] = (float)x;
      if (MODE == 1) ad[t * S + j] = x;
    };
#pragma unroll
    for (int k = 0; k < KP; ++k) {
      const int j = tid + k * nt;
      if (j < S) body(j, e[k]);
    }
    for (int j = tid + KP * nt; j < S; j += nt) body(j, lt[pdf[j]]);
    /* heavy states (e.g. a word loop's entry): one warp each, lanes over the arcs */
    for (int h = w; h < G.nhi; h += nw) {
      const int j = heavy[h], a0 = ioff[j], a1 = ioff[j + 1];
      double m = -INFINITY;
      for (int a = a0 + lane; a < a1; a += 32) m = fmax(m, prev[src[a]] + (double)lp[a]);
      m = warp_max(m);
      double x = -INFINITY;
      if (m > -INFINITY) {
        double s = 0.0;
        for (int a = a0 + lane; a < a1; a += 32) s += exp(prev[src[a]] + (double)lp[a] - m);
        s = warp_sum(s);
        x = m + log(s) + (double)lt[pdf[j]];
      }
      if (lane == 0) {
        cur[j] = x;
        if (MODE == 0 && al) al[t * S + j] = (float)x;
        if (MODE == 1) ad[t * S + j] = x;
      }
    }
    __syncthreads();
    double *tmp = prev; prev = cur; cur = tmp;
#pragma unroll
    for (int k = 0; k < KP; ++k) e[k] = nx[k];
  }
  /* log P(O) = logsumexp_j alpha_{T-1}(j) + final_j (eq. 21), in double */
  double v = -INFINITY;
  for (int j = tid; j < S; j += nt) v = fmax(v, prev[j] + (double)fin[j]);
  const double M = block_max(v, red);
  double s = 0.0;
  if (M > -INFINITY)
    for (int j = tid; j < S; j += nt) s += exp(prev[j] + (double)fin[j] - M);
  s = block_sum(s, red);
  if (tid == 0) loglik[d.u] = M > -INFINITY ? M + log(s) : -INFINITY;
}

/* Rabiner-scaled forward (eqs. 91-92), in double as the reference: the
 * predicted occupancy of each state, m_t = largest emission among states
 * with non-zero prediction (block max), scale c_t (block sum), alpha^ =
 * normalised row; log P = sum_t (m_t + log c_t) + log sum_j alpha^_{T-1}(j)
 * e^{final_j}.  alpha: NULL or [sum T S] float, log alpha (absolute); all
 * -inf when the utterance has no complete path. */
__global__ void __launch_bounds__(1024)
k_hmm_scaled(HArrays g, const UDesc *__restrict__ ud, const float *__restrict__ ll, int P,
             double *grow, int growS, float *alpha, double *loglik) {
  extern __shared__ double sh[];
  const UDesc d = ud[blockIdx.x];
  const HGraph G = g.G[d.g];
  const int S = G.S, nt = blockDim.x, tid = threadIdx.x;
  const long long T = d.T;
  if (T == 0) {
    if (tid == 0) loglik[d.u] = -INFINITY;
    return;
  }
  double *red = sh;
  double *prev = block_rows(sh, grow, growS), *cur = prev + S;
  const int *pdf = g.pdf + G.sbase, *ioff = g.in_off + G.obase, *src = g.arc_src + G.abase;
  const float *init = g.init + G.sbase, *fin = g.fin + G.sbase;
  const double *ap = g.arc_p + G.abase;
  const float *llu = ll + d.frame0 * P;
  float *al = alpha ? alpha + d.state0 : NULL;
  double logscale = 0.0, L = -INFINITY;
  bool dead = false;
  for (long long t = 0; t < T; ++t) {
    const float *lt = llu + t * P;
    double m = -INFINITY;
    for (int j = tid; j < S; j += nt) {
      double c;
      if (t == 0) {
        c = exp((double)init[j]);
      } else {
        c = 0.0;
        for (int a = ioff[j]; a < ioff[j + 1]; ++a) c += prev[src[a]] * ap[a];
      }
      cur[j] = c;
      if (c > 0 && (double)lt[pdf[j]] > m) m = lt[pdf[j]];
    }
    m = block_max(m, red);
    if (m == -INFINITY) { dead = true; break; }
    double s = 0.0;
    for (int j = tid; j < S; j += nt) {
      const double c = cur[j] > 0 ? cur[j] * exp((double)lt[pdf[j]] - m) : 0.0;
      cur[j] = c;
      s += c;
    }
    const double ct = block_sum(s, red);
    if (!(ct > 0)) { dead = true; break; }
    logscale += m + log(ct);
    for (int j = tid; j < S; j += nt) {
      const double p = cur[j] / ct;
      cur[j] = p;
      if (al) al[t * S + j] = p > 0 ? (float)(log(p) + logscale) : -INFINITY;
    }
    __syncthreads();
    double *tmp = prev; prev = cur; cur = tmp;
  }
  if (!dead) {
    double f = 0.0;
    for (int j = tid; j < S; j += nt) f += prev[j] * exp((double)fin[j]);
    f = block_sum(f, red);
    L = f > 0 ? logscale + log(f) : -INFINITY;
  }
  if (L == -INFINITY && al)
    for (long long i = tid; i < T * S; i += nt) al[i] = -INFINITY;
  if (tid == 0) loglik[d.u] = L;
}

/* Viterbi (Rabiner eqs. 30-35; cuHMM's Viterbi kernel): delta rows in
 * double, back-pointers bp [sum T S] int32 in device memory, ties to the
 * lowest source state (as the reference); then the block's argmax of
 * delta_{T-1}(j) + final_j and a backtrace on the device by thread 0.
 * path: the chunk's [frames] (state per frame, all -1 without a complete
 * path); score[u]: the best path's log-probability (natural log). */
__global__ void __launch_bounds__(1024)
k_hmm_viterbi(HArrays g, const UDesc *__restrict__ ud, const float *__restrict__ ll, int P,
              double *grow, int growS, int *bp, int *path, double *score) {
  extern __shared__ double sh[];
  const UDesc d = ud[blockIdx.x];
  const HGraph G = g.G[d.g];
  const int S = G.S, nt = blockDim.x, tid = threadIdx.x, lane = tid & 31, w = tid >> 5, nw = nt >> 5;
  const int *heavy = g.heavy + G.hbase;
  const long long T = d.T;
  if (T == 0) {
    if (tid == 0) score[d.u] = -INFINITY;
    return;
  }
  double *prev = block_rows(sh, grow, growS), *cur = prev + S;
  const int *pdf = g.pdf + G.sbase, *ioff = g.in_off + G.obase, *src = g.arc_src + G.abase;
  const float *init = g.init + G.sbase, *fin = g.fin + G.sbase, *lp = g.arc_logp + G.abase;
  const float *llu = ll + d.frame0 * P;
  int *bpu = bp + d.state0, *pu = path + d.frame0;
  for (int j = tid; j < S; j += nt) prev[j] = (double)init[j] + llu[pdf[j]];
  float e[KP], nx[KP];
#pragma unroll
  for (int k = 0; k < KP; ++k) {
    const int j = tid + k * nt;
    e[k] = (T > 1 && j < S) ? llu[P + pdf[j]] : 0.f;
  }
  __syncthreads();
  for (long long t = 1; t < T; ++t) {
    const float *lt = llu + t * P;
#pragma unroll
    for (int k = 0; k < KP; ++k) {
      const int j = tid + k * nt;
      nx[k] = (t + 1 < T && j < S) ? lt[P + pdf[j]] : 0.f;
    }
    auto body = [&](int j, float ej) {
      if (ioff[j + 1] - ioff[j] > HEAVY) return; /* warp pass below */
      int arg;
      const double m = vit_state(prev, src, lp, ioff[j], ioff[j + 1], &arg);
      cur[j] = m > -INFINITY ? m + (double)ej : -INFINITY;
      bpu[t * S + j] = m > -INFINITY ? arg : -1;
    };
#pragma unroll
    for (int k = 0; k < KP; ++k) {
      const int j = tid + k * nt;
      if (j < S) body(j, e[k]);
    }
    for (int j = tid + KP * nt; j < S; j += nt) body(j, lt[pdf[j]]);
    for (int h = w; h < G.nhi; h += nw) { /* heavy states: lanes over the arcs, same tie rule */
      const int j = heavy[h];
      double m = -INFINITY;
      int arg = -1;
      for (int a = ioff[j] + lane; a < ioff[j + 1]; a += 32) {
        const int i = src[a];
        const double v = prev[i] + (double)lp[a];
        if (v > m || (v == m && arg >= 0 && i < arg)) { m = v; arg = i; }
      }
      warp_argmax(m, arg);
      if (lane == 0) {
        cur[j] = m > -INFINITY ? m + (double)lt[pdf[j]] : -INFINITY;
        bpu[t * S + j] = m > -INFINITY ? arg : -1;
      }
    }
    __syncthreads();
    double *tmp = prev; prev = cur; cur = tmp;
#pragma unroll
    for (int k = 0; k < KP; ++k) e[k] = nx[k];
  }
  /* argmax_j delta_{T-1}(j) + final_j, lowest j on ties */
  double bv = -INFINITY;
  int bi = -1;
  for (int j = tid; j < S; j += nt) {
    const double v = prev[j] + (double)fin[j];
    if (v > bv) { bv = v; bi = j; }
  }
  warp_argmax(bv, bi);
  double *rv = sh;
  int *ri = (int *)(sh + 32);
  if ((tid & 31) == 0) { rv[tid >> 5] = bv; ri[tid >> 5] = bi; }
  __syncthreads();
  bv = -INFINITY;
  bi = -1;
  for (int k = 0; k < (nt >> 5); ++k) arg_combine(bv, bi, rv[k], ri[k]);
  vit_finish(bv, bi, T, S, bpu, pu, score + d.u, tid, nt);
}

/* Backward pass of forward-backward (Rabiner eqs. 23-27, 36-37; cuHMM's
 * backward kernel with the per-state accumulation of gamma and xi), one
 * block per utterance, after k_hmm_forward<1>.  Thread i owns state i's
 * OUTGOING arcs: beta_t(i) = logsumexp_k (logp_k + w_{t+1}(dst_k)) with
 * w_t(j) = b_j(o_t) + beta_t(j) (double rows, shared or global), and
 * xi_t(arc) = exp(alpha_t(i) + logp + w_{t+1}(j) - log P) summed over t in a
 * per-utterance accumulator (shared, or the global scratch gacc of stride
 * gaccA) that only thread i touches; at the end the accumulators, the
 * entries gamma_0 and the exits exp(alpha_{T-1} + final - log P) are
 * added (double; atomics, one writer per element) into the utterance's own
 * stats block ustats + uso[u] (if ustats; zeroed by the caller), which
 * k_hmm_stats_sum adds into its graph's block in utterance order -- the
 * same sums in every run however many utterances share a graph.
 * alphad: log alpha (double) of k_hmm_forward<1>; gamma: NULL or the
 * chunk's [sum T S] float, gamma_t(i) (all 0 when log P = -inf). */
__global__ void __launch_bounds__(1024)
k_hmm_backward(HArrays g, const UDesc *__restrict__ ud, const float *__restrict__ ll, int P,
               double *grow, int growS, double *gacc, int gaccA, const double *__restrict__ alphad,
               float *gamma, const double *__restrict__ loglik, double *ustats, const long long *__restrict__ uso) {
  extern __shared__ double sh[];
  const UDesc d = ud[blockIdx.x];
  const HGraph G = g.G[d.g];
  const int S = G.S, A = G.A, nt = blockDim.x, tid = threadIdx.x, lane = tid & 31, w = tid >> 5, nw = nt >> 5;
  const int *heavy = g.heavy + G.hbase + G.nhi;
  const long long T = d.T;
  if (T == 0) return;
  const double L = loglik[d.u];
  const double *ad = alphad + d.state0;
  float *gm_out = gamma ? gamma + d.state0 : NULL;
  if (L == -INFINITY) {
    if (gm_out)
      for (long long i = tid; i < T * S; i += nt) gm_out[i] = 0.f;
    return;
  }
  double *wn = block_rows(sh, grow, growS), *wc = wn + S;
  double *acc = NULL;
  if (ustats) {
    acc = gaccA ? gacc + (size_t)blockIdx.x * gaccA : (growS ? sh + RED : sh + RED + 2 * S);
    for (int a = tid; a < A; a += nt) acc[a] = 0.0;
  }
  double *st = ustats ? ustats + uso[d.u] : NULL;
  const int *pdf = g.pdf + G.sbase, *ooff = g.out_off + G.obase, *odst = g.out_dst + G.abase,
            *oarc = g.out_arc + G.abase;
  const float *fin = g.fin + G.sbase, *olp = g.out_logp + G.abase;
  const float *llu = ll + d.frame0 * P;
  /* t = T-1: beta = final; exits */
  {
    const long long t = T - 1;
    for (int i = tid; i < S; i += nt) {
      const double a = ad[t * S + i], beta = fin[i];
      const double gm = exp(a + beta - L);
      if (gm_out) gm_out[t * S + i] = (float)gm;
      if (st && gm > 0) {
        atomicAdd(st + S + A + i, gm); /* exit weight: alpha + final - log P = gamma here */
        if (t == 0) atomicAdd(st + i, gm);
      }
      wn[i] = (double)llu[t * P + pdf[i]] + beta;
    }
  }
  float e[KP], nx[KP];
#pragma unroll
  for (int k = 0; k < KP; ++k) {
    const int j = tid + k * nt;
    e[k] = (T - 2 >= 1 && j < S) ? llu[(T - 2) * P + pdf[j]] : 0.f;
  }
  __syncthreads();
  for (long long t = T - 2; t >= 0; --t) {
    const float *lt = llu + t * P;
#pragma unroll
    for (int k = 0; k < KP; ++k) {
      const int j = tid + k * nt;
      nx[k] = (t - 1 >= 1 && j < S) ? lt[-P + pdf[j]] : 0.f;
    }
    auto body = [&](int i, float ei) {
      const int k0 = ooff[i], k1 = ooff[i + 1];
      if (k1 - k0 > HEAVY) return; /* warp pass below */
      const double a = ad[t * S + i];
      const double beta = bwd_state(wn, odst, olp, oarc, k0, k1, a, L, acc);
      const double x = a + beta - L;
      const double gm = x > -INFINITY ? exp(x) : 0.0;
      if (gm_out) gm_out[t * S + i] = (float)gm;
      if (st && t == 0 && gm > 0) atomicAdd(st + i, gm);
      if (t > 0) wc[i] = (double)ei + beta;
    };
#pragma unroll
    for (int k = 0; k < KP; ++k) {
      const int j = tid + k * nt;
      if (j < S) body(j, e[k]);
    }
    for (int j = tid + KP * nt; j < S; j += nt) body(j, lt[pdf[j]]);
    for (int h = w; h < G.nho; h += nw) { /* heavy states: lanes over the outgoing arcs */
      const int i = heavy[h], k0 = ooff[i], k1 = ooff[i + 1];
      const double a = ad[t * S + i];
      double m = -INFINITY;
      for (int k = k0 + lane; k < k1; k += 32) {
        const double v = (double)olp[k] + wn[odst[k]];
        m = fmax(m, v);
        if (acc) {
          const double x = a + v - L;
          if (x > -INFINITY) acc[oarc[k]] += exp(x);
        }
      }
      m = warp_max(m);
      double beta = -INFINITY;
      if (m > -INFINITY) {
        double s = 0.0;
        for (int k = k0 + lane; k < k1; k += 32) s += exp((double)olp[k] + wn[odst[k]] - m);
        beta = m + log(warp_sum(s));
      }
      if (lane == 0) {
        const double x = a + beta - L;
        const double gm = x > -INFINITY ? exp(x) : 0.0;
        if (gm_out) gm_out[t * S + i] = (float)gm;
        if (st && t == 0 && gm > 0) atomicAdd(st + i, gm);
        if (t > 0) wc[i] = (double)lt[pdf[i]] + beta;
      }
    }
    __syncthreads();
    double *tmp = wn; wn = wc; wc = tmp;
#pragma unroll
    for (int k = 0; k < KP; ++k) e[k] = nx[k];
  }
  if (acc)
    for (int a = tid; a < A; a += nt)
      if (acc[a] != 0.0) atomicAdd(st + S + a, acc[a]);
}

/* One block per graph of a chunk (k = 0 .. blocks - 1): graph gs[k]'s stats
 * block (stats + its stats_off) += the per-utterance blocks ustats + uso[u]
 * of its utterances ul[uoff[k] .. uoff[k+1]) in that (increasing) order,
 * threads over the block's elements: a fixed order of additions. */
__global__ void k_hmm_stats_sum(HArrays g, const int *__restrict__ gs, const int *__restrict__ uoff,
                                const int *__restrict__ ul, const double *__restrict__ ustats,
                                const long long *__restrict__ uso, double *stats) {
  const HGraph G = g.G[gs[blockIdx.x]];
  const int n = 2 * G.S + G.A, k0 = uoff[blockIdx.x], k1 = uoff[blockIdx.x + 1];
  double *st = stats + G.stats_off;
  /* the utterances' block offsets uso[ul[k]] staged SUM_TILE at a time, so
   * that the element loads (SUM_BATCH in flight) depend on nothing else;
   * each element's additions stay in utterance order (the same bits) */
  __shared__ long long so[SUM_TILE];
  for (int e0 = 0; e0 < n; e0 += blockDim.x) {
    const int e = e0 + threadIdx.x;
    double v = e < n ? st[e] : 0.0;
    for (int t0 = k0; t0 < k1; t0 += SUM_TILE) {
      const int m = k1 - t0 < SUM_TILE ? k1 - t0 : SUM_TILE;
      __syncthreads();
      for (int i = threadIdx.x; i < m; i += blockDim.x) so[i] = uso[ul[t0 + i]];
      __syncthreads();
      if (e >= n) continue;
      int i = 0;
      for (; i + SUM_BATCH <= m; i += SUM_BATCH) {
        double x[SUM_BATCH];
#pragma unroll
        for (int q = 0; q < SUM_BATCH; ++q) x[q] = ustats[so[i + q] + e];
#pragma unroll
        for (int q = 0; q < SUM_BATCH; ++q) v += x[q];
      }
      for (; i < m; ++i) v += ustats[so[i] + e];
    }
    if (e < n) st[e] = v;
  }
}

/* ------------------------------------------------ packed small graphs
 *
 * With S <= 16 states (word HMMs of 3-16 states), the kernels above give
 * each utterance a whole 32-thread block: 16-28 of its 32 lanes idle at
 * every frame and at most 32 utterances per SM (the blocks-per-SM limit).
 * The packed kernels give each utterance a GROUP of GW = 4, 8 or 16 lanes
 * (lane j owns state j) and put PK_NT / GW utterances in a block, the
 * groups of a warp synchronising with __syncwarp over their own lanes
 * (utterances are issued longest first, so the groups of a warp have about
 * the same length).  Only graphs without heavy states (gh_cuda_hmm_run checks).
 * The arithmetic of every state is that of k_hmm_forward<1> /
 * k_hmm_backward / k_hmm_viterbi, and the group's reductions (log P, the
 * final argmax) are the same butterflies restricted to the group, whose
 * other lanes there add 0 / take the max with -inf: the results are
 * bit-identical to the one-block-per-utterance kernels (test_hmm_cuda and
 * test/gpu-hmm-train.sh compare them; GH_CUDA_HMM_PACK=0 turns this off). */
#define PK_NT 128

template <int GW> __device__ __forceinline__ unsigned pk_mask() {
  return GW == 32 ? 0xffffffffu : ((1u << GW) - 1u) << ((threadIdx.x & 31) & ~(GW - 1));
}
template <int GW> __device__ __forceinline__ double pk_max(double v, unsigned m) {
  for (int o = GW / 2; o; o >>= 1) v = fmax(v, __shfl_xor_sync(m, v, o, GW));
  return v;
}
template <int GW> __device__ __forceinline__ double pk_sum(double v, unsigned m) {
  for (int o = GW / 2; o; o >>= 1) v += __shfl_xor_sync(m, v, o, GW);
  return v;
}

/* k_hmm_forward<1> (VIT = 0: log alpha into alphad, log P into res) or
 * k_hmm_viterbi (VIT = 1: back-pointers in bp, the path in path -- the
 * backtrace by the group's lane 0 -- and the best path's score in res) for
 * the utterances ud[0 .. nu), a group of GW lanes each. */
template <int GW, int VIT>
__global__ void __launch_bounds__(PK_NT)
k_hmm_fv_pk(HArrays g, const UDesc *__restrict__ ud, int nu, const float *__restrict__ ll, int P, double *alphad,
            int *bp, int *path, double *res) {
  __shared__ double rows[2 * PK_NT];
  const int lane = threadIdx.x % GW, grp = threadIdx.x / GW;
  const int ui = blockIdx.x * (PK_NT / GW) + grp;
  if (ui >= nu) return;
  const unsigned gm = pk_mask<GW>();
  const UDesc d = ud[ui];
  const HGraph G = g.G[d.g];
  const int S = G.S, j = lane;
  const bool on = j < S;
  const long long T = d.T;
  if (T == 0) {
    if (lane == 0) res[d.u] = -INFINITY;
    return;
  }
  double *prev = rows + grp * 2 * GW, *cur = prev + GW;
  const int *ioff = g.in_off + G.obase, *src = g.arc_src + G.abase;
  const float *lp = g.arc_logp + G.abase;
  const int pj = on ? g.pdf[G.sbase + j] : 0;
  const float *llu = ll + d.frame0 * P;
  double *ad = VIT ? NULL : alphad + d.state0;
  int *bpu = VIT ? bp + d.state0 : NULL;
  if (on) {
    const double x = (double)g.init[G.sbase + j] + llu[pj];
    prev[j] = x;
    if (!VIT) ad[j] = x;
  }
  const int a0 = on ? ioff[j] : 0, a1 = on ? ioff[j + 1] : 0;
  float e = (T > 1 && on) ? llu[P + pj] : 0.f;
  __syncwarp(gm);
  for (long long t = 1; t < T; ++t) {
    const float nx = (t + 1 < T && on) ? llu[(t + 1) * P + pj] : 0.f;
    if (on) {
      if (VIT) {
        int arg;
        const double m = vit_state(prev, src, lp, a0, a1, &arg);
        cur[j] = m > -INFINITY ? m + (double)e : -INFINITY;
        bpu[t * S + j] = m > -INFINITY ? arg : -1;
      } else {
        const double x = fwd_state(prev, src, lp, a0, a1, e);
        cur[j] = x;
        ad[t * S + j] = x;
      }
    }
    __syncwarp(gm);
    double *tmp = prev; prev = cur; cur = tmp;
    e = nx;
  }
  if (!VIT) {
    /* log P (eq. 21): k_hmm_forward's block_max / block_sum over the group */
    double v = -INFINITY;
    if (on) v = fmax(v, prev[j] + (double)g.fin[G.sbase + j]);
    const double M = pk_max<GW>(v, gm);
    double s = 0.0;
    if (on && M > -INFINITY) s += exp(prev[j] + (double)g.fin[G.sbase + j] - M);
    s = pk_sum<GW>(s, gm);
    if (lane == 0) res[d.u] = M > -INFINITY ? M + log(s) : -INFINITY;
    return;
  }
  /* argmax_j delta_{T-1}(j) + final_j, lowest j on ties (k_hmm_viterbi's) */
  int *pu = path + d.frame0;
  double bv = -INFINITY;
  int bi = -1;
  if (on) {
    const double v = prev[j] + (double)g.fin[G.sbase + j];
    if (v > bv) { bv = v; bi = j; }
  }
  for (int o = GW / 2; o; o >>= 1) {
    const double v2 = __shfl_xor_sync(gm, bv, o, GW);
    const int i2 = __shfl_xor_sync(gm, bi, o, GW);
    arg_combine(bv, bi, v2, i2);
  }
  vit_finish(bv, bi, T, S, bpu, pu, res + d.u, lane, GW);
}

/* k_hmm_backward for the utterances ud[0 .. nu), a group of GW lanes each;
 * shared memory: per group 2 GW doubles of rows and (ustats) Amax
 * accumulators. */
template <int GW>
__global__ void __launch_bounds__(PK_NT)
k_hmm_backward_pk(HArrays g, const UDesc *__restrict__ ud, int nu, const float *__restrict__ ll, int P, int Amax,
                  const double *__restrict__ alphad, float *gamma, const double *__restrict__ loglik, double *ustats,
                  const long long *__restrict__ uso) {
  extern __shared__ double sh[];
  const int lane = threadIdx.x % GW, grp = threadIdx.x / GW;
  const int ui = blockIdx.x * (PK_NT / GW) + grp;
  if (ui >= nu) return;
  const unsigned gm = pk_mask<GW>();
  const UDesc d = ud[ui];
  const HGraph G = g.G[d.g];
  const int S = G.S, A = G.A, i = lane;
  const bool on = i < S;
  const long long T = d.T;
  if (T == 0) return;
  const double L = loglik[d.u];
  const double *ad = alphad + d.state0;
  float *gm_out = gamma ? gamma + d.state0 : NULL;
  if (L == -INFINITY) {
    if (gm_out)
      for (long long k = lane; k < T * S; k += GW) gm_out[k] = 0.f;
    return;
  }
  double *wn = sh + (size_t)grp * (2 * GW + (ustats ? Amax : 0)), *wc = wn + GW;
  double *acc = ustats ? wc + GW : NULL;
  if (acc)
    for (int a = lane; a < A; a += GW) acc[a] = 0.0;
  double *st = ustats ? ustats + uso[d.u] : NULL;
  const int *ooff = g.out_off + G.obase, *odst = g.out_dst + G.abase, *oarc = g.out_arc + G.abase;
  const float *olp = g.out_logp + G.abase;
  const int pi = on ? g.pdf[G.sbase + i] : 0;
  const int k0 = on ? ooff[i] : 0, k1 = on ? ooff[i + 1] : 0;
  const float *llu = ll + d.frame0 * P;
  if (on) { /* t = T-1: beta = final; exits */
    const long long t = T - 1;
    const double a = ad[t * S + i], beta = g.fin[G.sbase + i];
    const double gmv = exp(a + beta - L);
    if (gm_out) gm_out[t * S + i] = (float)gmv;
    if (st && gmv > 0) {
      atomicAdd(st + S + A + i, gmv);
      if (t == 0) atomicAdd(st + i, gmv);
    }
    wn[i] = (double)llu[t * P + pi] + beta;
  }
  float e = (T - 2 >= 1 && on) ? llu[(T - 2) * P + pi] : 0.f;
  __syncwarp(gm);
  for (long long t = T - 2; t >= 0; --t) {
    const float nx = (t - 1 >= 1 && on) ? llu[(t - 1) * P + pi] : 0.f;
    if (on) {
      const double a = ad[t * S + i];
      const double beta = bwd_state(wn, odst, olp, oarc, k0, k1, a, L, acc);
      const double x = a + beta - L;
      const double gmv = x > -INFINITY ? exp(x) : 0.0;
      if (gm_out) gm_out[t * S + i] = (float)gmv;
      if (st && t == 0 && gmv > 0) atomicAdd(st + i, gmv);
      if (t > 0) wc[i] = (double)e + beta;
    }
    __syncwarp(gm);
    double *tmp = wn; wn = wc; wc = tmp;
    e = nx;
  }
  if (acc) {
    __syncwarp(gm);
    for (int a = lane; a < A; a += GW)
      if (acc[a] != 0.0) atomicAdd(st + S + a, acc[a]);
  }
}

void gh_cuda_hmm_plan_free(HPlan *p) {
  if (!p) return;
  cudaFree(p->dUd); cudaFree(p->dUso); cudaFree(p->dSumIdx); cudaFree(p->dCol);
  free(p->frame_off); free(p->graph); free(p->ucol); free(p->col);
  free(p);
}

/* a[0 .. n) in cmp_udesc's order (a total order: u is unique), by a
 * counting sort on T when the longest utterance is short beside n (a
 * block of hmm-train: 6,500 utterances of ~40 frames; qsort took ~0.9 ms
 * of it, per block and iteration, bench/RESULTS.md D30), else
 * qsort.  Input in ascending u, as gh_cuda_hmm_run fills it. */
static void sort_udesc(UDesc *a, int n) {
  int maxT = 0;
  for (int i = 0; i < n; ++i) {
    if (a[i].T > maxT) maxT = a[i].T;
    if (i > 0 && a[i].u <= a[i - 1].u) maxT = INT32_MAX; /* not in ascending u: qsort */
  }
  if (n < 64 || (long long)maxT > 4LL * n + 4096) {
    qsort(a, n, sizeof(UDesc), cmp_udesc);
    return;
  }
  int *start = (int *)gh_calloc((size_t)maxT + 2, sizeof(int));
  for (int i = 0; i < n; ++i) start[maxT - a[i].T + 1]++; /* bucket maxT - T: longest first */
  for (int k = 0; k <= maxT; ++k) start[k + 1] += start[k];
  UDesc *tmp = (UDesc *)gh_malloc((size_t)n * sizeof(UDesc));
  for (int i = 0; i < n; ++i) tmp[start[maxT - a[i].T]++] = a[i]; /* stable: ties keep ascending u */
  memcpy(a, tmp, (size_t)n * sizeof(UDesc));
  free(tmp);
  free(start);
}

/* Forward-backward statistics of chunk [u0, u1): the offsets of the
 * per-utterance blocks (chunk-local utterance order) uso [nu + 1] for
 * k_hmm_backward; returns uso[nu], the doubles of all blocks. */
static long long stats_uso(const gh_dev_hmm *h, const gh_hmm_batch *bt, int32_t u0, int32_t u1, long long *uso) {
  uso[0] = 0;
  for (int32_t u = u0; u < u1; ++u) {
    const HGraph *G = &h->hG[bt->graph ? bt->graph[u] : 0];
    uso[u - u0 + 1] = uso[u - u0] + 2LL * G->S + G->A;
  }
  return uso[u1 - u0];
}

/* ... and k_hmm_stats_sum's lists for their sums into the graphs' blocks
 * dStats: the chunk's utterances grouped by graph (graphs in order of first
 * use), increasing utterance order within a graph.  idx [3 nu + 2] gets gs
 * [ng], uoff [ng + 1], ul [nu]; returns ng (the used part is 2 ng + 1 + nu). */
static int stats_sum_lists(const gh_dev_hmm *h, const gh_hmm_batch *bt, int32_t u0, int32_t u1, int *idx) {
  const int32_t G = h->num_graphs;
  int *cnt = (int *)gh_calloc((size_t)G + 1, sizeof(int)), *pos = (int *)gh_malloc(((size_t)G + 1) * sizeof(int));
  int ng = 0;
  for (int32_t u = u0; u < u1; ++u) {
    const int g = bt->graph ? bt->graph[u] : 0;
    if (cnt[g]++ == 0) idx[ng++] = g;
  }
  int *gs = idx, *uoff = idx + ng, *ul = uoff + ng + 1;
  uoff[0] = 0;
  for (int k = 0; k < ng; ++k) {
    uoff[k + 1] = uoff[k] + cnt[gs[k]];
    pos[gs[k]] = uoff[k];
  }
  for (int32_t u = u0; u < u1; ++u) ul[pos[bt->graph ? bt->graph[u] : 0]++] = u - u0;
  free(cnt); free(pos);
  return ng;
}

/* The driver of all four operations: checks the batch (as the reference:
 * gh_die on a bad graph index or too few loglike columns), cuts it into
 * chunks of consecutive utterances that fit a device-memory budget (at
 * least one utterance each, so any length runs), and per chunk uploads the
 * loglike rows once, launches one block per utterance (longest first) and
 * copies the results back.  outs: alpha (OP_FWD/OP_SCALED) or gamma
 * (OP_FB), host [sum T S] float or NULL; path (OP_VIT); vals: loglik or
 * score [B]; stats (OP_FB) host double, ADDED to. */
/* The packed kernels' shared memory (k_hmm_backward_pk): per group 2 GW
 * doubles of rows and, with statistics, Amax accumulators. */
static size_t pack_shm(int gw, int Amax, int use_stats) {
  return (size_t)(PK_NT / gw) * (2 * (size_t)gw + (use_stats ? (size_t)Amax : 0)) * sizeof(double);
}

/* The group width of the packed kernels ("packed small graphs") for a chunk
 * whose largest graph has Smax states and Amax arcs: 4, 8 or 16, or 0 (one
 * block per utterance) for larger graphs, heavy states, accumulators beyond
 * 48 KB of shared memory, or $GH_CUDA_HMM_PACK=0. */
static int pack_width(int Smax, int Amax, int heavy, int use_stats) {
  static const char *const words[] = {"0", "1", NULL};
  if (gh_env_word("GH_CUDA_HMM_PACK", 1, words) == 0 || heavy || Smax > 16) /* per chunk: the tests compare both */
    return 0;
  const int gw = Smax <= 4 ? 4 : Smax <= 8 ? 8 : 16;
  return pack_shm(gw, Amax, use_stats) <= 48 * 1024 ? gw : 0;
}

/* gh_cuda_hmm_run's plan of bt for an hmm_estep_pairs request (pq with the block's
 * loglikes on the device): h's plan if bt is the batch it was made from,
 * else NULL. */
static HPlan *plan_lookup(const gh_dev_hmm *h, const gh_hmm_batch *bt, const PairReq *pq, int use_stats) {
  HPlan *p = h->plan;
  if (!p || !pq || !pq->dLL || p->B != bt->num_utts || p->stats < use_stats) return NULL;
  const int32_t nc = pq->col_pdf ? pq->ncol : -1;
  if (p->ncol != nc || (nc > 0 && memcmp(p->col, pq->col_pdf, (size_t)nc * sizeof(int32_t)))) return NULL;
  const size_t B = (size_t)bt->num_utts;
  if (memcmp(p->frame_off, bt->frame_off, (B + 1) * sizeof(int64_t))) return NULL;
  if ((p->graph != NULL) != (bt->graph != NULL) || (bt->graph && memcmp(p->graph, bt->graph, B * sizeof(int32_t))))
    return NULL;
  if ((p->ucol != NULL) != (pq->utt_col != NULL) || (pq->utt_col && memcmp(p->ucol, pq->utt_col, B * sizeof(int32_t))))
    return NULL;
  return p;
}

static int32_t *dup_i32(const int32_t *a, size_t n) {
  if (!a) return NULL;
  int32_t *c = (int32_t *)gh_malloc((n + 1) * sizeof(int32_t));
  memcpy(c, a, n * sizeof(int32_t));
  return c;
}

void gh_cuda_hmm_run(gh_dev_hmm *h, const gh_hmm_batch *bt, int op, double *vals, float *outs,
                     int32_t *path, double *stats, const PairReq *pq) {
  const int32_t B = bt->num_utts;
  const int P = bt->num_pdfs;
  if (B <= 0) return;
  const int use_stats = op == OP_FB && stats != NULL;
  HPlan *pl = plan_lookup(h, bt, pq, use_stats); /* the batch checked when its plan was made */
  int64_t *soff = NULL;
  if (!pl) {
    soff = (int64_t *)gh_malloc((B + 1) * sizeof(int64_t));
    soff[0] = 0;
    for (int32_t u = 0; u < B; ++u) {
      const int32_t gi = bt->graph ? bt->graph[u] : 0;
      if (gi < 0 || gi >= h->num_graphs)
        gh_die("HMM batch: utterance %d refers to graph %d of %d", u, gi, h->num_graphs);
      if (h->hG[gi].num_pdfs > P)
        gh_die("HMM batch: graph %d uses %d pdfs, loglikes have %d columns", gi, h->hG[gi].num_pdfs, P);
      const int64_t T = bt->frame_off[u + 1] - bt->frame_off[u];
      if (T < 0) gh_die("HMM batch: utterance %d has frame_off decreasing (%lld -> %lld)", u,
                        (long long)bt->frame_off[u], (long long)bt->frame_off[u + 1]);
      if (T > INT32_MAX) gh_die("HMM batch: utterance %d has %lld frames (at most %d)", u, (long long)T, INT32_MAX);
      soff[u + 1] = soff[u] + T * h->hG[gi].S;
    }
  }
  const int *dCol = NULL; /* gh_cuda_hmm_chunk_pairs' column maps on the device */
  if (pl) {
    dCol = pl->dCol;
  } else if (pq && pq->col_pdf) {
    hgrow_dev((void **)&h->s->dCol, &h->s->capCol, (size_t)pq->ncol + 1, sizeof(int));
    CK(cudaMemcpy(h->s->dCol, pq->col_pdf, (size_t)pq->ncol * sizeof(int), cudaMemcpyHostToDevice));
    dCol = h->s->dCol;
  }
  if (pq && (int64_t)pq->frame_base + bt->frame_off[B] - 1 > INT32_MAX)
    gh_die("HMM pairs: frame %lld beyond int32", (long long)pq->frame_base + bt->frame_off[B] - 1);
  if (use_stats) {
    hgrow_dev((void **)&h->dStats, &h->capStats, (size_t)h->stats_size + 1, sizeof(double));
    CK(cudaMemsetAsync(h->dStats, 0, (h->stats_size + 1) * sizeof(double)));
  }
  size_t budget = 0;
  if (!pl) {
    size_t freeb = 0, totalb = 0;
    CK(cudaMemGetInfo(&freeb, &totalb));
    budget = freeb / 2;
    if (budget > ((size_t)2 << 30)) budget = (size_t)2 << 30;
    if (budget < ((size_t)64 << 20)) budget = (size_t)64 << 20;
  }
  UDesc *hud = pl ? NULL : (UDesc *)gh_malloc((B + 1) * sizeof(UDesc));
  long long *huso = pl || !use_stats ? NULL : (long long *)gh_malloc((B + 1) * sizeof(long long));
  int *hidx = pl || !use_stats ? NULL : (int *)gh_malloc((3 * (size_t)B + 2) * sizeof(int));
  double *hv = (double *)gh_malloc((B + 1) * sizeof(double));
  cudaEvent_t ev0, ev1;
  CK(cudaEventCreate(&ev0));
  CK(cudaEventCreate(&ev1));
  for (int32_t u0 = 0; u0 < B;) {
    /* chunk [u0, u1): bytes per utterance = loglikes + per-state block +
     * offsets + path + (global rows / accumulators when they do not fit in
     * shared memory) */
    int32_t u1 = u0;
    int Smax = 1, Amax = 0, heavy = 0;
    if (pl) {
      u1 = B; Smax = pl->Smax; Amax = pl->Amax; heavy = pl->heavy;
    } else {
      size_t used = 0;
      while (u1 < B) {
        const HGraph *G = &h->hG[bt->graph ? bt->graph[u1] : 0];
        heavy |= G->nhi | G->nho;
        const size_t T = (size_t)(bt->frame_off[u1 + 1] - bt->frame_off[u1]);
        const int S2 = G->S > Smax ? G->S : Smax, A2 = G->A > Amax ? G->A : Amax;
        size_t c = T * P * 4 + T * (size_t)G->S * (op == OP_FB ? 12 : 4) + T * 4 + sizeof(UDesc) + 16;
        size_t rows = S2 > HMM_SMEM_S ? (size_t)(u1 - u0 + 1) * 2 * S2 * 8 : 0;
        size_t accs = (use_stats && A2 > HMM_SMEM_A) ? (size_t)(u1 - u0 + 1) * A2 * 8 : 0;
        if (use_stats) c += (2 * (size_t)G->S + G->A) * 8 + 24;
        if (u1 > u0 && used + c + rows + accs > budget) break;
        used += c;
        Smax = S2; Amax = A2;
        ++u1;
      }
    }
    const int32_t nu = u1 - u0;
    const int64_t f0 = bt->frame_off[u0], F = bt->frame_off[u1] - f0, N = pl ? pl->nstate : soff[u1] - soff[u0];
    /* the chunk's descriptors (longest first), stats offsets and sum lists
     * on the device: the plan's, or made now -- into a new plan where an
     * hmm_estep_pairs batch is one chunk, else into the scratch */
    UDesc *dUd;
    long long *dUso = NULL, nust = 0;
    int *dIdx = NULL, ng = 0;
    if (pl) {
      dUd = pl->dUd; dUso = pl->dUso; dIdx = pl->dSumIdx; ng = pl->ng; nust = pl->nust;
    } else {
      for (int32_t u = u0; u < u1; ++u) {
        UDesc *x = &hud[u - u0];
        x->frame0 = bt->frame_off[u] - f0;
        x->state0 = soff[u] - soff[u0];
        x->T = (int)(bt->frame_off[u + 1] - bt->frame_off[u]);
        x->g = bt->graph ? bt->graph[u] : 0;
        x->u = u - u0;
        x->pad = pq && pq->utt_col ? pq->utt_col[u] : 0; /* k_fb_pairs: the utterance's column map */
      }
      sort_udesc(hud, nu);
      size_t nidx = 0;
      if (use_stats) {
        nust = stats_uso(h, bt, u0, u1, huso);
        ng = stats_sum_lists(h, bt, u0, u1, hidx);
        nidx = 2 * (size_t)ng + 1 + nu;
      }
      HPlan *np = NULL;
      if (pq && pq->dLL && u0 == 0 && u1 == B) {
        np = (HPlan *)gh_calloc(1, sizeof(HPlan));
        np->B = B; np->ng = ng; np->Smax = Smax; np->Amax = Amax; np->heavy = heavy; np->stats = use_stats;
        np->nstate = N; np->nust = nust;
        np->ncol = pq->col_pdf ? pq->ncol : -1;
        if (np->ncol > 0) {
          np->col = dup_i32(pq->col_pdf, (size_t)np->ncol);
          CK(cudaMalloc((void **)&np->dCol, (size_t)np->ncol * sizeof(int32_t)));
          CK(cudaMemcpy(np->dCol, np->col, (size_t)np->ncol * sizeof(int32_t), cudaMemcpyHostToDevice));
          dCol = np->dCol;
        }
        np->frame_off = (int64_t *)gh_malloc(((size_t)B + 1) * sizeof(int64_t));
        memcpy(np->frame_off, bt->frame_off, ((size_t)B + 1) * sizeof(int64_t));
        np->graph = dup_i32(bt->graph, (size_t)B);
        np->ucol = dup_i32(pq->utt_col, (size_t)B);
        CK(cudaMalloc((void **)&np->dUd, (size_t)nu * sizeof(UDesc)));
        if (use_stats) {
          CK(cudaMalloc((void **)&np->dUso, ((size_t)nu + 1) * sizeof(long long)));
          CK(cudaMalloc((void **)&np->dSumIdx, nidx * sizeof(int)));
        }
        dUd = np->dUd; dUso = np->dUso; dIdx = np->dSumIdx;
      } else {
        hgrow_dev((void **)&h->s->dUd, &h->s->capUd, nu, sizeof(UDesc));
        dUd = h->s->dUd;
        if (use_stats) {
          hgrow_dev((void **)&h->s->dUso, &h->s->capUso, (size_t)nu + 1, sizeof(long long));
          hgrow_dev((void **)&h->s->dSumIdx, &h->s->capSumIdx, nidx, sizeof(int));
          dUso = h->s->dUso; dIdx = h->s->dSumIdx;
        }
      }
      CK(cudaMemcpy(dUd, hud, nu * sizeof(UDesc), cudaMemcpyHostToDevice));
      if (use_stats) {
        CK(cudaMemcpy(dUso, huso, ((size_t)nu + 1) * sizeof(long long), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dIdx, hidx, nidx * sizeof(int), cudaMemcpyHostToDevice));
      }
      if (np) { /* used from the next call on (the pointers above are its) */
        gh_cuda_hmm_plan_free(h->plan);
        h->plan = np;
      }
    }
    hgrow_dev((void **)&h->s->dLoglik, &h->s->capLoglik, nu, sizeof(double));
    const float *LL = pq && pq->dLL ? pq->dLL + f0 * P : NULL; /* the chunk's loglikes on the device */
    if (!LL) {
      hgrow_dev((void **)&h->s->dLL, &h->s->capLL, (size_t)F * P + 1, sizeof(float));
      if (F > 0)
        CK(cudaMemcpy(h->s->dLL, bt->loglikes + f0 * P, (size_t)F * P * sizeof(float), cudaMemcpyHostToDevice));
      LL = h->s->dLL;
    }
    const int growS = Smax > HMM_SMEM_S ? Smax : 0;
    if (growS) hgrow_dev((void **)&h->s->dRows, &h->s->capRows, (size_t)nu * 2 * growS, sizeof(double));
    int nt = (Smax + 31) & ~31;
    if (nt > 1024) nt = 1024;
    size_t shm = RED * sizeof(double) + (growS ? 0 : 2 * (size_t)Smax * sizeof(double));
    const HArrays &d = h->d;
    const int pw = op == OP_VIT || op == OP_FB ? pack_width(Smax, Amax, heavy, use_stats) : 0;
    const int pkb = pw ? (nu + PK_NT / pw - 1) / (PK_NT / pw) : 0; /* packed kernels' blocks */
    CK(cudaEventRecord(ev0));
    if (op == OP_FWD || op == OP_SCALED) {
      float *al = NULL;
      if (outs) {
        hgrow_dev((void **)&h->s->dState, &h->s->capState, (size_t)N + 1, sizeof(float));
        al = h->s->dState;
      }
      if (op == OP_FWD)
        k_hmm_forward<0><<<nu, nt, shm>>>(d, dUd, LL, P, h->s->dRows, growS, al, NULL, h->s->dLoglik);
      else
        k_hmm_scaled<<<nu, nt, shm>>>(d, dUd, LL, P, h->s->dRows, growS, al, h->s->dLoglik);
      CK_LAUNCH(op == OP_FWD ? "forward" : "scaled forward");
    } else if (op == OP_VIT) {
      hgrow_dev((void **)&h->s->dBp, &h->s->capBp, (size_t)N + 1, sizeof(int));
      hgrow_dev((void **)&h->s->dPath, &h->s->capPath, (size_t)F + 1, sizeof(int));
      if (pw == 4) k_hmm_fv_pk<4, 1><<<pkb, PK_NT>>>(d, dUd, nu, LL, P, NULL, h->s->dBp, h->s->dPath, h->s->dLoglik);
      else if (pw == 8) k_hmm_fv_pk<8, 1><<<pkb, PK_NT>>>(d, dUd, nu, LL, P, NULL, h->s->dBp, h->s->dPath, h->s->dLoglik);
      else if (pw == 16) k_hmm_fv_pk<16, 1><<<pkb, PK_NT>>>(d, dUd, nu, LL, P, NULL, h->s->dBp, h->s->dPath, h->s->dLoglik);
      else k_hmm_viterbi<<<nu, nt, shm>>>(d, dUd, LL, P, h->s->dRows, growS, h->s->dBp, h->s->dPath, h->s->dLoglik);
      if (pq) CK(cudaGetLastError()); /* (gh_cuda_hmm_chunk_pairs' read-back synchronises) */
      else CK_LAUNCH("viterbi");
      if (pq) gh_cuda_hmm_chunk_pairs(h, dUd, dCol, pq, OP_VIT, h->s->dPath, nu, nt, F, f0);
    } else {
      if (outs || pq) hgrow_dev((void **)&h->s->dState, &h->s->capState, (size_t)N + 1, sizeof(float));
      hgrow_dev((void **)&h->s->dAlphaD, &h->s->capAlphaD, (size_t)N + 1, sizeof(double));
      if (pw == 4) k_hmm_fv_pk<4, 0><<<pkb, PK_NT>>>(d, dUd, nu, LL, P, h->s->dAlphaD, NULL, NULL, h->s->dLoglik);
      else if (pw == 8) k_hmm_fv_pk<8, 0><<<pkb, PK_NT>>>(d, dUd, nu, LL, P, h->s->dAlphaD, NULL, NULL, h->s->dLoglik);
      else if (pw == 16) k_hmm_fv_pk<16, 0><<<pkb, PK_NT>>>(d, dUd, nu, LL, P, h->s->dAlphaD, NULL, NULL, h->s->dLoglik);
      else k_hmm_forward<1><<<nu, nt, shm>>>(d, dUd, LL, P, h->s->dRows, growS, NULL, h->s->dAlphaD, h->s->dLoglik);
      CK(cudaGetLastError());
      int gaccA = 0;
      size_t shm2 = shm;
      if (use_stats) {
        if (Amax > HMM_SMEM_A) {
          gaccA = Amax;
          hgrow_dev((void **)&h->s->dAcc, &h->s->capAcc, (size_t)nu * gaccA, sizeof(double));
        } else {
          shm2 += (size_t)Amax * sizeof(double);
        }
        /* the chunk's zeroed per-utterance stats blocks */
        hgrow_dev((void **)&h->s->dUStats, &h->s->capUStats, (size_t)nust + 1, sizeof(double));
        CK(cudaMemsetAsync(h->s->dUStats, 0, (size_t)nust * sizeof(double)));
      }
      float *gam = outs || pq ? h->s->dState : NULL;
      double *ust = use_stats ? h->s->dUStats : NULL;
      const size_t pshm = pw ? pack_shm(pw, Amax, use_stats) : 0;
      if (pw == 4)
        k_hmm_backward_pk<4><<<pkb, PK_NT, pshm>>>(d, dUd, nu, LL, P, Amax, h->s->dAlphaD, gam, h->s->dLoglik, ust, dUso);
      else if (pw == 8)
        k_hmm_backward_pk<8><<<pkb, PK_NT, pshm>>>(d, dUd, nu, LL, P, Amax, h->s->dAlphaD, gam, h->s->dLoglik, ust, dUso);
      else if (pw == 16)
        k_hmm_backward_pk<16><<<pkb, PK_NT, pshm>>>(d, dUd, nu, LL, P, Amax, h->s->dAlphaD, gam, h->s->dLoglik, ust, dUso);
      else
        k_hmm_backward<<<nu, nt, shm2>>>(d, dUd, LL, P, h->s->dRows, growS, h->s->dAcc, gaccA, h->s->dAlphaD, gam,
                                         h->s->dLoglik, ust, dUso);
      CK(cudaGetLastError()); /* launches checked; a fault is reported at the read-back below */
      if (use_stats) { /* their sums into the graphs' blocks, in utterance order */
        k_hmm_stats_sum<<<ng, 256>>>(h->d, dIdx, dIdx + ng, dIdx + 2 * ng + 1, h->s->dUStats, dUso, h->dStats);
        CK(cudaGetLastError());
      }
      if (pq) gh_cuda_hmm_chunk_pairs(h, dUd, dCol, pq, OP_FB, h->s->dState, nu, nt, F, f0);
    }
    CK(cudaEventRecord(ev1));
    CK(cudaMemcpy(hv, h->s->dLoglik, nu * sizeof(double), cudaMemcpyDeviceToHost));
    gh_cuda_hmm_kernel_time_add(ev0, ev1); /* (done by now) */
    for (int32_t k = 0; k < nu; ++k) vals[u0 + k] = hv[k];
    if (outs && N > 0)
      CK(cudaMemcpy(outs + soff[u0], h->s->dState, (size_t)N * sizeof(float), cudaMemcpyDeviceToHost));
    if (op == OP_VIT && F > 0 && path)
      CK(cudaMemcpy(path + f0, h->s->dPath, (size_t)F * sizeof(int32_t), cudaMemcpyDeviceToHost));
    u0 = u1;
  }
  if (use_stats) {
    double *hs = (double *)gh_malloc((h->stats_size + 1) * sizeof(double));
    CK(cudaMemcpy(hs, h->dStats, h->stats_size * sizeof(double), cudaMemcpyDeviceToHost));
    for (long long k = 0; k < h->stats_size; ++k) stats[k] += hs[k];
    free(hs);
  }
  CK(cudaEventDestroy(ev0));
  CK(cudaEventDestroy(ev1));
  free(soff); free(hud); free(huso); free(hidx); free(hv);
}
