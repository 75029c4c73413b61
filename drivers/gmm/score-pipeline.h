/* score-pipeline.h -- per-frame, per-pdf log-likelihoods of a feature
 * archive under a GMM set, streamed through a backend (kernels/backend.h)
 * in batches, with reading, scoring and writing overlapped (the pipeline
 * behind tools/gmm-score-gpu: Kaldi's gmm-compute-likes /
 * fgmm-global-get-frame-likes; bench/RESULTS.md B12).
 *
 * Stages: a reader thread parses utterances into batches of about
 * batch_frames frames (for a plain binary archive file, one scanning thread
 * and io_threads copy threads that pread the payloads straight into the
 * batch); the calling thread hands each batch to the backend
 * (gh_backend_loglikes_begin/_end, two batches in flight); a writer thread
 * writes one matrix per utterance in input order.  Memory is bounded (four
 * input batches, three output buffers).
 */
#ifndef GH_SCORE_PIPELINE_H
#define GH_SCORE_PIPELINE_H
#include "backend.h"
#include "gmm/gmm.h"
#include <stdint.h>

typedef struct {
  int32_t batch_frames; /* frames per batch (one loglikes call each); 0: for models of at most
                           64 pdfs ~32 MB of features (16384 to 262144 frames), else ~32 MB of
                           log-likelihoods (1024 to 16384 frames) */
  int32_t io_threads;   /* copy threads for a plain binary archive file (ark:FILE); -1: from the
                           core count (2 to 8); 0: the sequential reader (any rspecifier) */
} gh_score_opts;

typedef struct {
  int64_t num_done;      /* utterances scored and written */
  int64_t total_frames;  /* frames scored */
  double best_sum;       /* sum over frames of the best pdf's log-likelihood (natural log, total) */
  double seconds;        /* wall seconds of the pipeline (after the set-up) */
  double setup_seconds;  /* the backend's one-time set-up (one zero frame scored before the start) */
  int parallel_reader;   /* 1: the parallel archive reader ran, 0: the sequential reader */
  int io_threads;        /* copy threads of the parallel reader */
  double wait_reader, wait_scorer, wait_writer; /* seconds each stage blocked on a queue */
  double t_begin, t_end; /* scorer's seconds in loglikes_begin (enqueueing) and _end (waiting) */
} gh_score_stats;

/* {batch_frames = 0, io_threads = -1}. */
void gh_score_opts_default(gh_score_opts *o);

/* Scores every utterance of feats_rspec (matrices, frames x set->dim, float)
 * under set (set->num_pdfs >= 1) on be and writes, per utterance, a matrix
 * [frames x num_pdfs] of log-likelihoods (natural log, per frame) to
 * loglikes_wspec under the same key, in input order.  Uploads the model to
 * be and frees it again; fills *st (may be NULL).  Errors (gh_die, one ERROR
 * line naming the rspecifier and key): a dimension other than set->dim, a
 * non-finite feature, a bad archive entry, a failed input or output.
 * Returns the number of utterances done. */
int64_t gh_score_pipeline_run(gh_backend *be, const gh_gmm_set *set, const char *feats_rspec,
                              const char *loglikes_wspec, const gh_score_opts *o, gh_score_stats *st);

/* Several models, one per speaker (or utterance): each utterance is scored
 * under models[model_of(ctx, key)].  Every model has the dimension and the
 * number of pdfs of models[0].  model_of runs on the reader thread, one
 * call per utterance in input order; it returns an index in
 * [0, num_models) or dies naming the key. */
typedef struct {
  int32_t num_models;          /* >= 1 */
  const gh_gmm_set *models;    /* [num_models] */
  int32_t (*model_of)(void *ctx, const char *utt);
  void *ctx;
} gh_score_models;

/* gh_score_pipeline_run with a model per utterance (gmm-score-gpu
 * --spk-models: MAP-adapted speaker models, as Kaldi's gmm-latgen-map takes
 * them).  A batch holds the utterances of one model (a batch ends where the
 * model changes: a data directory sorted by speaker gives one batch run per
 * speaker); at most two models are on the backend at a time, each uploaded
 * when its first batch is scored.  Dies, besides gh_score_pipeline_run's
 * errors, when a model's dimension or pdf count differs from models[0]'s.
 * The output is the one gh_score_pipeline_run gives for each utterance
 * under its own model. */
int64_t gh_score_pipeline_run_models(gh_backend *be, const gh_score_models *sm, const char *feats_rspec,
                                     const char *loglikes_wspec, const gh_score_opts *o, gh_score_stats *st);

#endif
