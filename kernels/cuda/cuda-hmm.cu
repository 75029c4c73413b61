/* cuda-hmm.cu -- the CUDA HMM kernels of the CUDA backend: forward (log
 * domain and Rabiner-scaled), Viterbi and forward-backward over a batch of
 * utterances (semantics: kernels/backend.h; reference: kernels/cpu/cpu-hmm.c;
 * equations: doc/hmm.md; design and speeds: doc/kernels.md, "HMM kernels
 * (CUDA)").
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
 * Long utterances (1-8 of >= 1024 frames on graphs of <= 64 states): the
 * log-domain forward and the Viterbi take the time-parallel path below
 * ("time-parallel forward and Viterbi").
 *
 * Dense graphs (one graph for the whole batch, S >= 64, A >= S^2/4; no
 * alpha output): hmm_forward and hmm_viterbi take the dense batched path
 * below ("dense batched path"): one GEMM (forward) or max-plus product
 * (Viterbi) per frame over all running sequences; rule and figures in
 * doc/kernels.md "Dense graphs" and bench/RESULTS.md B6-B9.
 *
 * Every CUDA call is checked; failures die with the call and CUDA's message.
 */
#include <cuda_runtime.h>
#include <cub/device/device_scan.cuh>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "backend.h"
#include "base/gh-base.h"
#include "cuda-check.h"
}
#include "cuda-gemm.h"

#define HMM_SMEM_S 2048  /* double rows in shared memory up to this many states */
#define HMM_SMEM_A 1536  /* xi accumulators (double) in shared memory up to this many arcs */
#define KP 4             /* emissions prefetched one frame ahead per thread */
#define HEAVY 16         /* states with more arcs than this (in for forward/Viterbi, out for
                            backward) are done by a whole warp, lanes over the arcs */
#define SUM_BATCH 32     /* k_hmm_stats_sum: per-utterance blocks loaded at once */
#define SUM_TILE 1024    /* ... and their offsets staged in shared memory at once */
#define RED 96           /* doubles of reduction scratch at the start of shared memory */


/* One uploaded graph: S states at sbase in the state arrays, A arcs at abase
 * in the arc arrays, S + 1 CSR offsets (incoming and outgoing, local arc
 * indices) at obase, stats block at stats_off. */
struct HGraph {
  int S, A, sbase, abase, obase, num_pdfs;
  int nhi, nho, hbase, pad;  /* heavy states: nhi by in-degree, then nho by out-degree, at heavy + hbase */
  long long stats_off;
};

/* One utterance of a chunk: first loglike row (and path index), first
 * element of its T x S per-state block, length, graph, index in the chunk. */
struct UDesc {
  long long frame0, state0;
  int T, g, u, pad;
};

/* Device arrays of all uploaded graphs (concatenated). */
struct HArrays {
  const HGraph *G;
  const int *pdf;        /* [sum S] */
  const float *init, *fin;
  const int *in_off;     /* [sum (S+1)] incoming CSR, local arc index */
  const int *arc_src;    /* [sum A] local source state, graph (destination) order */
  const float *arc_logp; /* [sum A] */
  const double *arc_p;   /* [sum A] exp(arc_logp), scaled forward */
  const int *out_off;    /* [sum (S+1)] outgoing CSR */
  const int *out_dst;    /* [sum A] by source: destination */
  const int *out_arc;    /* [sum A] by source: local arc index (graph order) */
  const float *out_logp; /* [sum A] by source: log-prob */
  const int *heavy;      /* per graph: states with in-degree > HEAVY, then with out-degree > HEAVY */
  const int *same_prev;  /* [sum S] the previous state of the graph with the same pdf, or -1 (k_fb_pairs) */
  const int *same_next;  /* [sum S] the next one, or -1 */
};

/* ---------------------------------------------------------------- device */

__device__ __forceinline__ double warp_max(double v) {
  for (int o = 16; o; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ double warp_sum(double v) {
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
/* Max over the block (blockDim.x a multiple of 32, <= 1024); every thread
 * must call; red: shared scratch of 32 doubles; result in every thread. */
__device__ double block_max(double v, double *red) {
  v = warp_max(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  double r = -INFINITY;
  for (int k = 0; k < (int)(blockDim.x >> 5); ++k) r = fmax(r, red[k]);
  return r;
}
/* Sum over the block; as block_max. */
__device__ double block_sum(double v, double *red) {
  v = warp_sum(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  double r = 0.0;
  for (int k = 0; k < (int)(blockDim.x >> 5); ++k) r += red[k];
  return r;
}
/* (value, index) argmax with the reference's rule: larger value wins, equal
 * values go to the lower index; index -1 (value -inf) loses to any index. */
__device__ __forceinline__ void arg_combine(double &v, int &i, double v2, int i2) {
  if (v2 > v || (v2 == v && i2 >= 0 && (i < 0 || i2 < i))) { v = v2; i = i2; }
}
/* (v, i) of every lane of the warp <- the warp's arg_combine of all lanes'. */
__device__ __forceinline__ void warp_argmax(double &v, int &i) {
  for (int o = 16; o; o >>= 1) {
    const double v2 = __shfl_xor_sync(0xffffffffu, v, o);
    const int i2 = __shfl_xor_sync(0xffffffffu, i, o);
    arg_combine(v, i, v2, i2);
  }
}

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
 * the same length).  Only graphs without heavy states (hmm_run checks).
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

/* hmm-bw's pdf posteriors (backend.h gh_hmm_gamma_pairs, whose loops this
 * follows operation for operation) of a chunk's utterances from their
 * gamma (k_hmm_backward's, device), one block per utterance, a thread per
 * frame.  A state with gamma > 0 (NaN included, as the host's test) starts
 * its pdf's sum unless an earlier state of the same pdf (same_prev chain)
 * has gamma > 0; the sum then adds the later ones (same_next chain) in
 * double, in state order.  WRITE = 0: cnt[frame] = the frame's pairs;
 * WRITE = 1: the pairs at out + off[frame] (the exclusive prefix sums of
 * cnt over the chunk's frames, so utterances and frames in order), frame
 * fbase + the chunk frame, pdf col_pdf[ud.pad + column] (or the column
 * when col_pdf is NULL or ud.pad < 0: the utterance's map, hmm_run). */
template <int WRITE>
__global__ void k_fb_pairs(HArrays g, const UDesc *__restrict__ ud, const float *__restrict__ gamma,
                           const double *__restrict__ loglik, const int *__restrict__ col_pdf, long long fbase,
                           double min_post, long long *cnt, const long long *__restrict__ off,
                           gh_frame_pdf *out) {
  const UDesc d = ud[blockIdx.x];
  const HGraph G = g.G[d.g];
  const int S = G.S;
  const int *pdf = g.pdf + G.sbase, *prv = g.same_prev + G.sbase, *nxt = g.same_next + G.sbase;
  const bool ok = loglik[d.u] > -INFINITY;
  for (int t = threadIdx.x; t < d.T; t += blockDim.x) {
    const float *gr = gamma + d.state0 + (long long)t * S;
    long long n = 0, q = WRITE ? off[d.frame0 + t] : 0;
    for (int j = 0; ok && j < S; ++j) {
      const float v = gr[j];
      if (v <= 0.f) continue;
      bool first = true;
      for (int k = prv[j]; k >= 0; k = prv[k])
        if (!(gr[k] <= 0.f)) { first = false; break; }
      if (!first) continue;
      double sum = 0.0;
      sum += v;
      for (int k = nxt[j]; k >= 0; k = nxt[k]) {
        const float x = gr[k];
        if (!(x <= 0.f)) sum += x;
      }
      if (sum >= min_post && sum > 0) {
        const float w = (float)sum;
        if (w != 0.0f) {
          if (WRITE) {
            gh_frame_pdf pr;
            pr.frame = (int32_t)(fbase + d.frame0 + t);
            pr.pdf = col_pdf && d.pad >= 0 ? col_pdf[d.pad + pdf[j]] : pdf[j];
            pr.weight = w;
            out[q++] = pr;
          } else {
            ++n;
          }
        }
      }
    }
    if (!WRITE) cnt[d.frame0 + t] = n;
  }
}

/* Viterbi training's pairs (backend.h hmm_estep_pairs, op
 * GH_HMM_ESTEP_VITERBI; the host's rule in gh_backend_hmm_estep_pairs) of a
 * chunk's utterances from their device path (k_hmm_viterbi's), one block per
 * utterance, a thread per frame: one pair (frame, pdf of the path's state,
 * 1) per frame of an utterance with a complete path (score > -inf and a
 * state at its first frame); an utterance without one gets score -inf and
 * no pairs.  WRITE, cnt, off, col_pdf, out: as k_fb_pairs. */
template <int WRITE>
__global__ void k_vit_pairs(HArrays g, const UDesc *__restrict__ ud, const int *__restrict__ path, double *score,
                            const int *__restrict__ col_pdf, long long fbase, long long *cnt,
                            const long long *__restrict__ off, gh_frame_pdf *out) {
  const UDesc d = ud[blockIdx.x];
  const HGraph G = g.G[d.g];
  const int *pdf = g.pdf + G.sbase, *pu = path + d.frame0;
  const bool ok = d.T > 0 && score[d.u] > -INFINITY && pu[0] >= 0;
  if (WRITE && !ok && d.T > 0 && threadIdx.x == 0) score[d.u] = -INFINITY;
  for (int t = threadIdx.x; t < d.T; t += blockDim.x) {
    if (!WRITE) {
      cnt[d.frame0 + t] = ok ? 1 : 0;
    } else if (ok) {
      gh_frame_pdf pr;
      pr.frame = (int32_t)(fbase + d.frame0 + t);
      const int j = pu[t];
      pr.pdf = col_pdf && d.pad >= 0 ? col_pdf[d.pad + pdf[j]] : pdf[j];
      pr.weight = 1.0f;
      out[off[d.frame0 + t]] = pr;
    }
  }
}

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

#define DENSE_MIN_S 64    /* dense path: S >= DENSE_MIN_S and A >= S^2 / 4 */
#define DENSE_MAX_S 8192  /* dense matrices are built only up to this many states */
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

/* ------------------------------------------------------------ host side */

/* The grow-only device scratch of the HMM calls, one per backend
 * (gh_cuda_hmm_scratch_slot): a trainer keeps one graph set per block, and
 * their calls (complete on return, one at a time) share it, so the device
 * memory they hold is that of the largest call, not of every block. */
struct HScratch {
  float *dLL; size_t capLL;
  float *dState; size_t capState; /* alpha / gamma [sum T S] */
  double *dAlphaD; size_t capAlphaD; /* fb: log alpha [sum T S] */
  int *dBp; size_t capBp;
  int *dPath; size_t capPath;
  double *dLoglik; size_t capLoglik;
  UDesc *dUd; size_t capUd;
  double *dRows; size_t capRows;
  double *dAcc; size_t capAcc;
  double *dUStats; size_t capUStats; /* fb: per-utterance stats blocks of a chunk */
  long long *dUso; size_t capUso;    /* their offsets [nu + 1] */
  int *dSumIdx; size_t capSumIdx;    /* k_hmm_stats_sum's graphs, offsets and utterance lists */
  long long *dPCnt; size_t capPCnt;  /* hmm_fb_pairs: pairs per chunk frame, their prefix sums */
  gh_frame_pdf *dPairs; size_t capPairs;
  void *dScanTmp; size_t capScanTmp;
  int *dCol; size_t capCol;
  /* hmm_estep_pairs: the block's loglikes [rows x num_pdfs]; its pairs (all chunks') */
  float *dLLB; size_t capLLB;
  gh_frame_pdf *dPairsB; size_t capPairsB;
  int64_t nPairsB;
};

extern "C" void **gh_cuda_hmm_scratch_slot(gh_backend *b); /* cuda.cu: the backend's pointer */

/* Frees a backend's HMM scratch (cuda.cu, when the backend is freed). */
extern "C" void gh_cuda_hmm_scratch_free(void *p) {
  HScratch *s = (HScratch *)p;
  if (!s) return;
  cudaFree(s->dLL); cudaFree(s->dState); cudaFree(s->dAlphaD); cudaFree(s->dBp); cudaFree(s->dPath);
  cudaFree(s->dLoglik); cudaFree(s->dUd); cudaFree(s->dRows); cudaFree(s->dAcc); cudaFree(s->dUStats);
  cudaFree(s->dUso); cudaFree(s->dSumIdx); cudaFree(s->dPCnt); cudaFree(s->dPairs); cudaFree(s->dScanTmp);
  cudaFree(s->dCol); cudaFree(s->dLLB); cudaFree(s->dPairsB);
  free(s);
}

static HScratch *scratch_of(gh_backend *b) {
  void **slot = gh_cuda_hmm_scratch_slot(b);
  if (!*slot) *slot = gh_calloc(1, sizeof(HScratch));
  return (HScratch *)*slot;
}

struct gh_dev_hmm {
  int32_t num_graphs;
  HGraph *hG;              /* host copy */
  long long stats_size;    /* sum_g 2 S + A */
  HArrays d;               /* device arrays */
  void *dmem[15];          /* the allocations behind d (for hmm_free) */
  HScratch *s;             /* the calls' device scratch: the backend's, shared by all its graph sets */
  double *dStats; size_t capStats; /* the graphs' stats blocks (fb) */
  int *hOarc;              /* host [sum A]: the local arc (graph order) at each position of the outgoing CSR */
  /* dense graphs (dense batched path), per graph or NULL: row-major S x S
   * A[i][j] = sum exp(logp) over arcs i -> j in double and float, and
   * logA[i][j] = max logp (float, -inf without an arc) */
  double **dA64;
  float **dA32, **dLogA;
  float **dA3; /* per dense graph: [Ab | As | Ab] (3 S^2 floats), made at the first 3xTF32 forward */
  double **dAtp; /* per graph of <= TP_MAX_S states: log sum exp(logp) over arcs i -> j (double, S x S,
                    -inf without an arc), made at the first time-parallel forward */
  double **dAtpV; /* the same with max logp over the arcs i -> j (time-parallel Viterbi) */
  struct HPlan *plan; /* hmm_estep_pairs' plan of the last batch (below), or NULL */
};

/* hmm_estep_pairs' plan of a batch that is one chunk: the utterance
 * descriptors in launch order, the per-utterance stats offsets and
 * k_hmm_stats_sum's lists, on the device.  The resident trainers call
 * hmm_estep_pairs on each block's graph set with the same batch at every
 * iteration; the plan is used again while the batch's frame offsets,
 * graph indices and column maps are byte for byte the ones it was made
 * from (checked at every call), so it changes no result: it saves the
 * host's descriptors, sort and three uploads (each a synchronisation) per
 * block and iteration. */
struct HPlan {
  int32_t B, ng;                    /* utterances; graphs used (k_hmm_stats_sum's blocks) */
  int Smax, Amax, heavy, stats;     /* stats: dUso and dSumIdx made */
  int32_t ncol;                     /* the column maps, host copy and device [ncol] */
  int32_t *col, *dCol;
  long long nstate, nust;           /* sum T S; per-utterance stats doubles (sum 2 S + A) */
  int64_t *frame_off;               /* the key: host copies [B + 1], [B], [B] */
  int32_t *graph, *ucol;
  UDesc *dUd;                       /* device [B], launch order */
  long long *dUso;                  /* device [B + 1] (stats only) */
  int *dSumIdx;                     /* device: gs [ng], uoff [ng + 1], ul [B] (stats only) */
};

static void plan_free(HPlan *p) {
  if (!p) return;
  cudaFree(p->dUd); cudaFree(p->dUso); cudaFree(p->dSumIdx); cudaFree(p->dCol);
  free(p->frame_off); free(p->graph); free(p->ucol); free(p->col);
  free(p);
}

static double g_hmm_kernel_seconds = 0.0;

/* Seconds spent in the HMM kernels so far (device time by events, excluding
 * transfers), for the benchmark lines of test_hmm_cuda. */
extern "C" double gh_cuda_hmm_kernel_seconds(void) { return g_hmm_kernel_seconds; }

/* Waits for ev1 (recorded after the work enqueued since ev0) and adds the
 * time between them to g_hmm_kernel_seconds. */
static void kernel_time_add(cudaEvent_t ev0, cudaEvent_t ev1) {
  CK(cudaEventSynchronize(ev1));
  float ms = 0.f;
  CK(cudaEventElapsedTime(&ms, ev0, ev1));
  g_hmm_kernel_seconds += ms * 1e-3;
}
/* ... after recording ev1 now. */
static void kernel_time_end(cudaEvent_t ev0, cudaEvent_t ev1) {
  CK(cudaEventRecord(ev1));
  kernel_time_add(ev0, ev1);
}

/* Grow a device buffer to at least n elements of size sz (contents not kept). */
static void hgrow_dev(void **p, size_t *cap, size_t n, size_t sz) {
  if (n <= *cap && *p) return;
  size_t want = n + n / 4 + 16;
  if (*p) CK(cudaFree(*p));
  *p = NULL;
  CK(cudaMalloc(p, want * sz));
  *cap = want;
}

/* Copy n elements of size sz to a new device allocation (kept in h->dmem[slot]). */
static void *to_dev(gh_dev_hmm *h, int slot, const void *src, size_t n, size_t sz) {
  void *p = NULL;
  CK(cudaMalloc(&p, (n ? n : 1) * sz));
  if (n) CK(cudaMemcpy(p, src, n * sz, cudaMemcpyHostToDevice));
  h->dmem[slot] = p;
  return p;
}

/* hmm_upload: concatenates the graphs' arrays (states, arcs in graph order,
 * incoming and outgoing CSR offsets, outgoing arcs grouped by source) and
 * copies them to the device once.  Errors: gh_die on a malformed graph
 * (offsets not a CSR of its arcs) or a CUDA failure. */
/* A dense graph's matrices (allocated by the caller): A[i][j] = sum of
 * exp(logp) over the arcs i -> j in double (dA64) and float (dA32), and the
 * largest logp (dLogA, -inf without an arc). */
static void dense_fill(gh_dev_hmm *h, int32_t k, const gh_hmm_graph *s) {
  const long long S = s->num_states;
  double *a64 = (double *)gh_calloc(S * S, sizeof(double));
  float *a32 = (float *)gh_malloc(S * S * sizeof(float)), *la = (float *)gh_malloc(S * S * sizeof(float));
  for (long long e = 0; e < S * S; ++e) la[e] = -INFINITY;
  for (int a = 0; a < s->num_arcs; ++a) {
    const long long e = (long long)s->arc_src[a] * S + s->arc_dst[a];
    a64[e] += exp((double)s->arc_logp[a]);
    if (s->arc_logp[a] > la[e]) la[e] = s->arc_logp[a];
  }
  for (long long e = 0; e < S * S; ++e) a32[e] = (float)a64[e];
  CK(cudaMemcpy(h->dA64[k], a64, S * S * sizeof(double), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(h->dA32[k], a32, S * S * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(h->dLogA[k], la, S * S * sizeof(float), cudaMemcpyHostToDevice));
  free(a64); free(a32); free(la);
}

extern "C" gh_dev_hmm *gh_cuda_hmm_upload(gh_backend *b, const gh_hmm_graph *const *graphs,
                                          int32_t num_graphs) {
  gh_dev_hmm *h = (gh_dev_hmm *)gh_calloc(1, sizeof *h);
  h->num_graphs = num_graphs;
  h->s = scratch_of(b);
  h->hG = (HGraph *)gh_calloc(num_graphs > 0 ? num_graphs : 1, sizeof(HGraph));
  long long nS = 0, nA = 0, nO = 0, nH = 0, stats = 0;
  for (int32_t k = 0; k < num_graphs; ++k) {
    const gh_hmm_graph *s = graphs[k];
    if (s->num_states < 1 || s->num_arcs < 0 || s->in_off[0] != 0 || s->in_off[s->num_states] != s->num_arcs)
      gh_die("hmm_upload: graph %d: %d states, %d arcs, in_off[0] = %d, in_off[S] = %d (not a CSR of its arcs)",
             k, s->num_states, s->num_arcs, s->num_states > 0 ? s->in_off[0] : -1,
             s->num_states > 0 ? s->in_off[s->num_states] : -1);
    HGraph *G = &h->hG[k];
    G->S = s->num_states; G->A = s->num_arcs; G->num_pdfs = s->num_pdfs;
    G->sbase = (int)nS; G->abase = (int)nA; G->obase = (int)nO; G->stats_off = stats;
    G->hbase = (int)nH;
    nS += s->num_states; nA += s->num_arcs; nO += s->num_states + 1; nH += 2 * s->num_states;
    stats += gh_hmm_graph_stats_size(s);
  }
  if (nA + nO > INT32_MAX) gh_die("hmm_upload: %lld arcs in all: too many for the CUDA backend", nA);
  h->stats_size = stats;
  int *pdf = (int *)gh_malloc((nS + 1) * sizeof(int));
  float *init = (float *)gh_malloc((nS + 1) * sizeof(float)), *fin = (float *)gh_malloc((nS + 1) * sizeof(float));
  int *in_off = (int *)gh_malloc((nO + 1) * sizeof(int)), *out_off = (int *)gh_malloc((nO + 1) * sizeof(int));
  int *src = (int *)gh_malloc((nA + 1) * sizeof(int)), *odst = (int *)gh_malloc((nA + 1) * sizeof(int));
  int *oarc = (int *)gh_malloc((nA + 1) * sizeof(int));
  float *lp = (float *)gh_malloc((nA + 1) * sizeof(float)), *olp = (float *)gh_malloc((nA + 1) * sizeof(float));
  double *ap = (double *)gh_malloc((nA + 1) * sizeof(double));
  int *heavy = (int *)gh_malloc((nH + 1) * sizeof(int));
  int *sprev = (int *)gh_malloc((nS + 1) * sizeof(int)), *snext = (int *)gh_malloc((nS + 1) * sizeof(int));
  int maxp = 1;
  for (int32_t k = 0; k < num_graphs; ++k)
    if (graphs[k]->num_pdfs > maxp) maxp = graphs[k]->num_pdfs;
  int *last = (int *)gh_malloc((size_t)maxp * sizeof(int));
  for (int p = 0; p < maxp; ++p) last[p] = -1;
  for (int32_t k = 0; k < num_graphs; ++k) {
    const gh_hmm_graph *s = graphs[k];
    const HGraph *G = &h->hG[k];
    const int S = G->S, A = G->A;
    for (int j = 0; j < S; ++j) {
      if (s->pdf[j] < 0 || s->pdf[j] >= s->num_pdfs)
        gh_die("hmm_upload: graph %d: state %d has pdf %d (graph has %d pdfs)", k, j, s->pdf[j], s->num_pdfs);
      pdf[G->sbase + j] = s->pdf[j];
      init[G->sbase + j] = s->init[j];
      fin[G->sbase + j] = s->final[j];
      const int pj = last[s->pdf[j]];
      sprev[G->sbase + j] = pj;
      snext[G->sbase + j] = -1;
      if (pj >= 0) snext[G->sbase + pj] = j;
      last[s->pdf[j]] = j;
    }
    for (int j = 0; j < S; ++j) last[s->pdf[j]] = -1;
    int *io = in_off + G->obase, *oo = out_off + G->obase;
    for (int j = 0; j <= S; ++j) { io[j] = s->in_off[j]; oo[j] = 0; }
    for (int j = 0; j < S; ++j)
      for (int a = s->in_off[j]; a < s->in_off[j + 1]; ++a)
        if (a < 0 || a >= A || s->arc_dst[a] != j || s->arc_src[a] < 0 || s->arc_src[a] >= S)
          gh_die("hmm_upload: graph %d: arc %d (%d -> %d) does not match in_off for state %d", k, a,
                 a >= 0 && a < A ? s->arc_src[a] : -1, a >= 0 && a < A ? s->arc_dst[a] : -1, j);
    for (int a = 0; a < A; ++a) {
      src[G->abase + a] = s->arc_src[a];
      lp[G->abase + a] = s->arc_logp[a];
      ap[G->abase + a] = exp((double)s->arc_logp[a]);
      oo[s->arc_src[a] + 1]++;
    }
    for (int i = 0; i < S; ++i) oo[i + 1] += oo[i];
    int *fill = (int *)gh_malloc((S + 1) * sizeof(int));
    memcpy(fill, oo, (S + 1) * sizeof(int));
    for (int a = 0; a < A; ++a) {
      const int q = G->abase + fill[s->arc_src[a]]++;
      odst[q] = s->arc_dst[a];
      oarc[q] = a;
      olp[q] = s->arc_logp[a];
    }
    free(fill);
    HGraph *Gw = &h->hG[k];
    Gw->nhi = Gw->nho = 0;
    for (int j = 0; j < S; ++j)
      if (io[j + 1] - io[j] > HEAVY) heavy[G->hbase + Gw->nhi++] = j;
    for (int i = 0; i < S; ++i)
      if (oo[i + 1] - oo[i] > HEAVY) heavy[G->hbase + Gw->nhi + Gw->nho++] = i;
  }
  HArrays *d = &h->d;
  d->G = (const HGraph *)to_dev(h, 0, h->hG, num_graphs, sizeof(HGraph));
  d->heavy = (const int *)to_dev(h, 12, heavy, nH, sizeof(int));
  d->pdf = (const int *)to_dev(h, 1, pdf, nS, sizeof(int));
  d->init = (const float *)to_dev(h, 2, init, nS, sizeof(float));
  d->fin = (const float *)to_dev(h, 3, fin, nS, sizeof(float));
  d->in_off = (const int *)to_dev(h, 4, in_off, nO, sizeof(int));
  d->arc_src = (const int *)to_dev(h, 5, src, nA, sizeof(int));
  d->arc_logp = (const float *)to_dev(h, 6, lp, nA, sizeof(float));
  d->arc_p = (const double *)to_dev(h, 7, ap, nA, sizeof(double));
  d->out_off = (const int *)to_dev(h, 8, out_off, nO, sizeof(int));
  d->out_dst = (const int *)to_dev(h, 9, odst, nA, sizeof(int));
  d->out_arc = (const int *)to_dev(h, 10, oarc, nA, sizeof(int));
  d->out_logp = (const float *)to_dev(h, 11, olp, nA, sizeof(float));
  d->same_prev = (const int *)to_dev(h, 13, sprev, nS, sizeof(int));
  d->same_next = (const int *)to_dev(h, 14, snext, nS, sizeof(int));
  free(sprev); free(snext); free(last);
  free(pdf); free(init); free(fin); free(in_off); free(out_off); free(src); free(odst);
  free(lp); free(olp); free(ap); free(heavy);
  h->hOarc = oarc;
  h->dA64 = (double **)gh_calloc(num_graphs > 0 ? num_graphs : 1, sizeof(double *));
  h->dA32 = (float **)gh_calloc(num_graphs > 0 ? num_graphs : 1, sizeof(float *));
  h->dLogA = (float **)gh_calloc(num_graphs > 0 ? num_graphs : 1, sizeof(float *));
  h->dA3 = (float **)gh_calloc(num_graphs > 0 ? num_graphs : 1, sizeof(float *));
  h->dAtp = (double **)gh_calloc(num_graphs > 0 ? num_graphs : 1, sizeof(double *));
  h->dAtpV = (double **)gh_calloc(num_graphs > 0 ? num_graphs : 1, sizeof(double *));
  const char *env = getenv("GH_CUDA_HMM");
  const int force = env && !strcmp(env, "dense"), never = env && !strcmp(env, "sparse");
  for (int32_t k = 0; k < num_graphs && !never; ++k) {
    const gh_hmm_graph *s = graphs[k];
    const long long S = s->num_states;
    if (S > DENSE_MAX_S || !(force || (S >= DENSE_MIN_S && 4LL * s->num_arcs >= S * S))) continue;
    CK(cudaMalloc((void **)&h->dA64[k], S * S * sizeof(double)));
    CK(cudaMalloc((void **)&h->dA32[k], S * S * sizeof(float)));
    CK(cudaMalloc((void **)&h->dLogA[k], S * S * sizeof(float)));
    dense_fill(h, k, s);
  }
  return h;
}

/* hmm_reweight (backend.h): the log-probability arrays (init, final, arcs
 * in graph order, their exps, arcs in outgoing order) written again in
 * place, the dense matrices of dense graphs recomputed, and the lazily
 * made 3xTF32 and time-parallel matrices dropped (made again at their next
 * use). */
extern "C" void gh_cuda_hmm_reweight(gh_backend *b, gh_dev_hmm *h, const gh_hmm_graph *const *graphs,
                                     int32_t num_graphs) {
  if (num_graphs != h->num_graphs)
    gh_die("hmm_reweight: %d graphs, but %d were uploaded", num_graphs, h->num_graphs);
  long long nS = 0, nA = 0;
  for (int32_t k = 0; k < num_graphs; ++k) {
    const HGraph *G = &h->hG[k];
    if (graphs[k]->num_states != G->S || graphs[k]->num_arcs != G->A || graphs[k]->num_pdfs != G->num_pdfs)
      gh_die("hmm_reweight: graph %d has %d states, %d arcs and %d pdfs; the uploaded one %d, %d and %d", k,
             graphs[k]->num_states, graphs[k]->num_arcs, graphs[k]->num_pdfs, G->S, G->A, G->num_pdfs);
    nS += G->S;
    nA += G->A;
  }
  float *init = (float *)gh_malloc((nS + 1) * sizeof(float)), *fin = (float *)gh_malloc((nS + 1) * sizeof(float));
  float *lp = (float *)gh_malloc((nA + 1) * sizeof(float)), *olp = (float *)gh_malloc((nA + 1) * sizeof(float));
  double *ap = (double *)gh_malloc((nA + 1) * sizeof(double));
  for (int32_t k = 0; k < num_graphs; ++k) {
    const gh_hmm_graph *s = graphs[k];
    const HGraph *G = &h->hG[k];
    memcpy(init + G->sbase, s->init, G->S * sizeof(float));
    memcpy(fin + G->sbase, s->final, G->S * sizeof(float));
    for (int a = 0; a < G->A; ++a) {
      lp[G->abase + a] = s->arc_logp[a];
      ap[G->abase + a] = exp((double)s->arc_logp[a]);
      olp[G->abase + a] = s->arc_logp[h->hOarc[G->abase + a]];
    }
  }
  CK(cudaMemcpy((void *)h->d.init, init, nS * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemcpy((void *)h->d.fin, fin, nS * sizeof(float), cudaMemcpyHostToDevice));
  if (nA) {
    CK(cudaMemcpy((void *)h->d.arc_logp, lp, nA * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy((void *)h->d.arc_p, ap, nA * sizeof(double), cudaMemcpyHostToDevice));
    CK(cudaMemcpy((void *)h->d.out_logp, olp, nA * sizeof(float), cudaMemcpyHostToDevice));
  }
  free(init); free(fin); free(lp); free(olp); free(ap);
  for (int32_t k = 0; k < num_graphs; ++k) {
    if (h->dA64[k]) dense_fill(h, k, graphs[k]);
    cudaFree(h->dA3[k]); cudaFree(h->dAtp[k]); cudaFree(h->dAtpV[k]);
    h->dA3[k] = NULL; h->dAtp[k] = NULL; h->dAtpV[k] = NULL;
  }
}

/* hmm_free: releases the graphs and the scratch of the calls. */
extern "C" void gh_cuda_hmm_free(gh_backend *b, gh_dev_hmm *h) {
  if (!h) return;
  for (int k = 0; k < 15; ++k) cudaFree(h->dmem[k]);
  cudaFree(h->dStats); /* (the scratch is the backend's) */
  for (int32_t k = 0; k < h->num_graphs; ++k) {
    cudaFree(h->dA64[k]); cudaFree(h->dA32[k]); cudaFree(h->dLogA[k]); cudaFree(h->dA3[k]);
    cudaFree(h->dAtp[k]); cudaFree(h->dAtpV[k]);
  }
  free(h->dA64); free(h->dA32); free(h->dLogA); free(h->dA3); free(h->dAtp); free(h->dAtpV);
  plan_free(h->plan);
  free(h->hOarc);
  free(h->hG);
  free(h);
}

enum { OP_FWD, OP_SCALED, OP_VIT, OP_FB };

/* Sort key for utterances of a chunk: longest first (LPT order). */
static int cmp_udesc(const void *a, const void *b) {
  const UDesc *x = (const UDesc *)a, *y = (const UDesc *)b;
  if (x->T != y->T) return x->T > y->T ? -1 : 1;
  return x->u - y->u;
}
/* a[0 .. n) in cmp_udesc's order (a total order: u is unique), by a
 * counting sort on T when the longest utterance is short beside n (a
 * block of hmm-train: 6,500 utterances of ~40 frames; qsort took ~0.9 ms
 * of it, per block and iteration, bench/RESULTS.md D30), else
 * qsort.  Input in ascending u, as hmm_run fills it. */
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
/* hmm_fb_pairs' request (OP_FB): the pairs of gh_hmm_gamma_pairs appended to out. */
struct PairReq {
  const int32_t *col_pdf; /* host, [ncol] or NULL */
  int32_t ncol;
  const int32_t *utt_col; /* host [B]: utterance u's map starts at col_pdf[utt_col[u]] (-1: none); NULL: all at 0 */
  int32_t frame_base;
  double min_post;
  gh_pair_buf *out;       /* host; NULL: the pairs stay on the device, appended to the scratch's dPairsB */
  const float *dLL;       /* the batch's loglikes on the device [frames x num_pdfs], or NULL (the host's) */
};

/* The chunk's pairs (k_fb_pairs or, op OP_VIT, k_vit_pairs: count, prefix
 * sums, write) appended to pq->out; src: the chunk's gamma (float) or path
 * (int), on the device; dUd its utterance descriptors and col the column
 * maps (NULL: none) on the device; F the chunk's frames, f0 its first
 * frame in the batch. */
static void chunk_pairs(gh_dev_hmm *h, const UDesc *dUd, const int *col, const PairReq *pq, int op, const void *src,
                        int32_t nu, int nt, int64_t F, int64_t f0) {
  if (F == 0) return;
  const long long fbase = (long long)pq->frame_base + f0;
  /* cnt [F + 1] (cnt[F] = 0) and its exclusive prefix sums off [F + 1]:
   * off[F] is the count, one read-back */
  hgrow_dev((void **)&h->s->dPCnt, &h->s->capPCnt, 2 * (size_t)F + 3, sizeof(long long));
  long long *cnt = h->s->dPCnt, *off = h->s->dPCnt + F + 1;
  CK(cudaMemsetAsync(cnt + F, 0, sizeof(long long)));
  const float *gamma = (const float *)src;
  const int *path = (const int *)src;
  const int vit = op == OP_VIT;
  if (vit) k_vit_pairs<0><<<nu, nt>>>(h->d, dUd, path, h->s->dLoglik, col, fbase, cnt, NULL, NULL);
  else k_fb_pairs<0><<<nu, nt>>>(h->d, dUd, gamma, h->s->dLoglik, col, fbase, pq->min_post, cnt, NULL, NULL);
  CK(cudaGetLastError());
  size_t tb = 0;
  CK(cub::DeviceScan::ExclusiveSum(NULL, tb, cnt, off, (int64_t)F + 1));
  hgrow_dev(&h->s->dScanTmp, &h->s->capScanTmp, tb + 1, 1);
  CK(cub::DeviceScan::ExclusiveSum(h->s->dScanTmp, tb, cnt, off, (int64_t)F + 1));
  long long n = 0;
  CK(cudaMemcpy(&n, off + F, sizeof(long long), cudaMemcpyDeviceToHost));
  if (n == 0) {
    if (vit) { /* still: the scores of utterances without a complete path to -inf */
      k_vit_pairs<1><<<nu, nt>>>(h->d, dUd, path, h->s->dLoglik, col, fbase, NULL, off, NULL);
      CK(cudaGetLastError());
    }
    return;
  }
  hgrow_dev((void **)&h->s->dPairs, &h->s->capPairs, (size_t)n, sizeof(gh_frame_pdf));
  if (!pq->out) { /* kept on the device: after the earlier chunks' pairs */
    HScratch *s = h->s;
    if (s->capPairsB < (size_t)(s->nPairsB + n)) {
      const size_t want = (size_t)(s->nPairsB + n) + (size_t)(s->nPairsB + n) / 4 + 1024;
      gh_frame_pdf *nb = NULL;
      CK(cudaMalloc((void **)&nb, want * sizeof(gh_frame_pdf)));
      if (s->nPairsB) CK(cudaMemcpy(nb, s->dPairsB, (size_t)s->nPairsB * sizeof(gh_frame_pdf), cudaMemcpyDeviceToDevice));
      cudaFree(s->dPairsB);
      s->dPairsB = nb;
      s->capPairsB = want;
    }
    if (vit) k_vit_pairs<1><<<nu, nt>>>(h->d, dUd, path, h->s->dLoglik, col, fbase, NULL, off, s->dPairsB + s->nPairsB);
    else k_fb_pairs<1><<<nu, nt>>>(h->d, dUd, gamma, h->s->dLoglik, col, fbase, pq->min_post, NULL, off,
                                   s->dPairsB + s->nPairsB);
    CK(cudaGetLastError()); /* (hmm_run's read-back synchronises) */
    s->nPairsB += n;
    return;
  }
  if (vit) k_vit_pairs<1><<<nu, nt>>>(h->d, dUd, path, h->s->dLoglik, col, fbase, NULL, off, h->s->dPairs);
  else k_fb_pairs<1><<<nu, nt>>>(h->d, dUd, gamma, h->s->dLoglik, col, fbase, pq->min_post, NULL, off, h->s->dPairs);
  CK_LAUNCH(vit ? "Viterbi pairs" : "forward-backward pairs");
  gh_pair_buf_reserve(pq->out, n);
  CK(cudaMemcpy(pq->out->v + pq->out->n, h->s->dPairs, (size_t)n * sizeof(gh_frame_pdf), cudaMemcpyDeviceToHost));
  pq->out->n += n;
}

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
  const char *e = getenv("GH_CUDA_HMM_PACK"); /* per chunk: the tests compare both in one process */
  if ((e && !strcmp(e, "0")) || heavy || Smax > 16) return 0;
  const int gw = Smax <= 4 ? 4 : Smax <= 8 ? 8 : 16;
  return pack_shm(gw, Amax, use_stats) <= 48 * 1024 ? gw : 0;
}

/* hmm_run's plan of bt for an hmm_estep_pairs request (pq with the block's
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

static void hmm_run(gh_dev_hmm *h, const gh_hmm_batch *bt, int op, double *vals, float *outs,
                    int32_t *path, double *stats, const PairReq *pq = NULL) {
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
  const int *dCol = NULL; /* chunk_pairs' column maps on the device */
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
        plan_free(h->plan);
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
      if (pq) CK(cudaGetLastError()); /* (chunk_pairs' read-back synchronises) */
      else CK_LAUNCH("viterbi");
      if (pq) chunk_pairs(h, dUd, dCol, pq, OP_VIT, h->s->dPath, nu, nt, F, f0);
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
      if (pq) chunk_pairs(h, dUd, dCol, pq, OP_FB, h->s->dState, nu, nt, F, f0);
    }
    CK(cudaEventRecord(ev1));
    CK(cudaMemcpy(hv, h->s->dLoglik, nu * sizeof(double), cudaMemcpyDeviceToHost));
    kernel_time_add(ev0, ev1); /* (done by now) */
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


/* ---------------------------- time-parallel forward and Viterbi (long utterances)
 *
 * One long utterance leaves the GPU idle in the kernels above (one block,
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
#define TP_MAX_UTTS 8     /* ... and at most this many of them (more fill the GPU with the kernels above) */
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
static int tp_batch(gh_dev_hmm *h, const gh_hmm_batch *bt, int op, const float *alpha) {
  const char *e = getenv("GH_CUDA_HMM");
  const int force = e && !strcmp(e, "timepar");
  if ((e && (!strcmp(e, "sparse") || !strcmp(e, "dense"))) || alpha || (op != OP_FWD && op != OP_VIT && op != OP_FB)) return 0;
  if (bt->num_utts <= 0 || bt->num_utts > TP_MAX_UTTS) return 0;
  for (int32_t u = 0; u < bt->num_utts; ++u) {
    const int32_t gi = bt->graph ? bt->graph[u] : 0;
    if (gi < 0 || gi >= h->num_graphs) return 0; /* hmm_run dies with the message */
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
 * (tp_batch said yes), one after the other (each fills the GPU with its
 * chunks). */
static void tp_run(gh_dev_hmm *h, const gh_hmm_batch *bt, int op, double *vals, int32_t *path, float *gamma,
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
    kernel_time_end(ev0, ev1);
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

/* Which path a batch takes (doc/kernels.md "Dense graphs"): the dense
 * batched path when $GH_CUDA_HMM is not "sparse", every utterance uses the
 * same graph g, g is dense (built at upload: S >= DENSE_MIN_S and A >=
 * S^2/4, or $GH_CUDA_HMM=dense and S <= DENSE_MAX_S), no alpha output is
 * asked for, cuBLAS is loaded (forward) and the batch fits half the free
 * device memory in one piece; else -1 (the sparse per-utterance kernels). */
static int dense_graph(gh_dev_hmm *h, const gh_hmm_batch *bt, int op, const float *outs) {
  const char *e = getenv("GH_CUDA_HMM");
  if ((e && !strcmp(e, "sparse")) || outs || bt->num_utts <= 0) return -1;
  const int g = bt->graph ? bt->graph[0] : 0;
  if (g < 0 || g >= h->num_graphs || !h->dLogA[g]) return -1;
  for (int32_t u = 1; u < bt->num_utts; ++u)
    if ((bt->graph ? bt->graph[u] : 0) != g) return -1;
  if (op != OP_VIT && !gg_available()) return -1;
  if (h->hG[g].num_pdfs > bt->num_pdfs) return -1; /* hmm_run dies with the message */
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
static void dense_run(gh_dev_hmm *h, int g, const gh_hmm_batch *bt, int op, int prec, double *vals, int32_t *path) {
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
  kernel_time_end(ev0, ev1);
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

/* The dense scaled forward's arithmetic for S states at the backend's
 * --precision prec: FP32, TF32X3 or TF32 as asked; AUTO: TF32X3 from
 * HMM_SPLIT_MIN_S states, else FP32.  Measured on an H200 (bench/RESULTS.md
 * D18; 256 sequences x 100 frames, time / max |log P - ref| /
 * |log P| against the CPU double reference): S = 4096 fp32 19.6 ms 5.9e-9,
 * tf32x3 11.4 ms 4.1e-5, tf32 6.0 ms 5.2e-5; S = 2048 6.44 / 5.27 ms;
 * S = 1024 2.80 / 2.51 ms (3.6e-8 in test_hmm_cuda); S = 512 (512
 * sequences) 2.31 / 2.05 ms, 7.4e-9 / 4.6e-6.  The tensor cores' own
 * accumulation (truncating, over the whole depth 3S) rather than the
 * operand split bounds tf32x3's error: about 2e-5 of log c_t per frame
 * at S = 4096, i.e. ~2e-5 nats a frame, inside the GMM paths' budget of
 * 1e-4 (1 + |ll|) per frame (doc/kernels.md); below 1024 states the gain
 * is ~10% and fp32 keeps its 1e-8.  The log-domain forward is always fp64. */
#define HMM_SPLIT_MIN_S 1024
static int hmm_precision(int prec, int S) {
  if (prec != GH_PREC_AUTO) return prec;
  return S >= HMM_SPLIT_MIN_S ? GH_PREC_TF32X3 : GH_PREC_FP32;
}

/* -inf from the dense path may be underflow (every state
 * > ~700 nats (double) / ~87 nats (float) below the frame's best, or a
 * final weight that small) rather than "no path": such utterances of the
 * batch are redone, one by one, by the sparse kernels (log domain, double
 * rows).  op: OP_FWD or OP_SCALED. */
static void redo_neg_inf(gh_dev_hmm *h, const gh_hmm_batch *batch, int op, double *loglik) {
  for (int32_t u = 0; u < batch->num_utts; ++u) {
    const int64_t T = batch->frame_off[u + 1] - batch->frame_off[u];
    if (T == 0 || loglik[u] > -INFINITY) continue;
    const int32_t gi = batch->graph ? batch->graph[u] : 0;
    int64_t off1[2] = {0, T};
    gh_hmm_batch b1 = {1, batch->num_pdfs, batch->loglikes + batch->frame_off[u] * batch->num_pdfs, off1, &gi};
    hmm_run(h, &b1, op, loglik + u, NULL, NULL, NULL);
  }
}

/* hmm_forward (backend.h): log domain (k_hmm_forward<0>) or GH_HMM_SCALED
 * (k_hmm_scaled); loglik [B] natural log; alpha NULL or [sum T S] float.
 * A few long utterances on small graphs take the time-parallel path (log
 * domain only),
 * batches on one dense graph the dense path, the rest the sparse kernels. */
extern "C" void gh_cuda_hmm_forward(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, int flags,
                                    double *loglik, float *alpha) {
  const int op = (flags & GH_HMM_SCALED) ? OP_SCALED : OP_FWD;
  if (tp_batch(h, batch, op, alpha)) { /* exact in the log domain: -inf is "no path" */
    tp_run(h, batch, OP_FWD, loglik, NULL, NULL, NULL);
    return;
  }
  const int g = dense_graph(h, batch, op, alpha);
  if (g < 0) {
    hmm_run(h, batch, op, loglik, alpha, NULL, NULL);
    return;
  }
  dense_run(h, g, batch, op, hmm_precision(b->precision, h->hG[g].S), loglik, NULL);
  redo_neg_inf(h, batch, op, loglik);
}

/* hmm_viterbi (backend.h): path [frames] state indices, score [B] natural log. */
extern "C" void gh_cuda_hmm_viterbi(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, int32_t *path,
                                    double *score) {
  if (tp_batch(h, batch, OP_VIT, NULL)) {
    tp_run(h, batch, OP_VIT, score, path, NULL, NULL);
    return;
  }
  const int g = dense_graph(h, batch, OP_VIT, NULL);
  if (g >= 0) dense_run(h, g, batch, OP_VIT, 0, score, path);
  else hmm_run(h, batch, OP_VIT, score, NULL, path, NULL);
}

/* hmm_fb (backend.h): loglik [B]; gamma NULL or [sum T S] float; stats NULL
 * or host doubles (per graph 2 S + A), added to. */
extern "C" void gh_cuda_hmm_fb(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, double *loglik,
                               float *gamma, double *stats) {
  if (tp_batch(h, batch, OP_FB, NULL)) {
    tp_run(h, batch, OP_FB, loglik, NULL, gamma, stats);
    return;
  }
  hmm_run(h, batch, OP_FB, loglik, gamma, NULL, stats);
}

/* hmm_fb_pairs (backend.h): hmm_fb with gamma kept on the device and turned
 * into pdf posteriors there (k_fb_pairs); the time-parallel path (a few
 * long utterances) fetches gamma and runs the host rule. */
extern "C" void gh_cuda_hmm_fb_pairs(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch,
                                     const gh_hmm_graph *const *graphs, const int32_t *col_pdf, int32_t frame_base,
                                     double min_post, double *loglik, double *stats, gh_pair_buf *out) {
  if (tp_batch(h, batch, OP_FB, NULL)) {
    int64_t *soff = (int64_t *)gh_malloc(sizeof(int64_t) * ((size_t)batch->num_utts + 1));
    gh_hmm_batch_state_off(batch, graphs, soff);
    float *gamma = (float *)gh_malloc(sizeof(float) * (size_t)(soff[batch->num_utts] + 1));
    tp_run(h, batch, OP_FB, loglik, NULL, gamma, stats);
    gh_hmm_gamma_pairs(batch, graphs, gamma, loglik, col_pdf, frame_base, min_post, out);
    free(gamma);
    free(soff);
    return;
  }
  const PairReq pq = {col_pdf, batch->num_pdfs, NULL, frame_base, min_post, out, NULL};
  hmm_run(h, batch, OP_FB, loglik, NULL, NULL, stats, &pq);
}

extern "C" void gh_cuda_loglikes_data_dev(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd, int32_t row0, int32_t T,
                                          float *out, int32_t ldo);
extern "C" void gh_cuda_loglikes_segs_dev(gh_backend *b, const gh_score_seg *segs, int32_t nseg, gh_dev_data *dd,
                                          float *out, int32_t ldo); /* cuda.cu */
extern "C" void gh_cuda_data_set_pairs_dev(gh_backend *b, gh_dev_data *dd, const gh_frame_pdf *dPairs, int64_t n,
                                           int32_t bound, double *wsum); /* cuda.cu */

/* hmm_estep_pairs (backend.h): the segments scored from d's resident
 * frames into the scratch's block loglikes (gh_cuda_loglikes_data_dev: the
 * bits loglikes_data gives the host), hmm_run's forward-backward reading
 * them there, k_fb_pairs mapping each utterance's columns with its
 * segment's map and leaving the pairs on the device, and
 * gh_cuda_data_set_pairs_dev sorting them into d.  op
 * GH_HMM_ESTEP_VITERBI: k_hmm_viterbi's path stays on the device and
 * k_vit_pairs makes the pairs from it.  Returns -1 (nothing done) for a
 * batch that takes the time-parallel path (a few long utterances) or, for
 * Viterbi, the dense path (one dense graph): the caller runs the host path. */
extern "C" int64_t gh_cuda_hmm_estep_pairs(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch,
                                           const gh_hmm_graph *const *graphs, gh_dev_data *d, const gh_score_seg *segs,
                                           int32_t nseg, int op, double min_post, double *loglik, double *stats,
                                           double *wsum, double sec[2]) {
  const int vop = op == GH_HMM_ESTEP_VITERBI ? OP_VIT : OP_FB;
  if (tp_batch(h, batch, vop, NULL)) return -1;
  if (vop == OP_VIT && dense_graph(h, batch, OP_VIT, NULL) >= 0) return -1; /* hmm_viterbi's dense path */
  const int32_t B = batch->num_utts, ld = batch->num_pdfs;
  const int64_t rows = batch->frame_off[B];
  HScratch *s = h->s;
  double t0 = gh_seconds();
  hgrow_dev((void **)&s->dLLB, &s->capLLB, (size_t)rows * ld + 1, sizeof(float));
  /* the scoring's time by events, read after the block's last
   * synchronisation: the host goes on to the column maps meanwhile */
  cudaEvent_t ev[2];
  CK(cudaEventCreate(&ev[0]));
  CK(cudaEventCreate(&ev[1]));
  CK(cudaEventRecord(ev[0]));
  gh_cuda_loglikes_segs_dev(b, segs, nseg, d, s->dLLB, ld); /* one launch for the score groups where it can */
  CK(cudaEventRecord(ev[1]));
  int32_t ncol = 0, bound = 1;
  int32_t *ucol = (int32_t *)gh_malloc(sizeof(int32_t) * (size_t)(B + 1));
  int32_t *cols = gh_score_seg_maps(batch, graphs, h->num_graphs, segs, nseg, &ncol, ucol, &bound);
  const PairReq pq = {ncol ? cols : NULL, ncol, ucol, 0, min_post, NULL, s->dLLB};
  s->nPairsB = 0;
  hmm_run(h, batch, vop, loglik, NULL, NULL, vop == OP_FB ? stats : NULL, &pq);
  const int64_t n = s->nPairsB;
  gh_cuda_data_set_pairs_dev(b, d, s->dPairsB, n, bound, wsum);
  float ms = 0.f;
  CK(cudaEventSynchronize(ev[1]));
  CK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
  CK(cudaEventDestroy(ev[0]));
  CK(cudaEventDestroy(ev[1]));
  const double all = gh_seconds() - t0, sc = ms * 1e-3 < all ? ms * 1e-3 : all;
  sec[0] += sc;
  sec[1] += all - sc;
  free(cols); free(ucol);
  return n;
}
