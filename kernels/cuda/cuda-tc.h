/* cuda-tc.h -- tensor-core kernels of our own for diagonal-covariance pdfs
 * (kernels/cuda/cuda-tc.cu; internal to kernels/cuda/, used by
 * cuda-gemm.cu).
 *
 * The GEMM forms of cuda-gemm.h write the [frames x Gaussians] likelihood
 * matrix L = Xe A^T to memory and read it back for the per-pdf log-sum-exp
 * (scoring) or the posteriors and the statistics (E-step).  With diagonal
 * covariances the inner dimension is only E = 1 + 2D, so that traffic, not
 * the arithmetic, bounds those paths (bench/RESULTS.md D4: 8.4 GB
 * per iteration for a 1 x 2048 UBM at 262k frames).  These kernels keep L on
 * the chip: tiles of L are computed with TF32 tensor-core instructions
 * (mma.sync m16n8k8) from operands in shared memory and consumed in the
 * same kernel:
 *   gt_lse         per (frame, pdf) log-sum-exp over the pdf's Gaussians
 *                  (an online max / sum across Gaussian tiles, the
 *                  "online softmax" of Milakov & Gimelshein 2018): the
 *                  scoring log-likelihoods, and the per-frame normaliser of
 *                  the E-step;
 *   gt_post_stats  E-step statistics S = R^T Xe with R = w exp(L - lse)
 *                  recomputed tile by tile (L is never stored), summed over
 *                  fixed slices of the frames (a deterministic split-K).
 * Precision: split = 1 is 3xTF32 (each fp32 operand split on the fly into
 * a TF32 big part and a TF32 small part, a_s b + a b_s + a b: fp32-level
 * error, Ootomo & Yokota 2022), split = 0 one TF32 product (about 1e-3
 * relative error: --precision=tf32).  All accumulation is in fp32 in a
 * fixed order (no atomics): the results are bitwise reproducible on one GPU.
 *
 * Operand layout (as cuda-gemm.cu, but each row in the gt_kpos order
 * below): Xe [n x Ep] row-major expanded centred features [1, x', x'^2,
 * 0...]; A [G x Ep] row-major parameter rows [gconst', b', -1/2 iv, 0...]
 * (ll = a . xe, natural log); Ep a multiple of 8, at most GT_MAX_EP; rows
 * 16-byte aligned.  Functions launch on the
 * default stream and die (gh_die) on a CUDA error.
 */
#ifndef GH_CUDA_TC_H
#define GH_CUDA_TC_H
#include <stdint.h>

/* Largest padded row length (Ep) the kernels take: D <= 63 diagonal. */
#define GT_MAX_EP 128

/* The kernels read rows with the inner index permuted within each aligned
 * group of 8: element k of a row is stored at position gt_kpos(k)
 * (order [0, 4, 1, 5, 2, 6, 3, 7]).  Xe must be written so (cuda-gemm.cu
 * k_expand with perm); gt_perm8 copies n floats (a multiple of 8: whole
 * rows of a multiple-of-8 length) into that order. */
#ifdef __CUDACC__
static __host__ __device__ __forceinline__ int gt_kpos(int k) { return (k & ~7) | ((k & 3) << 1) | ((k >> 2) & 1); }

/* Device helpers shared with the warpgroup kernels (cuda-wg.cu). */

/* x rounded to TF32 (10 mantissa bits, ties away from zero), as its bits;
 * x finite.  Two integer instructions: cvt.rna.tf32.f32 compiles to five
 * on sm_90 (it also guards infinities, which these operands never hold). */
static __device__ __forceinline__ uint32_t gt_to_tf32(float x) {
  return (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
}

/* x = big + small: big = x rounded to TF32, small = x - big (exact in
 * fp32), passed to the tensor cores as it is: they read the top 19 bits of
 * a TF32 operand, so small is cut to TF32 there -- a relative error below
 * 2^-21 of x, one instruction fewer than rounding it (issue slots bound
 * these kernels: bench/RESULTS.md D6). */
static __device__ __forceinline__ void gt_split_tf32(float x, uint32_t &big, uint32_t &small) {
  big = gt_to_tf32(x);
  small = __float_as_uint(x - __uint_as_float(big));
}

/* (m, s) <- log-sum-exp merge of (m, s) and (m2, s2), where the pair
 * stands for m + log s (m = -inf: empty). */
static __device__ __forceinline__ void gt_lse_merge(float &m, float &s, float m2, float s2) {
  if (m2 == -INFINITY) return;
  if (m == -INFINITY) { m = m2; s = s2; return; }
  if (m2 > m) { s = s * __expf(m - m2) + s2; m = m2; }
  else s += s2 * __expf(m2 - m);
}

/* cp.async groups: close the group of this thread's copies issued so far;
 * wait until at most N of its groups are pending. */
static __device__ __forceinline__ void gt_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void gt_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
#endif
void gt_perm8(const float *in, long long n, float *out);

/* Per-(frame, pdf) log-sum-exp: out[r * ldo + p] = log sum_{g < G_p}
 * exp(Xe[r] . A[goff[p] + g]) for r < n, p < P (natural log, per frame;
 * -inf when every term is -inf).  goff: device [P + 1] Gaussian offsets
 * into A (rows), or NULL for one pdf of G0 Gaussians (P = 1).  When tot !=
 * NULL also tot[r] = w[r] * out[r] (w NULL: 1; 0 where out is -inf), in
 * double: the E-step's per-frame total. */
void gt_lse(const float *Xe, int Ep, int n, const float *A, const long long *goff, int P, int G0, float *out,
            int ldo, const float *w, double *tot, int split);

/* Rows per slice for gt_post_stats over n rows and G Gaussians on a GPU of
 * `sms` multiprocessors (a multiple of 32, at least 256), and the number of
 * slices it gives: *nslices = ceil(n / rows). */
int gt_slice_rows(int64_t n, int G, int sms, int *nslices);

/* E-step statistics of one pdf of G Gaussians over n rows: with
 * R[r][g] = w[r] exp(Xe[r] . A[g] - lse[r]) (0 where lse[r] is -inf; w NULL:
 * 1), slice b (rows b * rows .. + rows) adds nothing across slices but
 * writes S[b * G * Ep + g * Ep + e] = sum_{r in slice} R[r][g] Xe[r][e]
 * (fp32, every e < Ep, g < G, b < nslices as from gt_slice_rows).  The
 * slices are summed in double by the caller (cuda-gemm.cu k_acc_add). */
void gt_post_stats(const float *Xe, int Ep, int n, const float *A, int G, const float *lse, const float *w,
                   int rows, int nslices, float *S, int split);

#endif
