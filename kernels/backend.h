/* backend.h -- the one interface every compute backend implements (CPU
 * reference, CUDA; OpenCL later).  Modelled on ggml's backends: a struct of
 * function pointers plus an opaque context; the caller picks a backend once
 * (gh_backend_create) and never branches on it again.  Device buffers belong
 * to the backend and are named by opaque handles (gh_dev_model); host code
 * never touches device pointers.
 *
 * Kernels:
 *  - loglikes: the fused GMM likelihood kernel of Vaněk et al. (seeds 000,
 *    001): for a block of frames x a block of pdfs, each pdf's Gaussians are
 *    evaluated and log-added in one pass; output per-pdf log-likelihoods
 *    log sum_g exp(gconst_g + x.mu_invvar_g - 0.5 x'InvCov_g x) (natural
 *    log), variable Gaussians per pdf.
 *  - accumulate: the EM E-step (Araújo et al. 2014; Cook et al.
 *    2011): for weighted (frame, pdf) pairs, Gaussian posteriors within the
 *    pdf, then occupancy, first- and second-order statistics, summed in
 *    double on the device and fetched once per pass.
 *  - hmm_forward / hmm_viterbi / hmm_fb: forward, Viterbi and
 *    forward-backward (Baum-Welch E-step) over a batch of utterances of
 *    different lengths, each with its own compiled HMM graph or one shared
 *    graph (Liu 2009, cuHMM: one time step of all sequences and states
 *    in parallel -- the 3-D trellis), with per-pdf log-likelihood matrices as
 *    emissions.  CPU reference: kernels/cpu/cpu-hmm.c; algorithms: doc/hmm.md.
 */
#ifndef GH_BACKEND_H
#define GH_BACKEND_H
#include <stdint.h>
#include "gmm/gmm.h"
#include "gmm/frame-pdf.h"  /* gh_frame_pdf, gh_pair_buf: the E-step's pairs */
#include "hmm/graph.h"      /* gh_hmm_graph, gh_hmm_batch: the HMM kernels' input */

typedef struct gh_backend gh_backend;
typedef struct gh_dev_model gh_dev_model;
typedef struct gh_dev_data gh_dev_data;
typedef struct gh_dev_hmm gh_dev_hmm;
typedef struct gh_dev_kmeans gh_dev_kmeans;
struct gh_est_opts;  /* lib/gmm/gmm-est.h */
struct gh_est_stats;
struct gh_score_seg; /* below */

/* The op table: a name and one pointer per sub-table, grouped by subject
 * (ggml's backend interface, ggml-backend-impl.h, is the model).  A
 * sub-table is present or absent AS A WHOLE: NULL means the backend has
 * none of that subject, and within a present sub-table every entry is
 * non-NULL (test/unit/test_ops_tables.c checks both for every backend
 * built).  Only `gmm` is required; callers ask gh_backend_supports()
 * (below) and never test a single entry.  Where a subject is missing the
 * registry's wrappers (kernels/registry/registry.h) run the CPU reference
 * or a host path.  Tables are written with designated initializers. */

/* ---- model, scoring and the E-step (required of every backend) ---- */
typedef struct {
  /* Frees b, its context and b itself (gh_backend_free calls it). */
  void (*free)(gh_backend *b);
  /* Copy a GMM set to the backend (in the backend's own layout: the
   * expanded-feature parameter matrices of the GEMM forms are the backend's
   * business).  Reads b->precision.  Dies on a bad set (dimension mismatch,
   * a dimension the backend cannot handle). */
  gh_dev_model *(*model_upload)(gh_backend *b, const gh_gmm_set *s);
  void (*model_free)(gh_backend *b, gh_dev_model *m);
  /* X: host [T x D] row-major float (D = model dim); out: host [T x P]
   * row-major float, per-pdf log-likelihoods (natural log). */
  void (*loglikes)(gh_backend *b, gh_dev_model *m, const float *X, int32_t T, float *out);
  /* Zero the model's device-side accumulators. */
  void (*acc_zero)(gh_backend *b, gh_dev_model *m);
  /* Training data resident on the backend for the E-step (uploaded once,
   * used by every accumulate() of every EM iteration): X host [T x D]
   * row-major float frames, pairs[npairs] weighted (frame, pdf) pairs with
   * 0 <= frame < T, pdf >= 0 (dies naming the first bad pair otherwise).
   * The host arrays must stay valid and unchanged until data_free (the CPU
   * reference reads them in place; other backends copy them). */
  gh_dev_data *(*data_upload)(gh_backend *b, const float *X, int32_t T, int32_t D,
                              const gh_frame_pdf *pairs, int64_t npairs);
  void (*data_free)(gh_backend *b, gh_dev_data *d);
  /* E-step over resident data d with model m: for every pair (frame t, pdf
   * p, weight w), Gaussian posteriors gamma_g = w p(g|x_t, p) within pdf p,
   * added to the device accumulators (occupancy sum gamma, first order sum
   * gamma x, second order sum gamma x.^2 (diag) or packed lower triangle of
   * sum gamma x x' (full); double).  Returns sum_pairs w * log p(x_t|p)
   * (natural log, total not per frame).  Dies if d's dimension differs
   * from m's or a pair's pdf is >= the model's number of pdfs. */
  double (*accumulate)(gh_backend *b, gh_dev_model *m, gh_dev_data *d);
  /* Add the device accumulators into host accs (shaped like the model;
   * total_frames/total_loglike are not touched here). */
  void (*acc_fetch)(gh_backend *b, gh_dev_model *m, gh_accs_set *accs);
} gh_ops_gmm;

/* ---- new pairs for resident data ---- */
typedef struct {
  /* ---- new pairs for resident data (drivers/train/hmm-train.h) ----
   * Replace d's weighted (frame, pdf) pairs by pairs[npairs] (checked as in
   * data_upload: dies naming the first bad pair), keeping d's frames where
   * they are (uploaded once) and its GEMM centre (CUDA), so that an HMM-GMM
   * trainer whose posteriors change every iteration uploads its frames once.
   * The host array must stay valid and unchanged until the next
   * data_set_pairs on d or data_free.  d must be resident (not evicted by
   * data_evict: dies otherwise); a later eviction keeps the new pairs.  Callers go through
   * gh_backend_data_pairs, which frees d and uploads the frames again when
   * a backend has no such sub-table.  CPU: kernels/cpu/cpu.c, cpu-blas.c; CUDA:
   * kernels/cuda/cuda.cu; OpenCL: kernels/opencl/opencl.c. */
  void (*data_set_pairs)(gh_backend *b, gh_dev_data *d, const gh_frame_pdf *pairs, int64_t npairs);
} gh_ops_pairs;

/* ---- residency: eviction and loglikes of resident frames ---- */
typedef struct {
  /* ---- data larger than device memory (drivers/train/dist-em.h,
   * gmm-train --max-device-memory) ----
   * data_bytes: the device memory d's frames and pairs take while resident.
   * data_evict: frees that memory, keeping the handle, a host copy of what
   * was uploaded (page-locked where the backend can) and everything that
   * decides the arithmetic (CUDA: the GEMM centre of the first model d was
   * used with), so d can only be reloaded or freed; caches of d are dropped.
   * data_reload: uploads it again (CUDA: asynchronously on a stream of its
   * own, from page-locked memory, so the copy overlaps the E-step of another
   * block; the next accumulate on d waits for it), after which accumulate
   * on d adds exactly what it added before the eviction.  A backend sets the
   * three together or none.  CUDA: kernels/cuda/cuda.cu; OpenCL: opencl.c. */
  int64_t (*data_bytes)(gh_backend *b, gh_dev_data *d);
  void (*data_evict)(gh_backend *b, gh_dev_data *d);
  void (*data_reload)(gh_backend *b, gh_dev_data *d);
  /* ---- loglikes of resident frames (drivers/train/hmm-train.c) ----
   * loglikes (above) of rows row0 .. row0 + T - 1 of d's frames under m
   * into host out (row t at out + t ldo, ldo >= P; the columns P .. ldo - 1
   * are not written), without uploading the frames again: the same
   * values, bit for bit, as loglikes of those rows from the host.  d must
   * be resident (data_reload after data_evict).  Dies on a dimension
   * mismatch or rows outside d.  Callers go through
   * gh_backend_loglikes_rows, which calls loglikes on the host rows where a
   * backend has no such sub-table.  CUDA: kernels/cuda/cuda.cu; OpenCL:
   * kernels/opencl/opencl.c. */
  void (*loglikes_data)(gh_backend *b, gh_dev_model *m, gh_dev_data *d, int32_t row0, int32_t T, float *out,
                        int32_t ldo);
} gh_ops_resident;

/* ---- the M-step on the device ---- */
typedef struct {
  /* ---- the M-step on the device (drivers/train/dist-em.h gh_dist_em_mstep) ----
   * After accumulate(): the maximum-likelihood update of every pdf of m
   * from m's own accumulators, with the arithmetic of lib/gmm/gmm-est.c
   * gh_gmm_update (Kaldi MleDiagGmmUpdate / MleFullGmmUpdate: weights
   * occ_g / sum occ, means m_g / occ_g, covariances S_g / occ_g - mu mu'
   * floored, inverses, gconsts from the float parameters; double
   * arithmetic), written into m's parameters on the device, so that the
   * next accumulate() on m uses the updated model without an upload.
   * Returns 0 and fills *st (objf_change, count, num_floored,
   * num_not_updated, num_pdfs_no_data; zeroed by the caller) when it did
   * the whole update.  Returns 1 with m unchanged, and the reason in
   * gh_last_error(), when some pdf needs what only the host M-step does:
   * a Gaussian to remove (remove_low_count_gaussians), shrinkage, a
   * dimension too large for the device's shared / local memory (CUDA:
   * D > 168, or D > 118 with an eigenvalue to floor), a re-estimated
   * covariance that is not usable (the host M-step then dies with the
   * message).  Eigenvalue floors (full covariances: a Jacobi
   * eigensolver per Gaussian, kernels/jacobi-eig.h) and rel_variance_floor
   * run on the device.  After an update on the device m serves accumulate,
   * mstep and model_fetch; loglikes too on OpenCL, while CUDA's loglikes
   * dies (its scoring layout is not rewritten: upload the fetched model to
   * score).  CUDA: kernels/cuda/cuda-mstep.cu; OpenCL: kernels/opencl/
   * mstep.cl. */
  int (*mstep)(gh_backend *b, gh_dev_model *m, const struct gh_est_opts *o, struct gh_est_stats *st);
  /* Copy m's current parameters into s (the set m was uploaded from, same
   * shapes: dies naming the pdf otherwise): weights, gconsts,
   * means_invvars, inv_vars exactly as the device holds them. */
  void (*model_fetch)(gh_backend *b, gh_dev_model *m, gh_gmm_set *s);
} gh_ops_mstep;

/* ---- a hash of the device model ---- */
typedef struct {
  /* A 64-bit hash of m's current parameters where
   * the device holds them (after an mstep that returned 0), without
   * fetching them: every word of the arrays model_fetch reads, each mixed
   * with its position, summed mod 2^64 (order-free, so exact and the same
   * on any device holding the same bits; not gh_gmm_set_hash's value).
   * Distributed training's per-iteration check that the ranks hold the
   * same model.  Returns 0 with *h set, or 1 when m's current parameters
   * are not on the device (the caller hashes the fetched model). */
  int (*model_hash)(gh_backend *b, gh_dev_model *m, uint64_t *h);
} gh_ops_hash;

/* ---- HMM kernels ---- */
typedef struct {
  /* ---- HMM kernels (see "HMM graphs and batches" below; doc/hmm.md) ----
   * Callers go through gh_backend_hmm_ops(), which returns the CPU
   * reference's sub-table when a backend has none.
   * Results are written to host memory and are complete on return. */
  /* Copy num_graphs compiled graphs to the backend; graph g is addressed by
   * its index g in the batch's graph[] array. */
  gh_dev_hmm *(*hmm_upload)(gh_backend *b, const gh_hmm_graph *const *graphs, int32_t num_graphs);
  void (*hmm_free)(gh_backend *b, gh_dev_hmm *h);
  /* Forward algorithm: loglik[u] = log P(O_u) (natural log, total over the
   * utterance) for each of the batch's B utterances.  alpha: NULL, or host
   * [sum_u T_u x S_g(u)] float (utterance u's block starts at row
   * frame_off[u] and has S of its own graph columns -- see gh_hmm_batch),
   * receiving log alpha_t(j) (unnormalised, natural log).  flags:
   * GH_HMM_SCALED selects Rabiner's scaled arithmetic instead of log-sum-exp
   * (same result up to rounding). */
  void (*hmm_forward)(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, int flags,
                      double *loglik, float *alpha);
  /* Viterbi: path[frame_off[u] + t] = best state at frame t of utterance u
   * (state index within its graph), score[u] = log-probability of that path
   * including initial, arc, emission and final log-probs (natural log).
   * An utterance with no complete path gets score -inf and path all -1. */
  void (*hmm_viterbi)(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, int32_t *path,
                      double *score);
  /* Forward-backward: loglik[u] as hmm_forward; gamma: NULL or host
   * [sum_u T_u x S_g(u)] float, state occupancies gamma_t(j) =
   * P(q_t = j | O_u) (rows sum to 1); stats: NULL or host double, for every
   * uploaded graph g the block stats + gh_hmm_stats_offset(g) of
   * gh_hmm_graph_stats_size(graph g) = 2 S_g + A_g doubles:
   * [0, S) expected initial occupancies gamma_0(j), [S, S + A) expected arc
   * counts sum_t xi_t(arc) (arcs in the graph's order, i.e. by destination),
   * [S + A, 2 S + A) expected exits gamma_{T-1}(j) final weighted, summed
   * over the batch's utterances of that graph.  ADDS to stats (caller
   * zeroes).  Utterances with loglik -inf (no path) contribute nothing. */
  void (*hmm_fb)(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, double *loglik,
                 float *gamma, double *stats);
} gh_ops_hmm;

/* ---- HMM E-step to pdf pairs on the device ---- */
typedef struct {
  /* ---- forward-backward straight to pdf posteriors
   * (drivers/train/hmm-train.c; semantics: gh_hmm_gamma_pairs below) ----
   * hmm_fb whose state occupancies stay on the device: appends to out the
   * (frame, pdf, weight) pairs that gh_hmm_gamma_pairs makes from this
   * backend's hmm_fb gamma -- the same pairs bit for bit, in the same
   * order -- and sets loglik and adds stats exactly as hmm_fb.  graphs are
   * the host graphs uploaded as h (backends may read them).  Callers go
   * through gh_backend_hmm_fb_pairs, which runs hmm_fb and
   * gh_hmm_gamma_pairs on the host where a backend has no such sub-table.
   * CUDA: kernels/cuda/cuda-hmm.cu (k_fb_pairs). */
  void (*hmm_fb_pairs)(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, const gh_hmm_graph *const *graphs,
                       const int32_t *col_pdf, int32_t frame_base, double min_post, double *loglik, double *stats,
                       gh_pair_buf *out);
  /* ---- a block's Baum-Welch E-step up to its GMM pairs, on the
   * device (drivers/train/hmm-train.c; semantics: gh_backend_hmm_estep_pairs
   * below, with the same pairs in the same order, so the same bits) ----
   * The loglikes of segs scored from d's resident frames into a device
   * matrix, forward-backward on it, the pdf posteriors mapped to pdf ids and
   * set as d's pairs (sorted by pdf) on the device: nothing of the block
   * crosses to the host but loglik, the stats and d's per-pdf offsets.
   * Returns the number of pairs; *wsum = their total weight (summed in a
   * fixed order, not necessarily the host's); or -1 when it declines a batch
   * before doing anything (the caller takes the host path).  sec[0] +=
   * scoring seconds, sec[1] += the rest.  Called only when b's HMM ops are
   * b's own (not the CPU reference's) and d is resident.  CUDA:
   * kernels/cuda/cuda-hmm.cu (declines the time-parallel batches and, for
   * Viterbi, the dense ones); OpenCL: kernels/opencl/opencl-hmm.c.
   * op GH_HMM_ESTEP_VITERBI: the Viterbi path instead of forward-backward,
   * a pair (frame, pdf of the path's state, 1) per frame of each utterance
   * with a complete path (min_post and stats unused; loglik = the best
   * path's score, -inf without one). */
  int64_t (*hmm_estep_pairs)(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch,
                             const gh_hmm_graph *const *graphs, gh_dev_data *d, const struct gh_score_seg *segs,
                             int32_t nseg, int op, double min_post, double *loglik, double *stats, double *wsum,
                             double sec[2]);
} gh_ops_hmm_dev;

/* ---- new log-probabilities for uploaded graphs ---- */
typedef struct {
  /* ---- new log-probabilities for uploaded graphs (drivers/train/hmm-train.c) ----
   * Replace the initial, final and arc log-probabilities of the num_graphs
   * graphs uploaded as h by those of graphs[], which have the structure of
   * the uploaded ones (states, pdfs, arcs with their sources and
   * destinations in the same order: the caller's guarantee; dies when the
   * numbers of graphs, states, arcs or pdfs differ), keeping everything
   * else -- and the scratch of earlier calls -- where it is: a Baum-Welch
   * trainer's graphs after its transition update.  Then h computes as a
   * fresh upload of graphs would, bit for bit.  Callers go through
   * gh_backend_hmm_reweight, which frees h and uploads graphs again where
   * a backend has no such sub-table.  CUDA: kernels/cuda/cuda-hmm.cu. */
  void (*hmm_reweight)(gh_backend *b, gh_dev_hmm *h, const gh_hmm_graph *const *graphs, int32_t num_graphs);
} gh_ops_hmm_reweight;

/* ---- shrinkage statistics ---- */
typedef struct {
  /* ---- shrinkage statistics (lib/gmm/shrink.h, doc/shrink.md) ----
   * Callers go through gh_backend_acc_shrink(), which runs the CPU
   * reference (kernels/cpu/shrink.c) when a backend has no such sub-table.
   * Self-contained (uploads what it needs, frees it before returning): for
   * every pair (frame t, pdf p, weight w) of the host frames X [T x D]
   * (D = model->dim), the Gaussian posteriors gamma_g = w p(g | x_t, p) under
   * the host model (full-covariance pdfs only), and for each Gaussian g the
   * moments of z = x_t - c_g about c_g = accs->pdfs[p].shrink_centre[g]:
   * sum gamma^2, sum gamma z_i, sum gamma z_i z_j, sum gamma z_i^2 z_j,
   * sum gamma z_i^2 z_j^2 (layout in lib/gmm/shrink.h), ADDED in double to
   * accs->pdfs[p].shrink (allocated by gh_accs_shrink_init).  A second pass
   * over the data with the centres fixed (doc/shrink.md says why). */
  void (*acc_shrink)(gh_backend *b, const gh_gmm_set *model, const float *X, int32_t T,
                     const gh_frame_pdf *pairs, int64_t npairs, gh_accs_set *accs);
} gh_ops_shrink;

/* ---- host buffers ---- */
typedef struct {
  /* ---- host buffers the backend copies to and from fastest ----
   * (CUDA: page-locked memory, cudaMallocHost: DMA straight from/to it, no
   * staging copy).  Callers go through gh_backend_host_alloc / _free, which
   * use malloc / free when a backend has no such sub-table.  host_alloc never
   * returns NULL (it falls back to malloc, and dies only when that fails);
   * host_free takes only pointers from host_alloc of the same backend. */
  void *(*host_alloc)(gh_backend *b, size_t bytes);
  void (*host_free)(gh_backend *b, void *p);
} gh_ops_host_mem;

/* ---- pipelined loglikes ---- */
typedef struct {
  /* ---- pipelined loglikes (gmm-score-gpu) ----
   * Callers go through gh_backend_loglikes_begin / _end, which call
   * loglikes (and nothing) when a backend has no such sub-table.
   * loglikes_begin: as loglikes, but may return before out is written (the
   * transfers and kernels enqueued): X and out stay the caller's to keep,
   * untouched, until the matching loglikes_end; a call with T = 0 counts
   * too.  loglikes_end: waits until the oldest call begun and not ended
   * has written its out (nothing when none is).  At most two calls are in
   * flight: a third begin ends the oldest first.  So one call's uploads
   * overlap the previous call's kernels (CUDA: kernels/cuda/cuda.cu). */
  void (*loglikes_begin)(gh_backend *b, gh_dev_model *m, const float *X, int32_t T, float *out);
  void (*loglikes_end)(gh_backend *b);
} gh_ops_pipeline;

/* ---- distributed training: raw accumulators and double-double master ---- */
typedef struct {
  /* ---- the raw accumulators (distributed training, drivers/train/dist-em.h) ----
   * m's device accumulators as one array of acc_raw_size(b, m) doubles in
   * the backend's own layout (a function of the model's shapes only, so
   * the same on every rank): acc_raw_get copies it to host[], acc_raw_set
   * replaces it with host[] (the sum over the ranks), after which mstep and
   * acc_fetch use the new values.  Without this sub-table the caller
   * reduces what acc_fetch returns and runs the host M-step.  CUDA:
   * kernels/cuda/cuda.cu. */
  int64_t (*acc_raw_size)(gh_backend *b, gh_dev_model *m);
  void (*acc_raw_get)(gh_backend *b, gh_dev_model *m, double *host);
  void (*acc_raw_set)(gh_backend *b, gh_dev_model *m, const double *host);
  /* ---- double-double accumulation over blocks (for
   * results that do not depend on the number of ranks; lib/base/dd.h,
   * drivers/train/dist-em.c) ----
   * Each model m has, besides its double accumulators (the acc_raw_*
   * array of n = acc_raw_size(b, m) doubles), a "master" pair hi[n],
   * lo[n] (allocated on first use, freed with m).  acc_commit does, in
   * this order, what flags asks:
   *   GH_ACC_MASTER_ZERO   hi = lo = 0 (start of an iteration);
   *   GH_ACC_COMMIT        (hi, lo) += accumulators elementwise in
   *                        double-double (lib/base/dd.h gh_dd_add: Knuth's
   *                        TwoSum, renormalised), then the accumulators = 0
   *                        (after each block's accumulate());
   *   GH_ACC_MASTER_ROUND  accumulators = hi + lo rounded to double (one
   *                        process: the final sum, then used by mstep and
   *                        acc_fetch; the master is kept).
   * acc_master_get copies hi and lo to host[n] each.  CUDA: one
   * elementwise kernel (kernels/cuda/cuda.cu); OpenCL:
   * kernels/opencl/dd.cl; CPU: kernels/cpu/cpu-dd.h (no device address). */
  void (*acc_commit)(gh_backend *b, gh_dev_model *m, int flags);
  void (*acc_master_get)(gh_backend *b, gh_dev_model *m, double *hi, double *lo);
} gh_ops_dist;

/* ---- device addresses for NCCL ---- */
typedef struct {
  /* acc_raw_device: the device address of the acc_raw_* array (gh_ops_dist),
   * for a device-side reduction (NCCL); acc_master_device: the device
   * address of hi[n] immediately followed by lo[n] (comm.h
   * gh_comm_sum_dd_device).  gh_backend_supports(b, GH_CAP_NCCL) also
   * needs the backend's buffers to be CUDA memory on the calling thread's
   * device (b->caps; kernels/registry/registry.c sets it for CUDA). */
  double *(*acc_raw_device)(gh_backend *b, gh_dev_model *m);
  double *(*acc_master_device)(gh_backend *b, gh_dev_model *m);
} gh_ops_nccl;

/* ---- the E-step over given Gaussian selections ---- */
typedef struct {
  /* ---- the E-step over given Gaussian selections ----
   * (Kaldi's --gselect of gmm-global-acc-stats / fgmm-global-acc-stats,
   * fgmm-global-gselect-to-post, *-get-frame-likes --gselect.)  Callers go
   * through gh_backend_acc_gselect(), which runs the CPU reference
   * (kernels/cpu/gselect.c) when a backend has no such sub-table.  Self-contained
   * (uploads what it needs and frees it before returning).
   * gmm: ONE GMM (diag or full) of G Gaussians, dimension D; X: host [T x D]
   * frames; sel_off [T + 1] (sel_off[0] = 0, non-decreasing) and sel
   * [sel_off[T]]: the Gaussians selected for frame t are
   * sel[sel_off[t] .. sel_off[t+1]), each in [0, G), at least one per
   * frame; w: NULL (all 1) or host [T] frame weights.
   * For every frame t and entry j of its list (Kaldi DiagGmm /
   * FullGmm::LogLikelihoodsPreselect, then ApplySoftMax):
   *   ll_j = log(w_g N(x_t; mu_g, C_g)) of Gaussian g = sel[j] (natural log;
   *          norm - 0.5 (x - mu)' P (x - mu) in double from gh_gselect_params,
   *          -inf for a dead Gaussian),
   *   lse_t = log sum_j exp(ll_j)  (the frame's log-likelihood within its list),
   *   post_j = exp(ll_j - lse_t)   (posterior among the selected Gaussians only).
   * Outputs (each NULL to skip): post [sel_off[T]] float post_j (unweighted);
   * frame_ll [T] double lse_t; accs: a one-GMM accumulator shaped like gmm
   * (G, D, type), to which w_t post_j is ADDED in double (occupancy[g],
   * mean_accs[g] += w_t post_j x_t, var_accs[g] += w_t post_j x_t.^2 (diag)
   * or the packed lower triangle of w_t post_j x_t x_t' (full); uncentred,
   * as gh_gmm_accs holds them).  Returns sum_t w_t lse_t (natural log,
   * total).  Dies naming the frame on an empty list or an index out of
   * range, or on a shape mismatch of accs. */
  double (*acc_gselect)(gh_backend *b, const gh_gmm *gmm, const float *X, int32_t T, const int32_t *sel_off,
                        const int32_t *sel, const float *w, gh_gmm_accs *accs, float *post, double *frame_ll);
} gh_ops_gselect;

/* ---- k-means distances ---- */
typedef struct {
  /* ---- k-means distances (drivers/gmm/gmm-init.c, doc/gmm-init.md) ----
   * Callers go through gh_backend_kmeans_* below, which run the CPU
   * implementation (kernels/cpu/kmeans.c) when a backend has no such sub-table.
   * kmeans_upload: the frames Z [N x D] (row-major double; copied, the
   * caller's array may change afterwards) resident on the backend with a
   * per-frame state: d2 [N], the squared Euclidean distance to the nearest
   * centre so far, and asg [N], that centre's index.
   * kmeans_nearest: the centres C [nk x D] (host, double), numbered
   * k0 .. k0 + nk - 1: for every frame i and k = k0 .. k0 + nk - 1 in
   * increasing order, e = sum_{d = 0..D-1} (z_id - c_kd)^2 summed in that
   * order with every operation rounded (no fused multiply-add: the same
   * bits as drivers/gmm/gmm-init.c's loops on every backend); with reset the
   * first centre's e replaces d2[i] (asg[i] = k0), otherwise and for the
   * rest d2[i], asg[i] = e, k when e < d2[i].  So one call with reset and
   * all K centres is Lloyd's assignment step, and a call with one new
   * centre is k-means++'s distance update.  nk >= 1.
   * kmeans_fetch: copies d2 and / or asg (either may be NULL) to the host. */
  gh_dev_kmeans *(*kmeans_upload)(gh_backend *b, const double *Z, int64_t N, int32_t D);
  void (*kmeans_nearest)(gh_backend *b, gh_dev_kmeans *z, const double *C, int32_t k0, int32_t nk, int reset);
  void (*kmeans_fetch)(gh_backend *b, gh_dev_kmeans *z, double *d2, int32_t *asg);
  void (*kmeans_free)(gh_backend *b, gh_dev_kmeans *z);
} gh_ops_kmeans;

/* ---- a score group's loglikes from the whole model ---- */
typedef struct {
  /* ---- a score group's loglikes from the whole model
   * (hmm-train; backend.h gh_score_seg's subset segments) ----
   * loglikes_subset_ok: 1 when pdfs[0..n) of m (pdf ids, each once) can be
   * scored by loglikes_subset and by hmm_estep_pairs' subset segments with
   * the bits that the sub-model of those pdfs (the set of just them, in
   * that order, uploaded) gives with loglikes_data; then the caller need
   * not upload the sub-model.  0 otherwise (the caller uploads it).
   * loglikes_subset: those pdfs on rows row0 .. row0 + T - 1 of d's
   * resident frames into host out (column j = pdfs[j], row stride ld >= n,
   * natural log per frame).  Dies where loglikes_subset_ok would say 0.
   * CUDA: kernels/cuda/cuda.cu (the narrow kernel on a view of the pdfs'
   * records, gathered on the device into the sub-model's layout). */
  int (*loglikes_subset_ok)(gh_backend *b, gh_dev_model *m, const int32_t *pdfs, int32_t n);
  void (*loglikes_subset)(gh_backend *b, gh_dev_model *m, gh_dev_data *d, int32_t row0, int32_t T,
                          const int32_t *pdfs, int32_t n, float *out, int32_t ld);
} gh_ops_subset;

/* ---- exact Viterbi alignment of a batch of per-utterance graphs ---- */
/* One utterance's graph for align_batch: lib/decoder's gh_dec_graph (the
 * aligner's CSR layout: the arcs of state s are arcs[arc_start[s] ..
 * arc_start[s+1]), final[s] a cost, +inf = not final), the same memory
 * layout, so the driver passes its arrays as they are. */
typedef struct {
  int32_t ilabel, olabel; /* ilabel 0: non-emitting (epsilon) arc */
  float weight;           /* graph cost (negated natural log) */
  int32_t next;
} gh_align_arc;
typedef struct {
  int32_t num_states, start;
  int64_t num_arcs; /* < 2^31 */
  const int64_t *arc_start;
  const gh_align_arc *arcs;
  const float *final;
} gh_align_graph;
/* A batch: utterance u has graph graphs[u] and loglikes[u] ([T[u] x ld]
 * floats, natural log, host); ilabel i > 0 reads column col[i] (0 <= col[i]
 * < ld, i <= num_labels); the acoustic cost of frame t on an arc with ilabel
 * i is -(acoustic_scale * loglikes[u][t ld + col[i]]) in float.
 * ckpt_interval: 0 = store every frame's back-pointers when they fit
 * bp_budget bytes per utterance (0: unlimited), else checkpoints; K > 0 =
 * checkpoints every K frames (tests). */
typedef struct {
  int32_t num_utts;
  const gh_align_graph *graphs;
  const float *const *loglikes;
  const int32_t *T;
  int32_t ld, num_labels;
  const int32_t *col;
  float acoustic_scale;
  int32_t ckpt_interval;
  int64_t bp_budget;
} gh_align_batch;
/* One utterance's result: cost = the best path's total cost (token cost,
 * double as Kaldi's decoder sums it, plus the final cost), reached = 1 if a
 * final state has a finite cost after the last frame; then arcs[num_arcs]
 * (malloc'd; the caller frees) are the path's arc indices into its graph in
 * path order (T emitting arcs and the epsilon arcs between them).  reached
 * = 0: cost +inf, arcs NULL, num_arcs 0. */
typedef struct {
  double cost;
  int32_t reached, num_arcs;
  int32_t *arcs;
} gh_align_out;
typedef struct {
  /* ---- exact Viterbi over a batch of utterances' graphs
   * (drivers/align/align-batch.c; doc/align.md "The batched aligner") ----
   * The exact best path of every utterance of the batch (no pruning, the
   * result of lib/decoder's decoder with an infinite beam): column 0 is
   * the start state at cost 0 followed by the epsilon closure; frame t
   * gives every state s its best emitting predecessor,
   *   c_t(s) = min over arcs a = (p -> s, ilabel > 0) of
   *            ((double) w_a + c_{t-1}(p)) + (double) ac_t(a),
   * then the epsilon closure in synchronous rounds (each round every state
   * takes min over epsilon arcs a = (p -> s) of c(p) + (double) w_a from the
   * previous round's costs, if strictly smaller) until no state changes (at
   * most num_states rounds).  Ties: the arc of smallest index wins, and
   * among final states the smallest state: the same choice on every
   * backend, bit for bit.  Back-pointers are one arc index per state and
   * frame; where T x S of them exceed the budget, the column's costs and
   * back-pointers are kept every K frames and each segment is recomputed
   * (the same arithmetic: the same path) while tracing back, so memory is
   * O((T/K + K) S).  Fills out[num_utts].  Dies on a graph with no start
   * state, an ilabel outside [0, num_labels] or more than 2^31 arcs, or
   * when the device cannot hold the batch.  CPU: kernels/cpu/align.c;
   * CUDA: kernels/cuda/cuda-align.cu; OpenCL: kernels/opencl/align.cl. */
  void (*align_batch)(gh_backend *b, const gh_align_batch *batch, gh_align_out *out);
} gh_ops_align;

typedef struct {
  const char *name; /* "cpu", "cpu-ref", "cuda", "opencl" */
  const gh_ops_gmm *gmm;                   /* required */
  const gh_ops_pairs *pairs;
  const gh_ops_resident *resident;
  const gh_ops_mstep *mstep;
  const gh_ops_hash *hash;
  const gh_ops_hmm *hmm;
  const gh_ops_hmm_dev *hmm_dev;
  const gh_ops_hmm_reweight *hmm_reweight;
  const gh_ops_shrink *shrink;
  const gh_ops_host_mem *host_mem;
  const gh_ops_pipeline *pipeline;
  const gh_ops_dist *dist;
  const gh_ops_nccl *nccl;
  const gh_ops_gselect *gselect;
  const gh_ops_kmeans *kmeans;
  const gh_ops_subset *subset;
  const gh_ops_align *align;
} gh_backend_ops;

/* The subjects of gh_backend_supports, one per sub-table of gh_backend_ops. */
typedef enum {
  GH_CAP_GMM = 0, GH_CAP_PAIRS, GH_CAP_RESIDENT, GH_CAP_MSTEP, GH_CAP_HASH, GH_CAP_HMM, GH_CAP_HMM_DEV,
  GH_CAP_HMM_REWEIGHT, GH_CAP_SHRINK, GH_CAP_HOST_MEM, GH_CAP_PIPELINE, GH_CAP_DIST, GH_CAP_NCCL,
  GH_CAP_GSELECT, GH_CAP_KMEANS, GH_CAP_SUBSET, GH_CAP_ALIGN,
  GH_CAP_COUNT
} gh_backend_cap;

/* 1 if b (may be NULL: 0) has the sub-table `what` (its pointer in
 * b->ops is not NULL), else 0.  GH_CAP_NCCL also needs b->caps'
 * GH_BACKEND_CAP_NCCL (the buffers are CUDA memory: the trainers'
 * communicator can sum them with NCCL).  Dies on an unknown `what`. */
int gh_backend_supports(const gh_backend *b, gh_backend_cap what);
/* The sub-table `what` of o (NULL when absent) and its size in bytes in
 * *bytes (may be NULL): a struct of function pointers only, so tests can
 * walk it; "gmm", "pairs", ... in *name (may be NULL).  Dies on an
 * unknown `what`. */
const void *gh_backend_ops_table(const gh_backend_ops *o, gh_backend_cap what, size_t *bytes, const char **name);


/* acc_commit flags */
#define GH_ACC_MASTER_ZERO 1
#define GH_ACC_COMMIT 2
#define GH_ACC_MASTER_ROUND 4

struct gh_backend {
  const gh_backend_ops *ops;
  void *ctx;
  char device_name[128]; /* for logs: "cpu", "cuda (NVIDIA H200)" */
  double kernel_seconds;  /* time spent in loglikes kernels so far (CUDA:
                             device time by events, excluding transfers;
                             CPU: wall time); for benchmarks */
  double upload_seconds;  /* CUDA: device time of loglikes' frame uploads
                             so far (events; they may overlap kernels);
                             for benchmarks */
  const gh_ops_hmm *hmm_ops;     /* set by gh_backend_hmm_ops(): ops->hmm, or
                                    the CPU reference's when ops has none */
  int precision;                  /* gh_precision: arithmetic of the GEMM paths,
                                     read by model_upload and the CUDA dense
                                     scaled HMM forward (default 0 = auto) */
  unsigned caps;                  /* GH_BACKEND_CAP_*: what the backend offers
                                     beyond its op table (0 = nothing); ask
                                     gh_backend_supports */
  int64_t path_pairs[8];          /* GH_PATH_*: (frame, pdf) pairs scored or
                                     accumulated on each arithmetic path so far
                                     (loglikes: T x pdfs; E-step: the pairs);
                                     a backend that does not count leaves them
                                     0; for benchmarks (gh_backend_paths_describe) */
  int64_t cand_pairs, cand_gauss; /* E-step pairs counted, and the sum over them of
                                     their Gaussians within GH_CAND_NATS of the
                                     pair's best (0 where not counted) */
};

/* Arithmetic paths of a (frame, pdf) pair, the index into path_pairs.
 * FP32: an fp32 / TF32x3 GEMM form or a fused fp32 kernel (expanded
 * features, within the contract's error estimate); WHITE: the whitened form
 * |L'(x - mu)|^2 (gemm-forms.h gh_white_error); CAND: the candidate E-step
 * (exact values for the Gaussians near the best); DOUBLE: the GEMM forms in
 * double or the double reference form on the device; HOST: a pdf or model
 * sent to a host backend. */
enum { GH_PATH_FP32 = 0, GH_PATH_WHITE, GH_PATH_CAND, GH_PATH_DOUBLE, GH_PATH_HOST, GH_PATH_N };
/* Gaussians within this many nats of a frame's best one count as the
 * frame's candidates (the CUDA candidate E-step's threshold without its
 * error margin). */
#define GH_CAND_NATS 40.0

/* One line describing b's counters: "paths: fp32 97.1%, whitened 2.9%,
 * cand 0%, double 0%, host 0% of N (frame, pdf) pairs; 1.23 Gaussians per
 * pair within 40 nats of the best" (the last part only when counted;
 * "paths: not counted" when the backend counts none).  Into buf [n]. */
void gh_backend_paths_describe(const gh_backend *b, char *buf, size_t n);

/* gh_backend caps.  NCCL: the backend's buffers are CUDA device memory on
 * the device the calling thread uses, so the trainers' communicator can sum
 * them with NCCL (drivers/train/comm.h gh_comm_sum_f64_device); read through
 * gh_backend_supports(b, GH_CAP_NCCL). */
#define GH_BACKEND_CAP_NCCL 1u

/* Arithmetic of a backend's GEMM-shaped loglikes / E-step (--precision).
 * AUTO: the backend's fastest choice within its stated error budget
 * (doc/kernels.md); FP32: plain fp32 FMAs; TF32X3: split-precision tensor
 * cores (x = big + small in TF32, three products, ~fp32 accuracy); TF32:
 * one TF32 product (10-bit mantissa; about 1e-3 relative error, not for
 * training).  Backends without tensor cores treat all as FP32. */
typedef enum { GH_PREC_AUTO = 0, GH_PREC_FP32, GH_PREC_TF32X3, GH_PREC_TF32 } gh_precision;
/* "auto" | "fp32" | "tf32x3" | "tf32" -> *p; returns 0, or -1 if unknown. */
int gh_precision_parse(const char *s, int *p);

/* b's loglikes_begin / loglikes_end (gh_backend_ops), or loglikes and
 * nothing when b has none. */
void gh_backend_loglikes_begin(gh_backend *b, gh_dev_model *m, const float *X, int32_t T, float *out);
void gh_backend_loglikes_end(gh_backend *b);

/* The CPU implementation (OpenMP over frames, centres in SIMD lanes). */
gh_dev_kmeans *gh_cpu_kmeans_upload(gh_backend *b, const double *Z, int64_t N, int32_t D);
void gh_cpu_kmeans_nearest(gh_backend *b, gh_dev_kmeans *z, const double *C, int32_t k0, int32_t nk, int reset);
void gh_cpu_kmeans_fetch(gh_backend *b, gh_dev_kmeans *z, double *d2, int32_t *asg);
void gh_cpu_kmeans_free(gh_backend *b, gh_dev_kmeans *z);

/* The CPU reference backend's ops table. */
const gh_backend_ops *gh_backend_cpu_ops(void);
/* The CPU reference's sub-tables (kernels/cpu/cpu.c): what the registry's
 * wrappers run where a backend lacks the subject, and the BLAS backend's
 * HMM kernels and shrinkage statistics.  They never touch b->ctx.
 * gh_cpu_ref_gselect and gh_cpu_ref_kmeans are the fallbacks only (the
 * CPU backends' own tables leave those subjects to them). */
extern const gh_ops_hmm gh_cpu_ref_hmm;
extern const gh_ops_shrink gh_cpu_ref_shrink;
extern const gh_ops_gselect gh_cpu_ref_gselect;
extern const gh_ops_kmeans gh_cpu_ref_kmeans;
extern const gh_ops_align gh_cpu_ref_align;
/* The CPU reference of align_batch (kernels/cpu/align.c, OpenMP over the
 * utterances); never touches b. */
void gh_cpu_align_batch(gh_backend *b, const gh_align_batch *batch, gh_align_out *out);
/* Element offsets of the per-state outputs (alpha, gamma) of a batch:
 * state_off[u] = sum_{v<u} T_v S_g(v), u = 0..B (so state_off[B] is the
 * total size).  graphs[g] are the graphs uploaded for the batch. */
void gh_hmm_batch_state_off(const gh_hmm_batch *batch, const gh_hmm_graph *const *graphs,
                            int64_t *state_off);
/* Offset of graph g's block in hmm_fb's stats: sum_{h<g} (2 S_h + A_h). */
int64_t gh_hmm_stats_offset(const gh_hmm_graph *const *graphs, int32_t g);
/* Pdf posteriors from state occupancies (hmm-bw's and Kaldi's rule: a
 * pdf's posterior is the sum of the occupancies of the states that share
 * it).  For every utterance u of the batch with loglik[u] > -inf, every
 * frame t < T_u and every pdf column p of its graph (graphs[graph[u]]):
 *   gamma_t(p) = sum of gamma[state_off[u] + t S + j] over the states j
 *                with pdf[j] = p and gamma > 0 (float values, summed in
 *                double in increasing j)
 * appended to out as (frame_base + frame_off[u] + t, col_pdf[p],
 * (float) gamma_t(p)) where gamma_t(p) >= min_post, gamma_t(p) > 0 and the
 * float is not 0 -- utterances in batch order, frames in order, a frame's
 * pdfs in the order of their first state with gamma > 0.  gamma: hmm_fb's
 * [sum_u T_u x S_g(u)] state occupancies (probabilities, not logs);
 * col_pdf: [batch->num_pdfs] the pdf id written for each loglike column,
 * or NULL (the column itself).  Frames must fit int32 (dies otherwise). */
void gh_hmm_gamma_pairs(const gh_hmm_batch *batch, const gh_hmm_graph *const *graphs, const float *gamma,
                        const double *loglik, const int32_t *col_pdf, int32_t frame_base, double min_post,
                        gh_pair_buf *out);
/* One score segment of a block's HMM-GMM E-step
 * (gh_backend_hmm_estep_pairs): rows row0 .. row0 + rows - 1 of the block
 * (whole utterances) scored with model m, whose pdfs are the loglike
 * columns 0 .. ncols - 1 of these rows; column c is pdf map[c] of the full
 * model (map NULL: c itself).  subset = 1: m is the full model itself and
 * only its pdfs map[0..ncols) are scored, into columns 0 .. ncols - 1
 * (loglikes_subset; only where the backend's loglikes_subset_ok said so). */
typedef struct gh_score_seg {
  gh_dev_model *m;
  int32_t row0, rows, ncols;
  const int32_t *map;
  int32_t subset;
} gh_score_seg;

/* For a backend's hmm_estep_pairs: the segments' column maps one after the
 * other (returned, malloc'd [*ncol + 1]), each utterance's offset into them
 * in ucol [num_utts] (-1: its columns are pdf ids, or it has no frames) and
 * *bound, one more than the largest pdf id the pairs can have.  graphs
 * [num_graphs]: the host graphs the batch's utterances index.  Dies on an
 * utterance that is not inside one segment, a bad graph index, or a graph
 * using more loglike columns than its segment has. */
int32_t *gh_score_seg_maps(const gh_hmm_batch *batch, const gh_hmm_graph *const *graphs, int32_t num_graphs,
                           const gh_score_seg *segs, int32_t nseg, int32_t *ncol, int32_t *ucol, int32_t *bound);

/* gh_backend_hmm_estep_pairs's op: Baum-Welch (pdf posteriors) or Viterbi
 * (the best path's pdfs, weight 1). */
enum { GH_HMM_ESTEP_FB = 0, GH_HMM_ESTEP_VITERBI = 1 };

/* Flop count of one Gaussian evaluated on one frame, as defined by Vaněk et
 * al. 2012a (Sec. V): full covariance 5 per off-diagonal element
 * (D(D-1)/2 of them) + 4 per diagonal element + 9 for the addLog; diagonal
 * (Vaněk et al. 2012b, Sec. V) 4 per dimension + 9.  Used by the benchmark's GFLOP/s. */
static inline double gh_gauss_flops(gh_covtype type, int32_t dim) {
  double d = dim;
  return type == GH_COV_FULL ? 5.0 * d * (d - 1) / 2 + 4.0 * d + 9.0 : 4.0 * d + 9.0;
}

/* Frees b (its free op); b may be NULL. */
void gh_backend_free(gh_backend *b);

/* Constructors of the individual backends (NULL if unavailable, with the
 * reason in gh_last_error()). */
gh_backend *gh_backend_cpu_new(void);   /* the plain-loop reference (--device=cpu-ref); never fails */
gh_backend *gh_backend_blas_new(void);  /* GEMM forms through BLAS on all cores (--device=cpu);
                                           never fails */
gh_backend *gh_backend_cuda_new(void);  /* built only with CUDA; else returns NULL */
int gh_cuda_device_count(void);         /* 0 without CUDA or GPU */
/* OpenCL (kernels/opencl/; built when CL/cl.h is present, else returns NULL
 * / 0).  spec: "P:D" (platform P, device D, as `clinfo -l` numbers them) or
 * NULL/"" for $GH_OPENCL_DEVICE, else the first GPU, else the first device
 * of any type; gpu_only != 0 (for --device=auto) accepts only
 * CL_DEVICE_TYPE_GPU devices and ignores $GH_OPENCL_DEVICE. */
gh_backend *gh_backend_opencl_new(const char *spec, int gpu_only);
int gh_opencl_gpu_count(void);          /* GPU devices over all platforms; 0 without OpenCL */

/* The CPU reference HMM kernels (kernels/cpu/cpu-hmm.c), as in gh_backend_ops;
 * exported so cpu.c can put them in its table and tests can call them. */
gh_dev_hmm *gh_cpu_hmm_upload(gh_backend *b, const gh_hmm_graph *const *graphs, int32_t num_graphs);
void gh_cpu_hmm_free(gh_backend *b, gh_dev_hmm *h);
void gh_cpu_hmm_forward(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, int flags,
                        double *loglik, float *alpha);
void gh_cpu_hmm_viterbi(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, int32_t *path,
                        double *score);
void gh_cpu_hmm_fb(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch, double *loglik,
                   float *gamma, double *stats);

/* Checks the pairs given to data_upload (0 <= frame < T, pdf >= 0; dies
 * naming the first bad pair) and returns the largest pdf id (-1 if none). */
int32_t gh_pairs_check(const gh_frame_pdf *pairs, int64_t npairs, int32_t T);
/* The pairs checked as gh_pairs_check (dies naming the first bad pair) and
 * sorted by pdf, stable (a counting sort): pdf p's frames and weights are
 * frame[off[p] .. off[p+1]) and weight[...] in their order in pairs[];
 * frame and weight: the caller's [npairs]; returns off (malloc'd,
 * [*max_pdf + 2]) and the largest pdf id in *max_pdf (-1 if none).  On
 * many pairs the threads (OpenMP) count and place contiguous chunks: the
 * same arrays as one thread's (the E-step data of every backend). */
int64_t *gh_pairs_sort_by_pdf(const gh_frame_pdf *pairs, int64_t npairs, int32_t T, int32_t *max_pdf,
                              int32_t *frame, float *weight);

/* E-step data of frames X [T x D] (host, row-major) with pairs[npairs] on
 * b: *d NULL: data_upload; else d's pairs replaced (data_set_pairs, the
 * frames stay on the device) or, when b has no data_set_pairs, d freed
 * and X uploaded again with the pairs.  X must be the frames *d was
 * uploaded with; X and pairs stay the caller's until the next call on *d
 * or data_free.  Dies as data_upload. */
void gh_backend_data_pairs(gh_backend *b, gh_dev_data **d, const float *X, int32_t T, int32_t D,
                           const gh_frame_pdf *pairs, int64_t npairs);

/* loglikes of rows row0 .. row0 + T - 1 of the frames X [. x D] (host,
 * row-major) that d holds on b (d may be NULL): from d where b has
 * loglikes_data, else from X (loglikes).  out: host, row t at out + t ldo
 * (ldo >= P, the model's pdfs; columns P .. ldo - 1 not written). */
void gh_backend_loglikes_rows(gh_backend *b, gh_dev_model *m, gh_dev_data *d, const float *X, int32_t D,
                              int32_t row0, int32_t T, float *out, int32_t P, int32_t ldo);

/* Host buffer of `bytes` for b's inputs/outputs (its host_alloc, else
 * malloc); never NULL (dies when out of memory).  Free with
 * gh_backend_host_free(b, p) (p may be NULL). */
void *gh_backend_host_alloc(gh_backend *b, size_t bytes);
void gh_backend_host_free(gh_backend *b, void *p);

/* Rows src [n x D] (row-major floats) -> dst [n x ld] (ld >= D), each row
 * padded with zeros to ld: a backend's packing of frames into its staging
 * buffer before a copy to the device.  OpenMP over the rows when n x ld is
 * at least 256 K floats (the CUDA upload of 8 M frames packed 1.26 GB in one
 * thread before the copies, bench/RESULTS.md D32). */
void gh_pack_rows(float *dst, size_t ld, const float *src, size_t D, size_t n);

/* The CPU reference of acc_gselect (kernels/cpu/gselect.c, OpenMP over
 * frames, per-thread sums added in thread order); never touches b. */
double gh_cpu_acc_gselect(gh_backend *b, const gh_gmm *gmm, const float *X, int32_t T, const int32_t *sel_off,
                          const int32_t *sel, const float *w, gh_gmm_accs *accs, float *post, double *frame_ll);
/* The parameters acc_gselect evaluates with, in double from the file's
 * float parameters (kernels/gemm-forms.h gh_gauss_exact): *norm [G]
 * (log w + 0.5 log det P - D/2 log 2pi; -inf for a dead Gaussian) and
 * *mu [G x D] (P^-1 b; 0 when dead), malloc'd (the caller frees both), so
 * that every backend evaluates the numerical contract's reference form
 * ll = norm - 0.5 (x - mu)' P (x - mu) in double (doc/reliability.md): not
 * the file's float gconst (its rounding alone is nats for features with a
 * large offset), nor Kaldi's expanded gconst + x.b - 0.5 x'Px, which
 * cancels terms of size |x|^2 / var even in double. */
void gh_gselect_params(const gh_gmm *gmm, double **norm, double **mu);
/* Checks the selections of acc_gselect (sel_off[0] = 0, non-decreasing, at
 * least one entry per frame, indices in [0, G)) and accs' shape; dies
 * naming the first bad frame.  Shared by every backend's acc_gselect. */
void gh_gselect_check(const gh_gmm *gmm, int32_t T, const int32_t *sel_off, const int32_t *sel,
                      const gh_gmm_accs *accs);
/* The device backends' plan for the statistics of acc_gselect: the
 * entries of frames [t0, t1) grouped by Gaussian, in frame order within a
 * Gaussian (a stable counting sort of the selections on the host):
 * ent[k], k in [0, n): entry index (into sel / post, relative to
 * sel_off[t0]) of the k-th entry; efr[k] its frame (relative to t0);
 * gstart[g] .. gstart[g+1]: the entries of Gaussian g.  Work items: the
 * entries of one Gaussian in pieces of at most seg: item i covers
 * [item_start[i], item_start[i] + item_count[i]) of Gaussian item_g[i];
 * the items of Gaussian g are gitem[g] .. gitem[g+1]-1.  All arrays
 * malloc'd here; gh_gselect_plan_free frees them. */
typedef struct {
  int64_t n;
  int32_t *ent, *efr;
  int32_t *gstart, *gitem;   /* [G + 1] */
  int32_t nitems;
  int32_t *item_g, *item_start, *item_count;
} gh_gselect_plan;
void gh_gselect_plan_make(gh_gselect_plan *p, int32_t G, int32_t t0, int32_t t1, const int32_t *sel_off,
                          const int32_t *sel, int32_t seg);
void gh_gselect_plan_free(gh_gselect_plan *p);

/* The CPU reference of acc_shrink (kernels/cpu/shrink.c); never touches b. */
void gh_cpu_acc_shrink(gh_backend *b, const gh_gmm_set *model, const float *X, int32_t T,
                       const gh_frame_pdf *pairs, int64_t npairs, gh_accs_set *accs);

/* Make CUDA device N (CUDA's numbering, after CUDA_VISIBLE_DEVICES) the current
 * device of this process before gh_backend_cuda_new(), which uses the current
 * device (--device=cuda:N; kernels/cuda/device.cu).  0, or -1 with
 * gh_last_error() set. */
int gh_cuda_set_device(int device);
/* If b is the CUDA backend, makes its device the current device of the
 * calling thread (the runtime's current device is per thread: a backend
 * started on another thread, gh_backend_create_begin, would otherwise run
 * the caller's work on device 0); does nothing for other backends.  Dies
 * on a CUDA error. */
void gh_cuda_thread_attach(gh_backend *b);

#endif
