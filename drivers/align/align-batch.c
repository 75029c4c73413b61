/* align-batch.c -- see align-batch.h. */
#include "align/align-batch.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "registry/registry.h"

/* gh_dec_graph's arrays go to align_batch as they are (backend.h gh_align_graph). */
_Static_assert(sizeof(gh_dec_arc) == sizeof(gh_align_arc) && offsetof(gh_dec_arc, ilabel) == offsetof(gh_align_arc, ilabel) &&
                   offsetof(gh_dec_arc, olabel) == offsetof(gh_align_arc, olabel) &&
                   offsetof(gh_dec_arc, weight) == offsetof(gh_align_arc, weight) &&
                   offsetof(gh_dec_arc, next) == offsetof(gh_align_arc, next),
               "gh_dec_arc and gh_align_arc differ");

typedef struct {
  char *key;
  gh_dec_graph g;
  float *ll;
  int32_t T;
} item;

struct gh_aligner {
  gh_backend *b;
  gh_aligner_opts o;
  int32_t ld, num_labels;
  const int32_t *col;
  float as;
  gh_aligner_cb cb;
  void *user;
  item *q;
  int32_t n, cap;
  int64_t floats;
  double seconds;
};

gh_aligner *gh_aligner_new(gh_backend *b, const gh_aligner_opts *o, int32_t ld, const int32_t *col,
                           int32_t num_labels, float acoustic_scale, gh_aligner_cb cb, void *user) {
  gh_aligner *a = gh_calloc(1, sizeof *a);
  a->b = b;
  a->o = *o;
  if (a->o.max_utts < 1) a->o.max_utts = 1;
  a->ld = ld;
  a->col = col;
  a->num_labels = num_labels;
  a->as = acoustic_scale;
  a->cb = cb;
  a->user = user;
  return a;
}

void gh_aligner_flush(gh_aligner *a) {
  if (a->n == 0) return;
  const int32_t B = a->n;
  gh_align_graph *gs = gh_malloc((size_t)B * sizeof *gs);
  const float **ll = gh_malloc((size_t)B * sizeof *ll);
  int32_t *T = gh_malloc((size_t)B * sizeof *T);
  gh_align_out *out = gh_calloc((size_t)B, sizeof *out);
  for (int32_t i = 0; i < B; ++i) {
    const gh_dec_graph *g = &a->q[i].g;
    gs[i] = (gh_align_graph){g->num_states, g->start, g->num_arcs, g->arc_start, (const gh_align_arc *)g->arcs,
                             g->final};
    ll[i] = a->q[i].ll;
    T[i] = a->q[i].T;
  }
  const gh_align_batch batch = {B, gs, ll, T, a->ld, a->num_labels, a->col, a->as, a->o.ckpt_interval,
                                a->o.bp_budget};
  const double t0 = gh_seconds();
  gh_backend_align_batch(a->b, &batch, out);
  a->seconds += gh_seconds() - t0;
  for (int32_t i = 0; i < B; ++i) {
    item *it = &a->q[i];
    if (out[i].reached) {
      gh_dec_path p;
      gh_dec_path_from_arcs(&it->g, out[i].arcs, out[i].num_arcs, it->ll, it->T, a->ld, a->col, a->as, &p);
      a->cb(a->user, it->key, it->T, &p);
      gh_dec_path_free(&p);
    } else {
      a->cb(a->user, it->key, it->T, NULL);
    }
    free(out[i].arcs);
    free(it->key);
    free(it->ll);
    gh_dec_graph_free(&it->g);
  }
  a->n = 0;
  a->floats = 0;
  free(gs);
  free(ll);
  free(T);
  free(out);
}

void gh_aligner_add(gh_aligner *a, const char *key, gh_dec_graph *g, const float *loglikes, int32_t T) {
  const int64_t nf = (int64_t)T * a->ld;
  if (a->n > 0 && (a->n >= a->o.max_utts || (a->o.max_floats > 0 && a->floats + nf > a->o.max_floats)))
    gh_aligner_flush(a);
  if (a->n == a->cap) {
    a->cap = a->cap ? 2 * a->cap : 64;
    a->q = gh_realloc(a->q, (size_t)a->cap * sizeof *a->q);
  }
  item *it = &a->q[a->n++];
  it->key = gh_strdup(key);
  it->g = *g;
  memset(g, 0, sizeof *g);
  g->start = -1;
  it->T = T;
  it->ll = gh_malloc((size_t)(nf ? nf : 1) * sizeof(float));
  memcpy(it->ll, loglikes, (size_t)nf * sizeof(float));
  a->floats += nf;
}

void gh_aligner_free(gh_aligner *a, double *seconds) {
  if (!a) {
    if (seconds) *seconds = 0.0;
    return;
  }
  gh_aligner_flush(a);
  if (seconds) *seconds = a->seconds;
  free(a->q);
  free(a);
}
