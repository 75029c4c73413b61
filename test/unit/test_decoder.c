/* test_decoder.c -- lib/decoder/faster-decoder: on small hand-made and random graphs
 * (epsilon arcs included), the exact mode against a brute-force float64 search that
 * enumerates every path of T emitting arcs: the same best cost and transition-id
 * sequence; the beam mode equals the exact mode when the beam is wide and is never
 * better than it when narrow; --careful's graph as Kaldi's ModifyGraphForCarefulAlignment. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"
#include "decoder/faster-decoder.h"
#include "fst/fst.h"
#include "gh-test.h"

enum { MAXT = 8 };

typedef struct {
  const gh_fst *f;
  const float *ll;
  int32_t ld, T;
  const int32_t *col;
  float scale;
  double best;
  int32_t path[MAXT], best_path[MAXT], nbest;
  int64_t npaths;
} brute;

static void dfs(brute *b, int32_t s, int32_t t, double cost) {
  const gh_fst_state *st = &b->f->states[s];
  if (t == b->T && st->final != GH_FST_ZERO) {
    b->npaths++;
    const double c = cost + st->final;
    if (c < b->best) {
      b->best = c;
      memcpy(b->best_path, b->path, sizeof b->path);
    }
  }
  for (int32_t a = 0; a < st->narcs; ++a) {
    const gh_fst_arc *arc = &st->arcs[a];
    if (arc->ilabel == 0) {
      dfs(b, arc->nextstate, t, cost + arc->weight);
    } else if (t < b->T) {
      const double ac = -((double)b->scale * b->ll[(size_t)t * b->ld + b->col[arc->ilabel]]);
      b->path[t] = arc->ilabel;
      dfs(b, arc->nextstate, t + 1, cost + arc->weight + ac);
    }
  }
}

static uint64_t rng = 88172645463325252ULL;
static double urand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}

/* A random graph: n states, ilabels 1..L or epsilon (epsilon arcs only to higher
 * states, so no epsilon cycle), costs in [0, 3), 1 or 2 final states. */
static void random_graph(gh_fst *f, int32_t n, int32_t L) {
  gh_fst_init(f);
  for (int32_t s = 0; s < n; ++s) gh_fst_add_state(f);
  gh_fst_set_start(f, 0);
  for (int32_t s = 0; s < n; ++s) {
    const int32_t na = 1 + (int32_t)(urand() * 3);
    for (int32_t a = 0; a < na; ++a) {
      const int32_t d = (int32_t)(urand() * n);
      int32_t il = 1 + (int32_t)(urand() * L);
      if (d > s && urand() < 0.25) il = 0;
      gh_fst_add_arc(f, s, il, urand() < 0.3 ? 1 + (int32_t)(urand() * 4) : 0, (float)(urand() * 3), d);
    }
  }
  gh_fst_set_final(f, n - 1, (float)(urand() * 2));
  if (urand() < 0.5) gh_fst_set_final(f, (int32_t)(urand() * n), 0.5f);
}

int main(void) {
  gh_set_deferred_commit(0);
  /* Hand-made: two paths of 2 frames, a -> b (labels 1 2) or c (labels 3 3), the
   * second cheaper in graph cost but worse acoustically. */
  {
    gh_fst f;
    gh_fst_init(&f);
    for (int i = 0; i < 4; ++i) gh_fst_add_state(&f);
    gh_fst_set_start(&f, 0);
    gh_fst_add_arc(&f, 0, 1, 7, 1.0f, 1);
    gh_fst_add_arc(&f, 1, 2, 0, 1.0f, 3);
    gh_fst_add_arc(&f, 0, 3, 8, 0.0f, 2);
    gh_fst_add_arc(&f, 2, 3, 0, 0.0f, 3);
    gh_fst_set_final(&f, 3, 0.25f);
    /* columns = labels; frame 0: ll(1) = -1, ll(3) = -4; frame 1: ll(2) = -1, ll(3) = -2 */
    const float ll[2 * 4] = {0, -1, -9, -4, 0, -9, -1, -2};
    const int32_t col[4] = {0, 1, 2, 3};
    gh_dec_graph g;
    gh_dec_graph_from_fst(&g, &f, 0);
    GH_TEST_OK(g.num_states == 4 && g.num_arcs == 4 && g.arc_start[4] == 4 && g.final[3] == 0.25f,
               "CSR copy: 4 states, 4 arcs, final cost kept");
    gh_decoder *d = gh_decoder_new();
    gh_dec_opts o;
    gh_dec_opts_default(&o);
    o.beam = GH_DEC_EXACT;
    const int ok = gh_decoder_decode(d, &g, &o, ll, 2, 4, col, 3, 1.0f, "hand");
    gh_dec_path p;
    gh_decoder_best_path(d, &p);
    /* path 1 2: graph 2 + 0.25, acoustic 2 = 4.25; path 3 3: graph 0.25, acoustic 6 */
    GH_TEST_OK(ok && p.num_ilabels == 2 && p.ilabels[0] == 1 && p.ilabels[1] == 2 && p.num_words == 1 &&
                   p.words[0] == 7,
               "hand-made graph: best path 1 2 with word 7");
    GH_TEST_NEAR(p.graph_cost, 2.25, 1e-6, "graph cost includes the final cost");
    GH_TEST_NEAR(p.ac_cost, 2.0, 1e-6, "acoustic cost");
    GH_TEST_OK(p.num_frame_ac == 2 && p.frame_ac[0] == 1.0f && p.frame_ac[1] == 1.0f, "per-frame acoustic costs");
    gh_dec_path_free(&p);
    /* acoustic scale 0.1: acoustics 0.2 vs 0.6, graph 2.25 vs 0.25: the other path */
    gh_decoder_decode(d, &g, &o, ll, 2, 4, col, 3, 0.1f, "hand");
    gh_decoder_best_path(d, &p);
    GH_TEST_OK(p.num_ilabels == 2 && p.ilabels[0] == 3 && p.ilabels[1] == 3, "acoustic scale 0.1: path 3 3");
    gh_dec_path_free(&p);
    /* 3 frames: no path of that length */
    const float ll3[3 * 4] = {0};
    GH_TEST_OK(!gh_decoder_decode(d, &g, &o, ll3, 3, 4, col, 3, 1.0f, "hand"),
               "no path of 3 frames: no final state reached");
    gh_dec_graph_free(&g);
    /* careful: 2 n + 1 states, the final weight on an epsilon arc to pre-initial */
    gh_dec_graph_from_fst(&g, &f, 1);
    GH_TEST_OK(g.num_states == 9 && g.final[8] == 0.0f && g.final[3] == INFINITY &&
                   g.arcs[g.arc_start[3]].ilabel == 0 && g.arcs[g.arc_start[3]].weight == 0.25f &&
                   g.arcs[g.arc_start[3]].next == 8 && g.arcs[g.arc_start[8]].next == 4 && g.final[7] == INFINITY,
               "careful graph: copy, epsilon arc with the final cost, pre-initial final");
    gh_decoder_decode(d, &g, &o, ll, 2, 4, col, 3, 1.0f, "hand");
    gh_decoder_best_path(d, &p);
    GH_TEST_OK(p.num_ilabels == 2 && p.ilabels[0] == 1 && p.ilabels[1] == 2, "careful graph: same best path");
    GH_TEST_NEAR(p.graph_cost + p.ac_cost, 4.25, 1e-6, "careful graph: same cost");
    gh_dec_path_free(&p);
    gh_dec_graph_free(&g);
    gh_decoder_free(d);
    gh_fst_free(&f);
  }

  /* Ties go to the token visited first, in Kaldi's HashList order: states 1, 2,
   * 1001 entered in that order, 1 and 1001 share bucket 1 (hash size 1000), so the
   * list is 1, 1001, 2 and 1001's token reaches state 3 first (insertion order
   * would give 2's). */
  {
    gh_fst f;
    gh_fst_init(&f);
    for (int i = 0; i < 1002; ++i) gh_fst_add_state(&f);
    gh_fst_set_start(&f, 0);
    gh_fst_add_arc(&f, 0, 1, 0, 0.0f, 1);
    gh_fst_add_arc(&f, 0, 1, 0, 0.0f, 2);
    gh_fst_add_arc(&f, 0, 1, 0, 0.0f, 1001);
    gh_fst_add_arc(&f, 2, 2, 0, 0.0f, 3);
    gh_fst_add_arc(&f, 1001, 3, 0, 0.0f, 3);
    gh_fst_set_final(&f, 3, 0.0f);
    const float ll[2] = {-1.0f, -1.0f};
    const int32_t col[4] = {0, 0, 0, 0};
    gh_dec_graph g;
    gh_dec_graph_from_fst(&g, &f, 0);
    gh_decoder *d = gh_decoder_new();
    gh_dec_opts o;
    gh_dec_opts_default(&o);
    o.beam = 10.0f;
    gh_decoder_decode(d, &g, &o, ll, 2, 1, col, 3, 1.0f, "tie");
    gh_dec_path p;
    gh_decoder_best_path(d, &p);
    GH_TEST_OK(p.num_ilabels == 2 && p.ilabels[1] == 3, "tie: Kaldi's hash-list order decides (label %d)",
               p.num_ilabels == 2 ? p.ilabels[1] : -1);
    gh_dec_path_free(&p);
    gh_decoder_free(d);
    gh_dec_graph_free(&g);
    gh_fst_free(&f);
  }

  /* Random graphs against brute force. */
  int exact_ok = 0, exact_cost_ok = 0, wide_ok = 0, narrow_ok = 0, nfound = 0, nnone_ok = 0, ntrials = 300;
  gh_decoder *d = gh_decoder_new();
  for (int trial = 0; trial < ntrials; ++trial) {
    const int32_t n = 2 + (int32_t)(urand() * 5), L = 1 + (int32_t)(urand() * 4);
    const int32_t T = 1 + (int32_t)(urand() * 5), P = 3;
    gh_fst f;
    random_graph(&f, n, L);
    float ll[MAXT * 3];
    for (int32_t i = 0; i < T * P; ++i) ll[i] = (float)(-urand() * 10);
    int32_t col[8];
    for (int32_t i = 0; i <= L; ++i) col[i] = i % P;
    const float scale = trial % 2 ? 1.0f : 0.1f;
    brute b = {.f = &f, .ll = ll, .ld = P, .T = T, .col = col, .scale = scale, .best = INFINITY};
    dfs(&b, 0, 0, 0.0);
    gh_dec_graph g;
    gh_dec_graph_from_fst(&g, &f, 0);
    gh_dec_opts o;
    gh_dec_opts_default(&o);
    o.beam = GH_DEC_EXACT;
    int ok = gh_decoder_decode(d, &g, &o, ll, T, P, col, L, scale, "random");
    if (b.best == INFINITY) {
      nnone_ok += !ok;
    } else {
      nfound++;
      gh_dec_path p;
      gh_decoder_best_path(d, &p);
      const double cost = (double)p.graph_cost + p.ac_cost;
      exact_cost_ok += ok && fabs(cost - b.best) <= 1e-4 * (1 + fabs(b.best));
      exact_ok += ok && p.num_ilabels == T && !memcmp(p.ilabels, b.best_path, (size_t)T * sizeof(int32_t));
      /* a wide beam (min-active 20 on as in Kaldi) equals exact */
      gh_dec_opts w = o;
      w.beam = 1000.0f;
      gh_decoder_reset(d);
      int okw = gh_decoder_decode(d, &g, &w, ll, T, P, col, L, scale, "random");
      gh_dec_path q;
      gh_decoder_best_path(d, &q);
      wide_ok += okw && q.num_ilabels == p.num_ilabels &&
                 !memcmp(q.ilabels, p.ilabels, (size_t)q.num_ilabels * sizeof(int32_t)) &&
                 q.graph_cost + q.ac_cost == p.graph_cost + p.ac_cost;
      gh_dec_path_free(&q);
      /* a narrow beam with no min-active: never better than exact */
      gh_dec_opts nn = o;
      nn.beam = 0.5f;
      nn.min_active = 0;
      int okn = gh_decoder_decode(d, &g, &nn, ll, T, P, col, L, scale, "random");
      if (okn) {
        gh_decoder_best_path(d, &q);
        narrow_ok += (double)q.graph_cost + q.ac_cost >= cost - 1e-4;
        gh_dec_path_free(&q);
      } else {
        narrow_ok++;
      }
      gh_dec_path_free(&p);
    }
    gh_dec_graph_free(&g);
    gh_fst_free(&f);
  }
  gh_decoder_free(d);
  printf("# %d random graphs, %d with a path of T frames\n", ntrials, nfound);
  GH_TEST_OK(nfound > 100, "enough random graphs with a path (%d)", nfound);
  GH_TEST_OK(exact_cost_ok == nfound, "exact mode: best cost = brute force's (%d of %d)", exact_cost_ok, nfound);
  GH_TEST_OK(exact_ok == nfound, "exact mode: best path = brute force's (%d of %d)", exact_ok, nfound);
  GH_TEST_OK(nnone_ok == ntrials - nfound, "exact mode: no final state when no path exists (%d of %d)", nnone_ok,
             ntrials - nfound);
  GH_TEST_OK(wide_ok == nfound, "beam 1000: the exact path and cost (%d of %d)", wide_ok, nfound);
  GH_TEST_OK(narrow_ok == nfound, "beam 0.5: never better than exact (%d of %d)", narrow_ok, nfound);
  return gh_test_done();
}
