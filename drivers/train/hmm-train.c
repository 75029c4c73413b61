/* hmm-train.c -- resident HMM-GMM training; see hmm-train.h. */
#include "train/hmm-train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "base/strmap.h"
#include "io/table.h"
#include "train/comm.h"
#include "base/dd.h"
#include "train/device-opts.h"
#include "train/shard.h"

int gh_hmm_train_mode_parse(const char *s, gh_hmm_train_mode *m) {
  if (!strcmp(s, "bw")) *m = GH_HMM_TRAIN_BW;
  else if (!strcmp(s, "viterbi")) *m = GH_HMM_TRAIN_VITERBI;
  else return -1;
  return 0;
}

void gh_hmm_train_opts_default(gh_hmm_train_opts *o) {
  memset(o, 0, sizeof *o);
  o->mode = GH_HMM_TRAIN_BW;
  o->silence_prob = 0.5;
  o->min_post = 1e-6;
  o->update_transitions = 1;
  gh_hmm_update_opts_default(&o->uo);
  gh_est_opts_default(&o->eo);
  o->gauss = 1;
  o->mixup_start = 1;
  o->mixup_end = 1;
  o->power = 0.2;
  o->min_count = 20.0;
  o->perturb = 0.01;
  o->block_frames = 65536;
  o->max_score_groups = 64;
}

int64_t gh_hmm_train_mixup_target(const gh_hmm_train_opts *o, int32_t num_pdfs, int32_t it) {
  if (o->gauss <= 1 || it < o->mixup_start || it > o->mixup_end) return 0;
  /* steps/train_word_hmm.sh: awk 'printf "%d", p + int(p * (g - 1) * k / n)' (doubles) */
  double k = it - o->mixup_start + 1, n = o->mixup_end - o->mixup_start + 1, p = num_pdfs;
  return num_pdfs + (int64_t)(p * (o->gauss - 1) * k / n);
}

/* One distinct transcript of the whole data: compiled once per iteration
 * (after the transitions change) however many utterances share it -- the
 * digits' 10 words for 264,000 utterances -- where this rank's shard uses
 * it; the graphs uploaded for the kernels stay one per utterance (their
 * stats blocks are then summed in a fixed order). */
typedef struct {
  char *text;
  int64_t first;        /* first utterance (index into ents) with this transcript: its key names errors */
  int32_t group;        /* score group; -1 = all pdfs */
  int used;             /* by this rank's shard: compiled and kept */
  int restructured;     /* the last compile changed the graph's states or arcs (not only their log-probs) */
  gh_hmm_compiled c;    /* compiled transcript (global pdf ids) */
  int32_t *lpdf;        /* [S] column of each state's pdf in its score group's loglikes */
  gh_hmm_graph lg;      /* c.graph with pdf = lpdf, num_pdfs = the group's size */
} tscript;

/* One utterance of the whole data in sorted-key order (every rank knows
 * all of them: the plan's keys and frames). */
typedef struct {
  const char *key;  /* the plan's */
  int64_t tx;       /* transcript: index into txs */
  int32_t rows;
} ent;

/* One utterance of this rank's shard. */
typedef struct {
  int64_t e;            /* index into ents */
  int64_t row;          /* first row in the rank's frame block X */
  int32_t T;
  int32_t warned;       /* 1: "no complete path" was logged (once per run; later failures are counted) */
  const tscript *x;     /* its compiled transcript */
} rutt;

/* The utterances of one score group in one block: one loglikes call per
 * iteration. */
typedef struct {
  int32_t group;        /* index into t->groups; num_groups = all pdfs */
  int64_t u0, u1;       /* rutt range */
  int64_t row0;         /* first row in X */
  int64_t rows;
} sbatch;

/* One block of the plan on this rank: its score groups' loglikes side by
 * side in one matrix of Pmax columns (group g's in its first Pg), then one
 * hmm_fb_pairs / hmm_viterbi call for all of its utterances (a call's
 * fixed cost -- launches, copies, the longest utterance's sequential
 * frames -- paid once per block, not once per group). */
typedef struct {
  int64_t row0, rows;   /* in X */
  int64_t b0, b1;       /* sbatch range */
  int64_t u0, u1;       /* rutt range */
  int32_t Pmax;         /* columns of the block's loglikes: its largest score group */
  gh_dev_hmm *dh;       /* the graphs of the utterances' distinct transcripts gtx */
  int64_t *frame_off;   /* [n + 1] relative to row0 */
  int32_t *graph_idx;   /* [n] utterance -> its transcript's graph (index into gtx) */
  int32_t ng;           /* distinct transcripts (graphs) */
  const tscript **gtx;  /* [ng] in order of first use */
  const gh_hmm_graph **gg; /* [ng] their graphs (&gtx[k]->lg: group-local pdf columns), as uploaded */
  int64_t *gstats_off;  /* [ng + 1] hmm_fb stats offsets (summed over each graph's utterances) */
} rblock;

typedef struct {
  int32_t n;
  int32_t *pdfs;        /* sorted distinct pdf ids */
} pdfset;

struct gh_hmm_trainer {
  gh_backend *b;
  const gh_ops_hmm *hops;
  gh_comm *comm;
  int rank, size;
  gh_hmm_train_opts o;
  gh_shard_plan plan;
  gh_hmm_set *set;
  gh_gmm_set *model;
  const char *feats_rspec, *trans_rspec;
  int32_t sil, P, D;
  /* whole data */
  ent *ents;
  int64_t num_ents, total_frames, num_blocks, num_skipped;
  double load_seconds[4]; /* table of contents + transcripts + plan, features, graphs, the wait for the device (--verbose=1) */
  double toc_seconds[6];  /* ... the first's parts: the feature list's index (keys, headers) and the transcripts' table
                             read side by side, the transcripts' lookups, the plan (sorted keys, blocks, shards), the
                             transcripts compiled; then the index alone, the transcripts alone (their thread) */
  gh_device_opts *dev;     /* the backend's start (gh_device_opts_begin), ended in load_shard once the
                              features are read */
  gh_backend **bp;
  tscript *txs;         /* distinct transcripts */
  int64_t num_txs;
  int32_t num_groups;   /* score groups (pdf sets); utterances with group -1 use all pdfs */
  pdfset *groups;
  /* this rank */
  int64_t blk0, nblk;   /* global block range of this rank */
  rutt *utts;
  int64_t num_utts, rows;
  float *X;             /* [rows x D], backend host memory */
  rblock *blocks;
  sbatch *batches;
  int64_t num_batches;
  int have_ali;         /* Viterbi: an alignment has been made (each block's pairs: vset) */
  int graphs_stale;     /* transitions changed since the graphs were compiled */
  /* scratch */
  float *ll;
  int64_t ll_cap;
  double *stats, *uloglik;
  int64_t stats_cap, uloglik_cap;
  gh_pair_buf *bpairs;  /* [nblk] each block's host pairs (host paths), kept until the next iteration
                           (data_set_pairs) or, Viterbi, until the next alignment */
  gh_dev_data **bdd;    /* [nblk] each block's frames on the backend (uploaded once) and pairs */
  /* --max-device-memory (o.max_device_bytes): blocks whose bdd is evicted after
   * its E-step and reloaded at the start of the block's next one */
  int can_stream;
  unsigned char *bstream, *bplanned; /* [nblk] streamed; placed (resident or streamed) */
  /* Viterbi: [nblk] the block's data holds the pairs of the current alignment (vset), their number and weight */
  unsigned char *vset;
  int64_t *vnp;
  double *vw;
  int64_t resident_bytes, stream_room; /* bytes of the resident blocks; room kept for two streamed ones */
  int32_t num_streamed;
  int stream_logged;
};

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Sorted distinct pdf ids of a compiled graph (malloc'd; *n). */
static int32_t *graph_pdfset(const gh_hmm_compiled *c, int32_t *n) {
  int32_t S = c->graph.num_states, *v = gh_malloc((S ? S : 1) * sizeof(int32_t)), k = 0;
  memcpy(v, c->pdf, S * sizeof(int32_t));
  qsort(v, S, sizeof(int32_t), cmp_i32);
  for (int32_t i = 0; i < S; ++i)
    if (i == 0 || v[i] != v[i - 1]) v[k++] = v[i];
  *n = k;
  return v;
}

static void compile_tx(const gh_hmm_trainer *t, const tscript *x, gh_hmm_compiled *c) {
  double edge = t->o.edge_silence_prob > 0 ? t->o.edge_silence_prob : t->o.silence_prob;
  gh_hmm_compile_transcript_edges(t->set, x->text, t->sil, t->o.silence_prob, edge, c,
                                  t->trans_rspec ? t->trans_rspec : "the single HMM", t->ents[x->first].key);
}

/* t->txs, one per distinct transcript, numbered in order of first use in
 * the plan's (sorted-key) order, and each utterance's (t->ents[u].tx),
 * through a string map of the texts of tr (lib/base/strmap.h).  A
 * 200,000-utterance plan of 10 distinct texts: a sort of the utterances by
 * text took ~0.1 s (bench/RESULTS.md D34). */
static void make_txs(gh_hmm_trainer *t, gh_rand_reader *tr) {
  const int64_t m = t->num_ents;
  gh_strmap seen = {0}; /* text -> its tx */
  size_t txcap = 16;
  t->txs = gh_calloc(txcap, sizeof(tscript));
  t->num_txs = 0;
  for (int64_t u = 0; u < m; ++u) {
    /* no transcripts table: every utterance is the set's one HMM */
    const char *v = tr ? gh_rand_reader_value(tr, t->ents[u].key) : t->set->hmms[0].name;
    int32_t k = gh_strmap_get(&seen, v);
    if (k < 0) {
      if ((size_t)t->num_txs == txcap) {
        t->txs = gh_realloc(t->txs, sizeof(tscript) * (txcap *= 2));
        memset(t->txs + t->num_txs, 0, sizeof(tscript) * (txcap - (size_t)t->num_txs));
      }
      tscript *x = &t->txs[t->num_txs];
      x->text = gh_strdup(v);
      x->first = u;
      x->group = -1;
      k = (int32_t)t->num_txs++;
      gh_strmap_put(&seen, v, k);
    }
    t->ents[u].tx = k;
  }
  gh_strmap_free(&seen);
  t->txs = gh_realloc(t->txs, sizeof(tscript) * (size_t)(t->num_txs ? t->num_txs : 1));
}

/* The table of contents of the features and the plan (drivers/train/shard.h):
 * every utterance with frames and a transcript, sorted keys, fixed blocks,
 * shards; the transcripts of all of them (for the score groups). */
static gh_feat_toc *read_plan(gh_hmm_trainer *t) {
  double q0 = gh_seconds();
  /* the transcripts read on a thread of their own beside the feature index (io/table.h) */
  gh_rand_reader_opening *tro = t->trans_rspec ? gh_rand_reader_open_bg(t->trans_rspec, GH_OBJ_TOKEN_VECTOR) : NULL;
  gh_feat_toc *toc = gh_feat_toc_open(t->feats_rspec);
  t->toc_seconds[4] = gh_seconds() - q0;
  gh_rand_reader *tr = tro ? gh_rand_reader_open_wait(tro, &t->toc_seconds[5]) : NULL;
  double q1 = gh_seconds();
  const int64_t n = gh_feat_toc_size(toc);
  const char **keys = gh_malloc(sizeof(char *) * (size_t)(n ? n : 1));
  int32_t *frames = gh_malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  int64_t m = 0;
  for (int64_t i = 0; i < n; ++i) {
    const char *key = gh_feat_toc_key(toc, i);
    int32_t rows = gh_feat_toc_rows(toc, i);
    if (rows == 0) {
      if (t->rank == 0) gh_warn("%s, key '%s': empty feature matrix; skipped", t->feats_rspec, key);
      ++t->num_skipped;
      continue;
    }
    if (tr && !gh_rand_reader_has_key(tr, key)) {
      if (t->rank == 0) gh_warn_no_key(t->trans_rspec, key, "transcript", "utterance skipped");
      ++t->num_skipped;
      continue;
    }
    if (gh_feat_toc_cols(toc, i) != t->D)
      gh_die_dim(t->feats_rspec, key, "features", gh_feat_toc_cols(toc, i), t->D, "the model");
    keys[m] = key;
    frames[m] = rows;
    t->total_frames += rows;
    ++m;
  }
  if (m == 0)
    gh_die("no utterances to train on in %s (with transcripts in %s)", t->feats_rspec,
           t->trans_rspec ? t->trans_rspec : "none: the single HMM");
  if (t->num_skipped && t->rank == 0)
    gh_warn("%lld utterances of %s skipped (%lld used)", (long long)t->num_skipped, t->feats_rspec, (long long)m);
  double q2 = gh_seconds();
  gh_shard_plan_make(&t->plan, keys, frames, m, t->o.block_frames, t->size, t->feats_rspec);
  double q3 = gh_seconds();
  free(keys);
  free(frames);
  t->num_ents = m;
  t->num_blocks = t->plan.num_blocks;
  t->ents = gh_calloc((size_t)m, sizeof(ent));
  for (int64_t u = 0; u < m; ++u) {
    ent *e = &t->ents[u];
    e->key = t->plan.keys[u];
    e->rows = t->plan.frames[u];
  }
  make_txs(t, tr);
  if (tr) gh_rand_reader_close(tr);
  t->toc_seconds[0] = q1 - q0; /* feature index and transcripts, side by side */
  t->toc_seconds[1] = q2 - q1;
  t->toc_seconds[2] = q3 - q2;
  t->toc_seconds[3] = gh_seconds() - q3;
  return toc;
}

/* Score groups: the distinct pdf sets of the utterances' graphs, in order
 * of first appearance in sorted-key order (the same on every rank); an
 * utterance using more than half of the pdfs is scored against all.  More
 * than max_score_groups sets: everything against all pdfs. */
static void make_groups(gh_hmm_trainer *t) {
  t->num_groups = 0;
  if (t->o.max_score_groups <= 0) return;
  int32_t cap = 0;
  for (int64_t i = 0; i < t->num_txs; ++i) { /* in order of first use */
    gh_hmm_compiled c;
    compile_tx(t, &t->txs[i], &c);
    int32_t n, *v = graph_pdfset(&c, &n);
    gh_hmm_compiled_free(&c);
    if (2 * n > t->P) { free(v); continue; }
    int32_t g = 0;
    for (; g < t->num_groups; ++g)
      if (t->groups[g].n == n && !memcmp(t->groups[g].pdfs, v, n * sizeof(int32_t))) break;
    if (g < t->num_groups) {
      free(v);
    } else {
      if (t->num_groups == t->o.max_score_groups) { /* too many: score everything against all pdfs */
        free(v);
        for (int32_t k = 0; k < t->num_groups; ++k) free(t->groups[k].pdfs);
        free(t->groups);
        t->groups = NULL;
        t->num_groups = 0;
        for (int64_t j = 0; j < t->num_txs; ++j) t->txs[j].group = -1;
        return;
      }
      if (t->num_groups == cap) t->groups = gh_realloc(t->groups, (cap = cap ? 2 * cap : 16) * sizeof(pdfset));
      t->groups[g].n = n;
      t->groups[g].pdfs = v;
      t->num_groups++;
    }
    t->txs[i].group = g;
  }
}

static int32_t ent_group_key(const gh_hmm_trainer *t, int64_t e) {
  int32_t g = t->txs[t->ents[e].tx].group;
  return g < 0 ? t->num_groups : g;
}

/* The same states, pdfs and arcs (sources, destinations, order), whatever
 * the log-probabilities. */
static int same_structure(const gh_hmm_graph *a, const gh_hmm_graph *b) {
  const int32_t S = a->num_states, A = a->num_arcs;
  return S == b->num_states && A == b->num_arcs && a->num_pdfs == b->num_pdfs &&
         !memcmp(a->pdf, b->pdf, S * sizeof(int32_t)) && !memcmp(a->in_off, b->in_off, (S + 1) * sizeof(int32_t)) &&
         !memcmp(a->arc_src, b->arc_src, A * sizeof(int32_t)) && !memcmp(a->arc_dst, b->arc_dst, A * sizeof(int32_t));
}

/* Compiles transcript x (again: the transitions have changed) and its
 * group-local pdf map. */
static void compile_tscript(gh_hmm_trainer *t, tscript *x) {
  gh_hmm_compiled old = x->c;
  compile_tx(t, x, &x->c);
  /* an exit or entry whose probability became 0 drops arcs (gh_hmm_compile) */
  x->restructured = !old.pdf || !same_structure(&old.graph, &x->c.graph);
  gh_hmm_compiled_free(&old);
  int32_t S = x->c.graph.num_states;
  x->lpdf = gh_realloc(x->lpdf, (S ? S : 1) * sizeof(int32_t));
  x->lg = x->c.graph;
  if (x->group < 0) {
    memcpy(x->lpdf, x->c.pdf, S * sizeof(int32_t));
    x->lg.num_pdfs = t->P;
  } else {
    const pdfset *ps = &t->groups[x->group];
    for (int32_t j = 0; j < S; ++j) {
      const int32_t *hit = bsearch(&x->c.pdf[j], ps->pdfs, ps->n, sizeof(int32_t), cmp_i32);
      x->lpdf[j] = (int32_t)(hit - ps->pdfs);
    }
    x->lg.num_pdfs = ps->n;
  }
  x->lg.pdf = x->lpdf;
}

/* Compiles the transcripts this rank's shard uses. */
static void compile_shard_txs(gh_hmm_trainer *t) {
  for (int64_t i = 0; i < t->num_txs; ++i)
    if (t->txs[i].used) compile_tscript(t, &t->txs[i]);
}

/* Read this rank's utterances into X (block order, group order in a block). */
static void load_shard(gh_hmm_trainer *t, gh_feat_toc *toc) {
  const int64_t *blk_u0 = t->plan.block_utt;
  int64_t U0 = blk_u0[t->blk0], U1 = blk_u0[t->blk0 + t->nblk];
  t->num_utts = U1 - U0;
  t->utts = gh_calloc(t->num_utts ? t->num_utts : 1, sizeof(rutt));
  t->blocks = gh_calloc(t->nblk ? t->nblk : 1, sizeof(rblock));
  /* order: per block, stable by group key */
  int64_t k = 0, rows = 0;
  int64_t bcap = 0;
  for (int64_t bi = 0; bi < t->nblk; ++bi) {
    int64_t a = blk_u0[t->blk0 + bi], z = blk_u0[t->blk0 + bi + 1];
    rblock *rb = &t->blocks[bi];
    rb->row0 = rows;
    rb->b0 = t->num_batches;
    rb->u0 = k;
    for (int32_t g = 0; g <= t->num_groups; ++g) {
      int64_t first = k;
      for (int64_t e = a; e < z; ++e) {
        if (ent_group_key(t, e) != g) continue;
        rutt *u = &t->utts[k++];
        u->e = e;
        u->row = rows;
        u->T = t->ents[e].rows;
        rows += u->T;
      }
      if (k == first) continue;
      if (t->num_batches == bcap) t->batches = gh_realloc(t->batches, (bcap = bcap ? 2 * bcap : 64) * sizeof(sbatch));
      sbatch *sb = &t->batches[t->num_batches++];
      memset(sb, 0, sizeof *sb);
      sb->group = g;
      sb->u0 = first;
      sb->u1 = k;
      sb->row0 = t->utts[first].row;
      sb->rows = rows - sb->row0;
    }
    rb->b1 = t->num_batches;
    rb->u1 = k;
    rb->rows = rows - rb->row0;
  }
  t->rows = rows;
  if (rows * (int64_t)t->D > ((int64_t)1 << 62) / (int64_t)sizeof(float)) gh_die("%s: too many frames", t->feats_rspec);
  /* ordinary memory: the frames go to the device once, through the
   * backend's own staging (a streamed block keeps its own page-locked copy);
   * page-locking them is the likely part of the ~0.5 s of the 8 M x 39
   * frames' load that the logged parts did not cover (bench/RESULTS.md
   * D27) */
  t->X = gh_malloc((size_t)(rows ? rows : 1) * t->D * sizeof(float));
  const double tf0 = gh_seconds();
  /* only this shard's matrices are kept (a non-indexed table was read whole) */
  int64_t n = gh_feat_toc_size(toc);
  unsigned char *keep = gh_calloc((size_t)(n ? n : 1), 1);
  int64_t *idx = gh_malloc(sizeof(int64_t) * (size_t)(t->num_utts ? t->num_utts : 1));
  for (int64_t i = 0; i < t->num_utts; ++i) {
    idx[i] = gh_feat_toc_find(toc, t->ents[t->utts[i].e].key);
    keep[idx[i]] = 1;
  }
  gh_feat_toc_keep(toc, keep);
  free(keep);
  float **dst = gh_malloc(sizeof(float *) * (size_t)(t->num_utts ? t->num_utts : 1));
  for (int64_t i = 0; i < t->num_utts; ++i) dst[i] = t->X + t->utts[i].row * t->D;
  gh_feat_toc_read_many(toc, idx, t->num_utts, dst); /* in parallel from an indexed table */
  free(dst);
  free(idx);
  t->load_seconds[1] = gh_seconds() - tf0;
  const double tw0 = gh_seconds();
  t->b = *t->bp = gh_device_opts_end(t->dev); /* started while the features were read */
  t->hops = gh_backend_hmm_ops(t->b);
  t->load_seconds[3] = gh_seconds() - tw0;
  const double tg0 = gh_seconds();
  for (int64_t i = 0; i < t->num_utts; ++i) {
    tscript *x = &t->txs[t->ents[t->utts[i].e].tx];
    x->used = 1;
    t->utts[i].x = x;
  }
  compile_shard_txs(t);
  /* block offsets and graphs: one per distinct transcript of the block */
  int32_t *slot = gh_malloc(sizeof(int32_t) * (size_t)(t->num_txs ? t->num_txs : 1));
  for (int64_t i = 0; i < t->num_txs; ++i) slot[i] = -1;
  for (int64_t bi = 0; bi < t->nblk; ++bi) {
    rblock *rb = &t->blocks[bi];
    int64_t n = rb->u1 - rb->u0;
    rb->frame_off = gh_malloc((n + 1) * sizeof(int64_t));
    rb->graph_idx = gh_malloc((n ? n : 1) * sizeof(int32_t));
    rb->gtx = gh_malloc((n ? n : 1) * sizeof *rb->gtx);
    rb->frame_off[0] = 0;
    rb->ng = 0;
    for (int64_t i = 0; i < n; ++i) {
      const rutt *u = &t->utts[rb->u0 + i];
      const int64_t x = u->x - t->txs;
      if (slot[x] < 0) {
        slot[x] = rb->ng;
        rb->gtx[rb->ng++] = u->x;
      }
      rb->graph_idx[i] = slot[x];
      rb->frame_off[i + 1] = rb->frame_off[i] + u->T;
    }
    rb->gstats_off = gh_malloc((rb->ng + 1) * sizeof(int64_t));
    rb->gg = gh_malloc((rb->ng ? rb->ng : 1) * sizeof *rb->gg);
    rb->gstats_off[0] = 0;
    for (int32_t k = 0; k < rb->ng; ++k) {
      rb->gg[k] = &rb->gtx[k]->lg;
      rb->gstats_off[k + 1] = rb->gstats_off[k] + gh_hmm_graph_stats_size(&rb->gtx[k]->c.graph);
      slot[rb->gtx[k] - t->txs] = -1;
    }
    rb->Pmax = 1;
    for (int64_t k = rb->b0; k < rb->b1; ++k) {
      const sbatch *sb = &t->batches[k];
      const int32_t Pg = sb->group < t->num_groups ? t->groups[sb->group].n : t->P;
      if (Pg > rb->Pmax) rb->Pmax = Pg;
    }
    if (rb->rows * rb->Pmax > t->ll_cap) t->ll_cap = rb->rows * rb->Pmax;
    if (rb->gstats_off[rb->ng] > t->stats_cap) t->stats_cap = rb->gstats_off[rb->ng];
    if (n > t->uloglik_cap) t->uloglik_cap = n;
    rb->dh = t->hops->hmm_upload(t->b, rb->gg, rb->ng);
  }
  free(slot);
  t->load_seconds[2] = gh_seconds() - tg0;
  t->ll = gh_backend_host_alloc(t->b, (size_t)(t->ll_cap ? t->ll_cap : 1) * sizeof(float));
  memset(t->ll, 0, (size_t)(t->ll_cap ? t->ll_cap : 1) * sizeof(float)); /* the columns no group writes */
  t->stats = gh_malloc((size_t)(t->stats_cap ? t->stats_cap : 1) * sizeof(double));
  t->uloglik = gh_malloc((size_t)(t->uloglik_cap ? t->uloglik_cap : 1) * sizeof(double));
}

gh_hmm_trainer *gh_hmm_trainer_new(gh_device_opts *dev, gh_backend **bp, gh_comm *comm, gh_hmm_set *set,
                                   gh_gmm_set *model, const char *feats_rspec, const char *transcripts_rspec,
                                   const gh_hmm_train_opts *o) {
  gh_hmm_trainer *t = gh_calloc(1, sizeof *t);
  t->dev = dev;
  t->bp = bp;
  t->comm = comm;
  t->rank = comm ? gh_comm_rank(comm) : 0;
  t->size = comm ? gh_comm_size(comm) : 1;
  t->o = *o;
  if (t->o.block_frames < 1 || t->o.block_frames > ((int64_t)1 << 30))
    gh_die("--block-frames must be in 1 .. 2^30 (got %lld)", (long long)t->o.block_frames);
  t->set = set;
  t->model = model;
  t->feats_rspec = feats_rspec;
  t->trans_rspec = transcripts_rspec;
  if (!transcripts_rspec && set->num_hmms != 1)
    gh_die("the HMM set has %d HMMs: without a transcripts table it must have exactly one", set->num_hmms);
  t->P = model->num_pdfs;
  t->D = model->dim;
  t->sil = -1;
  if (o->silence && *o->silence && (t->sil = gh_hmm_set_find(set, o->silence)) < 0)
    gh_die("the HMM set has no HMM named '%s' (--optional-silence)", o->silence);
  int32_t hp = gh_hmm_set_num_pdfs(set);
  if (hp > t->P) gh_die("the HMM set uses %d pdfs but the GMM set has only %d", hp, t->P);
  double tl0 = gh_seconds();
  gh_feat_toc *toc = read_plan(t);
  t->load_seconds[0] = gh_seconds() - tl0;
  if (comm) { /* every rank must see the same utterances, frames and transcripts */
    uint64_t h = GH_HASH64_INIT;
    for (int64_t u = 0; u < t->num_ents; ++u) {
      h = gh_hash64(t->ents[u].key, strlen(t->ents[u].key) + 1, h);
      h = gh_hash64(&t->ents[u].rows, sizeof(int32_t), h);
      const char *text = t->txs[t->ents[u].tx].text;
      h = gh_hash64(text, strlen(text) + 1, h);
    }
    gh_comm_check_same(comm, &h, sizeof h, "the data's keys, frame counts and transcripts (ranks read different data)");
  }
  make_groups(t);
  t->blk0 = t->plan.shard_block[t->rank];
  t->nblk = t->plan.shard_block[t->rank + 1] - t->blk0;
  if (comm) {
    char desc[512];
    gh_shard_describe(&t->plan, t->rank, desc, sizeof desc);
    gh_comm_set_context(comm, "%s", desc);
  }
  load_shard(t, toc);
  gh_feat_toc_close(toc);
  const gh_backend *b = t->b;
  gh_vlog(1, "rank %d: loading: table of contents, transcripts and plan %.3g s (feature index and transcripts %.3g s: "
          "the index %.3g s beside the transcripts' %.3g s; transcript lookups %.3g s, plan %.3g s, transcripts "
          "compiled %.3g s), features %.3g s (the device ready %.3g s after), graphs (compile, upload) %.3g s",
          t->rank, t->load_seconds[0], t->toc_seconds[0], t->toc_seconds[4], t->toc_seconds[5], t->toc_seconds[1],
          t->toc_seconds[2], t->toc_seconds[3], t->load_seconds[1], t->load_seconds[3], t->load_seconds[2]);
  t->bpairs = gh_calloc(t->nblk ? t->nblk : 1, sizeof *t->bpairs);
  t->bdd = gh_calloc(t->nblk ? t->nblk : 1, sizeof *t->bdd);
  t->bstream = gh_calloc(t->nblk ? t->nblk : 1, 1);
  t->bplanned = gh_calloc(t->nblk ? t->nblk : 1, 1);
  t->vset = gh_calloc(t->nblk ? t->nblk : 1, 1);
  t->vnp = gh_calloc(t->nblk ? t->nblk : 1, sizeof(int64_t));
  t->vw = gh_calloc(t->nblk ? t->nblk : 1, sizeof(double));
  if (o->max_device_bytes > 0) {
    const gh_backend_ops *ops = b->ops;
    t->can_stream = gh_backend_supports(b, GH_CAP_RESIDENT);
    if (!t->can_stream)
      gh_log("--max-device-memory: the %s backend keeps its data in host memory; nothing to stream", ops->name);
    /* room for two blocks beside the resident ones (one streamed block is
     * reloaded while the one before it is still there): frames padded to 4
     * floats and a (frame, pdf, weight) pair or two per frame, an estimate
     * made before anything is uploaded */
    int64_t largest = 0;
    for (int64_t bi = 0; bi < t->nblk; ++bi) {
      const int64_t est = t->blocks[bi].rows * (((int64_t)t->D + 3) / 4 * 4 * 4 + 2 * 12);
      if (est > largest) largest = est;
    }
    if (t->can_stream && o->max_device_bytes < 2 * largest)
      gh_die("--max-device-memory=%lld bytes cannot hold two blocks of up to %lld bytes: lower --block-frames",
             (long long)o->max_device_bytes, (long long)largest);
    t->stream_room = 2 * largest;
  }
  return t;
}

void gh_hmm_trainer_describe_shard(const gh_hmm_trainer *t, int r, char *buf, size_t n) {
  gh_shard_describe(&t->plan, r, buf, n);
}

void gh_hmm_trainer_sizes(const gh_hmm_trainer *t, int64_t *utts, int64_t *frames, int64_t *rank_utts,
                          int64_t *rank_frames, int64_t *num_blocks, int64_t *rank_block0, int64_t *rank_blocks) {
  if (utts) *utts = t->num_ents;
  if (frames) *frames = t->total_frames;
  if (rank_utts) *rank_utts = t->num_utts;
  if (rank_frames) *rank_frames = t->rows;
  if (num_blocks) *num_blocks = t->num_blocks;
  if (rank_block0) *rank_block0 = t->blk0;
  if (rank_blocks) *rank_blocks = t->nblk;
}

/* A view of pdfs ps of the model (shares the parameter arrays). */
static void sub_model(const gh_gmm_set *m, const pdfset *ps, gh_gmm_set *s) {
  memset(s, 0, sizeof *s);
  s->dim = m->dim;
  s->num_pdfs = ps->n;
  s->form = GH_SET_AM;
  s->pdfs = gh_malloc(ps->n * sizeof(gh_gmm));
  for (int32_t i = 0; i < ps->n; ++i) s->pdfs[i] = m->pdfs[ps->pdfs[i]];
}

/* Flattened layout of everything reduced across ranks. */
static int64_t gmm_accs_size(const gh_accs_set *a) {
  int64_t n = 0;
  for (int32_t p = 0; p < a->num_pdfs; ++p) {
    const gh_gmm_accs *g = &a->pdfs[p];
    int64_t S = g->type == GH_COV_FULL ? (int64_t)g->dim * (g->dim + 1) / 2 : g->dim;
    n += g->num_gauss * (1 + (int64_t)g->dim + S);
  }
  return n;
}

static void gmm_accs_pack(gh_accs_set *a, double *x, int unpack) {
  for (int32_t p = 0; p < a->num_pdfs; ++p) {
    gh_gmm_accs *g = &a->pdfs[p];
    int64_t G = g->num_gauss, D = g->dim, S = g->type == GH_COV_FULL ? D * (D + 1) / 2 : D;
    double *parts[3] = {g->occupancy, g->mean_accs, g->var_accs};
    int64_t sizes[3] = {G, G * D, G * S};
    for (int k = 0; k < 3; ++k) {
      if (unpack) memcpy(parts[k], x, sizes[k] * sizeof(double));
      else memcpy(x, parts[k], sizes[k] * sizeof(double));
      x += sizes[k];
    }
  }
}

static void accs_zero(gh_accs_set *a) {
  for (int32_t p = 0; p < a->num_pdfs; ++p) {
    gh_gmm_accs *g = &a->pdfs[p];
    const int64_t G = g->num_gauss, D = g->dim, S = g->type == GH_COV_FULL ? D * (D + 1) / 2 : D;
    memset(g->occupancy, 0, (size_t)G * sizeof(double));
    memset(g->mean_accs, 0, (size_t)(G * D) * sizeof(double));
    memset(g->var_accs, 0, (size_t)(G * S) * sizeof(double));
  }
}

void gh_hmm_trainer_iter(gh_hmm_trainer *t, int32_t it, gh_hmm_train_iter_stats *st) {
  double t0 = gh_seconds();
  memset(st, 0, sizeof *st);
  gh_backend *b = t->b;
  const int bw = t->o.mode == GH_HMM_TRAIN_BW;
  const int align = !bw && (!t->have_ali || (it >= 0 && it < t->o.num_realign && t->o.realign[it]));
  st->aligned = align;
  if (bw && t->graphs_stale) {
    /* the graphs keep their structure (normally): their new log-probs go
     * where the old ones were on the device (hmm_reweight) */
    compile_shard_txs(t);
    for (int64_t bi = 0; bi < t->nblk; ++bi) {
      rblock *rb = &t->blocks[bi];
      int re = 0;
      for (int32_t g = 0; g < rb->ng; ++g) re |= rb->gtx[g]->restructured;
      if (re) {
        t->hops->hmm_free(b, rb->dh);
        rb->dh = t->hops->hmm_upload(b, rb->gg, rb->ng);
      } else {
        gh_backend_hmm_reweight(b, &rb->dh, rb->gg, rb->ng);
      }
    }
    t->graphs_stale = 0;
  }
  st->graphs_seconds = gh_seconds() - t0;
  /* models on the backend: all pdfs (E-step); per score group, its pdfs
   * scored from that model where the backend can (loglikes_subset_ok: the
   * sub-model's bits), else a sub-model of them */
  double tp = gh_seconds();
  gh_dev_model *dm = b->ops->gmm->model_upload(b, t->model);
  gh_dev_model **gdm = gh_calloc(t->num_groups + 1, sizeof *gdm);
  unsigned char *gsub = gh_calloc(t->num_groups + 1, 1); /* 1: group g scored as a subset of dm */
  gdm[t->num_groups] = dm;
  const int can_subset = gh_backend_supports(b, GH_CAP_SUBSET);
  if (bw || align)
    for (int64_t k = 0; k < t->num_batches; ++k) {
      int32_t g = t->batches[k].group;
      if (gdm[g]) continue;
      if (can_subset && b->ops->subset->loglikes_subset_ok(b, dm, t->groups[g].pdfs, t->groups[g].n)) {
        gdm[g] = dm;
        gsub[g] = 1;
        continue;
      }
      gh_gmm_set s;
      sub_model(t->model, &t->groups[g], &s);
      gdm[g] = b->ops->gmm->model_upload(b, &s);
      free(s.pdfs);
    }
  if (gh_verbose >= 2) {
    int32_t ns = 0;
    for (int32_t g = 0; g < t->num_groups; ++g) ns += gsub[g];
    gh_vlog(2, "iteration %d: %d of %d score groups scored from the whole model, the rest from sub-models", it, ns,
            t->num_groups);
  }
  st->upload_seconds = gh_seconds() - tp;
  gh_accs_set accs;
  gh_accs_init(&accs, t->model);
  gh_hmm_accs haccs;
  gh_hmm_accs_init(&haccs, t->set);
  /* Results that do not depend on R (drivers/train/dist-em.h, dd.h): each
   * block's contributions -- GMM accumulators, transition counts, totals --
   * are summed in double within the block, added into double-double
   * masters block by block, reduced over the ranks in rank order and
   * rounded once.  The GMM accumulators on the device with acc_commit
   * where the backend has it, else on the host after acc_fetch; the rest
   * on the host (hdd: [GMM accs when on the host] HMM counts, 8 totals). */
  const gh_backend_ops *ops = b->ops;
  const int dd_dev = gh_backend_supports(b, GH_CAP_DIST);
  const int64_t ng = gmm_accs_size(&accs), nh = haccs.off[haccs.num_hmms];
  const int64_t hoff = dd_dev ? 0 : ng, nhost = hoff + nh + 8;
  gh_dd_acc hdd;
  gh_dd_acc_init(&hdd, (size_t)nhost);
  double *buf = gh_malloc((size_t)nhost * sizeof(double));
  if (dd_dev) {
    ops->gmm->acc_zero(b, dm);
    ops->dist->acc_commit(b, dm, GH_ACC_MASTER_ZERO);
  }
  for (int64_t bi = 0; bi < t->nblk; ++bi) {
    const rblock *rb = &t->blocks[bi];
    gh_pair_buf *pb = &t->bpairs[bi]; /* (Viterbi without realignment: the last alignment's host pairs) */
    double hmm_ll = 0, hmm_frames = 0, n_ok = 0, n_fail = 0, gmm_ll = 0, gmm_w = 0; /* this block's */
    memset(haccs.counts, 0, (size_t)nh * sizeof(double));
    /* a streamed block's frames go back to the device now, while its
     * utterances are scored and aligned (an asynchronous copy on CUDA) */
    if (t->bstream[bi] && t->bdd[bi]) b->ops->resident->data_reload(b, t->bdd[bi]);
    /* the frames on the device before the first scoring (still without
     * pairs), where the backend scores resident frames (loglikes_data):
     * they are never uploaded again */
    if (!t->bdd[bi] && (bw || align) && gh_backend_supports(b, GH_CAP_RESIDENT))
      gh_backend_data_pairs(b, &t->bdd[bi], t->X + rb->row0 * t->D, (int32_t)rb->rows, t->D, NULL, 0);
    /* (a backend without data_set_pairs uploads the block with its new pairs
     * below anyway: a streamed block's handle is freed after its E-step) */
    int64_t np = 0;
    /* Viterbi without realignment: the block's data holds this alignment's pairs already (the same
     * pairs would be made, sorted and sent again) */
    const int keep = !bw && !align && t->vset[bi] && t->bdd[bi];
    if (bw || align) {
      /* scoring (each score group's rows with its model), forward-backward
       * (the pdf posteriors, hmm-bw's rule) or the Viterbi path (one pair
       * per frame), the block's E-step pairs set in its data: on the device
       * where the backend can (gh_backend_hmm_estep_pairs) */
      const int32_t n = (int32_t)(rb->u1 - rb->u0);
      gh_hmm_batch batch = {n, rb->Pmax, t->ll, rb->frame_off, rb->graph_idx};
      const int32_t nseg = (int32_t)(rb->b1 - rb->b0);
      gh_score_seg *segs = gh_malloc(sizeof(gh_score_seg) * (size_t)(nseg ? nseg : 1));
      for (int64_t k = rb->b0; k < rb->b1; ++k) {
        const sbatch *sb = &t->batches[k];
        const int grp = sb->group < t->num_groups;
        segs[k - rb->b0] = (gh_score_seg){gdm[sb->group], (int32_t)(sb->row0 - rb->row0), (int32_t)sb->rows,
                                          grp ? t->groups[sb->group].n : t->P, grp ? t->groups[sb->group].pdfs : NULL,
                                          gsub[sb->group]};
      }
      if (bw) memset(t->stats, 0, rb->gstats_off[rb->ng] * sizeof(double));
      double sec[4] = {0, 0, 0, 0};
      np = gh_backend_hmm_estep_pairs(b, rb->dh, &batch, rb->gg, &t->bdd[bi], t->X + rb->row0 * t->D, t->D,
                                      (int32_t)rb->rows, segs, nseg, bw ? GH_HMM_ESTEP_FB : GH_HMM_ESTEP_VITERBI, t->ll,
                                      t->o.min_post, t->uloglik, bw ? t->stats : NULL, pb, &gmm_w, sec);
      free(segs);
      st->loglike_seconds += sec[0];
      st->hmm_seconds += sec[1];
      st->pairs_seconds += sec[2];
      st->setpairs_seconds += sec[3];
      st->accumulate_seconds += sec[3];
      /* transition counts: each graph's, summed over its utterances with a path */
      if (bw)
        for (int32_t k = 0; k < rb->ng; ++k)
          gh_hmm_accs_add_stats(&haccs, &rb->gtx[k]->c, t->stats + rb->gstats_off[k]);
      for (int32_t i = 0; i < n; ++i) {
        rutt *u = &t->utts[rb->u0 + i];
        if (t->uloglik[i] == -INFINITY) {
          if (!u->warned) /* once: each iteration's log line counts the failed ones */
            gh_warn("%s, key '%s': no complete path through the HMM (utterance of %d frames); skipped (logged once; "
                    "each iteration's line counts the failed)",
                    t->feats_rspec, t->ents[u->e].key, u->T);
          u->warned = 1;
          ++n_fail;
          continue;
        }
        hmm_ll += t->uloglik[i];
        hmm_frames += u->T;
        ++n_ok;
      }
      if (!bw) { /* the alignment's pairs stay in the block's data (and, from the host path, in pb) */
        t->vset[bi] = 1;
        t->vnp[bi] = np;
        t->vw[bi] = gmm_w;
      }
    } else if (keep) {
      np = t->vnp[bi];
      gmm_w = t->vw[bi];
    } else { /* Viterbi, the block's data gone since its alignment: the host pairs again */
      if (pb->n != t->vnp[bi])
        gh_die("hmm-train: block %lld's alignment is neither in its data nor on the host", (long long)bi);
      np = pb->n;
      gmm_w = t->vw[bi];
      const double ts = gh_seconds();
      if (np > 0) gh_backend_data_pairs(b, &t->bdd[bi], t->X + rb->row0 * t->D, (int32_t)rb->rows, t->D, pb->v, np);
      st->setpairs_seconds += gh_seconds() - ts;
    }
    double tp = gh_seconds();
    if (np > 0) {
      ops->gmm->acc_zero(b, dm);
      gmm_ll = ops->gmm->accumulate(b, dm, t->bdd[bi]);
    }
    if (dd_dev) {
      if (np > 0) ops->dist->acc_commit(b, dm, GH_ACC_COMMIT);
    } else if (np > 0) {
      accs_zero(&accs);
      ops->gmm->acc_fetch(b, dm, &accs); /* adds */
      gmm_accs_pack(&accs, buf, 0);
    } else {
      memset(buf, 0, (size_t)ng * sizeof(double));
    }
    if (t->can_stream && t->bdd[bi]) {
      if (!t->bplanned[bi]) { /* blocks in key order stay resident while they fit */
        const int64_t bytes = b->ops->resident->data_bytes(b, t->bdd[bi]);
        if (t->num_streamed == 0 && t->resident_bytes + bytes + t->stream_room <= t->o.max_device_bytes) {
          t->resident_bytes += bytes;
        } else {
          t->bstream[bi] = 1;
          t->num_streamed++;
        }
        t->bplanned[bi] = 1;
      }
      if (t->bstream[bi] && gh_backend_supports(b, GH_CAP_PAIRS)) {
        b->ops->resident->data_evict(b, t->bdd[bi]);
      } else if (t->bstream[bi]) {
        b->ops->gmm->data_free(b, t->bdd[bi]);
        t->bdd[bi] = NULL;
      }
    }
    memcpy(buf + hoff, haccs.counts, (size_t)nh * sizeof(double));
    double *bt = buf + hoff + nh;
    bt[0] = gmm_ll; bt[1] = gmm_w; bt[2] = hmm_ll; bt[3] = hmm_frames; bt[4] = n_ok; bt[5] = n_fail;
    bt[6] = bt[7] = 0;
    gh_dd_acc_add(&hdd, buf);
    st->accumulate_seconds += gh_seconds() - tp;
  }
  st->estep_seconds = gh_seconds() - t0;
  if (t->can_stream && !t->stream_logged) {
    int64_t planned = 0;
    for (int64_t bi = 0; bi < t->nblk; ++bi) planned += t->bplanned[bi];
    if (planned == t->nblk) {
      gh_log("--max-device-memory=%lld: %lld of %lld blocks resident (%.3g MB), %d streamed (uploaded again at "
             "every iteration from host memory)",
             (long long)t->o.max_device_bytes, (long long)(t->nblk - t->num_streamed), (long long)t->nblk,
             t->resident_bytes / 1e6, t->num_streamed);
      t->stream_logged = 1;
    }
  }

  /* The GMM M-step on the device (backend mstep, as gmm-train's), from the
   * reduced accumulators where they stay, then the model fetched for the
   * host's per-group uploads (and, in an iteration that mixes up, the
   * accumulators for the pdfs' occupancies): unless the accumulators are
   * dumped or GH_MSTEP=host; the host M-step where the device declines
   * (Gaussians to remove, ...). */
  const char *dump = getenv("GH_TRAIN_DUMP_ACCS"), *ms_env = getenv("GH_MSTEP");
  const int64_t mix_target = gh_hmm_train_mixup_target(&t->o, t->P, it);
  const int try_dev_mstep = dd_dev && gh_backend_supports(b, GH_CAP_MSTEP) && !(dump && *dump) && !(ms_env && !strcmp(ms_env, "host"));

  /* reduction over the ranks: every sum in double-double, in rank order,
   * rounded once (comm.h gh_comm_sum_dd) */
  double tr0 = gh_seconds();
  const int R = t->comm ? gh_comm_size(t->comm) : 1;
  if (dd_dev) {
    if (R == 1) {
      ops->dist->acc_commit(b, dm, GH_ACC_MASTER_ROUND);
    } else {
      const int64_t n = ops->dist->acc_raw_size(b, dm);
      double *hl = gh_malloc(sizeof(double) * (size_t)(2 * n + 1));
      ops->dist->acc_master_get(b, dm, hl, hl + n);
      gh_comm_sum_dd(t->comm, hl, hl + n, (size_t)n, hl);
      ops->dist->acc_raw_set(b, dm, hl);
      free(hl);
    }
    if (!try_dev_mstep) ops->gmm->acc_fetch(b, dm, &accs); /* into zeroed accs */
  }
  for (int32_t g = 0; g < t->num_groups; ++g) /* the score groups' models (dm, all pdfs: after the M-step) */
    if (gdm[g] && !gsub[g]) ops->gmm->model_free(b, gdm[g]);
  free(gdm);
  free(gsub);
  gh_dd_acc_reduce(&hdd, t->comm, buf);
  gh_dd_acc_free(&hdd);
  if (!dd_dev) gmm_accs_pack(&accs, buf, 1);
  memcpy(haccs.counts, buf + hoff, (size_t)nh * sizeof(double));
  double *tot = buf + hoff + nh;
  st->gmm_loglike = accs.total_loglike = tot[0];
  st->gmm_frames = accs.total_frames = tot[1];
  st->hmm_loglike = haccs.total_like = tot[2];
  st->hmm_frames = haccs.total_frames = tot[3];
  st->num_utts = tot[4];
  haccs.num_utts = (int64_t)tot[4];
  st->num_failed = tot[5];
  /* test hook (as gmm-train's): rank 0 writes this iteration's reduced sums
   * as raw doubles -- GMM accumulators (per pdf occupancy, first, second
   * order), transition counts, the 6 totals and 2 zeros */
  if (dump && *dump && t->rank == 0) {
    const size_t nall = (size_t)(ng + nh + 8);
    double *all = gh_malloc(sizeof(double) * nall);
    gmm_accs_pack(&accs, all, 0);
    memcpy(all + ng, haccs.counts, (size_t)nh * sizeof(double));
    memcpy(all + ng + nh, tot, 8 * sizeof(double));
    gh_tmpfile *tf = gh_tmpfile_open(dump);
    if (fwrite(all, sizeof(double), nall, gh_tmpfile_fp(tf)) != nall) gh_die("%s: write error", dump);
    gh_tmpfile_commit(tf);
    free(all);
  }
  free(buf);
  st->reduce_seconds = gh_seconds() - tr0;
  if (st->gmm_frames <= 0)
    gh_die("iteration %d: no frames to train on (every utterance of %s failed to align)", it, t->feats_rspec);

  /* M-steps (the same on every rank: same bytes in, same arithmetic) */
  if (bw && t->o.update_transitions) {
    st->trans_updated = gh_hmm_update(t->set, &haccs, &t->o.uo, &st->trans_kept);
    t->graphs_stale = 1;
  }
  double tm0 = gh_seconds();
  st->mstep_on_device = 0;
  if (try_dev_mstep) {
    gh_est_stats local;
    memset(&local, 0, sizeof local);
    if (ops->mstep->mstep(b, dm, &t->o.eo, &local) == 0) {
      ops->mstep->model_fetch(b, dm, t->model);
      if (mix_target > 0) ops->gmm->acc_fetch(b, dm, &accs); /* the reduced accumulators (occupancies), into zeroed accs */
      gh_est_stats_finish(&local, t->P, &st->st);
      st->mstep_on_device = 1;
    } else {
      gh_vlog(1, "iteration %d: GMM M-step on the host: %s", it, gh_last_error());
      ops->gmm->acc_fetch(b, dm, &accs); /* the reduced accumulators, into zeroed accs */
    }
  }
  ops->gmm->model_free(b, dm);
  if (!st->mstep_on_device) gh_gmm_set_update(t->model, &accs, &t->o.eo, &st->st);
  st->mstep_seconds = gh_seconds() - tm0;
  st->num_gauss_before = gh_gmm_set_total_gauss(t->model);
  const int64_t target = mix_target;
  if (target > 0) {
    if (target <= st->num_gauss_before) {
      if (t->rank == 0)
        gh_warn("iteration %d: mix-up target %lld is not more than the current %lld Gaussians: not mixing up", it,
                (long long)target, (long long)st->num_gauss_before);
    } else {
      gh_rng rng;
      gh_rng_seed(&rng, (uint64_t)t->o.seed);
      double *occs = gh_malloc(sizeof(double) * t->P);
      gh_accs_pdf_occs(&accs, occs);
      gh_gmm_set_mixup(t->model, target, occs, t->o.power, t->o.min_count, t->o.perturb, &rng);
      free(occs);
    }
  }
  st->num_gauss = gh_gmm_set_total_gauss(t->model);
  if (!bw) t->have_ali = 1;
  gh_accs_free(&accs);
  gh_hmm_accs_free(&haccs);
  st->seconds = gh_seconds() - t0;
}

void gh_hmm_trainer_free(gh_hmm_trainer *t) {
  if (!t) return;
  for (int64_t bi = 0; bi < t->nblk; ++bi) {
    rblock *rb = &t->blocks[bi];
    if (rb->dh) t->hops->hmm_free(t->b, rb->dh);
    free(rb->frame_off); free(rb->graph_idx); free(rb->gtx); free(rb->gg); free(rb->gstats_off);
  }
  free(t->batches);
  free(t->utts);
  for (int64_t i = 0; i < t->num_txs; ++i) {
    gh_hmm_compiled_free(&t->txs[i].c);
    free(t->txs[i].lpdf);
    free(t->txs[i].text);
  }
  free(t->txs);
  free(t->ents);
  for (int32_t g = 0; g < t->num_groups; ++g) free(t->groups[g].pdfs);
  free(t->groups);
  for (int64_t bi = 0; bi < t->nblk; ++bi) {
    if (t->bdd[bi]) t->b->ops->gmm->data_free(t->b, t->bdd[bi]);
    free(t->bpairs[bi].v);
  }
  free(t->bdd); free(t->bpairs); free(t->bstream); free(t->bplanned);
  free(t->vset); free(t->vnp); free(t->vw);
  free(t->blocks);
  gh_shard_plan_free(&t->plan);
  free(t->X);
  gh_backend_host_free(t->b, t->ll);
  free(t->stats); free(t->uloglik);
  free(t);
}
