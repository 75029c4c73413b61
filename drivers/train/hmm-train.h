/* hmm-train.h -- resident multi-iteration HMM-GMM training (Baum-Welch or
 * Viterbi), one process or one rank of R: the loop of
 * egs/steps/train_word_hmm.sh (gmm-score-gpu | hmm-bw -> gmm-acc-stats-gpu
 * --label-type=post -> hmm-sum-accs, gmm-sum-accs -> hmm-est, gmm-est
 * --mix-up) and of egs/steps/train_word_hmm_viterbi.sh (gmm-score-gpu |
 * hmm-viterbi on the realignment iterations -> gmm-est-gpu --label-type=ali
 * --mix-up) inside one program that reads the features once.
 *
 * Data layout (doc/hmm-train.md): the utterances that have a transcript are
 * taken in sorted-key order (strcmp) and cut into fixed frame blocks at
 * utterance boundaries and shards of contiguous blocks balanced by frames
 * (drivers/train/shard.h gh_shard_plan).  Every fp32 computation (loglikes, forward-backward /
 * Viterbi, the E-step of the GMMs) runs on whole blocks, so it is the same
 * arithmetic whatever R is; per block the GMM accumulators are fetched in
 * double and added in block order, the transition counts in utterance
 * order, and the R ranks' sums are combined by the caller's reduction (in
 * rank order: gh_comm_sum_f64), so R changes only the double rounding of
 * that last sum.  Within a block the utterances are ordered by score group:
 * utterances whose graphs use the same set of pdfs (a word's states) are
 * scored together against a model of only those pdfs.
 *
 * Per iteration: the current GMM set is uploaded (all pdfs for the E-step,
 * one sub-model per score group for the loglikes); per block, each score
 * group's loglikes of its pdfs (gh_backend_loglikes_rows: from the block's
 * frames on the device where the backend has loglikes_data; host output),
 * side by side in one matrix, then one forward-backward for the block's
 * utterances (gh_backend_hmm_fb_pairs: state occupancies and transition
 * counts, the per-frame pdf posteriors -- summed over the states of each
 * pdf, those below min_post dropped, hmm-bw's rule -- made where gamma is)
 * or Viterbi (hmm_viterbi: best path, the alignment as pairs) on the
 * graphs of the block's distinct transcripts, compiled once per distinct
 * transcript and uploaded once per block (Baum-Welch: compiled again after
 * each transition update and reweighted in place, gh_backend_hmm_reweight);
 * the block's frames went to the backend once, its (frame, pdf) pairs are
 * replaced every iteration (gh_backend_data_pairs: data_set_pairs, or a
 * new upload on a backend without it) and one accumulate() gives the
 * block's GMM statistics.  The loglikes and the pairs still pass through
 * host memory (doc/hmm.md, "What still crosses to the host").  Then the
 * reduction, the transition update (Rabiner eqs. 40a-c, gh_hmm_update; Baum-Welch only),
 * the GMM M-step (the backend's mstep, else gh_gmm_set_update: Kaldi's MleDiagGmmUpdate /
 * MleFullGmmUpdate) and the mix-up (gh_gmm_set_mixup with the random
 * generator seeded afresh from seed each iteration, as gmm-est and
 * gmm-est-gpu seed theirs each process).  Every rank computes the same
 * update from the same reduced bytes, so every rank holds the same model.
 */
#ifndef GH_HMM_TRAIN_H
#define GH_HMM_TRAIN_H
#include <stddef.h>
#include <stdint.h>
#include "registry/registry.h"
#include "gmm/gmm-est.h"
#include "gmm/gmm.h"
#include "hmm/hmm.h"

typedef enum { GH_HMM_TRAIN_BW = 0, GH_HMM_TRAIN_VITERBI = 1 } gh_hmm_train_mode;

/* "bw" | "viterbi" -> *m; 0, or -1 if unknown. */
int gh_hmm_train_mode_parse(const char *s, gh_hmm_train_mode *m);

typedef struct {
  gh_hmm_train_mode mode;
  /* transcripts: the HMM of an utterance is the concatenation of its words'
   * HMMs, with optional silence (gh_hmm_compile_transcript_edges) */
  const char *silence;        /* name of the optional silence HMM, or NULL/"" */
  double silence_prob;        /* optional silence's probability (default 0.5) */
  double edge_silence_prob;   /* first/last silence; <= 0: silence_prob (default 0) */
  double min_post;            /* Baum-Welch: pdf posteriors below this are dropped (default 1e-6, hmm-bw's) */
  int update_transitions;     /* Baum-Welch: re-estimate transitions each iteration (default 1) */
  gh_hmm_update_opts uo;      /* transition update options (hmm-est's defaults) */
  gh_est_opts eo;             /* GMM M-step options (gmm-est's defaults) */
  /* mix-up schedule of steps/train_word_hmm.sh: at iteration it with
   * mixup_start <= it <= mixup_end and gauss > 1 the set is mixed up to
   * P + floor(P (gauss - 1) k / n) Gaussians (P pdfs, k = it - mixup_start + 1,
   * n = mixup_end - mixup_start + 1), after that iteration's M-step */
  int32_t gauss, mixup_start, mixup_end;
  double power, min_count, perturb; /* gh_gmm_set_mixup (Kaldi's 0.2, 20, 0.01) */
  int32_t seed;               /* mix-up perturbation seed, reseeded each iteration */
  /* Viterbi: the iterations that realign (others reuse the last alignment);
   * realign[it] != 0, for it < num_realign; the first iteration of a run
   * always aligns (there is no earlier alignment) */
  const uint8_t *realign;
  int32_t num_realign;
  int64_t block_frames;       /* target frames per block, 1 .. 2^30 (default 65536, as gmm-train); the
                                 blocks decide the arithmetic, so keep it when comparing runs */
  int32_t max_score_groups;   /* score groups (distinct pdf sets) allowed before every utterance
                                 is scored against all pdfs (default 64; 0: always all pdfs) */
  int64_t max_device_bytes;   /* > 0 (--max-device-memory): device memory for this rank's blocks of
                                 frames and pairs of the GMM E-step; the blocks in key order are kept
                                 resident while they fit in it less room for two more, the rest are
                                 evicted after their E-step and uploaded again each iteration (from
                                 page-locked host memory, while the block is scored and aligned),
                                 with the resident run's results bit for bit (backend.h data_evict);
                                 0 (default): all resident.  Backends without data_evict keep
                                 everything on the host anyway (logged). */
} gh_hmm_train_opts;

/* Defaults as listed above (mode bw, no mix-up: gauss 1). */
void gh_hmm_train_opts_default(gh_hmm_train_opts *o);

/* What one iteration reports (after the reduction: the same on every rank). */
typedef struct {
  double gmm_loglike, gmm_frames;   /* sum of weight * log p(x|pdf) of the E-step and the sum of weights
                                       (natural log, totals: avg = gmm_loglike / gmm_frames) */
  double hmm_loglike, hmm_frames;   /* log P(O) (Baum-Welch) or best-path log-probability (Viterbi)
                                       summed over the utterances with a path, and their frames */
  double num_utts, num_failed;      /* utterances with a path / without one (skipped this iteration) */
  int aligned;                      /* Viterbi: 1 if this iteration realigned */
  int64_t num_gauss_before, num_gauss; /* Gaussians before the mix-up and after the iteration */
  int64_t trans_updated, trans_kept;   /* gh_hmm_update's counts (Baum-Welch) */
  gh_est_stats st;                  /* the M-step's counts */
  double seconds, estep_seconds;    /* wall time of the iteration and of its E-step part (this rank) */
  double reduce_seconds;            /* wall time of the reduction (this rank; includes waiting) */
  int mstep_on_device;              /* the GMM M-step ran on the device (backend mstep; else on the host) */
  double mstep_seconds;             /* wall time of the GMM M-step (with the model's fetch from the device) */
  /* the E-step's parts (this rank, wall time): the transcripts' graphs compiled again and reweighted (Baum-Welch,
   * after the transitions changed), model uploads, loglikes (host output), forward-backward with the pdf
   * posteriors or Viterbi (host loglikes in, pairs / paths out), the pairs' pdf ids and the alignment's pairs on
   * the host, and the GMM E-step per block (the pairs to the backend, accumulate, acc_commit) */
  double graphs_seconds, upload_seconds, loglike_seconds, hmm_seconds, pairs_seconds, accumulate_seconds;
  double setpairs_seconds;          /* of accumulate_seconds: the pairs to the backend (data_set_pairs or upload) */
} gh_hmm_train_iter_stats;

typedef struct gh_hmm_trainer gh_hmm_trainer;
struct gh_comm;
struct gh_device_opts;

/* Loads this rank's shard of feats_rspec (drivers/train/shard.h: every rank
 * reads the table of contents; utterances without frames or without an
 * entry in the transcripts table transcripts_rspec are warned about and
 * skipped; transcripts_rspec NULL: every utterance is the set's single HMM,
 * and a set of more than one HMM dies), compiles its utterances' graphs and uploads them.  comm: the
 * ranks (drivers/train/comm.h; NULL: one process); the reduction is
 * gh_comm_sum_f64.  set and model are the caller's, the same on every rank,
 * and are updated in place by gh_hmm_trainer_iter.  Dies (one line naming
 * the table and key) on features of another dimension than the model's,
 * non-finite features, a transcript word that is not an HMM of the set, a
 * set using more pdfs than the model has, and when no utterance is left.
 * The backend: dev's start (gh_device_opts_begin, train/device-opts.h) is
 * ended once the features are read (gh_device_opts_end: dev's precision
 * set), so the device starts while they are (as gmm-train's); *bp is
 * set to it (the trainer uses it; the caller frees it after the trainer). */
gh_hmm_trainer *gh_hmm_trainer_new(struct gh_device_opts *dev, gh_backend **bp, struct gh_comm *comm, gh_hmm_set *set,
                                   gh_gmm_set *model, const char *feats_rspec, const char *transcripts_rspec,
                                   const gh_hmm_train_opts *o);
/* Number of utterances / frames used in the whole data and in this rank's shard;
 * blocks in the whole data and this rank's first block and block count. */
void gh_hmm_trainer_sizes(const gh_hmm_trainer *t, int64_t *utts, int64_t *frames, int64_t *rank_utts,
                          int64_t *rank_frames, int64_t *num_blocks, int64_t *rank_block0, int64_t *rank_blocks);
/* "shard S (utterances a..b of N, ...)" of rank r into buf (gh_shard_describe). */
void gh_hmm_trainer_describe_shard(const gh_hmm_trainer *t, int r, char *buf, size_t n);
/* One training iteration numbered it (1-based; the mix-up schedule and the
 * realignment list use it): E-step on this rank's blocks, reduction,
 * transition update (Baum-Welch), GMM M-step and mix-up, leaving the
 * updated set and model in the caller's structs.  Fills *st. */
void gh_hmm_trainer_iter(gh_hmm_trainer *t, int32_t it, gh_hmm_train_iter_stats *st);
void gh_hmm_trainer_free(gh_hmm_trainer *t);

/* The mix-up target of iteration it for a set of num_pdfs pdfs (0: no
 * mix-up this iteration); the formula of steps/train_word_hmm.sh (see
 * gh_hmm_train_opts). */
int64_t gh_hmm_train_mixup_target(const gh_hmm_train_opts *o, int32_t num_pdfs, int32_t it);

#endif
