/* cuda-tc.cu -- tensor-core fused kernels for diagonal-covariance pdfs (see
 * cuda-tc.h for what they compute; doc/kernels.md "Tensor-core kernels").
 *
 * Tiles.  A block holds operand tiles in shared memory and each warp
 * computes a sub-tile of L with mma.sync
 * m16n8k8 TF32 (PTX ISA, "Matrix fragments for mma.m16n8k8" with .tf32):
 * thread (g = lane / 4, t = lane % 4) holds
 *   A (16 x 8, row): a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
 *   B (8 x 8, col):  b0 (t, g), b1 (t + 4, g)
 *   C (16 x 8):      c0 (g, 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1).
 * Rows keep the inner (k) index permuted within each group of 8 as
 * [0, 4, 1, 5, 2, 6, 3, 7] (gt_kpos; in memory already: the caller expands
 * the features and copies the parameter rows so, gt_perm8), so a thread's
 * (t, t + 4) pair is one 8-byte load from shared memory; the row stride
 * there is 8 mod 16 floats (tc_stride), so those loads are free of bank
 * conflicts.
 * Tiles arrive by cp.async into double buffers, the next tile's copy
 * overlapping the current tile's products.
 *
 *  k_tc_lse    block (256 threads): 128 frames x one pdf; loops over the
 *              pdf's Gaussians in tiles of 64 (warps 4 x 2, warp tile 32 x
 *              32; see LSE_BM); each thread keeps an online (max, sum) for
 *              its 4 rows over its own columns, merged across the warp and
 *              the two column warps at the end.
 *  k_tc_stats  block (256 threads): 128 Gaussians x one slice of the
 *              frames, in tiles of 32 frames, each split once into TF32
 *              big + small parts in shared memory: L tile (warps 2 x 4,
 *              warp tile 16 x 32), R = w exp(L - lse) into shared memory
 *              (Gaussian-major), then S += R^T Xe (warp: 16 Gaussians x all
 *              Ep features).
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

extern "C" {
#include "base/gh-base.h"
#include "cuda-check.h"
}
#include "cuda-tc.h"

#define TC_THREADS 256 /* k_tc_stats block */
/* k_tc_lse: blocks of 128 frames in LSE_WM (MT) warps along the frames
 * with warp tiles of MT m16 tiles (16 MT frames) x 4 n8 tiles (32
 * Gaussians), 2 warps along the Gaussians: gt_lse launches MT = 2 (4 x 2
 * warps, 256 threads); MT = 4 (2 x 2 warps, 128 threads) was slower on an
 * H200 (21.7 against 19.5 ms for the 5000 x 256 diag scoring, with the
 * code of 19c666c; bench/RESULTS.md D6). */
#define LSE_BM 128 /* frames per k_tc_lse block */
#define LSE_BN 64  /* Gaussians per k_tc_lse tile */
#define LSE_WM(MT) (LSE_BM / (16 * (MT)))
#define LSE_THREADS(MT) (64 * LSE_WM(MT))
#define ST_BG 128  /* Gaussians per k_tc_stats block */
#define ST_BF 32   /* frames per k_tc_stats tile */
#define PT_STRIDE (ST_BF + 8) /* row stride of the R^T tile: 8 mod 32 */

/* Row stride in shared memory for rows of Ep floats (a multiple of 8): >= Ep
 * and = 8 mod 16, so that the 8-byte fragment loads of rows g = 0..3 (one
 * half-warp) start in four different groups of 8 banks. */
static __host__ __device__ int tc_stride(int Ep) { return Ep % 16 == 8 ? Ep : Ep + 8; }


static __device__ __forceinline__ void mma_tf32(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* acc[i][j] += A rows (16 i + g, 16 i + g + 8) . B rows (8 j + g) over
 * `ksteps` groups of 8 inner indices, for the warp's lane; A, B in shared
 * memory (rows of permuted k, strides sa, sb).  SPLIT: 3xTF32 (small
 * products first, then big x big), else one TF32 product.  Al != NULL: A
 * is split already (A its big parts as TF32 bits, Al its small parts, same
 * layout: k_tc_stats splits each feature tile once for all its warps). */
template <int MT, int NT, bool SPLIT>
static __device__ __forceinline__ void warp_mma(float (&acc)[MT][NT][4], const float *A, const float *Al, int sa,
                                                const float *B, int sb, int ksteps, int lane) {
  const int g = lane >> 2, t = lane & 3;
  const float *pa = A + g * sa + 2 * t, *pb = B + g * sb + 2 * t;
  const float *pl = Al ? Al + g * sa + 2 * t : pa; /* (unused without Al) */
  for (int ks = 0; ks < ksteps; ++ks, pa += 8, pb += 8, pl += 8) {
    uint32_t ab[MT][4], as[MT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i) {
      const float2 u = *(const float2 *)(pa + 16 * i * sa);
      const float2 v = *(const float2 *)(pa + (16 * i + 8) * sa);
      const float f[4] = {u.x, v.x, u.y, v.y};
      if (SPLIT && Al) {
        const float2 ul = *(const float2 *)(pl + 16 * i * sa);
        const float2 vl = *(const float2 *)(pl + (16 * i + 8) * sa);
        const float fl[4] = {ul.x, vl.x, ul.y, vl.y};
#pragma unroll
        for (int q = 0; q < 4; ++q) { ab[i][q] = __float_as_uint(f[q]); as[i][q] = __float_as_uint(fl[q]); }
        continue;
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if (SPLIT) gt_split_tf32(f[q], ab[i][q], as[i][q]);
        else ab[i][q] = gt_to_tf32(f[q]);
      }
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const float2 w = *(const float2 *)(pb + 8 * j * sb);
      uint32_t bb[2], bs[2];
      if (SPLIT) { gt_split_tf32(w.x, bb[0], bs[0]); gt_split_tf32(w.y, bb[1], bs[1]); }
      else { bb[0] = gt_to_tf32(w.x); bb[1] = gt_to_tf32(w.y); }
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        if (SPLIT) { mma_tf32(acc[i][j], as[i], bb); mma_tf32(acc[i][j], ab[i], bs); }
        mma_tf32(acc[i][j], ab[i], bb);
      }
    }
  }
}

/* Asynchronous copy of rows r < nrows of src (row stride ld floats, rows
 * already in the permuted k order: gt_perm8) into dst (stride sd), Ep
 * floats each, rows r >= valid filled with zeros; by all threads of the
 * block, as 16-byte cp.async (sm_80+) into one commit group per call site
 * (the caller commits).  Overlaps the copy with the tile being computed. */
static __device__ __forceinline__ void load_rows(float *dst, int sd, const float *src, long long ld, int nrows,
                                                 int valid, int Ep) {
  const int q = Ep >> 2;
  for (int idx = threadIdx.x; idx < nrows * q; idx += blockDim.x) {
    const int r = idx / q, c = (idx - r * q) * 4;
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst + r * sd + c);
    const float *s = r < valid ? src + r * ld + c : src; /* any valid address: 0 bytes are read */
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(s), "r"(r < valid ? 16 : 0));
  }
}
template <bool SPLIT, int MT>
__global__ void __launch_bounds__(LSE_THREADS(MT), 2)
k_tc_lse(const float *__restrict__ Xe, int Ep, int n, const float *__restrict__ A, const long long *__restrict__ goff,
         int G0, float *__restrict__ out, int ldo, const float *__restrict__ w, double *__restrict__ tot) {
  extern __shared__ __align__(16) float sm[];
  __shared__ float red_m[2][LSE_BM], red_s[2][LSE_BM];
  const int sx = tc_stride(Ep), ks = Ep >> 3;
  float *Xs = sm, *Ab = sm + LSE_BM * sx; /* X tile; two buffers of A tiles */
  const int p = blockIdx.y;
  const long long f0 = (long long)blockIdx.x * LSE_BM;
  const long long gb = goff ? goff[p] : 0;
  const int G = goff ? (int)(goff[p + 1] - gb) : G0;
  const int nv = (int)(n - f0 < LSE_BM ? n - f0 : LSE_BM);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int wm = warp >> 1, wn = warp & 1; /* rows wm * 16 MT .., columns wn * 32 .. of each tile */
  load_rows(Xs, sx, Xe + f0 * Ep, Ep, LSE_BM, nv, Ep);
  load_rows(Ab, sx, A + gb * Ep, Ep, LSE_BN, G < LSE_BN ? G : LSE_BN, Ep);
  gt_cp_commit();
  float rm[MT][2], rs[MT][2]; /* running (max, sum) of rows wm * 16 MT + 16 i + g + 8 h over this thread's columns */
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) { rm[i][h] = -INFINITY; rs[i][h] = 0.f; }
  for (int c0 = 0, it = 0; c0 < G; c0 += LSE_BN, ++it) {
    const int cv = G - c0 < LSE_BN ? G - c0 : LSE_BN;
    gt_cp_wait<0>();
    __syncthreads(); /* this tile has landed; every warp is done with the previous one */
    if (c0 + LSE_BN < G) { /* prefetch the next tile into the other buffer */
      const int nx = G - c0 - LSE_BN;
      load_rows(Ab + ((it + 1) & 1) * LSE_BN * sx, sx, A + (gb + c0 + LSE_BN) * Ep, Ep, LSE_BN,
                nx < LSE_BN ? nx : LSE_BN, Ep);
      gt_cp_commit();
    }
    const float *As = Ab + (it & 1) * LSE_BN * sx;
    float acc[MT][4][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
    warp_mma<MT, 4, SPLIT>(acc, Xs + wm * 16 * MT * sx, NULL, sx, As + wn * 32 * sx, sx, ks, lane);
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float v[8], tm = -INFINITY;
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            const int col = wn * 32 + 8 * j + 2 * t + c;
            const float x = col < cv ? gh_ovf(acc[i][j][2 * h + c]) : -INFINITY;
            v[2 * j + c] = x;
            tm = fmaxf(tm, x);
          }
        if (tm == -INFINITY) continue;
        float m = rm[i][h], s = rs[i][h];
        if (tm > m) { s = m == -INFINITY ? 0.f : s * __expf(m - tm); m = tm; }
#pragma unroll
        for (int q = 0; q < 8; ++q) s += __expf(v[q] - m);
        rm[i][h] = m; rs[i][h] = s;
      }
  }
  /* merge the 4 threads of a row, then the two column warps */
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float m = rm[i][h], s = rs[i][h];
#pragma unroll
      for (int o = 1; o <= 2; o <<= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        gt_lse_merge(m, s, m2, s2);
      }
      if (t == 0) {
        const int r = wm * 16 * MT + 16 * i + g + 8 * h;
        red_m[wn][r] = m;
        red_s[wn][r] = s;
      }
    }
  __syncthreads();
  for (int r = threadIdx.x; r < nv; r += LSE_THREADS(MT)) {
    float m = red_m[0][r], s = red_s[0][r];
    gt_lse_merge(m, s, red_m[1][r], red_s[1][r]);
    const float l = m == -INFINITY ? -INFINITY : m + logf(s);
    out[(f0 + r) * ldo + p] = l;
    if (tot) tot[f0 + r] = m == -INFINITY ? 0.0 : (double)(w ? w[f0 + r] : 1.f) * (double)l;
  }
}

template <bool SPLIT>
__global__ void __launch_bounds__(TC_THREADS, 2)
k_tc_stats(const float *__restrict__ Xe, int Ep, int n, const float *__restrict__ A, int G,
           const float *__restrict__ lse, const float *__restrict__ w, int rows, float *__restrict__ S) {
  extern __shared__ __align__(16) float sm[];
  __shared__ float lse_s[2][ST_BF], w_s[2][ST_BF]; /* per frame of the tile, two buffers as the X tiles */
  const int sx = tc_stride(Ep), ks = Ep >> 3, nt = Ep >> 3;
  /* A tile, two X tiles (cp.async targets; big parts after the split), the
   * small parts of the current X tile, the R^T tile */
  float *As = sm, *Xb = sm + ST_BG * sx, *Xl = Xb + 2 * ST_BF * sx, *Pt = Xl + ST_BF * sx;
  const int g0 = blockIdx.x * ST_BG, gv = G - g0 < ST_BG ? G - g0 : ST_BG;
  const long long r_begin = (long long)blockIdx.y * rows;
  const long long r_end = r_begin + rows < n ? r_begin + rows : n;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int wm = warp & 1, wn = warp >> 1; /* L tile: frames wm * 16 .., Gaussians wn * 32 .. */
  /* tile loads: X rows r0 .. into buffer b (async), their lse and weights */
  auto load_tile = [&](long long r0, int b) {
    const int nv = (int)(r_end - r0 < ST_BF ? r_end - r0 : ST_BF);
    load_rows(Xb + b * ST_BF * sx, sx, Xe + r0 * Ep, Ep, ST_BF, nv, Ep);
    if (threadIdx.x < ST_BF) {
      const int r = threadIdx.x;
      lse_s[b][r] = r < nv ? lse[r0 + r] : -INFINITY;
      w_s[b][r] = r < nv && w ? w[r0 + r] : 1.f;
    }
  };
  load_rows(As, sx, A + (long long)g0 * Ep, Ep, ST_BG, gv, Ep);
  if (r_begin < r_end) load_tile(r_begin, 0);
  gt_cp_commit();
  float st[GT_MAX_EP / 8][4]; /* statistics of Gaussians warp * 16 + g (+ 8), features 8 j + 2 t (+ 1) */
#pragma unroll
  for (int j = 0; j < GT_MAX_EP / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) st[j][e] = 0.f;
  int b = 0;
  for (long long r0 = r_begin; r0 < r_end; r0 += ST_BF, b ^= 1) {
    gt_cp_wait<0>();
    __syncthreads(); /* this tile has landed; every warp is done with the previous one */
    if (r0 + ST_BF < r_end) { load_tile(r0 + ST_BF, b ^ 1); gt_cp_commit(); }
    float *Xs = Xb + b * ST_BF * sx;
    const float *lse_b = lse_s[b], *w_b = w_s[b];
    if (SPLIT) { /* once per tile for all warps: big parts in place, small parts into Xl */
      for (int idx = threadIdx.x; idx < ST_BF * Ep; idx += TC_THREADS) {
        const int r = idx / Ep, k = idx - r * Ep;
        uint32_t big, small;
        gt_split_tf32(Xs[r * sx + k], big, small);
        Xs[r * sx + k] = __uint_as_float(big);
        Xl[r * sx + k] = __uint_as_float(small);
      }
      __syncthreads();
    }
    float acc[1][4][4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[0][j][e] = 0.f;
    warp_mma<1, 4, SPLIT>(acc, Xs + wm * 16 * sx, SPLIT ? Xl + wm * 16 * sx : NULL, sx, As + wn * 32 * sx, sx, ks,
                          lane);
    /* R^T tile: Pt[Gaussian][kpos(frame)] */
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int fl = wm * 16 + g + 8 * h, gl = wn * 32 + 8 * j + 2 * t + c;
          const float l = lse_b[fl];
          const float r = l > -INFINITY && gl < gv ? w_b[fl] * __expf(acc[0][j][2 * h + c] - l) : 0.f;
          Pt[gl * PT_STRIDE + gt_kpos(fl)] = r;
        }
    __syncthreads();
    /* S (16 Gaussians of this warp x Ep) += R^T (16 x 32 frames) Xe (32 x Ep) */
#pragma unroll
    for (int kk = 0; kk < ST_BF / 8; ++kk) {
      uint32_t ab[4], as[4];
      {
        const float *pp = Pt + (warp * 16 + g) * PT_STRIDE + 8 * kk + 2 * t;
        const float2 u = *(const float2 *)pp, v = *(const float2 *)(pp + 8 * PT_STRIDE);
        /* posteriors that underflowed to 0 add exactly nothing: skip the
         * products when the warp's whole 16 x 8 block is zero (UBMs: most
         * Gaussians are far from most frames) */
        if (!__any_sync(0xffffffffu, u.x != 0.f || u.y != 0.f || v.x != 0.f || v.y != 0.f)) continue;
        const float f[4] = {u.x, v.x, u.y, v.y};
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          if (SPLIT) gt_split_tf32(f[q], ab[q], as[q]);
          else ab[q] = gt_to_tf32(f[q]);
        }
      }
      const float *x0 = Xs + (8 * kk + t) * sx, *x1 = x0 + 4 * sx;
      const float *l0 = Xl + (8 * kk + t) * sx, *l1 = l0 + 4 * sx;
#pragma unroll
      for (int j = 0; j < GT_MAX_EP / 8; ++j) {
        if (j >= nt) break;
        const int e = 8 * j + gt_kpos(g); /* position of feature 8 j + g */
        uint32_t bb[2], bs[2];
        if (SPLIT) { /* split already */
          bb[0] = __float_as_uint(x0[e]); bb[1] = __float_as_uint(x1[e]);
          bs[0] = __float_as_uint(l0[e]); bs[1] = __float_as_uint(l1[e]);
        } else { bb[0] = gt_to_tf32(x0[e]); bb[1] = gt_to_tf32(x1[e]); }
        if (SPLIT) { mma_tf32(st[j], as, bb); mma_tf32(st[j], ab, bs); }
        mma_tf32(st[j], ab, bb);
      }
    }
  }
  float *Sb = S + (long long)blockIdx.y * G * Ep;
#pragma unroll
  for (int j = 0; j < GT_MAX_EP / 8; ++j) {
    if (j >= nt) break;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int gl = warp * 16 + g + 8 * h;
      if (gl >= gv) continue;
      float *o = Sb + (long long)(g0 + gl) * Ep + 8 * j + 2 * t;
      o[0] = st[j][2 * h];
      o[1] = st[j][2 * h + 1];
    }
  }
}

/* Dynamic shared memory of the two kernels for row length Ep (bytes). */
static size_t lse_smem(int Ep) { return sizeof(float) * (size_t)(LSE_BM + 2 * LSE_BN) * tc_stride(Ep); }
static size_t stats_smem(int Ep) {
  return sizeof(float) * ((size_t)(ST_BG + 3 * ST_BF) * tc_stride(Ep) + (size_t)ST_BG * PT_STRIDE);
}

/* Allows kernel k its dynamic shared memory above the 48 KB default (once). */
static void allow_smem(const void *k, int *done) {
  if (*done) return;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          (int)(stats_smem(GT_MAX_EP) > lse_smem(GT_MAX_EP) ? stats_smem(GT_MAX_EP)
                                                                             : lse_smem(GT_MAX_EP))));
  *done = 1;
}

static void check_ep(int Ep, const char *what) {
  if (Ep <= 0 || Ep % 8 || Ep > GT_MAX_EP) gh_die("%s: padded row length %d not a multiple of 8 in 8..%d", what, Ep, GT_MAX_EP);
}

void gt_lse(const float *Xe, int Ep, int n, const float *A, const long long *goff, int P, int G0, float *out,
            int ldo, const float *w, double *tot, int split) {
  static int ok[2][2];
  check_ep(Ep, "gt_lse");
  if (n <= 0 || P <= 0) return;
  if (P > 65535) gh_die("gt_lse: %d pdfs in one launch (at most 65535)", P);
  dim3 grid((unsigned)((n + LSE_BM - 1) / LSE_BM), (unsigned)P);
#define LAUNCH(S, M)                                                                              \
  do {                                                                                            \
    allow_smem((const void *)k_tc_lse<S, M>, &ok[S][M / 4]);                                      \
    k_tc_lse<S, M><<<grid, LSE_THREADS(M), lse_smem(Ep)>>>(Xe, Ep, n, A, goff, G0, out, ldo, w, tot); \
  } while (0)
  if (split) LAUNCH(true, 2);
  else LAUNCH(false, 2);
#undef LAUNCH
  CK(cudaGetLastError());
}

int gt_slice_rows(int64_t n, int G, int sms, int *nslices) {
  const int64_t gtiles = (G + ST_BG - 1) / ST_BG;
  int64_t want = (4LL * (sms > 0 ? sms : 1) + gtiles - 1) / gtiles; /* two waves of two blocks per SM */
  if (want < 1) want = 1;
  int64_t rows = (n + want - 1) / want;
  rows = (rows + ST_BF - 1) / ST_BF * ST_BF;
  if (rows < 256) rows = 256;
  if (rows > (1 << 30)) rows = 1 << 30;
  *nslices = n > 0 ? (int)((n + rows - 1) / rows) : 0;
  return (int)rows;
}

void gt_post_stats(const float *Xe, int Ep, int n, const float *A, int G, const float *lse, const float *w,
                   int rows, int nslices, float *S, int split) {
  static int ok[2];
  check_ep(Ep, "gt_post_stats");
  if (n <= 0 || G <= 0 || nslices <= 0) return;
  if (nslices > 65535) gh_die("gt_post_stats: %d slices (at most 65535)", nslices);
  dim3 grid((unsigned)((G + ST_BG - 1) / ST_BG), (unsigned)nslices);
  if (split) {
    allow_smem((const void *)k_tc_stats<true>, &ok[1]);
    k_tc_stats<true><<<grid, TC_THREADS, stats_smem(Ep)>>>(Xe, Ep, n, A, G, lse, w, rows, S);
  } else {
    allow_smem((const void *)k_tc_stats<false>, &ok[0]);
    k_tc_stats<false><<<grid, TC_THREADS, stats_smem(Ep)>>>(Xe, Ep, n, A, G, lse, w, rows, S);
  }
  CK(cudaGetLastError());
}

/* out[(i & ~7) | kpos(i & 7)] = in[i], i < n (n a multiple of 8). */
__global__ void __launch_bounds__(256) k_perm8(const float *__restrict__ in, long long n, float *__restrict__ out) {
  const long long i = (long long)blockIdx.x * 256 + threadIdx.x;
  if (i < n) out[(i & ~7LL) | gt_kpos((int)(i & 7))] = in[i];
}

void gt_perm8(const float *in, long long n, float *out) {
  if (n <= 0) return;
  if (n % 8) gh_die("gt_perm8: %lld floats, not a multiple of 8", n);
  k_perm8<<<(unsigned)((n + 255) / 256), 256>>>(in, n, out);
  CK(cudaGetLastError());
}
