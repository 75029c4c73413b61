/* cuda-hmm.cu -- the CUDA HMM kernels of the CUDA backend: forward (log
 * domain and Rabiner-scaled), Viterbi and forward-backward over a batch of
 * utterances (semantics: kernels/backend.h; reference: kernels/cpu/cpu-hmm.c;
 * equations: doc/hmm.md; design and speeds: doc/kernels.md, "HMM kernels
 * (CUDA)").
 *
 * Mapping (Liu, cuHMM, seed 004, Sec. 3: one time step of all sequences and
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
 * a frame's time is not that of the longest serial arc loop.
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

extern "C" {
#include "backend.h"
#include "gh-base.h"
#include "cuda-check.h"
}

#define HMM_SMEM_S 2048  /* double rows in shared memory up to this many states */
#define HMM_SMEM_A 1536  /* xi accumulators (double) in shared memory up to this many arcs */
#define KP 4             /* emissions prefetched one frame ahead per thread */
#define HEAVY 16         /* states with more arcs than this (in for forward/Viterbi, out for
                            backward) are done by a whole warp, lanes over the arcs */
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

/* Row storage of a block: shared memory after the reduction scratch, or the
 * block's pair of rows in the global scratch grow (stride 2 growS). */
__device__ __forceinline__ double *block_rows(double *sh, double *grow, int growS) {
  return growS ? grow + (size_t)blockIdx.x * 2 * growS : sh + RED;
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
      double m = -INFINITY;
      for (int a = a0; a < a1; ++a) m = fmax(m, prev[src[a]] + (double)lp[a]);
      double x = -INFINITY;
      if (m > -INFINITY) {
        double s = 0.0;
        for (int a = a0; a < a1; ++a) s += exp(prev[src[a]] + (double)lp[a] - m);
        x = m + log(s) + (double)ej;
      }
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
      double m = -INFINITY;
      int arg = -1;
      for (int a = ioff[j]; a < ioff[j + 1]; ++a) {
        const int i = src[a];
        const double v = prev[i] + (double)lp[a];
        if (v > m || (v == m && arg >= 0 && i < arg)) { m = v; arg = i; }
      }
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
      for (int o = 16; o; o >>= 1) {
        const double v2 = __shfl_xor_sync(0xffffffffu, m, o);
        const int i2 = __shfl_xor_sync(0xffffffffu, arg, o);
        arg_combine(m, arg, v2, i2);
      }
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
  for (int o = 16; o; o >>= 1) {
    const double v2 = __shfl_xor_sync(0xffffffffu, bv, o);
    const int i2 = __shfl_xor_sync(0xffffffffu, bi, o);
    arg_combine(bv, bi, v2, i2);
  }
  double *rv = sh;
  int *ri = (int *)(sh + 32);
  if ((tid & 31) == 0) { rv[tid >> 5] = bv; ri[tid >> 5] = bi; }
  __syncthreads();
  bv = -INFINITY;
  bi = -1;
  for (int k = 0; k < (nt >> 5); ++k) arg_combine(bv, bi, rv[k], ri[k]);
  if (bi < 0) {
    for (long long t = tid; t < T; t += nt) pu[t] = -1;
    if (tid == 0) score[d.u] = -INFINITY;
    return;
  }
  if (tid == 0) {
    score[d.u] = bv;
    int q = bi;
    for (long long t = T - 1; t >= 0; --t) {
      pu[t] = q;
      if (t > 0) q = bpu[t * S + q];
    }
  }
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
 * atomically added (double) into stats + graph's stats_off (if stats).
 * alphad: log alpha (double) of k_hmm_forward<1>; gamma: NULL or the
 * chunk's [sum T S] float, gamma_t(i) (all 0 when log P = -inf). */
__global__ void __launch_bounds__(1024)
k_hmm_backward(HArrays g, const UDesc *__restrict__ ud, const float *__restrict__ ll, int P,
               double *grow, int growS, double *gacc, int gaccA, const double *__restrict__ alphad,
               float *gamma, const double *__restrict__ loglik, double *stats) {
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
  if (stats) {
    acc = gaccA ? gacc + (size_t)blockIdx.x * gaccA : (growS ? sh + RED : sh + RED + 2 * S);
    for (int a = tid; a < A; a += nt) acc[a] = 0.0;
  }
  double *st = stats ? stats + G.stats_off : NULL;
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

/* ------------------------------------------------------------ host side */

struct gh_dev_hmm {
  int32_t num_graphs;
  HGraph *hG;              /* host copy */
  long long stats_size;    /* sum_g 2 S + A */
  HArrays d;               /* device arrays */
  void *dmem[13];          /* the allocations behind d (for hmm_free) */
  /* grow-only device scratch of the calls */
  float *dLL; size_t capLL;
  float *dState; size_t capState; /* alpha / gamma [sum T S] */
  double *dAlphaD; size_t capAlphaD; /* fb: log alpha [sum T S] */
  int *dBp; size_t capBp;
  int *dPath; size_t capPath;
  double *dLoglik; size_t capLoglik;
  UDesc *dUd; size_t capUd;
  double *dRows; size_t capRows;
  double *dAcc; size_t capAcc;
  double *dStats; size_t capStats;
};

static double g_hmm_kernel_seconds = 0.0;

/* Seconds spent in the HMM kernels so far (device time by events, excluding
 * transfers), for the benchmark lines of test_hmm_cuda. */
extern "C" double gh_cuda_hmm_kernel_seconds(void) { return g_hmm_kernel_seconds; }

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
extern "C" gh_dev_hmm *gh_cuda_hmm_upload(gh_backend *b, const gh_hmm_graph *const *graphs,
                                          int32_t num_graphs) {
  gh_dev_hmm *h = (gh_dev_hmm *)gh_calloc(1, sizeof *h);
  h->num_graphs = num_graphs;
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
    }
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
  free(pdf); free(init); free(fin); free(in_off); free(out_off); free(src); free(odst); free(oarc);
  free(lp); free(olp); free(ap); free(heavy);
  return h;
}

/* hmm_free: releases the graphs and the scratch of the calls. */
extern "C" void gh_cuda_hmm_free(gh_backend *b, gh_dev_hmm *h) {
  if (!h) return;
  for (int k = 0; k < 13; ++k) cudaFree(h->dmem[k]);
  cudaFree(h->dLL); cudaFree(h->dState); cudaFree(h->dBp); cudaFree(h->dAlphaD); cudaFree(h->dPath);
  cudaFree(h->dLoglik); cudaFree(h->dUd); cudaFree(h->dRows); cudaFree(h->dAcc); cudaFree(h->dStats);
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

/* The driver of all four operations: checks the batch (as the reference:
 * gh_die on a bad graph index or too few loglike columns), cuts it into
 * chunks of consecutive utterances that fit a device-memory budget (at
 * least one utterance each, so any length runs), and per chunk uploads the
 * loglike rows once, launches one block per utterance (longest first) and
 * copies the results back.  outs: alpha (OP_FWD/OP_SCALED) or gamma
 * (OP_FB), host [sum T S] float or NULL; path (OP_VIT); vals: loglik or
 * score [B]; stats (OP_FB) host double, ADDED to. */
static void hmm_run(gh_dev_hmm *h, const gh_hmm_batch *bt, int op, double *vals, float *outs,
                    int32_t *path, double *stats) {
  const int32_t B = bt->num_utts;
  const int P = bt->num_pdfs;
  if (B <= 0) return;
  int64_t *soff = (int64_t *)gh_malloc((B + 1) * sizeof(int64_t));
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
  const int use_stats = op == OP_FB && stats != NULL;
  if (use_stats) {
    hgrow_dev((void **)&h->dStats, &h->capStats, (size_t)h->stats_size + 1, sizeof(double));
    CK(cudaMemset(h->dStats, 0, (h->stats_size + 1) * sizeof(double)));
  }
  size_t freeb = 0, totalb = 0;
  CK(cudaMemGetInfo(&freeb, &totalb));
  size_t budget = freeb / 2;
  if (budget > ((size_t)2 << 30)) budget = (size_t)2 << 30;
  if (budget < ((size_t)64 << 20)) budget = (size_t)64 << 20;
  UDesc *hud = (UDesc *)gh_malloc((B + 1) * sizeof(UDesc));
  double *hv = (double *)gh_malloc((B + 1) * sizeof(double));
  cudaEvent_t ev0, ev1;
  CK(cudaEventCreate(&ev0));
  CK(cudaEventCreate(&ev1));
  for (int32_t u0 = 0; u0 < B;) {
    /* chunk [u0, u1): bytes per utterance = loglikes + per-state block +
     * offsets + path + (global rows / accumulators when they do not fit in
     * shared memory) */
    int32_t u1 = u0;
    size_t used = 0;
    int Smax = 1, Amax = 0;
    while (u1 < B) {
      const HGraph *G = &h->hG[bt->graph ? bt->graph[u1] : 0];
      const size_t T = (size_t)(bt->frame_off[u1 + 1] - bt->frame_off[u1]);
      const int S2 = G->S > Smax ? G->S : Smax, A2 = G->A > Amax ? G->A : Amax;
      size_t c = T * P * 4 + T * (size_t)G->S * (op == OP_FB ? 12 : 4) + T * 4 + sizeof(UDesc) + 16;
      size_t rows = S2 > HMM_SMEM_S ? (size_t)(u1 - u0 + 1) * 2 * S2 * 8 : 0;
      size_t accs = (use_stats && A2 > HMM_SMEM_A) ? (size_t)(u1 - u0 + 1) * A2 * 8 : 0;
      if (u1 > u0 && used + c + rows + accs > budget) break;
      used += c;
      Smax = S2; Amax = A2;
      ++u1;
    }
    const int32_t nu = u1 - u0;
    const int64_t f0 = bt->frame_off[u0], F = bt->frame_off[u1] - f0, N = soff[u1] - soff[u0];
    for (int32_t u = u0; u < u1; ++u) {
      UDesc *x = &hud[u - u0];
      x->frame0 = bt->frame_off[u] - f0;
      x->state0 = soff[u] - soff[u0];
      x->T = (int)(bt->frame_off[u + 1] - bt->frame_off[u]);
      x->g = bt->graph ? bt->graph[u] : 0;
      x->u = u - u0;
      x->pad = 0;
    }
    qsort(hud, nu, sizeof(UDesc), cmp_udesc);
    hgrow_dev((void **)&h->dUd, &h->capUd, nu, sizeof(UDesc));
    hgrow_dev((void **)&h->dLoglik, &h->capLoglik, nu, sizeof(double));
    hgrow_dev((void **)&h->dLL, &h->capLL, (size_t)F * P + 1, sizeof(float));
    CK(cudaMemcpy(h->dUd, hud, nu * sizeof(UDesc), cudaMemcpyHostToDevice));
    if (F > 0)
      CK(cudaMemcpy(h->dLL, bt->loglikes + f0 * P, (size_t)F * P * sizeof(float), cudaMemcpyHostToDevice));
    const int growS = Smax > HMM_SMEM_S ? Smax : 0;
    if (growS) hgrow_dev((void **)&h->dRows, &h->capRows, (size_t)nu * 2 * growS, sizeof(double));
    int nt = (Smax + 31) & ~31;
    if (nt > 1024) nt = 1024;
    size_t shm = RED * sizeof(double) + (growS ? 0 : 2 * (size_t)Smax * sizeof(double));
    const HArrays &d = h->d;
    CK(cudaEventRecord(ev0));
    if (op == OP_FWD || op == OP_SCALED) {
      float *al = NULL;
      if (outs) {
        hgrow_dev((void **)&h->dState, &h->capState, (size_t)N + 1, sizeof(float));
        al = h->dState;
      }
      if (op == OP_FWD)
        k_hmm_forward<0><<<nu, nt, shm>>>(d, h->dUd, h->dLL, P, h->dRows, growS, al, NULL, h->dLoglik);
      else
        k_hmm_scaled<<<nu, nt, shm>>>(d, h->dUd, h->dLL, P, h->dRows, growS, al, h->dLoglik);
      CK_LAUNCH(op == OP_FWD ? "forward" : "scaled forward");
    } else if (op == OP_VIT) {
      hgrow_dev((void **)&h->dBp, &h->capBp, (size_t)N + 1, sizeof(int));
      hgrow_dev((void **)&h->dPath, &h->capPath, (size_t)F + 1, sizeof(int));
      k_hmm_viterbi<<<nu, nt, shm>>>(d, h->dUd, h->dLL, P, h->dRows, growS, h->dBp, h->dPath, h->dLoglik);
      CK_LAUNCH("viterbi");
    } else {
      if (outs) hgrow_dev((void **)&h->dState, &h->capState, (size_t)N + 1, sizeof(float));
      hgrow_dev((void **)&h->dAlphaD, &h->capAlphaD, (size_t)N + 1, sizeof(double));
      k_hmm_forward<1><<<nu, nt, shm>>>(d, h->dUd, h->dLL, P, h->dRows, growS, NULL, h->dAlphaD,
                                        h->dLoglik);
      CK(cudaGetLastError());
      int gaccA = 0;
      size_t shm2 = shm;
      if (use_stats) {
        if (Amax > HMM_SMEM_A) {
          gaccA = Amax;
          hgrow_dev((void **)&h->dAcc, &h->capAcc, (size_t)nu * gaccA, sizeof(double));
        } else {
          shm2 += (size_t)Amax * sizeof(double);
        }
      }
      k_hmm_backward<<<nu, nt, shm2>>>(d, h->dUd, h->dLL, P, h->dRows, growS, h->dAcc, gaccA, h->dAlphaD,
                                       outs ? h->dState : NULL, h->dLoglik, use_stats ? h->dStats : NULL);
      CK_LAUNCH("forward-backward");
    }
    CK(cudaEventRecord(ev1));
    CK(cudaEventSynchronize(ev1));
    float ms = 0.f;
    CK(cudaEventElapsedTime(&ms, ev0, ev1));
    g_hmm_kernel_seconds += ms * 1e-3;
    CK(cudaMemcpy(hv, h->dLoglik, nu * sizeof(double), cudaMemcpyDeviceToHost));
    for (int32_t k = 0; k < nu; ++k) vals[u0 + k] = hv[k];
    if (outs && N > 0)
      CK(cudaMemcpy(outs + soff[u0], h->dState, (size_t)N * sizeof(float), cudaMemcpyDeviceToHost));
    if (op == OP_VIT && F > 0)
      CK(cudaMemcpy(path + f0, h->dPath, (size_t)F * sizeof(int32_t), cudaMemcpyDeviceToHost));
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
  free(soff); free(hud); free(hv);
}

/* hmm_forward (backend.h): log domain (k_hmm_forward<0>) or GH_HMM_SCALED
 * (k_hmm_scaled); loglik [B] natural log; alpha NULL or [sum T S] float. */
extern "C" void gh_cuda_hmm_forward(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, int flags,
                                    double *loglik, float *alpha) {
  hmm_run(h, batch, (flags & GH_HMM_SCALED) ? OP_SCALED : OP_FWD, loglik, alpha, NULL, NULL);
}

/* hmm_viterbi (backend.h): path [frames] state indices, score [B] natural log. */
extern "C" void gh_cuda_hmm_viterbi(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, int32_t *path,
                                    double *score) {
  hmm_run(h, batch, OP_VIT, score, NULL, path, NULL);
}

/* hmm_fb (backend.h): loglik [B]; gamma NULL or [sum T S] float; stats NULL
 * or host doubles (per graph 2 S + A), added to. */
extern "C" void gh_cuda_hmm_fb(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, double *loglik,
                               float *gamma, double *stats) {
  hmm_run(h, batch, OP_FB, loglik, gamma, NULL, stats);
}
