/* cuda-estep.cu -- the CUDA backend's E-step (backend.h accumulate) and
 * accumulators (acc_zero, acc_fetch, acc_raw_*, acc_commit, acc_master_*).
 * Per pdf, the GEMM forms (cuda-gemm.cu) or the fused kernels below, by a
 * fixed rule (estep_wants_gemm: Cook et al. 2011's variant selection).
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
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda-ctx.h"
#include "cuda-route.h"

#define TILE 32      /* pairs staged per step in k_estep_stats */
#define SEG 2048     /* pairs per k_estep_stats block (full covariances) */
#define SEG_DIAG 256 /* pairs per k_estep_stats block (diagonal covariances) */

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

void gh_cuda_acc_zero(gh_backend *b, gh_dev_model *dm) {
  cuda_model *m = (cuda_model *)dm;
  if (m->host_m) { gh_backend *h = ((cuda_ctx *)b->ctx)->host; h->ops->gmm->acc_zero(h, m->host_m); return; }
  CK(cudaMemset(m->dAcc, 0, (m->acc_size + 1) * sizeof(double)));
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

/* A pdf's E-step in gh_cuda_accumulate: the fused kernels, the per-pdf
 * GEMM forms (cuda-gemm.cu), or the batched path (cuda-route.h) in the
 * whitened or the reference form. */
enum { ROUTE_FUSED = 0, ROUTE_GEMM, ROUTE_WHITE, ROUTE_DOUBLE };

/* One batch of the fused E-step: tasks c->hTasks[0..nt) (built by
 * gh_cuda_accumulate; their gamma needs ngamma floats, their partial slots
 * npart doubles), reductions c->hRt[0..nr).  Launches k_estep_post (kind
 * ROUTE_FUSED) or the batched path's posteriors (ROUTE_WHITE, ROUTE_DOUBLE:
 * gh_cuda_batch_post), the per-task totals summed into c->dTotal in task
 * order, then k_estep_stats and k_estep_reduce; all on the default stream,
 * in order. */
static void estep_batch(cuda_ctx *c, cuda_model *m, const cuda_data *v, int nt, long long ngamma,
                        long long npart, int nr, int kind) {
  const int D = m->D;
  dgrow((void **)&c->dGamma, &c->capGamma, (size_t)ngamma + 1, sizeof(float), 0);
  dgrow((void **)&c->dTasks, &c->capTasks, (size_t)nt, sizeof(Task), 0);
  dgrow((void **)&c->dPart, &c->capPart, (size_t)nt, sizeof(double), 0);
  gh_cuda_upload_small(c, c->dTasks, c->hTasks, (size_t)nt * sizeof(Task));
  if (kind == ROUTE_FUSED)
    k_estep_post<<<(unsigned)nt, 256, 8 * 8 * D * sizeof(float)>>>(v->dX, v->Dp, D, v->dFrames, v->dW, c->dTasks,
                                                                m->dEpdf, m->dEparams, c->dGamma, c->dPart);
  else /* the pdfs outside the fp32 budget: whitened or reference form (cuda-white.cu) */
    gh_cuda_batch_post(c, m, v, nt, ngamma, kind == ROUTE_WHITE);
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
    gh_cuda_upload_small(c, c->dRt, c->hRt, (size_t)nr * sizeof(RTask));
    long long maxr = 0;
    for (int j = 0; j < nr; ++j) if (c->hRt[j].GE > maxr) maxr = c->hRt[j].GE;
    k_estep_reduce<<<dim3((unsigned)nr, (unsigned)((maxr + 255) / 256)), 256>>>(c->dRt, c->dPstat, m->dAcc);
    CK(cudaGetLastError());
  }
  CK(cudaGetLastError()); /* (the caller's CK_LAUNCH after its last batch) */
}

/* Which E-step a pdf takes (Cook et al. 2011's variant selection, by
 * a fixed rule, as gh_cuda_score_variant, so that the choice -- and so the bits --
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

/* The tasks of the pdfs p < d->max_pdf + 1 with route[p] == kind (ROUTE_FUSED,
 * ROUTE_WHITE or ROUTE_DOUBLE): tasks of <= SEG (full) or SEG_DIAG
 * (diagonal) pairs in pdf order, run in batches of at most 1 M pairs,
 * max_gamma posteriors and 32 M partial statistics (estep_batch).  A
 * diagonal pdf's task is cheap (G (1 + 2D) statistics), so short ones keep
 * the GPU full: hmm-train's 80 pdfs of 8 Gaussians gave 160 blocks of 2,048
 * pairs per 262,144-frame block (GMM accumulation 0.043 s per 8 M-frame
 * iteration; tasks of 1,024 / 512 / 256 pairs: 0.0255 / 0.0235 / 0.0193 s,
 * H200, bench/RESULTS.md D28).  GH_CUDA_ESTEP_SEG=N: tasks of N pairs for
 * every pdf (benchmarks; the task size sets the order of the sums, so the
 * bits). */
static void estep_tasks(cuda_ctx *c, cuda_model *m, cuda_data *d, const char *route, int kind, long long max_gamma) {
  const int npdf = d->max_pdf + 1;
  const int64_t seg_env = gh_env_int("GH_CUDA_ESTEP_SEG", 0, 64, 1 << 20);
  const int64_t max_pairs = 1 << 20;
  const long long max_part = 32LL << 20;
  int nt = 0, nr = 0;
  long long bpairs = 0, bgamma = 0, bpart = 0;
  for (int p = 0; p < npdf; ++p) {
    const int64_t k0 = d->poff[p], n = d->poff[p + 1] - k0;
    if (n == 0 || route[p] != kind) continue;
    const EPdf *e = &m->hEpdf[p];
    const long long GE = (long long)e->G * (1 + m->D + (e->full ? gh_packed_size(m->D) : m->D));
    const int64_t seg = seg_env ? seg_env : e->full ? SEG : SEG_DIAG;
    const int single = n <= seg;
    for (int64_t s0 = 0; s0 < n; s0 += seg) {
      const long long len = n - s0 < seg ? n - s0 : seg;
      if (nt > 0 && (bpairs + len > max_pairs || bgamma + len * e->G > max_gamma ||
                     (!single && bpart + GE > max_part))) {
        estep_batch(c, m, d, nt, bgamma, bpart, nr, kind);
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
  if (nt > 0) estep_batch(c, m, d, nt, bgamma, bpart, nr, kind);
}

/* backend.h accumulate: per pdf (estep_wants_gemm), the GEMM E-step
 * (cuda-gemm.cu) or the fused kernels (k_estep_post, k_estep_stats and
 * k_estep_reduce over tasks of <= SEG (diagonal: SEG_DIAG) pairs of one pdf, straight from the
 * data's pdf-sorted pairs on the device, in batches of <= 1 M pairs, 32 M
 * posteriors and 32 M partial statistics: the batches, and so the order of
 * every sum, depend on the model and the data only); the total
 * log-likelihood is summed on the device in a fixed order and fetched once.
 * Dies on a dimension or pdf mismatch. */
double gh_cuda_accumulate(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd) {
  cuda_ctx *c = (cuda_ctx *)b->ctx;
  cuda_model *m = (cuda_model *)dm;
  cuda_data *d = (cuda_data *)dd;
  if (m->host_m) {
    if (!d->host_d)
      d->host_d = c->host->ops->gmm->data_upload(c->host, d->hXin, d->T, d->D, gh_cuda_data_host_pairs(d), d->npairs);
    b->path_pairs[GH_PATH_HOST] += d->npairs;
    return c->host->ops->gmm->accumulate(c->host, m->host_m, d->host_d);
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
  gh_cuda_white_refresh(m); /* the batched path's factors after a device M-step (cuda-white.cu) */
  CK(cudaMemset(c->dTotal, 0, sizeof(double)));
  static const char *const words[] = {"fused", "gemm", NULL};
  const int force = gh_env_word("GH_CUDA_ESTEP", -1, words);
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
  char *route = (char *)gh_calloc(npdf ? npdf : 1, 1);
  /* the batched path (cuda-route.h): GH_CUDA_BATCH=0 off (the per-pdf DGEMMs), 1 auto, double (no whitening) */
  static const char *const bwords[] = {"0", "1", "double", NULL};
  const int bmode = gh_env_word("GH_CUDA_BATCH", 1, bwords);
  const double wbudget = gh_white_max_error();
  for (int p = 0; p < npdf; ++p) {
    const int64_t n = d->poff[p + 1] - d->poff[p];
    if (n == 0) continue;
    const int use_gemm = gg && estep_wants_gemm(m, p, n, force);
    if (m->nofused[p] && !use_gemm)
      gh_die("accumulate: no cuBLAS handle for pdf %d, which the fused kernels cannot evaluate within the contract", p);
    /* a pdf of few pairs that the fused kernels (double accumulators) cannot
     * serve within the contract: in double, not fp32 (per-utterance fMLLR
     * statistics amplify fp32 rounding: run-gpu.sh's AMI check, 1.4e-4) */
    const int prec = m->nofused[p] && n < GEMM_ESTEP_MIN_PAIRS && force != 1 && m->precision == GH_PREC_AUTO
                         ? GG_PREC_FP64 : m->precision;
    const int path = use_gemm ? gg_estep_path(m->gg, p, prec) : GH_PATH_FP32;
    const int white_ok = m->dWhite && !m->white_stale && m->hWoff && m->hWoff[p] >= 0;
    const int br = use_gemm ? gh_cuda_batch_route(path == GH_PATH_DOUBLE, m->hEpdf[p].full, m->D, (long long)n,
                                                  m->hEpdf[p].G, m->hEwhite ? m->hEwhite[p] : INFINITY, wbudget,
                                                  white_ok, bmode)
                            : GH_CUDA_BATCH_NONE;
    route[p] = br == GH_CUDA_BATCH_WHITE ? ROUTE_WHITE : br == GH_CUDA_BATCH_DOUBLE ? ROUTE_DOUBLE
               : use_gemm ? ROUTE_GEMM : ROUTE_FUSED;
    b->path_pairs[route[p] == ROUTE_WHITE ? GH_PATH_WHITE : route[p] == ROUTE_DOUBLE ? GH_PATH_DOUBLE : path] += n;
    if (route[p] == ROUTE_GEMM)
      gg_estep_pdf(gg, m->gg, p, d->dX, d->Dp, d->dFrames + d->poff[p], d->dW + d->poff[p], n, d->centre,
                   m->dAcc + m->hEpdf[p].accoff, c->dTotal, prec, d->xc);
  }
  estep_tasks(c, m, d, route, ROUTE_FUSED, 32LL << 20);
  /* the pdfs outside the fp32 budget, all of them in a few launches: whitened, then in double (cuda-white.cu;
   * their log-likelihood scratch is double, so batches of at most 8 M posteriors) */
  estep_tasks(c, m, d, route, ROUTE_WHITE, 8LL << 20);
  estep_tasks(c, m, d, route, ROUTE_DOUBLE, 8LL << 20);
  free(route);
  CK_LAUNCH("E-step");
  double total = 0.0;
  CK(cudaMemcpy(&total, c->dTotal, sizeof(double), cudaMemcpyDeviceToHost));
  return total;
}

void gh_cuda_acc_fetch(gh_backend *b, gh_dev_model *dm, gh_accs_set *accs) {
  cuda_model *m = (cuda_model *)dm;
  if (m->host_m) { gh_backend *h = ((cuda_ctx *)b->ctx)->host; h->ops->gmm->acc_fetch(h, m->host_m, accs); return; }
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
int64_t gh_cuda_acc_raw_size(gh_backend *b, gh_dev_model *dm) { return ((cuda_model *)dm)->acc_size; }
void gh_cuda_acc_raw_get(gh_backend *b, gh_dev_model *dm, double *host) {
  cuda_model *m = (cuda_model *)dm;
  CK(cudaMemcpy(host, m->dAcc, m->acc_size * sizeof(double), cudaMemcpyDeviceToHost));
}
void gh_cuda_acc_raw_set(gh_backend *b, gh_dev_model *dm, const double *host) {
  cuda_model *m = (cuda_model *)dm;
  CK(cudaMemcpy(m->dAcc, host, m->acc_size * sizeof(double), cudaMemcpyHostToDevice));
}
double *gh_cuda_acc_raw_device(gh_backend *b, gh_dev_model *dm) { return ((cuda_model *)dm)->dAcc; }

/* backend.h acc_commit: one elementwise pass over the accumulators.
 * lib/base/dd.h gh_dd_add on the device (no multiplications: nothing for
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
void gh_cuda_acc_commit(gh_backend *b, gh_dev_model *dm, int flags) {
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
void gh_cuda_acc_master_get(gh_backend *b, gh_dev_model *dm, double *hi, double *lo) {
  cuda_model *m = (cuda_model *)dm;
  if (!m->dMaster) gh_cuda_acc_commit(b, dm, 0);
  CK(cudaMemcpy(hi, m->dMaster, m->acc_size * sizeof(double), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(lo, m->dMaster + m->acc_size, m->acc_size * sizeof(double), cudaMemcpyDeviceToHost));
}
double *gh_cuda_acc_master_device(gh_backend *b, gh_dev_model *dm) {
  cuda_model *m = (cuda_model *)dm;
  if (!m->dMaster) gh_cuda_acc_commit(b, dm, 0);
  return m->dMaster;
}

/* k_estep_stats' dynamic shared-memory limit, set on the kernel at the
 * backend's creation (optin: the device's cudaDeviceProp
 * sharedMemPerBlockOptin).  It stages TILE frames of D+1 floats and their
 * posteriors: up to ~103 KB for the largest supported D (768, gspan <= 2),
 * above the 48 KB default; at most what the device allows (estep_batch
 * checks).  Returns the limit in bytes. */
size_t gh_cuda_estep_smem_limit(size_t optin) {
  size_t want = stats_smem(768, 2);
  if (stats_smem(1, 19) > want) want = stats_smem(1, 19);
  if (want > optin) want = optin;
  CK(cudaFuncSetAttribute(k_estep_stats, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)want));
  return want;
}
