/* test_hmm.c -- HMM kernels (CPU reference) against float64 brute-force
 * enumeration of all state paths; batching of utterances of different
 * lengths and graphs; log vs scaled forward on 20,000 frames; HMM set and
 * accumulator I/O; compilation of transcripts; re-estimation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "registry/registry.h"
#include "gh-test.h"
#include "hmm/hmm.h"

static double urand(unsigned *s) { *s = *s * 1103515245u + 12345u; return ((*s >> 8) & 0xffffff) / 16777216.0; }

static double lse(double a, double b) {
  if (a < b) { double t = a; a = b; b = t; }
  return b == -INFINITY ? a : a + log1p(exp(b - a));
}

/* Random S-state HMM: dense arcs minus a few, rows (and exit if kaldi) sum to 1. */
static void random_hmm(gh_hmm *h, const char *name, int32_t S, int32_t P, int kaldi, unsigned *seed) {
  memset(h, 0, sizeof *h);
  h->name = strdup(name);
  h->num_states = S;
  h->pdf = malloc(S * sizeof(int32_t));
  h->init = malloc(S * sizeof(float));
  h->final = malloc(S * sizeof(float));
  h->arcs = malloc(S * S * sizeof(gh_hmm_arc));
  double isum = 0, *w = malloc((S + 1) * sizeof(double));
  for (int32_t j = 0; j < S; ++j) { h->pdf[j] = j % P; w[j] = 0.2 + urand(seed); isum += w[j]; }
  for (int32_t j = 0; j < S; ++j) h->init[j] = (float)log(w[j] / isum);
  int32_t a = 0;
  for (int32_t i = 0; i < S; ++i) {
    double sum = 0;
    for (int32_t j = 0; j <= S; ++j) {
      w[j] = (j < S && (i + 2 * j) % 5 == 4) ? 0 : 0.1 + urand(seed);  /* some missing arcs */
      if (j == S && !kaldi) w[j] = 0;
      sum += w[j];
    }
    for (int32_t j = 0; j < S; ++j)
      if (w[j] > 0) h->arcs[a++] = (gh_hmm_arc){i, j, (float)log(w[j] / sum)};
    h->final[i] = kaldi ? (float)log(w[S] / sum) : 0.0f;
  }
  h->num_arcs = a;
  free(w);
}

/* Brute force over all S^T paths of a compiled graph, in double. */
typedef struct { double total, best; int32_t *best_path; double *gamma, *stats; } brute;

static void brute_force(const gh_hmm_graph *g, const float *ll, int32_t P, int32_t T, brute *r) {
  int32_t S = g->num_states, A = g->num_arcs;
  double *lp = malloc(S * S * sizeof(double));
  int32_t *arc = malloc(S * S * sizeof(int32_t));
  for (int32_t k = 0; k < S * S; ++k) { lp[k] = -INFINITY; arc[k] = -1; }
  for (int32_t a = 0; a < A; ++a) { lp[g->arc_src[a] * S + g->arc_dst[a]] = g->arc_logp[a]; arc[g->arc_src[a] * S + g->arc_dst[a]] = a; }
  int64_t n = 1;
  for (int32_t t = 0; t < T; ++t) n *= S;
  double *score = malloc(n * sizeof(double));
  int32_t *q = malloc((size_t)(T > 0 ? T : 1) * sizeof(int32_t));
  r->total = -INFINITY; r->best = -INFINITY;
  r->best_path = calloc((size_t)(T > 0 ? T : 1), sizeof(int32_t));
  for (int64_t k = 0; k < n; ++k) {
    int64_t x = k;
    for (int32_t t = 0; t < T; ++t) { q[t] = (int32_t)(x % S); x /= S; }
    double s = g->init[q[0]] + (double)ll[g->pdf[q[0]]];
    for (int32_t t = 1; t < T; ++t) s += lp[q[t - 1] * S + q[t]] + ll[t * P + g->pdf[q[t]]];
    s += g->final[q[T - 1]];
    score[k] = s;
    r->total = lse(r->total, s);
    if (s > r->best) { r->best = s; memcpy(r->best_path, q, T * sizeof(int32_t)); }
  }
  r->gamma = calloc(T * S, sizeof(double));
  r->stats = calloc(2 * S + A, sizeof(double));
  for (int64_t k = 0; k < n; ++k) {
    if (score[k] == -INFINITY) continue;
    double p = exp(score[k] - r->total);
    int64_t x = k;
    for (int32_t t = 0; t < T; ++t) { q[t] = (int32_t)(x % S); x /= S; }
    for (int32_t t = 0; t < T; ++t) r->gamma[t * S + q[t]] += p;
    r->stats[q[0]] += p;
    for (int32_t t = 1; t < T; ++t) r->stats[S + arc[q[t - 1] * S + q[t]]] += p;
    r->stats[S + A + q[T - 1]] += p;
  }
  free(lp); free(arc); free(score); free(q);
}

static void brute_free(brute *r) { free(r->best_path); free(r->gamma); free(r->stats); }

static void test_brute(gh_backend *be, int kaldi) {
  unsigned seed = 7 + kaldi;
  const int32_t P = 2, nutt = 3, Ts[3] = {6, 4, 1};
  gh_hmm_set set;
  memset(&set, 0, sizeof set);
  gh_hmm h;
  random_hmm(&h, "a", 3, P, kaldi, &seed);
  gh_hmm_set_add(&set, &h);
  random_hmm(&h, "b", 4, P, kaldi, &seed);
  gh_hmm_set_add(&set, &h);
  GH_TEST_OK(gh_hmm_check(&set.hmms[0]) == 0 && gh_hmm_check(&set.hmms[1]) == 0, "random HMMs pass gh_hmm_check (%s)", gh_last_error());
  gh_hmm_compiled c[2];
  for (int32_t k = 0; k < 2; ++k) gh_hmm_compile(&set, &k, 1, -1, 0, &c[k]);
  const gh_hmm_graph *graphs[2] = {&c[0].graph, &c[1].graph};
  int64_t off[4] = {0, 6, 10, 11};
  int32_t gidx[3] = {0, 1, 0};
  float *ll = malloc(11 * P * sizeof(float));
  for (int32_t i = 0; i < 11 * P; ++i) ll[i] = (float)(-3 * urand(&seed));
  gh_hmm_batch b = {nutt, P, ll, off, gidx};
  const gh_ops_hmm *ops = gh_backend_hmm_ops(be);
  gh_dev_hmm *d = ops->hmm_upload(be, graphs, 2);
  double L[3], Ls[3], V[3], Lfb[3];
  int32_t path[11];
  int64_t soff[4];
  gh_hmm_batch_state_off(&b, graphs, soff);
  float *alpha = malloc(soff[3] * sizeof(float)), *gamma = malloc(soff[3] * sizeof(float));
  int64_t nst = gh_hmm_stats_offset(graphs, 2);
  double *stats = calloc(nst, sizeof(double));
  ops->hmm_forward(be, d, &b, 0, L, alpha);
  ops->hmm_forward(be, d, &b, GH_HMM_SCALED, Ls, NULL);
  ops->hmm_viterbi(be, d, &b, path, V);
  ops->hmm_fb(be, d, &b, Lfb, gamma, stats);
  double *expect_stats = calloc(nst, sizeof(double));
  const char *kind = kaldi ? "Kaldi exits" : "Rabiner ends";
  for (int32_t u = 0; u < nutt; ++u) {
    const gh_hmm_graph *g = graphs[gidx[u]];
    brute r;
    brute_force(g, ll + off[u] * P, P, Ts[u], &r);
    GH_TEST_NEAR(L[u], r.total, 1e-9 * fabs(r.total) + 1e-9, "%s: forward log-likelihood = brute force, utt %d (T=%d, S=%d)", kind, u, Ts[u], g->num_states);
    GH_TEST_NEAR(Ls[u], r.total, 1e-9 * fabs(r.total) + 1e-9, "%s: scaled forward = brute force, utt %d", kind, u);
    GH_TEST_NEAR(Lfb[u], r.total, 1e-9 * fabs(r.total) + 1e-9, "%s: forward-backward log-likelihood, utt %d", kind, u);
    GH_TEST_NEAR(V[u], r.best, 1e-9 * fabs(r.best) + 1e-9, "%s: Viterbi score = best path by enumeration, utt %d", kind, u);
    int same = 1;
    for (int32_t t = 0; t < Ts[u]; ++t) same &= path[off[u] + t] == r.best_path[t];
    GH_TEST_OK(same, "%s: Viterbi path = best path by enumeration, utt %d", kind, u);
    /* alpha at the last frame + final gives the total */
    int32_t S = g->num_states;
    double tot = -INFINITY;
    for (int32_t j = 0; j < S; ++j) tot = lse(tot, alpha[soff[u] + (Ts[u] - 1) * S + j] + (double)g->final[j]);
    GH_TEST_NEAR(tot, r.total, 1e-5, "%s: alpha output consistent with total, utt %d", kind, u);
    double maxerr = 0, maxsum = 0;
    for (int32_t t = 0; t < Ts[u]; ++t) {
      double s = 0;
      for (int32_t j = 0; j < S; ++j) {
        double gv = gamma[soff[u] + t * S + j];
        s += gv;
        if (fabs(gv - r.gamma[t * S + j]) > maxerr) maxerr = fabs(gv - r.gamma[t * S + j]);
      }
      if (fabs(s - 1) > maxsum) maxsum = fabs(s - 1);
    }
    GH_TEST_OK(maxerr < 1e-6, "%s: posteriors gamma = brute-force marginals, utt %d (max err %.2g)", kind, u, maxerr);
    GH_TEST_OK(maxsum < 1e-6, "%s: posteriors sum to 1 per frame, utt %d (max err %.2g)", kind, u, maxsum);
    int64_t so = gh_hmm_stats_offset(graphs, gidx[u]);
    for (int64_t k = 0; k < gh_hmm_graph_stats_size(g); ++k) expect_stats[so + k] += r.stats[k];
    brute_free(&r);
  }
  double maxerr = 0;
  for (int64_t k = 0; k < nst; ++k) if (fabs(stats[k] - expect_stats[k]) > maxerr) maxerr = fabs(stats[k] - expect_stats[k]);
  GH_TEST_OK(maxerr < 1e-9, "%s: init, arc (xi) and exit counts = brute force, summed per graph (max err %.2g)", kind, maxerr);
  /* pdf posteriors (gh_backend_hmm_fb_pairs, hmm-bw's rule): per frame the
   * brute-force marginals summed over each pdf's states, pdfs in the order
   * of their first state, frames offset by frame_base, ids through col_pdf */
  {
    gh_pair_buf pb = {0};
    const int32_t col[2] = {5, 9};
    double Lp[3], *st2 = calloc(nst, sizeof(double));
    gh_backend_hmm_fb_pairs(be, d, &b, graphs, col, 100, 0.0, Lp, st2, &pb);
    int64_t k = 0, bad = 0;
    double perr = 0;
    for (int32_t u = 0; u < nutt; ++u) {
      const gh_hmm_graph *g = graphs[gidx[u]];
      brute r;
      brute_force(g, ll + off[u] * P, P, Ts[u], &r);
      const int32_t S = g->num_states;
      for (int32_t t = 0; t < Ts[u]; ++t) {
        double sp[2] = {0, 0};
        int32_t order[2], n = 0;
        for (int32_t j = 0; j < S; ++j) {
          const int32_t p = g->pdf[j];
          int seen = 0;
          for (int32_t q = 0; q < n; ++q) seen |= order[q] == p;
          if (!seen) order[n++] = p;
          sp[p] += r.gamma[t * S + j];
        }
        for (int32_t q = 0; q < n; ++q, ++k) {
          if (k >= pb.n || pb.v[k].frame != 100 + off[u] + t || pb.v[k].pdf != col[order[q]]) { ++bad; continue; }
          if (fabs(pb.v[k].weight - sp[order[q]]) > perr) perr = fabs(pb.v[k].weight - sp[order[q]]);
        }
      }
      brute_free(&r);
    }
    GH_TEST_OK(bad == 0 && k == pb.n && perr < 1e-6,
               "%s: fb_pairs = brute-force pdf posteriors (%lld pairs, %lld misplaced, max err %.2g)", kind,
               (long long)pb.n, (long long)bad, perr);
    GH_TEST_OK(!memcmp(st2, stats, nst * sizeof(double)) && !memcmp(Lp, Lfb, sizeof Lp),
               "%s: fb_pairs' stats and log-likelihoods = hmm_fb's", kind);
    pb.n = 0;
    gh_backend_hmm_fb_pairs(be, d, &b, graphs, NULL, 0, 0.3, Lp, NULL, &pb);
    int64_t below = 0;
    for (int64_t q = 0; q < pb.n; ++q) below += pb.v[q].weight < 0.3f || pb.v[q].pdf > 1;
    GH_TEST_OK(pb.n > 0 && pb.n < k && below == 0, "%s: fb_pairs min_post 0.3 keeps %lld of %lld pairs, none below",
               kind, (long long)pb.n, (long long)k);
    free(pb.v);
    free(st2);
  }
  /* accs through ties: the HMMs' counts equal the graph counts (one HMM per graph) */
  gh_hmm_accs acc;
  gh_hmm_accs_init(&acc, &set);
  for (int32_t k = 0; k < 2; ++k) gh_hmm_accs_add_stats(&acc, &c[k], stats + gh_hmm_stats_offset(graphs, k));
  double sa = 0, sb = 0;
  for (int64_t k = 0; k < acc.off[2]; ++k) sa += acc.counts[k];
  for (int64_t k = 0; k < nst; ++k) sb += stats[k];
  GH_TEST_NEAR(sa, sb, 1e-9, "%s: accumulators receive every count through the ties", kind);
  gh_hmm_accs_free(&acc);
  ops->hmm_free(be, d);
  free(ll); free(alpha); free(gamma); free(stats); free(expect_stats);
  for (int32_t k = 0; k < 2; ++k) gh_hmm_compiled_free(&c[k]);
  gh_hmm_set_free(&set);
}

/* A dense graph (5 states, 20 arcs: the cpu backend's factored
 * log-sum-exps, kernels/cpu/cpu-hmm.c) against brute force: random
 * loglikes, then loglikes that force its per-arc fallbacks -- state 0 best
 * by 900 nats for 3 frames, then state 1, with the arc 0 -> 1 at -800 (a
 * sum that underflows, a factor beyond e^700). */
static void test_dense(gh_backend *be) {
  unsigned seed = 11;
  const int32_t S = 5, P = 5, T = 6;
  gh_hmm_set set;
  memset(&set, 0, sizeof set);
  gh_hmm h;
  random_hmm(&h, "d", S, P, 1, &seed);
  gh_hmm_set_add(&set, &h);
  gh_hmm_compiled c;
  int32_t id = 0;
  gh_hmm_compile(&set, &id, 1, -1, 0, &c);
  gh_hmm_graph *g = &c.graph;
  const gh_ops_hmm *ops = gh_backend_hmm_ops(be);
  float ll[6 * 5];
  for (int pass = 0; pass < 2; ++pass) {
    const char *what = pass ? "dense graph, underflowing sums" : "dense graph";
    if (pass) {
      for (int32_t a = 0; a < g->num_arcs; ++a)
        if (g->arc_src[a] == 0 && g->arc_dst[a] == 1) ((float *)g->arc_logp)[a] = -800.0f;
      for (int32_t t = 0; t < T; ++t)
        for (int32_t j = 0; j < S; ++j) ll[t * P + g->pdf[j]] = j == (t < 3 ? 0 : 1) ? 0.0f : -900.0f;
    } else {
      for (int32_t i = 0; i < T * P; ++i) ll[i] = (float)(-3 * urand(&seed));
    }
    GH_TEST_OK(g->num_arcs >= 4 * S, "%s: %d arcs for %d states", what, g->num_arcs, S);
    const gh_hmm_graph *gp = g;
    gh_dev_hmm *d = ops->hmm_upload(be, &gp, 1);
    int64_t off[2] = {0, T};
    gh_hmm_batch b = {1, P, ll, off, NULL};
    double L, Lfb, *stats = calloc(gh_hmm_graph_stats_size(g), sizeof(double));
    float gamma[6 * 5];
    ops->hmm_forward(be, d, &b, 0, &L, NULL);
    ops->hmm_fb(be, d, &b, &Lfb, gamma, stats);
    brute r;
    brute_force(g, ll, P, T, &r);
    GH_TEST_NEAR(L, r.total, 1e-9 * fabs(r.total) + 1e-9, "%s: forward = brute force (%.6f)", what, r.total);
    GH_TEST_NEAR(Lfb, r.total, 1e-9 * fabs(r.total) + 1e-9, "%s: forward-backward log-likelihood", what);
    double gerr = 0, serr = 0;
    for (int32_t k = 0; k < T * S; ++k) if (fabs(gamma[k] - r.gamma[k]) > gerr) gerr = fabs(gamma[k] - r.gamma[k]);
    for (int64_t k = 0; k < gh_hmm_graph_stats_size(g); ++k)
      if (fabs(stats[k] - r.stats[k]) > serr) serr = fabs(stats[k] - r.stats[k]);
    GH_TEST_OK(gerr < 1e-6, "%s: gamma = brute-force marginals (max err %.2g)", what, gerr);
    GH_TEST_OK(serr < 1e-9, "%s: init, arc and exit counts = brute force (max err %.2g)", what, serr);
    brute_free(&r);
    free(stats);
    ops->hmm_free(be, d);
  }
  gh_hmm_compiled_free(&c);
  gh_hmm_set_free(&set);
}

/* 20,000 frames through a 5-state left-to-right HMM with loglikes around
 * -40: |log P| ~ 8e5, far below double's exp range, no underflow. */
static void test_long(gh_backend *be) {
  const int32_t T = 20000, P = 5;
  unsigned seed = 3;
  int32_t pdfs[5] = {0, 1, 2, 3, 4};
  gh_hmm_set set;
  memset(&set, 0, sizeof set);
  gh_hmm h;
  gh_hmm_left_to_right(&h, "w", 5, pdfs, 0.999, 0.1);
  gh_hmm_set_add(&set, &h);
  gh_hmm_compiled c;
  int32_t id = 0;
  gh_hmm_compile(&set, &id, 1, -1, 0, &c);
  float *ll = malloc((int64_t)T * P * sizeof(float));
  for (int64_t i = 0; i < (int64_t)T * P; ++i) ll[i] = (float)(-40 - 10 * urand(&seed));
  int64_t off[2] = {0, T};
  gh_hmm_batch b = {1, P, ll, off, NULL};
  const gh_hmm_graph *g = &c.graph;
  const gh_ops_hmm *ops = gh_backend_hmm_ops(be);
  gh_dev_hmm *d = ops->hmm_upload(be, &g, 1);
  double L, Ls, Lfb, V;
  ops->hmm_forward(be, d, &b, 0, &L, NULL);
  ops->hmm_forward(be, d, &b, GH_HMM_SCALED, &Ls, NULL);
  float *gamma = malloc((int64_t)T * 5 * sizeof(float));
  double *stats = calloc(gh_hmm_graph_stats_size(g), sizeof(double));
  int32_t A = g->num_arcs;
  int32_t *path = malloc(T * sizeof(int32_t));
  ops->hmm_fb(be, d, &b, &Lfb, gamma, stats);
  ops->hmm_viterbi(be, d, &b, path, &V);
  GH_TEST_OK(isfinite(L) && isfinite(Ls) && isfinite(Lfb) && isfinite(V) && L < -8e5,
             "20000 frames: forward %.6f, scaled %.6f, fb %.6f, Viterbi %.6f all finite", L, Ls, Lfb, V);
  GH_TEST_NEAR(L, Ls, 1e-9 * fabs(L), "20000 frames: log-domain and scaled forward agree");
  GH_TEST_NEAR(L, Lfb, 1e-9 * fabs(L), "20000 frames: forward-backward log-likelihood agrees");
  GH_TEST_OK(V <= L + 1e-6, "20000 frames: Viterbi score <= total log-likelihood");
  double maxsum = 0;
  for (int64_t t = 0; t < T; ++t) {
    double s = 0;
    for (int32_t j = 0; j < 5; ++j) s += gamma[t * 5 + j];
    if (fabs(s - 1) > maxsum) maxsum = fabs(s - 1);
  }
  GH_TEST_OK(maxsum < 1e-5, "20000 frames: posteriors sum to 1 at every frame (max err %.2g)", maxsum);
  GH_TEST_NEAR(stats[0], 1.0, 1e-9, "20000 frames: one expected entry");
  GH_TEST_NEAR(stats[5 + A + 4], 1.0, 1e-6, "20000 frames: one expected exit from the last state");
  GH_TEST_OK(path[0] == 0 && path[T - 1] == 4, "20000 frames: Viterbi path starts in state 0, ends in state 4");
  ops->hmm_free(be, d);
  free(ll); free(gamma); free(path); free(stats);
  gh_hmm_compiled_free(&c);
  gh_hmm_set_free(&set);
}

/* Concatenations with optional silence are stochastic: with all loglikes 0,
 * sum over T of P(O of length T) = 1 (the graph's exits + arcs sum to 1). */
static void test_compile(gh_backend *be) {
  gh_hmm_set set;
  memset(&set, 0, sizeof set);
  int32_t p0[3] = {0, 1, 2}, p1[2] = {3, 4}, p2[1] = {5};
  gh_hmm h;
  gh_hmm_left_to_right(&h, "one", 3, p0, 0.6, 0.3);
  gh_hmm_set_add(&set, &h);
  gh_hmm_left_to_right(&h, "two", 2, p1, 0.5, 0);
  gh_hmm_set_add(&set, &h);
  gh_hmm_left_to_right(&h, "sil", 1, p2, 0.7, 0);
  gh_hmm_set_add(&set, &h);
  gh_hmm_compiled c;
  gh_hmm_compile_transcript(&set, "one two one", 2, 0.3, &c, "test", "u1");
  GH_TEST_OK(c.graph.num_states == 3 + 2 + 3 + 4 * 1, "compiled 'one two one' with optional silence has 12 states (%d)", c.graph.num_states);
  const int32_t T = 400, P = 6;
  float *ll = calloc(T * P, sizeof(float));
  int64_t *off = malloc((T + 1) * sizeof(int64_t));
  off[0] = 0;
  for (int32_t u = 0; u < T; ++u) off[u + 1] = off[u] + u + 1;  /* utterance u has u+1 frames */
  float *big = calloc(off[T] * P, sizeof(float));
  gh_hmm_batch b = {T, P, big, off, NULL};
  const gh_hmm_graph *g = &c.graph;
  const gh_ops_hmm *ops = gh_backend_hmm_ops(be);
  gh_dev_hmm *d = ops->hmm_upload(be, &g, 1);
  double *L = malloc(T * sizeof(double)), tot = 0;
  ops->hmm_forward(be, d, &b, 0, L, NULL);
  for (int32_t u = 0; u < T; ++u) tot += exp(L[u]);
  GH_TEST_NEAR(tot, 1.0, 1e-6, "concatenation with optional silence is a proper distribution over lengths");
  /* words read off a path: sil one one two two sil one ... */
  int32_t path[] = {0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};  /* states of Z0 W1 Z1 W2 Z2 W3 Z3 */
  char *words = gh_hmm_path_words(&c, path, 13);
  GH_TEST_OK(!strcmp(words, "one two one"), "words read off a path: '%s'", words);
  free(words);
  /* ties: an exit of 'one' followed by 'two' counts as one's exit and two's entry */
  double *stats = calloc(gh_hmm_graph_stats_size(g), sizeof(double));
  double Lfb;
  int64_t o1[2] = {0, 12};
  float *ll12 = malloc(12 * P * sizeof(float));
  unsigned seed = 5;
  for (int32_t i = 0; i < 12 * P; ++i) ll12[i] = (float)(-2 * urand(&seed));
  gh_hmm_batch b1 = {1, P, ll12, o1, NULL};
  ops->hmm_fb(be, d, &b1, &Lfb, NULL, stats);
  gh_hmm_accs acc;
  gh_hmm_accs_init(&acc, &set);
  gh_hmm_accs_add_stats(&acc, &c, stats);
  const double *one = acc.counts + acc.off[0], *two = acc.counts + acc.off[1];
  GH_TEST_NEAR(one[0], 2.0, 1e-9, "word 'one' entered twice (init count %.6f)", one[0]);
  GH_TEST_NEAR(two[0], 1.0, 1e-9, "word 'two' entered once");
  GH_TEST_NEAR(one[3 + set.hmms[0].num_arcs + 2], 2.0, 1e-9, "word 'one' left twice (final count)");
  gh_hmm_accs_free(&acc);
  ops->hmm_free(be, d);
  free(ll); free(off); free(big); free(L); free(stats); free(ll12);
  gh_hmm_compiled_free(&c);
  gh_hmm_set_free(&set);
}

static void test_io_update(void) {
  unsigned seed = 11;
  gh_hmm_set set, back;
  memset(&set, 0, sizeof set);
  gh_hmm h;
  random_hmm(&h, "x", 4, 3, 1, &seed);
  gh_hmm_set_add(&set, &h);
  int32_t pd[2] = {3, 4};
  gh_hmm_left_to_right(&h, "y", 2, pd, 0.5, 0);
  gh_hmm_set_add(&set, &h);
  int32_t ids[2] = {0, 1};
  gh_hmm_word_loop(&h, "loop", &set, ids, 1, 1);
  gh_hmm_set_add(&set, &h);
  const char *tmp[2] = {"build/test/hmm-io.bin", "build/test/hmm-io.txt"};
  for (int bin = 1; bin >= 0; --bin) {
    gh_hmm_set_write(tmp[!bin], bin, &set);
    gh_hmm_set_read(tmp[!bin], &back);
    int same = back.num_hmms == set.num_hmms;
    for (int32_t i = 0; same && i < set.num_hmms; ++i) {
      const gh_hmm *a = &set.hmms[i], *b = &back.hmms[i];
      same &= !strcmp(a->name, b->name) && a->num_states == b->num_states && a->num_arcs == b->num_arcs;
      same &= !memcmp(a->pdf, b->pdf, a->num_states * 4) && !memcmp(a->init, b->init, a->num_states * 4) &&
              !memcmp(a->final, b->final, a->num_states * 4) && !memcmp(a->arcs, b->arcs, a->num_arcs * sizeof(gh_hmm_arc));
      same &= !a->word == !b->word;
      for (int32_t j = 0; same && a->word && j < a->num_states; ++j)
        same &= (!a->word[j] && !b->word[j]) || (a->word[j] && b->word[j] && !strcmp(a->word[j], b->word[j]));
    }
    GH_TEST_OK(same, "HMM set %s round trip is exact (incl. word labels)", bin ? "binary" : "text");
    gh_hmm_set_free(&back);
  }
  /* a state that cannot reach the end */
  gh_hmm *y = &set.hmms[1];
  float keep = y->arcs[1].logp;  /* 0 -> 1 */
  y->arcs[1].logp = -INFINITY;
  GH_TEST_OK(gh_hmm_check(y) != 0 && strstr(gh_last_error(), "state 0 cannot reach the end"), "dead-end state rejected: %s", gh_last_error());
  y->arcs[1].logp = keep;
  /* update: counts 3:1 on y's state 0 (self, next) -> 0.75/0.25, no floor */
  gh_hmm_accs a, a2;
  gh_hmm_accs_init(&a, &set);
  double *cy = a.counts + a.off[1];
  cy[2 + 0] = 30; cy[2 + 1] = 10; cy[2 + 2] = 6; cy[2 + 3 + 1] = 2;  /* arcs 0->0, 0->1, 1->1; exit of 1 */
  a.total_frames = 10;
  gh_hmm_accs_write("build/test/hmm-io.acc", 0, &a);
  gh_hmm_accs_read("build/test/hmm-io.acc", &a2);
  GH_TEST_OK(a2.off[a2.num_hmms] == a.off[a.num_hmms] && !memcmp(a2.counts, a.counts, a.off[a.num_hmms] * 8) &&
             a2.total_frames == 10, "accumulators text round trip is exact");
  gh_hmm_update_opts o = {0.0, 0.0, 1};
  gh_hmm_update(&set, &a2, &o, NULL);
  GH_TEST_NEAR(exp(y->arcs[0].logp), 0.75, 1e-6, "re-estimated self-loop = 30 / 40");
  GH_TEST_NEAR(exp(y->final[1]), 0.25, 1e-6, "re-estimated exit (competing with the self-loop) = 2 / 8");
  gh_hmm_update_opts o2 = {100.0, 0.0, 1};
  float before = set.hmms[0].arcs[0].logp;
  gh_hmm_update(&set, &a2, &o2, NULL);
  GH_TEST_OK(set.hmms[0].arcs[0].logp == before, "states below --transition-min-count keep their probabilities");
  gh_hmm_accs_free(&a); gh_hmm_accs_free(&a2);
  gh_hmm_set_free(&set);
}

int main(void) {
  gh_backend *be = gh_backend_cpu_new();
  test_brute(be, 1);
  test_brute(be, 0);
  test_long(be);
  test_dense(be);
  test_compile(be);
  test_io_update();
  gh_backend_free(be);
  return gh_test_done();
}
