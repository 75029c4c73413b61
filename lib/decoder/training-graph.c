/* training-graph.c -- training graphs straight from the lexicon's paths, and
 * Kaldi's EqualAlign.  See training-graph.h for what the graphs hold. */
#include "decoder/training-graph.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"
#include "base/strmap.h"

/* ---- an int64 -> int32 hash map (open addressing, at most half full) ---- */
typedef struct {
  int64_t *k;
  int32_t *v;
  size_t cap, n;
} i64map;

static size_t i64hash(int64_t k) {
  uint64_t x = (uint64_t)k * 0x9E3779B97F4A7C15ULL;
  return (size_t)(x ^ (x >> 29));
}

static int32_t i64map_get(const i64map *m, int64_t k) {
  if (!m->cap) return -1;
  for (size_t i = i64hash(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (m->v[i] < 0) return -1;
    if (m->k[i] == k) return m->v[i];
  }
}

static void i64map_put(i64map *m, int64_t k, int32_t v) {
  if (2 * (m->n + 1) > m->cap) {
    size_t ncap = m->cap ? 2 * m->cap : 64;
    int64_t *nk = gh_malloc(ncap * sizeof *nk);
    int32_t *nv = gh_malloc(ncap * sizeof *nv);
    for (size_t i = 0; i < ncap; i++) nv[i] = -1;
    for (size_t i = 0; i < m->cap; i++)
      if (m->v[i] >= 0) {
        size_t j = i64hash(m->k[i]) & (ncap - 1);
        while (nv[j] >= 0) j = (j + 1) & (ncap - 1);
        nk[j] = m->k[i], nv[j] = m->v[i];
      }
    free(m->k), free(m->v);
    m->k = nk, m->v = nv, m->cap = ncap;
  }
  size_t i = i64hash(k) & (m->cap - 1);
  while (m->v[i] >= 0) i = (i + 1) & (m->cap - 1);
  m->k[i] = k, m->v[i] = v, m->n++;
}

static void i64map_free(i64map *m) {
  free(m->k), free(m->v);
  memset(m, 0, sizeof *m);
}

/* -log(exp(-a) + exp(-b)): the log semiring's Plus on costs. */
static float log_plus(float a, float b) {
  if (a == GH_FST_ZERO) return b;
  if (b == GH_FST_ZERO) return a;
  float lo = a < b ? a : b, d = fabsf(a - b);
  return lo - (float)log1p(exp(-(double)d));
}

struct gh_tgc {
  const gh_transition_model *tm;
  const gh_ctx_dep *ctx;
  gh_fst lex; /* sorted on output labels */
  char *lex_name;
  float tscale, sscale;
  int32_t num_labels;   /* size of the label tables below */
  uint8_t *is_disambig; /* [num_labels] */
  int32_t num_words;
  uint8_t *is_word;     /* [num_words]: an output label of lex */
  float *nsl;           /* [num_tuples + 1] GetNonSelfLoopLogProb */
  int32_t *self_tid;    /* [num_tuples + 1] self-loop tid or 0 */
  int32_t max_states;   /* most states of a topology entry */
};

int gh_tgc_supports_context(int32_t N, int32_t P) { return P >= 0 && P <= 1 && N - 1 - P >= 0 && N - 1 - P <= 1; }

gh_tgc *gh_tgc_new(const gh_transition_model *tm, const gh_ctx_dep *ctx, gh_fst *lex, const int32_t *disambig,
                   int32_t ndisambig, float transition_scale, float self_loop_scale, const char *lex_name) {
  if (!gh_tgc_supports_context(ctx->N, ctx->P))
    gh_die("the tree has context width %d (central position %d): this graph compiler supports at most one phone "
           "of context on each side (monophone, biphone and triphone trees)",
           ctx->N, ctx->P);
  if (tm->num_phones == 0) gh_die("the transition model has no phones");
  if (lex->start < 0) gh_die("the lexicon FST %s is empty (no start state)", lex_name);
  gh_tgc *c = gh_calloc(1, sizeof *c);
  c->tm = tm, c->ctx = ctx, c->lex = *lex, c->lex_name = gh_malloc(strlen(lex_name) + 1);
  strcpy(c->lex_name, lex_name);
  gh_fst_init(lex);
  c->tscale = transition_scale, c->sscale = self_loop_scale;
  int32_t max_label = tm->phones[tm->num_phones - 1], max_word = 0;
  for (int32_t i = 0; i < ndisambig; i++) {
    if (disambig[i] <= 0) gh_die("disambiguation symbol %d is not a positive label", disambig[i]);
    if (disambig[i] > max_label) max_label = disambig[i];
  }
  for (int32_t s = 0; s < c->lex.nstates; s++)
    for (int32_t a = 0; a < c->lex.states[s].narcs; a++) {
      const gh_fst_arc *arc = &c->lex.states[s].arcs[a];
      if (arc->olabel > max_word) max_word = arc->olabel;
      if (arc->ilabel < 0 || arc->olabel < 0)
        gh_die("the lexicon FST %s has a negative label on an arc of state %d", lex_name, s);
    }
  c->num_labels = max_label + 1;
  c->is_disambig = gh_calloc((size_t)c->num_labels, 1);
  uint8_t *is_phone = gh_calloc((size_t)c->num_labels, 1);
  for (int32_t i = 0; i < tm->num_phones; i++) is_phone[tm->phones[i]] = 1;
  for (int32_t i = 0; i < ndisambig; i++) {
    if (is_phone[disambig[i]]) gh_die("Disambiguation symbol %d is also a phone.", disambig[i]);
    c->is_disambig[disambig[i]] = 1;
  }
  c->num_words = max_word + 1;
  c->is_word = gh_calloc((size_t)c->num_words, 1);
  for (int32_t s = 0; s < c->lex.nstates; s++)
    for (int32_t a = 0; a < c->lex.states[s].narcs; a++) {
      const gh_fst_arc *arc = &c->lex.states[s].arcs[a];
      c->is_word[arc->olabel] = 1;
      int32_t il = arc->ilabel;
      if (il != 0 && (il >= c->num_labels || (!is_phone[il] && !c->is_disambig[il])))
        gh_die("the lexicon FST %s has input label %d on an arc of state %d: neither a phone of the model nor a "
               "disambiguation symbol (--read-disambig-syms)",
               lex_name, il, s);
    }
  free(is_phone);
  gh_fst_arcsort(&c->lex, GH_FST_SORT_OLABEL);
  /* Kaldi's ComputeDerivedOfProbs in float, and each transition-state's self-loop */
  c->nsl = gh_calloc((size_t)tm->num_tuples + 1, sizeof *c->nsl);
  c->self_tid = gh_calloc((size_t)tm->num_tuples + 1, sizeof *c->self_tid);
  for (int32_t ts = 1; ts <= tm->num_tuples; ts++) {
    const gh_trans_tuple *t = &tm->tuples[ts - 1];
    const gh_hmm_state *st = &gh_transition_entry(tm, t->phone)->states[t->hmm_state];
    for (int32_t k = 0; k < st->num_trans; k++)
      if (st->dst[k] == t->hmm_state) c->self_tid[ts] = gh_transition_pair_to_tid(tm, ts, k);
    if (c->self_tid[ts]) {
      float p = expf(gh_transition_log_prob(tm, c->self_tid[ts])), q = 1.0f - p;
      if (q <= 0.0f) {
        gh_warn("non-self-loop probability of transition-state %d is %g", ts, q);
        q = 1.0e-10f;
      }
      c->nsl[ts] = logf(q);
    }
  }
  for (int32_t e = 0; e < tm->num_entries; e++)
    if (tm->entries[e].num_states > c->max_states) c->max_states = tm->entries[e].num_states;
  return c;
}

void gh_tgc_free(gh_tgc *c) {
  if (!c) return;
  gh_fst_free(&c->lex);
  free(c->lex_name), free(c->is_disambig), free(c->is_word), free(c->nsl), free(c->self_tid);
  free(c);
}

/* Index of the first arc of lexicon state s with olabel >= o (arcs sorted on olabels). */
static int32_t lex_lower(const gh_fst_state *st, int32_t o) {
  int32_t lo = 0, hi = st->narcs;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (st->arcs[mid].olabel < o) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* One phone arc out of an epsilon closure: an HMM instance. */
typedef struct {
  int32_t phone, olabel, dest;
  float weight;
} emit_arc;

typedef struct {
  int32_t r, olabel;
  float w;
} clos_entry;

typedef struct {
  gh_tgc *c;
  gh_fst p;          /* lexicon paths of the transcript (phones or 0 in, words out) */
  uint8_t *coacc;    /* [p.nstates] */
  int32_t *ebase, *ecount; /* [p.nstates] emit arcs of each closure, ebase -1: not yet */
  float *efinal;     /* [p.nstates] final cost of each closure */
  emit_arc *emits;
  int32_t nemits, cap_emits;
  clos_entry *cl;
  int32_t ncl, cap_cl;
  /* the determinized phone-level graph D: states are subsets of weighted P states */
  int32_t nd, cap_d;
  int32_t *dbase, *dcount; /* [nd] arcs of each D state in dem */
  float *dfinal;           /* [nd] */
  emit_arc *dem;           /* D's arcs (dest: a D state): the HMM instances */
  int32_t ndem, cap_dem;
} build;

static void closure_dfs(build *b, int32_t r, int32_t olabel, float w, int depth) {
  gh_tgc *c = b->c;
  if (depth > b->p.nstates + 1)
    gh_die("the lexicon FST %s has a cycle of arcs without phones (epsilon cycle)", c->lex_name);
  if (b->ncl == b->cap_cl) {
    b->cap_cl = b->cap_cl ? 2 * b->cap_cl : 16;
    b->cl = gh_realloc(b->cl, (size_t)b->cap_cl * sizeof *b->cl);
  }
  b->cl[b->ncl++] = (clos_entry){r, olabel, w};
  const gh_fst_state *st = &b->p.states[r];
  for (int32_t a = 0; a < st->narcs; a++) {
    const gh_fst_arc *arc = &st->arcs[a];
    if (arc->ilabel != 0 || !b->coacc[arc->nextstate]) continue;
    if (olabel && arc->olabel)
      gh_die("the lexicon FST %s has two word labels on a path without phones between them (not supported)",
             c->lex_name);
    closure_dfs(b, arc->nextstate, olabel ? olabel : arc->olabel, w + arc->weight, depth + 1);
  }
}

/* Fills the emit arcs and final cost of the closure of composed state q. */
static void expand_closure(build *b, int32_t q) {
  if (b->ebase[q] >= 0) return;
  b->ncl = 0;
  closure_dfs(b, q, 0, GH_FST_ONE, 0);
  int32_t base = b->nemits;
  float fin = GH_FST_ZERO;
  for (int32_t e = 0; e < b->ncl; e++) {
    const clos_entry *ce = &b->cl[e];
    const gh_fst_state *st = &b->p.states[ce->r];
    if (st->final != GH_FST_ZERO) {
      if (ce->olabel)
        gh_die("the lexicon FST %s has a word label on a path without phones into a final state (not supported)",
               b->c->lex_name);
      fin = log_plus(fin, ce->w + st->final);
    }
    for (int32_t a = 0; a < st->narcs; a++) {
      const gh_fst_arc *arc = &st->arcs[a];
      if (arc->ilabel == 0 || !b->coacc[arc->nextstate]) continue;
      if (ce->olabel && arc->olabel)
        gh_die("the lexicon FST %s has two word labels on one phone arc's path (not supported)", b->c->lex_name);
      emit_arc em = {arc->ilabel, ce->olabel ? ce->olabel : arc->olabel, arc->nextstate, ce->w + arc->weight};
      int32_t i;
      for (i = base; i < b->nemits; i++) /* paths with the same labels: Kaldi's log-semiring sum */
        if (b->emits[i].phone == em.phone && b->emits[i].olabel == em.olabel && b->emits[i].dest == em.dest) break;
      if (i < b->nemits) {
        b->emits[i].weight = log_plus(b->emits[i].weight, em.weight);
        continue;
      }
      if (b->nemits == b->cap_emits) {
        b->cap_emits = b->cap_emits ? 2 * b->cap_emits : 64;
        b->emits = gh_realloc(b->emits, (size_t)b->cap_emits * sizeof *b->emits);
      }
      b->emits[b->nemits++] = em;
    }
  }
  b->ebase[q] = base, b->ecount[q] = b->nemits - base, b->efinal[q] = fin;
}

/* ---- log-semiring determinization of the phone level (Kaldi determinizes the
 * transition-id level, DeterminizeStarInLog; distinct phones have distinct
 * transition-ids, so this gives the same branching) ---- */
typedef struct {
  int32_t q;
  float v; /* residual cost */
} subset_elem;

typedef struct {
  int32_t phone, olabel, q;
  float w;
} det_trans;

static int cmp_det_trans(const void *x, const void *y) {
  const det_trans *a = x, *b = y;
  if (a->phone != b->phone) return a->phone < b->phone ? -1 : 1;
  if (a->olabel != b->olabel) return a->olabel < b->olabel ? -1 : 1;
  return a->q < b->q ? -1 : a->q > b->q;
}

typedef struct {
  gh_strmap ids;
  subset_elem *els;
  int64_t nels, cap_els;
  int64_t *sbase;
  int32_t *scount;
  char *key;
  size_t cap_key;
} subsets;

/* The D state of subset els[n] (sorted by q, unique), added if new. */
static int32_t subset_get(build *b, subsets *ss, const subset_elem *els, int32_t n) {
  size_t need = (size_t)n * 24 + 1;
  if (need > ss->cap_key) ss->key = gh_realloc(ss->key, ss->cap_key = 2 * need);
  char *k = ss->key;
  for (int32_t i = 0; i < n; i++) {
    uint32_t bits;
    memcpy(&bits, &els[i].v, sizeof bits);
    k += sprintf(k, "%d:%08x,", els[i].q, bits);
  }
  int32_t id = gh_strmap_get(&ss->ids, ss->key);
  if (id >= 0) return id;
  id = b->nd++;
  gh_strmap_put(&ss->ids, ss->key, id);
  if (id >= b->cap_d) {
    b->cap_d = b->cap_d ? 2 * b->cap_d : 64;
    b->dbase = gh_realloc(b->dbase, (size_t)b->cap_d * sizeof *b->dbase);
    b->dcount = gh_realloc(b->dcount, (size_t)b->cap_d * sizeof *b->dcount);
    b->dfinal = gh_realloc(b->dfinal, (size_t)b->cap_d * sizeof *b->dfinal);
    ss->sbase = gh_realloc(ss->sbase, (size_t)b->cap_d * sizeof *ss->sbase);
    ss->scount = gh_realloc(ss->scount, (size_t)b->cap_d * sizeof *ss->scount);
  }
  while (ss->nels + n > ss->cap_els) {
    ss->cap_els = ss->cap_els ? 2 * ss->cap_els : 256;
    ss->els = gh_realloc(ss->els, (size_t)ss->cap_els * sizeof *ss->els);
  }
  memcpy(ss->els + ss->nels, els, (size_t)n * sizeof *els);
  ss->sbase[id] = ss->nels, ss->scount[id] = n;
  ss->nels += n;
  return id;
}

/* Builds D from P's start state (closures through expand_closure). */
static void determinize(build *b, int32_t pstart) {
  subsets ss = {0};
  det_trans *tr = NULL;
  int32_t ntr = 0, cap_tr = 0;
  subset_elem *nel = NULL;
  int32_t cap_nel = 0;
  subset_elem e0 = {pstart, 0.0f};
  subset_get(b, &ss, &e0, 1);
  for (int32_t d = 0; d < b->nd; d++) {
    ntr = 0;
    float fin = GH_FST_ZERO;
    for (int32_t i = 0; i < ss.scount[d]; i++) {
      subset_elem el = ss.els[ss.sbase[d] + i];
      expand_closure(b, el.q);
      if (b->efinal[el.q] != GH_FST_ZERO) fin = log_plus(fin, el.v + b->efinal[el.q]);
      for (int32_t e = 0; e < b->ecount[el.q]; e++) {
        const emit_arc *em = &b->emits[b->ebase[el.q] + e];
        if (ntr == cap_tr) tr = gh_realloc(tr, (size_t)(cap_tr = cap_tr ? 2 * cap_tr : 64) * sizeof *tr);
        tr[ntr++] = (det_trans){em->phone, em->olabel, em->dest, el.v + em->weight};
      }
    }
    qsort(tr, (size_t)ntr, sizeof *tr, cmp_det_trans);
    b->dfinal[d] = fin;
    b->dbase[d] = b->ndem, b->dcount[d] = 0;
    for (int32_t i = 0; i < ntr;) {
      int32_t j = i;
      float w = GH_FST_ZERO;
      while (j < ntr && tr[j].phone == tr[i].phone && tr[j].olabel == tr[i].olabel) w = log_plus(w, tr[j++].w);
      if (j - i > cap_nel) nel = gh_realloc(nel, (size_t)(cap_nel = 2 * (j - i)) * sizeof *nel);
      int32_t n = 0;
      for (int32_t k = i; k < j; k++) {
        if (n && nel[n - 1].q == tr[k].q) nel[n - 1].v = log_plus(nel[n - 1].v, tr[k].w);
        else nel[n++] = (subset_elem){tr[k].q, tr[k].w};
      }
      for (int32_t k = 0; k < n; k++) nel[k].v -= w;
      int32_t dest = subset_get(b, &ss, nel, n);
      if (b->ndem == b->cap_dem)
        b->dem = gh_realloc(b->dem, (size_t)(b->cap_dem = b->cap_dem ? 2 * b->cap_dem : 64) * sizeof *b->dem);
      b->dem[b->ndem++] = (emit_arc){tr[i].phone, tr[i].olabel, dest, w};
      b->dcount[d]++;
      i = j;
    }
  }
  gh_strmap_free(&ss.ids);
  free(ss.els), free(ss.sbase), free(ss.scount), free(ss.key), free(tr), free(nel);
}

/* ---- the output graph.  Nodes:
 *   E(d, l, q, ts)  D state d entered after a phone's last transition, from
 *                   transition-state ts (0 at the start), l the phone just
 *                   finished (the next phone's left context; 0 at the start)
 *                   and q the phone the path must take next (the right context
 *                   the finished phone was given: 0 = the end of the utterance,
 *                   -1 = any, when the tree uses no right context);
 *   N(inst, l, r, j, ts)  HMM state j of instance inst (an arc of D) with left
 *                   context l and right context r, entered from transition-
 *                   state ts.
 * An instance's right context is chosen when it is entered, among the phones
 * of the arcs out of its destination (and 0 if that is final): at an optional
 * silence both the silence and the next word's first phone, so that the
 * alignment chooses.  A monophone tree has l = 0 and q = r = -1 throughout. ---- */
typedef struct {
  build *b;
  gh_fst *out;
  i64map emap, nmap;
  int32_t *kind, *a, *l, *r, *j, *ts; /* per output state: 0 = E (a = d, r = q), 1 = N (a = inst) */
  int32_t cap;
  int use_left, use_right; /* the tree's window has a phone left / right of the centre */
  int64_t L;               /* phone ids are below L */
  gh_fst_arc *buf; /* the arcs of the state being expanded, before sorting */
  int32_t nbuf, cap_buf;
  int32_t *rbuf; /* right-context choices of one D state */
  int32_t cap_rbuf;
} graph;

static int32_t node_get(graph *g, int kind, int32_t a, int32_t l, int32_t r, int32_t j, int32_t ts) {
  const gh_tgc *c = g->b->c;
  int64_t T = c->tm->num_tuples + 1;
  int64_t lr = (int64_t)l * (g->L + 1) + (r + 1);
  int64_t key = kind == 0 ? ((int64_t)a * g->L * (g->L + 1) + lr) * T + ts
                          : (((int64_t)a * g->L * (g->L + 1) + lr) * c->max_states + j) * T + ts;
  i64map *m = kind == 0 ? &g->emap : &g->nmap;
  int32_t id = i64map_get(m, key);
  if (id >= 0) return id;
  id = gh_fst_add_state(g->out);
  if (id >= g->cap) {
    g->cap = g->cap ? 2 * g->cap : 256;
    g->kind = gh_realloc(g->kind, (size_t)g->cap * sizeof *g->kind);
    g->a = gh_realloc(g->a, (size_t)g->cap * sizeof *g->a);
    g->l = gh_realloc(g->l, (size_t)g->cap * sizeof *g->l);
    g->r = gh_realloc(g->r, (size_t)g->cap * sizeof *g->r);
    g->j = gh_realloc(g->j, (size_t)g->cap * sizeof *g->j);
    g->ts = gh_realloc(g->ts, (size_t)g->cap * sizeof *g->ts);
  }
  g->kind[id] = kind, g->a[id] = a, g->l[id] = l, g->r[id] = r, g->j[id] = j, g->ts[id] = ts;
  i64map_put(m, key, id);
  return id;
}

/* The tree's window for phone p with left context l and right context r. */
static void make_window(const gh_ctx_dep *ctx, int32_t l, int32_t p, int32_t r, int32_t *win) {
  int32_t k = 0;
  if (ctx->P == 1) win[k++] = l;
  win[k++] = p;
  if (ctx->N - 1 - ctx->P == 1) win[k++] = r;
}

/* The forward transitions of HMM state j of instance inst in context (l, r), out of output state s. */
static void add_hmm_state_arcs(graph *g, int32_t s, int32_t inst, int32_t l, int32_t r, int32_t j, int32_t olabel,
                               float extra) {
  const gh_tgc *c = g->b->c;
  const gh_transition_model *tm = c->tm;
  const emit_arc *em = &g->b->dem[inst];
  const gh_topo_entry *en = gh_transition_entry(tm, em->phone);
  const gh_hmm_state *st = &en->states[j];
  if (st->forward_pdf_class < 0)
    gh_die("phone %d: HMM state %d has transitions but no pdf-class (non-emitting states other than the final "
           "one are not supported)",
           em->phone, j);
  int32_t fpdf, spdf, win[3];
  make_window(c->ctx, l, em->phone, r < 0 ? 0 : r, win);
  if (!gh_ctx_dep_compute(c->ctx, win, st->forward_pdf_class, &fpdf) ||
      !gh_ctx_dep_compute(c->ctx, win, st->self_loop_pdf_class, &spdf))
    gh_die("the tree gives no pdf for phone %d (left context %d, right context %d), pdf-class %d: the tree, the "
           "model and the lexicon %s do not belong together",
           em->phone, l, r < 0 ? 0 : r, st->forward_pdf_class, c->lex_name);
  int32_t ts = gh_transition_tuple_to_tstate(tm, em->phone, j, fpdf, spdf);
  if (!ts)
    gh_die("the model has no transition-state for phone %d, HMM state %d, pdf %d: the tree and the model do not "
           "belong together",
           em->phone, j, fpdf);
  for (int32_t k = 0; k < st->num_trans; k++) {
    int32_t d = st->dst[k];
    if (d == j) continue; /* self-loops come with the state they lead back to */
    int32_t tid = gh_transition_pair_to_tid(tm, ts, k);
    float lp = gh_transition_log_prob(tm, tid) - c->nsl[ts];
    float w = extra + -lp * c->tscale;
    int32_t dest = d == en->num_states - 1
                       ? node_get(g, 0, em->dest, g->use_left ? em->phone : 0, g->use_right ? r : -1, 0, ts)
                       : node_get(g, 1, inst, l, r, d, ts);
    if (g->nbuf == g->cap_buf)
      g->buf = gh_realloc(g->buf, (size_t)(g->cap_buf = g->cap_buf ? 2 * g->cap_buf : 16) * sizeof *g->buf);
    g->buf[g->nbuf++] = (gh_fst_arc){tid, olabel, w, dest};
  }
}

/* The right contexts an instance ending in D state d can be given: the phones
 * of d's arcs (sorted, unique) and 0 if d is final; {-1} without right context. */
static int32_t right_choices(graph *g, int32_t d) {
  build *b = g->b;
  if (b->dcount[d] + 1 > g->cap_rbuf)
    g->rbuf = gh_realloc(g->rbuf, (size_t)(g->cap_rbuf = 2 * (b->dcount[d] + 1)) * sizeof *g->rbuf);
  if (!g->use_right) {
    g->rbuf[0] = -1;
    return 1;
  }
  int32_t n = 0;
  if (b->dfinal[d] != GH_FST_ZERO) g->rbuf[n++] = 0;
  for (int32_t e = 0; e < b->dcount[d]; e++) {
    int32_t p = b->dem[b->dbase[d] + e].phone, k = n;
    while (k > 0 && g->rbuf[k - 1] > p) k--;
    if (k > 0 && g->rbuf[k - 1] == p) continue;
    memmove(g->rbuf + k + 1, g->rbuf + k, (size_t)(n - k) * sizeof *g->rbuf);
    g->rbuf[k] = p, n++;
  }
  return n;
}

static void expand_node(graph *g, int32_t s) {
  build *b = g->b;
  const gh_tgc *c = b->c;
  int32_t ts = g->ts[s];
  float fac = ts ? -c->nsl[ts] * c->sscale : 0.0f;
  if (g->kind[s] == 0) {
    int32_t d = g->a[s], q = g->r[s];
    for (int32_t e = 0; e < b->dcount[d]; e++) {
      int32_t inst = b->dbase[d] + e;
      if (q >= 0 && b->dem[inst].phone != q) continue;
      int32_t nr = right_choices(g, b->dem[inst].dest);
      for (int32_t k = 0; k < nr; k++)
        add_hmm_state_arcs(g, s, inst, g->l[s], g->rbuf[k], 0, b->dem[inst].olabel, b->dem[inst].weight + fac);
    }
    if (q <= 0 && b->dfinal[d] != GH_FST_ZERO) gh_fst_set_final(g->out, s, b->dfinal[d] + fac);
  } else {
    add_hmm_state_arcs(g, s, g->a[s], g->l[s], g->r[s], g->j[s], 0, fac);
  }
  /* arcs in transition-id order, as Kaldi's determinized and minimized graph has
   * them (EqualAlign's random choices depend on it), the self-loop last */
  for (int32_t i = 1; i < g->nbuf; i++) {
    gh_fst_arc x = g->buf[i];
    int32_t k = i;
    for (; k > 0 && g->buf[k - 1].ilabel > x.ilabel; k--) g->buf[k] = g->buf[k - 1];
    g->buf[k] = x;
  }
  for (int32_t i = 0; i < g->nbuf; i++)
    gh_fst_add_arc(g->out, s, g->buf[i].ilabel, g->buf[i].olabel, g->buf[i].weight, g->buf[i].nextstate);
  g->nbuf = 0;
  if (ts && c->self_tid[ts])
    gh_fst_add_arc(g->out, s, c->self_tid[ts], 0, -gh_transition_log_prob(c->tm, c->self_tid[ts]) * c->sscale, s);
}

int gh_tgc_compile(gh_tgc *c, const int32_t *words, int32_t n, gh_fst *out, char *err, size_t errlen) {
  gh_fst_free(out);
  if (n == 0) {
    snprintf(err, errlen, "empty transcript");
    return 0;
  }
  for (int32_t i = 0; i < n; i++)
    if (words[i] <= 0 || words[i] >= c->num_words || !c->is_word[words[i]]) {
      snprintf(err, errlen, "word id %d (word %d of %d) is not an output label of the lexicon FST %s", words[i],
               i + 1, n, c->lex_name);
      return 0;
    }
  build b = {.c = c};
  gh_fst_init(&b.p);
  /* 1. the lexicon's paths with output w1 .. wn: states (lexicon state l, words read i) */
  i64map cmap = {0};
  int32_t *cl = NULL, *ci = NULL, cap = 0;
#define ADD_COMPOSED(l_, i_, id_)                                              \
  do {                                                                         \
    int64_t key_ = (int64_t)(l_) * (n + 1) + (i_);                             \
    id_ = i64map_get(&cmap, key_);                                             \
    if (id_ < 0) {                                                             \
      id_ = gh_fst_add_state(&b.p);                                            \
      if (id_ >= cap) {                                                        \
        cap = cap ? 2 * cap : 256;                                             \
        cl = gh_realloc(cl, (size_t)cap * sizeof *cl);                         \
        ci = gh_realloc(ci, (size_t)cap * sizeof *ci);                         \
      }                                                                        \
      cl[id_] = (l_), ci[id_] = (i_);                                          \
      i64map_put(&cmap, key_, id_);                                            \
    }                                                                          \
  } while (0)
  int32_t start;
  ADD_COMPOSED(c->lex.start, 0, start);
  gh_fst_set_start(&b.p, start);
  for (int32_t q = 0; q < b.p.nstates; q++) {
    int32_t l = cl[q], i = ci[q];
    const gh_fst_state *st = &c->lex.states[l];
    if (i == n && st->final != GH_FST_ZERO) gh_fst_set_final(&b.p, q, st->final);
    for (int pass = 0; pass < 2; pass++) {
      if (pass == 1 && i == n) break;
      int32_t o = pass == 0 ? 0 : words[i];
      for (int32_t a = lex_lower(st, o); a < st->narcs && st->arcs[a].olabel == o; a++) {
        const gh_fst_arc *arc = &st->arcs[a];
        int32_t dst;
        ADD_COMPOSED(arc->nextstate, i + pass, dst);
        st = &c->lex.states[l]; /* (lex is not changed; kept for clarity) */
        int32_t il = arc->ilabel < c->num_labels && c->is_disambig[arc->ilabel] ? 0 : arc->ilabel;
        gh_fst_add_arc(&b.p, q, il, o, arc->weight, dst);
      }
    }
  }
#undef ADD_COMPOSED
  i64map_free(&cmap);
  free(cl), free(ci);
  /* 2. keep the states that reach a final state */
  int32_t np = b.p.nstates;
  int32_t *rhead = gh_malloc((size_t)np * sizeof *rhead), *stack = gh_malloc((size_t)np * sizeof *stack);
  int64_t narcs = gh_fst_num_arcs(&b.p);
  int32_t *rnext = gh_malloc((size_t)(narcs + 1) * sizeof *rnext), *rsrc = gh_malloc((size_t)(narcs + 1) * sizeof *rsrc);
  for (int32_t q = 0; q < np; q++) rhead[q] = -1;
  int32_t na = 0;
  for (int32_t q = 0; q < np; q++)
    for (int32_t a = 0; a < b.p.states[q].narcs; a++) {
      int32_t d = b.p.states[q].arcs[a].nextstate;
      rsrc[na] = q, rnext[na] = rhead[d], rhead[d] = na++;
    }
  b.coacc = gh_calloc((size_t)np, 1);
  int32_t sp = 0;
  for (int32_t q = 0; q < np; q++)
    if (b.p.states[q].final != GH_FST_ZERO) b.coacc[q] = 1, stack[sp++] = q;
  while (sp) {
    int32_t d = stack[--sp];
    for (int32_t e = rhead[d]; e >= 0; e = rnext[e])
      if (!b.coacc[rsrc[e]]) b.coacc[rsrc[e]] = 1, stack[sp++] = rsrc[e];
  }
  free(rhead), free(stack), free(rnext), free(rsrc);
  int ok = b.coacc[start];
  if (!ok) snprintf(err, errlen, "the lexicon FST %s has no path for this word sequence", c->lex_name);
  if (ok) {
    /* 3. HMMs and self-loops, state by state from the start */
    b.ebase = gh_malloc((size_t)np * sizeof *b.ebase);
    b.ecount = gh_calloc((size_t)np, sizeof *b.ecount);
    b.efinal = gh_malloc((size_t)np * sizeof *b.efinal);
    for (int32_t q = 0; q < np; q++) b.ebase[q] = -1;
    determinize(&b, start);
    graph g = {.b = &b, .out = out, .use_left = c->ctx->P == 1, .use_right = c->ctx->N - 1 - c->ctx->P == 1,
               .L = c->num_labels};
    if ((double)b.nd * g.L * (g.L + 1) * c->max_states * (c->tm->num_tuples + 1) > 9.0e18 ||
        (double)b.ndem * g.L * (g.L + 1) * c->max_states * (c->tm->num_tuples + 1) > 9.0e18)
      gh_die("the graph of this transcript is too large to number (%d lexicon states, %d phones)", b.nd,
             c->num_labels);
    int32_t s0 = node_get(&g, 0, 0, 0, -1, 0, 0);
    gh_fst_set_start(out, s0);
    for (int32_t s = 0; s < out->nstates; s++) expand_node(&g, s);
    i64map_free(&g.emap), i64map_free(&g.nmap);
    free(g.kind), free(g.a), free(g.l), free(g.r), free(g.j), free(g.ts), free(g.buf), free(g.rbuf);
    free(b.ebase), free(b.ecount), free(b.efinal);
    free(b.dbase), free(b.dcount), free(b.dfinal), free(b.dem);
  }
  free(b.coacc), free(b.emits), free(b.cl);
  gh_fst_free(&b.p);
  return ok;
}

/* ---- EqualAlign ---- */

int gh_kaldi_string_hash(const char *key) {
  uint64_t h = 0;
  for (const char *p = key; *p; p++) h = h * 7853u + (uint64_t)(int64_t)(signed char)*p;
  return (int)(int32_t)(uint32_t)h;
}

/* Kaldi's RandInt(0, n - 1) with the process-wide rand(): no call for n == 1. */
static int32_t rand_below(int32_t n) {
  if (n == 1) return 0;
  return (int32_t)rand() % n;
}

static int32_t find_self_loop(const gh_fst *g, int32_t s) {
  for (int32_t a = 0; a < g->states[s].narcs; a++)
    if (g->states[s].arcs[a].nextstate == s && g->states[s].arcs[a].ilabel != 0) return a;
  return -1;
}

int gh_equal_align(const gh_fst *g, int32_t len, int seed, int32_t *ali, char *err, size_t errlen) {
  srand((unsigned)seed);
  if (g->start < 0) {
    snprintf(err, errlen, "empty graph");
    return 0;
  }
  /* every state must reach a final state, or the random walk may never end */
  int32_t ns = g->nstates;
  uint8_t *co = gh_calloc((size_t)ns, 1);
  for (int changed = 1; changed;) {
    changed = 0;
    for (int32_t s = ns - 1; s >= 0; s--) {
      if (co[s]) continue;
      int ok = g->states[s].final != GH_FST_ZERO;
      for (int32_t a = 0; !ok && a < g->states[s].narcs; a++) ok = co[g->states[s].arcs[a].nextstate];
      if (ok) co[s] = 1, changed = 1;
    }
  }
  for (int32_t s = 0; s < ns; s++)
    if (!co[s]) {
      snprintf(err, errlen, "state %d of the graph cannot reach a final state", s);
      free(co);
      return 0;
    }
  free(co);
  int32_t *path = NULL, *offs = NULL, plen = 0, pcap = 0, nil = 0;
  char tries[256] = "";
  for (int retry = 0; retry < 10; retry++) {
    nil = 0, plen = 0;
    int32_t s = g->start;
    for (;;) {
      if (plen == pcap) {
        pcap = pcap ? 2 * pcap : 256;
        path = gh_realloc(path, (size_t)pcap * sizeof *path);
        offs = gh_realloc(offs, (size_t)pcap * sizeof *offs);
      }
      path[plen] = s;
      int32_t na = g->states[s].narcs, tot = na + (g->states[s].final != GH_FST_ZERO);
      int32_t k = rand_below(tot);
      if (k >= na) break;
      const gh_fst_arc *arc = &g->states[s].arcs[k];
      if (arc->nextstate == s) continue;
      offs[plen++] = k;
      if (arc->ilabel != 0) nil++;
      s = arc->nextstate;
    }
    plen++; /* the last state, where the final weight was taken */
    size_t tl = strlen(tries);
    if (tl + 16 < sizeof tries) snprintf(tries + tl, sizeof tries - tl, "%s%d", tl ? "," : "", nil);
    if (nil <= len) break;
  }
  if (nil > len) {
    snprintf(err, errlen, "too few frames (%d) to align: the random paths had %s transition-ids", len, tries);
    free(path), free(offs);
    return 0;
  }
  int32_t nloops = 0;
  int32_t *loop = gh_malloc((size_t)plen * sizeof *loop);
  for (int32_t i = 0; i < plen; i++)
    if ((loop[i] = find_self_loop(g, path[i])) >= 0) nloops++;
  if (nloops == 0 && nil < len) {
    snprintf(err, errlen, "no self-loops on the chosen path; cannot match length %d", len);
    free(path), free(offs), free(loop);
    return 0;
  }
  int32_t extra = len - nil, min_loops = extra ? extra / nloops : 0, one_more = extra - min_loops * nloops;
  int32_t t = 0, counter = 0;
  for (int32_t i = 0; i < plen; i++) {
    if (loop[i] >= 0) {
      int32_t m = min_loops + (counter < one_more ? 1 : 0);
      counter++;
      for (int32_t r = 0; r < m; r++) ali[t++] = g->states[path[i]].arcs[loop[i]].ilabel;
    }
    if (i + 1 < plen) {
      int32_t il = g->states[path[i]].arcs[offs[i]].ilabel;
      if (il != 0) ali[t++] = il;
    }
  }
  free(path), free(offs), free(loop);
  if (t != len) gh_die("gh_equal_align: internal error: %d labels for %d frames", t, len);
  return 1;
}
