/* shard.h -- the data of a distributed training job: every rank
 * reads the feature rspecifier's table of contents, so that every rank
 * knows all keys and frame counts, and keeps only the features of its own
 * shard.
 *
 * Order, blocks and shards (the same on every rank, whatever R is):
 *  - utterances in sorted-key order (strcmp, Kaldi's C-locale order);
 *  - cut into FIXED frame blocks at utterance boundaries: a block takes
 *    utterances while it holds fewer than block_frames frames and the next
 *    one still fits (an utterance longer than block_frames is a block of
 *    its own).  The blocks depend on the data and block_frames only, not on
 *    R: the trainers do the fp32 part of the E-step inside a block and
 *    combine blocks in double in global order, so the accumulators do not
 *    depend on R beyond the rounding of double additions;
 *  - shards are contiguous ranges of blocks balanced by frames: the
 *    boundary of shard r is the block boundary nearest to r/R of the
 *    frames (ties to the later one, so a single block goes to shard 0).  A shard may be empty when there are
 *    fewer blocks than ranks.  No speakers are involved (one-speaker data
 *    shards too).
 */
#ifndef GH_SHARD_H
#define GH_SHARD_H
#include <stdint.h>

#include "base/matrix.h"
#include "train/gmm-data.h"

/* ---------------- the plan (pure; unit-tested) ---------------- */
typedef struct {
  int64_t num_utts;
  char **keys;           /* [num_utts] sorted by strcmp, owned */
  int32_t *frames;       /* [num_utts] */
  int64_t *frame_off;    /* [num_utts + 1] frames before utterance u (global order) */
  int64_t block_frames;  /* the target block size */
  int32_t num_blocks;
  int64_t *block_utt;    /* [num_blocks + 1] first utterance of each block */
  int32_t num_shards;
  int32_t *shard_block;  /* [num_shards + 1] first block of each shard */
} gh_shard_plan;

/* Plan of n utterances (keys[i] with frames[i] >= 0, any order; copied) in
 * blocks of about block_frames (>= 1) frames and num_shards (>= 1)
 * shards.  Dies naming `what` (the rspecifier) and the key if a key occurs
 * twice. */
void gh_shard_plan_make(gh_shard_plan *p, const char *const *keys, const int32_t *frames, int64_t n,
                        int64_t block_frames, int32_t num_shards, const char *what);
void gh_shard_plan_free(gh_shard_plan *p);
/* Utterances [*u0, *u1) and frames of shard s. */
void gh_shard_utts(const gh_shard_plan *p, int32_t s, int64_t *u0, int64_t *u1);
int64_t gh_shard_frames(const gh_shard_plan *p, int32_t s);
/* "shard S (utterances a..b of N, 'key_a'..'key_b', F frames, blocks x..y)"
 * into buf (for error lines and the rank table); utterances 1-based. */
void gh_shard_describe(const gh_shard_plan *p, int32_t s, char *buf, size_t n);

/* ---------------- the features' table of contents ----------------
 * gh_feat_toc_open reads the table of a matrix rspecifier: for an "scp:"
 * list of plain binary float matrices in regular files (table.h
 * gh_scp_index) only the headers (the payloads are read later, by
 * gh_feat_toc_read, only for the utterances asked for); for anything else
 * (an archive, a pipe, compressed or text matrices) every matrix is read
 * once and kept in memory until gh_feat_toc_keep drops the ones another
 * rank owns.  Empty matrices are listed with 0 frames. */
typedef struct gh_feat_toc gh_feat_toc;
gh_feat_toc *gh_feat_toc_open(const char *rspecifier);
int64_t gh_feat_toc_size(const gh_feat_toc *t);
const char *gh_feat_toc_key(const gh_feat_toc *t, int64_t i);     /* in the table's order */
int32_t gh_feat_toc_rows(const gh_feat_toc *t, int64_t i);
int32_t gh_feat_toc_cols(const gh_feat_toc *t, int64_t i);
/* Index of key in the table, or -1. */
int64_t gh_feat_toc_find(const gh_feat_toc *t, const char *key);
/* Frees the kept matrices of every entry i with keep[i] == 0. */
void gh_feat_toc_keep(gh_feat_toc *t, const unsigned char *keep);
/* Entry i as a view (float32 rows x cols): from memory, or read into
 * *buf (grown as needed; caller frees) and checked finite (dies naming the
 * rspecifier, the key and the row/column of a non-finite value, or a read
 * error). */
const gh_matrix_view *gh_feat_toc_read(gh_feat_toc *t, int64_t i, float **buf, size_t *cap, gh_matrix_view *v);
/* Entries idx[0 .. n) (each at most once) into dst[0 .. n) (dst[k]: room
 * for entry idx[k]'s rows x cols floats, row-major), checked finite: from
 * an indexed table pread straight into place by up to 16 threads (OpenMP),
 * otherwise copied from memory.  Dies as gh_feat_toc_read, on the first
 * bad entry in k order (so the same message whatever the threads). */
void gh_feat_toc_read_many(gh_feat_toc *t, const int64_t *idx, int64_t n, float *const *dst);
void gh_feat_toc_close(gh_feat_toc *t);

/* ---------------- a rank's shard of GMM training data ---------------- */
typedef struct {
  gh_shard_plan plan;    /* every utterance used for training (labels present, frames > 0) */
  int32_t shard;         /* this rank's */
  int32_t block0;        /* its first block (global index) */
  int32_t num_blocks;    /* its blocks */
  gh_data *blocks;       /* [num_blocks]: each block's frames and (frame, pdf) pairs, block-local frame
                            indices (gmm-data.h) */
  int64_t num_skipped;   /* utterances of the table not used: no labels (counted by every rank) */
  char skipped_keys[256]; /* the first of them in table order, quoted: "'a', 'b', 'c', ..." ("" if none) */
  int64_t num_empty;     /* utterances with 0 frames */
  double total_weight;   /* this shard's sum of pair weights */
} gh_shard_data;

/* Loads shard `shard` of num_shards for EM (gh_data_opts as gh_data_load:
 * label type and table, pdf bound, expected dimension): reads the table
 * (gh_feat_toc_open), drops utterances without labels or frames (counted),
 * plans (gh_shard_plan_make) and builds this shard's blocks with
 * gh_data_add_utt's checks and messages.  Dies if no utterance at all is
 * left (naming the tables).  An empty shard is not an error.  comm (may
 * be NULL): from the plan on, its error context (gh_comm_set_context) is
 * this shard's description (gh_shard_describe), so an error in the
 * shard's data names the rank, its host and its shard. */
struct gh_comm;
void gh_shard_data_load(gh_shard_data *sd, const gh_data_opts *o, int64_t block_frames, int32_t num_shards,
                        int32_t shard, struct gh_comm *comm);
void gh_shard_data_free(gh_shard_data *sd);
/* The loader's warnings, for one rank to print: "N utterances had no
 * labels in <labels> and were skipped: 'k1', 'k2', 'k3', ..." (the first
 * keys, table order) and "N empty feature matrices in <feats> were
 * skipped"; nothing when there are none. */
void gh_shard_data_warn(const gh_shard_data *sd, const gh_data_opts *o);
/* A one-shard, one-block gh_shard_data of data already in memory (d is
 * moved in and left empty; gh_shard_data_free frees it), for EM on it with
 * gh_dist_em (gmm-global-init-from-feats' frame subset): one utterance
 * named key holding all d->num_frames (> 0) frames. */
void gh_shard_data_from_data(gh_shard_data *sd, gh_data *d, const char *key);

#endif
