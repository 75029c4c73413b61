/* global-tools.h -- the shared bodies of Kaldi's global-GMM tools that
 * come in a diagonal and a full-covariance twin (gmmbin/gmm-global-X and
 * fgmmbin/fgmm-global-X).  Each twin is a short main in tools/ (its usage
 * text, the options that apply to its covariance type, the arguments) that
 * calls one function here with its covariance type; nothing here parses a
 * command line.  Messages and file formats are Kaldi's (doc/kaldi.md).
 * Every function dies (gh_die: one line naming the file and key) on bad
 * input and returns the tool's exit status. */
#ifndef GH_GLOBAL_TOOLS_H
#define GH_GLOBAL_TOOLS_H
#include "gmm/gmm-est.h"
#include "gmm/gmm.h"
#include "train/device-opts.h"

/* gmm-global-acc-stats / fgmm-global-acc-stats: the options. */
typedef struct {
  int binary;               /* --binary (1) */
  const char *update_flags; /* --update-flags ("mvw") */
  const char *gselect;      /* --gselect rspecifier ("" = every Gaussian) */
  const char *weights;      /* --weights rspecifier ("" = weight 1) */
  gh_device_opts dev;       /* --device */
} gh_global_acc_args;

/* <model-in> <feature-rspecifier> <stats-out>: the global GMM of type
 * `type` in model_in (dies naming the file otherwise), accumulated over
 * every utterance (gh_global_acc: the dense E-step, or posteriors over each
 * frame's --gselect list only), the accumulator written as <GMMACCS>.
 * Logs the average log-likelihood per (weighted) frame, natural log.
 * Returns 0. */
int gh_global_acc_stats(gh_covtype type, gh_global_acc_args *a, const char *model_in, const char *feats,
                        const char *stats_out);

/* gmm-sum-accs (global_type < 0: any accumulator), gmm-global-sum-accs
 * (GH_COV_DIAG) and fgmm-global-sum-accs (GH_COV_FULL): out := the sum of
 * the num_in >= 1 accumulator files in[] (lib/gmm/accs.c gh_accs_add, which
 * dies naming the file on a shape mismatch); with global_type >= 0 the
 * first input must be a global-GMM accumulator of that type (dies naming it
 * otherwise).  out may be "-" (stdout, for the rxfilename pipe
 * "gmm-global-sum-accs - 1.*.acc |").  Returns 0. */
int gh_sum_accs(int global_type, int binary, const char *out, int num_in, const char *const *in);

/* gmm-global-copy / fgmm-global-copy (to == from), gmm-global-to-fgmm
 * (diag -> full, gh_gmm_diag_to_full: Kaldi FullGmm::CopyFromDiagGmm) and
 * fgmm-global-to-gmm (full -> diag, gh_gmm_full_to_diag: Kaldi
 * DiagGmm::CopyFromFullGmm): the global GMM of type `from` in model_in
 * (dies naming the file otherwise), written to model_out as Kaldi's
 * global-GMM file of type `to`.  Returns 0. */
int gh_global_convert(gh_covtype from, gh_covtype to, int binary, const char *model_in, const char *model_out);

/* gmm-global-est / fgmm-global-est: the options. */
typedef struct {
  int binary;               /* --binary (1) */
  const char *update_flags; /* --update-flags ("mvw") */
  int32_t mix_up;           /* --mix-up: target number of Gaussians (0 = none) */
  double perturb;           /* --perturb-factor (0.01) */
  const char *write_occs;   /* --write-occs ("" = none) */
  gh_est_opts eo;           /* the M-step's options (gh_est_opts_register_cov) */
} gh_global_est_args;

/* <model-in> <stats-in> <model-out>: one M-step of the global GMM of type
 * `type` from its accumulators (gh_gmm_update: Kaldi's MleDiagGmmUpdate /
 * MleFullGmmUpdate; without "w" in --update-flags the old weights are kept
 * when no Gaussian was removed), then optional mixing up (gh_gmm_split).
 * Dies if the accumulators' type or shape differs from the model's, or
 * lack the statistics --update-flags asks for.  Logs the objective
 * function change per frame.  Returns 0. */
int gh_global_est(gh_covtype type, const gh_global_est_args *a, const char *model_in, const char *stats_in,
                  const char *model_out);

/* gmm-global-get-frame-likes / fgmm-global-get-frame-likes: the options. */
typedef struct {
  int average;         /* --average: one float per utterance (its mean) instead of a vector */
  const char *gselect; /* --gselect rspecifier ("" = every Gaussian) */
  gh_device_opts dev;  /* --device */
} gh_global_likes_args;

/* <model-in> <feature-rspecifier> <likes-out-wspecifier>: per frame the
 * log-likelihood (natural log) of the global GMM of type `type`, as one
 * float vector [frames] per utterance, or its average (--average); with
 * --gselect the log-sum over each frame's selected Gaussians only
 * (acc_gselect op).  An utterance without a gselect entry, or with one of
 * the wrong length, is warned about and skipped.  Returns 0 if any
 * utterance was done, else 1. */
int gh_global_get_frame_likes(gh_covtype type, gh_global_likes_args *a, const char *model_in, const char *feats,
                              const char *likes_out);

/* gmm-global-gselect-to-post / fgmm-global-gselect-to-post: the options. */
typedef struct {
  float min_post;     /* --min-post (0 = no pruning) */
  gh_device_opts dev; /* --device */
} gh_global_post_args;

/* <model-in> <feature-rspecifier> <gselect-rspecifier> <post-wspecifier>:
 * per frame the posteriors of the global GMM of type `type` over the
 * frame's Gaussian-selection list (acc_gselect op), pruned below
 * --min-post and renormalised (the largest kept if all fall below), in the
 * list's order, as a Posterior archive.  Utterances without gselect
 * entries, with wrong-length ones or with a bad posterior sum are warned
 * about and skipped.  Returns 0 if any utterance was done, else 1. */
int gh_global_gselect_to_post(gh_covtype type, gh_global_post_args *a, const char *model_in, const char *feats,
                              const char *gselect, const char *post_out);

#endif
