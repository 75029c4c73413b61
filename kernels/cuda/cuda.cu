/* cuda.cu -- the CUDA backend (built only when nvcc exists; GH_HAVE_CUDA).
 *
 * Kernels (layouts and blocking are described in doc/kernels.md):
 *
 *  k_loglikes<TF, FULL>: the single fused likelihood kernel of Vaněk et al.
 *    (2012a Algorithm 1; 2012b Sec. IV).  A thread block is
 *    PB = 64 pdfs ("states") x TF frames; one thread per pdf keeps TF
 *    running log-sums in registers, loops over its pdf's Gaussians and, per
 *    Gaussian, over the packed lower triangle of the inverse covariance in
 *    4x4 sub-blocks read as float4 (coalesced: the 64 threads of a block read
 *    64 consecutive float4).  The TF frames are staged in shared memory and
 *    read by all threads at the same address (broadcast).  Model parameters
 *    are pre-arranged at upload in exactly that read order, with Vaněk's
 *    trick: c_ii = -0.5 P_ii, c_ij = -P_ij (off-diagonals doubled), so
 *      ll_g(x) = gconst_g + sum_i x_i (b_i + sum_{j<=i} c_ij x_j)
 *    (Kaldi's natural form, lib/gmm/gmm.h; b = means_invvars).  Pdfs are sorted
 *    by (covariance type, number of Gaussians) into 64-pdf blocks (Vaněk et
 *    al. 2012a Sec. IV.C), so a block is homogeneous in type and nearly so in the
 *    Gaussian count; each thread loops over its own Gaussian count.  Log-add
 *    is the running max + scaled sum form (one exp per Gaussian per frame).
 *    grid = (frame blocks, pdf blocks): consecutive blocks share one pdf
 *    block's parameters, which therefore stay in L2.
 *  k_combine: pdfs with many Gaussians (a global UBM) are split at upload
 *    into segments of <= K Gaussians laid out like pdfs (plan_units);
 *    k_loglikes writes their partial log-sums to a scratch matrix and
 *    k_combine log-adds each split pdf's segments into the output.  Only
 *    when that cuts the issued work by a quarter; else nothing changes.
 *
 *  k_estep_post: E-step posteriors (Araújo et al. 2014, the p- and
 *    p^- kernels fused): one block per task (<= SEG or SEG_DIAG pairs of one pdf), one
 *    warp per (frame, pdf, weight) pair, lanes over the pdf's Gaussians,
 *    warp-shuffle log-sum-exp; writes gamma_g = w exp(ll_g - lse) and the
 *    task's sum of w*lse (summed over tasks in a fixed order).
 *  k_estep_stats: statistics (Araújo et al.'s mu- and Sigma-kernels as one
 *    reduction; the "V2"-like variant of Cook et al. 2011): one block
 *    per (task, chunk of the pdf's [G x E] statistic elements); threads own
 *    elements (occupancy, x_i, x_i x_j of the packed triangle, per
 *    Gaussian) and sum gamma * product over the task's pairs in double, with
 *    the pairs' frames staged in shared memory; a pdf's only task adds its
 *    sums into the accumulators, the tasks of a pdf of more pairs write
 *    partial slots that k_estep_reduce adds in task order (no atomics:
 *    bitwise reproducible).
 *  The tasks read the data's pairs as data_upload / data_set_pairs sorted
 *  them by pdf (stable), on the device: the host builds only the task list.
 *
 * Every CUDA call is checked; failures die with the call and CUDA's message.
 * Device buffers are grow-only scratch owned by the backend.
 */
#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "backend.h"
#include "base/gh-base.h"
#include "cuda-check.h"
#include "cuda-pool.h"
#include "gemm-forms.h"
}
#include "cuda-gemm.h"
#include "cuda-model.h"

#define PB 64        /* pdfs per thread block of the likelihood kernel */
#define TILE 32      /* pairs staged per step in k_estep_stats */
#define SEG 2048     /* pairs per k_estep_stats block (full covariances) */
#define SEG_DIAG 256 /* pairs per k_estep_stats block (diagonal covariances) */


/* ---------------------------------------------------------------- kernels */

__device__ __forceinline__ void log_add(float &m, float &s, float v) {
  v = gh_ovf(v);
  if (v > m) {
    s = s * __expf(m - v) + 1.0f;
    m = v;
  } else if (v > -INFINITY) {
    s += __expf(v - m);
  }
}

__device__ __forceinline__ float dot4(float4 a, float4 b) {
  return fmaf(a.x, b.x, fmaf(a.y, b.y, fmaf(a.z, b.z, a.w * b.w)));
}

/* One diagonal Gaussian of a layout entry for TF frames (k_loglikes and
 * k_loglikes_narrow): acc[f] += x_f . (b + c x_f) over the record's nb
 * float4 pairs (b_I, c_I) at pp (lane stride PB), frames xs [TF][nb];
 * returns the next Gaussian's record. */
template <int TF>
__device__ __forceinline__ const float4 *diag_gauss(const float4 *pp, const float4 *xs, int nb, float *acc) {
  for (int I = 0; I < nb; ++I) {
    const float4 b = pp[0], c = pp[PB];
    pp += 2 * PB;
#pragma unroll
    for (int f = 0; f < TF; ++f) {
      const float4 x = xs[f * nb + I];
      acc[f] += x.x * fmaf(c.x, x.x, b.x) + x.y * fmaf(c.y, x.y, b.y) +
                x.z * fmaf(c.z, x.z, b.z) + x.w * fmaf(c.w, x.w, b.w);
    }
  }
  return pp;
}

/* An entry's TF log-likelihoods m + log s (frames t0 ..): a whole pdf to
 * out column pdf (stride P), a segment to scratch column -pdf - 1 (stride
 * V); frames >= T not written. */
template <int TF>
__device__ __forceinline__ void write_entry(int pdf, float *out, float *scratch, int P, int V, int t0, int T,
                                            const float *m, const float *s) {
  float *dst = pdf >= 0 ? out + pdf : scratch + (-pdf - 1);
  const int ld = pdf >= 0 ? P : V;
#pragma unroll
  for (int f = 0; f < TF; ++f) {
    const int t = t0 + f;
    if (t < T) dst[(size_t)t * ld] = m[f] == -INFINITY ? -INFINITY : m[f] + logf(s[f]);
  }
}

/* See top of file.  X: [T x nb] float4 (frames padded to Dp = 4 nb with
 * zeros); out: [T x P]; blocks[blk0 + blockIdx.y] is this block's pdfs
 * (layout entries: whole pdfs or Gaussian segments of a split pdf).
 * perm[sp] >= 0: the entry is whole pdf perm[sp], its log-likelihood goes to
 * out[t][perm[sp]]; perm[sp] < 0: the entry is a segment, its partial
 * log-sum-exp goes to scratch[t][-perm[sp] - 1] ([T x V], combined by
 * k_combine).  ng[sp]: the entry's number of Gaussians.  Natural log. */
template <int TF, bool FULL>
__global__ void __launch_bounds__(PB)
k_loglikes(const float4 *__restrict__ params, const float *__restrict__ gconst,
           const BlockDesc *__restrict__ blocks, int blk0, const int *__restrict__ perm,
           const int *__restrict__ ng, const float4 *__restrict__ X, int T, int nb, int P,
           float *__restrict__ out, float *__restrict__ scratch, int V) {
  extern __shared__ float4 sx[]; /* [TF][nb] */
  const int t0 = blockIdx.x * TF;
  const BlockDesc bd = blocks[blk0 + blockIdx.y];
  for (int idx = threadIdx.x; idx < TF * nb; idx += blockDim.x) {
    int f = idx / nb, q = idx - f * nb, t = t0 + f;
    sx[idx] = t < T ? X[(size_t)t * nb + q] : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  __syncthreads();
  const int lane = threadIdx.x;
  if (lane >= bd.count) return;
  const int sp = bd.first + lane;
  const int pdf = perm[sp], G = ng[sp];
  float m[TF], s[TF];
#pragma unroll
  for (int f = 0; f < TF; ++f) { m[f] = -INFINITY; s[f] = 0.f; }
  const float4 *pp = params + bd.poff + lane;
  const float *gc = gconst + bd.goff + lane;
  for (int g = 0; g < G; ++g) {
    float acc[TF];
#pragma unroll
    for (int f = 0; f < TF; ++f) acc[f] = 0.f;
    if (FULL) {
      for (int I = 0; I < nb; ++I) {
        const float4 bI = pp[0];
        pp += PB;
        float4 sv[TF];
#pragma unroll
        for (int f = 0; f < TF; ++f) sv[f] = bI;
        for (int J = 0; J <= I; ++J) {
          const float4 r0 = pp[0], r1 = pp[PB], r2 = pp[2 * PB], r3 = pp[3 * PB];
          pp += 4 * PB;
#pragma unroll
          for (int f = 0; f < TF; ++f) {
            const float4 xj = sx[f * nb + J];
            sv[f].x += dot4(r0, xj);
            sv[f].y += dot4(r1, xj);
            sv[f].z += dot4(r2, xj);
            sv[f].w += dot4(r3, xj);
          }
        }
#pragma unroll
        for (int f = 0; f < TF; ++f) acc[f] += dot4(sx[f * nb + I], sv[f]);
      }
    } else {
      pp = diag_gauss<TF>(pp, sx, nb, acc);
    }
    const float k = gc[(size_t)g * PB];
#pragma unroll
    for (int f = 0; f < TF; ++f) log_add(m[f], s[f], k + acc[f]);
  }
  /* whole pdf -> out column pdf; segment -> scratch column -pdf - 1 */
  write_entry<TF>(pdf, out, scratch, P, V, t0, T, m, s);
}

/* k_loglikes (diagonal) for a model whose diagonal entries fill one block
 * of at most 32 (hmm-train's score groups: ~8 pdfs of a word), where
 * k_loglikes would leave PB - count of its 64 threads idle: a block is W
 * lanes (entries; W = 8, 16 or 32 >= count) x Y frame groups of TF frames
 * (blockDim.x = W Y, TF = 4 by default: score_chunk), its Y TF frames
 * staged in shared memory.  Each
 * thread's arithmetic is k_loglikes's for its entry and frames, in the same
 * order, so the outputs are the same.  Arguments as k_loglikes (blk0: the
 * diagonal block). */
template <int TF>
__device__ __forceinline__ void narrow_body(const float4 *__restrict__ params, const float *__restrict__ gconst,
                                            const BlockDesc *__restrict__ blocks, int blk0, const int *__restrict__ perm,
                                            const int *__restrict__ ng, const float4 *__restrict__ X, int T, int nb,
                                            int P, float *__restrict__ out, float *__restrict__ scratch, int V, int W,
                                            int bx, float4 *sx) {
  const int Y = blockDim.x / W, FB = Y * TF;
  const int tb0 = bx * FB;
  const BlockDesc bd = blocks[blk0];
  for (int idx = threadIdx.x; idx < FB * nb; idx += blockDim.x) {
    int f = idx / nb, q = idx - f * nb, t = tb0 + f;
    sx[idx] = t < T ? X[(size_t)t * nb + q] : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  __syncthreads();
  const int lane = threadIdx.x % W, fy = threadIdx.x / W;
  if (lane >= bd.count) return;
  const int t0 = tb0 + fy * TF;
  const float4 *xs = sx + (size_t)fy * TF * nb;
  const int sp = bd.first + lane;
  const int pdf = perm[sp], G = ng[sp];
  float m[TF], s[TF];
#pragma unroll
  for (int f = 0; f < TF; ++f) { m[f] = -INFINITY; s[f] = 0.f; }
  const float4 *pp = params + bd.poff + lane;
  const float *gc = gconst + bd.goff + lane;
  for (int g = 0; g < G; ++g) {
    float acc[TF];
#pragma unroll
    for (int f = 0; f < TF; ++f) acc[f] = 0.f;
    pp = diag_gauss<TF>(pp, xs, nb, acc);
    const float k = gc[(size_t)g * PB];
#pragma unroll
    for (int f = 0; f < TF; ++f) log_add(m[f], s[f], k + acc[f]);
  }
  write_entry<TF>(pdf, out, scratch, P, V, t0, T, m, s);
}

template <int TF>
__global__ void __launch_bounds__(128)
k_loglikes_narrow(const float4 *__restrict__ params, const float *__restrict__ gconst,
                  const BlockDesc *__restrict__ blocks, int blk0, const int *__restrict__ perm,
                  const int *__restrict__ ng, const float4 *__restrict__ X, int T, int nb, int P,
                  float *__restrict__ out, float *__restrict__ scratch, int V, int W) {
  extern __shared__ float4 sx[]; /* [Y TF][nb] */
  narrow_body<TF>(params, gconst, blocks, blk0, perm, ng, X, T, nb, P, out, scratch, V, W, blockIdx.x, sx);
}

/* One segment of k_loglikes_narrow_segs: a narrow model (its block 0) on
 * rows x0 .. x0 + T - 1 of the data, grid blocks b0 .., output at out
 * (row stride: the launch's ldo). */
struct NarrowSeg {
  const float4 *params;
  const float *gconst;
  const BlockDesc *blocks;
  const int *perm, *ng;
  float *out;
  long long x0;
  int T, b0;
};

/* k_loglikes_narrow for several models and row ranges in one launch
 * (gh_cuda_loglikes_segs_dev: hmm-train's score groups), each grid block
 * one segment's (the last segment with b0 <= blockIdx.x); the same thread
 * arithmetic, so the same bits, written straight into a matrix of
 * leading dimension ldo. */
template <int TF>
__global__ void __launch_bounds__(128)
k_loglikes_narrow_segs(const NarrowSeg *__restrict__ segs, int nseg, const float4 *__restrict__ X, int nb, int ldo,
                       int W) {
  extern __shared__ float4 sx[]; /* [Y TF][nb] */
  int lo = 0, hi = nseg - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (segs[mid].b0 <= (int)blockIdx.x) lo = mid;
    else hi = mid - 1;
  }
  const NarrowSeg g = segs[lo];
  narrow_body<TF>(g.params, g.gconst, g.blocks, 0, g.perm, g.ng, X + (size_t)g.x0 * nb, g.T, nb, ldo, g.out, NULL, 0,
                  W, blockIdx.x - g.b0, sx);
}

/* Log-add the segments of the split pdfs (second pass of the split layout,
 * doc/kernels.md "Pdfs with many Gaussians").  One thread per (frame t,
 * split pdf j): out[t][pdf[j]] = log sum_k exp(scratch[t][k]) over the
 * scratch columns k in [off[j], off[j+1]) (the partial log-sums of pdf[j]'s
 * Gaussian segments), computed as max + log sum exp(v - max) (exact
 * up to float rounding; -inf when every segment is -inf).  scratch: [T x V],
 * out: [T x P], natural log.  Threads: T x nsplit, j fastest. */
__global__ void __launch_bounds__(256)
k_combine(const float *__restrict__ scratch, int V, int T, const int *__restrict__ pdf,
          const int *__restrict__ off, int nsplit, float *__restrict__ out, int P) {
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (long long)T * nsplit) return;
  const int t = (int)(idx / nsplit), j = (int)(idx - (long long)t * nsplit);
  const float *row = scratch + (size_t)t * V;
  const int k0 = off[j], k1 = off[j + 1];
  float mx = -INFINITY;
  for (int k = k0; k < k1; ++k) mx = fmaxf(mx, gh_ovf(row[k]));
  float r = -INFINITY;
  if (mx > -INFINITY) {
    float sum = 0.f;
    for (int k = k0; k < k1; ++k) sum += __expf(gh_ovf(row[k]) - mx);
    r = mx + logf(sum);
  }
  out[(size_t)t * P + pdf[j]] = r;
}

/* A task of the fused E-step (cuda_accumulate): pairs [k0, k1) of the
 * data's pdf-sorted pairs (frames dFrames, weights dW), all of pdf `pdf`,
 * at most SEG (SEG_DIAG for a diagonal pdf); their posteriors at gamma[goff + (k - k0) G + g]; their
 * statistics ([G x E] doubles) added straight into the pdf's accumulators
 * when the task is its pdf's only one (pbase < 0: one writer, so one
 * addition per element), else written to the partial slot at part +
 * pbase, which k_estep_reduce adds in task order. */
struct Task { long long k0, k1, goff, pbase; int pdf; };

/* A pdf of several tasks in a batch: slots part[pbase + s GE ..] for
 * s < ns, added in order s = 0, 1, ... into the accumulators at accoff. */
struct RTask { long long pbase, accoff; int ns, GE; };

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/* Posteriors of the fused E-step: one block per task (8 warps over its
 * pairs); gamma as Task says, gamma_g = w exp(ll_g - lse); tot[task] = the
 * task's sum of w lse, each warp's pairs in order, then the warps in order
 * (no atomics: deterministic).  Frames X [. x Dp], resident.  Warp w takes
 * pairs k0 + w, k0 + w + 8, ... (pair j of the warp: k0 + w + 8 j), NG = 32
 * / L of them at a time, one per group of L lanes (L: the smallest of 4,
 * 8, 16, 32 >= G; lanes over the pdf's Gaussians): a pdf of 8 Gaussians
 * keeps all 32 lanes busy.  The groups' max and sum butterflies are the
 * 32-lane ones without the steps that only add 0 or take the max with
 * -inf, and the warp adds its pairs' w lse in pair order: the same bits
 * whatever L is. */
__global__ void __launch_bounds__(256)
k_estep_post(const float *__restrict__ X, int Dp, int D, const int32_t *__restrict__ frames,
             const float *__restrict__ wts, const Task *__restrict__ tasks, const EPdf *__restrict__ epdf,
             const float *__restrict__ eparams, float *__restrict__ gamma, double *__restrict__ tot) {
  extern __shared__ float sh[]; /* [8 warps][NG groups][D] */
  __shared__ double wsum[8];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const Task tk = tasks[blockIdx.x];
  const EPdf e = epdf[tk.pdf];
  const int G = e.G;
  const int L = G <= 4 ? 4 : G <= 8 ? 8 : G <= 16 ? 16 : 32, NG = 32 / L;
  const int q = lane / L, sl = lane - q * L; /* group, lane in the group */
  const float *ep = eparams + e.eoff;
  float *xs = sh + (warp * NG + q) * D;
  double contrib = 0.0;
  for (long long kb = tk.k0 + warp; kb < tk.k1; kb += 8LL * NG) {
    const long long k = kb + 8LL * q; /* this group's pair */
    const bool valid = k < tk.k1;
    const float w = valid ? wts[k] : 0.f;
    __syncwarp();
    if (valid) {
      const float *xr = X + (size_t)frames[k] * Dp;
      for (int i = sl; i < D; i += L) xs[i] = xr[i];
    }
    __syncwarp();
    float *gam = gamma + tk.goff + (k - tk.k0) * G;
    float mx = -INFINITY;
    for (int g = sl; valid && g < G; g += L) {
      float ll = ep[g];
      const float *bp = ep + G + g;
      const float *cp = ep + (size_t)(1 + D) * G + g;
      if (e.full) {
        int idx = 0;
        for (int i = 0; i < D; ++i) {
          float sacc = bp[(size_t)i * G];
          for (int j = 0; j <= i; ++j, ++idx) sacc = fmaf(cp[(size_t)idx * G], xs[j], sacc);
          ll = fmaf(xs[i], sacc, ll);
        }
      } else {
        for (int i = 0; i < D; ++i)
          ll = fmaf(xs[i], fmaf(cp[(size_t)i * G], xs[i], bp[(size_t)i * G]), ll);
      }
      ll = gh_ovf(ll);
      gam[g] = ll;
      mx = fmaxf(mx, ll);
    }
    for (int o = L / 2; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.f;
    if (mx > -INFINITY)
      for (int g = sl; g < G; g += L) sum += expf(gam[g] - mx);
    for (int o = L / 2; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float lse = mx + logf(sum);
    for (int g = sl; valid && g < G; g += L) gam[g] = mx > -INFINITY ? w * expf(gam[g] - lse) : 0.f;
    const double c = valid && G > 0 && mx > -INFINITY ? (double)w * (double)lse : 0.0;
    for (int r = 0; r < NG; ++r) { /* the groups' pairs in pair order (adding 0.0 changes nothing) */
      const double cr = __shfl_sync(0xffffffffu, c, r * L);
      contrib += cr;
    }
  }
  if (lane == 0) wsum[warp] = contrib;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0.0;
    for (int w = 0; w < 8; ++w) t += wsum[w];
    tot[blockIdx.x] = t; /* summed in a fixed order by gg_sum_into */
  }
}

/* Statistic element e of E = 1 + D + S -> factor indices (i, j); index D
 * means the constant 1 (occupancy: (D,D); means: (i,D)). */
__device__ __forceinline__ void stat_index(int e, int D, int full, int &i, int &j) {
  if (e == 0) { i = D; j = D; return; }
  if (e <= D) { i = e - 1; j = D; return; }
  int q = e - D - 1;
  if (!full) { i = q; j = q; return; }
  int r = (int)((sqrtf(8.0f * q + 1.0f) - 1.0f) * 0.5f);
  while (r > 0 && r * (r + 1) / 2 > q) --r;
  while ((r + 1) * (r + 2) / 2 <= q) ++r;
  i = r;
  j = q - r * (r + 1) / 2;
}

/* Statistics of the fused E-step (Araújo et al. 2014's mu- and Sigma-kernels
 * as one reduction; the "V2"-like variant of Cook et al. 2011).  The
 * task's pdf's [G x E] statistics (E = 1 + D + S: occupancy, x_i, x_i x_j
 * of the packed triangle) are cut into items (c, e): statistic e of the GC
 * Gaussians of chunk c (Gaussians c GC .. c GC + GC - 1), item q = c E + e.
 * Block (task, y) owns items [y blockDim, (y + 1) blockDim), one per
 * thread: per pair, the product p = x_i x_j (exact in double) once, then
 * acc_g = fma(gamma_g, p, acc_g) for its GC Gaussians, over the task's pairs
 * in order.  The pairs' TILE frames are staged in shared memory as floats
 * (with a trailing 1.0, so occupancy and means are products with the
 * constant), their posteriors of the block's Gaussians (at most gspan
 * chunks: stats_launch) as doubles, converted once per block instead of
 * once per element: the conversions, three per element and pair, were by
 * the CUDA guide's rates about the whole time of the kernel that owned one
 * element per thread (bench/RESULTS.md D37).  Each element's sum is the same additions in the same order as
 * that kernel's, so the same bits.  Written as Task says. */
#define GC 8 /* Gaussians per thread of k_estep_stats */
__global__ void __launch_bounds__(256)
k_estep_stats(const float *__restrict__ X, int Dp, int D, const int32_t *__restrict__ frames,
              const Task *__restrict__ tasks, const EPdf *__restrict__ epdf, const float *__restrict__ gamma,
              double *__restrict__ dacc, double *__restrict__ part, int gspan) {
  extern __shared__ double shd[]; /* gs [TILE][<= gspan GC] doubles, then xs [TILE][D+1] floats */
  double *gs = shd;
  float *xs = (float *)(shd + (size_t)TILE * gspan * GC);
  const Task tk = tasks[blockIdx.x];
  const EPdf ep = epdf[tk.pdf];
  const int S = ep.full ? D * (D + 1) / 2 : D;
  const int E = 1 + D + S, G = ep.G;
  const long long NI = (long long)((G + GC - 1) / GC) * E;
  const long long q0 = (long long)blockIdx.y * blockDim.x;
  if (q0 >= NI) return; /* whole block: no __syncthreads below is skipped by part of it */
  const long long q = q0 + threadIdx.x;
  const bool act = q < NI;
  const int ch = act ? (int)(q / E) : 0, e = act ? (int)(q - (long long)ch * E) : 0;
  int i, j;
  stat_index(e, D, ep.full, i, j);
  /* the block's Gaussians [ga, gb): the chunks of its first and last items */
  const int ga = (int)(q0 / E) * GC;
  const int gb = min(G, ((int)((min(q0 + (long long)blockDim.x, NI) - 1) / E) + 1) * GC), ng = gb - ga;
  const int g0 = ch * GC, gl = g0 - ga;
  const int W = D + 1;
  double acc[GC];
#pragma unroll
  for (int r = 0; r < GC; ++r) acc[r] = 0.0;
  for (long long kt = tk.k0; kt < tk.k1; kt += TILE) {
    const int nt = (int)min((long long)TILE, tk.k1 - kt);
    __syncthreads();
    for (int idx = threadIdx.x; idx < nt * W; idx += blockDim.x) {
      const int row = idx / W, c = idx - row * W;
      xs[idx] = c < D ? X[(size_t)frames[kt + row] * Dp + c] : 1.0f;
    }
    const float *gr = gamma + tk.goff + (kt - tk.k0) * G + ga;
    for (int idx = threadIdx.x; idx < nt * ng; idx += blockDim.x) {
      const int row = idx / ng, g = idx - row * ng;
      gs[idx] = (double)__ldg(gr + (size_t)row * G + g);
    }
    __syncthreads();
    if (act)
      for (int row = 0; row < nt; ++row) {
        const float *xr = xs + row * W;
        const double p = (double)xr[i] * (double)xr[j];
        const double *gp = gs + row * ng + gl;
#pragma unroll
        for (int r = 0; r < GC; ++r)
          if (g0 + r < G) acc[r] = fma(gp[r], p, acc[r]);
      }
  }
  if (!act) return;
  double *out = tk.pbase < 0 ? dacc + ep.accoff : part + tk.pbase;
#pragma unroll
  for (int r = 0; r < GC; ++r) {
    if (g0 + r >= G) break;
    const long long o = (long long)(g0 + r) * E + e;
    if (tk.pbase < 0) out[o] += acc[r];
    else out[o] = acc[r];
  }
}

/* Block (j, y): element q = y 256 + thread of RTask j's pdf: the partial
 * slots added in task order, then into the accumulators (one writer). */
__global__ void __launch_bounds__(256)
k_estep_reduce(const RTask *__restrict__ rt, const double *__restrict__ part, double *__restrict__ dacc) {
  const RTask r = rt[blockIdx.x];
  const long long q = (long long)blockIdx.y * blockDim.x + threadIdx.x;
  if (q >= r.GE) return;
  double s = 0.0;
  for (int k = 0; k < r.ns; ++k) s += part[r.pbase + (long long)k * r.GE + q];
  dacc[r.accoff + q] += s;
}

/* ------------------------------------------------------------ host side */

#define NEV 32 /* timing event pairs of the pipelined loglikes (cuda_ctx evT0 ...) */

typedef struct {
  int device;
  size_t stats_smem_max; /* k_estep_stats' dynamic shared memory limit (bytes) */
  /* grow-only scratch (device) */
  float *dX; size_t capX;          /* frames, [rows x Dp] floats, zero-padded */
  float *hX; size_t hcapX;         /* pinned host staging of dX (same layout) */
  float *dScratch; size_t capScratch; /* [rows x V] floats: segment log-sums (split layout) */
  /* the fused E-step (cuda_accumulate): a batch's posteriors, tasks, per-task
   * totals, partial statistics and reductions */
  float *dGamma; size_t capGamma;
  Task *dTasks; size_t capTasks;
  double *dTotal;
  double *dPart; size_t capPart;   /* per-task totals of k_estep_post */
  double *dPstat; size_t capPstat; /* partial statistics of k_estep_stats */
  RTask *dRt; size_t capRt;
  gg_ctx *gg; int gg_tried;        /* cuBLAS + GEMM scratch (cuda-gemm.cu), lazily */
  /* the pipelined loglikes (lazily; cuda_loglikes_begin): chunks numbered
   * across calls (seq); per chunk parity a frame buffer and an output
   * buffer, an upload and a download stream, events "uploaded", "frames
   * consumed", "scored" and "output fetched" (for the streams' ordering
   * only: chunk seq + 2 records them again); a ring of NEV timing event
   * pairs for the kernels and for the uploads (chunks before seq_timed are
   * summed into kernel_seconds and upload_seconds already); the calls begun
   * and not ended (at most 2), each with its own event after its last
   * download, the one loglikes_end waits for (the two events move with the
   * calls: call[0] is the oldest) */
  float *dXo[2]; size_t capXo[2];
  float *dOo[2]; size_t capOo[2];
  cudaStream_t up, dn;
  cudaEvent_t evUp[2], evFree[2], evDone[2], evOut[2];
  cudaEvent_t evT0[NEV], evT1[NEV], evU0[NEV], evU1[NEV];
  long long seq, seq_timed;
  struct { long long first, last; cudaEvent_t done; } call[2]; /* chunks first .. last - 1 */
  int ninflight;
  /* GH_CUDA_TIMELINE=<file>: one line per chunk (how the host wait of
   * bench/RESULTS.md D15 was found): the host's enqueue time, the upload's and the kernels' device
   * start and end, in ms from evBase (recorded at the first chunk) */
  FILE *tl;
  cudaEvent_t evBase;
  double tBase, tEnq[NEV];
  /* host scratch */
  Task *hTasks; size_t hcapTasks;
  RTask *hRt; size_t hcapRt;
  /* data_upload's two page-locked staging buffers (rows x Dp floats each),
   * kept for the next upload: a trainer uploads one block after another */
  float *hStage[2]; size_t stage_floats;
  cudaEvent_t evStage[2];
  /* cuda_data_sort's page-locked staging of the pdf-sorted frames and weights (grow-only) */
  int32_t *hSortF; float *hSortW; size_t capSort;
  void *hmm_scratch;               /* the HMM calls' device scratch (cuda-hmm.cu HScratch), made lazily */
  /* gh_cuda_data_set_pairs_dev's device sort (grow-only): keys and indices
   * in and out, cub's temporary storage, the weights in double, the
   * offsets followed by the check, the last pdf and the total */
  int *dSortK[2], *dSortI[2]; size_t capSortKI;
  void *dSortTmp; size_t capSortTmp;
  double *dSortWd; size_t capSortWd;
  long long *dSortOff; size_t capSortOff; /* the per-pdf offsets */
  struct NarrowSeg *dNarrowSegs; size_t capNarrowSegs; /* gh_cuda_loglikes_segs_dev's segment table */
  float *dSubsetOut; size_t capSubsetOut;              /* loglikes_subset's device output */
  /* upload_small's ring of page-locked staging buffers (grow-only), each
   * with the event of its last copy */
#define UP_SLOTS 4
  void *hUpSmall[UP_SLOTS]; size_t capUpSmall[UP_SLOTS]; cudaEvent_t evUpSmall[UP_SLOTS]; int upSmallBusy[UP_SLOTS];
  int upSmallNext;
  gh_backend *host;                /* the cpu backend for models the fp32 forms cannot evaluate (lazily) */
} cuda_ctx;


/* Grow a device buffer to hold at least n elements of size sz (contents
 * not kept; zero-filled when zero != 0). */
static void dgrow(void **p, size_t *cap, size_t n, size_t sz, int zero) {
  if (n <= *cap && *p) return;
  size_t want = n + n / 2 + 16;
  if (*p) CK(cudaFree(*p));
  *p = NULL;
  CK(cudaMalloc(p, want * sz));
  if (zero) CK(cudaMemset(*p, 0, want * sz));
  *cap = want;
}
static void hgrow(void **p, size_t *cap, size_t n, size_t sz) {
  if (n <= *cap && *p) return;
  size_t want = n + n / 2 + 16;
  *p = gh_realloc(*p, want * sz);
  *cap = want;
}

static int round4(int d) { return (d + 3) & ~3; }

/* Copies bytes (a table of tasks or segments) from host src to device dst
 * in the default stream's order without waiting for the work queued before
 * it, as a pageable cudaMemcpy does: through the next of c's page-locked
 * staging buffers, after waiting for that buffer's previous copy (normally
 * done long ago).  src may be reused or freed on return. */
static void upload_small(cuda_ctx *c, void *dst, const void *src, size_t bytes) {
  if (!bytes) return;
  const int k = c->upSmallNext;
  c->upSmallNext = (k + 1) % UP_SLOTS;
  if (c->upSmallBusy[k]) CK(cudaEventSynchronize(c->evUpSmall[k]));
  c->upSmallBusy[k] = 0;
  if (c->capUpSmall[k] < bytes) {
    if (c->hUpSmall[k]) CK(cudaFreeHost(c->hUpSmall[k]));
    else CK(cudaEventCreateWithFlags(&c->evUpSmall[k], cudaEventDisableTiming));
    c->hUpSmall[k] = NULL;
    c->capUpSmall[k] = bytes + bytes / 2 + 4096;
    CK(cudaMallocHost(&c->hUpSmall[k], c->capUpSmall[k]));
  }
  memcpy(c->hUpSmall[k], src, bytes);
  CK(cudaMemcpyAsync(dst, c->hUpSmall[k], bytes, cudaMemcpyHostToDevice, 0));
  CK(cudaEventRecord(c->evUpSmall[k], 0));
  c->upSmallBusy[k] = 1;
}

extern "C" void gh_cuda_hmm_scratch_free(void *p); /* cuda-hmm.cu */

static void cuda_free_backend(gh_backend *b) {
  cuda_ctx *c = (cuda_ctx *)b->ctx;
  cudaFree(c->dX); cudaFreeHost(c->hX); cudaFree(c->dScratch);
  cudaFree(c->dGamma); cudaFree(c->dTasks); cudaFree(c->dTotal); cudaFree(c->dPart);
  cudaFree(c->dPstat); cudaFree(c->dRt);
  for (int k = 0; k < 2; ++k) { cudaFree(c->dSortK[k]); cudaFree(c->dSortI[k]); }
  cudaFree(c->dSortTmp); cudaFree(c->dSortWd); cudaFree(c->dSortOff);
  cudaFree(c->dNarrowSegs); cudaFree(c->dSubsetOut);
  gg_ctx_free(c->gg);
  if (c->host) gh_backend_free(c->host);
  if (c->up) {
    cudaStreamSynchronize(c->up); cudaStreamSynchronize(c->dn);
    for (int k = 0; k < 2; ++k) {
      cudaFree(c->dXo[k]); cudaFree(c->dOo[k]);
      cudaEventDestroy(c->evUp[k]); cudaEventDestroy(c->evFree[k]);
      cudaEventDestroy(c->evDone[k]); cudaEventDestroy(c->evOut[k]); cudaEventDestroy(c->call[k].done);
    }
    for (int k = 0; k < NEV; ++k) {
      cudaEventDestroy(c->evT0[k]); cudaEventDestroy(c->evT1[k]); cudaEventDestroy(c->evU0[k]); cudaEventDestroy(c->evU1[k]);
    }
    cudaStreamDestroy(c->up); cudaStreamDestroy(c->dn);
    if (c->tl) { fclose(c->tl); cudaEventDestroy(c->evBase); }
  }
  free(c->hTasks); free(c->hRt);
  for (int k = 0; k < 2; ++k)
    if (c->hStage[k]) { cudaFreeHost(c->hStage[k]); cudaEventDestroy(c->evStage[k]); }
  if (c->hSortF) { cudaFreeHost(c->hSortF); cudaFreeHost(c->hSortW); }
  for (int k = 0; k < UP_SLOTS; ++k)
    if (c->hUpSmall[k]) { cudaEventSynchronize(c->evUpSmall[k]); cudaFreeHost(c->hUpSmall[k]); cudaEventDestroy(c->evUpSmall[k]); }
  gh_cuda_hmm_scratch_free(c->hmm_scratch);
  gh_cuda_pool_trim();
  free(c);
  free(b);
}

/* One entry of the likelihood layout: Gaussians g0 .. g0+G-1 of pdf p
 * (type 0 diag, 1 full); dst >= 0: a whole pdf, output column dst; dst < 0:
 * a segment of a split pdf, scratch column -dst - 1. */
struct Unit { int type, G, p, g0, dst; };

/* qsort order of the layout: diag before full, G descending, then pdf and
 * first Gaussian ascending (deterministic). */
static int unit_cmp(const void *a, const void *b) {
  const Unit *x = (const Unit *)a, *y = (const Unit *)b;
  if (x->type != y->type) return x->type - y->type;
  if (x->G != y->G) return y->G - x->G;
  if (x->p != y->p) return x->p - y->p;
  return x->g0 - y->g0;
}

/* Issued work of a sorted layout in lane-Gaussians per frame: each warp of
 * 32 consecutive entries of one type (blocks of PB start at each type's
 * first entry) runs as long as its first (largest) entry, with all 32 lanes
 * occupied.  Used to decide whether splitting pays. */
static long long layout_cost(const Unit *u, int n) {
  long long cost = 0;
  for (int i = 0; i < n;) {
    int end = i;
    while (end < n && u[end].type == u[i].type) ++end;
    for (int w = i; w < end; w += 32) cost += 32LL * u[w].G;
    i = end;
  }
  return cost;
}

/* Segment size of the split layout for the pdfs of covariance type `type`
 * (0 diag, 1 full) of set s: GH_CUDA_SPLIT_K when set (fixed, 0 = never
 * split; for measurements), else SPLIT_K_FULL = 8 / SPLIT_K_DIAG = 16,
 * halved (down to 4) while the type's pdfs with more Gaussians than that
 * would give fewer than PB segments, so that at least one 64-lane block is
 * full (doc/kernels.md "Pdfs with many Gaussians": 1 x 512 full, D=40,
 * 65536 frames: 3.9 ms with 32 segments of 16, 2.0 ms with 64 of 8). */
#define SPLIT_K_FULL 8
#define SPLIT_K_DIAG 16
static int split_k(const gh_gmm_set *s, int type) {
  const char *e = getenv("GH_CUDA_SPLIT_K");
  if (e && *e) {
    int k = atoi(e);
    return k < 0 ? 0 : k;
  }
  int K = type ? SPLIT_K_FULL : SPLIT_K_DIAG;
  while (K > 4) {
    long long n = 0;
    for (int p = 0; p < s->num_pdfs; ++p)
      if ((int)s->pdfs[p].type == type && s->pdfs[p].num_gauss > K)
        n += (s->pdfs[p].num_gauss + K - 1) / K;
    if (n == 0 || n >= PB) break;
    K /= 2;
  }
  return K;
}

/* The sorted layout entries of set s (returned, gh_malloc'd, *n of them).
 * K[type] is the segment size of the pdfs of that covariance type (0 diag,
 * 1 full; 0 = never split, see split_k).
 * Candidate 1: one entry per pdf.  Candidate 2 (when some pdf has more than
 * K of its type Gaussians): every such pdf cut into ceil(G/K) segments of
 * consecutive Gaussians with sizes floor/ceil of G/nseg (<= K), the others
 * whole.  Splitting is exact (weights are folded into the gconsts, so a
 * pdf's log-likelihood is the log-add of its segments') but costs a scratch
 * column per segment and the k_combine pass, so candidate 2 is taken only
 * when it cuts layout_cost by at least a quarter (a global UBM: 32x; 5000
 * pdfs x 256 diag: < 1%, not split).  Outputs for candidate 2: *V scratch
 * columns, *nsplit split pdfs, *split_pdf [nsplit] their ids, *split_off
 * [nsplit + 1] their first scratch columns (gh_malloc'd); for candidate 1
 * all zero / NULL. */
static Unit *plan_units(const gh_gmm_set *s, const int K[2], int *n, int *V, int *nsplit, int **split_pdf,
                        int **split_off) {
  const int P = s->num_pdfs;
  Unit *whole = (Unit *)gh_malloc((P ? P : 1) * sizeof(Unit));
  long long nseg_total = 0;
  int nbig = 0;
  for (int p = 0; p < P; ++p) {
    const int G = s->pdfs[p].num_gauss, k = K[(int)s->pdfs[p].type];
    whole[p] = Unit{(int)s->pdfs[p].type, G, p, 0, p};
    if (k > 0 && G > k) { nseg_total += (G + k - 1) / k; ++nbig; } else nseg_total += 1;
  }
  qsort(whole, P, sizeof(Unit), unit_cmp);
  *n = P; *V = 0; *nsplit = 0; *split_pdf = NULL; *split_off = NULL;
  if (nbig == 0) return whole;
  if (nseg_total > (1LL << 30)) gh_die("model upload: %lld Gaussian segments, too many", nseg_total);
  Unit *seg = (Unit *)gh_malloc(nseg_total * sizeof(Unit));
  int *spdf = (int *)gh_malloc(nbig * sizeof(int)), *soff = (int *)gh_malloc((nbig + 1) * sizeof(int));
  int ns = 0, nj = 0, v = 0;
  for (int p = 0; p < P; ++p) {
    const int G = s->pdfs[p].num_gauss, type = (int)s->pdfs[p].type, k = K[type];
    if (k <= 0 || G <= k) { seg[ns++] = Unit{type, G, p, 0, p}; continue; }
    const int nseg = (G + k - 1) / k;
    spdf[nj] = p; soff[nj++] = v;
    for (int q = 0; q < nseg; ++q) {
      const int g0 = (int)((long long)q * G / nseg), g1 = (int)((long long)(q + 1) * G / nseg);
      seg[ns++] = Unit{type, g1 - g0, p, g0, -(v + q) - 1};
    }
    v += nseg;
  }
  soff[nj] = v;
  qsort(seg, ns, sizeof(Unit), unit_cmp);
  if (4 * layout_cost(seg, ns) <= 3 * layout_cost(whole, P)) {
    free(whole);
    *n = ns; *V = v; *nsplit = nj; *split_pdf = spdf; *split_off = soff;
    return seg;
  }
  free(seg); free(spdf); free(soff);
  return whole;
}

/* Upload: builds the likelihood layout (entries -- pdfs, or Gaussian
 * segments of split pdfs, see plan_units -- sorted by (type, G) into 64-entry
 * blocks, per Gaussian slot a record of float4 in read order,
 * lane-interleaved) and the E-step layout (per pdf, parameters transposed
 * so lanes = Gaussians read consecutive floats; never split).  Dies on a
 * dimension mismatch, D > 768 or a CUDA error. */
static int score_variant(cuda_ctx *c, cuda_model *m);

static gh_dev_model *cuda_model_upload(gh_backend *b, const gh_gmm_set *s) {
  const double t_up = gh_seconds();
  cuda_model *m = (cuda_model *)gh_calloc(1, sizeof *m);
  const int D = s->dim, P = s->num_pdfs;
  m->D = D; m->P = P; m->Dp = round4(D); m->nb = m->Dp / 4;
  const int nb = m->nb;
  if (D <= 0) gh_die("model upload: dimension %d", D);
  if (16 * nb * 16 > 48 * 1024) gh_die("model upload: dimension %d too large for the CUDA backend (max 768)", D);
  for (int p = 0; p < P; ++p)
    if (s->pdfs[p].dim != D) gh_die("model upload: pdf %d has dimension %d, the set has %d", p, s->pdfs[p].dim, D);
  /* Numerical contract (doc/reliability.md): per pdf, the estimated error
   * of each form (gemm-forms.h gh_gemm_set_errors) at the model's centre
   * c0.  The fused kernels evaluate the uncentred fp32 form gconst + x.b -
   * 0.5 x'Px: a pdf whose estimate there is above the contract's budget
   * (GH_GEMM_MAX_ROW_ERROR, 5e-4 nats) never takes them (nofused: the GEMM
   * forms, whatever GH_CUDA_SCORE / GH_CUDA_ESTEP say).  The GEMM forms are
   * centred, their a0 = norm - 0.5 (c - mu)'P(c - mu) from the exact form in
   * double (gg_model_new's form; never the float gconst); a pdf
   * whose centred fp32 estimate is above the budget is evaluated in double
   * (exact: DGEMM, at GH_PREC_AUTO; an explicit --precision is obeyed), as
   * the cpu backend does.  The whole model goes to the host cpu backend
   * when even the double form could err (Gaussians ~1e8 of their own sigmas
   * from the centre: the host's reference form), or when a nofused pdf
   * would have to take the fused kernels (no cuBLAS; mixed diagonal and
   * full pdfs, which the GEMM scoring does not serve). */
  const int have_gemm = gg_available() && !getenv("GH_CUDA_NO_GEMM");
  double *centre0 = (double *)gh_calloc(D, sizeof(double));
  gh_gemm_model_centre(s, centre0);
  long long gtot = 0;
  int homog = 1;
  for (int p = 0; p < P; ++p) {
    gtot += s->pdfs[p].num_gauss;
    if (s->pdfs[p].type != s->pdfs[0].type) homog = 0;
  }
  double *e_unc = (double *)gh_malloc(sizeof(double) * (P ? P : 1) * 3), *e_cen = e_unc + P, *e_dbl = e_cen + P;
  double *form = (double *)gh_malloc(sizeof(double) * (gtot ? gtot : 1) * (D + 1));
  gh_gemm_set_errors(s, centre0, e_unc, e_cen, e_dbl, form);
  const double t_err = gh_seconds() - t_up;
  const double budget = GH_GEMM_MAX_ROW_ERROR;
  unsigned char *exact = (unsigned char *)gh_calloc(P ? P : 1, 1);
  m->nofused = (unsigned char *)gh_calloc(P ? P : 1, 1);
  double worst_unc = 0, worst_cen = 0, worst_dbl = 0;
  int nexact = 0;
  for (int p = 0; p < P; ++p) {
    m->nofused[p] = !(e_unc[p] <= budget);
    exact[p] = !(e_cen[p] <= budget);
    m->any_nofused |= m->nofused[p];
    nexact += exact[p];
    if (!(e_unc[p] <= worst_unc)) worst_unc = e_unc[p];
    if (!(e_cen[p] <= worst_cen)) worst_cen = e_cen[p];
    if (!(e_dbl[p] <= worst_dbl)) worst_dbl = e_dbl[p];
  }
  if (!(worst_dbl <= budget) || (m->any_nofused && (!have_gemm || !homog))) {
    cuda_ctx *c = (cuda_ctx *)b->ctx;
    if (!(worst_dbl <= budget))
      gh_log("cuda: even the double GEMM form of the model could err by %.3g nats (Gaussians far from the data's centre "
             "in their own standard deviations); it is evaluated on the host in its reference form instead "
             "(doc/reliability.md)", worst_dbl);
    else
      gh_log("cuda: the model's fp32 form could err by %.3g nats (features with a large offset, extreme variances or "
             "Gaussians far apart in their own standard deviations) and %s; it is evaluated on the host in double "
             "instead (doc/reliability.md)", worst_unc,
             have_gemm ? "its pdfs mix diagonal and full covariances (no GEMM scoring)" : "cuBLAS is not available");
    if (!c->host) c->host = gh_backend_blas_new();
    m->host_m = c->host->ops->model_upload(c->host, s);
    m->orig = (gh_gmm_set *)gh_calloc(1, sizeof *m->orig);
    gh_gmm_set_copy(m->orig, s);
    free(centre0); free(form); free(exact); free(e_unc);
    return (gh_dev_model *)m;
  }
  if (nexact && b->precision == GH_PREC_AUTO)
    gh_vlog(1, "cuda: %d of %d pdfs evaluated in double (their fp32 GEMM form could err by up to %.3g nats)", nexact,
            P, worst_cen);

  /* Layout entries: whole pdfs, or Gaussian segments of the pdfs with more
   * than K Gaussians when plan_units decides to split (doc/kernels.md
   * "Pdfs with many Gaussians"); sorted diag before full, then by G
   * descending, then by (pdf, first Gaussian). */
  int nunits = 0;
  int *split_pdf = NULL, *split_off = NULL;
  const int K[2] = {split_k(s, 0), split_k(s, 1)};
  Unit *units = plan_units(s, K, &nunits, &m->V, &m->nsplit, &split_pdf, &split_off);
  int *perm = (int *)gh_malloc((nunits ? nunits : 1) * sizeof(int));
  int *ng = (int *)gh_malloc((nunits ? nunits : 1) * sizeof(int));
  for (int i = 0; i < nunits; ++i) { perm[i] = units[i].dst; ng[i] = units[i].G; }

  /* Blocks: runs of <= PB sorted entries of one type. */
  int nblk = 0;
  BlockDesc *blk = (BlockDesc *)gh_malloc((nunits / PB + 3) * sizeof(BlockDesc));
  long long poff = 0, goff = 0;
  const long long Rdiag = 2LL * nb, Rfull = nb + 4LL * nb * (nb + 1) / 2;
  for (int type = 0; type < 2; ++type) {
    int start = 0;
    while (start < nunits && units[start].type != type) ++start;
    int end = start;
    while (end < nunits && units[end].type == type) ++end;
    int nblocks_type = 0;
    for (int i = start; i < end; i += PB) {
      BlockDesc d;
      d.first = i;
      d.count = end - i < PB ? end - i : PB;
      d.poff = poff;
      d.goff = goff;
      int gmax = ng[i];  /* sorted descending */
      poff += (long long)gmax * (type ? Rfull : Rdiag) * PB;
      goff += (long long)gmax * PB;
      blk[nblk++] = d;
      ++nblocks_type;
    }
    if (type == 0) m->ndiag_blocks = nblocks_type; else m->nfull_blocks = nblocks_type;
    if (type == 0 && nblocks_type == 1 && end - start <= 32)
      m->narrow_w = end - start <= 8 ? 8 : end - start <= 16 ? 16 : 32;
  }
  float *hp = (float *)gh_calloc(poff * 4 + 4, sizeof(float));
  float *hg = (float *)gh_calloc(goff + 1, sizeof(float));
  m->hLanePoff = (long long *)gh_malloc(sizeof(long long) * 2 * (P ? P : 1));
  m->hLaneGoff = m->hLanePoff + (P ? P : 1);
  for (int p = 0; p < P; ++p) m->hLanePoff[p] = m->hLaneGoff[p] = -1;
  for (int bi = 0; bi < nblk; ++bi) {
    const BlockDesc *d = &blk[bi];
    for (int lane = 0; lane < d->count; ++lane) {
      const Unit *un = &units[d->first + lane];
      if (un->dst >= 0) { /* a whole pdf */
        m->hLanePoff[un->dst] = d->poff + lane;
        m->hLaneGoff[un->dst] = d->goff + lane;
      }
      const gh_gmm *gm = &s->pdfs[un->p];
      const int full = gm->type == GH_COV_FULL;
      const long long R = full ? Rfull : Rdiag;
      for (int g = 0; g < un->G; ++g) {
        const int gg = un->g0 + g; /* Gaussian of the pdf in slot g of this entry */
        hg[d->goff + (long long)g * PB + lane] = gm->gconsts[gg];
        const float *bv = gm->means_invvars + (size_t)gg * D;
        /* float4 number r of this Gaussian's record -> hp index */
#define SLOT(r, comp) hp[((d->poff + ((long long)g * R + (r)) * PB + lane) * 4) + (comp)]
        if (!full) {
          const float *iv = gm->inv_vars + (size_t)gg * D;
          for (int i = 0; i < D; ++i) {
            SLOT(2 * (i / 4), i % 4) = bv[i];
            SLOT(2 * (i / 4) + 1, i % 4) = -0.5f * iv[i];
          }
        } else {
          const float *Pm = gm->inv_vars + (size_t)gg * gh_packed_size(D);
          long long r = 0;
          for (int I = 0; I < nb; ++I) {
            for (int c = 0; c < 4; ++c)
              if (4 * I + c < D) SLOT(r, c) = bv[4 * I + c];
            ++r;
            for (int J = 0; J <= I; ++J) {
              for (int rr = 0; rr < 4; ++rr)
                for (int cc = 0; cc < 4; ++cc) {
                  int i = 4 * I + rr, j = 4 * J + cc;
                  if (i < D && j < D && j <= i)
                    SLOT(r + rr, cc) = i == j ? -0.5f * Pm[gh_packed_index(i, i)] : -Pm[gh_packed_index(i, j)];
                }
              r += 4;
            }
          }
        }
#undef SLOT
      }
    }
  }
  m->dBlocks = (decltype(m->dBlocks))gh_cuda_pool_alloc((nblk ? nblk : 1) * sizeof(BlockDesc));
  CK(cudaMemcpy(m->dBlocks, blk, nblk * sizeof(BlockDesc), cudaMemcpyHostToDevice));
  m->dPerm = (decltype(m->dPerm))gh_cuda_pool_alloc((nunits ? nunits : 1) * sizeof(int));
  CK(cudaMemcpy(m->dPerm, perm, nunits * sizeof(int), cudaMemcpyHostToDevice));
  m->dNg = (decltype(m->dNg))gh_cuda_pool_alloc((nunits ? nunits : 1) * sizeof(int));
  CK(cudaMemcpy(m->dNg, ng, nunits * sizeof(int), cudaMemcpyHostToDevice));
  m->dParams = (decltype(m->dParams))gh_cuda_pool_alloc((poff + 1) * sizeof(float4));
  CK(cudaMemcpy(m->dParams, hp, poff * sizeof(float4), cudaMemcpyHostToDevice));
  m->dGconst = (decltype(m->dGconst))gh_cuda_pool_alloc((goff + 1) * sizeof(float));
  CK(cudaMemcpy(m->dGconst, hg, goff * sizeof(float), cudaMemcpyHostToDevice));
  if (m->nsplit) {
    m->dSplitPdf = (decltype(m->dSplitPdf))gh_cuda_pool_alloc(m->nsplit * sizeof(int));
    CK(cudaMemcpy(m->dSplitPdf, split_pdf, m->nsplit * sizeof(int), cudaMemcpyHostToDevice));
    m->dSplitOff = (decltype(m->dSplitOff))gh_cuda_pool_alloc((m->nsplit + 1) * sizeof(int));
    CK(cudaMemcpy(m->dSplitOff, split_off, (m->nsplit + 1) * sizeof(int), cudaMemcpyHostToDevice));
  }
  if (getenv("GH_CUDA_SPLIT_VERBOSE"))
    fprintf(stderr, "cuda model upload: %d pdfs -> %d layout entries (%d pdfs split into %d segments; "
            "K diag %d, full %d)\n", P, nunits, m->nsplit, m->V, K[0], K[1]);
  free(hp); free(hg); free(blk); free(perm); free(ng); free(units); free(split_pdf); free(split_off);

  /* E-step layout and accumulators. */
  m->hEpdf = (EPdf *)gh_malloc((P ? P : 1) * sizeof(EPdf));
  long long eoff = 0, accoff = 0;
  m->maxG = 0;
  for (int p = 0; p < P; ++p) {
    const gh_gmm *gm = &s->pdfs[p];
    const long long S = gm->type == GH_COV_FULL ? gh_packed_size(D) : D;
    EPdf e;
    e.eoff = eoff; e.accoff = accoff; e.G = gm->num_gauss; e.full = gm->type == GH_COV_FULL;
    m->hEpdf[p] = e;
    eoff += (1 + D + S) * gm->num_gauss;
    accoff += (1 + D + S) * gm->num_gauss;
    if (gm->num_gauss > m->maxG) m->maxG = gm->num_gauss;
  }
  float *he = (float *)gh_malloc((eoff + 1) * sizeof(float));
  for (int p = 0; p < P; ++p) {
    const gh_gmm *gm = &s->pdfs[p];
    const int G = gm->num_gauss;
    float *ep = he + m->hEpdf[p].eoff;
    for (int g = 0; g < G; ++g) {
      ep[g] = gm->gconsts[g];
      for (int i = 0; i < D; ++i) ep[(size_t)(1 + i) * G + g] = gm->means_invvars[(size_t)g * D + i];
      float *cp = ep + (size_t)(1 + D) * G;
      if (gm->type == GH_COV_FULL) {
        const float *Pm = gm->inv_vars + (size_t)g * gh_packed_size(D);
        for (int i = 0; i < D; ++i)
          for (int j = 0; j <= i; ++j) {
            long long q = gh_packed_index(i, j);
            cp[(size_t)q * G + g] = i == j ? -0.5f * Pm[q] : -Pm[q];
          }
      } else {
        for (int i = 0; i < D; ++i) cp[(size_t)i * G + g] = -0.5f * gm->inv_vars[(size_t)g * D + i];
      }
    }
  }
  m->dEparams = (decltype(m->dEparams))gh_cuda_pool_alloc((eoff + 1) * sizeof(float));
  CK(cudaMemcpy(m->dEparams, he, eoff * sizeof(float), cudaMemcpyHostToDevice));
  free(he);
  m->esize = eoff;
  /* Gaussians in pdf order, for the device M-step (cuda-mstep.cu) */
  m->hGfirst = (long long *)gh_malloc((P + 1) * sizeof(long long));
  m->hGfirst[0] = 0;
  for (int p = 0; p < P; ++p) m->hGfirst[p + 1] = m->hGfirst[p] + s->pdfs[p].num_gauss;
  m->Gt = m->hGfirst[P];
  {
    int *gp = (int *)gh_malloc((m->Gt + 1) * sizeof(int));
    float *w = (float *)gh_malloc((m->Gt + 1) * sizeof(float));
    for (int p = 0; p < P; ++p)
      for (int g = 0; g < s->pdfs[p].num_gauss; ++g) {
        gp[m->hGfirst[p] + g] = p;
        w[m->hGfirst[p] + g] = s->pdfs[p].weights[g];
      }
    m->dGfirst = (decltype(m->dGfirst))gh_cuda_pool_alloc((P + 1) * sizeof(long long));
    CK(cudaMemcpy(m->dGfirst, m->hGfirst, (P + 1) * sizeof(long long), cudaMemcpyHostToDevice));
    m->dGpdf = (decltype(m->dGpdf))gh_cuda_pool_alloc((m->Gt + 1) * sizeof(int));
    CK(cudaMemcpy(m->dGpdf, gp, m->Gt * sizeof(int), cudaMemcpyHostToDevice));
    m->dWeights = (decltype(m->dWeights))gh_cuda_pool_alloc((m->Gt + 1) * sizeof(float));
    CK(cudaMemcpy(m->dWeights, w, m->Gt * sizeof(float), cudaMemcpyHostToDevice));
    free(gp);
    free(w);
  }
  m->dEpdf = (decltype(m->dEpdf))gh_cuda_pool_alloc((P ? P : 1) * sizeof(EPdf));
  CK(cudaMemcpy(m->dEpdf, m->hEpdf, P * sizeof(EPdf), cudaMemcpyHostToDevice));
  m->acc_size = accoff;
  m->dAcc = (decltype(m->dAcc))gh_cuda_pool_alloc((accoff + 1) * sizeof(double));
  CK(cudaMemset(m->dAcc, 0, (accoff + 1) * sizeof(double)));
  m->precision = b->precision;
  const double t_gg = gh_seconds();
  if (have_gemm) {
    m->gg = gg_model_new(s, centre0, form, e_cen);
    score_variant((cuda_ctx *)b->ctx, m); /* the cuBLAS handle now when scoring will use it, not
                                             inside the first loglikes call */
  }
  gh_vlog(2, "cuda: model upload %.4f s (error estimates %.4f s, GEMM forms %.4f s)", gh_seconds() - t_up, t_err,
          gh_seconds() - t_gg);
  free(centre0); free(form); free(exact); free(e_unc);
  return (gh_dev_model *)m;
}

static void cuda_model_free(gh_backend *b, gh_dev_model *dm) {
  cuda_model *m = (cuda_model *)dm;
  if (!m) return;
  if (m->host_m) { gh_backend *h = ((cuda_ctx *)b->ctx)->host; h->ops->model_free(h, m->host_m); }
  if (m->orig) { gh_gmm_set_free(m->orig); free(m->orig); }
  free(m->nofused);
  /* the device done with the model's buffers before the pool hands them
   * out again (one synchronisation; each cudaFree was one; errors ignored,
   * as cudaFree's) */
  cudaDeviceSynchronize();
  void *pooled[] = {m->dBlocks, m->dPerm, m->dNg, m->dParams, m->dGconst, m->dEpdf, m->dEparams, m->dAcc,
                    m->dSplitPdf, m->dSplitOff, m->dGfirst, m->dGpdf, m->dWeights};
  for (size_t k = 0; k < sizeof pooled / sizeof pooled[0]; ++k) gh_cuda_pool_free(pooled[k]);
  cudaFree(m->dMaster);
  free(m->hGfirst);
  free(m->hLanePoff);
  for (int k = 0; k < m->nviews; ++k) {
    gh_cuda_pool_free(m->views[k].dParams);
    gh_cuda_pool_free(m->views[k].dGconst);
    gh_cuda_pool_free(m->views[k].dMeta);
    free(m->views[k].pdfs);
  }
  free(m->views);
  cuda_mstep_free(m);
  gg_model_free(m->gg);
  free(m->hEpdf);
  free(m);
}

/* Frame-tile size of the full-covariance kernel: 16 (default) or 8
 * (environment GH_CUDA_FULL_TF, for benchmarking). */
static int full_tf(void) {
  static int tf = 0;
  if (!tf) {
    const char *e = getenv("GH_CUDA_FULL_TF");
    tf = e && atoi(e) == 8 ? 8 : 16;
  }
  return tf;
}

/* Upload rows [0, n) of X ([n x D], host) into c->dX with pitch Dp. */
/* Frames X [n x D] (host, row-major) -> dX [n x Dp] (zero-padded rows).
 * Packed into pinned staging memory on the host first and sent in one
 * contiguous copy: a pitched copy (cudaMemcpy2D) of many short rows from
 * pageable memory cost ~70 ms for 200k frames of D=13, the packed one
 * ~1 ms. */
static void upload_frames(cuda_ctx *c, const cuda_model *m, const float *X, size_t n) {
  dgrow((void **)&c->dX, &c->capX, n * m->Dp, sizeof(float), 1);
  if (n == 0) return;
  const size_t D = (size_t)m->D, Dp = (size_t)m->Dp, total = n * Dp;
  if (Dp != D && (total > c->hcapX || !c->hX)) {
    if (c->hX) CK(cudaFreeHost(c->hX));
    c->hX = NULL;
    c->hcapX = total + total / 2 + 16;
    CK(cudaMallocHost((void **)&c->hX, c->hcapX * sizeof(float)));
  }
  if (Dp == D) { /* rows already at the device pitch: straight from X (a DMA when X is page-locked) */
    CK(cudaMemcpy(c->dX, X, total * sizeof(float), cudaMemcpyHostToDevice));
    return;
  } else {
    gh_pack_rows(c->hX, Dp, X, D, n);
  }
  CK(cudaMemcpy(c->dX, c->hX, total * sizeof(float), cudaMemcpyHostToDevice));
}

/* The cuBLAS context of c, created on first use; NULL without cuBLAS. */
static gg_ctx *ctx_gg(cuda_ctx *c) {
  if (!c->gg_tried) { c->gg_tried = 1; c->gg = gg_ctx_new(); }
  return c->gg;
}

/* Variant of the likelihood computation for model m (Cook et al. 2011's
 * variant selection, by a fixed rule from the measurements of
 * bench/RESULTS.md D3 and D5, so that the choice -- and so the output -- does not depend
 * on timing noise): 1 = GEMM forms (cuda-gemm.cu), 0 = the fused kernel.
 * GEMM needs cuBLAS and one covariance type in the set, and is chosen for
 * at least GEMM_SCORE_MIN_GAUSS Gaussians in all when the covariances are
 * full (GEMM depth 1 + D + D(D+1)/2: compute-bound, tensor cores; 5000 x 16
 * D=36: 5.9 ms vs 15.0 fused) or some pdf has at least
 * GEMM_SCORE_MIN_PDF_GAUSS diagonal Gaussians (a UBM: 0.93 vs 1.00 ms),
 * or the diagonal set goes to the tensor-core kernels (cuda-gemm.h
 * gg_model_tc: a pdf of >= 64 Gaussians; 5000 x 256 diag D=36: 17.6 ms
 * against 30.3 fused).  Many diagonal pdfs of fewer Gaussians stay fused
 * (5000 x 32: 4.0 ms fused against 5.5).  GH_CUDA_SCORE=fused|gemm forces
 * one (for benchmarks). */
#define GEMM_SCORE_MIN_GAUSS 64
#define GEMM_SCORE_MIN_PDF_GAUSS 512
static int score_variant(cuda_ctx *c, cuda_model *m) {
  if (!m->gg || !gg_model_homogeneous(m->gg)) return 0;
  const char *e = getenv("GH_CUDA_SCORE");
  int gemm;
  if (m->any_nofused) gemm = 1; /* the numerical contract (model_upload) */
  else if (e && !strcmp(e, "fused")) gemm = 0;
  else if (e && !strcmp(e, "gemm")) gemm = 1;
  else if (gg_model_total_gauss(m->gg) < GEMM_SCORE_MIN_GAUSS) gemm = 0;
  else if (m->P > 0 && gg_model_full(m->gg, 0)) gemm = 1;
  else if (gg_model_tc(m->gg, m->precision)) gemm = 1; /* the tensor-core kernels (cuda-tc.h) */
  else gemm = m->maxG >= GEMM_SCORE_MIN_PDF_GAUSS;
  if (gemm && !ctx_gg(c)) { /* the cuBLAS handle only when it is used */
    if (m->any_nofused) gh_die("cuda: no cuBLAS handle for a model the fused kernels cannot score within the contract");
    return 0;
  }
  return gemm;
}

/* Chunk of the pipelined loglikes, frames (bench/RESULTS.md D7:
 * 32,768 frames keep the UBM kernels' grids a full wave on an H200). */
#define OVL_CHUNK 32768

/* k_loglikes_narrow's frames per thread: 4, or $GH_CUDA_NARROW = 1|2|4|8|16
 * (benchmarks; the same bits whatever it is); 0 when GH_CUDA_NARROW=0 turns
 * the narrow kernel off.  tf = 4: a score group's segment (~26,000 frames)
 * fills 400 blocks, not 100 (hmm-train 8 M frames, H200, bench/RESULTS.md
 * D29: scoring 0.0287 / 0.0235 / 0.0168 /
 * 0.0184 / 0.0197 s per iteration at tf 16 / 8 / 4 / 2 / 1). */
static int narrow_tf(void) {
  const char *nw = getenv("GH_CUDA_NARROW");
  if (nw && !strcmp(nw, "0")) return 0;
  const int v = nw ? atoi(nw) : 4;
  return v == 1 || v == 2 || v == 4 || v == 8 || v == 16 ? v : 4;
}
/* ... and its frame groups per block: one block of <= 32 diagonal entries is W
 * lanes x Y frame groups of tf frames, Y tf nb float4 of shared memory within 48 KB. */
static int narrow_y(int W, int tf, int nb) {
  int Y = 128 / W;
  while (Y > 1 && (size_t)Y * tf * nb * sizeof(float4) > 48 * 1024) Y /= 2;
  return Y;
}

/* The loglikes kernels for n frames dX [n x Dp] (device) -> dOut [n x P]
 * (device), on the legacy default stream. */
static void score_chunk(cuda_ctx *c, cuda_model *m, const float *dX, int n, float *dOut, int gemm) {
  const int P = m->P;
  if (gemm) {
    gg_loglikes(c->gg, m->gg, dX, m->Dp, n, dOut, m->precision);
    return;
  }
  const int tf = narrow_tf();
  if (m->ndiag_blocks && m->narrow_w && tf) {
    const int W = m->narrow_w, Y = narrow_y(W, tf, m->nb);
    const int fb = Y * tf;
    const dim3 grid((n + fb - 1) / fb);
    const size_t shm = (size_t)fb * m->nb * sizeof(float4);
#define NARROW(TFN) k_loglikes_narrow<TFN><<<grid, W * Y, shm>>>(m->dParams, m->dGconst, m->dBlocks, 0, m->dPerm, \
                                                                 m->dNg, (const float4 *)dX, n, m->nb, P, dOut,   \
                                                                 c->dScratch, m->V, W)
    switch (tf) {
      case 1: NARROW(1); break;
      case 2: NARROW(2); break;
      case 4: NARROW(4); break;
      case 8: NARROW(8); break;
      case 16: NARROW(16); break;
      default: NARROW(4); break;
    }
#undef NARROW
    CK(cudaGetLastError());
  } else if (m->ndiag_blocks) {
    dim3 grid((n + 15) / 16, m->ndiag_blocks);
    k_loglikes<16, false><<<grid, PB, 16 * m->nb * sizeof(float4)>>>(
        m->dParams, m->dGconst, m->dBlocks, 0, m->dPerm, m->dNg, (const float4 *)dX, n, m->nb, P,
        dOut, c->dScratch, m->V);
    CK(cudaGetLastError());
  }
  if (m->nfull_blocks) {
    if (full_tf() == 8) {
      dim3 grid((n + 7) / 8, m->nfull_blocks);
      k_loglikes<8, true><<<grid, PB, 8 * m->nb * sizeof(float4)>>>(
          m->dParams, m->dGconst, m->dBlocks, m->ndiag_blocks, m->dPerm, m->dNg,
          (const float4 *)dX, n, m->nb, P, dOut, c->dScratch, m->V);
    } else {
      dim3 grid((n + 15) / 16, m->nfull_blocks);
      k_loglikes<16, true><<<grid, PB, 16 * m->nb * sizeof(float4)>>>(
          m->dParams, m->dGconst, m->dBlocks, m->ndiag_blocks, m->dPerm, m->dNg,
          (const float4 *)dX, n, m->nb, P, dOut, c->dScratch, m->V);
    }
    CK(cudaGetLastError());
  }
  if (m->nsplit) {
    const long long nthr = (long long)n * m->nsplit;
    k_combine<<<(unsigned)((nthr + 255) / 256), 256>>>(c->dScratch, m->V, n, m->dSplitPdf,
                                                        m->dSplitOff, m->nsplit, dOut, P);
    CK(cudaGetLastError());
  }
}

/* Adds the kernel and upload times of chunks seq_timed .. upto - 1 (their
 * timing events must have been recorded; uploads: those of direct chunks,
 * the others count 0) to b->kernel_seconds and b->upload_seconds, waiting
 * for them. */
static void sum_chunk_times(gh_backend *b, cuda_ctx *c, long long upto) {
  for (; c->seq_timed < upto; ++c->seq_timed) {
    const int e = (int)(c->seq_timed % NEV);
    float ms = 0.f, us = 0.f;
    CK(cudaEventSynchronize(c->evT1[e]));
    CK(cudaEventElapsedTime(&ms, c->evT0[e], c->evT1[e]));
    CK(cudaEventElapsedTime(&us, c->evU0[e], c->evU1[e]));
    b->kernel_seconds += ms * 1e-3;
    b->upload_seconds += us * 1e-3;
    if (c->tl) {
      float u0 = 0.f, u1 = 0.f, k0 = 0.f, k1 = 0.f;
      CK(cudaEventElapsedTime(&u0, c->evBase, c->evU0[e]));
      CK(cudaEventElapsedTime(&u1, c->evBase, c->evU1[e]));
      CK(cudaEventElapsedTime(&k0, c->evBase, c->evT0[e]));
      CK(cudaEventElapsedTime(&k1, c->evBase, c->evT1[e]));
      fprintf(c->tl, "chunk %lld: enqueued %.3f, upload %.3f-%.3f, kernels %.3f-%.3f ms\n", c->seq_timed,
              1e3 * c->tEnq[e], u0, u1, k0, k1);
    }
  }
}

/* backend.h loglikes_end: waits for the oldest call begun and not ended
 * (its out is then written) and adds its chunks' times to b->kernel_seconds
 * and b->upload_seconds; nothing when none is.  Dies on a CUDA error (also
 * one of a kernel it waited for). */
static void cuda_loglikes_end(gh_backend *b) {
  cuda_ctx *c = (cuda_ctx *)b->ctx;
  if (c->ninflight == 0) return;
  /* the call's own event: evOut of its last chunk's parity may have been
   * recorded again by the next call's chunks (waiting on it held the scorer
   * until the next call was nearly done: bench/RESULTS.md D15) */
  if (c->call[0].last > c->call[0].first) CK(cudaEventSynchronize(c->call[0].done));
  CK(cudaGetLastError());
  sum_chunk_times(b, c, c->call[0].last);
  const cudaEvent_t done = c->call[0].done;
  c->call[0] = c->call[1];
  c->call[1].done = done;
  --c->ninflight;
}

/* backend.h loglikes_begin: X host [T x D] -> out host [T x P] per-pdf
 * log-likelihoods (natural log), enqueued: per chunk of OVL_CHUNK frames an
 * upload (stream up, into the frame buffer of the chunk's parity once the
 * kernels of chunk seq - 2 are done with it), the kernels (default stream,
 * once the upload is done and the download of chunk seq - 2 has emptied
 * the output buffer; timed by events), a download (stream dn, once they are
 * done).  Chunks are numbered across calls, so the uploads of a call
 * overlap the kernels of the one before: at most two calls in flight (a
 * third begin ends the oldest first).  Rows that need padding (Dp != D) go
 * through upload_frames, after the calls in flight have ended.  Dies on a
 * CUDA error. */
static void cuda_loglikes_begin(gh_backend *b, gh_dev_model *dm, const float *X, int32_t T, float *out) {
  cuda_ctx *c = (cuda_ctx *)b->ctx;
  cuda_model *m = (cuda_model *)dm;
  if (m->host_m) { /* on the host, complete on return */
    double t0 = gh_seconds();
    c->host->ops->loglikes(c->host, m->host_m, X, T, out);
    b->kernel_seconds += gh_seconds() - t0;
    return;
  }
  const int P = m->P;
  if (m->scoring_stale)
    gh_die("cuda loglikes: the model was re-estimated on the device (mstep); fetch it and upload it again to score");
  if (c->ninflight == 2) cuda_loglikes_end(b);
  const long long first = c->seq;
  if (T <= 0 || P <= 0) { /* a call with nothing to do (its end waits for nothing) */
    c->call[c->ninflight].first = c->call[c->ninflight].last = first;
    ++c->ninflight;
    return;
  }
  /* Chunk: output (and segment scratch) at most 64M floats (256 MB) each
   * per kernel pass. */
  const int W = m->V > P ? m->V : P;
  long long tmax = (64LL << 20) / W;
  if (tmax < 16) tmax = 16;
  if (tmax > OVL_CHUNK) tmax = OVL_CHUNK;
  const long long tc = tmax < T ? tmax : T;
  const size_t D = (size_t)m->D;
  const int gemm = score_variant(c, m) == 1;
  if (!c->up) {
    CK(cudaStreamCreateWithFlags(&c->up, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&c->dn, cudaStreamNonBlocking));
    for (int k = 0; k < 2; ++k) {
      CK(cudaEventCreateWithFlags(&c->evUp[k], cudaEventDisableTiming));
      CK(cudaEventCreateWithFlags(&c->evFree[k], cudaEventDisableTiming));
      CK(cudaEventCreateWithFlags(&c->evDone[k], cudaEventDisableTiming));
      CK(cudaEventCreateWithFlags(&c->evOut[k], cudaEventDisableTiming));
      CK(cudaEventCreateWithFlags(&c->call[k].done, cudaEventDisableTiming));
    }
    for (int k = 0; k < NEV; ++k) {
      CK(cudaEventCreate(&c->evT0[k])); CK(cudaEventCreate(&c->evT1[k]));
      CK(cudaEventCreate(&c->evU0[k])); CK(cudaEventCreate(&c->evU1[k]));
    }
    const char *tl = getenv("GH_CUDA_TIMELINE");
    if (tl && *tl) {
      if (!(c->tl = fopen(tl, "a"))) gh_die("GH_CUDA_TIMELINE: cannot open %s: %s", tl, strerror(errno));
      CK(cudaEventCreate(&c->evBase));
      CK(cudaEventRecord(c->evBase));
      c->tBase = gh_seconds();
    }
  }
  const int direct = m->Dp == m->D; /* rows already at the device pitch: DMA straight from X */
  if (!direct) while (c->ninflight) cuda_loglikes_end(b);
  /* buffers grow only when nothing is in flight (a chunk of the other call may use them) */
  int small = 0;
  for (int k = 0; k < 2; ++k)
    if ((direct && c->capXo[k] < (size_t)tc * D) || c->capOo[k] < (size_t)tc * P) small = 1;
  if (m->nsplit && c->capScratch < (size_t)tc * m->V) small = 1;
  if (small) {
    /* Growing drains the pipeline (cudaFree synchronises the device), so
     * the buffers go straight to the largest chunk when that costs at most
     * 64 MB: callers that ramp their batches up (gmm-score-gpu) then grow
     * them once, not at every step of the ramp. */
    const size_t per = sizeof(float) * 2 * ((direct ? D : 0) + P + (m->nsplit ? (size_t)m->V : 0));
    const long long ta = tmax * per <= (64u << 20) ? tmax : tc;
    while (c->ninflight) cuda_loglikes_end(b);
    CK(cudaDeviceSynchronize());
    for (int k = 0; k < 2; ++k) {
      if (direct) dgrow((void **)&c->dXo[k], &c->capXo[k], (size_t)ta * D, sizeof(float), 0);
      dgrow((void **)&c->dOo[k], &c->capOo[k], (size_t)ta * P, sizeof(float), 0);
    }
    if (m->nsplit) dgrow((void **)&c->dScratch, &c->capScratch, (size_t)ta * m->V, sizeof(float), 0);
  }
  for (long long t0 = 0; t0 < T; t0 += tc) {
    const long long s = c->seq++;
    const int k = (int)(s & 1), e = (int)(s % NEV);
    const int n = (int)(T - t0 < tc ? T - t0 : tc);
    if (s - c->seq_timed >= NEV) sum_chunk_times(b, c, s - NEV + 1); /* the ring slot is reused */
    if (c->tl) c->tEnq[e] = gh_seconds() - c->tBase;
    const float *dX;
    if (direct) {
      if (s >= 2) CK(cudaStreamWaitEvent(c->up, c->evFree[k], 0)); /* chunk s - 2's kernels are done with it */
      CK(cudaEventRecord(c->evU0[e], c->up));
      CK(cudaMemcpyAsync(c->dXo[k], X + t0 * D, (size_t)n * D * sizeof(float), cudaMemcpyHostToDevice, c->up));
      CK(cudaEventRecord(c->evU1[e], c->up));
      CK(cudaEventRecord(c->evUp[k], c->up));
      CK(cudaStreamWaitEvent(0, c->evUp[k], 0));
      dX = c->dXo[k];
    } else {
      upload_frames(c, m, X + t0 * D, n);
      dX = c->dX;
      CK(cudaEventRecord(c->evU0[e]));
      CK(cudaEventRecord(c->evU1[e]));
    }
    if (s >= 2) CK(cudaStreamWaitEvent(0, c->evOut[k], 0)); /* chunk s - 2's output is fetched */
    CK(cudaEventRecord(c->evT0[e]));
    score_chunk(c, m, dX, n, c->dOo[k], gemm);
    CK(cudaEventRecord(c->evT1[e]));
    CK(cudaEventRecord(c->evFree[k]));
    CK(cudaEventRecord(c->evDone[k]));
    CK(cudaStreamWaitEvent(c->dn, c->evDone[k], 0));
    CK(cudaMemcpyAsync(out + t0 * P, c->dOo[k], (size_t)n * P * sizeof(float), cudaMemcpyDeviceToHost, c->dn));
    CK(cudaEventRecord(c->evOut[k], c->dn));
  }
  if (c->seq > first) CK(cudaEventRecord(c->call[c->ninflight].done, c->dn));
  c->call[c->ninflight].first = first;
  c->call[c->ninflight].last = c->seq;
  ++c->ninflight;
}

/* backend.h loglikes: begin and end. */
static void cuda_loglikes(gh_backend *b, gh_dev_model *dm, const float *X, int32_t T, float *out) {
  cuda_loglikes_begin(b, dm, X, T, out);
  while (((cuda_ctx *)b->ctx)->ninflight) cuda_loglikes_end(b);
}

static void cuda_acc_zero(gh_backend *b, gh_dev_model *dm) {
  cuda_model *m = (cuda_model *)dm;
  if (m->host_m) { gh_backend *h = ((cuda_ctx *)b->ctx)->host; h->ops->acc_zero(h, m->host_m); return; }
  CK(cudaMemset(m->dAcc, 0, (m->acc_size + 1) * sizeof(double)));
}

/* E-step data resident on the device (backend.h data_upload): the frames
 * [T x Dp] (zero-padded rows, used by both the fused and the GEMM E-step),
 * the pairs sorted by pdf (stable counting sort: frames dFrames, weights dW;
 * pdf p's pairs are [poff[p], poff[p+1])), and the centre of the GEMM
 * forms (double): the model centre (gemm-forms.h) of the first model the
 * data is used with, kept for the data's lifetime so that the expanded
 * features cached in xc stay valid across EM iterations.  A centre taken
 * from the model, not from the data, makes each frame's arithmetic the same
 * however the frames are split into jobs (--nj N against --nj 1: only the
 * summation order of the statistics differs; bench/RESULTS.md D16).
 * The caller's host pairs are read again by
 * the fused path (which builds its task lists on the host). */
typedef struct {
  int32_t T, D, Dp, max_pdf;
  const gh_frame_pdf *pairs; /* host, caller's; NULL after gh_cuda_data_set_pairs_dev */
  gh_frame_pdf *own_pairs;   /* host copy of device-set pairs, made when a host-evaluated model needs them */
  int64_t npairs;
  float *dX;
  int32_t *dFrames;
  float *dW;
  size_t capPairs; /* of dFrames and dW (grow-only: set_pairs keeps them) */
  int64_t *poff;   /* host [max_pdf + 2] */
  double *centre;  /* host [D], set by the first accumulate */
  int have_centre;
  gg_xcache *xc;   /* expanded features kept across E-steps (cuda-gemm.h) */
  /* data_evict / data_reload: page-locked copies of dX, dFrames, dW (read
   * back at the first eviction), the copy stream and its event */
  float *hX;
  int32_t *hF;
  float *hW;
  cudaStream_t cs;
  cudaEvent_t ready;
  int evicted, pending;
  const float *hXin;    /* the caller's host frames (valid until data_free, backend.h) */
  gh_dev_data *host_d;  /* on the host backend, for models evaluated there (lazily) */
} cuda_data;

static void cuda_data_sort(cuda_ctx *c, cuda_data *d, const gh_frame_pdf *pairs, int64_t npairs);

static gh_dev_data *cuda_data_upload(gh_backend *b, const float *X, int32_t T, int32_t D,
                                     const gh_frame_pdf *pairs, int64_t npairs) {
  cuda_data *d = (cuda_data *)gh_calloc(1, sizeof *d);
  d->T = T; d->D = D; d->Dp = round4(D); d->pairs = pairs; d->npairs = npairs;
  d->hXin = X;
  if (D <= 0 || T < 0) gh_die("data upload: %d frames of dimension %d", T, D);
  d->max_pdf = gh_pairs_check(pairs, npairs, T);
  /* frames, padded, through two page-locked staging buffers of 16 MB: one
   * is filled while the other's copy runs.  (One staging buffer of the whole
   * data page-locked 1.28 GB for 8M frames at D=40; page-locking costs ~1 s
   * per 3 GB: bench/RESULTS.md D14.) */
  const size_t Dp = (size_t)d->Dp, total = (size_t)T * Dp;
  cudaError_t e = cudaMalloc((void **)&d->dX, (total ? total : 1) * sizeof(float));
  if (e != cudaSuccess)
    gh_die("data upload: cannot hold %d frames of dimension %d on the GPU (%s); split the data", T, D,
           cudaGetErrorString(e));
  if (T > 0) {
    const size_t rows = ((size_t)4 << 20) / Dp > 0 ? ((size_t)4 << 20) / Dp : 1; /* frames per buffer */
    cuda_ctx *cx = (cuda_ctx *)b->ctx;
    if (cx->stage_floats < rows * Dp) { /* allocated once per backend, reused by later uploads */
      for (int j = 0; j < 2; ++j)
        if (cx->hStage[j]) { CK(cudaFreeHost(cx->hStage[j])); CK(cudaEventDestroy(cx->evStage[j])); }
      for (int j = 0; j < 2; ++j) {
        CK(cudaMallocHost((void **)&cx->hStage[j], rows * Dp * sizeof(float)));
        CK(cudaEventCreateWithFlags(&cx->evStage[j], cudaEventDisableTiming));
      }
      cx->stage_floats = rows * Dp;
    }
    float *h[2] = {cx->hStage[0], cx->hStage[1]};
    cudaEvent_t *done = cx->evStage;
    int k = 0;
    for (size_t t0 = 0; t0 < (size_t)T; t0 += rows, k ^= 1) {
      const size_t n = (size_t)T - t0 < rows ? (size_t)T - t0 : rows;
      if (t0 >= 2 * rows) CK(cudaEventSynchronize(done[k])); /* buffer k's last copy is done */
      gh_pack_rows(h[k], Dp, X + t0 * D, (size_t)D, n);
      CK(cudaMemcpyAsync(d->dX + t0 * Dp, h[k], n * Dp * sizeof(float), cudaMemcpyHostToDevice, 0));
      CK(cudaEventRecord(done[k], 0));
    }
    CK(cudaStreamSynchronize(0));
  }
  d->centre = (double *)gh_calloc(D, sizeof(double));
  cuda_data_sort((cuda_ctx *)b->ctx, d, pairs, npairs);
  return (gh_dev_data *)d;
}

/* d's pairs sorted by pdf on the device (dFrames, dW; host offsets poff)
 * and a fresh expanded-feature cache (the cache holds each pdf's frames).
 * The pairs are checked and sorted on the host in parallel (gh_pairs_sort_by_pdf, which sets
 * d->max_pdf) into the page-locked staging. */
/* Room for n pairs in d's dFrames and dW (kept when they fit: set_pairs
 * reuses them; contents not kept otherwise). */
static void data_pairs_room(cuda_data *d, size_t n) {
  if (d->capPairs >= n && d->dFrames) return;
  cudaFree(d->dFrames); cudaFree(d->dW);
  d->capPairs = n + n / 8 + 1;
  CK(cudaMalloc((void **)&d->dFrames, d->capPairs * sizeof(int32_t)));
  CK(cudaMalloc((void **)&d->dW, d->capPairs * sizeof(float)));
}

static void cuda_data_sort(cuda_ctx *c, cuda_data *d, const gh_frame_pdf *pairs, int64_t npairs) {
  d->pairs = pairs;
  d->npairs = npairs;
  const size_t n = (size_t)npairs;
  if (c->capSort < n) { /* page-locked, kept for the next block (a trainer sorts one after another) */
    if (c->hSortF) { CK(cudaFreeHost(c->hSortF)); CK(cudaFreeHost(c->hSortW)); }
    c->capSort = n + n / 4 + 1024;
    CK(cudaMallocHost((void **)&c->hSortF, c->capSort * sizeof(int32_t)));
    CK(cudaMallocHost((void **)&c->hSortW, c->capSort * sizeof(float)));
  }
  int32_t *hf = c->hSortF;
  float *hw = c->hSortW;
  d->poff = gh_pairs_sort_by_pdf(pairs, npairs, d->T, &d->max_pdf, hf, hw); /* checked, sorted, in parallel */
  data_pairs_room(d, n);
  CK(cudaMemcpy(d->dFrames, hf, n * sizeof(int32_t), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d->dW, hw, n * sizeof(float), cudaMemcpyHostToDevice));
  d->xc = gg_xcache_new(d->max_pdf + 1);
}

/* Before new pairs on d (data_set_pairs, gh_cuda_data_set_pairs_dev): d
 * resident, its reloads done, no E-step still reading the old pairs; the
 * offsets, the expanded-feature cache and the host backend's copy (hb: the
 * ctx's host backend, or NULL when there is none) dropped. */
static void data_pairs_begin(gh_backend *hb, cuda_data *d, const char *what) {
  if (d->evicted) gh_die("%s: the data block was evicted (data_reload first)", what);
  if (d->host_d) { /* the host backend's copy (models evaluated there) had the old pairs */
    if (hb) hb->ops->data_free(hb, d->host_d);
    d->host_d = NULL;
  }
  if (d->pending) { CK(cudaEventSynchronize(d->ready)); d->pending = 0; }
  CK(cudaDeviceSynchronize());
  gg_xcache_free(d->xc);
  d->xc = NULL;
  free(d->poff);
  d->poff = NULL;
  free(d->own_pairs);
  d->own_pairs = NULL;
}

/* After new pairs on d: the page-locked copy of data_evict follows them. */
static void data_pairs_end(cuda_data *d) {
  if (d->hX) {
    cudaFreeHost(d->hF); cudaFreeHost(d->hW);
    const size_t np = (size_t)d->npairs;
    CK(cudaMallocHost((void **)&d->hF, (np ? np : 1) * sizeof(int32_t)));
    CK(cudaMallocHost((void **)&d->hW, (np ? np : 1) * sizeof(float)));
    CK(cudaMemcpy(d->hF, d->dFrames, np * sizeof(int32_t), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(d->hW, d->dW, np * sizeof(float), cudaMemcpyDeviceToHost));
  }
}

/* backend.h data_set_pairs: the frames and the GEMM centre stay; the
 * pairs, their offsets and the expanded-feature cache are replaced. */
static void cuda_data_set_pairs(gh_backend *b, gh_dev_data *dd, const gh_frame_pdf *pairs, int64_t npairs) {
  cuda_data *d = (cuda_data *)dd;
  data_pairs_begin(((cuda_ctx *)b->ctx)->host, d, "data_set_pairs");
  cuda_data_sort((cuda_ctx *)b->ctx, d, pairs, npairs); /* checks the pairs, sets max_pdf */
  data_pairs_end(d);
}

/* gh_cuda_data_set_pairs_dev's kernels.  k_pairs_keys: key[k] = the pdf of
 * pair k, idx[k] = k; *bad = 1 + the smallest index of a pair outside
 * 0 <= frame < T, 0 <= pdf < bound (atomicMin over 1 + k; left at
 * 0xffffffff: none).
 * k_pairs_gather: sorted pair k's frame and weight, the weight in double.
 * k_pairs_off: off[p] = the first sorted position whose key >= p,
 * p = 0 .. P1 - 1 (binary search). */
__global__ void k_pairs_keys(const gh_frame_pdf *__restrict__ pairs, long long n, int T, int bound,
                             int *__restrict__ key, int *__restrict__ idx, unsigned *bad) {
  const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  const gh_frame_pdf p = pairs[k];
  if (p.frame < 0 || p.frame >= T || p.pdf < 0 || p.pdf >= bound) atomicMin(bad, (unsigned)k + 1u);
  key[k] = p.pdf;
  idx[k] = (int)k;
}
__global__ void k_pairs_gather(const gh_frame_pdf *__restrict__ pairs, const int *__restrict__ idx, long long n,
                               int32_t *__restrict__ F, float *__restrict__ W, double *__restrict__ Wd) {
  const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  const gh_frame_pdf p = pairs[idx[k]];
  F[k] = p.frame;
  W[k] = p.weight;
  Wd[k] = (double)p.weight;
}
__global__ void k_pairs_off(const int *__restrict__ key, long long n, int P1, long long *__restrict__ off) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= P1) return;
  long long lo = 0, hi = n;
  while (lo < hi) {
    const long long mid = (lo + hi) / 2;
    if (key[mid] < p) lo = mid + 1; else hi = mid;
  }
  off[p] = lo;
}

/* New pairs for d from the device (hmm_estep_pairs, kernels/cuda/cuda-hmm.cu):
 * dPairs [n] (device, any order), each with 0 <= frame < d's rows and
 * 0 <= pdf < bound (dies naming the first that is not), become d's E-step
 * pairs as data_set_pairs makes them from host pairs -- sorted by pdf,
 * stable (cub's LSD radix sort on the pdf with the pair's index as value),
 * so the same dFrames, dW and offsets bit for bit -- without leaving the
 * device but the P + 1 offsets.  *wsum = the sum of the weights in double,
 * in a fixed order (gg_sum_into over pdf-sorted pairs).  Dies as
 * data_set_pairs on an evicted d.  One synchronisation: the check of the
 * pairs, the last pdf, the sum and the offsets of all pdfs < bound come
 * back in one read (the sort and the offsets are memory-safe whatever the
 * keys; a bad pair dies after it). */
extern "C" void gh_cuda_data_set_pairs_dev(gh_backend *b, gh_dev_data *dd, const gh_frame_pdf *dPairs, int64_t n,
                                           int32_t bound, double *wsum) {
  cuda_ctx *c = (cuda_ctx *)b->ctx;
  cuda_data *d = (cuda_data *)dd;
  data_pairs_begin(c->host, d, "data_set_pairs (device)");
  if (n < 0 || n >= INT32_MAX) gh_die("data_set_pairs (device): %lld pairs in one block (at most %d)", (long long)n, INT32_MAX - 1);
  d->pairs = NULL;
  d->npairs = n;
  *wsum = 0.0;
  const size_t un = (size_t)n;
  data_pairs_room(d, un);
  if (n == 0) {
    d->max_pdf = -1;
    d->poff = (int64_t *)gh_calloc(1, sizeof(int64_t));
  } else {
    if (c->capSortKI < un) {
      for (int k = 0; k < 2; ++k) { cudaFree(c->dSortK[k]); cudaFree(c->dSortI[k]); }
      c->capSortKI = un + un / 4 + 1024;
      for (int k = 0; k < 2; ++k) {
        CK(cudaMalloc((void **)&c->dSortK[k], c->capSortKI * sizeof(int)));
        CK(cudaMalloc((void **)&c->dSortI[k], c->capSortKI * sizeof(int)));
      }
    }
    dgrow((void **)&c->dSortWd, &c->capSortWd, un, sizeof(double), 0);
    /* the offsets of pdfs 0 .. bound [P1b], then a mailbox mb: [0] the first
     * bad pair + 1 (unsigned, 0xffffffff: none), [1] the last sorted pdf
     * (int), [2] the sum of the weights (double) */
    const size_t P1b = (size_t)bound + 1;
    dgrow((void **)&c->dSortOff, &c->capSortOff, P1b + 3, sizeof(long long), 0);
    long long *doff = c->dSortOff, *mb = c->dSortOff + P1b;
    CK(cudaMemsetAsync(mb, 0xff, sizeof(long long)));
    CK(cudaMemsetAsync(mb + 2, 0, sizeof(long long)));
    const int nb = (int)((n + 255) / 256);
    k_pairs_keys<<<nb, 256>>>(dPairs, (long long)n, d->T, bound, c->dSortK[0], c->dSortI[0], (unsigned *)mb);
    CK(cudaGetLastError());
    int end_bit = 1;
    while (end_bit < 31 && (1LL << end_bit) < (long long)bound) ++end_bit;
    size_t tb = 0;
    CK(cub::DeviceRadixSort::SortPairs(NULL, tb, c->dSortK[0], c->dSortK[1], c->dSortI[0], c->dSortI[1], (int)n, 0,
                                       end_bit));
    dgrow(&c->dSortTmp, &c->capSortTmp, tb + 1, 1, 0);
    CK(cub::DeviceRadixSort::SortPairs(c->dSortTmp, tb, c->dSortK[0], c->dSortK[1], c->dSortI[0], c->dSortI[1], (int)n,
                                       0, end_bit));
    k_pairs_gather<<<nb, 256>>>(dPairs, c->dSortI[1], (long long)n, d->dFrames, d->dW, c->dSortWd);
    CK(cudaGetLastError());
    CK(cudaMemcpyAsync(mb + 1, c->dSortK[1] + (n - 1), sizeof(int), cudaMemcpyDeviceToDevice));
    k_pairs_off<<<(int)((P1b + 255) / 256), 256>>>(c->dSortK[1], (long long)n, (int)P1b, doff);
    CK(cudaGetLastError());
    gg_sum_into(c->dSortWd, n, (double *)(mb + 2));
    long long *h = (long long *)gh_malloc((P1b + 3) * sizeof(long long));
    CK(cudaMemcpy(h, doff, (P1b + 3) * sizeof(long long), cudaMemcpyDeviceToHost));
    unsigned bad;
    memcpy(&bad, &h[P1b], sizeof bad);
    if (bad != 0xffffffffu) {
      gh_frame_pdf p;
      CK(cudaMemcpy(&p, dPairs + (bad - 1), sizeof p, cudaMemcpyDeviceToHost));
      gh_die("data_set_pairs (device): pair %u (frame %d, pdf %d) outside %d frames and %d pdfs", bad - 1, p.frame,
             p.pdf, d->T, bound);
    }
    int last;
    memcpy(&last, &h[P1b + 1], sizeof last);
    memcpy(wsum, &h[P1b + 2], sizeof *wsum);
    d->max_pdf = last; /* < bound: every pair was checked */
    const size_t P1 = (size_t)last + 2;
    d->poff = (int64_t *)gh_malloc(P1 * sizeof(int64_t));
    memcpy(d->poff, h, P1 * sizeof(int64_t));
    free(h);
  }
  d->xc = gg_xcache_new(d->max_pdf + 1);
  data_pairs_end(d);
}

/* d's pairs on the host (a model evaluated on the host backend needs them)
 * when they were set on the device: rebuilt from dFrames, dW and the
 * offsets, in pdf order (each pdf's pairs in their order, so the host
 * backend's stable sort gives the same E-step). */
static const gh_frame_pdf *data_host_pairs(cuda_data *d) {
  if (d->pairs || d->npairs == 0) return d->pairs;
  if (!d->own_pairs) {
    const size_t n = (size_t)d->npairs;
    int32_t *f = (int32_t *)gh_malloc(n * sizeof(int32_t));
    float *w = (float *)gh_malloc(n * sizeof(float));
    CK(cudaMemcpy(f, d->dFrames, n * sizeof(int32_t), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(w, d->dW, n * sizeof(float), cudaMemcpyDeviceToHost));
    d->own_pairs = (gh_frame_pdf *)gh_malloc(n * sizeof(gh_frame_pdf));
    for (int32_t p = 0; p <= d->max_pdf; ++p)
      for (int64_t k = d->poff[p]; k < d->poff[p + 1]; ++k) d->own_pairs[k] = (gh_frame_pdf){f[k], p, w[k]};
    free(f);
    free(w);
  }
  return d->own_pairs;
}

static void cuda_data_free(gh_backend *b, gh_dev_data *dd) {
  cuda_data *d = (cuda_data *)dd;
  if (!d) return;
  if (d->pending) cudaEventSynchronize(d->ready);
  cudaFree(d->dX); cudaFree(d->dFrames); cudaFree(d->dW);
  gg_xcache_free(d->xc);
  if (d->hX) { cudaFreeHost(d->hX); cudaFreeHost(d->hF); cudaFreeHost(d->hW); }
  if (d->cs) { cudaEventDestroy(d->ready); cudaStreamDestroy(d->cs); }
  if (d->host_d) { gh_backend *h = ((cuda_ctx *)b->ctx)->host; h->ops->data_free(h, d->host_d); }
  free(d->poff); free(d->centre); free(d->own_pairs);
  free(d);
}

/* backend.h data_bytes / data_evict / data_reload.  The centre (set by the
 * first accumulate) and the host-side pair offsets stay; the expanded
 * features' cache is dropped (recomputed from the same frames and centre,
 * so the statistics are the same bytes). */
static int64_t cuda_data_bytes(gh_backend *b, gh_dev_data *dd) {
  cuda_data *d = (cuda_data *)dd;
  const int64_t np = (int64_t)d->capPairs > d->npairs ? (int64_t)d->capPairs : d->npairs;
  return (int64_t)d->T * d->Dp * (int64_t)sizeof(float) + np * (int64_t)(sizeof(int32_t) + sizeof(float));
}

static void cuda_data_evict(gh_backend *b, gh_dev_data *dd) {
  cuda_data *d = (cuda_data *)dd;
  if (d->evicted) return;
  if (d->pending) { CK(cudaEventSynchronize(d->ready)); d->pending = 0; }
  const size_t nx = (size_t)d->T * d->Dp, np = (size_t)d->npairs;
  if (!d->hX) { /* read back once into page-locked memory: later reloads are DMA from it */
    CK(cudaMallocHost((void **)&d->hX, (nx ? nx : 1) * sizeof(float)));
    CK(cudaMallocHost((void **)&d->hF, (np ? np : 1) * sizeof(int32_t)));
    CK(cudaMallocHost((void **)&d->hW, (np ? np : 1) * sizeof(float)));
    CK(cudaMemcpy(d->hX, d->dX, nx * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(d->hF, d->dFrames, np * sizeof(int32_t), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(d->hW, d->dW, np * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaStreamCreateWithFlags(&d->cs, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&d->ready, cudaEventDisableTiming));
  }
  CK(cudaFree(d->dX)); CK(cudaFree(d->dFrames)); CK(cudaFree(d->dW));
  d->dX = NULL; d->dFrames = NULL; d->dW = NULL;
  d->capPairs = 0;
  gg_xcache_free(d->xc);
  d->xc = NULL;
  d->evicted = 1;
}

static void cuda_data_reload(gh_backend *b, gh_dev_data *dd) {
  cuda_data *d = (cuda_data *)dd;
  if (!d->evicted) return;
  const size_t nx = (size_t)d->T * d->Dp, np = (size_t)d->npairs;
  cudaError_t e = cudaMalloc((void **)&d->dX, (nx ? nx : 1) * sizeof(float));
  if (e != cudaSuccess)
    gh_die("data reload: cannot hold %d frames of dimension %d on the GPU (%s); lower --max-device-memory", d->T,
           d->D, cudaGetErrorString(e));
  CK(cudaMalloc((void **)&d->dFrames, (np ? np : 1) * sizeof(int32_t)));
  CK(cudaMalloc((void **)&d->dW, (np ? np : 1) * sizeof(float)));
  d->capPairs = np ? np : 1;
  CK(cudaMemcpyAsync(d->dX, d->hX, nx * sizeof(float), cudaMemcpyHostToDevice, d->cs));
  CK(cudaMemcpyAsync(d->dFrames, d->hF, np * sizeof(int32_t), cudaMemcpyHostToDevice, d->cs));
  CK(cudaMemcpyAsync(d->dW, d->hW, np * sizeof(float), cudaMemcpyHostToDevice, d->cs));
  CK(cudaEventRecord(d->ready, d->cs));
  d->xc = gg_xcache_new(d->max_pdf + 1);
  d->evicted = 0;
  d->pending = 1;
}

/* k_estep_stats' shared memory: TILE rows of gspan GC posteriors (double)
 * and of D + 1 frame values (float). */
static size_t stats_smem(int D, int gspan) {
  return (size_t)TILE * gspan * GC * sizeof(double) + (size_t)TILE * (D + 1) * sizeof(float);
}

/* k_estep_stats' launch for tasks t[0..nt) of model m: bd threads per block
 * (a multiple of 32 in [32, 256]: the items of the largest pdf, rounded up,
 * at most 256), ny blocks per task (the largest pdf's items / bd, rounded
 * up) and gspan, the most Gaussian chunks that bd consecutive items of any
 * of the tasks' pdfs touch (the posteriors a block stages).  Blocks shrink
 * (down to 32 threads) while gspan > 8, so that the staged posteriors stay
 * small when E is (D = 1: E = 3). */
static void stats_launch(const cuda_model *m, const Task *t, int nt, int *bd, int *gspan, int *ny) {
  const int D = m->D;
  long long maxI = 1;
  int Emin = 0;
  for (int k = 0; k < nt; ++k) {
    const EPdf *e = &m->hEpdf[t[k].pdf];
    const int E = 1 + D + (e->full ? (int)gh_packed_size(D) : D);
    const long long I = (long long)((e->G + GC - 1) / GC) * E;
    if (I > maxI) maxI = I;
    if (Emin == 0 || E < Emin) Emin = E;
  }
  if (Emin == 0) Emin = 1;
  int b = maxI >= 256 ? 256 : (int)((maxI + 31) / 32 * 32);
  /* a window of b items touches at most ceil((b - 1) / E) + 1 chunks */
  while (b > 32 && (b + Emin - 2) / Emin + 1 > 8) b -= 32;
  int gs = 1;
  for (int k = 0; k < nt; ++k) {
    const EPdf *e = &m->hEpdf[t[k].pdf];
    const int E = 1 + D + (e->full ? (int)gh_packed_size(D) : D), nch = (e->G + GC - 1) / GC;
    int s = (b + E - 2) / E + 1;
    if (s > nch) s = nch;
    if (s > gs) gs = s;
  }
  *bd = b;
  *gspan = gs;
  *ny = (int)((maxI + b - 1) / b);
}

/* One batch of the fused E-step: tasks c->hTasks[0..nt) (built by
 * cuda_accumulate; their gamma needs ngamma floats, their partial slots
 * npart doubles), reductions c->hRt[0..nr).  Launches k_estep_post (per-task
 * totals summed into c->dTotal in task order), k_estep_stats and
 * k_estep_reduce; all on the default stream, in order. */
static void estep_batch(cuda_ctx *c, cuda_model *m, const cuda_data *v, int nt, long long ngamma,
                        long long npart, int nr) {
  const int D = m->D;
  dgrow((void **)&c->dGamma, &c->capGamma, (size_t)ngamma + 1, sizeof(float), 0);
  dgrow((void **)&c->dTasks, &c->capTasks, (size_t)nt, sizeof(Task), 0);
  dgrow((void **)&c->dPart, &c->capPart, (size_t)nt, sizeof(double), 0);
  upload_small(c, c->dTasks, c->hTasks, (size_t)nt * sizeof(Task));
  k_estep_post<<<(unsigned)nt, 256, 8 * 8 * D * sizeof(float)>>>(v->dX, v->Dp, D, v->dFrames, v->dW, c->dTasks,
                                                              m->dEpdf, m->dEparams, c->dGamma, c->dPart);
  CK(cudaGetLastError());
  gg_sum_into(c->dPart, nt, c->dTotal);
  if (npart) dgrow((void **)&c->dPstat, &c->capPstat, (size_t)npart, sizeof(double), 0);
  int bd, gspan, ny;
  stats_launch(m, c->hTasks, nt, &bd, &gspan, &ny);
  const size_t shm = stats_smem(D, gspan);
  if (shm > c->stats_smem_max)
    gh_die("cuda E-step: dimension %d needs %zu bytes of shared memory per block, the device allows %zu", D, shm,
           c->stats_smem_max);
  k_estep_stats<<<dim3((unsigned)nt, (unsigned)ny), bd, shm>>>(v->dX, v->Dp, D, v->dFrames, c->dTasks, m->dEpdf,
                                                               c->dGamma, m->dAcc, c->dPstat, gspan);
  CK(cudaGetLastError());
  if (nr) {
    dgrow((void **)&c->dRt, &c->capRt, (size_t)nr, sizeof(RTask), 0);
    upload_small(c, c->dRt, c->hRt, (size_t)nr * sizeof(RTask));
    long long maxr = 0;
    for (int j = 0; j < nr; ++j) if (c->hRt[j].GE > maxr) maxr = c->hRt[j].GE;
    k_estep_reduce<<<dim3((unsigned)nr, (unsigned)((maxr + 255) / 256)), 256>>>(c->dRt, c->dPstat, m->dAcc);
    CK(cudaGetLastError());
  }
  CK(cudaGetLastError()); /* (the caller's CK_LAUNCH after its last batch) */
}

/* Which E-step a pdf takes (Cook et al. 2011's variant selection, by
 * a fixed rule, as score_variant, so that the choice -- and so the bits --
 * depends on the model and the data block only): the GEMM forms
 * (cuda-gemm.cu, when cuBLAS is there) for a pdf whose uncentred fp32 form
 * errs beyond the contract (nofused), else the fused kernels for a pdf of
 * fewer than GEMM_ESTEP_MIN_PAIRS pairs or a diagonal pdf of at most
 * FUSED_DIAG_MAX_GAUSS Gaussians and fewer than FUSED_DIAG_MAX_PAIRS pairs,
 * the GEMM forms otherwise.  The GEMM E-step launches ~10 kernels per pdf;
 * an HMM-GMM block of 80 diagonal pdfs of 8 Gaussians (hmm-train) spent
 * most of its E-step launching them (bench/RESULTS.md D25).
 * GH_CUDA_ESTEP=fused|gemm forces one path for every pdf that may take it
 * (benchmarks).  Both paths are bitwise reproducible. */
#define GEMM_ESTEP_MIN_PAIRS SEG
#define FUSED_DIAG_MAX_GAUSS 32
#define FUSED_DIAG_MAX_PAIRS (1LL << 20)
static int estep_wants_gemm(const cuda_model *m, int p, int64_t n, int force) {
  if (m->nofused[p] || force == 1) return 1;
  if (force == 0) return 0;
  const EPdf *e = &m->hEpdf[p];
  if (n < GEMM_ESTEP_MIN_PAIRS) return 0;
  return !(!e->full && e->G <= FUSED_DIAG_MAX_GAUSS && n < FUSED_DIAG_MAX_PAIRS);
}

/* backend.h accumulate: per pdf (estep_wants_gemm), the GEMM E-step
 * (cuda-gemm.cu) or the fused kernels (k_estep_post, k_estep_stats and
 * k_estep_reduce over tasks of <= SEG (diagonal: SEG_DIAG) pairs of one pdf, straight from the
 * data's pdf-sorted pairs on the device, in batches of <= 1 M pairs, 32 M
 * posteriors and 32 M partial statistics: the batches, and so the order of
 * every sum, depend on the model and the data only); the total
 * log-likelihood is summed on the device in a fixed order and fetched once.
 * Dies on a dimension or pdf mismatch. */
static double cuda_accumulate(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd) {
  cuda_ctx *c = (cuda_ctx *)b->ctx;
  cuda_model *m = (cuda_model *)dm;
  cuda_data *d = (cuda_data *)dd;
  if (m->host_m) {
    if (!d->host_d) d->host_d = c->host->ops->data_upload(c->host, d->hXin, d->T, d->D, data_host_pairs(d), d->npairs);
    return c->host->ops->accumulate(c->host, m->host_m, d->host_d);
  }
  if (d->D != m->D) gh_die("accumulate: data dimension %d, model dimension %d", d->D, m->D);
  if (d->max_pdf >= m->P)
    gh_die("accumulate: the data has pdf id %d, the model only %d pdfs", d->max_pdf, m->P);
  if (d->evicted) gh_die("accumulate: the data block was evicted (data_reload first)");
  if (d->pending) { /* data_reload's copies */
    CK(cudaEventSynchronize(d->ready));
    d->pending = 0;
  }
  if (d->npairs == 0 || d->T <= 0) return 0.0;
  CK(cudaMemset(c->dTotal, 0, sizeof(double)));
  const char *ev = getenv("GH_CUDA_ESTEP");
  const int force = ev && !strcmp(ev, "fused") ? 0 : ev && !strcmp(ev, "gemm") ? 1 : -1;
  const int npdf = d->max_pdf + 1;
  int any_gemm = 0; /* the cuBLAS handle only when some pdf takes the GEMM path */
  for (int p = 0; p < npdf && !any_gemm; ++p) {
    const int64_t n = d->poff[p + 1] - d->poff[p];
    any_gemm = n > 0 && estep_wants_gemm(m, p, n, force);
  }
  gg_ctx *gg = m->gg && any_gemm ? ctx_gg(c) : NULL;
  if (gg && !d->have_centre) {
    memcpy(d->centre, gg_model_centre(m->gg), sizeof(double) * d->D);
    d->have_centre = 1;
  }
  char *use_gemm = (char *)gh_calloc(npdf ? npdf : 1, 1);
  for (int p = 0; p < npdf; ++p) {
    const int64_t n = d->poff[p + 1] - d->poff[p];
    if (n == 0) continue;
    use_gemm[p] = gg && estep_wants_gemm(m, p, n, force);
    if (m->nofused[p] && !use_gemm[p])
      gh_die("accumulate: no cuBLAS handle for pdf %d, which the fused kernels cannot evaluate within the contract", p);
    /* a pdf of few pairs that the fused kernels (double accumulators) cannot
     * serve within the contract: in double, not fp32 (per-utterance fMLLR
     * statistics amplify fp32 rounding: run-gpu.sh's AMI check, 1.4e-4) */
    const int prec = m->nofused[p] && n < GEMM_ESTEP_MIN_PAIRS && force != 1 && m->precision == GH_PREC_AUTO
                         ? GG_PREC_FP64 : m->precision;
    if (use_gemm[p])
      gg_estep_pdf(gg, m->gg, p, d->dX, d->Dp, d->dFrames + d->poff[p], d->dW + d->poff[p], n, d->centre,
                   m->dAcc + m->hEpdf[p].accoff, c->dTotal, prec, d->xc);
  }
  /* the fused pdfs: tasks of <= SEG (full) or SEG_DIAG (diagonal) pairs in pdf order, in batches.  A diagonal
   * pdf's task is cheap (G (1 + 2D) statistics), so short ones keep the GPU full: hmm-train's 80 pdfs of 8
   * Gaussians gave 160 blocks of 2,048 pairs per 262,144-frame block (GMM accumulation 0.043 s per 8 M-frame
   * iteration; tasks of 1,024 / 512 / 256 pairs: 0.0255 / 0.0235 / 0.0193 s, H200, bench/RESULTS.md
   * D28).  GH_CUDA_ESTEP_SEG=N: tasks of N pairs for every pdf (benchmarks; the task size sets the order
   * of the sums, so the bits). */
  const char *se = getenv("GH_CUDA_ESTEP_SEG");
  const int64_t seg_env = se && atoi(se) >= 64 && atoi(se) <= (1 << 20) ? atoi(se) : 0;
  const int64_t max_pairs = 1 << 20;
  const long long max_gamma = 32LL << 20, max_part = 32LL << 20;
  int nt = 0, nr = 0;
  long long bpairs = 0, bgamma = 0, bpart = 0;
  for (int p = 0; p < npdf; ++p) {
    const int64_t k0 = d->poff[p], n = d->poff[p + 1] - k0;
    if (n == 0 || use_gemm[p]) continue;
    const EPdf *e = &m->hEpdf[p];
    const long long GE = (long long)e->G * (1 + m->D + (e->full ? gh_packed_size(m->D) : m->D));
    const int64_t seg = seg_env ? seg_env : e->full ? SEG : SEG_DIAG;
    const int single = n <= seg;
    for (int64_t s0 = 0; s0 < n; s0 += seg) {
      const long long len = n - s0 < seg ? n - s0 : seg;
      if (nt > 0 && (bpairs + len > max_pairs || bgamma + len * e->G > max_gamma ||
                     (!single && bpart + GE > max_part))) {
        estep_batch(c, m, d, nt, bgamma, bpart, nr);
        nt = nr = 0;
        bpairs = bgamma = bpart = 0;
      }
      hgrow((void **)&c->hTasks, &c->hcapTasks, (size_t)nt + 1, sizeof(Task));
      Task *t = &c->hTasks[nt++];
      t->k0 = k0 + s0; t->k1 = k0 + s0 + len; t->goff = bgamma; t->pdf = p;
      t->pbase = single ? -1 : bpart;
      if (!single) {
        /* this pdf's reduction in this batch: the last one, or a new one */
        if (s0 > 0 && nr > 0 && c->hRt[nr - 1].accoff == e->accoff) {
          c->hRt[nr - 1].ns++;
        } else {
          hgrow((void **)&c->hRt, &c->hcapRt, (size_t)nr + 1, sizeof(RTask));
          RTask *r = &c->hRt[nr++];
          r->pbase = bpart; r->accoff = e->accoff; r->ns = 1; r->GE = (int)GE;
        }
        bpart += GE;
      }
      bpairs += len;
      bgamma += len * e->G;
    }
  }
  if (nt > 0) estep_batch(c, m, d, nt, bgamma, bpart, nr);
  free(use_gemm);
  CK_LAUNCH("E-step");
  double total = 0.0;
  CK(cudaMemcpy(&total, c->dTotal, sizeof(double), cudaMemcpyDeviceToHost));
  return total;
}

/* backend.h loglikes_data: the chunks of cuda_loglikes_begin (same sizes,
 * so the same kernels and bits) scored straight from the resident frames
 * (already at the device pitch), each copied out before the next: to the
 * host (out_dev 0) or to a device matrix (out_dev 1,
 * gh_cuda_loglikes_data_dev). */
static void loglikes_data_to(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd, int32_t row0, int32_t T, float *out,
                             int32_t ldo, int out_dev) {
  cuda_ctx *c = (cuda_ctx *)b->ctx;
  cuda_model *m = (cuda_model *)dm;
  cuda_data *d = (cuda_data *)dd;
  if (row0 < 0 || T < 0 || (int64_t)row0 + T > d->T)
    gh_die("loglikes_data: rows %d .. %lld of a data block of %d frames", row0, (long long)row0 + T - 1, d->T);
  if (ldo < m->P) gh_die("loglikes_data: output stride %d below the model's %d pdfs", ldo, m->P);
  if (m->host_m) {
    if (!out_dev) {
      gh_backend_loglikes_rows(b, dm, NULL, d->hXin, d->D, row0, T, out, m->P, ldo);
      return;
    }
    float *h = (float *)gh_malloc(sizeof(float) * ((size_t)T * m->P + 1));
    gh_backend_loglikes_rows(b, dm, NULL, d->hXin, d->D, row0, T, h, m->P, m->P);
    if (T > 0 && m->P > 0)
      CK(cudaMemcpy2D(out, (size_t)ldo * sizeof(float), h, (size_t)m->P * sizeof(float), (size_t)m->P * sizeof(float),
                      (size_t)T, cudaMemcpyHostToDevice));
    free(h);
    return;
  }
  if (d->D != m->D) gh_die("loglikes_data: data dimension %d, model dimension %d", d->D, m->D);
  if (d->evicted) gh_die("loglikes_data: the data block was evicted (data_reload first)");
  if (m->scoring_stale)
    gh_die("cuda loglikes: the model was re-estimated on the device (mstep); fetch it and upload it again to score");
  while (c->ninflight) cuda_loglikes_end(b);
  if (d->pending) { /* data_reload's copies */
    CK(cudaEventSynchronize(d->ready));
    d->pending = 0;
  }
  const int P = m->P;
  if (T <= 0 || P <= 0) return;
  const int W = m->V > P ? m->V : P;
  long long tmax = (64LL << 20) / W;
  if (tmax < 16) tmax = 16;
  if (tmax > OVL_CHUNK) tmax = OVL_CHUNK;
  const long long tc = tmax < T ? tmax : T;
  const int gemm = score_variant(c, m) == 1;
  if (c->capOo[0] < (size_t)tc * P || (m->nsplit && c->capScratch < (size_t)tc * m->V)) {
    CK(cudaDeviceSynchronize());
    dgrow((void **)&c->dOo[0], &c->capOo[0], (size_t)tc * P, sizeof(float), 0);
    if (m->nsplit) dgrow((void **)&c->dScratch, &c->capScratch, (size_t)tc * m->V, sizeof(float), 0);
  }
  for (long long t0 = 0; t0 < T; t0 += tc) {
    const int n = (int)(T - t0 < tc ? T - t0 : tc);
    score_chunk(c, m, d->dX + (size_t)(row0 + t0) * d->Dp, n, c->dOo[0], gemm);
    CK(cudaMemcpy2D(out + t0 * ldo, (size_t)ldo * sizeof(float), c->dOo[0], (size_t)P * sizeof(float),
                    (size_t)P * sizeof(float), (size_t)n, out_dev ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost));
  }
}
static void cuda_loglikes_data(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd, int32_t row0, int32_t T,
                               float *out, int32_t ldo) {
  loglikes_data_to(b, dm, dd, row0, T, out, ldo, 0);
}

/* loglikes_data into a device matrix: row t at out + t ldo (device;
 * hmm_estep_pairs, kernels/cuda/cuda-hmm.cu); the same bits as to the host. */
extern "C" void gh_cuda_loglikes_data_dev(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd, int32_t row0, int32_t T,
                                          float *out, int32_t ldo) {
  loglikes_data_to(b, dm, dd, row0, T, out, ldo, 1);
}

/* backend.h loglikes_subset_ok: 1 when pdfs[0..n) of m, scored by the
 * narrow kernel from a view of m (subset_view: their records gathered on
 * the device into the sub-model's layout; loglikes_subset and
 * gh_cuda_loglikes_segs_dev's subset segments), give the bits that the
 * sub-model of those pdfs (the set of just them, uploaded) gives with
 * loglikes_data: the sub-model would take the narrow kernel.  That is when
 * the pdfs are diagonal, at most 32, none split in m's layout nor in the
 * sub-model's (plan_units on their Gaussian counts), none outside the
 * numerical contract's fused form (nofused: an uncentred error estimate,
 * the same in any set), and the sub-model's score_variant would be 0 (the
 * same rule, from the counts).  (One case differs by construction: a
 * sub-model whose double GEMM form could err at its own centre goes to the
 * host in model_upload; its pdfs' fused fp32 form is within the contract
 * all the same, nofused being 0.)  0 for a model on the host or re-estimated
 * on the device, GH_CUDA_NARROW=0 or GH_CUDA_SUBSET=0 (tests: the
 * sub-model path). */
static int cuda_loglikes_subset_ok(gh_backend *b, gh_dev_model *dm, const int32_t *pdfs, int32_t n) {
  const cuda_model *m = (const cuda_model *)dm;
  const char *env = getenv("GH_CUDA_SUBSET");
  if (!m || m->host_m || m->scoring_stale || !m->hLanePoff || n <= 0 || n > 32 || !narrow_tf() ||
      (env && !strcmp(env, "0")))
    return 0;
  long long gt = 0;
  int maxG = 0;
  gh_gmm g1[32];
  memset(g1, 0, sizeof g1);
  for (int32_t j = 0; j < n; ++j) {
    const int p = pdfs[j];
    if (p < 0 || p >= m->P || m->hEpdf[p].full || m->nofused[p] || m->hLanePoff[p] < 0) return 0;
    const int G = m->hEpdf[p].G;
    gt += G;
    if (G > maxG) maxG = G;
    g1[j].type = GH_COV_DIAG;
    g1[j].num_gauss = G;
    g1[j].dim = m->D;
  }
  /* the sub-model's layout: one diagonal block, nothing split */
  gh_gmm_set sub;
  memset(&sub, 0, sizeof sub);
  sub.dim = m->D;
  sub.num_pdfs = n;
  sub.pdfs = g1;
  const int K[2] = {split_k(&sub, 0), split_k(&sub, 1)};
  int nu = 0, V = 0, nsplit = 0, *spdf = NULL, *soff = NULL;
  free(plan_units(&sub, K, &nu, &V, &nsplit, &spdf, &soff));
  free(spdf);
  free(soff);
  if (nsplit) return 0;
  /* the sub-model's score_variant */
  if (!gg_available() || getenv("GH_CUDA_NO_GEMM")) return 1; /* no GEMM forms: fused */
  const char *e = getenv("GH_CUDA_SCORE");
  if (e && !strcmp(e, "fused")) return 1;
  if (e && !strcmp(e, "gemm")) return 0;
  if (gt < GEMM_SCORE_MIN_GAUSS) return 1;
  if (gg_diag_set_tc(m->D, maxG, b->precision)) return 0;
  return maxG < GEMM_SCORE_MIN_PDF_GAUSS;
}

/* The gather's lane j: the pdf's first record and gconst in the model's
 * layout, its Gaussians. */
struct GatherLane { long long poff, goff; int G, pad; };

/* subset_view's gather: block j copies lane j's G R records (stride PB, R =
 * 2 nb per diagonal Gaussian) and G gconsts into lane j of the view. */
__global__ void __launch_bounds__(256)
k_subset_gather(const float4 *__restrict__ params, const float *__restrict__ gconst,
                const GatherLane *__restrict__ lanes, int R, float4 *__restrict__ vp, float *__restrict__ vg) {
  const int j = blockIdx.x;
  const GatherLane L = lanes[j];
  const long long nrec = (long long)L.G * R;
  for (long long q = threadIdx.x; q < nrec; q += blockDim.x) vp[q * PB + j] = params[L.poff + q * PB];
  for (int g = threadIdx.x; g < L.G; g += blockDim.x) vg[(size_t)g * PB + j] = gconst[L.goff + (size_t)g * PB];
}

/* The view of pdfs[0..n) of m (loglikes_subset_ok said yes): the one made
 * before for the same list, or a new one (pooled buffers, one gather
 * launch, on the default stream). */
static const SubView *subset_view(cuda_ctx *c, cuda_model *m, const int32_t *pdfs, int n) {
  for (int k = 0; k < m->nviews; ++k)
    if (m->views[k].n == n && !memcmp(m->views[k].pdfs, pdfs, sizeof(int32_t) * (size_t)n)) return &m->views[k];
  if (m->nviews == m->capviews) {
    m->capviews = m->capviews ? 2 * m->capviews : 16;
    m->views = (SubView *)gh_realloc(m->views, sizeof(SubView) * (size_t)m->capviews);
  }
  SubView *v = &m->views[m->nviews++];
  v->n = n;
  v->pdfs = (int32_t *)gh_malloc(sizeof(int32_t) * (size_t)n);
  memcpy(v->pdfs, pdfs, sizeof(int32_t) * (size_t)n);
  int Gmax = 1;
  for (int j = 0; j < n; ++j) if (m->hEpdf[pdfs[j]].G > Gmax) Gmax = m->hEpdf[pdfs[j]].G;
  const int R = 2 * m->nb;
  v->dParams = (float4 *)gh_cuda_pool_alloc(((size_t)Gmax * R * PB + 1) * sizeof(float4));
  v->dGconst = (float *)gh_cuda_pool_alloc(((size_t)Gmax * PB + 1) * sizeof(float));
  const size_t ob = 0, op = 32, on = op + ((sizeof(int) * (size_t)n + 15) / 16) * 16,
               ol = on + ((sizeof(int) * (size_t)n + 15) / 16) * 16, bytes = ol + sizeof(GatherLane) * (size_t)n;
  char *h = (char *)gh_calloc(bytes, 1);
  BlockDesc bd = {0, 0, 0, n};
  memcpy(h + ob, &bd, sizeof bd);
  int *hp = (int *)(h + op), *hn = (int *)(h + on);
  GatherLane *hl = (GatherLane *)(h + ol);
  for (int j = 0; j < n; ++j) {
    const int p = pdfs[j];
    hp[j] = j;
    hn[j] = m->hEpdf[p].G;
    hl[j] = GatherLane{m->hLanePoff[p], m->hLaneGoff[p], m->hEpdf[p].G, 0};
  }
  static_assert(sizeof(BlockDesc) <= 32, "BlockDesc before perm at 32 bytes");
  v->dMeta = (char *)gh_cuda_pool_alloc(bytes + 32);
  upload_small(c, v->dMeta, h, bytes);
  free(h);
  v->dBlocks = (const BlockDesc *)(v->dMeta + ob);
  v->dPerm = (const int *)(v->dMeta + op);
  v->dNg = (const int *)(v->dMeta + on);
  k_subset_gather<<<(unsigned)n, 256>>>(m->dParams, m->dGconst, (const GatherLane *)(v->dMeta + ol), R, v->dParams,
                                       v->dGconst);
  CK(cudaGetLastError());
  return v;
}

static int narrow_w_of(int count) { return count <= 8 ? 8 : count <= 16 ? 16 : 32; }

/* hmm_estep_pairs' scoring (kernels/cuda/cuda-hmm.cu): each segment k's rows
 * row0 .. row0 + rows - 1 of dd scored into out + row0 ldo (device):
 * a segment of a model with columns 0 .. its P - 1, as
 * gh_cuda_loglikes_data_dev would; a subset segment (backend.h
 * gh_score_seg) pdfs map[0..ncols) of the whole model into columns 0 ..
 * ncols - 1.  The segments whose model takes the narrow kernel (one
 * diagonal block of <= 32 entries, no split pdf, the fused scoring, on the
 * device) and the subset segments (loglikes_subset_ok: what their
 * sub-models would take; scored from their views, subset_view, made at the
 * first use of a model's subset) are scored in ONE launch of
 * k_loglikes_narrow_segs per lane width: the score groups' ~26,000-frame
 * segments filled a fifth of an H200 each (bench/RESULTS.md
 * D36); the others one call each.  The same bits either way. */
extern "C" void gh_cuda_loglikes_segs_dev(gh_backend *b, const gh_score_seg *segs, int32_t nseg, gh_dev_data *dd,
                                          float *out, int32_t ldo) {
  cuda_ctx *c = (cuda_ctx *)b->ctx;
  cuda_data *d = (cuda_data *)dd;
  const int tf = narrow_tf();
  unsigned char *narrow = (unsigned char *)gh_calloc(nseg ? nseg : 1, 1); /* lane width / 8 of a narrow segment, or 0 */
  int any = 0;
  for (int32_t k = 0; k < nseg; ++k) {
    const cuda_model *m = (const cuda_model *)segs[k].m;
    if (segs[k].row0 < 0 || segs[k].rows < 0 || (int64_t)segs[k].row0 + segs[k].rows > d->T)
      gh_die("cuda scoring: segment %d (rows %d + %d) outside the block's %d rows", (int)k, segs[k].row0,
             segs[k].rows, d->T);
    if (segs[k].subset) {
      if (!segs[k].map || segs[k].ncols > ldo || m->D != d->D || d->evicted ||
          !cuda_loglikes_subset_ok(b, segs[k].m, segs[k].map, segs[k].ncols))
        gh_die("cuda scoring: subset segment %d (%d pdfs) that the model cannot score (loglikes_subset_ok)", (int)k,
               segs[k].ncols);
      narrow[k] = (unsigned char)(narrow_w_of(segs[k].ncols) / 8);
    } else if (tf > 0 && !d->evicted && !m->host_m && !m->scoring_stale && m->D == d->D && m->ndiag_blocks == 1 &&
               !m->nfull_blocks && m->narrow_w && !m->nsplit && m->P <= ldo &&
               score_variant(c, (cuda_model *)m) == 0) {
      narrow[k] = (unsigned char)(m->narrow_w / 8);
    }
    any |= narrow[k];
  }
  for (int32_t k = 0; k < nseg; ++k)
    if (!narrow[k] && segs[k].rows > 0)
      gh_cuda_loglikes_data_dev(b, segs[k].m, dd, segs[k].row0, segs[k].rows, out + (size_t)segs[k].row0 * ldo, ldo);
  if (!any) {
    free(narrow);
    return;
  }
  while (c->ninflight) cuda_loglikes_end(b);
  if (d->pending) { /* data_reload's copies */
    CK(cudaEventSynchronize(d->ready));
    d->pending = 0;
  }
  const int nb = d->Dp / 4;
  NarrowSeg *hs = (NarrowSeg *)gh_malloc(sizeof(NarrowSeg) * (size_t)nseg);
  for (int W = 8; W <= 32; W *= 2) {
    const int Y = narrow_y(W, tf, nb), fb = Y * tf;
    int n = 0, blocks = 0;
    for (int32_t k = 0; k < nseg; ++k) {
      if (narrow[k] * 8 != W || segs[k].rows <= 0) continue;
      const cuda_model *m = (const cuda_model *)segs[k].m;
      if (segs[k].subset) {
        const SubView *v = subset_view(c, (cuda_model *)m, segs[k].map, segs[k].ncols);
        hs[n] = NarrowSeg{v->dParams, v->dGconst, v->dBlocks, v->dPerm, v->dNg, out + (size_t)segs[k].row0 * ldo,
                          (long long)segs[k].row0, segs[k].rows, blocks};
      } else {
        hs[n] = NarrowSeg{m->dParams, m->dGconst, m->dBlocks, m->dPerm, m->dNg, out + (size_t)segs[k].row0 * ldo,
                          (long long)segs[k].row0, segs[k].rows, blocks};
      }
      ++n;
      blocks += (segs[k].rows + fb - 1) / fb;
    }
    if (n == 0) continue;
    dgrow((void **)&c->dNarrowSegs, &c->capNarrowSegs, (size_t)n, sizeof(NarrowSeg), 0);
    upload_small(c, c->dNarrowSegs, hs, sizeof(NarrowSeg) * (size_t)n);
    const size_t shm = (size_t)fb * nb * sizeof(float4);
#define NSEGS(TFN) k_loglikes_narrow_segs<TFN><<<blocks, W * Y, shm>>>(c->dNarrowSegs, n, (const float4 *)d->dX, nb, ldo, W)
    switch (tf) {
      case 1: NSEGS(1); break;
      case 2: NSEGS(2); break;
      case 8: NSEGS(8); break;
      case 16: NSEGS(16); break;
      default: NSEGS(4); break;
    }
#undef NSEGS
    CK(cudaGetLastError()); /* launched; a fault is reported at the caller's next synchronisation */
  }
  free(hs);
  free(narrow);
}

/* backend.h loglikes_subset: pdfs[0..n) of m (loglikes_subset_ok said so)
 * on rows row0 .. row0 + T - 1 of d's resident frames into host out
 * (columns 0 .. n - 1, row stride ld): the narrow launch of a subset
 * segment into device scratch, then one copy. */
static void cuda_loglikes_subset(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd, int32_t row0, int32_t T,
                                 const int32_t *pdfs, int32_t n, float *out, int32_t ld) {
  cuda_ctx *c = (cuda_ctx *)b->ctx;
  if (T <= 0 || n <= 0) return;
  if (ld < n) gh_die("loglikes subset: output stride %d below the %d pdfs", ld, n);
  dgrow((void **)&c->dSubsetOut, &c->capSubsetOut, (size_t)(row0 + T) * n, sizeof(float), 0);
  gh_score_seg sg;
  memset(&sg, 0, sizeof sg);
  sg.m = dm; sg.row0 = row0; sg.rows = T; sg.ncols = n; sg.map = pdfs; sg.subset = 1;
  gh_cuda_loglikes_segs_dev(b, &sg, 1, dd, c->dSubsetOut, n);
  CK(cudaMemcpy2D(out, (size_t)ld * sizeof(float), c->dSubsetOut + (size_t)row0 * n, (size_t)n * sizeof(float),
                  (size_t)n * sizeof(float), (size_t)T, cudaMemcpyDeviceToHost));
}

static void cuda_acc_fetch(gh_backend *b, gh_dev_model *dm, gh_accs_set *accs) {
  cuda_model *m = (cuda_model *)dm;
  if (m->host_m) { gh_backend *h = ((cuda_ctx *)b->ctx)->host; h->ops->acc_fetch(h, m->host_m, accs); return; }
  if (accs->num_pdfs != m->P)
    gh_die("acc_fetch: accumulators have %d pdfs, the model %d", accs->num_pdfs, m->P);
  double *h = (double *)gh_malloc((m->acc_size + 1) * sizeof(double));
  CK(cudaMemcpy(h, m->dAcc, m->acc_size * sizeof(double), cudaMemcpyDeviceToHost));
  const int D = m->D;
  for (int p = 0; p < m->P; ++p) {
    const EPdf *e = &m->hEpdf[p];
    gh_gmm_accs *a = &accs->pdfs[p];
    if (a->num_gauss != e->G || a->dim != D || (a->type == GH_COV_FULL) != (e->full != 0))
      gh_die("acc_fetch: pdf %d: accumulators (%d Gaussians, dim %d) do not match the model "
             "(%d Gaussians, dim %d)", p, a->num_gauss, a->dim, e->G, D);
    const long long S = e->full ? gh_packed_size(D) : D, E = 1 + D + S;
    for (int g = 0; g < e->G; ++g) {
      const double *src = h + e->accoff + (long long)g * E;
      a->occupancy[g] += src[0];
      for (int i = 0; i < D; ++i) a->mean_accs[(size_t)g * D + i] += src[1 + i];
      for (long long q = 0; q < S; ++q) a->var_accs[(size_t)g * S + q] += src[1 + D + q];
    }
  }
  free(h);
}

/* backend.h acc_raw_*: dAcc as it is (acc_size doubles, E = 1 + D + S per
 * Gaussian at each pdf's accoff; the model's shapes decide the layout). */
static int64_t cuda_acc_raw_size(gh_backend *b, gh_dev_model *dm) { return ((cuda_model *)dm)->acc_size; }
static void cuda_acc_raw_get(gh_backend *b, gh_dev_model *dm, double *host) {
  cuda_model *m = (cuda_model *)dm;
  CK(cudaMemcpy(host, m->dAcc, m->acc_size * sizeof(double), cudaMemcpyDeviceToHost));
}
static void cuda_acc_raw_set(gh_backend *b, gh_dev_model *dm, const double *host) {
  cuda_model *m = (cuda_model *)dm;
  CK(cudaMemcpy(m->dAcc, host, m->acc_size * sizeof(double), cudaMemcpyHostToDevice));
}
static double *cuda_acc_raw_device(gh_backend *b, gh_dev_model *dm) { return ((cuda_model *)dm)->dAcc; }

/* backend.h acc_commit: one elementwise pass over the accumulators.
 * lib/train/dd.h gh_dd_add on the device (no multiplications: nothing for
 * the compiler to contract into an FMA). */
__device__ __forceinline__ void dd_two_sum(double a, double b, double &s, double &e) {
  const double t = a + b, bb = t - a;
  e = (a - (t - bb)) + (b - bb);
  s = t;
}
__global__ void k_acc_commit(double *__restrict__ acc, double *__restrict__ hi, double *__restrict__ lo,
                             long long n, int flags) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    double h = (flags & GH_ACC_MASTER_ZERO) ? 0.0 : hi[i], l = (flags & GH_ACC_MASTER_ZERO) ? 0.0 : lo[i];
    if (flags & GH_ACC_COMMIT) {
      double s, e;
      dd_two_sum(h, acc[i], s, e);
      e += l;
      dd_two_sum(s, e, h, l);
      acc[i] = 0.0;
    }
    hi[i] = h;
    lo[i] = l;
    if (flags & GH_ACC_MASTER_ROUND) acc[i] = h + l;
  }
}
static void cuda_acc_commit(gh_backend *b, gh_dev_model *dm, int flags) {
  cuda_model *m = (cuda_model *)dm;
  const long long n = m->acc_size;
  if (!m->dMaster) {
    CK(cudaMalloc((void **)&m->dMaster, (2 * n + 1) * sizeof(double)));
    CK(cudaMemset(m->dMaster, 0, (2 * n + 1) * sizeof(double)));
  }
  if (n == 0 || !flags) return;
  const long long nb = (n + 255) / 256;
  k_acc_commit<<<(unsigned)(nb < 8192 ? nb : 8192), 256>>>(m->dAcc, m->dMaster, m->dMaster + n, n, flags);
  CK(cudaGetLastError());
}
static void cuda_acc_master_get(gh_backend *b, gh_dev_model *dm, double *hi, double *lo) {
  cuda_model *m = (cuda_model *)dm;
  if (!m->dMaster) cuda_acc_commit(b, dm, 0);
  CK(cudaMemcpy(hi, m->dMaster, m->acc_size * sizeof(double), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(lo, m->dMaster + m->acc_size, m->acc_size * sizeof(double), cudaMemcpyDeviceToHost));
}
static double *cuda_acc_master_device(gh_backend *b, gh_dev_model *dm) {
  cuda_model *m = (cuda_model *)dm;
  if (!m->dMaster) cuda_acc_commit(b, dm, 0);
  return m->dMaster;
}

/* HMM kernels: kernels/cuda/cuda-hmm.cu */
extern "C" {
gh_dev_hmm *gh_cuda_hmm_upload(gh_backend *b, const gh_hmm_graph *const *graphs, int32_t num_graphs);
void gh_cuda_hmm_free(gh_backend *b, gh_dev_hmm *h);
void gh_cuda_hmm_forward(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, int flags,
                         double *loglik, float *alpha);
void gh_cuda_hmm_viterbi(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, int32_t *path,
                         double *score);
void gh_cuda_hmm_reweight(gh_backend *b, gh_dev_hmm *h, const gh_hmm_graph *const *graphs, int32_t num_graphs);
void gh_cuda_hmm_fb_pairs(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, const gh_hmm_graph *const *graphs,
                          const int32_t *col_pdf, int32_t frame_base, double min_post, double *loglik,
                          double *stats, gh_pair_buf *out);
int64_t gh_cuda_hmm_estep_pairs(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch,
                                const gh_hmm_graph *const *graphs, gh_dev_data *d, const gh_score_seg *segs,
                                int32_t nseg, int op, double min_post, double *loglik, double *stats, double *wsum,
                                double sec[2]);
void gh_cuda_hmm_fb(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, double *loglik,
                    float *gamma, double *stats);
}
/* Shrinkage statistics: kernels/cuda/shrink.cu */
extern "C" double gh_cuda_acc_gselect(gh_backend *b, const gh_gmm *gmm, const float *X, int32_t T,
                                      const int32_t *sel_off, const int32_t *sel, const float *w, gh_gmm_accs *accs,
                                      float *post, double *frame_ll); /* kernels/cuda/gselect.cu */
extern "C" void gh_cuda_acc_shrink(gh_backend *b, const gh_gmm_set *model, const float *X, int32_t T,
                                   const gh_frame_pdf *pairs, int64_t npairs, gh_accs_set *accs);

/* backend.h host_alloc: page-locked memory (the copies of loglikes then run
 * at full PCIe speed without a staging copy); malloc when the driver refuses
 * (too much locked memory), which host_free tells apart by the pointer's
 * attributes. */
static void *cuda_host_alloc(gh_backend *b, size_t bytes) {
  void *p = NULL;
  if (cudaMallocHost(&p, bytes ? bytes : 1) == cudaSuccess) return p;
  cudaGetLastError();
  return gh_malloc(bytes);
}

static void cuda_host_free(gh_backend *b, void *p) {
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeHost) {
    CK(cudaFreeHost(p));
  } else {
    cudaGetLastError();
    free(p);
  }
}

static const gh_backend_ops cuda_ops = {
    .name = "cuda",
    .free = cuda_free_backend,
    .model_upload = cuda_model_upload,
    .model_free = cuda_model_free,
    .loglikes = cuda_loglikes,
    .acc_zero = cuda_acc_zero,
    .data_upload = cuda_data_upload,
    .data_free = cuda_data_free,
    .accumulate = cuda_accumulate,
    .acc_fetch = cuda_acc_fetch,
    .hmm_upload = gh_cuda_hmm_upload,
    .hmm_free = gh_cuda_hmm_free,
    .hmm_forward = gh_cuda_hmm_forward,
    .hmm_viterbi = gh_cuda_hmm_viterbi,
    .hmm_fb = gh_cuda_hmm_fb,
    .acc_shrink = gh_cuda_acc_shrink, /* kernels/cuda/shrink.cu */
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .mstep = cuda_mstep,             /* kernels/cuda/cuda-mstep.cu */
    .model_fetch = cuda_model_fetch,
    .model_hash = cuda_model_hash,
    .loglikes_begin = cuda_loglikes_begin,
    .loglikes_end = cuda_loglikes_end,
    /* in the struct's order (C++ designated initializers) */
    .acc_raw_size = cuda_acc_raw_size,
    .acc_raw_get = cuda_acc_raw_get,
    .acc_raw_set = cuda_acc_raw_set,
    .acc_raw_device = cuda_acc_raw_device,
    .data_bytes = cuda_data_bytes,
    .data_evict = cuda_data_evict,
    .data_reload = cuda_data_reload,
    .acc_gselect = gh_cuda_acc_gselect, /* kernels/cuda/gselect.cu */
    .data_set_pairs = cuda_data_set_pairs,
    .kmeans_upload = cuda_kmeans_upload, /* kernels/cuda/cuda-kmeans.cu */
    .kmeans_nearest = cuda_kmeans_nearest,
    .kmeans_fetch = cuda_kmeans_fetch,
    .kmeans_free = cuda_kmeans_free,
    .acc_commit = cuda_acc_commit,      /* (last members: C++ wants them in order) */
    .acc_master_get = cuda_acc_master_get,
    .acc_master_device = cuda_acc_master_device,
    .hmm_fb_pairs = gh_cuda_hmm_fb_pairs,
    .hmm_reweight = gh_cuda_hmm_reweight,
    .loglikes_data = cuda_loglikes_data,
    .hmm_estep_pairs = gh_cuda_hmm_estep_pairs,
    .loglikes_subset_ok = cuda_loglikes_subset_ok,
    .loglikes_subset = cuda_loglikes_subset,
};

/* The slot of the backend's HMM scratch (kernels/cuda/cuda-hmm.cu). */
extern "C" void **gh_cuda_hmm_scratch_slot(gh_backend *b) { return &((cuda_ctx *)b->ctx)->hmm_scratch; }

extern "C" const char *gh_cuda_error_text(int err);

extern "C" int gh_cuda_device_count(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    gh_set_error("%s", gh_cuda_error_text(e)); /* kernels/cuda/device.cu */
    cudaGetLastError();
    return 0;
  }
  if (n == 0) gh_set_error("no CUDA device found");
  return n;
}

extern "C" void gh_cuda_thread_attach(gh_backend *b) {
  if (!b || b->ops != &cuda_ops) return;
  CK(cudaSetDevice(((cuda_ctx *)b->ctx)->device));
}

/* The CUDA backend on the current device (cudaGetDevice, so
 * CUDA_VISIBLE_DEVICES chooses); NULL with gh_last_error() set if no
 * device can be used. */
extern "C" gh_backend *gh_backend_cuda_new(void) {
  if (gh_cuda_device_count() <= 0) return NULL;
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  cudaDeviceProp prop;
  if (e == cudaSuccess) e = cudaGetDeviceProperties(&prop, dev);
  if (e == cudaSuccess) {
    gg_preload(); /* cuBLAS's dlopen beside the context's creation */
    e = cudaFree(0); /* create the context now */
  }
  if (e != cudaSuccess) {
    gh_set_error("%s", cudaGetErrorString(e));
    cudaGetLastError();
    return NULL;
  }
  if (prop.major < 6) {
    gh_set_error("CUDA device %d (%s) has compute capability %d.%d; 6.0 or newer is needed", dev,
                 prop.name, prop.major, prop.minor);
    return NULL;
  }
  gh_backend *b = (gh_backend *)gh_calloc(1, sizeof *b);
  cuda_ctx *c = (cuda_ctx *)gh_calloc(1, sizeof *c);
  c->device = dev;
  CK(cudaMalloc((void **)&c->dTotal, sizeof(double)));
  /* k_estep_stats stages TILE frames of D+1 floats and their posteriors:
   * up to ~103 KB for the largest supported D (768, gspan <= 2), above the
   * 48 KB default; at most what the device allows (estep_batch checks). */
  {
    size_t want = stats_smem(768, 2);
    if (stats_smem(1, 19) > want) want = stats_smem(1, 19);
    if (want > prop.sharedMemPerBlockOptin) want = prop.sharedMemPerBlockOptin;
    c->stats_smem_max = want;
    CK(cudaFuncSetAttribute(k_estep_stats, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)want));
  }
  b->ops = &cuda_ops;
  b->ctx = c;
  snprintf(b->device_name, sizeof b->device_name, "cuda (%.100s)", prop.name);
  return b;
}
