/* score-block.h -- the GMM log-likelihoods of a block of consecutive
 * utterances in one backend call (gmm-align-compiled, both modes, and the
 * resident trainer's realignment, drivers/train/am-train.h).  One call per
 * utterance spends most of its time outside the arithmetic on every backend
 * (bench/RESULTS.md, "Alignment": on the 2-core CPU backend the per-utterance
 * calls took 15 times as long as the block's on the trainer's 200 test
 * utterances).  A row's log-likelihoods do not depend on the rows scored
 * with it, so the results are the per-utterance ones, bit for bit.
 *
 * Two ways in: frames already in one host array (or resident on the backend,
 * gh_dev_data) are scored by gh_block_scorer_rows; frames that arrive one
 * utterance at a time are staged (gh_block_scorer_stage copies them after
 * the ones before) and scored together by gh_block_scorer_score_staged.
 * Memory: the staged frames [rows x D] and the loglikes [rows x P] floats,
 * rows <= max_rows except for one utterance longer than that, which goes
 * alone. */
#ifndef GH_SCORE_BLOCK_H
#define GH_SCORE_BLOCK_H
#include <stdint.h>

#include "backend.h"

/* Loglikes per backend call at most (256 MB of floats). */
#define GH_SCORE_BLOCK_FLOATS ((int64_t)1 << 26)

typedef struct {
  gh_backend *b;
  gh_dev_model *m;
  int32_t D, P;      /* feature dimension, pdfs of m */
  int64_t max_rows;  /* rows per call: min(block_frames, GH_SCORE_BLOCK_FLOATS / P), >= 1 */
  float *X;          /* staged frames [rows x D] */
  int64_t rows, capx;
  float *LL;         /* the last call's loglikes [. x P] */
  int64_t capl;
  double seconds;    /* wall seconds in the backend's scoring, summed over the calls */
} gh_block_scorer;

/* A scorer for model m (P pdfs, dimension D) on b (neither owned);
 * block_frames <= 0: the floats bound only. */
void gh_block_scorer_init(gh_block_scorer *s, gh_backend *b, gh_dev_model *m, int32_t D, int32_t P,
                          int64_t block_frames);
void gh_block_scorer_free(gh_block_scorer *s);
/* Whether T more frames fit with the staged ones (true when none is staged). */
int gh_block_scorer_fits(const gh_block_scorer *s, int64_t T);
/* Copies frames X [T x D] after the staged ones; returns their first row in
 * the block (the row of their loglikes in score_staged's result). */
int64_t gh_block_scorer_stage(gh_block_scorer *s, const float *X, int32_t T);
/* Scores the staged rows in one backend call and empties the stage; returns
 * the loglikes [rows x P] (natural log, per frame and pdf), valid until the
 * next call on s; *rows (may be NULL) = their number. */
const float *gh_block_scorer_score_staged(gh_block_scorer *s, int64_t *rows);
/* The loglikes [rows x P] of rows row0 .. row0 + rows - 1 of frames X [. x D]
 * (host) that dd holds on the backend (dd may be NULL), in one call
 * (gh_backend_loglikes_rows); valid until the next call on s. */
const float *gh_block_scorer_rows(gh_block_scorer *s, gh_dev_data *dd, const float *X, int32_t row0, int64_t rows);

#endif
