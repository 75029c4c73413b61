/* cuda-ctx.h -- internal to kernels/cuda/: what the parts of the CUDA
 * backend share (cuda.cu: the context and the ops table; cuda-upload.cu,
 * cuda-loglikes.cu, cuda-estep.cu, cuda-data.cu: the ops).  The backend's
 * context cuda_ctx, the resident E-step data cuda_data, the fused E-step's
 * task records, the likelihood layout's entries, the grow-only buffer
 * helpers and the functions one part calls in another.  Not a public
 * interface: backend.h is. */
#ifndef GH_CUDA_CTX_H
#define GH_CUDA_CTX_H
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "backend.h"
#include "base/env.h"
#include "base/gh-base.h"
#include "cuda-check.h"
#include "cuda-pool.h"
#include "gemm-forms.h"
}
#include "cuda-gemm.h"
#include "cuda-model.h"

#define PB 64        /* pdfs per thread block of the likelihood kernel */

/* A task of the fused E-step (gh_cuda_accumulate): pairs [k0, k1) of the
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

#define NEV 32 /* timing event pairs of the pipelined loglikes (cuda_ctx evT0 ...) */

typedef struct {
  int device;
  size_t stats_smem_max; /* k_estep_stats' dynamic shared memory limit (bytes) */
  /* grow-only scratch (device) */
  float *dX; size_t capX;          /* frames, [rows x Dp] floats, zero-padded */
  float *hX; size_t hcapX;         /* pinned host staging of dX (same layout) */
  float *dScratch; size_t capScratch; /* [rows x V] floats: segment log-sums (split layout) */
  /* the fused E-step (gh_cuda_accumulate): a batch's posteriors, tasks, per-task
   * totals, partial statistics and reductions */
  float *dGamma; size_t capGamma;
  Task *dTasks; size_t capTasks;
  double *dTotal;
  double *dPart; size_t capPart;   /* per-task totals of k_estep_post */
  double *dPstat; size_t capPstat; /* partial statistics of k_estep_stats */
  RTask *dRt; size_t capRt;
  double *dLL; size_t capLL;       /* the batched path's log-likelihoods (cuda-white.cu), gamma's layout */
  gg_ctx *gg; int gg_tried;        /* cuBLAS + GEMM scratch (cuda-gemm.cu), lazily */
  /* the pipelined loglikes (lazily; gh_cuda_loglikes_begin): chunks numbered
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
  /* gh_cuda_upload_small's ring of page-locked staging buffers (grow-only), each
   * with the event of its last copy */
#define UP_SLOTS 4
  void *hUpSmall[UP_SLOTS]; size_t capUpSmall[UP_SLOTS]; cudaEvent_t evUpSmall[UP_SLOTS]; int upSmallBusy[UP_SLOTS];
  int upSmallNext;
  gh_backend *host;                /* the cpu backend for models the fp32 forms cannot evaluate (lazily) */
} cuda_ctx;

/* Grow a device buffer to hold at least n elements of size sz (contents
 * not kept; zero-filled when zero != 0). */
static inline void dgrow(void **p, size_t *cap, size_t n, size_t sz, int zero) {
  if (n <= *cap && *p) return;
  size_t want = n + n / 2 + 16;
  if (*p) CK(cudaFree(*p));
  *p = NULL;
  CK(cudaMalloc(p, want * sz));
  if (zero) CK(cudaMemset(*p, 0, want * sz));
  *cap = want;
}
static inline void hgrow(void **p, size_t *cap, size_t n, size_t sz) {
  if (n <= *cap && *p) return;
  size_t want = n + n / 2 + 16;
  *p = gh_realloc(*p, want * sz);
  *cap = want;
}

static inline int round4(int d) { return (d + 3) & ~3; }

/* One entry of the likelihood layout: Gaussians g0 .. g0+G-1 of pdf p
 * (type 0 diag, 1 full); dst >= 0: a whole pdf, output column dst; dst < 0:
 * a segment of a split pdf, scratch column -dst - 1. */
struct Unit { int type, G, p, g0, dst; };

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

/* The cuBLAS context of c, created on first use; NULL without cuBLAS. */
static inline gg_ctx *ctx_gg(cuda_ctx *c) {
  if (!c->gg_tried) { c->gg_tried = 1; c->gg = gg_ctx_new(); }
  return c->gg;
}

/* cuda.cu */
void gh_cuda_upload_small(cuda_ctx *c, void *dst, const void *src, size_t bytes);

/* cuda-upload.cu: backend.h model_upload / model_free, and the layout
 * planning that loglikes_subset_ok repeats for a sub-model */
gh_dev_model *gh_cuda_model_upload(gh_backend *b, const gh_gmm_set *s);
void gh_cuda_model_free(gh_backend *b, gh_dev_model *dm);
int gh_cuda_split_k(const gh_gmm_set *s, int type);
Unit *gh_cuda_plan_units(const gh_gmm_set *s, const int K[2], int *n, int *V, int *nsplit, int **split_pdf,
                         int **split_off);

/* cuda-loglikes.cu: backend.h loglikes, loglikes_begin / _end,
 * loglikes_data, loglikes_subset_ok / _subset, and the scoring variant of a
 * model (0 fused kernels, 1 GEMM forms) */
int gh_cuda_score_variant(cuda_ctx *c, cuda_model *m);
void gh_cuda_loglikes(gh_backend *b, gh_dev_model *dm, const float *X, int32_t T, float *out);
void gh_cuda_loglikes_begin(gh_backend *b, gh_dev_model *dm, const float *X, int32_t T, float *out);
void gh_cuda_loglikes_end(gh_backend *b);
void gh_cuda_loglikes_data(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd, int32_t row0, int32_t T, float *out,
                           int32_t ldo);
int gh_cuda_loglikes_subset_ok(gh_backend *b, gh_dev_model *dm, const int32_t *pdfs, int32_t n);
void gh_cuda_loglikes_subset(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd, int32_t row0, int32_t T,
                             const int32_t *pdfs, int32_t n, float *out, int32_t ld);

/* cuda-estep.cu: backend.h accumulate and the accumulator ops; the E-step
 * statistics kernel's shared-memory limit (set at the backend's creation) */
void gh_cuda_acc_zero(gh_backend *b, gh_dev_model *dm);
double gh_cuda_accumulate(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd);
void gh_cuda_acc_fetch(gh_backend *b, gh_dev_model *dm, gh_accs_set *accs);
int64_t gh_cuda_acc_raw_size(gh_backend *b, gh_dev_model *dm);
void gh_cuda_acc_raw_get(gh_backend *b, gh_dev_model *dm, double *host);
void gh_cuda_acc_raw_set(gh_backend *b, gh_dev_model *dm, const double *host);
double *gh_cuda_acc_raw_device(gh_backend *b, gh_dev_model *dm);
void gh_cuda_acc_commit(gh_backend *b, gh_dev_model *dm, int flags);
void gh_cuda_acc_master_get(gh_backend *b, gh_dev_model *dm, double *hi, double *lo);
double *gh_cuda_acc_master_device(gh_backend *b, gh_dev_model *dm);
size_t gh_cuda_estep_smem_limit(size_t optin);

/* cuda-white.cu: the batched path of the pdfs outside the fp32 budget
 * (cuda-route.h).  gh_cuda_white_upload: m's whitened estimates and float
 * factors (model_upload, after nofused is set; exact [P]: the pdfs whose
 * centred fp32 form fails); gh_cuda_white_free (model_free).
 * gh_cuda_batch_post: the posteriors of tasks c->dTasks[0..nt) (uploaded),
 * gamma into c->dGamma (ngamma floats), per-task totals into c->dPart, each
 * task's pdf in the whitened form when use_white and it has factors, else
 * in the reference form in double; dies when D > GH_CUDA_BATCH_MAX_D. */
void gh_cuda_white_upload(cuda_model *m, const gh_gmm_set *s, const unsigned char *exact);
void gh_cuda_white_free(cuda_model *m);
void gh_cuda_batch_post(cuda_ctx *c, cuda_model *m, const cuda_data *v, int nt, long long ngamma, int use_white);
/* Scoring: gh_cuda_batch_score_ok: 1 when m's pdfs evaluated in double are
 * scored in the whitened form (gh_cuda_score_route); gh_cuda_batch_score:
 * their columns of dOut [n x P] (device) from frames dX [n x Dp] (device),
 * the other columns untouched. */
int gh_cuda_batch_score_ok(cuda_model *m);
/* After a device M-step (white_stale): m's float factors and whitened
 * estimates from its new parameters, on the device (k_white_refresh), and
 * white_stale cleared; nothing when D > 64 (the pdfs then keep the double
 * form) or the factors are current. */
void gh_cuda_white_refresh(cuda_model *m);
void gh_cuda_batch_score(cuda_model *m, const float *dX, int n, float *dOut);

/* cuda-data.cu: backend.h data_upload, data_set_pairs, data_free,
 * data_bytes / data_evict / data_reload, and d's pairs on the host */
gh_dev_data *gh_cuda_data_upload(gh_backend *b, const float *X, int32_t T, int32_t D, const gh_frame_pdf *pairs,
                                 int64_t npairs);
void gh_cuda_data_set_pairs(gh_backend *b, gh_dev_data *dd, const gh_frame_pdf *pairs, int64_t npairs);
void gh_cuda_data_free(gh_backend *b, gh_dev_data *dd);
int64_t gh_cuda_data_bytes(gh_backend *b, gh_dev_data *dd);
void gh_cuda_data_evict(gh_backend *b, gh_dev_data *dd);
void gh_cuda_data_reload(gh_backend *b, gh_dev_data *dd);
const gh_frame_pdf *gh_cuda_data_host_pairs(cuda_data *d);

/* elsewhere in kernels/cuda/ (extern "C": also called from C) */
extern "C" {
void gh_cuda_loglikes_data_dev(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd, int32_t row0, int32_t T,
                               float *out, int32_t ldo);
void gh_cuda_loglikes_segs_dev(gh_backend *b, const gh_score_seg *segs, int32_t nseg, gh_dev_data *dd, float *out,
                               int32_t ldo);
void gh_cuda_data_set_pairs_dev(gh_backend *b, gh_dev_data *dd, const gh_frame_pdf *dPairs, int64_t n,
                                int32_t bound, double *wsum);
}

#endif
