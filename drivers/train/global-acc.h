/* global-acc.h -- the utterance loops of Kaldi's global-GMM tools over a
 * backend (gmm-gselect, gmm-global-get-post, *-get-frame-likes,
 * *-acc-stats): scoring blocks of utterances with the loglikes kernel, and
 * gmm-global-acc-stats' accumulation (dense E-step or acc_gselect). */
#ifndef GH_GLOBAL_ACC_H
#define GH_GLOBAL_ACC_H
#include <stdint.h>
#include "registry/registry.h"
#include "gmm/gmm.h"
#include "gmm/gselect.h"

/* Utterance loop of the selection tools: reads feats_rspec sequentially,
 * gathers utterances into blocks of about block_frames frames (at most
 * 2^24 / P, so a block's log-likelihoods take at most 64 MB; an
 * utterance is never split), scores each block with backend model m (P
 * output columns per frame: loglikes op) and calls fn(ctx, key, T, X, ll)
 * for every utterance in reading order, X [T x D] its frames and ll [T x P]
 * its log-likelihoods.  Features are checked finite and of dimension dim
 * (dies naming the rspecifier and key).  Empty utterances get fn with T 0.
 * Block buffers come from gh_backend_host_alloc (pinned on CUDA). */
typedef void (*gh_utt_fn)(void *ctx, const char *key, int32_t T, const float *X, const float *ll);
void gh_score_utts(gh_backend *b, gh_dev_model *m, int32_t P, int32_t dim, const char *feats_rspec,
                   int64_t block_frames, gh_utt_fn fn, void *ctx);

/* Accumulation of Kaldi's gmm-global-acc-stats / fgmm-global-acc-stats
 * (gmmbin/gmm-global-acc-stats.cc, fgmmbin/fgmm-global-acc-stats.cc) over
 * the backend started by gh_device_opts_begin(dev) (train/device-opts.h;
 * ended here, after the input is read and checked, and returned in *bp for
 * the caller to free): every utterance of feats_rspec (dimension gmm->dim), frame
 * weights from weights_rspec (per-utterance float vectors; NULL/"" all 1);
 * with gselect_rspec (per-utterance gselect lists, random access): the
 * posteriors over each frame's selected Gaussians only (acc_gselect op),
 * else over all Gaussians (the dense E-step, gh_data_estep).  Utterances
 * without weights or gselect entries, or whose entry has the wrong length,
 * are skipped with a warning and counted in *num_err, as Kaldi does.  accs:
 * zeroed here, shaped like gmm, flags = gh_gmm_flags_augment(flags).
 * *tot_like: sum of weight x frame log-likelihood (natural log), *tot_t:
 * sum of weights.  Dies if no frame is left. */
struct gh_device_opts;
void gh_global_acc(struct gh_device_opts *dev, gh_backend **bp, const gh_gmm *gmm, const char *feats_rspec,
                   const char *gselect_rspec, const char *weights_rspec, uint32_t flags, gh_gmm_accs *accs, int32_t *num_done,
                   int32_t *num_err, double *tot_like, double *tot_t);

#endif
