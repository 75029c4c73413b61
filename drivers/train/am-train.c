/* am-train.c -- resident acoustic-model training (steps/train_mono.sh in one
 * program); see am-train.h. */
#include "train/am-train.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "align/align-batch.h"
#include "align/score-block.h"
#include "base/dd.h"
#include "base/gh-base.h"
#include "base/strmap.h"
#include "decoder/align-report.h"
#include "decoder/training-graph.h"
#include "gmm/init-model.h"
#include "gmm/kaldi-gconst.h"
#include "hmm/hmm-utils.h"
#include "hmm/tree-accu.h"
#include "io/table.h"
#include "tree/build-tree.h"
#include "train/comm.h"
#include "train/device-opts.h"
#include "train/dist-em.h"
#include "train/shard.h"

void gh_am_train_opts_default(gh_am_train_opts *o) {
  memset(o, 0, sizeof *o);
  o->stage = GH_AM_STAGE_MONO;
  o->num_iters = 40;
  o->max_iter_inc = 30;
  o->totgauss = 1000;
  o->boost_silence = 1.0f;
  o->power = 0.25;
  o->initial_beam = 6.0f;
  o->regular_beam = 10.0f;
  o->retry_beam = 40.0f;
  o->transition_scale = 1.0f;
  o->acoustic_scale = 0.1f;
  o->self_loop_scale = 0.1f;
  o->pass0_min_gaussian_occupancy = 3.0;
  gh_est_opts_default(&o->eo);
  o->min_count = 20.0;
  o->perturb = 0.01;
  o->seed = 0;
  o->trans_floor = 0.01f;
  o->trans_min_count = 5.0f;
  o->block_frames = 65536;
  o->kaldi_mixup = 1;
}

/* ------------------------------------------------------------------ */
/* The trainer tools' shared options */

void gh_am_tool_opts_default(gh_am_tool_opts *o, gh_am_stage stage) {
  memset(o, 0, sizeof *o);
  gh_am_train_opts_default(&o->am);
  o->realign_iters = "1 2 3 4 5 6 7 8 9 10 12 14 16 18 20 23 26 29 32 35 38";
  if (stage == GH_AM_STAGE_TRI) {
    o->am.stage = GH_AM_STAGE_TRI;
    o->am.num_iters = 35;
    o->am.max_iter_inc = 25;
    o->am.kaldi_mixup = 1;
    o->realign_iters = "10 20 30";
  }
  o->cmvn_opts = o->delta_opts = o->feats = "";
  gh_comm_opts_default(&o->comm);
}

void gh_am_tool_opts_register(gh_opts *po, gh_am_tool_opts *o,
                              void (*own)(gh_opts *po, gh_am_opts_slot at, void *ctx), void *ctx) {
  gh_am_train_opts *a = &o->am;
#define OWN(slot) \
  if (own) own(po, slot, ctx)
  gh_opts_int(po, "num-iters", &a->num_iters, "Number of iterations of training (the final model is num-iters.mdl)");
  gh_opts_int(po, "max-iter-inc", &a->max_iter_inc, "Last iteration to increase the number of Gaussians on");
  OWN(GH_AM_OPTS_AT_SCHEDULE);
  gh_opts_float(po, "boost-silence", &a->boost_silence,
                "Factor by which to boost silence likelihoods in alignment (lang/phones/optional_silence.csl)");
  gh_opts_string(po, "realign-iters", &o->realign_iters, "Iterations on which to realign");
  gh_opts_double(po, "power", &a->power, "Exponent to determine the number of Gaussians from occupation counts");
  OWN(GH_AM_OPTS_AT_POWER);
  gh_opts_bool(po, "careful", &a->careful, "Careful alignment (gmm-align-compiled --careful)");
  OWN(GH_AM_OPTS_AT_BEAMS);
  gh_opts_float(po, "retry-beam", &a->retry_beam, "Beam of the second try of an utterance that failed to align");
  gh_opts_float(po, "transition-scale", &a->transition_scale, "Transition-probability scale of alignment (scale_opts)");
  gh_opts_float(po, "acoustic-scale", &a->acoustic_scale, "Acoustic scale of alignment (scale_opts)");
  gh_opts_float(po, "self-loop-scale", &a->self_loop_scale, "Self-loop scale of alignment (scale_opts)");
  OWN(GH_AM_OPTS_AT_SCALES);
  gh_opts_string(po, "cmvn-opts", &o->cmvn_opts, "Options of apply-cmvn (e.g. \"--norm-vars=false\")");
  gh_opts_string(po, "delta-opts", &o->delta_opts, "Options of add-deltas");
  gh_opts_string(po, "feats", &o->feats,
                 "Features rspecifier to train on instead of <data-dir>'s feats.scp + cmvn.scp through apply-cmvn "
                 "and add-deltas");
  gh_opts_int(po, "seed", &a->seed, "Seed of the mix-up perturbations (gmm-est --seed)");
  OWN(GH_AM_OPTS_AT_SEED);
  gh_opts_int64(po, "block-frames", &a->block_frames,
                "Frames per fixed block of the E-step (the same for every number of ranks)");
  OWN(GH_AM_OPTS_AT_BLOCK);
#undef OWN
  gh_device_opts_register(po, &o->dev, GH_DEVICE_OPTS_BOTH);
  gh_comm_opts_register(po, &o->comm);
}

uint8_t *gh_am_parse_iters(const char *s, const char *option, int32_t *n) {
  uint8_t *f = gh_calloc(4096, 1);
  *n = 4096;
  for (const char *p = s; *p;) {
    while (*p == ' ' || *p == ',' || *p == '\t') ++p;
    if (!*p) break;
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 1 || v >= 4096) gh_die("%s: bad iteration list '%s'", option, s);
    f[v] = 1;
    p = end;
  }
  return f;
}

void gh_am_tool_opts_check(gh_am_tool_opts *o, int32_t min_iters) {
  const gh_am_train_opts *a = &o->am;
  if (a->num_iters < min_iters) gh_die("--num-iters must be >= %d (got %d)", min_iters, a->num_iters);
  if (a->max_iter_inc < 1) gh_die("--max-iter-inc must be >= 1 (got %d)", a->max_iter_inc);
  if (!(a->boost_silence > 0.0f)) gh_die("--boost-silence must be > 0 (got %g)", (double)a->boost_silence);
  if (a->block_frames < 1) gh_die("--block-frames must be >= 1 (got %lld)", (long long)a->block_frames);
  free(o->realign_flags);
  o->realign_flags = gh_am_parse_iters(o->realign_iters, "--realign-iters", &o->am.num_realign);
  o->am.realign = o->realign_flags;
}

void gh_am_tool_opts_free(gh_am_tool_opts *o) {
  free(o->realign_flags);
  o->realign_flags = NULL;
  o->am.realign = NULL;
}

/* ------------------------------------------------------------------ */
/* gmm-init-mono */

void gh_am_init_mono(const gh_transition_model *topo, int32_t nsets, int32_t *const *sets, const int32_t *sizes,
                     const float *X, int64_t n, int32_t dim, const char *what, gh_gmm_set *model, gh_ctx_dep **ctx) {
  if (n <= 0) gh_die("%s: no features were seen.", what);
  double *ss = gh_calloc((size_t)dim, sizeof(double)), *s = gh_calloc((size_t)dim, sizeof(double));
  double count = 0;
  for (int64_t t = 0; t < n; ++t) { /* Kaldi's order: count, x^2, then x (AccumFullGmm-free form of gmm-init-mono) */
    const float *x = X + t * dim;
    count += 1.0;
    for (int32_t d = 0; d < dim; ++d) ss[d] += (double)x[d] * (double)x[d];
    for (int32_t d = 0; d < dim; ++d) s[d] += (double)x[d];
  }
  const double scale = 1.0 / count;
  for (int32_t d = 0; d < dim; ++d) {
    ss[d] *= scale;
    s[d] *= scale;
  }
  for (int32_t d = 0; d < dim; ++d) ss[d] += -1.0 * s[d] * s[d];
  gh_gmm g = {0};
  gh_gmm_init(&g, GH_COV_DIAG, 1, dim);
  g.weights[0] = 1.0f;
  for (int32_t d = 0; d < dim; ++d) {
    if (ss[d] <= 0.0) gh_die("%s: bad variance %g in dimension %d of the initial model's features", what, ss[d], d);
    const float iv = (float)(1.0 / ss[d]), m = (float)s[d];
    g.inv_vars[d] = iv;
    g.means_invvars[d] = m * iv;
  }
  gh_gmm_kaldi_gconsts(&g, what);
  int32_t max_phone = topo->phones[topo->num_phones - 1];
  int32_t *ncls = gh_calloc((size_t)max_phone + 1, sizeof(int32_t));
  for (int32_t i = 0; i < topo->num_phones; ++i)
    ncls[topo->phones[i]] = gh_topology_num_pdf_classes(topo, topo->phones[i]);
  *ctx = gh_ctx_dep_monophone(nsets, sets, sizes, ncls, max_phone, what);
  const int32_t num_pdfs = gh_ctx_dep_num_pdfs(*ctx);
  gh_gmm_set_free(model);
  model->dim = dim;
  model->num_pdfs = num_pdfs;
  model->form = GH_SET_AM;
  model->pdfs = gh_calloc((size_t)num_pdfs, sizeof(gh_gmm));
  for (int32_t p = 0; p < num_pdfs; ++p) gh_gmm_copy(&model->pdfs[p], &g);
  model->trans = gh_transition_init(topo, *ctx, what);
  gh_gmm_free(&g);
  free(ncls);
  free(ss);
  free(s);
}

/* ------------------------------------------------------------------ */
/* The CPU aligner */

typedef struct {
  gh_decoder **dec; /* one per OpenMP thread */
  int32_t ndec;
} cpu_aligner;

/* x's graph weights := its base weights + -tlp[ilabel] (AddTransitionProbs). */
static void set_weights(const gh_am_align_params *p, gh_am_align_utt *x) {
  const int32_t num_tids = p->model->trans->num_tids;
  gh_dec_graph *g = x->graph;
  for (int64_t k = 0; k < g->num_arcs; ++k) {
    const int32_t l = g->arcs[k].ilabel;
    g->arcs[k].weight = (l >= 1 && l <= num_tids) ? x->base_weight[k] + -p->tlp[l] : x->base_weight[k];
  }
}

/* The end j of the run of utterances u[i .. j) scored in one call (u[i] has
 * a graph): the following ones of the same block, contiguous in its frames,
 * with graphs, up to max_rows rows (*rows: their frames); i + 1 when not
 * by_block (GH_AM_SCORE=utt in the environment). */
static int32_t run_end(const gh_am_align_utt *u, int32_t i, int32_t n, int32_t D, int64_t max_rows, int64_t *rows) {
  const char *how = getenv("GH_AM_SCORE");
  const int by_block = !(how && !strcmp(how, "utt"));
  int64_t r = u[i].T;
  int32_t j = i + 1;
  if (by_block)
    while (j < n && u[j].dd == u[i].dd && u[j].X == u[j - 1].X + (int64_t)u[j - 1].T * D && u[j].graph &&
           u[j].graph->start >= 0 && r + u[j].T <= max_rows) {
      r += u[j].T;
      j++;
    }
  *rows = r;
  return j;
}

/* The aligners' walk over u[0 .. n): from *i, skips the utterances without
 * a graph and scores the next run u[*i .. *j) (run_end) in one call; returns
 * its loglikes [rows x P] (sc's memory, valid until the next call), or NULL
 * when no utterance with a graph is left. */
static const float *next_run(gh_block_scorer *sc, const gh_am_align_utt *u, int32_t *i, int32_t n, int32_t D,
                             int32_t *j) {
  while (*i < n && (!u[*i].graph || u[*i].graph->start < 0)) ++*i;
  if (*i >= n) return NULL;
  int64_t rows;
  *j = run_end(u, *i, n, D, sc->max_rows, &rows);
  return gh_block_scorer_rows(sc, u[*i].dd, u[*i].X - (int64_t)u[*i].row0 * D, u[*i].row0, rows);
}

/* Utterance x aligned on LL [x->T x P] with decoder dec (see gh_am_aligner.align). */
static void align_one(gh_decoder *dec, const gh_am_align_params *p, gh_am_align_utt *x, const float *LL) {
  const gh_transition_model *tm = p->model->trans;
  const int32_t P = p->model->num_pdfs;
  gh_dec_graph *g = x->graph;
  set_weights(p, x);
  gh_dec_opts dopts;
  gh_dec_opts_default(&dopts);
  gh_decoder_reset(dec);
  dopts.beam = p->beam;
  int ok = gh_decoder_decode(dec, g, &dopts, LL, x->T, P, tm->id2pdf, tm->num_tids, p->acoustic_scale, x->key);
  if (!ok && p->retry_beam > 0.0f) {
    x->retried = 1;
    gh_warn("Retrying utterance %s with beam %g", x->key, p->retry_beam);
    dopts.beam = p->retry_beam;
    ok = gh_decoder_decode(dec, g, &dopts, LL, x->T, P, tm->id2pdf, tm->num_tids, p->acoustic_scale, x->key);
  }
  if (!ok) {
    gh_warn("Did not successfully decode file %s, len = %d", x->key, x->T);
    return;
  }
  gh_dec_path path;
  if (!gh_decoder_best_path(dec, &path)) {
    gh_warn("Error getting best path from decoder for %s (likely a bug)", x->key);
    return;
  }
  if (path.num_ilabels != x->T)
    gh_die("internal: utterance %s: alignment of %d transition-ids for %d frames", x->key, path.num_ilabels, x->T);
  memcpy(x->ali, path.ilabels, sizeof(int32_t) * (size_t)x->T);
  x->like = -(double)((path.graph_cost + path.ac_cost) / p->acoustic_scale);
  x->ok = 1;
  gh_dec_path_free(&path);
}

static double cpu_align(gh_am_aligner *a, const gh_am_align_params *p, gh_am_align_utt *u, int32_t n) {
  cpu_aligner *c = a->ctx;
  const int32_t P = p->model->num_pdfs, D = p->model->dim;
  /* the loglikes of a run of utterances of one block in one call (a row's
   * values do not depend on the other rows scored with it: the same
   * alignments and model bytes as per utterance, which the environment's
   * GH_AM_SCORE=utt forces for tests; per utterance, the CPU backend took
   * 15 times as long: 7.6 s against 0.43 s on the test's 200 utterances),
   * then the run's utterances decoded on the OpenMP threads, one decoder
   * each (every utterance's result is its own: the same for any number of
   * threads) */
  gh_block_scorer sc;
  gh_block_scorer_init(&sc, p->b, p->dm, D, P, 0);
  for (int32_t i = 0; i < n; ++i) u[i].ok = u[i].retried = 0, u[i].like = 0;
  const float *LL;
  for (int32_t i = 0, j = 0; (LL = next_run(&sc, u, &i, n, D, &j)); i = j) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(c->ndec)
    for (int32_t k = i; k < j; ++k)
      align_one(c->dec[omp_get_thread_num()], p, &u[k], LL + (u[k].X - u[i].X) / D * P);
  }
  const double t_score = sc.seconds;
  gh_block_scorer_free(&sc);
  return t_score;
}

static void cpu_free(gh_am_aligner *a) {
  cpu_aligner *c = a->ctx;
  for (int32_t k = 0; k < c->ndec; ++k) gh_decoder_free(c->dec[k]);
  free(c->dec);
  free(c);
  free(a);
}

gh_am_aligner *gh_am_aligner_cpu(void) {
  gh_am_aligner *a = gh_calloc(1, sizeof *a);
  cpu_aligner *c = gh_calloc(1, sizeof *c);
  c->ndec = omp_get_max_threads();
  if (c->ndec < 1) c->ndec = 1;
  c->dec = gh_malloc(sizeof(gh_decoder *) * (size_t)c->ndec);
  for (int32_t k = 0; k < c->ndec; ++k) c->dec[k] = gh_decoder_new();
  a->name = "cpu (lib/decoder FasterDecoder, one per thread)";
  a->ctx = c;
  a->align = cpu_align;
  a->free = cpu_free;
  return a;
}

/* ------------------------------------------------------------------ */
/* The batched exact aligner on the device */

typedef struct {
  int32_t batch_size;
  float acoustic_scale;
  gh_am_align_utt **q; /* the utterances given to the batched aligner, in its order */
  int32_t nq, head, cap;
} exact_aligner;

/* gh_aligner_cb: the result of the next queued utterance. */
static void exact_result(void *user, const char *key, int32_t T, const gh_dec_path *path) {
  exact_aligner *c = user;
  gh_am_align_utt *x = c->q[c->head++];
  if (!path) {
    gh_warn("Did not successfully decode file %s, len = %d", key, T);
    return;
  }
  if (path->num_ilabels != T)
    gh_die("internal: utterance %s: alignment of %d transition-ids for %d frames", key, path->num_ilabels, T);
  memcpy(x->ali, path->ilabels, sizeof(int32_t) * (size_t)T);
  x->like = -(double)((path->graph_cost + path->ac_cost) / c->acoustic_scale);
  x->ok = 1;
}

static void graph_copy(gh_dec_graph *dst, const gh_dec_graph *g) {
  *dst = *g;
  dst->arc_start = gh_malloc(((size_t)g->num_states + 1) * sizeof(int64_t));
  memcpy(dst->arc_start, g->arc_start, ((size_t)g->num_states + 1) * sizeof(int64_t));
  dst->arcs = gh_malloc((size_t)(g->num_arcs ? g->num_arcs : 1) * sizeof(gh_dec_arc));
  memcpy(dst->arcs, g->arcs, (size_t)g->num_arcs * sizeof(gh_dec_arc));
  dst->final = gh_malloc((size_t)(g->num_states ? g->num_states : 1) * sizeof(float));
  memcpy(dst->final, g->final, (size_t)g->num_states * sizeof(float));
}

static double exact_align(gh_am_aligner *a, const gh_am_align_params *p, gh_am_align_utt *u, int32_t n) {
  exact_aligner *c = a->ctx;
  const gh_transition_model *tm = p->model->trans;
  const int32_t P = p->model->num_pdfs, D = p->model->dim;
  if (n > c->cap) {
    c->cap = n;
    c->q = gh_realloc(c->q, sizeof(gh_am_align_utt *) * (size_t)n);
  }
  c->nq = c->head = 0;
  c->acoustic_scale = p->acoustic_scale;
  /* gmm-align-compiled --exact's settings: 1 GB of back-pointers per utterance before checkpoints */
  const gh_aligner_opts ao = {c->batch_size, (int64_t)1 << 28, 0, (int64_t)1 << 30};
  gh_aligner *al = gh_aligner_new(p->b, &ao, P, tm->id2pdf, tm->num_tids, p->acoustic_scale, exact_result, c);
  gh_block_scorer sc;
  gh_block_scorer_init(&sc, p->b, p->dm, D, P, 0);
  for (int32_t i = 0; i < n; ++i) u[i].ok = u[i].retried = 0, u[i].like = 0;
  const float *LL;
  for (int32_t i = 0, j = 0; (LL = next_run(&sc, u, &i, n, D, &j)); i = j) {
    for (int32_t k = i; k < j; ++k) {
      gh_am_align_utt *x = &u[k];
      set_weights(p, x);
      const int32_t min_frames = gh_dec_graph_min_frames(x->graph);
      if (min_frames < 0 || x->T < min_frames) { /* the exact search fails for nothing else */
        gh_warn("Did not successfully decode file %s, len = %d", x->key, x->T);
        continue;
      }
      gh_dec_graph g;
      graph_copy(&g, x->graph);
      c->q[c->nq++] = x;
      gh_aligner_add(al, x->key, &g, LL + (x->X - u[i].X) / D * P, x->T);
    }
  }
  gh_aligner_free(al, NULL);
  if (c->head != c->nq) gh_die("internal: %d of %d utterances came back from the batched aligner", c->head, c->nq);
  const double t_score = sc.seconds;
  gh_block_scorer_free(&sc);
  return t_score;
}

static void exact_free(gh_am_aligner *a) {
  exact_aligner *c = a->ctx;
  free(c->q);
  free(c);
  free(a);
}

gh_am_aligner *gh_am_aligner_exact(int32_t batch_size) {
  gh_am_aligner *a = gh_calloc(1, sizeof *a);
  exact_aligner *c = gh_calloc(1, sizeof *c);
  c->batch_size = batch_size > 0 ? batch_size : 1;
  a->name = "exact (drivers/align batched Viterbi on the backend)";
  a->ctx = c;
  a->align = exact_align;
  a->free = exact_free;
  return a;
}

/* ------------------------------------------------------------------ */
/* The trainer */

typedef struct {
  char *key;
  int32_t T, block, row0; /* local block, its first row */
  int32_t *ali;           /* [T] */
  int has_ali;
  gh_dec_graph graph;
  float *base_weight;
  int has_graph;
  int32_t *words, num_words; /* the transcript (word ids): graphs of a later tree */
} am_utt;

struct gh_am_trainer {
  gh_am_train_opts o;
  gh_comm *comm, *own_comm;
  gh_backend *b;
  gh_gmm_set *model;
  gh_ctx_dep **ctx;
  gh_am_aligner *aligner;
  gh_shard_data sd;
  gh_dist_em em;
  int em_started;
  int64_t num_utts, num_frames; /* all ranks */
  int64_t nu;                   /* this rank */
  am_utt *u;
  gh_am_align_utt *au;
  int64_t n0;                   /* initial Gaussians */
};

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

/* The alignments of the rank's utterances as each block's (frame, pdf) pairs
 * (utterances without one left out), given to the backend. */
static void set_pairs(gh_am_trainer *t, int upload) {
  const int32_t *id2pdf = t->model->trans->id2pdf;
  for (int32_t k = 0; k < t->sd.num_blocks; ++k) t->sd.blocks[k].num_pairs = 0;
  for (int64_t i = 0; i < t->nu; ++i) {
    am_utt *u = &t->u[i];
    if (!u->has_ali) continue;
    gh_data *d = &t->sd.blocks[u->block];
    for (int32_t f = 0; f < u->T; ++f) {
      gh_frame_pdf *p = &d->pairs[d->num_pairs++];
      p->frame = u->row0 + f;
      p->pdf = id2pdf[u->ali[f]];
      p->weight = 1.0f;
    }
  }
  for (int32_t k = 0; k < t->sd.num_blocks; ++k) {
    gh_data *d = &t->sd.blocks[k];
    d->total_weight = (double)d->num_pairs;
    if (upload)
      gh_backend_data_pairs(t->b, &t->em.dd[k], d->feats, d->num_frames, d->dim, d->pairs, d->num_pairs);
  }
}

gh_am_trainer *gh_am_trainer_new(gh_device_opts *dev, gh_backend **bp, gh_comm *comm, gh_gmm_set *model,
                                 gh_ctx_dep **ctx, const gh_transition_model *topo, int32_t nsets,
                                 int32_t *const *sets, const int32_t *sizes, gh_fst *lex, const char *lex_name,
                                 const int32_t *disambig, int32_t ndisambig, const char *feats, int64_t num_text,
                                 char *const *text_keys, int32_t *const *words, const int32_t *num_words,
                                 gh_am_aligner *aligner, const gh_am_train_opts *o) {
  gh_am_trainer *t = gh_calloc(1, sizeof *t);
  t->o = *o;
  if (o->stage != GH_AM_STAGE_MONO && o->stage != GH_AM_STAGE_TRI) gh_die("am-train: unknown stage %d", (int)o->stage);
  if (o->num_iters < 1) gh_die("--num-iters must be >= 1 (got %d)", o->num_iters);
  if (o->max_iter_inc < 1) gh_die("--max-iter-inc must be >= 1 (got %d)", o->max_iter_inc);
  t->comm = comm ? comm : (t->own_comm = gh_comm_single());
  t->model = model;
  t->ctx = ctx;
  t->aligner = aligner;
  const int R = gh_comm_size(t->comm), rank = gh_comm_rank(t->comm);

  gh_strmap tx = {0};
  for (int64_t i = 0; i < num_text; ++i) gh_strmap_put(&tx, text_keys[i], (int32_t)i);
  gh_feat_toc *toc = gh_feat_toc_open(feats);
  const int64_t ntoc = gh_feat_toc_size(toc);
  char **keys = gh_malloc(sizeof(char *) * (size_t)(ntoc + 1));
  int32_t *frames = gh_malloc(sizeof(int32_t) * (size_t)(ntoc + 1));
  int64_t n = 0, no_text = 0, empty = 0;
  int32_t dim = -1;
  const char *dim_key = NULL;
  for (int64_t i = 0; i < ntoc; ++i) {
    const char *k = gh_feat_toc_key(toc, i);
    const int32_t rows = gh_feat_toc_rows(toc, i), cols = gh_feat_toc_cols(toc, i);
    if (rows == 0) { empty++; continue; }
    if (dim < 0) { dim = cols; dim_key = k; }
    else if (cols != dim)
      gh_die("%s: utterance %s has features of dimension %d, utterance %s has %d (one dimension for all)", feats, k,
             cols, dim_key, dim);
    if (gh_strmap_get(&tx, k) < 0) { no_text++; continue; }
    keys[n] = (char *)k;
    frames[n++] = rows;
  }
  if (n == 0) gh_die("%s: no utterance with frames and a transcript (%lld without a transcript, %lld empty)", feats,
                     (long long)no_text, (long long)empty);
  if (rank == 0 && no_text) gh_warn("%lld utterances of %s have no transcript and were skipped", (long long)no_text, feats);
  if (rank == 0 && empty) gh_warn("%lld empty feature matrices in %s were skipped", (long long)empty, feats);

  if (model->num_pdfs == 0 && o->stage == GH_AM_STAGE_TRI)
    gh_die("am-train: the triphone stage starts from a model (the monophone stage's)");
  if (model->num_pdfs == 0) { /* gmm-init-mono on the first 10 utterances (train_mono.sh: subset-feats --n=10) */
    int64_t m = n < 10 ? n : 10, tot = 0;
    for (int64_t i = 0; i < m; ++i) tot += frames[i];
    float *X = gh_malloc(sizeof(float) * (size_t)tot * (size_t)dim), *buf = NULL;
    size_t cap = 0;
    int64_t row = 0;
    for (int64_t i = 0; i < m; ++i) {
      gh_matrix_view v;
      const gh_matrix_view *mv = gh_feat_toc_read(toc, gh_feat_toc_find(toc, keys[i]), &buf, &cap, &v);
      if (mv->rows) memcpy(X + row * dim, mv->bytes, sizeof(float) * (size_t)mv->rows * (size_t)dim);
      row += mv->rows;
    }
    gh_am_init_mono(topo, nsets, sets, sizes, X, tot, dim, feats, model, ctx);
    free(X);
    free(buf);
  }
  if (model->dim != dim)
    gh_die("%s: features of dimension %d (utterance %s), the model wants %d", feats, dim, dim_key, model->dim);
  if (!model->trans) gh_die("am-train: the model has no transition model");
  t->n0 = o->numgauss0 > 0 ? o->numgauss0 : gh_gmm_set_total_gauss(model);

  /* plan, this rank's shard */
  gh_shard_plan_make(&t->sd.plan, (const char *const *)keys, frames, n, o->block_frames, R, feats);
  const gh_shard_plan *pl = &t->sd.plan;
  t->num_utts = pl->num_utts;
  t->num_frames = pl->frame_off[pl->num_utts];
  t->sd.shard = rank;
  t->sd.block0 = pl->shard_block[rank];
  t->sd.num_blocks = pl->shard_block[rank + 1] - pl->shard_block[rank];
  t->sd.blocks = gh_calloc((size_t)t->sd.num_blocks + 1, sizeof(gh_data));
  int64_t u0, u1;
  gh_shard_utts(pl, rank, &u0, &u1);
  t->nu = u1 - u0;
  t->u = gh_calloc((size_t)t->nu + 1, sizeof(am_utt));
  t->au = gh_calloc((size_t)t->nu + 1, sizeof(gh_am_align_utt));
  {
    char d[512];
    gh_shard_describe(pl, rank, d, sizeof d);
    gh_comm_set_context(t->comm, "%s", d);
  }
  unsigned char *keep = gh_calloc((size_t)ntoc + 1, 1);
  for (int64_t i = u0; i < u1; ++i) keep[gh_feat_toc_find(toc, pl->keys[i])] = 1;
  gh_feat_toc_keep(toc, keep);
  free(keep);
  float *buf = NULL;
  size_t cap = 0;
  for (int32_t k = 0; k < t->sd.num_blocks; ++k) {
    const int32_t gb = t->sd.block0 + k;
    gh_data *d = &t->sd.blocks[k];
    gh_data_init(d, dim);
    int64_t nf = 0;
    for (int64_t i = pl->block_utt[gb]; i < pl->block_utt[gb + 1]; ++i) nf += pl->frames[i];
    d->feats = gh_malloc(sizeof(float) * (size_t)(nf + 1) * (size_t)dim);
    d->pairs = gh_malloc(sizeof(gh_frame_pdf) * (size_t)(nf + 1));
    d->num_frames = (int32_t)nf;
    int32_t row = 0;
    for (int64_t i = pl->block_utt[gb]; i < pl->block_utt[gb + 1]; ++i) {
      am_utt *u = &t->u[i - u0];
      u->key = pl->keys[i];
      u->T = pl->frames[i];
      u->block = k;
      u->row0 = row;
      u->ali = gh_malloc(sizeof(int32_t) * (size_t)u->T);
      gh_matrix_view v;
      const gh_matrix_view *mv = gh_feat_toc_read(toc, gh_feat_toc_find(toc, u->key), &buf, &cap, &v);
      if (mv->rows != u->T) gh_die("%s: utterance %s changed size while read", feats, u->key);
      memcpy(d->feats + (int64_t)row * dim, mv->bytes, sizeof(float) * (size_t)u->T * (size_t)dim);
      row += u->T;
      d->num_utts++;
    }
    d->max_pdf = model->num_pdfs - 1;
  }
  free(buf);
  gh_feat_toc_close(toc);
  free(keys);
  free(frames);

  /* graphs (compile-train-graphs) and the equal alignment (align-equal-compiled) */
  gh_tgc *gc = o->stage == GH_AM_STAGE_TRI ? NULL
                                           : gh_tgc_new(model->trans, *ctx, lex, disambig, ndisambig, 0.0f, 0.0f, lex_name);
  gh_fst g;
  gh_fst_init(&g);
  char err[512];
  int64_t ngraph_fail = 0, neq_fail = 0;
  for (int64_t i = 0; i < t->nu; ++i) {
    am_utt *u = &t->u[i];
    const int32_t ti = gh_strmap_get(&tx, u->key);
    u->num_words = num_words[ti];
    u->words = gh_malloc(sizeof(int32_t) * (size_t)(num_words[ti] + 1));
    if (num_words[ti]) memcpy(u->words, words[ti], sizeof(int32_t) * (size_t)num_words[ti]);
    if (o->stage == GH_AM_STAGE_TRI) continue; /* graphs after the tree; alignments read */
    if (!gh_tgc_compile(gc, words[ti], num_words[ti], &g, err, sizeof err)) {
      gh_warn("Empty decoding graph for utterance %s (%s); it is not trained on", u->key, err);
      ngraph_fail++;
      continue;
    }
    u->has_ali = gh_equal_align(&g, u->T, gh_kaldi_string_hash(u->key), u->ali, err, sizeof err);
    if (!u->has_ali) {
      gh_warn("AlignEqual: did not align utterance %s (%s)", u->key, err);
      neq_fail++;
    }
    gh_dec_graph_from_fst(&u->graph, &g, o->careful);
    u->base_weight = gh_malloc(sizeof(float) * (size_t)(u->graph.num_arcs + 1));
    for (int64_t a = 0; a < u->graph.num_arcs; ++a) u->base_weight[a] = u->graph.arcs[a].weight;
    u->has_graph = 1;
  }
  gh_fst_free(&g);
  if (gc)
    gh_tgc_free(gc); /* frees lex */
  else
    gh_fst_free(lex);
  gh_strmap_free(&tx);
  if (ngraph_fail || neq_fail)
    gh_warn("rank %d: %lld utterances without a graph, %lld without an equal alignment", rank, (long long)ngraph_fail,
            (long long)neq_fail);

  /* the blocks on the backend */
  *bp = t->b = gh_device_opts_end(dev);
  set_pairs(t, 0);
  gh_dist_em_init(&t->em, t->comm, t->b, t->model, &t->sd, 0);
  t->em_started = 1;
  return t;
}

void gh_am_trainer_sizes(const gh_am_trainer *t, int64_t *utts, int64_t *frames, int64_t *rank_utts,
                         int64_t *rank_frames) {
  *utts = t->num_utts;
  *frames = t->num_frames;
  *rank_utts = t->nu;
  int64_t f = 0;
  for (int32_t k = 0; k < t->sd.num_blocks; ++k) f += t->sd.blocks[k].num_frames;
  *rank_frames = f;
}

int64_t gh_am_trainer_numgauss(const gh_am_trainer *t, int32_t x) {
  const int64_t inc = (t->o.totgauss - t->n0) / t->o.max_iter_inc;
  int32_t k = x - 1;
  if (k < 0) k = 0;
  if (k > t->o.max_iter_inc) k = t->o.max_iter_inc;
  return t->n0 + (int64_t)k * inc;
}

/* The alignment model: silence pdfs' weights times boost, gconsts recomputed
 * (gmm-boost-silence). */
static void boosted_model(const gh_am_trainer *t, gh_gmm_set *out) {
  memset(out, 0, sizeof *out);
  gh_gmm_set_copy(out, t->model);
  const gh_transition_model *tm = out->trans;
  char *sel = gh_calloc((size_t)out->num_pdfs + 1, 1);
  for (int32_t i = 0; i < tm->num_tuples; ++i)
    if (bsearch(&tm->tuples[i].phone, t->o.silence_phones, (size_t)t->o.num_silence_phones, sizeof(int32_t), cmp_i32))
      sel[tm->tuples[i].forward_pdf] = sel[tm->tuples[i].self_loop_pdf] = 1;
  for (int32_t p = 0; p < out->num_pdfs; ++p) {
    if (!sel[p]) continue;
    gh_gmm *g = &out->pdfs[p];
    for (int32_t k = 0; k < g->num_gauss; ++k) g->weights[k] *= t->o.boost_silence;
    gh_gmm_kaldi_gconsts(g, "the boosted alignment model");
  }
  free(sel);
}

static void realign(gh_am_trainer *t, int32_t x, gh_am_pass_stats *st) {
  gh_gmm_set am;
  boosted_model(t, &am);
  float *tlp = gh_transition_scaled_log_probs(am.trans, t->o.transition_scale, t->o.self_loop_scale);
  gh_dev_model *dm = t->b->ops->gmm->model_upload(t->b, &am);
  gh_am_align_params p = {t->b, dm, &am, tlp, x == 1 ? t->o.initial_beam : t->o.regular_beam, t->o.retry_beam,
                          t->o.acoustic_scale};
  int32_t n = 0;
  for (int64_t i = 0; i < t->nu; ++i) {
    am_utt *u = &t->u[i];
    if (!u->has_graph) {
      u->has_ali = 0;
      continue;
    }
    gh_am_align_utt *a = &t->au[n++];
    memset(a, 0, sizeof *a);
    a->key = u->key;
    a->T = u->T;
    a->X = t->sd.blocks[u->block].feats + (int64_t)u->row0 * t->model->dim;
    a->dd = t->em.dd[u->block];
    a->row0 = u->row0;
    a->graph = &u->graph;
    a->base_weight = u->base_weight;
    a->ali = u->ali;
  }
  const double t0 = gh_seconds();
  st->score_seconds = t->aligner->align(t->aligner, &p, t->au, n);
  st->align_seconds = gh_seconds() - t0;
  double hi[5] = {0}, lo[5] = {0};
  n = 0;
  for (int64_t i = 0; i < t->nu; ++i) {
    am_utt *u = &t->u[i];
    if (!u->has_graph) continue;
    gh_am_align_utt *a = &t->au[n++];
    u->has_ali = a->ok;
    if (a->ok) {
      gh_dd_add(&hi[0], &lo[0], a->like);
      gh_dd_add(&hi[1], &lo[1], (double)a->T);
      gh_dd_add(&hi[2], &lo[2], 1.0);
    } else {
      gh_dd_add(&hi[3], &lo[3], 1.0);
    }
    if (a->retried) gh_dd_add(&hi[4], &lo[4], 1.0);
  }
  double s[5];
  gh_comm_sum_dd(t->comm, hi, lo, 5, s);
  st->ali_like = s[0];
  st->ali_frames = s[1];
  st->ali_utts = s[2];
  st->ali_failed = s[3];
  st->ali_retried = s[4];
  st->aligned = 1;
  t->b->ops->gmm->model_free(t->b, dm);
  free(tlp);
  gh_gmm_set_free(&am);
  set_pairs(t, 1);
}

/* gmm-est on a .mdl: transitions, GMMs, pdfs without data, occs, mix-up. */
static void mstep(gh_am_trainer *t, int32_t x, gh_accs_set *accs, const double *tcounts, double *occs_out) {
  gh_gmm_set *model = t->model;
  gh_transition_model *tm = model->trans;
  double impr = 0, count = 0;
  int32_t nfl = 0, nsk = 0;
  gh_transition_mle_update(tm, tcounts, tm->num_tids + 1, t->o.trans_floor, t->o.trans_min_count, &impr, &count,
                           &nfl, &nsk);
  gh_est_opts eo = t->o.eo;
  if (x == 0) eo.min_gaussian_occupancy = t->o.pass0_min_gaussian_occupancy;
  gh_est_stats st;
  memset(&st, 0, sizeof st);
  gh_gmm_set_update(model, accs, &eo, &st);
  if (eo.remove_low_count_gaussians)
    for (int32_t p = 0; p < model->num_pdfs; ++p) { /* as gmm-est: Kaldi keeps the last Gaussian of a pdf without data */
      gh_gmm *g = &model->pdfs[p];
      double occ = 0;
      for (int32_t k = 0; k < accs->pdfs[p].num_gauss; ++k) occ += accs->pdfs[p].occupancy[k];
      if (occ != 0.0 || g->num_gauss <= 1 || g->type != GH_COV_DIAG) continue;
      gh_gmm one = {0};
      gh_gmm_init(&one, GH_COV_DIAG, 1, g->dim);
      const int32_t last = g->num_gauss - 1;
      memcpy(one.means_invvars, g->means_invvars + (int64_t)last * g->dim, sizeof(float) * (size_t)g->dim);
      memcpy(one.inv_vars, g->inv_vars + (int64_t)last * g->dim, sizeof(float) * (size_t)g->dim);
      one.weights[0] = 1.0f;
      gh_gmm_kaldi_gconsts(&one, "am-train");
      gh_gmm_free(g);
      *g = one;
    }
  double *occs = gh_malloc(sizeof(double) * (size_t)model->num_pdfs);
  gh_accs_pdf_occs(accs, occs);
  if (occs_out) memcpy(occs_out, occs, sizeof(double) * (size_t)model->num_pdfs);
  const int64_t target = gh_am_trainer_numgauss(t, x);
  int diag = 1;
  for (int32_t p = 0; p < model->num_pdfs; ++p) diag &= model->pdfs[p].type == GH_COV_DIAG;
  if (t->o.kaldi_mixup && diag && target > 0 && target <= INT32_MAX) {
    /* as gmm-est --mix-up on a .mdl: Kaldi's SplitByCount with its random numbers (rand() from
     * 1 + seed, as each of the script's gmm-est processes) and its targets, which split pdfs
     * below their share even when the total is reached; every pass */
    float *focc = gh_malloc(sizeof(float) * (size_t)(model->num_pdfs + 1));
    for (int32_t p = 0; p < model->num_pdfs; ++p) focc[p] = (float)occs[p];
    srand((unsigned)(1 + t->o.seed));
    gh_gmm_set_split_by_count_kaldi(model, focc, (int32_t)target, (float)t->o.perturb, (float)t->o.power,
                                    (float)t->o.min_count);
    free(focc);
  } else if (target > gh_gmm_set_total_gauss(model)) {
    gh_rng rng;
    gh_rng_seed(&rng, (uint64_t)t->o.seed);
    gh_gmm_set_mixup(model, target, occs, t->o.power, t->o.min_count, t->o.perturb, &rng);
  }
  free(occs);
}

void gh_am_trainer_pass(gh_am_trainer *t, int32_t x, gh_am_pass_stats *st, double *occs) {
  memset(st, 0, sizeof *st);
  st->pass = x;
  const double t0 = gh_seconds();
  if (x >= 1 && x < t->o.num_realign && t->o.realign[x]) realign(t, x, st);
  /* transition counts: integers, the same sum in any order */
  const gh_transition_model *tm = t->model->trans;
  double *tc = gh_calloc((size_t)tm->num_tids + 1, sizeof(double));
  for (int64_t i = 0; i < t->nu; ++i)
    if (t->u[i].has_ali)
      for (int32_t f = 0; f < t->u[i].T; ++f) tc[t->u[i].ali[f]] += 1.0;
  gh_comm_sum_f64(t->comm, tc, (size_t)tm->num_tids + 1);
  const double t1 = gh_seconds();
  gh_accs_set accs;
  gh_dist_em_estep(&t->em, &accs);
  st->like = accs.total_loglike;
  st->frames = accs.total_frames;
  const double t2 = gh_seconds();
  st->estep_seconds = t2 - t1;
  mstep(t, x, &accs, tc, occs);
  gh_dist_em_model_changed(&t->em);
  gh_accs_free(&accs);
  free(tc);
  st->mstep_seconds = gh_seconds() - t2;
  st->num_gauss = gh_gmm_set_total_gauss(t->model);
  st->seconds = gh_seconds() - t0;
}

void gh_am_trainer_set_opts(gh_am_trainer *t, const gh_am_train_opts *o) { t->o = *o; }

void gh_am_trainer_write_ali(gh_am_trainer *t, const char *wspec) {
  gh_writer *w = gh_writer_open(wspec);
  for (int64_t i = 0; i < t->nu; ++i) {
    if (!t->u[i].has_ali) continue;
    gh_ivector v = {t->u[i].T, t->u[i].ali};
    gh_writer_write(w, t->u[i].key, GH_OBJ_INT32_VECTOR, &v);
  }
  gh_writer_close(w);
}

void gh_am_trainer_free(gh_am_trainer *t) {
  if (!t) return;
  if (t->em_started) gh_dist_em_free(&t->em);
  for (int64_t i = 0; i < t->nu; ++i) {
    free(t->u[i].ali);
    free(t->u[i].base_weight);
    free(t->u[i].words);
    if (t->u[i].has_graph) gh_dec_graph_free(&t->u[i].graph);
  }
  free(t->u);
  free(t->au);
  gh_shard_data_free(&t->sd);
  if (t->aligner) t->aligner->free(t->aligner);
  if (t->own_comm) gh_comm_finalize(t->own_comm);
  free(t);
}

/* ------------------------------------------------------------------ */
/* The triphone stage (steps/train_deltas.sh) */

void gh_am_tri_opts_default(gh_am_tri_opts *o) {
  memset(o, 0, sizeof *o);
  o->num_leaves = 0;
  o->context_width = 3;
  o->central_position = 1;
  o->cluster_thresh = -1.0f;
  o->var_floor = 0.01f;
}

int64_t gh_am_trainer_read_ali(gh_am_trainer *t, char *const *rspecs, int32_t n) {
  gh_strmap idx = {0};
  for (int64_t i = 0; i < t->nu; ++i) {
    gh_strmap_put(&idx, t->u[i].key, (int32_t)i);
    t->u[i].has_ali = 0;
  }
  const gh_transition_model *tm = t->model->trans;
  for (int32_t j = 0; j < n; ++j) {
    gh_seq_reader *r = gh_seq_reader_open(rspecs[j], GH_OBJ_INT32_VECTOR);
    for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {
      const char *key = gh_seq_reader_key(r);
      const int32_t i = gh_strmap_get(&idx, key);
      if (i < 0) continue; /* another rank's, or not trained on */
      const gh_ivector *a = gh_seq_reader_value(r);
      am_utt *u = &t->u[i];
      if (a->dim != u->T)
        gh_die("%s: the alignment of %s has %d frames, its features %d", rspecs[j], key, a->dim, u->T);
      gh_transition_check_alignment(tm, a->data, a->dim, rspecs[j], key, "the monophone model");
      memcpy(u->ali, a->data, sizeof(int32_t) * (size_t)u->T);
      u->has_ali = 1;
    }
    gh_seq_reader_close(r);
  }
  gh_strmap_free(&idx);
  int64_t missing = 0;
  for (int64_t i = 0; i < t->nu; ++i) missing += !t->u[i].has_ali;
  set_pairs(t, 1);
  return missing;
}

void gh_am_trainer_tree_stats(gh_am_trainer *t, const gh_am_tri_opts *o, const char *xdir, gh_tree_stats *out) {
  const int32_t D = t->model->dim, R = gh_comm_size(t->comm), nb_all = t->sd.plan.num_blocks;
  gh_tree_accu_opts ao = {o->context_width, o->central_position, o->var_floor, o->ci_phones, o->num_ci_phones,
                           NULL, 0, NULL};
  const gh_transition_model *tm = t->model->trans;
  gh_tree_stats *blk = gh_calloc((size_t)t->sd.num_blocks + 1, sizeof(gh_tree_stats));
  int64_t bad = 0;
  for (int32_t k = 0; k < t->sd.num_blocks; ++k) {
    gh_tree_accu *acc = gh_tree_accu_new(&ao, D);
    for (int64_t i = 0; i < t->nu; ++i) {
      am_utt *u = &t->u[i];
      if (u->block != k || !u->has_ali) continue;
      if (!gh_tree_accu_utterance(acc, tm, u->ali, u->T, t->sd.blocks[k].feats + (int64_t)u->row0 * D, D)) {
        gh_warn("AccumulateTreeStats: alignment appears to be bad, not using it (utterance %s)", u->key);
        bad++;
      }
    }
    gh_tree_stats_init(&blk[k]);
    gh_tree_accu_take(acc, &blk[k]);
    gh_tree_accu_free(acc);
  }
  gh_tree_stats_init(out);
  if (R == 1) {
    for (int32_t k = 0; k < t->sd.num_blocks; ++k) {
      for (int32_t i = 0; i < blk[k].num; ++i) {
        gh_tree_stats_push(out, blk[k].items[i].ev, blk[k].items[i].len, blk[k].items[i].stats, "tree statistics");
        blk[k].items[i].stats = NULL;
      }
    }
  } else { /* through files: every block's statistics, read back in block order on every rank */
    char path[4096];
    for (int32_t k = 0; k < t->sd.num_blocks; ++k) {
      /* through a pipe: a file of gh_ostream_open appears only at the program's exit */
      snprintf(path, sizeof path, "| cat > '%s/.treeacc.%d'", xdir, t->sd.block0 + k);
      gh_tree_stats_write(path, 1, &blk[k]);
    }
    gh_comm_barrier(t->comm);
    for (int32_t b = 0; b < nb_all; ++b) {
      snprintf(path, sizeof path, "%s/.treeacc.%d", xdir, b);
      if (access(path, R_OK) != 0)
        gh_die("%s: cannot read block %d's tree statistics (the ranks must share %s): %s", path, b, xdir,
               strerror(errno));
      gh_tree_stats s;
      gh_tree_stats_read(path, &s);
      for (int32_t i = 0; i < s.num; ++i) {
        gh_tree_stats_push(out, s.items[i].ev, s.items[i].len, s.items[i].stats, path);
        s.items[i].stats = NULL;
      }
      gh_tree_stats_free(&s);
    }
    gh_comm_barrier(t->comm);
    for (int32_t k = 0; k < t->sd.num_blocks; ++k) {
      snprintf(path, sizeof path, "%s/.treeacc.%d", xdir, t->sd.block0 + k);
      unlink(path);
    }
  }
  for (int32_t k = 0; k < t->sd.num_blocks; ++k) gh_tree_stats_free(&blk[k]);
  free(blk);
  gh_tree_stats_sort_merge(out); /* stable: each event's blocks added in block order */
  double bh = (double)bad, bl = 0, btot;
  gh_comm_sum_dd(t->comm, &bh, &bl, 1, &btot);
  if (gh_comm_rank(t->comm) == 0)
    gh_log("tree statistics: %d events, %.0f frames (%.0f bad alignments)", out->num, gh_tree_stats_total_count(out),
           btot);
}

void gh_am_build_tri(const gh_tree_stats *stats, const gh_transition_model *topo, const gh_intlists *sets,
                     const gh_intlists *extra, const gh_roots *roots, const gh_am_tri_opts *o, const char *what,
                     gh_intlists *questions, gh_questions *qst, gh_ctx_dep **ctx_out, gh_gmm_set *model,
                     float **occs_out) {
  const int32_t N = o->context_width, P = o->central_position;
  if (stats->num == 0 || stats->dim < 0) gh_die("%s: no tree statistics (no aligned frames)", what);
  if (o->num_leaves < roots->sets.n)
    gh_die("%s: --num-leaves %d is below the number of roots (%d) of the roots file", what, o->num_leaves,
           roots->sets.n);
  const int32_t max_phone = topo->num_phones > 0 ? topo->phones[topo->num_phones - 1] : 0;
  int32_t *ncls = gh_calloc((size_t)max_phone + 1, sizeof(int32_t));
  int32_t max_pdf_classes = 0;
  for (int32_t i = 0; i < topo->num_phones; ++i) {
    const int32_t c = gh_topology_num_pdf_classes(topo, topo->phones[i]);
    ncls[topo->phones[i]] = c;
    if (c > max_pdf_classes) max_pdf_classes = c;
  }
  { /* the statistics' phones must be roots' (build-tree's check) */
    char *in_roots = gh_calloc((size_t)max_phone + 2, 1);
    for (int32_t i = 0; i < roots->sets.n; ++i)
      for (int32_t j = 0; j < roots->sets.lists[i].len; ++j)
        if (roots->sets.lists[i].v[j] >= 0 && roots->sets.lists[i].v[j] <= max_phone)
          in_roots[roots->sets.lists[i].v[j]] = 1;
    for (int32_t i = 0; i < stats->num; ++i)
      for (int32_t k = 0; k < stats->items[i].len; ++k)
        if (stats->items[i].ev[k].key == P) {
          const int32_t p = stats->items[i].ev[k].value;
          if (p < 0 || p > max_phone || !in_roots[p])
            gh_die("%s: phone %d appears in the tree statistics but not in the roots file (another lang?)", what, p);
        }
    free(in_roots);
  }
  /* cluster-phones (pdf-class 1, Kaldi's rand() from 1), extra questions appended */
  const int32_t cls1 = 1;
  srand(1);
  gh_obtain_questions(stats, sets, &cls1, 1, P, questions);
  for (int32_t i = 0; i < extra->n; ++i) gh_intlists_push(questions, extra->lists[i].v, extra->lists[i].len);
  /* compile-questions (no refinement) */
  gh_intlists q = {0, NULL};
  for (int32_t i = 0; i < questions->n; ++i) gh_intlists_push(&q, questions->lists[i].v, questions->lists[i].len);
  int32_t dup = -1;
  const int32_t removed = gh_intlists_sort_uniq(&q, &dup);
  if (dup >= 0) gh_die("%s: a question (phone sets or extra_questions.int) contains phone %d twice", what, dup);
  if (removed > 0) gh_warn("%d duplicate questions present", removed);
  memset(qst, 0, sizeof *qst);
  for (int32_t n = 0; n < N; ++n) gh_questions_set(qst, n, &q, 0, 2);
  gh_intlists pq = {0, NULL};
  int32_t *cls = gh_malloc((size_t)(max_pdf_classes > 0 ? max_pdf_classes : 1) * sizeof(int32_t));
  for (int32_t i = 0; i < max_pdf_classes - 1; ++i) {
    cls[i] = i;
    gh_intlists_push(&pq, cls, i + 1);
  }
  gh_questions_set(qst, GH_KEY_PDF_CLASS, &pq, 0, 2);
  free(cls);
  gh_intlists_free(&pq);
  gh_intlists_free(&q);
  /* build-tree */
  gh_build_tree_opts bo = {300.0f, o->num_leaves, o->cluster_thresh, P, 1};
  gh_build_tree_info info;
  gh_event_map *to_pdf = gh_build_tree(qst, roots, ncls, max_phone + 1, stats, &bo, &info, what);
  gh_ctx_dep *ctx = gh_calloc(1, sizeof *ctx);
  ctx->N = N;
  ctx->P = P;
  ctx->to_pdf = to_pdf;
  free(ncls);
  /* gmm-init-model --write-occs, gmm-mixup --mix-up=num_leaves */
  gh_transition_model *tm = gh_transition_init(topo, ctx, what);
  gh_init_am_from_tree_stats(stats, ctx, tm, o->var_floor, what, model);
  model->trans = tm;
  float *occs = gh_malloc(sizeof(float) * (size_t)(model->num_pdfs + 1));
  gh_tree_stats_pdf_occs(stats, ctx, what, occs);
  const int64_t before = gh_gmm_set_total_gauss(model);
  srand(1);
  const int64_t after = gh_gmm_set_split_by_count_kaldi(model, occs, o->num_leaves, 0.01f, 0.2f, 20.0f);
  gh_log("tree: %d leaves (%d split, %d after clustering), objective improvement %g over %g frames; %d pdfs, "
         "Gaussians %lld -> %lld (gmm-mixup --mix-up=%d)",
         info.num_leaves, info.split_leaves, info.num_leaves, (double)info.impr, (double)info.normalizer,
         model->num_pdfs, (long long)before, (long long)after, o->num_leaves);
  *ctx_out = ctx;
  *occs_out = occs;
}

void gh_am_trainer_retree(gh_am_trainer *t, gh_gmm_set *new_model, gh_ctx_dep *new_ctx, gh_fst *lex,
                          const char *lex_name, const int32_t *disambig, int32_t ndisambig) {
  const gh_transition_model *old_tm = t->model->trans, *new_tm = new_model->trans;
  char err[512];
  int64_t nconv = 0, nfail = 0, ngraph_fail = 0;
  int32_t *buf = NULL;
  size_t cap = 0;
  for (int64_t i = 0; i < t->nu; ++i) { /* convert-ali */
    am_utt *u = &t->u[i];
    if (!u->has_ali) continue;
    if ((size_t)u->T > cap) buf = gh_realloc(buf, sizeof(int32_t) * (cap = (size_t)u->T));
    if (!gh_convert_alignment(old_tm, new_tm, new_ctx, u->ali, u->T, 1, buf, err, sizeof err)) {
      gh_warn("Could not convert alignment for key %s (%s)", u->key, err);
      u->has_ali = 0;
      nfail++;
      continue;
    }
    memcpy(u->ali, buf, sizeof(int32_t) * (size_t)u->T);
    nconv++;
  }
  free(buf);
  gh_gmm_set_free(t->model);
  *t->model = *new_model;
  memset(new_model, 0, sizeof *new_model);
  gh_ctx_dep_free(*t->ctx);
  *t->ctx = new_ctx;
  /* compile-train-graphs with the new tree */
  gh_tgc *gc = gh_tgc_new(t->model->trans, new_ctx, lex, disambig, ndisambig, 0.0f, 0.0f, lex_name);
  gh_fst g;
  gh_fst_init(&g);
  for (int64_t i = 0; i < t->nu; ++i) {
    am_utt *u = &t->u[i];
    if (u->has_graph) {
      gh_dec_graph_free(&u->graph);
      free(u->base_weight);
      u->base_weight = NULL;
      u->has_graph = 0;
    }
    if (!gh_tgc_compile(gc, u->words, u->num_words, &g, err, sizeof err)) {
      gh_warn("Empty decoding graph for utterance %s (%s); it is not trained on", u->key, err);
      u->has_ali = 0;
      ngraph_fail++;
      continue;
    }
    gh_dec_graph_from_fst(&u->graph, &g, t->o.careful);
    u->base_weight = gh_malloc(sizeof(float) * (size_t)(u->graph.num_arcs + 1));
    for (int64_t a = 0; a < u->graph.num_arcs; ++a) u->base_weight[a] = u->graph.arcs[a].weight;
    u->has_graph = 1;
  }
  gh_fst_free(&g);
  gh_tgc_free(gc);
  if (nfail || ngraph_fail)
    gh_warn("rank %d: %lld alignments not converted, %lld utterances without a graph", gh_comm_rank(t->comm),
            (long long)nfail, (long long)ngraph_fail);
  /* the E-step on the new model */
  if (t->em_started) gh_dist_em_free(&t->em);
  for (int32_t k = 0; k < t->sd.num_blocks; ++k) t->sd.blocks[k].max_pdf = t->model->num_pdfs - 1;
  set_pairs(t, 0);
  gh_dist_em_init(&t->em, t->comm, t->b, t->model, &t->sd, 0);
  t->em_started = 1;
  t->n0 = t->o.numgauss0 > 0 ? t->o.numgauss0 : gh_gmm_set_total_gauss(t->model);
}
