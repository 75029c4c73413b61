/* cuda-model.h -- the CUDA backend's device model (internal to
 * kernels/cuda/): the layouts that model_upload (cuda-upload.cu) builds and its
 * kernels read, shared with the device M-step (cuda-mstep.cu). */
#ifndef GH_CUDA_MODEL_H
#define GH_CUDA_MODEL_H
#include <cuda_runtime.h>
extern "C" {
#include "backend.h"
}
#include "cuda-gemm.h"

/* One 64-pdf block of the likelihood layout. */
struct BlockDesc {
  long long poff;  /* offset of the block's parameters, in float4 */
  long long goff;  /* offset of the block's gconsts, in floats */
  int first;       /* first sorted-pdf index */
  int count;       /* pdfs in this block (<= PB) */
};

/* A pdf subset of a model in the narrow layout of its sub-model (one
 * diagonal block, lane j = pdfs[j], output column j): what model_upload
 * would build from the sub-model's set, gathered on the device from the
 * model's own records (cuda-loglikes.cu subset_view). */
struct SubView {
  int n;
  int32_t *pdfs;      /* [n] host copy, the key */
  float4 *dParams;    /* [Gmax x 2 nb x PB] */
  float *dGconst;     /* [Gmax x PB] */
  char *dMeta;        /* BlockDesc, perm [n], ng [n], then the gather's lanes */
  const BlockDesc *dBlocks;
  const int *dPerm, *dNg;
};

/* Per-pdf descriptor of the E-step layout. */
struct EPdf {
  long long eoff;    /* parameters: element k of Gaussian g at eparams[eoff + k*G + g] */
  long long accoff;  /* accumulators: [G x E] doubles from here, E = 1 + D + S */
  int G, full;
};

typedef struct {
  int D, P, Dp, nb;
  int ndiag_blocks, nfull_blocks;   /* diag blocks first, then full */
  int narrow_w;                     /* k_loglikes_narrow's lanes (8, 16 or 32) when the diagonal
                                       entries are one block of at most 32, else 0 */
  BlockDesc *dBlocks;
  int *dPerm, *dNg;
  float4 *dParams;
  float *dGconst;
  /* E-step.  dEparams holds, per pdf, the expanded parameter rows of the
   * GEMM forms column by column: element k of Gaussian g is [gconst, b
   * (means_invvars), -0.5 P_ii / -P_ij (packed lower triangle of the
   * inverse covariance) or -0.5 / var_i][k]: the model's canonical copy on
   * the device, which the device M-step rewrites. */
  EPdf *dEpdf;
  EPdf *hEpdf;
  float *dEparams;
  long long esize;    /* floats in dEparams */
  double *dAcc;
  long long acc_size;
  double *dMaster;    /* [2 acc_size] double-double master hi then lo (acc_commit), or NULL */
  int maxG;
  /* Split layout (pdfs with many Gaussians): V scratch columns (one per
   * segment), nsplit split pdfs; split pdf j is pdf dSplitPdf[j], its
   * segments are scratch columns dSplitOff[j] .. dSplitOff[j+1]-1.  All
   * zero / NULL when no pdf is split. */
  int V, nsplit;
  int *dSplitPdf, *dSplitOff;
  /* [P] whole pdf p's first parameter record (float4 index into dParams)
   * and gconst (index into dGconst): its block's offsets plus its lane;
   * -1 for a split pdf.  loglikes_subset's lanes (cuda-loglikes.cu). */
  long long *hLanePoff, *hLaneGoff;
  /* loglikes_subset's views: per pdf subset scored so far, its pdfs' records
   * gathered on the device into a sub-model's narrow layout (cuda-loglikes.cu
   * subset_view); freed with the model */
  struct SubView *views;
  int nviews, capviews;
  /* GEMM forms (cuda-gemm.cu): NULL without cuBLAS */
  gg_model *gg;
  int precision;  /* b->precision at upload */
  /* Gaussians in pdf order ("global" index: hGfirst[p] + g), for the
   * device M-step: weights, the pdf of each, scratch of cuda-mstep.cu. */
  long long Gt;
  long long *hGfirst, *dGfirst; /* [P + 1] */
  int *dGpdf;                   /* [Gt] */
  float *dWeights;              /* [Gt] */
  float *dEnew, *dWnew;         /* M-step output, swapped in when it is complete */
  double *dNormNew;             /* [Gt x (D + 1)] M-step output: the exact form (gg_model_exact_form), copied in when complete */
  double *dOccSum, *hOccSum;    /* [P] */
  void *dGstat, *hGstat;        /* [Gt] per-Gaussian results (cuda-mstep.cu) */
  int *dGlist, *hGlist;         /* [Gt] the M-step's second pass: Gaussians to floor */
  double *dVfloor;              /* [P x D] --rel-variance-floor's per-pdf floors */
  unsigned long long *dHash;    /* [1] cuda_model_hash's sum */
  int scoring_stale;            /* dParams / dGconst predate a device M-step */
  /* numerical contract (cuda-upload.cu model_upload, doc/reliability.md): the
   * model on the host cpu backend (every op forwards to it) when its fp32
   * forms would err grossly; NULL otherwise */
  gh_dev_model *host_m;
  gh_gmm_set *orig;  /* the uploaded set, when host_m (model_fetch returns it) */
  unsigned char *nofused; /* [P] 1: the pdf's uncentred fp32 form errs beyond the contract: GEMM forms only */
  int any_nofused;
  /* the batched path of the pdfs outside the fp32 budget (cuda-white.cu,
   * cuda-route.h): per pdf the largest whitened estimate of its Gaussians
   * (hEwhite, INFINITY when not computed: diagonal, or inside the fp32
   * budget), the float Cholesky factors [D x D] of the full pdfs within the
   * whitened budget (dWhite; pdf p's first at float offset hWoff[p] / dWoff[p],
   * -1 when none); white_stale: a device M-step changed the parameters since
   * (gh_cuda_white_refresh makes them again before the next E-step or
   * scoring; for D > 64 it does not, and those pdfs take the double form) */
  double *hEwhite;
  long long *hWoff, *dWoff;
  float *dWhite;
  int white_stale;
  int *dScorePdfs;   /* [nScorePdfs] the pdfs evaluated in double at --precision=auto that have factors */
  int nScorePdfs, nScoreExact; /* ... and how many are evaluated in double (gh_cuda_score_route) */
} cuda_model;

/* backend.h mstep and model_fetch (cuda-mstep.cu); cuda_mstep_free frees
 * the M-step scratch of m (called by model_free). */
int cuda_mstep(gh_backend *b, gh_dev_model *dm, const struct gh_est_opts *o, struct gh_est_stats *st);
void cuda_model_fetch(gh_backend *b, gh_dev_model *dm, gh_gmm_set *s);
int cuda_model_hash(gh_backend *b, gh_dev_model *dm, uint64_t *h);
void cuda_mstep_free(cuda_model *m);

/* Exact alignment of a batch (cuda-align.cu; backend.h align_batch). */
void gh_cuda_align_batch(gh_backend *b, const gh_align_batch *batch, gh_align_out *out);
/* backend.h kmeans_upload / _nearest / _fetch / _free (cuda-kmeans.cu). */
gh_dev_kmeans *cuda_kmeans_upload(gh_backend *b, const double *Z, int64_t N, int32_t D);
void cuda_kmeans_nearest(gh_backend *b, gh_dev_kmeans *z, const double *C, int32_t k0, int32_t nk, int reset);
void cuda_kmeans_fetch(gh_backend *b, gh_dev_kmeans *z, double *d2, int32_t *asg);
void cuda_kmeans_free(gh_backend *b, gh_dev_kmeans *z);

#endif
