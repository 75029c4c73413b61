/* cuda-hmm.h -- internal to kernels/cuda/: what the parts of the CUDA HMM
 * ops share (cuda-hmm.cu: upload and the ops; cuda-hmm-batch.cu,
 * cuda-hmm-pairs.cu, cuda-hmm-dense.cu, cuda-hmm-timepar.cu: the paths).
 * The uploaded graphs' arrays, the utterance descriptors, the calls'
 * scratch, the warp and block reductions the kernels of every path use, and
 * the functions one part calls in another.  Not a public interface:
 * backend.h is. */
#ifndef GH_CUDA_HMM_H
#define GH_CUDA_HMM_H
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

extern "C" {
#include "backend.h"
#include "base/env.h"
#include "base/gh-base.h"
#include "cuda-check.h"
}
#include "cuda-gemm.h"


#define HEAVY 16         /* states with more arcs than this (in for forward/Viterbi, out for
                            backward) are done by a whole warp, lanes over the arcs */
#define DENSE_MIN_S 64    /* dense path: S >= DENSE_MIN_S and A >= S^2 / 4 */
#define DENSE_MAX_S 8192  /* dense matrices are built only up to this many states */


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

/* ------------------------------------------- device: reductions */


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
__device__ inline double block_max(double v, double *red) {
  v = warp_max(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  double r = -INFINITY;
  for (int k = 0; k < (int)(blockDim.x >> 5); ++k) r = fmax(r, red[k]);
  return r;
}
/* Sum over the block; as block_max. */
__device__ inline double block_sum(double v, double *red) {
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

enum { OP_FWD, OP_SCALED, OP_VIT, OP_FB };

/* Sort key for utterances of a chunk: longest first (LPT order). */
static inline int cmp_udesc(const void *a, const void *b) {
  const UDesc *x = (const UDesc *)a, *y = (const UDesc *)b;
  if (x->T != y->T) return x->T > y->T ? -1 : 1;
  return x->u - y->u;
}

/* Grow a device buffer to at least n elements of size sz (contents not kept). */
static inline void hgrow_dev(void **p, size_t *cap, size_t n, size_t sz) {
  if (n <= *cap && *p) return;
  size_t want = n + n / 4 + 16;
  if (*p) CK(cudaFree(*p));
  *p = NULL;
  CK(cudaMalloc(p, want * sz));
  *cap = want;
}


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

/* The operations' dense helper (cuda-hmm-dense.cu): x[0..n) = v. */
__global__ void k_dn_fill(double *__restrict__ x, long long n, double v);

/* cuda-hmm.cu: the backend's HMM scratch; the HMM kernels' device time
 * (gh_cuda_hmm_kernel_seconds): gh_cuda_hmm_kernel_time_add waits for ev1 (recorded
 * after the work enqueued since ev0) and adds the time between them;
 * gh_cuda_hmm_kernel_time_end records ev1 first */
extern "C" void **gh_cuda_hmm_scratch_slot(gh_backend *b); /* cuda.cu: the backend's pointer */
void gh_cuda_hmm_kernel_time_add(cudaEvent_t ev0, cudaEvent_t ev1);
void gh_cuda_hmm_kernel_time_end(cudaEvent_t ev0, cudaEvent_t ev1);

/* cuda-hmm-batch.cu: the general path (one block or lane group per
 * utterance) of op (OP_*) on batch bt; pq: hmm_fb_pairs' / hmm_estep_pairs'
 * request, or NULL.  gh_cuda_hmm_plan_free: frees a plan of hmm_estep_pairs' batches. */
void gh_cuda_hmm_run(gh_dev_hmm *h, const gh_hmm_batch *bt, int op, double *vals, float *outs, int32_t *path,
                     double *stats, const PairReq *pq = NULL);
void gh_cuda_hmm_plan_free(HPlan *p);

/* cuda-hmm-pairs.cu: a chunk's E-step pairs from its gamma (OP_FB) or
 * Viterbi path (OP_VIT) on the device */
void gh_cuda_hmm_chunk_pairs(gh_dev_hmm *h, const UDesc *dUd, const int *col, const PairReq *pq, int op,
                             const void *src, int32_t nu, int nt, int64_t F, int64_t f0);

/* cuda-hmm-dense.cu: the dense batched path (one dense graph for the batch) */
int gh_cuda_hmm_dense_graph(gh_dev_hmm *h, const gh_hmm_batch *bt, int op, const float *outs);
void gh_cuda_hmm_dense_run(gh_dev_hmm *h, int g, const gh_hmm_batch *bt, int op, int prec, double *vals, int32_t *path);

/* cuda-hmm-timepar.cu: the time-parallel path (a few long utterances) */
int gh_cuda_hmm_tp_batch(gh_dev_hmm *h, const gh_hmm_batch *bt, int op, const float *alpha);
void gh_cuda_hmm_tp_run(gh_dev_hmm *h, const gh_hmm_batch *bt, int op, double *vals, int32_t *path, float *gamma,
                        double *stats);

#endif
