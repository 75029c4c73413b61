/* faster-decoder.c -- Viterbi token passing with Kaldi FasterDecoder's pruning
 * (see faster-decoder.h).  Kaldi keeps the active tokens in a HashList whose
 * element order (buckets in the order they were first used, elements of a
 * bucket in insertion order; bucket = state mod hash size) decides which token
 * wins a tie and how fast the running cutoff of a frame tightens; the list here
 * is kept in that same order, with an index from state to element in place of
 * the bucket search.  Tokens live in one arena per decode and are never freed
 * before the next one (Kaldi reference-counts them; only the memory differs). */
#include "decoder/faster-decoder.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"

void gh_dec_graph_from_fst(gh_dec_graph *g, const gh_fst *f, int careful) {
  memset(g, 0, sizeof *g);
  const int32_t n = f->nstates;
  const int64_t na = gh_fst_num_arcs(f);
  int64_t nfinal = 0;
  for (int32_t s = 0; s < n; ++s) nfinal += f->states[s].final != GH_FST_ZERO;
  const int use_careful = careful && n > 0 && f->start >= 0;
  g->num_states = use_careful ? 2 * n + 1 : n;
  g->num_arcs = use_careful ? 2 * na + nfinal + 1 : na;
  g->start = f->start;
  g->arc_start = gh_malloc(((size_t)g->num_states + 1) * sizeof(int64_t));
  g->arcs = gh_malloc((size_t)(g->num_arcs ? g->num_arcs : 1) * sizeof(gh_dec_arc));
  g->final = gh_malloc((size_t)(g->num_states ? g->num_states : 1) * sizeof(float));
  int64_t k = 0;
  for (int copy = 0; copy < (use_careful ? 2 : 1); ++copy) {
    const int32_t off = copy ? n : 0;
    for (int32_t s = 0; s < n; ++s) {
      const gh_fst_state *st = &f->states[s];
      g->arc_start[off + s] = k;
      for (int32_t a = 0; a < st->narcs; ++a) {
        const gh_fst_arc *fa = &st->arcs[a];
        if (fa->nextstate < 0 || fa->nextstate >= n)
          gh_die("decoding graph: state %d has an arc to state %d, which does not exist (%d states)", s,
                 fa->nextstate, n);
        g->arcs[k++] = (gh_dec_arc){fa->ilabel, fa->olabel, fa->weight, fa->nextstate + off};
      }
      if (!use_careful) {
        g->final[s] = st->final;
      } else if (copy == 0) { /* Concat: the final weight moves onto an epsilon arc to pre-initial */
        if (st->final != GH_FST_ZERO) g->arcs[k++] = (gh_dec_arc){0, 0, st->final, 2 * n};
        g->final[s] = GH_FST_ZERO;
      } else {
        g->final[off + s] = GH_FST_ZERO;
      }
    }
  }
  if (use_careful) {
    g->arc_start[2 * n] = k;
    g->arcs[k++] = (gh_dec_arc){0, 0, GH_FST_ONE, f->start + n};
    g->final[2 * n] = GH_FST_ONE;
  }
  g->arc_start[g->num_states] = k;
}

void gh_dec_graph_free(gh_dec_graph *g) {
  free(g->arc_start);
  free(g->arcs);
  free(g->final);
  memset(g, 0, sizeof *g);
  g->start = -1;
}

void gh_dec_opts_default(gh_dec_opts *o) {
  o->beam = 16.0f;
  o->min_active = 20;
  o->max_active = INT32_MAX;
  o->beam_delta = 0.5f;
  o->hash_ratio = 2.0f;
}

typedef struct {
  double cost;
  int64_t arc; /* index into the graph's arcs; -1 for the start token */
  int32_t prev;
} tok;

typedef struct {
  int32_t state, tok, next;
} elem;

struct gh_decoder {
  const gh_dec_graph *g;
  tok *toks;
  int64_t ntoks, captoks;
  elem *el;              /* the current list's elements */
  int32_t nel, capel, head, tail;
  elem *old;             /* the previous frame's list */
  int32_t nold, capold, old_head;
  int32_t *state_el;     /* [num_states] element of the state in the current list, -1 */
  int32_t nstates_cap;
  size_t hash_size;      /* Kaldi HashList size: the bucket of state s is s % hash_size */
  int32_t *bucket_last;  /* [hash cap] last element of a bucket in the current list, -1 */
  size_t bucket_cap;
  int32_t *used_buckets; /* buckets to clear */
  int32_t nused, capused;
  int32_t *stack;        /* ProcessNonemitting's queue (LIFO) */
  int32_t nstack, capstack;
  double *tmp;           /* GetCutoff's costs */
  int32_t captmp;
};

gh_decoder *gh_decoder_new(void) {
  gh_decoder *d = gh_calloc(1, sizeof *d);
  d->head = d->tail = d->old_head = -1;
  d->hash_size = 1000;
  return d;
}

void gh_decoder_reset(gh_decoder *d) { d->hash_size = 1000; }

void gh_decoder_free(gh_decoder *d) {
  if (!d) return;
  free(d->toks);
  free(d->el);
  free(d->old);
  free(d->state_el);
  free(d->bucket_last);
  free(d->used_buckets);
  free(d->stack);
  free(d->tmp);
  free(d);
}

int64_t gh_decoder_num_tokens(const gh_decoder *d) { return d->ntoks; }

#define GROW(ptr, n, cap)                                                   \
  do {                                                                      \
    if ((n) >= (cap)) {                                                     \
      (cap) = (cap) ? 2 * (cap) : 256;                                      \
      (ptr) = gh_realloc((ptr), (size_t)(cap) * sizeof *(ptr));             \
    }                                                                       \
  } while (0)

static int32_t new_tok(gh_decoder *d, double cost, int64_t arc, int32_t prev) {
  if (d->ntoks >= d->captoks) {
    d->captoks = d->captoks ? 2 * d->captoks : 4096;
    d->toks = gh_realloc(d->toks, (size_t)d->captoks * sizeof *d->toks);
  }
  if (d->ntoks >= INT32_MAX) gh_die("decoder: more than 2^31 tokens in one utterance");
  d->toks[d->ntoks] = (tok){cost, arc, prev};
  return (int32_t)d->ntoks++;
}

/* Empties the current list (Kaldi HashList::Clear); the elements move to old. */
static void list_clear(gh_decoder *d) {
  for (int32_t e = d->head; e >= 0; e = d->el[e].next) d->state_el[d->el[e].state] = -1;
  for (int32_t i = 0; i < d->nused; ++i) d->bucket_last[d->used_buckets[i]] = -1;
  d->nused = 0;
  elem *t = d->old;
  int32_t c = d->capold;
  d->old = d->el;
  d->capold = d->capel;
  d->nold = d->nel;
  d->old_head = d->head;
  d->el = t;
  d->capel = c;
  d->nel = 0;
  d->head = d->tail = -1;
}

static void hash_set_size(gh_decoder *d, size_t size) {
  d->hash_size = size;
  if (size > d->bucket_cap) {
    d->bucket_last = gh_realloc(d->bucket_last, size * sizeof(int32_t));
    for (size_t i = d->bucket_cap; i < size; ++i) d->bucket_last[i] = -1;
    d->bucket_cap = size;
  }
}

/* Kaldi HashList::Insert for a state not in the list: a new bucket goes at the
 * end of the list, a used one gets the element after its last one. */
static int32_t list_insert(gh_decoder *d, int32_t state, int32_t tk) {
  GROW(d->el, d->nel, d->capel);
  const int32_t e = d->nel++;
  d->el[e].state = state;
  d->el[e].tok = tk;
  const size_t b = (size_t)state % d->hash_size;
  const int32_t last = d->bucket_last[b];
  if (last < 0) {
    d->el[e].next = -1;
    if (d->tail >= 0) d->el[d->tail].next = e;
    else d->head = e;
    d->tail = e;
    GROW(d->used_buckets, d->nused, d->capused);
    d->used_buckets[d->nused++] = (int32_t)b;
  } else {
    d->el[e].next = d->el[last].next;
    d->el[last].next = e;
    if (d->tail == last) d->tail = e;
  }
  d->bucket_last[b] = e;
  d->state_el[state] = e;
  return e;
}

/* The k-th smallest of a[0..n) (0-based; std::nth_element's value). */
static double kth_smallest(double *a, int32_t n, int32_t k) {
  int32_t lo = 0, hi = n - 1;
  while (lo < hi) {
    const double pivot = a[lo + (hi - lo) / 2];
    int32_t i = lo, j = hi;
    while (i <= j) {
      while (a[i] < pivot) ++i;
      while (a[j] > pivot) --j;
      if (i <= j) {
        const double t = a[i];
        a[i] = a[j];
        a[j] = t;
        ++i;
        --j;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return a[k];
  }
  return a[k];
}

/* Kaldi FasterDecoder::GetCutoff over the old list. */
static double get_cutoff(gh_decoder *d, const gh_dec_opts *o, size_t *count_out, float *adaptive_beam,
                         int32_t *best_el) {
  double best = INFINITY;
  int32_t count = 0;
  *best_el = -1;
  for (int32_t e = d->old_head; e >= 0; e = d->old[e].next, ++count) {
    const double w = d->toks[d->old[e].tok].cost;
    GROW(d->tmp, count, d->captmp);
    d->tmp[count] = w;
    if (w < best) {
      best = w;
      *best_el = e;
    }
  }
  *count_out = (size_t)count;
  if (o->max_active == INT32_MAX && o->min_active == 0) {
    *adaptive_beam = o->beam;
    return best + o->beam;
  }
  const double beam_cutoff = best + o->beam;
  double min_active_cutoff = INFINITY, max_active_cutoff = INFINITY;
  if (count > o->max_active) max_active_cutoff = kth_smallest(d->tmp, count, o->max_active);
  if (max_active_cutoff < beam_cutoff) {
    *adaptive_beam = (float)(max_active_cutoff - best + o->beam_delta);
    return max_active_cutoff;
  }
  if (count > o->min_active) {
    if (o->min_active == 0) min_active_cutoff = best;
    else min_active_cutoff = kth_smallest(d->tmp, count > o->max_active ? o->max_active : count, o->min_active);
  }
  if (min_active_cutoff > beam_cutoff) {
    *adaptive_beam = (float)(min_active_cutoff - best + o->beam_delta);
    return min_active_cutoff;
  }
  *adaptive_beam = o->beam;
  return beam_cutoff;
}

static void process_nonemitting(gh_decoder *d, double cutoff) {
  const gh_dec_graph *g = d->g;
  d->nstack = 0;
  for (int32_t e = d->head; e >= 0; e = d->el[e].next) {
    GROW(d->stack, d->nstack, d->capstack);
    d->stack[d->nstack++] = e;
  }
  while (d->nstack > 0) {
    const int32_t e = d->stack[--d->nstack];
    const int32_t state = d->el[e].state, tk = d->el[e].tok;
    const double cost = d->toks[tk].cost;
    if (cost > cutoff) continue;
    for (int64_t a = g->arc_start[state]; a < g->arc_start[state + 1]; ++a) {
      const gh_dec_arc *arc = &g->arcs[a];
      if (arc->ilabel != 0) continue;
      const double nc = cost + arc->weight;
      if (nc > cutoff) continue;
      const int32_t found = d->state_el[arc->next];
      if (found < 0) {
        const int32_t ne = list_insert(d, arc->next, new_tok(d, nc, a, tk));
        GROW(d->stack, d->nstack, d->capstack);
        d->stack[d->nstack++] = ne;
      } else if (d->toks[d->el[found].tok].cost > nc) {
        d->el[found].tok = new_tok(d, nc, a, tk);
        GROW(d->stack, d->nstack, d->capstack);
        d->stack[d->nstack++] = found;
      }
    }
  }
}

static double process_emitting(gh_decoder *d, const gh_dec_opts *o, const float *ll, const int32_t *col,
                               float acoustic_scale) {
  const gh_dec_graph *g = d->g;
  list_clear(d);
  size_t count;
  float adaptive_beam;
  int32_t best_el;
  const double weight_cutoff = get_cutoff(d, o, &count, &adaptive_beam, &best_el);
  const size_t new_sz = (size_t)((float)count * o->hash_ratio);
  if (new_sz > d->hash_size) hash_set_size(d, new_sz);
  double next_cutoff = INFINITY;
  if (best_el >= 0) {
    const int32_t state = d->old[best_el].state;
    const double cost = d->toks[d->old[best_el].tok].cost;
    for (int64_t a = g->arc_start[state]; a < g->arc_start[state + 1]; ++a) {
      const gh_dec_arc *arc = &g->arcs[a];
      if (arc->ilabel == 0) continue;
      const float ac = -(acoustic_scale * ll[col[arc->ilabel]]);
      const double nw = (double)arc->weight + cost + ac;
      if (nw + adaptive_beam < next_cutoff) next_cutoff = nw + adaptive_beam;
    }
  }
  for (int32_t e = d->old_head; e >= 0; e = d->old[e].next) {
    const int32_t state = d->old[e].state, tk = d->old[e].tok;
    const double cost = d->toks[tk].cost;
    if (!(cost < weight_cutoff)) continue;
    for (int64_t a = g->arc_start[state]; a < g->arc_start[state + 1]; ++a) {
      const gh_dec_arc *arc = &g->arcs[a];
      if (arc->ilabel == 0) continue;
      const float ac = -(acoustic_scale * ll[col[arc->ilabel]]);
      const double nw = (double)arc->weight + cost + ac;
      if (!(nw < next_cutoff)) continue;
      if (nw + adaptive_beam < next_cutoff) next_cutoff = nw + adaptive_beam;
      const int32_t found = d->state_el[arc->next];
      if (found < 0) list_insert(d, arc->next, new_tok(d, nw, a, tk));
      else if (d->toks[d->el[found].tok].cost > nw) d->el[found].tok = new_tok(d, nw, a, tk);
    }
  }
  return next_cutoff;
}

int gh_decoder_decode(gh_decoder *d, const gh_dec_graph *g, const gh_dec_opts *o, const float *loglikes,
                      int32_t T, int32_t ld, const int32_t *col, int32_t num_labels, float acoustic_scale,
                      const char *what) {
  if (g->start < 0 || g->start >= g->num_states) gh_die("%s: the decoding graph has no start state", what);
  for (int64_t a = 0; a < g->num_arcs; ++a)
    if (g->arcs[a].ilabel < 0 || g->arcs[a].ilabel > num_labels)
      gh_die("%s: the decoding graph has an input label %d outside [0, %d]", what, g->arcs[a].ilabel, num_labels);
  d->g = g;
  if (g->num_states > d->nstates_cap) {
    d->state_el = gh_realloc(d->state_el, (size_t)g->num_states * sizeof(int32_t));
    d->nstates_cap = g->num_states;
  }
  for (int32_t s = 0; s < g->num_states; ++s) d->state_el[s] = -1;
  if (d->bucket_cap < d->hash_size) hash_set_size(d, d->hash_size);
  for (size_t i = 0; i < d->bucket_cap; ++i) d->bucket_last[i] = -1;
  d->nused = 0;
  d->ntoks = 0;
  d->nel = d->nold = 0;
  d->head = d->tail = d->old_head = -1;
  gh_dec_opts eo = *o;
  if (!(eo.beam > 0)) eo.beam = GH_DEC_EXACT;
  /* InitDecoding: the start token (cost 0), then the epsilon closure */
  list_insert(d, g->start, new_tok(d, 0.0, -1, -1));
  process_nonemitting(d, (double)FLT_MAX);
  for (int32_t t = 0; t < T; ++t) {
    const double cutoff = process_emitting(d, &eo, loglikes + (size_t)t * ld, col, acoustic_scale);
    process_nonemitting(d, cutoff);
  }
  for (int32_t e = d->head; e >= 0; e = d->el[e].next)
    if (d->toks[d->el[e].tok].cost != INFINITY && g->final[d->el[e].state] != GH_FST_ZERO) return 1;
  return 0;
}

/* The outputs of gh_decoder_best_path from a path's arcs and the token
 * cost after each arc (costs[-1] = 0: the start token). */
static void fill_path(const gh_dec_graph *g, int32_t n, const int64_t *arcs, const double *costs, int reached,
                      int32_t final_state, gh_dec_path *p) {
  p->ilabels = gh_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
  p->words = gh_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
  p->frame_ac = gh_malloc((size_t)(n ? n : 1) * sizeof(float));
  float gsum = 0.0f, asum = 0.0f, eps_ac = 0.0f;
  for (int32_t i = 0; i < n; ++i) {
    const gh_dec_arc *arc = &g->arcs[arcs[i]];
    const float tot = (float)(costs[i] - (i ? costs[i - 1] : 0.0));
    const float gc = arc->weight, ac = tot - gc;
    gsum += gc;
    asum += ac;
    if (arc->ilabel != 0) {
      p->ilabels[p->num_ilabels++] = arc->ilabel;
      float v = ac;
      if (eps_ac > 0) {
        v += eps_ac;
        eps_ac = 0.0f;
      }
      p->frame_ac[p->num_frame_ac++] = v;
    } else if (ac == ac) {
      if (p->num_frame_ac > 0) p->frame_ac[p->num_frame_ac - 1] += ac;
      else eps_ac += ac;
    }
    if (arc->olabel != 0) p->words[p->num_words++] = arc->olabel;
  }
  if (reached) gsum += g->final[final_state];
  p->graph_cost = gsum;
  p->ac_cost = asum;
  p->reached_final = reached;
}

int gh_decoder_best_path(gh_decoder *d, gh_dec_path *p) {
  memset(p, 0, sizeof *p);
  const gh_dec_graph *g = d->g;
  if (!g) return 0;
  int reached = 0;
  for (int32_t e = d->head; e >= 0 && !reached; e = d->el[e].next)
    if (d->toks[d->el[e].tok].cost != INFINITY && g->final[d->el[e].state] != GH_FST_ZERO) reached = 1;
  int32_t best = -1;
  if (!reached) {
    for (int32_t e = d->head; e >= 0; e = d->el[e].next)
      if (best < 0 || d->toks[d->el[best].tok].cost > d->toks[d->el[e].tok].cost) best = e;
  } else {
    double best_cost = INFINITY;
    for (int32_t e = d->head; e >= 0; e = d->el[e].next) {
      const double c = d->toks[d->el[e].tok].cost + g->final[d->el[e].state];
      if (c < best_cost && c != INFINITY) {
        best_cost = c;
        best = e;
      }
    }
  }
  if (best < 0) return 0;
  int32_t n = 0;
  for (int32_t t = d->el[best].tok; d->toks[t].prev >= 0; t = d->toks[t].prev) ++n;
  int32_t *chain = gh_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
  {
    int32_t i = n;
    for (int32_t t = d->el[best].tok; d->toks[t].prev >= 0; t = d->toks[t].prev) chain[--i] = t;
  }
  int64_t *arcs = gh_malloc((size_t)(n ? n : 1) * sizeof(int64_t));
  double *costs = gh_malloc((size_t)(n ? n : 1) * sizeof(double));
  for (int32_t i = 0; i < n; ++i) arcs[i] = d->toks[chain[i]].arc, costs[i] = d->toks[chain[i]].cost;
  fill_path(g, n, arcs, costs, reached, reached ? d->el[best].state : -1, p);
  free(arcs);
  free(costs);
  free(chain);
  return 1;
}

void gh_dec_path_from_arcs(const gh_dec_graph *g, const int32_t *arcs, int32_t n, const float *loglikes,
                           int32_t T, int32_t ld, const int32_t *col, float acoustic_scale, gh_dec_path *p) {
  memset(p, 0, sizeof *p);
  int64_t *a64 = gh_malloc((size_t)(n ? n : 1) * sizeof(int64_t));
  double *costs = gh_malloc((size_t)(n ? n : 1) * sizeof(double));
  double cost = 0.0;
  int32_t t = 0, s = g->start;
  for (int32_t i = 0; i < n; ++i) {
    if (arcs[i] < 0 || arcs[i] >= g->num_arcs || arcs[i] < g->arc_start[s] || arcs[i] >= g->arc_start[s + 1])
      gh_die("decoder: arc %d of a path is not an arc of state %d", arcs[i], s);
    const gh_dec_arc *arc = &g->arcs[arcs[i]];
    if (arc->ilabel != 0) {
      if (t >= T) gh_die("decoder: a path with more than %d emitting arcs", T);
      const float ac = -(acoustic_scale * loglikes[(size_t)t++ * ld + col[arc->ilabel]]);
      cost = (double)arc->weight + cost + ac;
    } else {
      cost = cost + arc->weight;
    }
    a64[i] = arcs[i];
    costs[i] = cost;
    s = arc->next;
  }
  if (t != T) gh_die("decoder: a path with %d emitting arcs for %d frames", t, T);
  if (g->final[s] == GH_FST_ZERO) gh_die("decoder: a path that ends in state %d, which is not final", s);
  fill_path(g, n, a64, costs, 1, s, p);
  free(a64);
  free(costs);
}

void gh_dec_path_free(gh_dec_path *p) {
  free(p->ilabels);
  free(p->words);
  free(p->frame_ac);
  memset(p, 0, sizeof *p);
}
