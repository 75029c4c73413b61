/* hmm-train.c -- resident HMM-GMM training; see hmm-train.h. */
#include "train/hmm-train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "io/table.h"

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

/* One utterance of the whole data (every rank knows all of them). */
typedef struct {
  char *key;
  char *text;       /* transcript */
  int32_t rows;
  int32_t group;    /* score group; -1 = all pdfs */
  int64_t src;      /* index into the scp index, or -1 (features in mem) */
  float *mem;       /* features read sequentially (non-indexed input), or NULL */
} ent;

/* One utterance of this rank's shard. */
typedef struct {
  int64_t e;            /* index into ents */
  int64_t row;          /* first row in the rank's frame block X */
  int32_t T;
  gh_hmm_compiled c;    /* compiled transcript (global pdf ids) */
  int32_t *lpdf;        /* [S] column of each state's pdf in its score group's loglikes */
  gh_hmm_graph lg;      /* c.graph with pdf = lpdf, num_pdfs = the group's size */
} rutt;

/* The utterances of one score group in one block: one loglikes call and one
 * hmm_fb / hmm_viterbi call per iteration. */
typedef struct {
  int32_t group;        /* index into t->groups; num_groups = all pdfs */
  int64_t u0, u1;       /* rutt range */
  int64_t row0;         /* first row in X */
  int64_t rows;
  gh_dev_hmm *dh;       /* the utterances' graphs (graph k = utterance u0 + k) */
  int64_t *frame_off;   /* [n + 1] relative to row0 */
  int64_t *state_off;   /* [n + 1] gamma offsets */
  int64_t *stats_off;   /* [n + 1] hmm_fb stats offsets */
  int32_t *graph_idx;   /* [n] 0..n-1 */
} sbatch;

typedef struct {
  int64_t row0, rows;   /* in X */
  int64_t b0, b1;       /* sbatch range */
} rblock;

typedef struct {
  int32_t n;
  int32_t *pdfs;        /* sorted distinct pdf ids */
} pdfset;

struct gh_hmm_trainer {
  gh_backend *b;
  const gh_backend_ops *hops;
  gh_hmm_train_comm comm;
  gh_hmm_train_opts o;
  gh_hmm_set *set;
  gh_gmm_set *model;
  const char *feats_rspec, *trans_rspec;
  int32_t sil, P, D;
  /* whole data */
  ent *ents;
  int64_t num_ents, total_frames, num_blocks;
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
  int32_t *ali;         /* Viterbi: [rows] pdf per frame, -1: utterance without alignment */
  int have_ali;
  int graphs_stale;     /* transitions changed since the graphs were compiled */
  /* scratch */
  float *ll, *gamma;
  int64_t ll_cap, gamma_cap;
  double *stats, *uloglik;
  int64_t stats_cap, uloglik_cap;
  int32_t *path;
  int64_t path_cap;
  gh_frame_pdf *pairs;
  int64_t pairs_cap;
  double *pdfsum;
  int32_t *touched;
};

static int cmp_ent(const void *a, const void *b) {
  return strcmp(((const ent *)a)->key, ((const ent *)b)->key);
}

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

static void compile_utt(const gh_hmm_trainer *t, const ent *e, gh_hmm_compiled *c) {
  double edge = t->o.edge_silence_prob > 0 ? t->o.edge_silence_prob : t->o.silence_prob;
  gh_hmm_compile_transcript_edges(t->set, e->text, t->sil, t->o.silence_prob, edge, c, t->trans_rspec, e->key);
}

/* Reads keys, lengths and transcripts of the whole data (features of a
 * non-indexed table too: they cannot be read again by key). */
static void read_index(gh_hmm_trainer *t, gh_scp_index **xp) {
  gh_rand_reader *tr = gh_rand_reader_open(t->trans_rspec, GH_OBJ_TOKEN_VECTOR);
  int64_t cap = 0, skipped = 0;
  gh_scp_index *x = gh_scp_index_open(t->feats_rspec);
  *xp = x;
#define ADD_ENT(KEY, ROWS, COLS, SRC, MEM)                                                                   \
  do {                                                                                                       \
    if ((COLS) != t->D && (ROWS) > 0)                                                                        \
      gh_die("%s, key '%s': features of dimension %d, but the model has dimension %d", t->feats_rspec, KEY,  \
             (int)(COLS), t->D);                                                                             \
    const char *text_ = gh_rand_reader_value(tr, KEY);                                                       \
    if (!text_) {                                                                                            \
      if (t->comm.rank == 0) gh_warn("%s: no transcript for utterance '%s'; skipped", t->trans_rspec, KEY); \
      ++skipped;                                                                                             \
      free(MEM);                                                                                             \
    } else if ((ROWS) == 0) {                                                                                \
      if (t->comm.rank == 0) gh_warn("%s, key '%s': empty feature matrix; skipped", t->feats_rspec, KEY);   \
      ++skipped;                                                                                             \
      free(MEM);                                                                                             \
    } else {                                                                                                 \
      if (t->num_ents == cap) t->ents = gh_realloc(t->ents, (cap = cap ? 2 * cap : 1024) * sizeof(ent));     \
      ent *e_ = &t->ents[t->num_ents++];                                                                     \
      e_->key = gh_strdup(KEY);                                                                              \
      e_->text = gh_strdup(text_);                                                                           \
      e_->rows = (ROWS);                                                                                     \
      e_->group = -1;                                                                                        \
      e_->src = (SRC);                                                                                       \
      e_->mem = (MEM);                                                                                       \
      t->total_frames += (ROWS);                                                                             \
    }                                                                                                        \
  } while (0)
  if (x) {
    for (int64_t i = 0; i < x->n; ++i) ADD_ENT(x->e[i].key, x->e[i].rows, x->e[i].cols, i, (float *)NULL);
  } else {
    /* Not an indexable scp: every rank reads the whole table once (the
     * features of other ranks' shards are dropped after the shard is cut). */
    gh_seq_reader *fr = gh_seq_reader_open(t->feats_rspec, GH_OBJ_MATRIX_VIEW);
    for (; !gh_seq_reader_done(fr); gh_seq_reader_next(fr)) {
      const gh_matrix_view *v = gh_seq_reader_value(fr);
      const char *key = gh_seq_reader_key(fr);
      float *mem = NULL;
      if (v->rows > 0 && v->cols == t->D) {
        mem = gh_malloc((size_t)v->rows * v->cols * sizeof(float));
        gh_matrix_view_copy_finite(v, mem, t->feats_rspec, key);
      }
      ADD_ENT(key, v->rows, v->cols, -1, mem);
    }
    gh_seq_reader_close(fr);
  }
#undef ADD_ENT
  gh_rand_reader_close(tr);
  if (t->num_ents == 0) gh_die("no utterances to train on in %s (with transcripts in %s)", t->feats_rspec, t->trans_rspec);
  if (skipped && t->comm.rank == 0)
    gh_warn("%lld utterances of %s skipped (%lld used)", (long long)skipped, t->feats_rspec, (long long)t->num_ents);
  qsort(t->ents, t->num_ents, sizeof(ent), cmp_ent);
  for (int64_t i = 1; i < t->num_ents; ++i)
    if (!strcmp(t->ents[i].key, t->ents[i - 1].key))
      gh_die("%s: utterance '%s' appears twice", t->feats_rspec, t->ents[i].key);
}

/* Score groups: the distinct pdf sets of the utterances' graphs, in order
 * of first appearance in sorted-key order (the same on every rank); an
 * utterance using more than half of the pdfs is scored against all.  More
 * than max_score_groups sets: everything against all pdfs. */
static void make_groups(gh_hmm_trainer *t) {
  t->num_groups = 0;
  if (t->o.max_score_groups <= 0) return;
  int32_t cap = 0;
  for (int64_t i = 0; i < t->num_ents; ++i) {
    gh_hmm_compiled c;
    compile_utt(t, &t->ents[i], &c);
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
        for (int64_t j = 0; j < t->num_ents; ++j) t->ents[j].group = -1;
        return;
      }
      if (t->num_groups == cap) t->groups = gh_realloc(t->groups, (cap = cap ? 2 * cap : 16) * sizeof(pdfset));
      t->groups[g].n = n;
      t->groups[g].pdfs = v;
      t->num_groups++;
    }
    t->ents[i].group = g;
  }
}

static int32_t ent_group_key(const gh_hmm_trainer *t, int64_t e) {
  int32_t g = t->ents[e].group;
  return g < 0 ? t->num_groups : g;
}

/* Compiles utterance u's transcript and its group-local pdf map. */
static void compile_rutt(gh_hmm_trainer *t, rutt *u) {
  const ent *e = &t->ents[u->e];
  compile_utt(t, e, &u->c);
  int32_t S = u->c.graph.num_states;
  u->lpdf = gh_realloc(u->lpdf, (S ? S : 1) * sizeof(int32_t));
  u->lg = u->c.graph;
  if (e->group < 0) {
    memcpy(u->lpdf, u->c.pdf, S * sizeof(int32_t));
    u->lg.num_pdfs = t->P;
  } else {
    const pdfset *ps = &t->groups[e->group];
    for (int32_t j = 0; j < S; ++j) {
      const int32_t *hit = bsearch(&u->c.pdf[j], ps->pdfs, ps->n, sizeof(int32_t), cmp_i32);
      u->lpdf[j] = (int32_t)(hit - ps->pdfs);
    }
    u->lg.num_pdfs = ps->n;
  }
  u->lg.pdf = u->lpdf;
}

static void upload_batches(gh_hmm_trainer *t) {
  for (int64_t k = 0; k < t->num_batches; ++k) {
    sbatch *sb = &t->batches[k];
    if (sb->dh) t->hops->hmm_free(t->b, sb->dh);
    int64_t n = sb->u1 - sb->u0;
    const gh_hmm_graph **gs = gh_malloc((n ? n : 1) * sizeof *gs);
    for (int64_t i = 0; i < n; ++i) gs[i] = &t->utts[sb->u0 + i].lg;
    sb->dh = t->hops->hmm_upload(t->b, gs, (int32_t)n);
    free(gs);
  }
}

/* Read this rank's utterances into X (block order, group order in a block). */
static void load_shard(gh_hmm_trainer *t, gh_scp_index *x, const int64_t *blk_u0) {
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
    rb->rows = rows - rb->row0;
  }
  t->rows = rows;
  if (rows * (int64_t)t->D > ((int64_t)1 << 62) / (int64_t)sizeof(float)) gh_die("%s: too many frames", t->feats_rspec);
  t->X = gh_backend_host_alloc(t->b, (size_t)(rows ? rows : 1) * t->D * sizeof(float));
  for (int64_t i = 0; i < t->num_utts; ++i) {
    rutt *u = &t->utts[i];
    ent *e = &t->ents[u->e];
    float *dst = t->X + u->row * t->D;
    if (e->mem) {
      memcpy(dst, e->mem, (size_t)u->T * t->D * sizeof(float));
    } else {
      const gh_scp_entry *se = &x->e[e->src];
      size_t bad = 0;
      int r = gh_pread_floats_finite(se->fd, se->offset, dst, (size_t)u->T * t->D, &bad);
      if (r > 0)
        gh_die("%s, key '%s': non-finite feature at frame %lld, dimension %lld", t->feats_rspec, e->key,
               (long long)(bad / t->D), (long long)(bad % t->D));
      if (r < 0) gh_die("%s, key '%s': cannot read the features (file truncated or unreadable)", t->feats_rspec, e->key);
    }
  }
  for (int64_t i = 0; i < t->num_ents; ++i) {
    free(t->ents[i].mem);
    t->ents[i].mem = NULL;
  }
  for (int64_t i = 0; i < t->num_utts; ++i) compile_rutt(t, &t->utts[i]);
  /* batch offsets */
  for (int64_t bi = 0; bi < t->num_batches; ++bi) {
    sbatch *sb = &t->batches[bi];
    int64_t n = sb->u1 - sb->u0;
    sb->frame_off = gh_malloc((n + 1) * sizeof(int64_t));
    sb->state_off = gh_malloc((n + 1) * sizeof(int64_t));
    sb->stats_off = gh_malloc((n + 1) * sizeof(int64_t));
    sb->graph_idx = gh_malloc((n ? n : 1) * sizeof(int32_t));
    sb->frame_off[0] = sb->state_off[0] = sb->stats_off[0] = 0;
    for (int64_t i = 0; i < n; ++i) {
      const rutt *u = &t->utts[sb->u0 + i];
      sb->graph_idx[i] = (int32_t)i;
      sb->frame_off[i + 1] = sb->frame_off[i] + u->T;
      sb->state_off[i + 1] = sb->state_off[i] + (int64_t)u->T * u->c.graph.num_states;
      sb->stats_off[i + 1] = sb->stats_off[i] + gh_hmm_graph_stats_size(&u->c.graph);
    }
    int32_t Pg = sb->group < t->num_groups ? t->groups[sb->group].n : t->P;
    if (sb->rows * Pg > t->ll_cap) t->ll_cap = sb->rows * Pg;
    if (sb->state_off[n] > t->gamma_cap) t->gamma_cap = sb->state_off[n];
    if (sb->stats_off[n] > t->stats_cap) t->stats_cap = sb->stats_off[n];
    if (n > t->uloglik_cap) t->uloglik_cap = n;
    if (sb->rows > t->path_cap) t->path_cap = sb->rows;
  }
  t->ll = gh_backend_host_alloc(t->b, (size_t)(t->ll_cap ? t->ll_cap : 1) * sizeof(float));
  t->gamma = gh_malloc((size_t)(t->gamma_cap ? t->gamma_cap : 1) * sizeof(float));
  t->stats = gh_malloc((size_t)(t->stats_cap ? t->stats_cap : 1) * sizeof(double));
  t->uloglik = gh_malloc((size_t)(t->uloglik_cap ? t->uloglik_cap : 1) * sizeof(double));
  t->path = gh_malloc((size_t)(t->path_cap ? t->path_cap : 1) * sizeof(int32_t));
  upload_batches(t);
}

gh_hmm_trainer *gh_hmm_trainer_new(gh_backend *b, const gh_hmm_train_comm *comm, gh_hmm_set *set,
                                   gh_gmm_set *model, const char *feats_rspec, const char *transcripts_rspec,
                                   const gh_hmm_train_opts *o) {
  gh_hmm_trainer *t = gh_calloc(1, sizeof *t);
  t->b = b;
  t->hops = gh_backend_hmm_ops(b);
  if (comm) t->comm = *comm;
  else t->comm.size = 1;
  if (t->comm.size < 1 || t->comm.rank < 0 || t->comm.rank >= t->comm.size)
    gh_die("hmm-train: bad rank %d of %d", t->comm.rank, t->comm.size);
  t->o = *o;
  if (t->o.block_frames < 1) gh_die("--block-frames must be >= 1 (got %lld)", (long long)t->o.block_frames);
  t->set = set;
  t->model = model;
  t->feats_rspec = feats_rspec;
  t->trans_rspec = transcripts_rspec;
  t->P = model->num_pdfs;
  t->D = model->dim;
  t->sil = -1;
  if (o->silence && *o->silence && (t->sil = gh_hmm_set_find(set, o->silence)) < 0)
    gh_die("the HMM set has no HMM named '%s' (--optional-silence)", o->silence);
  int32_t hp = gh_hmm_set_num_pdfs(set);
  if (hp > t->P) gh_die("the HMM set uses %d pdfs but the GMM set has only %d", hp, t->P);
  gh_scp_index *x = NULL;
  read_index(t, &x);
  make_groups(t);
  /* fixed blocks over the sorted utterances, the same for every R */
  int64_t cap = 64, nb = 0, acc = 0;
  int64_t *blk_u0 = gh_malloc(cap * sizeof(int64_t)), *blk_f0 = gh_malloc(cap * sizeof(int64_t));
  blk_u0[0] = 0;
  blk_f0[0] = 0;
  for (int64_t i = 0; i < t->num_ents; ++i) {
    acc += t->ents[i].rows;
    if (acc >= t->o.block_frames || i == t->num_ents - 1) {
      if (nb + 2 > cap) {
        cap *= 2;
        blk_u0 = gh_realloc(blk_u0, cap * sizeof(int64_t));
        blk_f0 = gh_realloc(blk_f0, cap * sizeof(int64_t));
      }
      blk_u0[nb + 1] = i + 1;
      blk_f0[nb + 1] = blk_f0[nb] + acc;
      ++nb;
      acc = 0;
    }
  }
  t->num_blocks = nb;
  /* contiguous shards balanced by frames: block k goes to the rank whose
   * share [r F / R, (r + 1) F / R) holds its middle frame */
  int64_t R = t->comm.size, F = t->total_frames;
  t->blk0 = -1;
  t->nblk = 0;
  for (int64_t k = 0; k < nb; ++k) {
    double mid = 0.5 * (double)(blk_f0[k] + blk_f0[k + 1]);
    int64_t r = (int64_t)(mid * (double)R / (double)F);
    if (r >= R) r = R - 1;
    if (r == t->comm.rank) {
      if (t->blk0 < 0) t->blk0 = k;
      t->nblk++;
    }
  }
  if (t->blk0 < 0) t->blk0 = 0;
  load_shard(t, x, blk_u0);
  free(blk_u0);
  free(blk_f0);
  if (x) gh_scp_index_free(x);
  t->pdfsum = gh_calloc(t->P, sizeof(double));
  t->touched = gh_malloc(t->P * sizeof(int32_t));
  if (o->mode == GH_HMM_TRAIN_VITERBI) {
    t->ali = gh_malloc((size_t)(t->rows ? t->rows : 1) * sizeof(int32_t));
    for (int64_t i = 0; i < t->rows; ++i) t->ali[i] = -1;
  }
  return t;
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

static void add_pair(gh_hmm_trainer *t, int64_t *n, int32_t frame, int32_t pdf, float w) {
  if (*n == t->pairs_cap) t->pairs = gh_realloc(t->pairs, (t->pairs_cap = t->pairs_cap ? 2 * t->pairs_cap : 65536) * sizeof(gh_frame_pdf));
  t->pairs[*n].frame = frame;
  t->pairs[*n].pdf = pdf;
  t->pairs[*n].weight = w;
  ++*n;
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

void gh_hmm_trainer_iter(gh_hmm_trainer *t, int32_t it, gh_hmm_train_iter_stats *st) {
  double t0 = gh_seconds();
  memset(st, 0, sizeof *st);
  gh_backend *b = t->b;
  const int bw = t->o.mode == GH_HMM_TRAIN_BW;
  const int align = !bw && (!t->have_ali || (it >= 0 && it < t->o.num_realign && t->o.realign[it]));
  st->aligned = align;
  if (bw && t->graphs_stale) {
    for (int64_t i = 0; i < t->num_utts; ++i) {
      gh_hmm_compiled_free(&t->utts[i].c);
      compile_rutt(t, &t->utts[i]);
    }
    upload_batches(t);
    t->graphs_stale = 0;
  }
  /* models on the backend: all pdfs (E-step), one sub-model per score group */
  gh_dev_model *dm = b->ops->model_upload(b, t->model);
  gh_dev_model **gdm = gh_calloc(t->num_groups + 1, sizeof *gdm);
  gdm[t->num_groups] = dm;
  if (bw || align)
    for (int64_t k = 0; k < t->num_batches; ++k) {
      int32_t g = t->batches[k].group;
      if (gdm[g]) continue;
      gh_gmm_set s;
      sub_model(t->model, &t->groups[g], &s);
      gdm[g] = b->ops->model_upload(b, &s);
      free(s.pdfs);
    }
  gh_accs_set accs;
  gh_accs_init(&accs, t->model);
  gh_hmm_accs haccs;
  gh_hmm_accs_init(&haccs, t->set);
  double hmm_ll = 0, hmm_frames = 0, n_ok = 0, n_fail = 0, gmm_ll = 0, gmm_w = 0;
  for (int64_t bi = 0; bi < t->nblk; ++bi) {
    const rblock *rb = &t->blocks[bi];
    int64_t np = 0;
    for (int64_t k = rb->b0; k < rb->b1; ++k) {
      sbatch *sb = &t->batches[k];
      int32_t n = (int32_t)(sb->u1 - sb->u0);
      if (bw || align) {
        int32_t Pg = sb->group < t->num_groups ? t->groups[sb->group].n : t->P;
        b->ops->loglikes(b, gdm[sb->group], t->X + sb->row0 * t->D, (int32_t)sb->rows, t->ll);
        gh_hmm_batch batch = {n, Pg, t->ll, sb->frame_off, sb->graph_idx};
        if (bw) {
          memset(t->stats, 0, sb->stats_off[n] * sizeof(double));
          t->hops->hmm_fb(b, sb->dh, &batch, t->uloglik, t->gamma, t->stats);
        } else {
          t->hops->hmm_viterbi(b, sb->dh, &batch, t->path, t->uloglik);
        }
      }
      for (int32_t i = 0; i < n; ++i) {
        rutt *u = &t->utts[sb->u0 + i];
        int32_t frame0 = (int32_t)(u->row - rb->row0);
        if (bw) {
          if (t->uloglik[i] == -INFINITY) {
            gh_warn("%s, key '%s': no complete path through the HMM (utterance of %d frames); skipped",
                    t->feats_rspec, t->ents[u->e].key, u->T);
            ++n_fail;
            continue;
          }
          hmm_ll += t->uloglik[i];
          hmm_frames += u->T;
          ++n_ok;
          gh_hmm_accs_add_stats(&haccs, &u->c, t->stats + sb->stats_off[i]);
          /* pdf posteriors, hmm-bw's rule */
          int32_t S = u->c.graph.num_states;
          for (int32_t tt = 0; tt < u->T; ++tt) {
            const float *gr = t->gamma + sb->state_off[i] + (int64_t)tt * S;
            int32_t nt = 0;
            for (int32_t j = 0; j < S; ++j) {
              if (gr[j] <= 0) continue;
              int32_t p = u->c.pdf[j];
              if (t->pdfsum[p] == 0) t->touched[nt++] = p;
              t->pdfsum[p] += gr[j];
            }
            for (int32_t q = 0; q < nt; ++q) {
              int32_t p = t->touched[q];
              if (t->pdfsum[p] >= t->o.min_post && t->pdfsum[p] > 0) {
                float w = (float)t->pdfsum[p];
                if (w != 0.0f) add_pair(t, &np, frame0 + tt, p, w);
              }
              t->pdfsum[p] = 0;
            }
          }
        } else {
          int32_t *al = t->ali + u->row;
          if (align) {
            const int32_t *pu = t->path + sb->frame_off[i];
            if (t->uloglik[i] == -INFINITY || pu[0] < 0) {
              gh_warn("%s, key '%s': no complete path through the HMM (utterance of %d frames); skipped",
                      t->feats_rspec, t->ents[u->e].key, u->T);
              ++n_fail;
              for (int32_t tt = 0; tt < u->T; ++tt) al[tt] = -1;
              continue;
            }
            hmm_ll += t->uloglik[i];
            hmm_frames += u->T;
            ++n_ok;
            for (int32_t tt = 0; tt < u->T; ++tt) al[tt] = u->c.pdf[pu[tt]];
          }
          if (al[0] < 0) continue;
          for (int32_t tt = 0; tt < u->T; ++tt) add_pair(t, &np, frame0 + tt, al[tt], 1.0f);
        }
      }
    }
    if (np == 0) continue;
    for (int64_t i = 0; i < np; ++i) gmm_w += t->pairs[i].weight;
    gh_dev_data *dd = b->ops->data_upload(b, t->X + rb->row0 * t->D, (int32_t)rb->rows, t->D, t->pairs, np);
    b->ops->acc_zero(b, dm);
    gmm_ll += b->ops->accumulate(b, dm, dd);
    b->ops->acc_fetch(b, dm, &accs);
    b->ops->data_free(b, dd);
  }
  for (int32_t g = 0; g <= t->num_groups; ++g)
    if (gdm[g]) b->ops->model_free(b, gdm[g]);
  free(gdm);
  st->estep_seconds = gh_seconds() - t0;

  /* reduction: GMM accs, transition accs, totals -- one buffer */
  double tr0 = gh_seconds();
  int64_t ng = gmm_accs_size(&accs), nh = haccs.off[haccs.num_hmms], ntot = ng + nh + 8;
  double *buf = gh_malloc(ntot * sizeof(double));
  gmm_accs_pack(&accs, buf, 0);
  memcpy(buf + ng, haccs.counts, nh * sizeof(double));
  double *tot = buf + ng + nh;
  tot[0] = gmm_ll; tot[1] = gmm_w; tot[2] = hmm_ll; tot[3] = hmm_frames; tot[4] = n_ok; tot[5] = n_fail;
  tot[6] = tot[7] = 0;
  if (t->comm.sum_f64 && t->comm.size > 1) t->comm.sum_f64(t->comm.ctx, buf, ntot);
  gmm_accs_pack(&accs, buf, 1);
  memcpy(haccs.counts, buf + ng, nh * sizeof(double));
  st->gmm_loglike = accs.total_loglike = tot[0];
  st->gmm_frames = accs.total_frames = tot[1];
  st->hmm_loglike = haccs.total_like = tot[2];
  st->hmm_frames = haccs.total_frames = tot[3];
  st->num_utts = tot[4];
  haccs.num_utts = (int64_t)tot[4];
  st->num_failed = tot[5];
  free(buf);
  st->reduce_seconds = gh_seconds() - tr0;
  if (st->gmm_frames <= 0)
    gh_die("iteration %d: no frames to train on (every utterance of %s failed to align)", it, t->feats_rspec);

  /* M-steps (the same on every rank: same bytes in, same arithmetic) */
  if (bw && t->o.update_transitions) {
    st->trans_updated = gh_hmm_update(t->set, &haccs, &t->o.uo, &st->trans_kept);
    t->graphs_stale = 1;
  }
  gh_gmm_set_update(t->model, &accs, &t->o.eo, &st->st);
  st->num_gauss_before = gh_gmm_set_total_gauss(t->model);
  int64_t target = gh_hmm_train_mixup_target(&t->o, t->P, it);
  if (target > 0) {
    if (target <= st->num_gauss_before) {
      if (t->comm.rank == 0)
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
  for (int64_t k = 0; k < t->num_batches; ++k) {
    sbatch *sb = &t->batches[k];
    if (sb->dh) t->hops->hmm_free(t->b, sb->dh);
    free(sb->frame_off); free(sb->state_off); free(sb->stats_off); free(sb->graph_idx);
  }
  free(t->batches);
  for (int64_t i = 0; i < t->num_utts; ++i) {
    gh_hmm_compiled_free(&t->utts[i].c);
    free(t->utts[i].lpdf);
  }
  free(t->utts);
  for (int64_t i = 0; i < t->num_ents; ++i) {
    free(t->ents[i].key); free(t->ents[i].text); free(t->ents[i].mem);
  }
  free(t->ents);
  for (int32_t g = 0; g < t->num_groups; ++g) free(t->groups[g].pdfs);
  free(t->groups);
  free(t->blocks);
  gh_backend_host_free(t->b, t->X);
  gh_backend_host_free(t->b, t->ll);
  free(t->gamma); free(t->stats); free(t->uloglik); free(t->path); free(t->pairs);
  free(t->pdfsum); free(t->touched); free(t->ali);
  free(t);
}
