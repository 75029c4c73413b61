/* hmm-graphs.h -- random HMM graphs and emissions for the HMM kernel tests
 * (test_hmm_cuda.c, test_opencl.c): left-to-right, ergodic, word-loop and
 * one-state graphs in the CSR form of gh_hmm_graph (backend.h), random
 * log-likelihood matrices, the log-probability of a state path, and a
 * relative error.  Header-only (static functions); the including test
 * defines `static double urand(void)` (uniform in [0, 1)) before it, so
 * each test keeps its own random sequence. */
#ifndef GH_TEST_HMM_GRAPHS_H
#define GH_TEST_HMM_GRAPHS_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* A test graph: arcs collected in any order, then sorted by destination into
 * the CSR form of gh_hmm_graph. */
typedef struct {
  int32_t S, A, cap, P;
  int32_t *pdf, *in_off, *src, *dst;
  float *init, *fin, *lp;
  gh_hmm_graph g;
} tgraph;

static void tg_init(tgraph *t, int32_t S, int32_t P) {
  memset(t, 0, sizeof *t);
  t->S = S; t->P = P;
  t->pdf = malloc(S * sizeof(int32_t));
  t->init = malloc(S * sizeof(float));
  t->fin = malloc(S * sizeof(float));
  t->in_off = calloc(S + 1, sizeof(int32_t));
  for (int32_t j = 0; j < S; ++j) { t->pdf[j] = (int32_t)(urand() * P) % P; t->init[j] = -INFINITY; t->fin[j] = -INFINITY; }
}
static void tg_arc(tgraph *t, int32_t i, int32_t j, float lp) {
  if (t->A == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 64;
    t->src = realloc(t->src, t->cap * sizeof(int32_t));
    t->dst = realloc(t->dst, t->cap * sizeof(int32_t));
    t->lp = realloc(t->lp, t->cap * sizeof(float));
  }
  t->src[t->A] = i; t->dst[t->A] = j; t->lp[t->A] = lp; t->A++;
}
/* Counting sort by destination (stable) and fill g. */
static void tg_finish(tgraph *t) {
  int32_t A = t->A, S = t->S;
  int32_t *s2 = malloc((A + 1) * sizeof(int32_t)), *d2 = malloc((A + 1) * sizeof(int32_t));
  float *l2 = malloc((A + 1) * sizeof(float));
  memset(t->in_off, 0, (S + 1) * sizeof(int32_t));
  for (int32_t a = 0; a < A; ++a) t->in_off[t->dst[a] + 1]++;
  for (int32_t j = 0; j < S; ++j) t->in_off[j + 1] += t->in_off[j];
  int32_t *fill = malloc((S + 1) * sizeof(int32_t));
  memcpy(fill, t->in_off, (S + 1) * sizeof(int32_t));
  for (int32_t a = 0; a < A; ++a) { int32_t q = fill[t->dst[a]]++; s2[q] = t->src[a]; d2[q] = t->dst[a]; l2[q] = t->lp[a]; }
  free(fill); free(t->src); free(t->dst); free(t->lp);
  t->src = s2; t->dst = d2; t->lp = l2;
  t->g = (gh_hmm_graph){S, A, t->P, t->pdf, t->init, t->fin, t->in_off, t->src, t->dst, t->lp};
}
static void tg_free(tgraph *t) {
  free(t->pdf); free(t->init); free(t->fin); free(t->in_off); free(t->src); free(t->dst); free(t->lp);
}
/* Left-to-right: self, next, and (skip) next-but-one with random
 * probabilities; enters at state 0; exits from the last state (Kaldi-style,
 * log 0.5) or everywhere with 0 (Rabiner, rabiner != 0). */
static void tg_lr(tgraph *t, int32_t S, int32_t P, int skip, int rabiner) {
  tg_init(t, S, P);
  t->init[0] = 0.f;
  for (int32_t i = 0; i < S; ++i) {
    double w0 = 0.2 + urand(), w1 = i + 1 < S ? 0.2 + urand() : 0, w2 = skip && i + 2 < S ? 0.1 * urand() : 0;
    double sum = w0 + w1 + w2;
    tg_arc(t, i, i, (float)log(w0 / sum));
    if (w1 > 0) tg_arc(t, i, i + 1, (float)log(w1 / sum));
    if (w2 > 0) tg_arc(t, i, i + 2, (float)log(w2 / sum));
    t->fin[i] = rabiner ? 0.f : (i == S - 1 ? (float)log(0.5) : -INFINITY);
  }
  tg_finish(t);
}
/* Ergodic: all arcs but every 5th, random initial probabilities, exits 0. */
static void tg_ergodic(tgraph *t, int32_t S, int32_t P) {
  tg_init(t, S, P);
  for (int32_t j = 0; j < S; ++j) t->init[j] = (float)log((0.2 + urand()) / S);
  for (int32_t i = 0; i < S; ++i) {
    for (int32_t j = 0; j < S; ++j)
      if ((i * 7 + j * 3) % 5 != 4 || i == j) tg_arc(t, i, j, (float)log((0.1 + urand()) / S));
    t->fin[i] = 0.f;
  }
  tg_finish(t);
}
/* Word loop: hub state 0 (enters and exits there) -> first state of each of
 * W L-state left-to-right words -> last state -> hub; the hub's in-degree
 * is W. */
static void tg_wordloop(tgraph *t, int32_t W, int32_t L, int32_t P) {
  int32_t S = 1 + W * L;
  tg_init(t, S, P);
  t->init[0] = 0.f;
  t->fin[0] = 0.f;
  for (int32_t w = 0; w < W; ++w) {
    int32_t b = 1 + w * L;
    tg_arc(t, 0, b, (float)log(1.0 / W));
    for (int32_t k = 0; k < L; ++k) {
      double p = 0.3 + 0.5 * urand();
      tg_arc(t, b + k, b + k, (float)log(p));
      tg_arc(t, b + k, k + 1 < L ? b + k + 1 : 0, (float)log(1 - p));
    }
  }
  tg_finish(t);
}
/* One state; with or without a self-loop (without: only T = 1 has a path). */
static void tg_one(tgraph *t, int32_t P, int loop) {
  tg_init(t, 1, P);
  t->init[0] = 0.f; t->fin[0] = (float)log(0.1);
  if (loop) tg_arc(t, 0, 0, (float)log(0.9));
  tg_finish(t);
}

static float *random_ll(int64_t frames, int32_t P, double pinf) {
  float *ll = malloc((frames * P + 1) * sizeof(float));
  for (int64_t i = 0; i < frames * P; ++i) ll[i] = urand() < pinf ? -INFINITY : (float)(-40 - 20 * urand());
  return ll;
}

/* Log-probability of a state path under graph g (the CPU formula, double);
 * -inf if a step has no arc. */
static double path_score(const gh_hmm_graph *g, const float *ll, int32_t P, int64_t T, const int32_t *q) {
  if (T == 0 || q[0] < 0 || q[0] >= g->num_states) return -INFINITY;
  double s = (double)g->init[q[0]] + ll[g->pdf[q[0]]];
  for (int64_t t = 1; t < T; ++t) {
    int32_t j = q[t];
    if (j < 0 || j >= g->num_states) return -INFINITY;
    double best = -INFINITY;
    for (int32_t a = g->in_off[j]; a < g->in_off[j + 1]; ++a)
      if (g->arc_src[a] == q[t - 1] && g->arc_logp[a] > best) best = g->arc_logp[a];
    s += best + ll[t * P + g->pdf[j]];
  }
  return s + g->final[q[T - 1]];
}

#ifdef GH_TEST_H
/* hmm_fb_pairs of ops (when the backend has it) against the host rule on
 * the same backend's hmm_fb gamma: the same pairs bit for bit and in order,
 * with col_pdf (pdf = 1000 + 3 column) and min_post 0, then without and
 * min_post 0.05; log P and stats as hmm_fb's.  gamma: scratch [sum T S]. */
static void check_fb_pairs(const gh_ops_hmm *co, gh_backend *b, gh_dev_hmm *h, const char *name,
                           const gh_hmm_graph *const *graphs, int64_t NS, const gh_hmm_batch *bt, float *gamma) {
  if (!gh_backend_supports(b, GH_CAP_HMM_DEV)) return;
  const int32_t P = bt->num_pdfs, B = bt->num_utts;
  int32_t *col = malloc(P * sizeof(int32_t));
  for (int32_t p = 0; p < P; ++p) col[p] = 1000 + 3 * p;
  double *s1 = calloc(NS + 1, sizeof(double)), *s2 = calloc(NS + 1, sizeof(double));
  double *L1 = malloc((B + 1) * sizeof(double)), *L2 = malloc((B + 1) * sizeof(double));
  for (int k = 0; k < 2; ++k) {
    const double mp = k ? 0.05 : 0.0;
    gh_pair_buf pd = {0}, ph = {0};
    for (int64_t q = 0; q < NS; ++q) s1[q] = s2[q] = 0;
    b->ops->hmm_dev->hmm_fb_pairs(b, h, bt, graphs, k ? NULL : col, 7, mp, L1, s1, &pd);
    co->hmm_fb(b, h, bt, L2, gamma, s2);
    gh_hmm_gamma_pairs(bt, graphs, gamma, L2, k ? NULL : col, 7, mp, &ph);
    int any_path = 0;
    for (int32_t u = 0; u < B; ++u) any_path |= L2[u] > -INFINITY && bt->frame_off[u + 1] > bt->frame_off[u];
    GH_TEST_OK(pd.n == ph.n && (ph.n > 0 || !any_path) && (ph.n == 0 || !memcmp(pd.v, ph.v, ph.n * sizeof(gh_frame_pdf))) &&
                   !memcmp(s1, s2, NS * sizeof(double)) && !memcmp(L1, L2, B * sizeof(double)),
               "%s: fb_pairs (min_post %g) = gamma -> gh_hmm_gamma_pairs bit for bit (%lld and %lld pairs)", name, mp,
               (long long)pd.n, (long long)ph.n);
    free(pd.v); free(ph.v);
  }
  free(col); free(s1); free(s2); free(L1); free(L2);
}
#endif

static double relerr(double a, double b) {
  if (a == b) return 0;  /* incl. both -inf */
  if (isinf(a) || isinf(b) || isnan(a) || isnan(b)) return INFINITY;
  return fabs(a - b) / (fabs(b) > 1 ? fabs(b) : 1);
}

#endif
