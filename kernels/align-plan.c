/* align-plan.c -- see align-plan.h. */
#include "align-plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"

int32_t gh_align_ckpt_interval(int32_t T, int32_t S, int32_t K, int64_t budget) {
  const int64_t cols = (int64_t)T + 1;
  if (K > 0) return (int32_t)(K < cols ? K : cols);
  if (budget <= 0 || cols * (int64_t)S * 4 <= budget) return (int32_t)cols;
  int64_t k = (int64_t)ceil(sqrt(3.0 * (double)cols));
  if (k < 1) k = 1;
  return (int32_t)(k < cols ? k : cols);
}

void gh_align_plan_make(gh_align_plan *p, const gh_align_batch *b) {
  memset(p, 0, sizeof *p);
  const int32_t B = b->num_utts;
  p->B = B;
  p->ld = b->ld;
  p->acoustic_scale = b->acoustic_scale;
  p->S = gh_calloc((size_t)B + 1, sizeof(int32_t));
  p->A = gh_calloc((size_t)B + 1, sizeof(int32_t));
  p->T = gh_calloc((size_t)B + 1, sizeof(int32_t));
  p->K = gh_calloc((size_t)B + 1, sizeof(int32_t));
  p->nck = gh_calloc((size_t)B + 1, sizeof(int32_t));
  p->start = gh_calloc((size_t)B + 1, sizeof(int32_t));
  p->neps = gh_calloc((size_t)B + 1, sizeof(int32_t));
  int64_t *offs[] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  for (int i = 0; i < 7; ++i) offs[i] = gh_calloc((size_t)B + 1, sizeof(int64_t));
  p->st_off = offs[0], p->arc_off = offs[1], p->ll_off = offs[2], p->ck_off = offs[3], p->bp_off = offs[4],
  p->path_off = offs[5], p->path_cap = offs[6];
  for (int32_t u = 0; u < B; ++u) {
    const gh_align_graph *g = &b->graphs[u];
    if (g->num_states < 1 || g->start < 0 || g->start >= g->num_states)
      gh_die("align_batch: utterance %d of the batch: the graph has no start state", u);
    if (g->num_arcs < 0 || g->num_arcs > INT32_MAX)
      gh_die("align_batch: utterance %d of the batch: %lld arcs (at most 2^31 - 1)", u, (long long)g->num_arcs);
    if (b->T[u] < 0) gh_die("align_batch: utterance %d of the batch: %d frames", u, b->T[u]);
    p->S[u] = g->num_states;
    p->A[u] = (int32_t)g->num_arcs;
    p->T[u] = b->T[u];
    p->start[u] = g->start;
    p->K[u] = gh_align_ckpt_interval(b->T[u], g->num_states, b->ckpt_interval, b->bp_budget);
    p->nck[u] = b->T[u] / p->K[u] + 1;
    int32_t neps = 0;
    for (int64_t a = 0; a < g->num_arcs; ++a) {
      const int32_t l = g->arcs[a].ilabel;
      if (l < 0 || l > b->num_labels)
        gh_die("align_batch: utterance %d of the batch: input label %d outside [0, %d]", u, l, b->num_labels);
      if (l > 0 && (b->col[l] < 0 || b->col[l] >= b->ld))
        gh_die("align_batch: input label %d reads column %d of %d", l, b->col[l], b->ld);
      if (g->arcs[a].next < 0 || g->arcs[a].next >= g->num_states)
        gh_die("align_batch: utterance %d of the batch: an arc to state %d (%d states)", u, g->arcs[a].next,
               g->num_states);
      neps += l == 0;
    }
    p->neps[u] = neps;
    p->st_off[u + 1] = p->st_off[u] + g->num_states;
    p->arc_off[u + 1] = p->arc_off[u] + g->num_arcs;
    p->ll_off[u + 1] = p->ll_off[u] + (int64_t)b->T[u] * b->ld;
    p->ck_off[u + 1] = p->ck_off[u] + (int64_t)p->nck[u] * g->num_states;
    p->bp_off[u + 1] = p->bp_off[u] + (int64_t)p->K[u] * g->num_states;
    const int64_t per_col = neps < g->num_states ? neps : g->num_states;
    p->path_cap[u] = (int64_t)b->T[u] + ((int64_t)b->T[u] + 1) * per_col;
    p->path_off[u + 1] = p->path_off[u] + p->path_cap[u];
  }
  const size_t na = (size_t)p->arc_off[B] + 1, ns = (size_t)p->st_off[B] + 1;
  p->arc_src = gh_malloc(na * sizeof(int32_t));
  p->arc_col = gh_malloc(na * sizeof(int32_t));
  p->arc_w = gh_malloc(na * sizeof(float));
  p->in_arc = gh_malloc(na * sizeof(int32_t));
  p->in_off = gh_malloc((ns + (size_t)B) * sizeof(int32_t));
  p->in_mid = gh_malloc(ns * sizeof(int32_t));
  p->final = gh_malloc(ns * sizeof(float));
  for (int32_t u = 0; u < B; ++u) {
    const gh_align_graph *g = &b->graphs[u];
    const int32_t S = p->S[u];
    int32_t *src = p->arc_src + p->arc_off[u], *colx = p->arc_col + p->arc_off[u], *in = p->in_arc + p->arc_off[u];
    float *w = p->arc_w + p->arc_off[u];
    int32_t *ioff = p->in_off + p->st_off[u] + u, *imid = p->in_mid + p->st_off[u];
    memcpy(p->final + p->st_off[u], g->final, (size_t)S * sizeof(float));
    int32_t *ne = gh_calloc((size_t)S, sizeof(int32_t)), *nx = gh_calloc((size_t)S, sizeof(int32_t));
    for (int32_t s = 0; s < S; ++s)
      for (int64_t a = g->arc_start[s]; a < g->arc_start[s + 1]; ++a) {
        const gh_align_arc *arc = &g->arcs[a];
        src[a] = s;
        w[a] = arc->weight;
        colx[a] = arc->ilabel > 0 ? b->col[arc->ilabel] : -1;
        if (arc->ilabel > 0) ne[arc->next]++;
        else nx[arc->next]++;
      }
    ioff[0] = 0;
    for (int32_t s = 0; s < S; ++s) {
      imid[s] = ioff[s] + ne[s];
      ioff[s + 1] = imid[s] + nx[s];
      ne[s] = ioff[s]; /* fill cursors */
      nx[s] = imid[s];
    }
    for (int32_t a = 0; a < p->A[u]; ++a) { /* increasing arc index within each list */
      const int32_t d = g->arcs[a].next;
      if (colx[a] >= 0) in[ne[d]++] = a;
      else in[nx[d]++] = a;
    }
    free(ne);
    free(nx);
  }
}

void gh_align_plan_free(gh_align_plan *p) {
  free(p->S), free(p->A), free(p->T), free(p->K), free(p->nck), free(p->start), free(p->neps);
  free(p->st_off), free(p->arc_off), free(p->ll_off), free(p->ck_off), free(p->bp_off), free(p->path_off);
  free(p->path_cap);
  free(p->arc_src), free(p->arc_col), free(p->arc_w), free(p->in_off), free(p->in_mid), free(p->in_arc);
  free(p->final);
  memset(p, 0, sizeof *p);
}
