/* am-train.h -- resident acoustic-model training of a Kaldi .mdl (TransitionModel
 * + diagonal GMMs, a tree), one process or one rank of R: the loop of Kaldi's
 * steps/train_mono.sh inside one program that reads the features and compiles
 * the training graphs once.  The schedule is a stage (GH_AM_STAGE_MONO now; the
 * context-dependent stages of steps/train_deltas.sh take the same loop with a
 * tree built from the alignments).
 *
 * Schedule of the mono stage (train_mono.sh, its option names in the tool):
 *   pass 0: equal alignment (Kaldi's EqualAlign with Kaldi's random numbers,
 *           lib/decoder/training-graph.h gh_equal_align), accumulate with the
 *           initial model, estimate with --min-gaussian-occupancy=3 (later
 *           passes: eo's, Kaldi's 10) and the mix-up target numgauss (= the
 *           initial number: nothing to do);
 *   pass x = 1 .. num_iters-1: if x is in realign: align with the model whose
 *           silence pdfs' weights are scaled by boost_silence (gmm-boost-silence,
 *           gconsts recomputed as Kaldi does), beam initial_beam at x = 1 and
 *           regular_beam after, retry_beam once on failure, careful; an
 *           utterance without an alignment is left out until the next
 *           realignment (as gmm-acc-stats-ali skips keys missing from
 *           ali.JOB.gz); accumulate (GMM statistics on the backend, transition
 *           counts on the host); estimate (transitions: Kaldi's MleUpdate with
 *           floor 0.01, min count 5; GMMs: eo; a pdf without data reduced to its
 *           last Gaussian, as gmm-est); occupancies before the mix-up kept as
 *           x+1.occs; mix up to numgauss(x) = n0 + min(x-1, max_iter_inc) *
 *           floor((totgauss - n0) / max_iter_inc) (n0: the initial Gaussians),
 *           power, min count 20, perturbation 0.01: Kaldi's SplitByCount on every
 *           pass (it splits pdfs below their share even when the total is
 *           reached) with rand() seeded 1 + seed each pass, as gmm-est on a .mdl
 *           (kaldi_mixup; 0: gh_gmm_set_mixup with gh_rng seeded seed).
 *   The model after pass num_iters-1 is num_iters.mdl = final.mdl.
 *
 * Data layout: the utterances with frames and a transcript, in sorted-key order,
 * cut into fixed frame blocks (drivers/train/shard.h: the blocks depend on the
 * data and block_frames only) and into R shards of whole blocks.  Each rank keeps
 * its blocks' frames resident on its backend (gh_dist_em), its utterances'
 * graphs and alignments in memory; a realignment replaces the blocks' (frame,
 * pdf) pairs (data_set_pairs: the frames are not uploaded again).  The E-step
 * runs block by block and adds each block's double statistics in double-double
 * (gh_dist_em), the transition counts are integers summed in double: the
 * reduced statistics, hence every model, do not depend on R (bit for bit).
 * Against the script: gmm-acc-stats-ali accumulates one job's frames in one
 * call and gmm-sum-accs adds the jobs in double, so the statistics differ in
 * float rounding only (the "job-split tolerance": per-pass log-likelihoods
 * within ~1e-5 relative while the alignments are the same; a differently
 * rounded model can flip a near-tie in an alignment, after which the runs
 * differ as two train_mono.sh runs with different --nj do).
 *
 * The aligner is an interface (gh_am_aligner): the CPU decoder of lib/decoder
 * (Kaldi's FasterDecoder semantics), or the batched exact aligner of
 * drivers/align on the backend (gmm-train-mono --exact); it is
 * given every utterance of the rank at once, with its resident frames.  The
 * CPU aligner scores the GMMs of consecutive utterances of a block in one
 * backend call (drivers/align/score-block.h; from the resident frames where the
 * backend has loglikes_data), then decodes them on the OpenMP threads (one
 * decoder each; the results do not depend on the threads); GH_AM_SCORE=utt
 * in the environment scores each utterance alone, as gmm-align-compiled
 * --block-frames=1 does (the same values: the test compares the models).
 */
#ifndef GH_AM_TRAIN_H
#define GH_AM_TRAIN_H
#include <stdint.h>
#include "backend.h"
#include "base/opts.h"
#include "decoder/faster-decoder.h"
#include "gmm/gmm-est.h"
#include "gmm/gmm.h"
#include "hmm/transition.h"
#include "io/fst.h"
#include "tree/context-dep.h"
#include "tree/questions.h"
#include "tree/tree-stats.h"
#include "train/comm.h"
#include "train/device-opts.h"

/* GH_AM_STAGE_MONO: gh_am_trainer_new initialises (gmm-init-mono when the
 * model is empty), compiles the graphs and equal-aligns.  GH_AM_STAGE_TRI:
 * gh_am_trainer_new only reads the features; the alignments come from
 * gh_am_trainer_read_ali, the tree and model from gh_am_build_tri, the graphs
 * from gh_am_trainer_retree (steps/train_deltas.sh: see there). */
typedef enum { GH_AM_STAGE_MONO = 0, GH_AM_STAGE_TRI = 1 } gh_am_stage;

typedef struct {
  gh_am_stage stage;
  int32_t num_iters;          /* 40: the final model is num_iters.mdl */
  int32_t max_iter_inc;       /* 30: last pass that raises the Gaussians */
  int64_t totgauss;           /* 1000: target number of Gaussians */
  float boost_silence;        /* 1.0: factor on the silence pdfs' weights for alignment */
  const uint8_t *realign;     /* realign[x] != 0 for x < num_realign: pass x aligns */
  int32_t num_realign;
  double power;               /* 0.25: Gaussians per pdf ~ occupancy^power */
  float initial_beam, regular_beam, retry_beam; /* 6, 10, 40 */
  int careful;                /* 0: Kaldi's --careful */
  float transition_scale, acoustic_scale, self_loop_scale; /* 1.0, 0.1, 0.1 (scale_opts) */
  double pass0_min_gaussian_occupancy; /* 3 */
  gh_est_opts eo;             /* the other passes' GMM update (gmm-est's defaults) */
  double min_count, perturb;  /* mix-up (gmm-est's 20, 0.01) */
  int32_t seed;               /* 0 (gmm-est --seed) */
  float trans_floor, trans_min_count; /* 0.01, 5 (gmm-est) */
  const int32_t *silence_phones; /* lang/phones/optional_silence.csl */
  int32_t num_silence_phones;
  int64_t block_frames;       /* 65536 */
  int kaldi_mixup;            /* 1: Kaldi's SplitByCount with rand() seeded 1 + seed, called every pass (gmm-est
                                 on a .mdl); 0: gh_gmm_set_mixup (gh_rng seeded seed) when the target grows */
  int64_t numgauss0;          /* > 0: the mix-up schedule's start (train_deltas.sh: num_leaves), else the
                                 model's Gaussians at gh_am_trainer_new / gh_am_trainer_retree */
} gh_am_train_opts;
void gh_am_train_opts_default(gh_am_train_opts *o);

/* ---- the options of the trainer tools (gmm-train-mono, gmm-train-tri) ----
 * Both tools take the scripts' options with the scripts' names; the ones
 * they share are registered here, once, with one help text each; a tool's
 * own options (gmm-train-mono: --totgauss, --initial-beam, --regular-beam,
 * --exact, --batch-size; gmm-train-tri: --cluster-thresh, --beam,
 * --context-width, --central-position, --mono*) are registered by the tool
 * from the hook, at the slot where its --help lists them. */
typedef struct {
  gh_am_train_opts am;        /* the schedule: gh_am_train_opts_default, then the stage's defaults */
  const char *realign_iters;  /* --realign-iters: the script's realign_iters (pass numbers, ' ' or ',') */
  const char *cmvn_opts;      /* --cmvn-opts: "" (written to <exp-dir>/cmvn_opts) */
  const char *delta_opts;     /* --delta-opts: "" */
  const char *feats;          /* --feats: "" (the data directory's pipeline, gh_am_feats_rspec) */
  gh_device_opts dev;         /* --device, --precision */
  gh_comm_opts comm;          /* --comm, --comm-timeout */
  uint8_t *realign_flags;     /* set by gh_am_tool_opts_check: am.realign's memory */
} gh_am_tool_opts;

/* The slots of the shared list where a tool's own options go (in --help
 * order): after --num-iters and --max-iter-inc; after --boost-silence,
 * --realign-iters, --power; after --careful (the tool's beams); after
 * --retry-beam and the three alignment scales; after --cmvn-opts,
 * --delta-opts, --feats, --seed; after --block-frames (before --device,
 * --precision, --comm, --comm-timeout). */
typedef enum {
  GH_AM_OPTS_AT_SCHEDULE,
  GH_AM_OPTS_AT_POWER,
  GH_AM_OPTS_AT_BEAMS,
  GH_AM_OPTS_AT_SCALES,
  GH_AM_OPTS_AT_SEED,
  GH_AM_OPTS_AT_BLOCK,
  GH_AM_OPTS_NUM_SLOTS
} gh_am_opts_slot;

/* The defaults of Kaldi's script of the stage: GH_AM_STAGE_MONO
 * (train_mono.sh: num_iters 40, max_iter_inc 30, totgauss 1000,
 * realign_iters "1 2 .. 10 12 .. 20 23 .. 38", beams 6, 10, 40) or
 * GH_AM_STAGE_TRI (train_deltas.sh: num_iters 35, max_iter_inc 25,
 * realign_iters "10 20 30", Kaldi's mix-up); boost_silence 1, power 0.25,
 * the scales 1, 0.1, 0.1, block_frames 65536, strings "", --device auto,
 * --comm auto. */
void gh_am_tool_opts_default(gh_am_tool_opts *o, gh_am_stage stage);
/* Registers the shared options on po (o's current values are the defaults
 * --help shows; o must outlive the parse), calling own(po, slot, ctx) at
 * each slot in order (own may be NULL), and the --device/--precision and
 * --comm validators. */
void gh_am_tool_opts_register(gh_opts *po, gh_am_tool_opts *o,
                              void (*own)(gh_opts *po, gh_am_opts_slot at, void *ctx), void *ctx);
/* After parsing: dies with one line naming the option on --num-iters <
 * min_iters, --max-iter-inc < 1, --boost-silence <= 0, --block-frames < 1
 * or a bad --realign-iters; sets am.realign / am.num_realign
 * (realign_flags, freed by gh_am_tool_opts_free). */
void gh_am_tool_opts_check(gh_am_tool_opts *o, int32_t min_iters);
/* The pass flags of an iteration list ("1 2 3", ' ', ',' or tab
 * separated, each 1 .. 4095): [*n = 4096] bytes, 1 at the listed passes
 * (malloc'd).  Dies naming `option` and the list on anything else. */
uint8_t *gh_am_parse_iters(const char *s, const char *option, int32_t *n);
void gh_am_tool_opts_free(gh_am_tool_opts *o);

/* ---- the aligner interface ---- */
typedef struct {
  const char *key;
  int32_t T;                  /* frames */
  const float *X;             /* host frames [T x dim] (the block's copy) */
  gh_dev_data *dd;            /* the block resident on the backend (frames from row row0), may be NULL */
  int32_t row0;
  gh_dec_graph *graph;        /* the utterance's graph: arcs' weights are the aligner's to set */
  const float *base_weight;   /* [graph->num_arcs] the graph's own costs (lexicon), before transitions */
  /* out */
  int32_t *ali;               /* [T] transition-ids (the caller's memory) */
  int ok, retried;            /* aligned; needed the retry beam */
  double like;                /* log-likelihood of the path (natural log, total; acoustics unscaled) */
} gh_am_align_utt;

typedef struct {
  gh_backend *b;
  gh_dev_model *dm;           /* the alignment model (boosted) on b */
  const gh_gmm_set *model;    /* its host copy */
  const float *tlp;           /* [num_tids + 1] scaled transition log-probs (Kaldi's GetScaledTransitionLogProb) */
  float beam, retry_beam, acoustic_scale;
} gh_am_align_params;

typedef struct gh_am_aligner {
  const char *name;
  void *ctx;
  /* Aligns u[0 .. n): for each, graph arc weights := base_weight + -tlp[ilabel]
   * (float), per-frame loglikes of the model, best path with beam (then
   * retry_beam once if no final state was reached, retry_beam > 0); fills ali,
   * ok, retried, like.  Returns seconds spent scoring the GMMs (of the total). */
  double (*align)(struct gh_am_aligner *a, const gh_am_align_params *p, gh_am_align_utt *u, int32_t n);
  void (*free)(struct gh_am_aligner *a);
} gh_am_aligner;
/* The CPU aligner: lib/decoder's FasterDecoder per utterance (the loglikes from
 * the backend, gh_backend_loglikes_rows, a block's run of utterances at a time),
 * as gmm-align-compiled. */
gh_am_aligner *gh_am_aligner_cpu(void);
/* The batched exact aligner (drivers/align/align-batch.h: the backend's
 * align_batch, batch_size utterances at a time, loglikes scored as the CPU
 * aligner's): exact Viterbi, no pruning (the params' beams ignored), the
 * alignments and likelihoods of the CPU aligner with an infinite beam
 * (GH_DEC_EXACT); an utterance fails only when no path of its frames
 * exists (too few frames for its transcript).  retried is always 0. */
gh_am_aligner *gh_am_aligner_exact(int32_t batch_size);

/* ---- Kaldi's gmm-init-mono ---- */
/* The monophone model of topology topo (gh_topology_read) with the phone sets
 * sets[nsets][sizes[i]] (sorted; lang/phones/sets.int): one single-Gaussian pdf
 * per (set, pdf-class), each the mean and variance of X[n x dim] (double
 * statistics as Kaldi's), the transition model from the topology; the tree into
 * *ctx.  Byte-identical to gmm-init-mono's with the same frames.  Dies naming
 * `what` on a variance <= 0 or n = 0. */
void gh_am_init_mono(const gh_transition_model *topo, int32_t nsets, int32_t *const *sets, const int32_t *sizes,
                     const float *X, int64_t n, int32_t dim, const char *what, gh_gmm_set *model, gh_ctx_dep **ctx);

/* ---- the trainer ---- */
typedef struct {
  int32_t pass;
  int aligned;                /* this pass realigned */
  double like, frames;        /* GMM E-step: total log-likelihood (natural log) and frames (all ranks) */
  double ali_like, ali_frames, ali_utts, ali_failed, ali_retried; /* realignment (all ranks) */
  int64_t num_gauss;          /* after the pass */
  double align_seconds, score_seconds, estep_seconds, mstep_seconds, seconds; /* this rank's wall time */
} gh_am_pass_stats;

typedef struct gh_am_trainer gh_am_trainer;
struct gh_comm;
struct gh_device_opts;

/* The utterances to train on: feats (any matrix rspecifier) and, per key, the
 * transcript as word ids (text_keys[num_text], words[i][num_words[i]]).
 * Reads the features' table (every rank), and takes the utterances with frames
 * and a transcript; all features must have the same dimension (dies naming the
 * rspecifier and the key otherwise).  When *model has no pdfs it is initialised
 * here (gh_am_init_mono from the first 10 utterances of the table with a
 * transcript, topo and sets as there, *ctx set).  Then this rank's shard: the
 * graphs (gh_tgc over lex, disambig: an utterance whose graph fails is warned
 * about and never aligned), the pass-0 equal alignment, the blocks resident on
 * the backend (dev's start ended here: gh_device_opts_end; *bp set, the caller
 * frees it after the trainer).  comm may be NULL.  model and ctx stay the
 * caller's, updated in place by gh_am_trainer_pass.  aligner: taken over. */
gh_am_trainer *gh_am_trainer_new(struct gh_device_opts *dev, gh_backend **bp, struct gh_comm *comm,
                                 gh_gmm_set *model, gh_ctx_dep **ctx, const gh_transition_model *topo,
                                 int32_t nsets, int32_t *const *sets, const int32_t *sizes, gh_fst *lex,
                                 const char *lex_name, const int32_t *disambig, int32_t ndisambig,
                                 const char *feats, int64_t num_text, char *const *text_keys,
                                 int32_t *const *words, const int32_t *num_words, gh_am_aligner *aligner,
                                 const gh_am_train_opts *o);
/* Utterances and frames used (all ranks; this rank). */
void gh_am_trainer_sizes(const gh_am_trainer *t, int64_t *utts, int64_t *frames, int64_t *rank_utts,
                         int64_t *rank_frames);
/* Pass x (0 .. num_iters-1 in order): alignment (pass 0: the equal alignment;
 * realign passes), E-step, reduction, M-step, mix-up; the model in place.
 * occs (may be NULL): [num_pdfs] the pdfs' occupancies before the mix-up. */
void gh_am_trainer_pass(gh_am_trainer *t, int32_t x, gh_am_pass_stats *st, double *occs);
/* The mix-up target of pass x (numgauss of train_mono.sh). */
int64_t gh_am_trainer_numgauss(const gh_am_trainer *t, int32_t x);
/* Replaces the schedule (the next stage's options: gmm-train-tri --mono switches from the
 * monophone schedule to the triphone one on the same resident data); the mix-up
 * schedule's start is set again by gh_am_trainer_retree. */
void gh_am_trainer_set_opts(gh_am_trainer *t, const gh_am_train_opts *o);
/* Writes this rank's current alignments (the last realignment's; utterances
 * without one left out) to wspec (a wspecifier). */
void gh_am_trainer_write_ali(gh_am_trainer *t, const char *wspec);
void gh_am_trainer_free(gh_am_trainer *t);

/* ---- the triphone stage (steps/train_deltas.sh) ----
 * Schedule (the script's, its option names in gmm-train-tri):
 *   acc-tree-stats on the monophone alignments (gh_am_trainer_read_ali, or the
 *   mono stage's last realignment) and the resident frames
 *   (gh_am_trainer_tree_stats); cluster-phones on lang/phones/sets.int, the
 *   lang's extra_questions.int appended, compile-questions, build-tree
 *   --max-leaves=num_leaves with lang/phones/roots.int, gmm-init-model
 *   (occupancies), gmm-mixup --mix-up=num_leaves (gh_am_build_tri);
 *   convert-ali to the new tree and the graphs compiled with it
 *   (gh_am_trainer_retree); then passes x = 1 .. num_iters-1 of
 *   gh_am_trainer_pass with realign {10, 20, 30}, beam 10 (initial_beam =
 *   regular_beam), Kaldi's mix-up (kaldi_mixup = 1) to numgauss(x) =
 *   num_leaves + min(x-1, max_iter_inc) * floor((totgauss - num_leaves) /
 *   max_iter_inc) (numgauss0 = num_leaves; max_iter_inc 25). */
typedef struct {
  int32_t num_leaves;          /* build-tree --max-leaves, the first mix-up target */
  int32_t context_width;       /* 3 */
  int32_t central_position;    /* 1 */
  float cluster_thresh;        /* -1 (build-tree --cluster-thresh) */
  float var_floor;             /* 0.01 (acc-tree-stats, gmm-init-model) */
  const int32_t *ci_phones;    /* sorted; lang/phones/context_indep.csl */
  int32_t num_ci_phones;
} gh_am_tri_opts;
void gh_am_tri_opts_default(gh_am_tri_opts *o);

/* Replaces the alignments of this rank's utterances by those of the tables
 * rspecs[n] (e.g. "ark:gunzip -c ali.1.gz|" .. ali.J): every alignment is
 * checked against the model's transition model and length (dies naming the
 * table and key); utterances in no table have no alignment (not trained on)
 * until the next realignment.  Sets the E-step's pairs.  Returns this rank's
 * utterances without an alignment. */
int64_t gh_am_trainer_read_ali(gh_am_trainer *t, char *const *rspecs, int32_t n);
/* acc-tree-stats of the current alignments (the current model's transition
 * model) on the resident frames, summed over all ranks: each fixed block's
 * statistics summed in frame order, the blocks added in block order (the
 * same bytes for any number of ranks; Kaldi's acc-tree-stats + sum-tree-stats
 * of one job when there is one block).  R > 1 exchanges the blocks' statistics
 * through files xdir/.treeacc.B (removed after).  *out: Kaldi's order. */
void gh_am_trainer_tree_stats(gh_am_trainer *t, const gh_am_tri_opts *o, const char *xdir, gh_tree_stats *out);
/* cluster-phones, compile-questions, build-tree, gmm-init-model --write-occs,
 * gmm-mixup --mix-up=num_leaves on stats (all as the tools with the
 * script's options): *ctx the tree, *model the model (its transition model
 * from topo), occs[num_pdfs] (malloc'd: gmm-init-model's occupancies) and
 * questions (cluster-phones' with extra appended) and *qst, the compiled ones,
 * for the caller to write.  Dies naming roots_rx / what on bad input (a
 * statistics phone not in the roots, max_leaves below the number of roots). */
void gh_am_build_tri(const gh_tree_stats *stats, const gh_transition_model *topo, const gh_intlists *sets,
                     const gh_intlists *extra, const gh_roots *roots, const gh_am_tri_opts *o, const char *what,
                     gh_intlists *questions, gh_questions *qst, gh_ctx_dep **ctx, gh_gmm_set *model, float **occs);
/* Moves the trainer to a new tree: the alignments converted from the current
 * model (convert-ali; an utterance that fails is left unaligned until the
 * next realignment), *model replaced by new_model (taken over) and *ctx by
 * new_ctx (taken over; the old freed), the graphs compiled with the new tree
 * (lex taken over and freed), the E-step restarted with the new model.  The
 * mix-up schedule restarts from o->numgauss0 (or the new model's Gaussians). */
void gh_am_trainer_retree(gh_am_trainer *t, gh_gmm_set *new_model, gh_ctx_dep *new_ctx, gh_fst *lex,
                          const char *lex_name, const int32_t *disambig, int32_t ndisambig);

#endif
