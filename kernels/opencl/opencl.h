/* opencl.h -- internals shared by the OpenCL backend's files (opencl.c: device,
 * program cache, GMM ops; opencl-hmm.c: HMM ops).  Not a public header: the
 * rest of the toolkit sees only kernels/backend.h. */
#ifndef GH_OPENCL_H
#define GH_OPENCL_H
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "backend.h"

typedef struct {
  cl_platform_id platform;
  cl_device_id device;
  cl_context ctx;
  cl_command_queue q;
  cl_program prog;
  int fp64;             /* cl_khr_fp64: E-step and HMM kernels available */
  int use_clblast;      /* GEMMs through CLBlast (else gh_sgemm_nt) */
  size_t max_wg;        /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
  cl_ulong max_alloc;   /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
  cl_kernel k_expand, k_gemm, k_lse_narrow, k_lse_wide, k_post, k_stats, k_reduce;
  cl_kernel k_expand_pairs, k_softmax, k_stats_tn, k_gemm128;
  cl_kernel k_white;    /* gmm.cl gh_white_ll (fp64 devices) */
  int sgemm_tile;       /* GH_OPENCL_SGEMM: 64 or 128 forces that tile; 0 = by size */
  int64_t chunk;        /* floats per scratch buffer of a chunk (frames x columns, posteriors) */
  cl_kernel k_fwd_log, k_fwd_scaled, k_viterbi, k_fb, k_fb_pairs, k_vit_pairs;
  cl_kernel k_pairs_count, k_pairs_scan, k_pairs_scatter; /* hmm.cl: the E-step pairs sorted on the device */
  cl_kernel k_tp_chunk, k_tp_combine, k_tp_vchain, k_tp_vpass, k_tp_vtrace, k_tp_vpath; /* long utterances */
  cl_kernel k_tp_bchain, k_tp_fbpass, k_tp_fbsum;
  cl_kernel k_mstep_diag, k_mstep_full, k_mstep_occ;
  cl_kernel k_kmeans; /* kmeans.cl (fp64 devices) */
  cl_kernel k_align;  /* align.cl (fp64 devices) */
  cl_kernel k_mstep_relfloor;
  cl_kernel k_acc_commit; /* dd.cl (backend.h acc_commit) */
  gh_backend *host;     /* the cpu backend for models the fp32 kernels cannot evaluate (lazily) */
} ocl_ctx;

/* A GMM set on the device (opencl.c model_upload): the parameter rows of
 * the GEMM forms by covariance type (gmm.cl), the accumulators, scratch. */
typedef struct {
  int32_t D, P, Gd, Gf, Kd, Kf, maxG;
  int32_t *gcnt, *ptype, *wrow;   /* host [P] */
  cl_mem Wd, Wf;                  /* [Gd x Kd], [Gf x Kf] float parameter rows */
  cl_mem goff, gcnt_d, ptype_d, wrow_d;  /* [P] */
  cl_mem gpdf_d, gl_d, gpdf_f, gl_f;     /* per Gaussian of each type: pdf, index in pdf */
  cl_mem emap_d, emap_f;                  /* [K] int2 */
  cl_mem acc_d, acc_f;                    /* double [Gn x K] (fp64 devices) */
  /* scratch, grown on demand */
  cl_mem X, phi_d, phi_f, S, out;
  size_t X_cap, phid_cap, phif_cap, S_cap, out_cap;
  cl_mem pair_off, gbase, gamma, tot, partial;
  size_t po_cap, gb_cap, gamma_cap, tot_cap, part_cap;
  /* device M-step (opencl-mstep.c): float weights per row, the new rows and
   * weights (swapped in when complete), per-pdf occupancy, per-row results */
  cl_mem wts_d, wts_f, Wd_new, Wf_new, wn_d, wn_f, occ_sum, obj, flg;
  /* acc_commit (dd.cl): double-double master, hi [Gd Kd + Gf Kf] then lo */
  cl_mem master;
  /* Numerical contract (doc/reliability.md): frames are centred at ctr
   * (float [D], on the device; c its host copy) in the kernels, x - ctr,
   * when the uncentred fp32 rows would err (gemm-forms.h
   * gh_gemm_row_error); centred = 0 keeps ctr at 0 (and the device M-step,
   * which works on uncentred rows and statistics).  A model whose fp32
   * form errs even centred is handed whole to the host cpu backend:
   * host_m (every op forwards to it). */
  int centred;
  double *c;
  cl_mem ctr;
  gh_dev_model *host_m;
  /* with host_m: scoring (loglikes) on the device in the whitened form
   * (gmm.cl gh_white_ll) when every pdf is full and within its estimate;
   * the E-step and M-step stay on the host */
  int white;
  int32_t wG, wmaxG;      /* Gaussians in all (Gt), the most in one pdf */
  cl_mem wmu, wnorm, wL;  /* double [Gt x D], double [Gt], float [Gt x D x D] */
  gh_gmm_set *orig;  /* a copy of the uploaded set when centred or host_m (the device M-step
                        declines then, so model_fetch returns these parameters) */
} ocl_model;


/* Dies with "opencl: <what>: <error name> (<code>)" unless err == CL_SUCCESS. */
void gh_ocl_check(cl_int err, const char *what);
/* A device buffer of max(bytes, 8) bytes, copied from host if non-NULL; dies
 * naming what on failure (e.g. out of device memory). */
cl_mem gh_ocl_buffer(ocl_ctx *c, size_t bytes, const void *host, const char *what);
/* Blocking copies host -> device / device -> host (bytes may be 0). */
void gh_ocl_write(ocl_ctx *c, cl_mem m, size_t off, size_t bytes, const void *host);
void gh_ocl_read(ocl_ctx *c, cl_mem m, size_t off, size_t bytes, void *host);
/* Sets kernel argument i; dies on error. */
void gh_ocl_arg(cl_kernel k, cl_uint i, size_t size, const void *value);
/* gh_ocl_arg of an lvalue: ARG(k, i, value). */
#define ARG(k, i, v) gh_ocl_arg(k, i, sizeof(v), &(v))
/* Launches k over global (rounded up to multiples of local) and dies on error. */
void gh_ocl_launch(ocl_ctx *c, cl_kernel k, cl_uint dims, const size_t *global, const size_t *local,
                   const char *what);
void gh_ocl_release(cl_mem m);

/* Device M-step and model fetch (opencl-mstep.c; backend.h mstep / model_fetch). */
int gh_ocl_mstep(gh_backend *b, gh_dev_model *dm, const struct gh_est_opts *o, struct gh_est_stats *st);
void gh_ocl_model_fetch(gh_backend *b, gh_dev_model *dm, gh_gmm_set *s);

/* E-step over Gaussian selections (opencl-gselect.c; backend.h acc_gselect). */
double gh_ocl_acc_gselect(gh_backend *b, const gh_gmm *gmm, const float *X, int32_t T, const int32_t *sel_off,
                          const int32_t *sel, const float *w, gh_gmm_accs *accs, float *post, double *frame_ll);
/* Exact alignment of a batch (opencl-align.c; backend.h align_batch). */
void gh_ocl_align_batch(gh_backend *b, const gh_align_batch *batch, gh_align_out *out);

/* k-means distance ops (opencl-kmeans.c; backend.h kmeans_*). */
gh_dev_kmeans *gh_ocl_kmeans_upload(gh_backend *b, const double *Z, int64_t N, int32_t D);
void gh_ocl_kmeans_nearest(gh_backend *b, gh_dev_kmeans *z, const double *C, int32_t k0, int32_t nk, int reset);
void gh_ocl_kmeans_fetch(gh_backend *b, gh_dev_kmeans *z, double *d2, int32_t *asg);
void gh_ocl_kmeans_free(gh_backend *b, gh_dev_kmeans *z);

/* HMM ops (opencl-hmm.c), in the ops table of opencl.c. */
gh_dev_hmm *gh_ocl_hmm_upload(gh_backend *b, const gh_hmm_graph *const *graphs, int32_t num_graphs);
void gh_ocl_hmm_free(gh_backend *b, gh_dev_hmm *h);
void gh_ocl_hmm_forward(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, int flags,
                        double *loglik, float *alpha);
void gh_ocl_hmm_viterbi(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, int32_t *path,
                        double *score);
void gh_ocl_hmm_fb(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, double *loglik,
                   float *gamma, double *stats);
void gh_ocl_hmm_fb_pairs(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, const gh_hmm_graph *const *graphs,
                         const int32_t *col_pdf, int32_t frame_base, double min_post, double *loglik, double *stats,
                         gh_pair_buf *out);
/* hmm_estep_pairs (opencl-hmm.c) and the two data ops it uses (opencl.c):
 * loglikes_data into the device matrix dout from row drow0 on (stride ldo),
 * and device pairs [n] sorted by pdf into d (backend.h semantics). */
int64_t gh_ocl_hmm_estep_pairs(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *bt, const gh_hmm_graph *const *graphs,
                               gh_dev_data *d, const gh_score_seg *segs, int32_t nseg, int op, double min_post,
                               double *loglik, double *stats, double *wsum, double sec[2]);
void gh_ocl_loglikes_data_dev(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd, int32_t row0, int32_t T, cl_mem dout,
                              int64_t drow0, int32_t ldo);
void gh_ocl_data_set_pairs_dev(gh_backend *b, gh_dev_data *dd, cl_mem pairs, int64_t n, int32_t bound, double *wsum);

/* The embedded OpenCL C sources (generated by the Makefile from
 * kernels/opencl/gmm.cl and hmm.cl: build/kernels/opencl/cl-source.c). */
extern const char gh_opencl_source[];

#endif
