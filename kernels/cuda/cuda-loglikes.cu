/* cuda-loglikes.cu -- the CUDA backend's likelihoods (backend.h loglikes,
 * loglikes_begin / _end, loglikes_data, loglikes_subset_ok / _subset): the
 * fused kernels of Vaněk et al. (2012a: full covariances; 2012b: diagonal
 * ones, parameters in read order), the rule that picks them or the GEMM
 * forms (gh_cuda_score_variant; cuda-gemm.cu), the pipelined chunks of frames, and
 * hmm-train's score groups scored in one launch.
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
 *    by (covariance type, number of Gaussians) into 64-pdf blocks (Vaněk et al.
 *    2012a Sec. IV.C), so a block is homogeneous in type and nearly so in the
 *    Gaussian count; each thread loops over its own Gaussian count.  Log-add
 *    is the running max + scaled sum form (one exp per Gaussian per frame).
 *    grid = (frame blocks, pdf blocks): consecutive blocks share one pdf
 *    block's parameters, which therefore stay in L2.
 *  k_combine: pdfs with many Gaussians (a global UBM) are split at upload
 *    into segments of <= K Gaussians laid out like pdfs (gh_cuda_plan_units);
 *    k_loglikes writes their partial log-sums to a scratch matrix and
 *    k_combine log-adds each split pdf's segments into the output.  Only
 *    when that cuts the issued work by a quarter; else nothing changes.
 *  k_loglikes_narrow<TF>, k_loglikes_narrow_segs<TF>: k_loglikes for a
 *    model whose diagonal entries fill one block of at most 32 (hmm-train's
 *    score groups), W lanes x Y frame groups per block, the same
 *    arithmetic per thread; _segs scores many such models in one launch.
 *
 * Every CUDA call is checked; failures die with the call and CUDA's message.
 */
#include <cuda_runtime.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda-ctx.h"

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

/* Frame-tile size of the full-covariance kernel: 16 (default) or 8
 * (environment GH_CUDA_FULL_TF, for benchmarking). */
static int full_tf(void) {
  static int tf = 0;
  if (!tf) {
    static const char *const words[] = {"16", "8", NULL};
    tf = gh_env_word("GH_CUDA_FULL_TF", 0, words) ? 8 : 16;
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

/* Variant of the likelihood computation for model m (Cook et al.
 * 2011's variant selection, by a fixed rule from the measurements in
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
/* GH_CUDA_SCORE: -1 unset, 0 fused, 1 gemm. */
static int score_force(void) {
  static const char *const words[] = {"fused", "gemm", NULL};
  return gh_env_word("GH_CUDA_SCORE", -1, words);
}
int gh_cuda_score_variant(cuda_ctx *c, cuda_model *m) {
  if (!m->gg || !gg_model_homogeneous(m->gg)) return 0;
  const int force = score_force();
  int gemm;
  if (m->any_nofused) gemm = 1; /* the numerical contract (model_upload) */
  else if (force == 0) gemm = 0;
  else if (force == 1) gemm = 1;
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
  static const char *const words[] = {"0", "1", "2", "4", "8", "16", NULL};
  static const int tf[] = {0, 1, 2, 4, 8, 16};
  return tf[gh_env_word("GH_CUDA_NARROW", 3, words)];
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
    if (m->precision == GH_PREC_AUTO && gh_cuda_batch_score_ok(m)) {
      /* the pdfs of the double path in the whitened form (cuda-white.cu), the others by the fp32 GEMM forms
       * at the precision the rule gives them (every column is written first, then theirs overwritten) */
      if (m->nScoreExact < m->P)
        gg_loglikes(c->gg, m->gg, dX, m->Dp, n, dOut,
                    gg_resolve_precision(GH_PREC_AUTO, gg_model_total_gauss(m->gg),
                                         (gh_gemm_depth(m->D, gg_model_full(m->gg, 0)) + 7) & ~7));
      gh_cuda_batch_score(m, dX, n, dOut);
      return;
    }
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
void gh_cuda_loglikes_end(gh_backend *b) {
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
void gh_cuda_loglikes_begin(gh_backend *b, gh_dev_model *dm, const float *X, int32_t T, float *out) {
  cuda_ctx *c = (cuda_ctx *)b->ctx;
  cuda_model *m = (cuda_model *)dm;
  if (m->host_m) { /* on the host, complete on return */
    double t0 = gh_seconds();
    c->host->ops->gmm->loglikes(c->host, m->host_m, X, T, out);
    b->kernel_seconds += gh_seconds() - t0;
    return;
  }
  const int P = m->P;
  if (m->scoring_stale)
    gh_die("cuda loglikes: the model was re-estimated on the device (mstep); fetch it and upload it again to score");
  if (c->ninflight == 2) gh_cuda_loglikes_end(b);
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
  const int gemm = gh_cuda_score_variant(c, m) == 1;
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
    const char *tl = gh_env_str("GH_CUDA_TIMELINE");
    if (tl) {
      if (!(c->tl = fopen(tl, "a"))) gh_die("GH_CUDA_TIMELINE: cannot open %s: %s", tl, strerror(errno));
      CK(cudaEventCreate(&c->evBase));
      CK(cudaEventRecord(c->evBase));
      c->tBase = gh_seconds();
    }
  }
  const int direct = m->Dp == m->D; /* rows already at the device pitch: DMA straight from X */
  if (!direct) while (c->ninflight) gh_cuda_loglikes_end(b);
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
    while (c->ninflight) gh_cuda_loglikes_end(b);
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
void gh_cuda_loglikes(gh_backend *b, gh_dev_model *dm, const float *X, int32_t T, float *out) {
  gh_cuda_loglikes_begin(b, dm, X, T, out);
  while (((cuda_ctx *)b->ctx)->ninflight) gh_cuda_loglikes_end(b);
}

/* backend.h loglikes_data: the chunks of gh_cuda_loglikes_begin (same sizes,
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
  while (c->ninflight) gh_cuda_loglikes_end(b);
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
  const int gemm = gh_cuda_score_variant(c, m) == 1;
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
void gh_cuda_loglikes_data(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd, int32_t row0, int32_t T,
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
 * sub-model's (gh_cuda_plan_units on their Gaussian counts), none outside the
 * numerical contract's fused form (nofused: an uncentred error estimate,
 * the same in any set), and the sub-model's gh_cuda_score_variant would be 0 (the
 * same rule, from the counts).  (One case differs by construction: a
 * sub-model whose double GEMM form could err at its own centre goes to the
 * host in model_upload; its pdfs' fused fp32 form is within the contract
 * all the same, nofused being 0.)  0 for a model on the host or re-estimated
 * on the device, GH_CUDA_NARROW=0 or GH_CUDA_SUBSET=0 (tests: the
 * sub-model path). */
int gh_cuda_loglikes_subset_ok(gh_backend *b, gh_dev_model *dm, const int32_t *pdfs, int32_t n) {
  const cuda_model *m = (const cuda_model *)dm;
  static const char *const words[] = {"0", "1", NULL};
  if (!m || m->host_m || m->scoring_stale || !m->hLanePoff || n <= 0 || n > 32 || !narrow_tf() ||
      gh_env_word("GH_CUDA_SUBSET", 1, words) == 0)
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
  const int K[2] = {gh_cuda_split_k(&sub, 0), gh_cuda_split_k(&sub, 1)};
  int nu = 0, V = 0, nsplit = 0, *spdf = NULL, *soff = NULL;
  free(gh_cuda_plan_units(&sub, K, &nu, &V, &nsplit, &spdf, &soff));
  free(spdf);
  free(soff);
  if (nsplit) return 0;
  /* the sub-model's gh_cuda_score_variant */
  if (!gg_available()) return 1; /* no GEMM forms: fused */
  const int force = score_force();
  if (force == 0) return 1;
  if (force == 1) return 0;
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
  gh_cuda_upload_small(c, v->dMeta, h, bytes);
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
          !gh_cuda_loglikes_subset_ok(b, segs[k].m, segs[k].map, segs[k].ncols))
        gh_die("cuda scoring: subset segment %d (%d pdfs) that the model cannot score (loglikes_subset_ok)", (int)k,
               segs[k].ncols);
      narrow[k] = (unsigned char)(narrow_w_of(segs[k].ncols) / 8);
    } else if (tf > 0 && !d->evicted && !m->host_m && !m->scoring_stale && m->D == d->D && m->ndiag_blocks == 1 &&
               !m->nfull_blocks && m->narrow_w && !m->nsplit && m->P <= ldo &&
               gh_cuda_score_variant(c, (cuda_model *)m) == 0) {
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
  while (c->ninflight) gh_cuda_loglikes_end(b);
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
    gh_cuda_upload_small(c, c->dNarrowSegs, hs, sizeof(NarrowSeg) * (size_t)n);
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
void gh_cuda_loglikes_subset(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd, int32_t row0, int32_t T,
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
