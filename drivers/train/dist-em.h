/* dist-em.h -- the EM engine of the GMM tools: EM of a GMM set over R
 * ranks (gmm-train; gmm-est-gpu, gmm-global-init-from-feats and bench-em
 * run it as one rank, communicator "none"): each
 * rank keeps its shard (drivers/train/shard.h) resident on its backend, one
 * frame block per gh_dev_data, and every iteration
 *   1. E-step: accumulate() block after block in the global block order:
 *      the fp32 work of the kernels happens inside a block; after each
 *      block its double accumulators are added into a double-double
 *      master (lib/base/dd.h: on the device with backend.h acc_commit,
 *      else on the host after acc_raw_get or acc_fetch; the environment's
 *      GH_TRAIN_COMMIT=host-raw|host-accs forces these, for tests) and
 *      zeroed;
 *   2. reduction: the ranks' double-double masters (and their total
 *      log-likelihoods and frame weights, also double-double) added over
 *      the ranks in rank order in double-double and rounded to double once
 *      (comm.h gh_comm_sum_dd on the host, gh_comm_sum_dd_device with
 *      NCCL), so every rank holds identical bytes;
 *   3. M-step, identically on every rank: on the device when the backend
 *      can (backend.h mstep, after acc_raw_set / the NCCL sum), else on the
 *      host from the reduced accumulators (lib/gmm/gmm-est.c).
 * The rounded sums are the correctly rounded exact sums of the blocks'
 * double contributions (dd.h says when not: a near-tie or a cancellation
 * of ~2^50, never seen in practice), so R ranks give the 1-rank
 * accumulators and models bit for bit, and a plain process equals one
 * rank exactly.  The E-step
 * model's centre for the GEMM forms (kernels/gemm-forms.h
 * gh_gemm_model_centre) is a function of the model only: CPU BLAS takes
 * it from each uploaded model, CUDA from the first model a block is used
 * with -- the same model on every rank.
 */
#ifndef GH_DIST_EM_H
#define GH_DIST_EM_H
#include "backend.h"
#include "gmm/gmm-est.h"
#include "gmm/gmm.h"
#include "train/comm.h"
#include "base/dd.h"
#include "train/shard.h"

typedef struct {
  gh_comm *comm;
  gh_backend *b;
  gh_gmm_set *model;      /* host copy (current after gh_dist_em_sync) */
  const gh_shard_data *sd;
  gh_dev_data **dd;       /* [sd->num_blocks] */
  unsigned char *streamed; /* [sd->num_blocks]: 1 = evicted between E-steps (--max-device-memory) */
  int32_t num_streamed;
  int64_t resident_bytes; /* device bytes of the blocks kept resident */
  gh_dev_model *dm;       /* device copy of the current model, or NULL */
  int host_stale;         /* device M-step since the last sync */
  int device_mstep;       /* try the backend's mstep (0 with GH_MSTEP=host) */
  int device_reduced;     /* the device accumulators hold the reduced sums */
  int mstep_on_device;    /* where the last M-step ran */
  gh_accs_set own;        /* host accumulators of the fetch path */
  int have_own;
  double *buf;            /* host reduction buffer */
  size_t buf_cap;
  double total_weight;    /* over all ranks, last E-step */
  double total_loglike;   /* over all ranks, last E-step (natural log, total) */
  double estep_seconds, reduce_seconds, mstep_seconds;
  const char *reduce_path; /* "nccl", "host-raw", "host-accs" or "none" (R = 1) */
  const char *commit_path; /* where blocks are added in double-double: "device", "host-raw", "host-accs" */
  gh_dd_acc hdd;          /* host double-double master (no acc_commit) */
  gh_accs_set blk;        /* one block's fetched accumulators (no acc_raw_*) */
  int have_blk;
} gh_dist_em;

/* Uploads the shard's blocks (one gh_dev_data each); model, sd and comm
 * must outlive em.  max_device_bytes > 0 (--max-device-memory): when the
 * blocks' frames and pairs (backend.h data_bytes) exceed it and the backend
 * can evict data (data_evict / data_reload: CUDA, OpenCL), the first blocks
 * that fit in max_device_bytes minus two of the largest block stay
 * resident and the others are streamed: kept in page-locked host memory
 * and uploaded for their E-step, the next one's copy overlapping the
 * current one's E-step (at most two streamed blocks on the device), with
 * the same bytes of accumulators as the resident run.  Backends without
 * these ops (CPU: the data is in host memory anyway) ignore the limit. */
void gh_dist_em_init(gh_dist_em *em, gh_comm *comm, gh_backend *b, gh_gmm_set *model, const gh_shard_data *sd,
                     int64_t max_device_bytes);
/* E-step and reduction with the current model.  accs NULL: the reduced
 * accumulators stay where the M-step will use them (on the device when
 * the backend re-estimates there); else *accs gets them (gh_accs_init
 * here, caller frees; total_frames / total_loglike over all ranks) and
 * *model is synced.  Returns the average log-likelihood per (weighted)
 * frame over all ranks (natural log). */
double gh_dist_em_estep(gh_dist_em *em, gh_accs_set *accs);
/* The shrinkage statistics (lib/gmm/shrink.h) of every rank's blocks,
 * combined as the E-step's (block by block in double-double, reduced over
 * the ranks, rounded once), written over accs' shrink arrays; the centres
 * are already set (gh_accs_shrink_init). */
void gh_dist_em_acc_shrink(gh_dist_em *em, gh_accs_set *accs);
/* M-step after gh_dist_em_estep with the same accs argument; adds the
 * counts to *st (may be NULL). */
void gh_dist_em_mstep(gh_dist_em *em, const gh_est_opts *eo, const gh_accs_set *accs, gh_est_stats *st);
/* Make *model current (model_fetch after device M-steps). */
void gh_dist_em_sync(gh_dist_em *em);
/* 64-bit hash of the current model, for the per-iteration check that
 * every rank holds the same model: after a device M-step the backend's
 * model_hash (no fetch), else gh_gmm_set_hash of the host model (fetched
 * first where the device holds the current one).  Ranks compare values
 * of the same method: they take the same path, as their M-steps do. */
uint64_t gh_dist_em_model_hash(gh_dist_em *em);
/* The caller changed *model on the host (mix-up): drops the device copy. */
void gh_dist_em_model_changed(gh_dist_em *em);
void gh_dist_em_free(gh_dist_em *em);

/* Stopping by tolerance (--tol of gmm-train, gmm-est-gpu, hmm-train): fed
 * each iteration's average log-likelihood per frame (natural log) of the
 * model before that iteration's update (the E-step's), the monitor says
 * converged once it improved by less than tol over the previous
 * iteration's (cur - prev < tol, a decrease included: hmmlearn's
 * ConvergenceMonitor on the total log-likelihood; scikit-learn's
 * GaussianMixture tests |change of the mean per-sample lower bound| < tol,
 * the same for EM, whose likelihood does not decrease).  The first
 * iteration never converges; tol <= 0 never does (--num-iters iterations).
 * The value fed is the reduced one, the same on every rank, so every rank
 * decides the same; gmm-train's is also the same for every rank count. */
typedef struct {
  double tol;      /* <= 0: off */
  double prev;     /* last value fed */
  int have_prev;
  int converged;   /* set by the iteration that converged */
  int32_t iters;   /* values fed */
  double change;   /* cur - prev of the last value fed (0 for the first) */
} gh_em_monitor;
void gh_em_monitor_init(gh_em_monitor *m, double tol);
/* Feeds one iteration's value; returns m->converged (1: stop after this
 * iteration's M-step). */
int gh_em_monitor_report(gh_em_monitor *m, double avg_loglike_per_frame);
/* The log line's end: "converged after N iterations (change X < tol T)" or
 * "not converged after N iterations (...)" into buf. */
void gh_em_monitor_describe(const gh_em_monitor *m, char *buf, size_t n);

/* The EM options shared by gmm-train and gmm-est-gpu: --tol (gh_em_monitor)
 * and the mix-up after iteration 1's M-step (gh_gmm_set_mixup: --mix-up,
 * --power, --min-count, --perturb-factor, --seed; Kaldi's defaults 0.2, 20,
 * 0.01).  _register sets the defaults and registers the six options. */
typedef struct {
  double tol;                       /* <= 0: run --num-iters iterations */
  int64_t mix_up;                   /* total Gaussians after iteration 1 (0: none) */
  double power, min_count, perturb;
  int32_t seed;                     /* of the mix-up's perturbations (the same on every rank) */
} gh_em_tool_opts;
struct gh_opts;
void gh_em_tool_opts_register(struct gh_opts *po, gh_em_tool_opts *o);
/* The mix-up of iteration 1 (call after its M-step, accs its accumulators):
 * grows em's model to o->mix_up Gaussians with per-pdf occupancies from
 * accs and the perturbations from rng (seeded o->seed once), tells em the
 * model changed and logs "mixed up from A to B Gaussians"; warns and does
 * nothing when o->mix_up is not above the current total. */
void gh_dist_em_mixup(gh_dist_em *em, const gh_em_tool_opts *o, const gh_accs_set *accs, gh_rng *rng);

/* 64-bit hash of a model's parameters (shapes, weights, gconsts,
 * means_invvars, inv_vars): the per-iteration check that every rank holds
 * the same model bytes. */
uint64_t gh_gmm_set_hash(const gh_gmm_set *s);

/* Accumulators <-> one flat double array (the reduction's buffer): per pdf
 * occupancy [G], mean_accs [G x D], var_accs [G x S]; then total_loglike,
 * total_frames.  Shrinkage statistics separately (shrink = 1: only the
 * shrink arrays).  gh_accs_flat_size gives the length. */
size_t gh_accs_flat_size(const gh_accs_set *a, int shrink);
void gh_accs_flatten(const gh_accs_set *a, int shrink, double *out);
void gh_accs_unflatten(gh_accs_set *a, int shrink, const double *in);

#endif
