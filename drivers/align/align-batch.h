/* align-batch.h -- the batched exact aligner's loop (gmm-align-compiled
 * --exact): utterances (graph + per-pdf log-likelihoods) are queued and
 * aligned a batch at a time by the backend's align_batch (kernels/backend.h
 * gh_ops_align; the CPU reference where a backend has none), and each
 * result is handed back in queue order as lib/decoder's gh_dec_path, the
 * bits the one-utterance decoder (lib/decoder/faster-decoder.h, infinite
 * beam) gives for the same path. */
#ifndef GH_ALIGN_BATCH_H
#define GH_ALIGN_BATCH_H
#include <stdint.h>

#include "backend.h"
#include "decoder/faster-decoder.h"

typedef struct {
  int32_t max_utts;      /* utterances per batch (>= 1) */
  int64_t max_floats;    /* log-likelihoods held per batch (floats; a longer utterance goes alone) */
  int32_t ckpt_interval; /* backend.h gh_align_batch: 0 = by bp_budget */
  int64_t bp_budget;     /* bytes of back-pointers per utterance before checkpointing (0: unlimited) */
} gh_aligner_opts;

/* Called once per queued utterance, in queue order: p = its best path
 * (reached_final = 1), or NULL when no final state is reachable after T
 * frames (Kaldi's "Did not successfully decode file"). */
typedef void (*gh_aligner_cb)(void *user, const char *key, int32_t T, const gh_dec_path *p);

typedef struct gh_aligner gh_aligner;
/* b: the backend (not owned); col [num_labels + 1]: ilabel -> loglike column,
 * ld columns (not copied: kept by the caller while the aligner lives);
 * acoustic_scale as gh_decoder_decode. */
gh_aligner *gh_aligner_new(gh_backend *b, const gh_aligner_opts *o, int32_t ld, const int32_t *col,
                           int32_t num_labels, float acoustic_scale, gh_aligner_cb cb, void *user);
/* Queues utterance key (copied) with graph *g (moved: *g is emptied) and
 * loglikes [T x ld] (copied); runs the batch first when this one would
 * not fit it.  Dies as align_batch on a bad graph. */
void gh_aligner_add(gh_aligner *a, const char *key, gh_dec_graph *g, const float *loglikes, int32_t T);
/* Runs what is queued (the callbacks return before this does). */
void gh_aligner_flush(gh_aligner *a);
/* Flushes and frees (a may be NULL).  *seconds (may be NULL) = time spent
 * in align_batch. */
void gh_aligner_free(gh_aligner *a, double *seconds);

#endif
