/* shard.c -- blocks, shards and a rank's share of the data; see shard.h. */
#include "train/shard.h"

#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "io/table.h"
#include "train/comm.h"

/* ---------------- plan ---------------- */
typedef struct { const char *key; int32_t frames; } kf;
static int cmp_kf(const void *a, const void *b) { return strcmp(((const kf *)a)->key, ((const kf *)b)->key); }

void gh_shard_plan_make(gh_shard_plan *p, const char *const *keys, const int32_t *frames, int64_t n,
                        int64_t block_frames, int32_t num_shards, const char *what) {
  if (block_frames < 1) gh_die("block size must be >= 1 frame (got %lld)", (long long)block_frames);
  if (num_shards < 1) gh_die("number of shards must be >= 1 (got %d)", num_shards);
  memset(p, 0, sizeof *p);
  kf *v = gh_malloc(sizeof(kf) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; ++i) {
    v[i].key = keys[i];
    v[i].frames = frames[i];
  }
  /* in order already (a sorted list, or the table of contents' sorted order): one pass */
  int64_t sorted = 1;
  while (sorted < n && strcmp(v[sorted - 1].key, v[sorted].key) < 0) ++sorted;
  if (sorted < n) {
    qsort(v, (size_t)n, sizeof *v, cmp_kf);
    for (int64_t i = 1; i < n; ++i)
      if (!strcmp(v[i].key, v[i - 1].key)) gh_die("%s: key '%s' occurs twice", what ? what : "data", v[i].key);
  }
  p->num_utts = n;
  p->block_frames = block_frames;
  p->keys = gh_malloc(sizeof(char *) * (size_t)(n ? n : 1));
  p->frames = gh_malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  p->frame_off = gh_malloc(sizeof(int64_t) * (size_t)(n + 1));
  p->frame_off[0] = 0;
  for (int64_t i = 0; i < n; ++i) {
    p->keys[i] = gh_strdup(v[i].key);
    p->frames[i] = v[i].frames;
    p->frame_off[i + 1] = p->frame_off[i] + v[i].frames;
  }
  free(v);
  /* blocks: utterances while the block has < block_frames and the next fits */
  p->block_utt = gh_malloc(sizeof(int64_t) * (size_t)(n + 1));
  int32_t nb = 0;
  int64_t cur = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (i == 0 || (cur > 0 && cur + p->frames[i] > block_frames)) {
      p->block_utt[nb++] = i;
      cur = 0;
    }
    cur += p->frames[i];
  }
  p->block_utt[nb] = n;
  p->num_blocks = nb;
  /* shards: boundary of shard r at the block boundary nearest to r/R of the frames */
  p->num_shards = num_shards;
  p->shard_block = gh_malloc(sizeof(int32_t) * (size_t)(num_shards + 1));
  const int64_t total = p->frame_off[n];
  p->shard_block[0] = 0;
  int32_t b = 0;
  for (int32_t r = 1; r < num_shards; ++r) {
    const double target = (double)total * r / num_shards;
    /* move b forward while the next boundary is not farther from the target
     * (a tie goes to the later boundary: a lone block goes to rank 0) */
    while (b < nb) {
      const double here = (double)p->frame_off[p->block_utt[b]], next = (double)p->frame_off[p->block_utt[b + 1]];
      if (next <= target || next - target <= target - here) ++b;
      else break;
    }
    p->shard_block[r] = b;
  }
  p->shard_block[num_shards] = nb;
}

void gh_shard_plan_free(gh_shard_plan *p) {
  for (int64_t i = 0; i < p->num_utts; ++i) free(p->keys[i]);
  free(p->keys);
  free(p->frames);
  free(p->frame_off);
  free(p->block_utt);
  free(p->shard_block);
  memset(p, 0, sizeof *p);
}

void gh_shard_utts(const gh_shard_plan *p, int32_t s, int64_t *u0, int64_t *u1) {
  *u0 = p->block_utt[p->shard_block[s]];
  *u1 = p->block_utt[p->shard_block[s + 1]];
}

int64_t gh_shard_frames(const gh_shard_plan *p, int32_t s) {
  int64_t u0, u1;
  gh_shard_utts(p, s, &u0, &u1);
  return p->frame_off[u1] - p->frame_off[u0];
}

void gh_shard_describe(const gh_shard_plan *p, int32_t s, char *buf, size_t n) {
  int64_t u0, u1;
  gh_shard_utts(p, s, &u0, &u1);
  if (u1 == u0) {
    snprintf(buf, n, "shard %d (empty: no utterances of %lld, blocks %d..%d of %d)", s, (long long)p->num_utts,
             p->shard_block[s], p->shard_block[s + 1], p->num_blocks);
    return;
  }
  snprintf(buf, n, "shard %d (utterances %lld..%lld of %lld, '%s'..'%s', %lld frames, blocks %d..%d of %d)", s,
           (long long)u0 + 1, (long long)u1, (long long)p->num_utts, p->keys[u0], p->keys[u1 - 1],
           (long long)gh_shard_frames(p, s), p->shard_block[s] + 1, p->shard_block[s + 1], p->num_blocks);
}

/* ---------------- table of contents ---------------- */
typedef struct {
  char *key;
  int32_t rows, cols;
  float *data;   /* kept matrix (sequential path), or NULL */
} toc_entry;

struct gh_feat_toc {
  char *rspec;
  gh_scp_index *x;   /* indexed path, or NULL */
  toc_entry *e;
  int64_t n;
  int64_t *sorted;   /* entry indices by key, for find */
};

static const gh_feat_toc *g_sort_toc;
static int cmp_idx(const void *a, const void *b) {
  return strcmp(g_sort_toc->e[*(const int64_t *)a].key, g_sort_toc->e[*(const int64_t *)b].key);
}

gh_feat_toc *gh_feat_toc_open(const char *rspecifier) {
  gh_feat_toc *t = gh_calloc(1, sizeof *t);
  t->rspec = gh_strdup(rspecifier);
  t->x = gh_scp_index_open(rspecifier);
  if (t->x) {
    t->n = t->x->n;
    t->e = gh_calloc((size_t)(t->n ? t->n : 1), sizeof *t->e);
    for (int64_t i = 0; i < t->n; ++i) {
      t->e[i].key = t->x->e[i].key; /* the index's (freed with it) */
      t->e[i].rows = t->x->e[i].rows;
      t->e[i].cols = t->x->e[i].cols;
    }
  } else {
    int64_t cap = 0;
    gh_seq_reader *r = gh_seq_reader_open(rspecifier, GH_OBJ_MATRIX_VIEW);
    for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {
      const gh_matrix_view *v = gh_seq_reader_value(r);
      if (t->n == cap) {
        cap = cap ? 2 * cap : 1024;
        t->e = gh_realloc(t->e, sizeof *t->e * (size_t)cap);
      }
      toc_entry *e = &t->e[t->n++];
      e->key = gh_strdup(gh_seq_reader_key(r));
      e->rows = v->rows;
      e->cols = v->cols;
      e->data = NULL;
      if ((int64_t)v->rows * v->cols > 0) {
        /* copied unchecked: the rank that owns the utterance checks it
         * (gh_data_add_utt), so a bad value is reported once, with its shard */
        e->data = gh_malloc(sizeof(float) * (size_t)v->rows * (size_t)v->cols);
        memcpy(e->data, v->bytes, sizeof(float) * (size_t)v->rows * (size_t)v->cols);
      }
    }
    gh_seq_reader_close(r);
  }
  t->sorted = gh_malloc(sizeof(int64_t) * (size_t)(t->n ? t->n : 1));
  for (int64_t i = 0; i < t->n; ++i) t->sorted[i] = i;
  /* a Kaldi data directory's lists are sorted: checked in one pass, sorted only if not */
  int64_t i = 1;
  while (i < t->n && strcmp(t->e[i - 1].key, t->e[i].key) < 0) ++i;
  if (i < t->n) {
    g_sort_toc = t;
    qsort(t->sorted, (size_t)t->n, sizeof(int64_t), cmp_idx);
    g_sort_toc = NULL;
  }
  return t;
}

int64_t gh_feat_toc_size(const gh_feat_toc *t) { return t->n; }
const char *gh_feat_toc_key(const gh_feat_toc *t, int64_t i) { return t->e[i].key; }
int32_t gh_feat_toc_rows(const gh_feat_toc *t, int64_t i) { return t->e[i].rows; }
int32_t gh_feat_toc_cols(const gh_feat_toc *t, int64_t i) { return t->e[i].cols; }

int64_t gh_feat_toc_find(const gh_feat_toc *t, const char *key) {
  int64_t lo = 0, hi = t->n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const int c = strcmp(t->e[t->sorted[mid]].key, key);
    if (c == 0) return t->sorted[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

void gh_feat_toc_keep(gh_feat_toc *t, const unsigned char *keep) {
  for (int64_t i = 0; i < t->n; ++i)
    if (!keep[i]) {
      free(t->e[i].data);
      t->e[i].data = NULL;
    }
}

const gh_matrix_view *gh_feat_toc_read(gh_feat_toc *t, int64_t i, float **buf, size_t *cap, gh_matrix_view *v) {
  const toc_entry *e = &t->e[i];
  v->rows = e->rows;
  v->cols = e->cols;
  v->bytes = NULL;
  const size_t n = (size_t)e->rows * (size_t)e->cols;
  if (n == 0) return v;
  if (!t->x) {
    if (!e->data) gh_die("%s, key '%s': matrix was dropped (internal error: not in this shard)", t->rspec, e->key);
    v->bytes = e->data;
    return v;
  }
  if (n > *cap) {
    free(*buf);
    *buf = gh_malloc(sizeof(float) * n);
    *cap = n;
  }
  size_t bad = 0;
  const gh_scp_entry *s = &t->x->e[i];
  const int rc = gh_pread_floats_finite(s->fd, s->offset, *buf, n, &bad);
  if (rc < 0)
    gh_die("%s, key '%s': cannot read the matrix: %s", t->rspec, e->key, errno ? strerror(errno) : "file ends early");
  if (rc > 0)
    gh_die("%s, key '%s': non-finite value at row %zu, col %zu", t->rspec, e->key, bad / (size_t)e->cols,
           bad % (size_t)e->cols);
  v->bytes = *buf;
  return v;
}

void gh_feat_toc_read_many(gh_feat_toc *t, const int64_t *idx, int64_t n, float *const *dst) {
  if (!t->x) {
    for (int64_t k = 0; k < n; ++k) {
      gh_matrix_view v;
      float *buf = NULL;
      size_t cap = 0;
      gh_feat_toc_read(t, idx[k], &buf, &cap, &v);
      if (v.rows > 0 && v.cols > 0) gh_matrix_view_copy_finite(&v, dst[k], t->rspec, t->e[idx[k]].key);
    }
    return;
  }
  int *rc = gh_calloc((size_t)(n ? n : 1), sizeof(int)), *err = gh_calloc((size_t)(n ? n : 1), sizeof(int));
  size_t *bad = gh_calloc((size_t)(n ? n : 1), sizeof(size_t));
  int64_t total = 0;
  for (int64_t k = 0; k < n; ++k) total += (int64_t)t->e[idx[k]].rows * t->e[idx[k]].cols;
  const int nth = omp_get_max_threads() < 16 ? omp_get_max_threads() : 16;
#pragma omp parallel for schedule(dynamic, 16) num_threads(nth) if (total >= 4096 * 64)
  for (int64_t k = 0; k < n; ++k) {
    const gh_scp_entry *e = &t->x->e[idx[k]];
    const size_t m = (size_t)e->rows * (size_t)e->cols;
    if (m == 0) continue;
    rc[k] = gh_pread_floats_finite(e->fd, e->offset, dst[k], m, &bad[k]);
    if (rc[k] < 0) err[k] = errno;
  }
  for (int64_t k = 0; k < n; ++k) {
    const toc_entry *e = &t->e[idx[k]];
    if (rc[k] < 0)
      gh_die("%s, key '%s': cannot read the matrix: %s", t->rspec, e->key, err[k] ? strerror(err[k]) : "file ends early");
    if (rc[k] > 0)
      gh_die("%s, key '%s': non-finite value at row %zu, col %zu", t->rspec, e->key, bad[k] / (size_t)e->cols,
             bad[k] % (size_t)e->cols);
  }
  free(rc); free(err); free(bad);
}

void gh_feat_toc_close(gh_feat_toc *t) {
  if (!t) return;
  for (int64_t i = 0; i < t->n; ++i) {
    if (!t->x) free(t->e[i].key);
    free(t->e[i].data);
  }
  free(t->e);
  free(t->sorted);
  if (t->x) gh_scp_index_free(t->x);
  free(t->rspec);
  free(t);
}

/* ---------------- a rank's GMM training data ---------------- */
void gh_shard_data_load(gh_shard_data *sd, const gh_data_opts *o, int64_t block_frames, int32_t num_shards,
                        int32_t shard, struct gh_comm *comm) {
  memset(sd, 0, sizeof *sd);
  gh_label_type lt = o->label_type;
  if (lt != GH_LABELS_NONE && (!o->labels_rspec || !*o->labels_rspec)) gh_die("label type needs a label rspecifier");
  gh_objtype ltype = lt == GH_LABELS_ALI ? GH_OBJ_INT32_VECTOR : lt == GH_LABELS_UTT ? GH_OBJ_INT32 : GH_OBJ_POSTERIOR;
  /* the labels read on a thread of their own beside the feature index (io/table.h) */
  gh_rand_reader_opening *labo = lt != GH_LABELS_NONE ? gh_rand_reader_open_bg(o->labels_rspec, ltype) : NULL;
  gh_feat_toc *t = gh_feat_toc_open(o->feats_rspec);
  gh_rand_reader *lab = labo ? gh_rand_reader_open_wait(labo, NULL) : NULL;
  const int64_t n = gh_feat_toc_size(t);
  /* the utterances used: frames > 0 and labels present (the same on every rank) */
  const char **keys = gh_malloc(sizeof(char *) * (size_t)(n ? n : 1));
  int32_t *frames = gh_malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  int64_t m = 0;
  for (int64_t i = 0; i < n; ++i) {
    const char *key = gh_feat_toc_key(t, i);
    if (gh_feat_toc_rows(t, i) == 0) { sd->num_empty++; continue; }
    if (lab && !gh_rand_reader_has_key(lab, key)) {
      if (sd->num_skipped < 3) {
        size_t l = strlen(sd->skipped_keys);
        snprintf(sd->skipped_keys + l, sizeof sd->skipped_keys - l, "%s'%s'", l ? ", " : "", key);
      } else if (sd->num_skipped == 3) {
        size_t l = strlen(sd->skipped_keys);
        snprintf(sd->skipped_keys + l, sizeof sd->skipped_keys - l, ", ...");
      }
      sd->num_skipped++;
      continue;
    }
    keys[m] = key;
    frames[m] = gh_feat_toc_rows(t, i);
    ++m;
  }
  if (m == 0) {
    if (sd->num_skipped)
      gh_die("no frames to train on: all %lld utterances of %s lack labels in %s", (long long)sd->num_skipped,
             o->feats_rspec, o->labels_rspec);
    gh_die("no frames to train on in %s", o->feats_rspec);
  }
  gh_shard_plan_make(&sd->plan, keys, frames, m, block_frames, num_shards, o->feats_rspec);
  free(keys);
  free(frames);
  const gh_shard_plan *p = &sd->plan;
  sd->shard = shard;
  if (comm) {
    char desc[512];
    gh_shard_describe(p, shard, desc, sizeof desc);
    gh_comm_set_context(comm, "%s", desc);
  }
  sd->block0 = p->shard_block[shard];
  sd->num_blocks = p->shard_block[shard + 1] - sd->block0;
  /* keep only this shard's matrices */
  int64_t u0, u1;
  gh_shard_utts(p, shard, &u0, &u1);
  unsigned char *keep = gh_calloc((size_t)(n ? n : 1), 1);
  int64_t *idx = gh_malloc(sizeof(int64_t) * (size_t)(u1 - u0 + 1));
  for (int64_t u = u0; u < u1; ++u) {
    idx[u - u0] = gh_feat_toc_find(t, p->keys[u]);
    keep[idx[u - u0]] = 1;
  }
  gh_feat_toc_keep(t, keep);
  free(keep);
  sd->blocks = gh_calloc((size_t)(sd->num_blocks ? sd->num_blocks : 1), sizeof(gh_data));
  /* An indexed table (gmm-data.c load_indexed's way, over the blocks): the
   * checks, labels and pairs of every utterance in key order (the labels'
   * reader is not thread-safe), one allocation of exactly each block's
   * frames, then the payloads pread in parallel straight into place, each
   * checked finite in the same pass; read errors are reported in key order.
   * (Read into one buffer and copied into the blocks, 2 M x 40 frames took
   * 0.37-0.39 s on 2 cores, now 0.20-0.21 s: bench/RESULTS.md
   * D24.)  Otherwise one matrix at a time. */
  if (t->x) {
    const int64_t nu = u1 - u0;
    int64_t *base = gh_malloc(sizeof(int64_t) * (size_t)(nu ? nu : 1));
    int32_t *blk = gh_malloc(sizeof(int32_t) * (size_t)(nu ? nu : 1));
    for (int32_t k = 0; k < sd->num_blocks; ++k) {
      gh_data *d = &sd->blocks[k];
      gh_data_init(d, o->dim);
      const int32_t b = sd->block0 + k;
      for (int64_t u = p->block_utt[b]; u < p->block_utt[b + 1]; ++u) {
        const toc_entry *e = &t->e[idx[u - u0]];
        base[u - u0] = gh_data_add_utt_labels(d, o, lab, p->keys[u], e->rows, e->cols);
        blk[u - u0] = k;
      }
      if (d->num_frames > 0) d->feats = gh_malloc(sizeof(float) * (size_t)d->num_frames * (size_t)d->dim);
      sd->total_weight += d->total_weight;
    }
    /* the utterances with frames, pread in parallel into their blocks */
    int64_t nr = 0;
    int64_t *ridx = gh_malloc(sizeof(int64_t) * (size_t)(nu ? nu : 1));
    float **dst = gh_malloc(sizeof(float *) * (size_t)(nu ? nu : 1));
    for (int64_t u = u0; u < u1; ++u) {
      if (base[u - u0] < 0) continue;
      gh_data *d = &sd->blocks[blk[u - u0]];
      ridx[nr] = idx[u - u0];
      dst[nr++] = d->feats + base[u - u0] * d->dim;
    }
    gh_feat_toc_read_many(t, ridx, nr, dst);
    free(ridx); free(dst);
    free(base); free(blk);
  } else {
    float *buf = NULL;
    size_t cap = 0;
    for (int32_t k = 0; k < sd->num_blocks; ++k) {
      gh_data *d = &sd->blocks[k];
      gh_data_init(d, o->dim);
      const int32_t b = sd->block0 + k;
      for (int64_t u = p->block_utt[b]; u < p->block_utt[b + 1]; ++u) {
        gh_matrix_view v;
        gh_feat_toc_read(t, idx[u - u0], &buf, &cap, &v);
        gh_data_add_utt(d, o, lab, p->keys[u], &v);
      }
      sd->total_weight += d->total_weight;
    }
    free(buf);
  }
  free(idx);
  gh_feat_toc_close(t);
  if (lab) gh_rand_reader_close(lab);
}

void gh_shard_data_free(gh_shard_data *sd) {
  for (int32_t k = 0; k < sd->num_blocks; ++k) gh_data_free(&sd->blocks[k]);
  free(sd->blocks);
  gh_shard_plan_free(&sd->plan);
  memset(sd, 0, sizeof *sd);
}

void gh_shard_data_warn(const gh_shard_data *sd, const gh_data_opts *o) {
  if (sd->num_skipped)
    gh_warn("%lld utterances had no labels in %s and were skipped: %s", (long long)sd->num_skipped, o->labels_rspec,
            sd->skipped_keys);
  if (sd->num_empty) gh_warn("%lld empty feature matrices in %s were skipped", (long long)sd->num_empty, o->feats_rspec);
}

void gh_shard_data_from_data(gh_shard_data *sd, gh_data *d, const char *key) {
  if (d->num_frames <= 0) gh_die("%s: no frames to train on", key);
  memset(sd, 0, sizeof *sd);
  const int32_t frames = d->num_frames;
  gh_shard_plan_make(&sd->plan, &key, &frames, 1, frames, 1, key);
  sd->num_blocks = 1;
  sd->blocks = gh_calloc(1, sizeof(gh_data));
  sd->blocks[0] = *d;
  sd->total_weight = d->total_weight;
  memset(d, 0, sizeof *d);
}
