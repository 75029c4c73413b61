/* cuda-wg.cu -- warpgroup (wgmma) tensor-core kernels for diagonal pdfs;
 * see cuda-wg.h for what they compute.
 *
 * Shared-memory operands are in the wgmma "canonical K-major layout without
 * swizzle" (PTX ISA, "Shared Memory Matrix Layout"): an R x K tile (K a
 * multiple of 8 floats) is cut into core matrices of 8 rows x 4 floats (16
 * bytes a row, 128 bytes each); core matrix (r / 8, k / 4) sits at float
 * offset (r / 8) * 8K + (k / 4) * 32 (core_off).  The descriptor of the
 * 8-wide k-step s starts at float 64 s, with leading byte offset (next core
 * matrix along K) 128 and stride byte offset (next 8 rows) 32 K (wg_desc).
 * (No swizzle: bench/experiments/wgmma-rate.cu measured the same rate with
 * the 128-byte swizzle on an H200.)
 *
 * Accumulator fragment of a 64 x N wgmma result (PTX ISA, "Register
 * fragments"): warp q of the warpgroup holds rows 16 q .. 16 q + 15; lane
 * (g = lane / 4, t = lane % 4) holds, for each 8-column group j,
 *   d[4 j] (g, 8 j + 2 t), d[4 j + 1] (g, 8 j + 2 t + 1),
 *   d[4 j + 2] (g + 8, 8 j + 2 t), d[4 j + 3] (g + 8, 8 j + 2 t + 1);
 * an A fragment in registers (64 x 8 TF32) a0 (g, t), a1 (g + 8, t),
 * a2 (g, t + 4), a3 (g + 8, t + 4).  So posteriors R^T (Gaussians x frames)
 * in the accumulator's order are, unchanged, the A operand of S = R^T Xe
 * when k-slot t stands for frame 2 t and slot t + 4 for frame 2 t + 1 of
 * the group: the transposed feature tile is written in that order
 * (gw_tpos, xt_off).
 *
 *  k_wg_lse    block of three warpgroups (two for rows of more than 88
 *              floats): 64 frames per warpgroup (the A operand; split into
 *              big + small parts in shared memory once) x one pdf, whose
 *              Gaussians (split already) come in tiles of BN (the B operand,
 *              cp.async, two buffers); an online (max, sum) per row; for
 *              the E-step also the tile's log-likelihoods L to global memory.
 *  k_wg_stats  block of four warpgroups (three for rows of more than 88
 *              floats): 64 Gaussians per warpgroup, the slice's frames in
 *              tiles of BF (raw, cp.async, two buffers), each split by the
 *              block into the big + small parts of its transpose (two split
 *              sets: the next tile is split while this one's product runs);
 *              L read from global memory into registers in the fragment
 *              order above, one tile ahead; R = w exp(L - lse) in
 *              registers, S += R^T Xe (wgmma, R from registers).  (Computing
 *              L^T again from the model's rows instead was half its
 *              tensor work: bench/RESULTS.md D12.)
 * Configurations measured and not kept (software pipelining within a
 * warpgroup, ping-pong between the two, pre-split and transposed frame
 * copies in global memory, independent warpgroups with the resident
 * operand in registers): bench/RESULTS.md D11.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "base/env.h"
#include "base/gh-base.h"
#include "cuda-check.h"
}
#include "cuda-tc.h" /* the device helpers gt_split_tf32, gt_lse_merge, gt_cp_* */
#include "cuda-wg.h"
#include "wgmma-ops.h"

/* The kernel bodies exist only in the sm_90a code; the compute_90 PTX pass
 * (kept for newer GPUs, which take the other kernels: gw_mode) sees the
 * device helpers unused. */
#pragma nv_diag_suppress 177

/* frames per k_wg_lse block: 64 per warpgroup, three warpgroups where the
 * rows are short enough for their shared memory (the model's tiles cross
 * from L2 once per block: this kernel was bound by that traffic with two) */
#define WL_BM(EP) ((EP) <= 88 ? 192 : 128)

/* frames per k_wg_stats tile and Gaussians per k_wg_lse tile: smaller for
 * long rows, to fit 227 KB of shared memory */
#define WS_BF(EP) ((EP) <= 88 ? 32 : 16)
#define WL_BN(EP) ((EP) <= 104 ? 64 : 32)

static __host__ __device__ __forceinline__ int gw_tpos(int u) { return (u & 1) ? 4 + (u >> 1) : u >> 1; }

static __device__ __forceinline__ uint64_t wg_desc(const float *p, int lbo_bytes, int sbo_bytes) {
  const uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
  return (uint64_t)((a & 0x3FFFF) >> 4) | ((uint64_t)(lbo_bytes >> 4) << 16) | ((uint64_t)(sbo_bytes >> 4) << 32);
}

static __device__ __forceinline__ void wg_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
static __device__ __forceinline__ void wg_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
/* waits until at most N committed groups of this warpgroup are pending */
template <int N> static __device__ __forceinline__ void wg_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
/* keeps the compiler from moving uses of accumulator registers across the
 * asynchronous MMAs (CUTLASS's warpgroup_fence_operand) */
template <int K> static __device__ __forceinline__ void fence_regs(float (&d)[K]) {
#pragma unroll
  for (int i = 0; i < K; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int K> static __device__ __forceinline__ void fence_regs(uint32_t (&a)[K][4]) {
#pragma unroll
  for (int i = 0; i < K; ++i)
#pragma unroll
    for (int q = 0; q < 4; ++q) asm volatile("" : "+r"(a[i][q])::"memory");
}
/* cp.async writes become visible to the tensor cores' (async proxy) reads */
static __device__ __forceinline__ void fence_proxy() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/* Float offset of element (r, k) in an R x K core-matrix tile (K-major, no
 * swizzle; LBO 128 bytes, SBO 32 K bytes). */
template <int K> static __device__ __forceinline__ int core_off(int r, int k) {
  return (r >> 3) * 8 * K + (k >> 2) * 32 + (r & 7) * 4 + (k & 3);
}
/* Rows r < nrows of src (row stride ld floats, K floats each, K a multiple
 * of 8) into dst, rows r >= valid zero: CORE, the core-matrix layout
 * (core_off); else plain rows of stride K + 4 (the split's reads below are
 * then free of bank conflicts).  All threads of the block, 16-byte
 * cp.async; the caller commits. */
template <int K, bool CORE>
static __device__ __forceinline__ void load_rows(float *dst, const float *src, long long ld, int nrows, int valid) {
  constexpr int Q = K / 4;
  for (int idx = threadIdx.x; idx < nrows * Q; idx += blockDim.x) {
    const int r = idx / Q, c = idx - r * Q;
    const bool in = r < valid;
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst + (CORE ? (r >> 3) * 8 * K + c * 32 + (r & 7) * 4 /* core_off<K>(r, 4 c) */ : r * (K + 4) + 4 * c));
    const float *s = in ? src + r * ld + 4 * c : src; /* any valid address: 0 bytes are read */
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(s), "r"(in ? 16 : 0));
  }
}
/* The transposed tile [EP features x BF frames] of k_wg_stats: core matrix
 * (e / 8, pos / 4) at 48-float spacing along K (LBO 192 bytes, SBO 8 x 192
 * x BF / 32 bytes), pos the frame's gw_tpos position; the 48-float spacing
 * spreads 32 lanes writing 8 frames x 4 features over the banks. */
#define XT_LBO 48
template <int BF> static __device__ __forceinline__ int xt_off(int e, int f) {
  const int pos = (f & ~7) | gw_tpos(f & 7);
  return (e >> 3) * (BF / 4) * XT_LBO + (pos >> 2) * XT_LBO + (e & 7) * 4 + (pos & 3);
}

/* Splits the R x K tile src (rows valid < R from src, row stride ld; the
 * rest zero) into TF32 big / small parts: when big != NULL, core-matrix
 * tiles (core_off); when tb != NULL, the transposed tiles (xt_off<BF>: src
 * rows are frames, K = EP).  All threads of the block; warp chunks of 8 rows x 4
 * columns, lane (row & 7 = lane / 4, column & 3 = lane % 4), a mapping
 * chosen to spread each warp's reads and writes over the 32 banks (ncu still
 * counts some conflicts).  src in global or shared memory. */
template <int R, int K, int BF>
static __device__ __forceinline__ void split_tile(const float *src, long long ld, int valid, float *big, float *small,
                                                  float *tb, float *ts) {
  const int lane = threadIdx.x & 31;
  for (int c = threadIdx.x >> 5; c < (R / 8) * (K / 4); c += blockDim.x >> 5) {
    const int r = (c / (K / 4)) * 8 + (lane >> 2), k = (c % (K / 4)) * 4 + (lane & 3);
    const float x = r < valid ? src[r * ld + k] : 0.f;
    uint32_t b, sm;
    gt_split_tf32(x, b, sm);
    if (big) {
      const int o = core_off<K>(r, k);
      big[o] = __uint_as_float(b);
      small[o] = __uint_as_float(sm);
    }
    if (tb) {
      const int ot = xt_off<BF>(k, r);
      tb[ot] = __uint_as_float(b);
      ts[ot] = __uint_as_float(sm);
    }
  }
}

/* d = A B^T over the EP / 8 k-steps in 3xTF32 (a_s b + a b_s + a b, the
 * small products first), A [64 x EP] and B [N x EP] in shared memory as big /
 * small core-matrix tiles (core_off); fenced and committed, not waited for. */
template <int N, int EP>
static __device__ __forceinline__ void prod3_ss(float (&d)[N / 2], const float *aB, const float *aS, const float *bB,
                                                const float *bS) {
  fence_regs(d);
  wg_fence();
#pragma unroll
  for (int k = 0; k < EP / 8; ++k) {
    const uint64_t dab = wg_desc(aB + 64 * k, 128, 32 * EP), das = wg_desc(aS + 64 * k, 128, 32 * EP);
    const uint64_t dbb = wg_desc(bB + 64 * k, 128, 32 * EP), dbs = wg_desc(bS + 64 * k, 128, 32 * EP);
    wg_mma<N>::ss(d, das, dbb, k > 0);
    wg_mma<N>::ss(d, dab, dbs, 1);
    wg_mma<N>::ss(d, dab, dbb, 1);
  }
  wg_commit();
}


template <int EP>
__global__ void __launch_bounds__(64 * WL_BM(EP) / 32, 1)
k_wg_lse(const float *__restrict__ Xe, int n, const float *__restrict__ AB, const float *__restrict__ AS,
         const long long *__restrict__ goff, int G0, float *__restrict__ out, int ldo, const float *__restrict__ w,
         double *__restrict__ tot, float *__restrict__ ll, int ldll) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int BN = WL_BN(EP), BM = WL_BM(EP);
  extern __shared__ __align__(128) float sm[];
  /* X big, small (BM x EP); two stages of A tiles big, small (BN x EP) */
  float *sXB = sm, *sXS = sXB + BM * EP, *stage = sXS + BM * EP;
  const int tid = threadIdx.x, wg = tid >> 7, wq = (tid >> 5) & 3, lane = tid & 31, t = lane & 3;
  const int p = blockIdx.y;
  const long long f0 = (long long)blockIdx.x * BM;
  const long long gb = goff ? goff[p] : 0;
  const int G = goff ? (int)(goff[p + 1] - gb) : G0;
  const int nv = (int)(n - f0 < BM ? n - f0 : BM);
  const int ntiles = (G + BN - 1) / BN;
  auto load_tile = [&](int c) {
    float *o = stage + (c & 1) * 2 * BN * EP;
    const int cv = G - c * BN < BN ? G - c * BN : BN;
    load_rows<EP, true>(o, AB + (gb + (long long)c * BN) * EP, EP, BN, cv);
    load_rows<EP, true>(o + BN * EP, AS + (gb + (long long)c * BN) * EP, EP, BN, cv);
  };
  if (ntiles > 0) load_tile(0);
  gt_cp_commit();
  split_tile<BM, EP, 8>(Xe + f0 * EP, EP, nv, sXB, sXS, NULL, NULL);
  float rm[2] = {-INFINITY, -INFINITY}, rs[2] = {0.f, 0.f}; /* rows g, g + 8 of this warp */
  const float *xb = sXB + wg * 64 * EP, *xs = sXS + wg * 64 * EP;
  float d[BN / 2];
  for (int c = 0; c < ntiles; ++c) {
    const int cv = G - c * BN < BN ? G - c * BN : BN;
    gt_cp_wait<0>();
    fence_proxy();
    __syncthreads(); /* tile c landed; every warpgroup is done with tile c - 1 */
    if (c + 1 < ntiles) load_tile(c + 1);
    gt_cp_commit();
    const float *ab = stage + (c & 1) * 2 * BN * EP, *as = ab + BN * EP;
    prod3_ss<BN, EP>(d, xb, xs, ab, as);
    wg_wait<0>();
    fence_regs(d);
    if (ll) { /* the tile's log-likelihoods for k_wg_stats: 8 rows x 32 bytes a store instruction */
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = wg * 64 + wq * 16 + (lane >> 2) + 8 * h;
        if (r >= nv) continue;
        float *o = ll + (f0 + r) * ldll + c * BN + 2 * t;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
          if (c * BN + 8 * j + 2 * t < ldll) *(float2 *)(o + 8 * j) = make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
      }
    }
    /* online (max, sum) of rows g, g + 8 over this thread's columns */
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float x[BN / 4], tm = -INFINITY;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          x[2 * j + q] = 8 * j + 2 * t + q < cv ? gh_ovf(d[4 * j + 2 * h + q]) : -INFINITY;
          tm = fmaxf(tm, x[2 * j + q]);
        }
      if (tm == -INFINITY) continue;
      float m = rm[h], sum = rs[h];
      if (tm > m) { sum = m == -INFINITY ? 0.f : sum * __expf(m - tm); m = tm; }
#pragma unroll
      for (int q = 0; q < BN / 4; ++q) sum += __expf(x[q] - m);
      rm[h] = m; rs[h] = sum;
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float m = rm[h], sum = rs[h];
#pragma unroll
    for (int o = 1; o <= 2; o <<= 1) {
      const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, sum, o);
      gt_lse_merge(m, sum, m2, s2);
    }
    const int r = wg * 64 + wq * 16 + (lane >> 2) + 8 * h;
    if (t == 0 && r < nv) {
      const float l = m == -INFINITY ? -INFINITY : m + logf(sum);
      out[(f0 + r) * ldo + p] = l;
      if (tot) tot[f0 + r] = m == -INFINITY ? 0.0 : (double)(w ? w[f0 + r] : 1.f) * (double)l;
    }
  }
#else
  __trap();
#endif
}

template <int EP, int NW, bool OVL>
__global__ void __launch_bounds__(128 * NW, 1)
k_wg_stats(const float *__restrict__ Xe, int n, const float *__restrict__ ll, int ldll, int G,
           const float *__restrict__ lse, const float *__restrict__ w, int rows, float *__restrict__ S) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int BF = WS_BF(EP), FS = BF / 8, SPL = 3 * BF * EP, RAW = BF * (EP + 4), BG = 64 * NW;
  extern __shared__ __align__(128) float sm[];
  __shared__ float lse_s[2][BF], w_s[2][BF];
  /* OVL ? 2 : 1 split sets of SPL floats (X^T big, small: xt_off, EP x BF
   * x 3 / 2 each); raw X tiles (2 x BF x (EP + 4)) */
  float *spl = sm, *raw = spl + (OVL ? 2 : 1) * SPL;
  const int tid = threadIdx.x, wg = tid >> 7, wq = (tid >> 5) & 3, lane = tid & 31, t = lane & 3;
  const int g0 = blockIdx.x * BG, gv = G - g0 < BG ? G - g0 : BG;
  const long long r_begin = (long long)blockIdx.y * rows;
  const long long r_end = r_begin + rows < n ? r_begin + rows : n;
  const int ntiles = r_end > r_begin ? (int)((r_end - r_begin + BF - 1) / BF) : 0;
  auto load_tile = [&](int i) { /* raw tile i into buffer i & 1 (nothing past the slice) */
    const long long r0 = r_begin + (long long)i * BF;
    if (i >= ntiles) return;
    const int b = i & 1, nv = (int)(r_end - r0 < BF ? r_end - r0 : BF);
    load_rows<EP, false>(raw + b * RAW, Xe + r0 * EP, EP, BF, nv);
    if (tid < BF) {
      lse_s[b][tid] = tid < nv ? lse[r0 + tid] : -INFINITY;
      w_s[b][tid] = tid < nv && w ? w[r0 + tid] : 1.f;
    }
  };
  auto split = [&](int i) { /* raw tile i into split set i & 1 (OVL) or 0 */
    float *o = spl + (OVL ? (i & 1) * SPL : 0);
    split_tile<BF, EP, BF>(raw + (i & 1) * RAW, EP + 4, BF, nullptr, nullptr, o, o + BF * EP * 3 / 2);
  };
  load_tile(0);
  gt_cp_commit();
  float st[EP / 2];
#pragma unroll
  for (int i = 0; i < EP / 2; ++i) st[i] = 0.f;
  fence_regs(st); /* zeroed here, not sunk below the first wgmma (ptxas would serialize them, C7515) */
  const int row = wg * 64 + wq * 16 + (lane >> 2); /* Gaussian (in the block) of rows g of the fragments; + 8: the others */
  const bool v0 = row < gv, v1 = row + 8 < gv;
  /* tile i's log-likelihoods at this thread's fragment positions
   * (lv[4 j + 2 h + q] = (Gaussian row + 8 h, frame 8 j + 2 t + q)), loaded
   * from global memory into registers one tile ahead (a warp's load reads 8
   * Gaussians x 4 frames, 32 bytes each; through shared memory by cp.async
   * it was slower: bench/RESULTS.md D12) */
  float lv[BF / 2];
  auto load_ll = [&](int i) {
    if (i >= ntiles) return;
    const long long r0 = r_begin + (long long)i * BF;
    const int nv = (int)(r_end - r0 < BF ? r_end - r0 : BF);
    const float *src = ll + r0 * ldll + g0 + row;
#pragma unroll
    for (int j = 0; j < FS; ++j)
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const int f = 8 * j + 2 * t + q;
        lv[4 * j + q] = f < nv && v0 ? __ldg(src + (long long)f * ldll) : 0.f;
        lv[4 * j + 2 + q] = f < nv && v1 ? __ldg(src + (long long)f * ldll + 8) : 0.f;
      }
  };
  load_ll(0);
  /* OVL: tile 0 is split before the loop, each iteration splits the next
   * tile while its own statistics product runs; else each iteration splits
   * its tile first */
  if (OVL) {
    gt_cp_wait<0>();
    __syncthreads(); /* tile 0 landed */
    load_tile(1);
    gt_cp_commit();
    split(0);
    fence_proxy();
    __syncthreads();
  }
  for (int i = 0; i < ntiles; ++i) {
    const int b = i & 1;
    if (!OVL) {
      gt_cp_wait<0>();
      __syncthreads(); /* tile i landed; every warpgroup is done with tile i - 1 */
      load_tile(i + 1);
      gt_cp_commit();
      split(i);
      fence_proxy();
      __syncthreads();
    }
    const float *tb = spl + (OVL ? b * SPL : 0), *ts = tb + BF * EP * 3 / 2;
    /* R = w exp(L - lse) as the A fragments of S += R^T Xe */
    uint32_t rb[FS][4], rsm[FS][4];
#pragma unroll
    for (int j = 0; j < FS; ++j) {
      const int fa = 8 * j + 2 * t, fb = fa + 1;
      const float la = lse_s[b][fa], lb = lse_s[b][fb], wa = w_s[b][fa], wb = w_s[b][fb];
      gt_split_tf32(v0 && la > -INFINITY ? wa * __expf(lv[4 * j] - la) : 0.f, rb[j][0], rsm[j][0]);     /* (g, fa) */
      gt_split_tf32(v1 && la > -INFINITY ? wa * __expf(lv[4 * j + 2] - la) : 0.f, rb[j][1], rsm[j][1]); /* (g + 8, fa) */
      gt_split_tf32(v0 && lb > -INFINITY ? wb * __expf(lv[4 * j + 1] - lb) : 0.f, rb[j][2], rsm[j][2]); /* (g, fb) */
      gt_split_tf32(v1 && lb > -INFINITY ? wb * __expf(lv[4 * j + 3] - lb) : 0.f, rb[j][3], rsm[j][3]); /* (g + 8, fb) */
    }
    load_ll(i + 1);
    /* (No skipping of all-zero posterior groups: a branch around the wgmma
     * makes ptxas serialize them, C7520.) */
    fence_regs(rb);
    fence_regs(rsm);
    wg_fence();
#pragma unroll
    for (int j = 0; j < FS; ++j) {
      const uint64_t dtb = wg_desc(tb + 2 * XT_LBO * j, 4 * XT_LBO, 4 * XT_LBO * BF / 4);
      const uint64_t dts = wg_desc(ts + 2 * XT_LBO * j, 4 * XT_LBO, 4 * XT_LBO * BF / 4);
      wg_mma<EP>::rs(st, rsm[j], dtb);
      wg_mma<EP>::rs(st, rb[j], dts);
      wg_mma<EP>::rs(st, rb[j], dtb);
    }
    wg_commit();
    if (OVL) { /* while the statistics product runs: tile i + 1 (landed) into the other split set (the
                * products of tile i - 1 are done with it), tile i + 2 into the buffers tile i came in
                * (every warpgroup has read its log-likelihoods: the barrier) */
      gt_cp_wait<0>();
      __syncthreads();
      load_tile(i + 2);
      gt_cp_commit();
      split(i + 1);
    }
    wg_wait<0>();
    if (OVL) {
      fence_proxy();
      __syncthreads(); /* tile i + 1 split; every warpgroup is done with tile i */
    }
  }
  fence_regs(st);
  float *Sb = S + (long long)blockIdx.y * G * EP;
#pragma unroll
  for (int j = 0; j < EP / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int gl = row + 8 * h;
      if (gl >= gv) continue;
      float *o = Sb + (long long)(g0 + gl) * EP + 8 * j + 2 * t;
      o[0] = st[4 * j + 2 * h];
      o[1] = st[4 * j + 2 * h + 1];
    }
#else
  __trap();
#endif
}

/* ---------------------------------------------------------------- host */

/* 1 in the code this device runs when it is the sm_90a code (the kernels'
 * bodies), 0 in the compute_90 PTX (a toolkit before 12.0 builds only that:
 * Makefile). */
__global__ void k_wg_built(int *out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *out = 1;
#else
  *out = 0;
#endif
}

int gw_mode(void) {
  static int dev_ok = -1;
  static const char *const words[] = {"0", "1", NULL};
  const int e = gh_env_word("GH_CUDA_WG", -1, words); /* benchmarks, tests */
  if (e == 0) return 0;
  if (dev_ok < 0) {
    dev_ok = 0;
    int dev = 0, major = 0, minor = 0, *d = NULL, built = 0;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess && major == 9 &&
        minor == 0 && cudaMalloc((void **)&d, sizeof(int)) == cudaSuccess) {
      k_wg_built<<<1, 1>>>(d);
      if (cudaMemcpy(&built, d, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess) dev_ok = built;
      cudaFree(d);
    }
    cudaGetLastError();
  }
  if (!dev_ok) return 0;
  return e == 1 ? 1 : 2;
}

static void check_ep(int Ep, const char *what) {
  if (Ep <= 0 || Ep % 8 || Ep > GW_MAX_EP) gh_die("%s: padded row length %d not a multiple of 8 in 8..%d", what, Ep, GW_MAX_EP);
}

static size_t lse_smem(int Ep) { return sizeof(float) * (size_t)(2 * WL_BM(Ep) * Ep + 4 * WL_BN(Ep) * Ep); }

/* k_wg_stats's configuration: nw warpgroups (64 Gaussians each) and ovl
 * (two split sets, the next tile split during the statistics product):
 * four and two for rows of <= 88 floats, else three and two (H100, UBM
 * diag 2048 D=40, with the log-likelihoods through shared memory: EM 4.43
 * ms against 4.61 / 4.82 / 4.90 with 4 / 3 / 3 + ovl; in registers, as
 * now, 4.15-4.17; bench/RESULTS.md D12).  GH_CUDA_WG_STATS=<nw>[o]
 * picks one for experiments where it is built (rows of 88 and 128 floats;
 * nw 4 for 88 only). */
typedef struct { int nw, ovl; } stats_cfg;
static stats_cfg stats_config(int Ep) {
  stats_cfg c = {Ep <= 88 ? 4 : 3, 1};
  static const char *const words[] = {"3", "3o", "4", "4o", NULL};
  const int e = gh_env_word("GH_CUDA_WG_STATS", -1, words);
  if (e >= 0 && (e < 2 || Ep <= 88)) { c.nw = e < 2 ? 3 : 4; c.ovl = e & 1; }
  return c;
}
static size_t stats_smem(int Ep, stats_cfg c) {
  const size_t bf = WS_BF(Ep);
  return sizeof(float) * ((c.ovl ? 2 : 1) * 3 * bf * Ep + 2 * bf * (Ep + 4));
}

int gw_slice_rows(int64_t n, int G, int Ep, int sms, int *nslices) {
  const int bg = 64 * stats_config(Ep).nw;
  const int64_t gblocks = (G + bg - 1) / bg;
  /* one block per SM at a time: at most two whole waves (the frames split
   * into nsl slices, gblocks x nsl <= 2 x sms; a few blocks more would
   * make a third wave: UBM diag 2048 D=60 on an H200, 16 x 17 blocks, 12.3
   * ms per EM iteration against 9.6; bench/RESULTS.md D10) */
  int64_t nsl = 2LL * (sms > 0 ? sms : 1) / gblocks;
  if (nsl < 1) nsl = 1;
  int64_t rows = (n + nsl - 1) / nsl;
  rows = (rows + 31) / 32 * 32;
  if (rows < 256) rows = 256;
  if (rows > (1 << 30)) rows = 1 << 30;
  *nslices = n > 0 ? (int)((n + rows - 1) / rows) : 0;
  return (int)rows;
}

template <int EP>
static void launch_lse(dim3 grid, const float *Xe, int n, const float *AB, const float *AS, const long long *goff,
                       int G0, float *out, int ldo, const float *w, double *tot, float *ll, int ldll) {
  static int done;
  if (!done) {
    CK(cudaFuncSetAttribute((const void *)k_wg_lse<EP>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)lse_smem(EP)));
    done = 1;
  }
  k_wg_lse<EP><<<grid, WL_BM(EP) * 2, lse_smem(EP)>>>(Xe, n, AB, AS, goff, G0, out, ldo, w, tot, ll, ldll);
}

template <int EP, int NW, bool OVL>
static void launch_stats_cfg(dim3 grid, const float *Xe, int n, const float *ll, int ldll, int G, const float *lse,
                             const float *w, int rows, float *S) {
  static int done;
  const size_t smem = stats_smem(EP, stats_cfg{NW, OVL});
  if (!done) {
    CK(cudaFuncSetAttribute((const void *)k_wg_stats<EP, NW, OVL>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    done = 1;
  }
  k_wg_stats<EP, NW, OVL><<<grid, 128 * NW, smem>>>(Xe, n, ll, ldll, G, lse, w, rows, S);
}
template <int EP>
static void launch_stats(stats_cfg c, const float *Xe, int n, const float *ll, int ldll, int G, const float *lse,
                         const float *w, int rows, int nslices, float *S) {
  const dim3 grid((unsigned)((G + 64 * c.nw - 1) / (64 * c.nw)), (unsigned)nslices);
  if constexpr (EP == 88 || EP == 128) { /* the measured shapes (D = 40, 60): every configuration */
    if (c.nw == 3 && !c.ovl) { launch_stats_cfg<EP, 3, false>(grid, Xe, n, ll, ldll, G, lse, w, rows, S); return; }
    if constexpr (EP <= 88) {
      if (c.nw == 3) { launch_stats_cfg<EP, 3, true>(grid, Xe, n, ll, ldll, G, lse, w, rows, S); return; }
      if (!c.ovl) { launch_stats_cfg<EP, 4, false>(grid, Xe, n, ll, ldll, G, lse, w, rows, S); return; }
    }
  }
  if constexpr (EP <= 88) launch_stats_cfg<EP, 4, true>(grid, Xe, n, ll, ldll, G, lse, w, rows, S);
  else launch_stats_cfg<EP, 3, true>(grid, Xe, n, ll, ldll, G, lse, w, rows, S);
}

/* calls F<EP> for the runtime Ep (a multiple of 8 up to 128) */
#define GW_DISPATCH(Ep, F, ...)                                            \
  switch (Ep) {                                                            \
  case 8: F<8>(__VA_ARGS__); break;     case 16: F<16>(__VA_ARGS__); break; \
  case 24: F<24>(__VA_ARGS__); break;   case 32: F<32>(__VA_ARGS__); break; \
  case 40: F<40>(__VA_ARGS__); break;   case 48: F<48>(__VA_ARGS__); break; \
  case 56: F<56>(__VA_ARGS__); break;   case 64: F<64>(__VA_ARGS__); break; \
  case 72: F<72>(__VA_ARGS__); break;   case 80: F<80>(__VA_ARGS__); break; \
  case 88: F<88>(__VA_ARGS__); break;   case 96: F<96>(__VA_ARGS__); break; \
  case 104: F<104>(__VA_ARGS__); break; case 112: F<112>(__VA_ARGS__); break; \
  case 120: F<120>(__VA_ARGS__); break; case 128: F<128>(__VA_ARGS__); break; \
  }

void gw_lse(const float *Xe, int Ep, int n, const float *AB, const float *AS, const long long *goff, int P, int G0,
            float *out, int ldo, const float *w, double *tot, float *ll, int ldll) {
  check_ep(Ep, "gw_lse");
  if (n <= 0 || P <= 0) return;
  if (P > 65535) gh_die("gw_lse: %d pdfs in one launch (at most 65535)", P);
  if (ll && (goff || P != 1 || ldll < G0 || ldll % 4)) gh_die("gw_lse: log-likelihoods are written for one pdf (row stride %d, a multiple of 4 >= %d)", ldll, G0);
  dim3 grid((unsigned)((n + WL_BM(Ep) - 1) / WL_BM(Ep)), (unsigned)P);
  GW_DISPATCH(Ep, launch_lse, grid, Xe, n, AB, AS, goff, G0, out, ldo, w, tot, ll, ldll);
  CK(cudaGetLastError());
}

void gw_post_stats(const float *Xe, int Ep, int n, const float *ll, int ldll, int G, const float *lse,
                   const float *w, int rows, int nslices, float *S) {
  check_ep(Ep, "gw_post_stats");
  if (n <= 0 || G <= 0 || nslices <= 0) return;
  if (rows % 32) gh_die("gw_post_stats: %d rows per slice, not a multiple of 32", rows);
  if (nslices > 65535) gh_die("gw_post_stats: %d slices (at most 65535)", nslices);
  if (ldll < G || ldll % 4) gh_die("gw_post_stats: log-likelihood row stride %d (a multiple of 4 >= %d)", ldll, G);
  GW_DISPATCH(Ep, launch_stats, stats_config(Ep), Xe, n, ll, ldll, G, lse, w, rows, nslices, S);
  CK(cudaGetLastError());
}
