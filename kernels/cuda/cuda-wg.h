/* cuda-wg.h -- warpgroup tensor-core kernels (Hopper wgmma, sm_90a) for
 * diagonal-covariance pdfs (kernels/cuda/cuda-wg.cu; internal to
 * kernels/cuda/, used by cuda-gemm.cu).
 *
 * They compute what the mma.sync kernels of cuda-tc.h compute -- the
 * per-(frame, pdf) log-sum-exp of L = Xe A^T, and the E-step statistics
 * S = R^T Xe with R = w exp(L - lse) -- but with the warpgroup MMA
 * (wgmma.mma_async m64nNk8 TF32: one instruction per 64 x N x 8 product,
 * operands read by the tensor cores straight from shared memory, issued
 * asynchronously), which on an H200 leaves the SM's issue slots to the
 * exponentials (the mma.sync kernels were issue-bound: bench/RESULTS.md
 * D6).  For the E-step, gw_lse also writes L (one pdf's [n x G]
 * log-likelihoods) and gw_post_stats reads it back instead of computing it
 * again (half of its tensor work; bench/RESULTS.md D12).  Precision:
 * 3xTF32 only (a_s b + a b_s + a b, Ootomo & Yokota 2022), fp32-level
 * error; the operands come split into TF32 big + small parts (big rounded
 * to TF32, small = the remainder, which the tensor cores truncate to TF32).
 * Accumulation in fp32 in a fixed order, statistics per fixed slice of the
 * frames (summed in double by the caller): bitwise reproducible on one GPU.
 *
 * Operands (device, row-major, natural feature order, Ep a multiple of 8
 * and at most GW_MAX_EP, 16-byte aligned rows):
 *   Xe [n x Ep]      expanded centred features [1, x', x'^2, 0 ...], split
 *                    into TF32 big + small parts (and transposed, for the
 *                    statistics product) inside the kernels, tile by tile
 *   AB, AS [G x Ep]  parameter rows [gconst', b', -1/2 iv, 0 ...] (ll = a .
 *                    xe, natural log), split already: big (rounded to TF32)
 *                    and small (the remainder) parts
 * Available only on devices of compute capability 9.0 with the sm_90a code
 * built in (gw_mode); functions die (gh_die) on CUDA errors.
 */
#ifndef GH_CUDA_WG_H
#define GH_CUDA_WG_H
#include <stdint.h>

/* Largest padded row length the kernels take (D <= 63 diagonal). */
#define GW_MAX_EP 128

/* 0 when these kernels cannot run (the device is not of compute
 * capability 9.0 -- H100, H200 -- whose code this build holds as sm_90a) or
 * GH_CUDA_WG=0; 1 when GH_CUDA_WG=1 (use them wherever they can serve:
 * tests, benchmarks); else 2 (use them where measured faster). */
int gw_mode(void);

/* As gt_lse (cuda-tc.h): out[r * ldo + p] = log sum_{g < G_p} exp(Xe[r] .
 * A[goff[p] + g]) (natural log, per frame; -inf when every term is -inf),
 * goff NULL: one pdf of G0 Gaussians; tot != NULL: tot[r] = w[r] out[r]
 * (double; 0 where out is -inf); ll != NULL (one pdf: goff NULL, P 1):
 * ll[r * ldll + g] = Xe[r] . A[g], the log-likelihoods [n x G0] (natural
 * log; ldll a multiple of 4 >= G0, columns G0..ldll-1 written as 0). */
void gw_lse(const float *Xe, int Ep, int n, const float *AB, const float *AS, const long long *goff, int P, int G0,
            float *out, int ldo, const float *w, double *tot, float *ll, int ldll);

/* Rows per slice for gw_post_stats over n rows, G Gaussians, row length Ep
 * on a GPU of `sms` multiprocessors (a multiple of 32, at least 256: whole
 * waves of blocks), and the number of slices: *nslices = ceil(n / rows). */
int gw_slice_rows(int64_t n, int G, int Ep, int sms, int *nslices);

/* As gt_post_stats (cuda-tc.h), from the log-likelihoods gw_lse wrote (ll
 * [n x G], row stride ldll): slice b of `rows` rows (a multiple of 32:
 * gw_slice_rows) writes S[b * G * Ep + g * Ep + e] = sum_{r in slice}
 * R[r][g] Xe[r][e], R[r][g] = w[r] exp(ll[r][g] - lse[r]) (0 where lse[r]
 * is -inf; w NULL: 1). */
void gw_post_stats(const float *Xe, int Ep, int n, const float *ll, int ldll, int G, const float *lse,
                   const float *w, int rows, int nslices, float *S);

#endif
