/* test_align.c -- the batched exact aligner (backend.h align_batch): on
 * random graphs with and without epsilon arcs (some with no final state
 * reachable), every backend built here (cpu-ref, cpu, OpenCL when a device
 * exists, CUDA when a GPU does) against
 *   - a float64 Viterbi written independently (Bellman-Ford epsilon
 *     closure per frame, acoustic costs in double): the same reachability,
 *     costs within 1e-9 relative, and the returned path's own float64 cost
 *     equal to the best one;
 *   - lib/decoder's one-utterance decoder with an infinite beam: the same
 *     transition-id sequence and the same float graph and acoustic costs;
 *   - the CPU reference: the same cost bits and the same arcs;
 * and checkpointed back-pointers (every 1, 7, 64 frames and by a small
 * memory budget) against whole back-pointers bit for bit on long
 * utterances of 40,000 frames.  Without a GPU the CUDA
 * checks print "ok N - # SKIP no GPU". */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gh-test.h"
#include "align-plan.h"
#include "align/align-batch.h"
#include "backend.h"
#include "base/gh-base.h"
#include "decoder/faster-decoder.h"
#include "registry/registry.h"

#define NL 12 /* labels (transition-ids) */
#define LD 7  /* loglike columns */

static uint64_t rng = 88172645463325252ull;
static double urand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}
static int irand(int n) { return (int)(urand() * n); }

static int32_t col[NL + 1];

/* A random graph of S states: 1..4 arcs per state, mostly forward; epsilon
 * arcs with probability peps; final states with probability 0.3 (state
 * S-1 always, unless nofinal); one arc in five repeats the one before it
 * (an exact tie, which the smallest arc index must win on every backend). */
static void random_graph(gh_dec_graph *g, int32_t S, double peps, int nofinal) {
  memset(g, 0, sizeof *g);
  g->num_states = S;
  g->start = 0;
  g->arc_start = gh_malloc(((size_t)S + 1) * sizeof(int64_t));
  g->arcs = gh_malloc((size_t)S * 5 * sizeof(gh_dec_arc));
  g->final = gh_malloc((size_t)S * sizeof(float));
  int64_t k = 0;
  for (int32_t s = 0; s < S; ++s) {
    g->arc_start[s] = k;
    const int n = 1 + irand(4);
    for (int i = 0; i < n; ++i) {
      int32_t d = urand() < 0.7 ? s + irand(3) : irand(S);
      if (d >= S) d = S - 1;
      const int32_t il = urand() < peps ? 0 : 1 + irand(NL);
      if (i > 0 && urand() < 0.2) { /* a duplicate of the previous arc: an exact tie */
        g->arcs[k] = g->arcs[k - 1];
        ++k;
        continue;
      }
      g->arcs[k++] = (gh_dec_arc){il, urand() < 0.2 ? 1 + irand(5) : 0, (float)(3.0 * urand()), d};
    }
    g->final[s] = !nofinal && (s == S - 1 || urand() < 0.3) ? (float)(2.0 * urand()) : INFINITY;
  }
  g->arc_start[S] = k;
  g->num_arcs = k;
}

static float *random_ll(int32_t T) {
  float *ll = gh_malloc(((size_t)T * LD + 1) * sizeof(float));
  for (int64_t i = 0; i < (int64_t)T * LD; ++i) ll[i] = (float)(-10.0 * urand() - 1.0);
  return ll;
}

/* float64 reference: the best cost (INFINITY if no final state is reachable) */
static double ref_cost(const gh_dec_graph *g, const float *ll, int32_t T, float as) {
  const int32_t S = g->num_states;
  double *c = malloc(sizeof(double) * S), *n = malloc(sizeof(double) * S);
  for (int32_t s = 0; s < S; ++s) c[s] = INFINITY;
  c[g->start] = 0;
  for (int32_t t = 0; t <= T; ++t) {
    if (t > 0) {
      for (int32_t s = 0; s < S; ++s) n[s] = INFINITY;
      for (int32_t s = 0; s < S; ++s)
        for (int64_t a = g->arc_start[s]; a < g->arc_start[s + 1]; ++a) {
          const gh_dec_arc *e = &g->arcs[a];
          if (e->ilabel == 0) continue;
          const double v = c[s] + e->weight - (double)as * ll[(size_t)(t - 1) * LD + col[e->ilabel]];
          if (v < n[e->next]) n[e->next] = v;
        }
      memcpy(c, n, sizeof(double) * S);
    }
    for (int changed = 1; changed;) { /* Bellman-Ford over the epsilon arcs */
      changed = 0;
      for (int32_t s = 0; s < S; ++s)
        for (int64_t a = g->arc_start[s]; a < g->arc_start[s + 1]; ++a) {
          const gh_dec_arc *e = &g->arcs[a];
          if (e->ilabel != 0) continue;
          if (c[s] + e->weight < c[e->next]) c[e->next] = c[s] + e->weight, changed = 1;
        }
    }
  }
  double best = INFINITY;
  for (int32_t s = 0; s < S; ++s)
    if (c[s] + g->final[s] < best) best = c[s] + g->final[s];
  free(c);
  free(n);
  return best;
}

/* The float64 cost of a path of arcs (from the start, T emitting arcs, final cost included); NAN if invalid. */
static double path_cost(const gh_dec_graph *g, const int32_t *arcs, int32_t n, const float *ll, int32_t T, float as) {
  double c = 0;
  int32_t s = g->start, t = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (arcs[i] < g->arc_start[s] || arcs[i] >= g->arc_start[s + 1]) return NAN;
    const gh_dec_arc *e = &g->arcs[arcs[i]];
    c += e->weight;
    if (e->ilabel) {
      if (t >= T) return NAN;
      c -= (double)as * ll[(size_t)t++ * LD + col[e->ilabel]];
    }
    s = e->next;
  }
  return t == T && g->final[s] != INFINITY ? c + g->final[s] : NAN;
}

static gh_align_graph view(const gh_dec_graph *g) {
  return (gh_align_graph){g->num_states, g->start, g->num_arcs, g->arc_start, (const gh_align_arc *)g->arcs, g->final};
}

static void run(gh_backend *b, const gh_align_graph *gs, const float **ll, const int32_t *T, int32_t B, int32_t K,
                int64_t budget, gh_align_out *out) {
  const gh_align_batch batch = {B, gs, ll, T, LD, NL, col, 0.5f, K, budget};
  gh_backend_align_batch(b, &batch, out);
}

static int same_out(const gh_align_out *a, const gh_align_out *b, int32_t B) {
  for (int32_t u = 0; u < B; ++u) {
    if (a[u].reached != b[u].reached || memcmp(&a[u].cost, &b[u].cost, sizeof(double)) ||
        a[u].num_arcs != b[u].num_arcs)
      return 0;
    if (a[u].num_arcs && memcmp(a[u].arcs, b[u].arcs, sizeof(int32_t) * a[u].num_arcs)) return 0;
  }
  return 1;
}

static void free_out(gh_align_out *o, int32_t B) {
  for (int32_t u = 0; u < B; ++u) free(o[u].arcs);
  free(o);
}

/* Random batches on b: the float64 reference, the one-utterance decoder,
 * and (b != NULL) the CPU reference's bits. */
static void check_random(gh_backend *b, const char *label) {
  enum { B = 60 };
  gh_dec_graph g[B];
  gh_align_graph gs[B];
  float *ll[B];
  int32_t T[B];
  for (int u = 0; u < B; ++u) {
    const int32_t S = 1 + irand(40);
    random_graph(&g[u], S, u % 3 == 0 ? 0.0 : 0.25, u % 17 == 5);
    T[u] = u % 10 == 0 ? irand(3) : irand(80);
    ll[u] = random_ll(T[u]);
    gs[u] = view(&g[u]);
  }
  gh_align_out *o = gh_calloc(B, sizeof *o), *r = gh_calloc(B, sizeof *r);
  run(b, gs, (const float **)ll, T, B, 0, 0, o);
  run(NULL, gs, (const float **)ll, T, B, 0, 0, r);
  int reach_ok = 1, cost_ok = 1, path_ok = 1, dec_ok = 1, nreached = 0;
  gh_decoder *d = gh_decoder_new();
  gh_dec_opts opts;
  gh_dec_opts_default(&opts);
  opts.beam = GH_DEC_EXACT;
  for (int u = 0; u < B; ++u) {
    const double rc = ref_cost(&g[u], ll[u], T[u], 0.5f);
    if ((rc != INFINITY) != (o[u].reached != 0)) {
      reach_ok = 0;
      printf("#   %s: utterance %d reached %d, reference cost %g\n", label, u, o[u].reached, rc);
      continue;
    }
    if (!o[u].reached) continue;
    ++nreached;
    if (!(fabs(o[u].cost - rc) <= 1e-9 * fabs(rc) + 1e-9)) {
      cost_ok = 0;
      printf("#   %s: utterance %d cost %.17g, reference %.17g\n", label, u, o[u].cost, rc);
    }
    const double pc = path_cost(&g[u], o[u].arcs, o[u].num_arcs, ll[u], T[u], 0.5f);
    if (!(fabs(pc - rc) <= 1e-9 * fabs(rc) + 1e-9)) path_ok = 0;
    gh_decoder_reset(d);
    const int ok = gh_decoder_decode(d, &g[u], &opts, ll[u], T[u], LD, col, NL, 0.5f, "test");
    gh_dec_path p, q;
    if (!ok || !gh_decoder_best_path(d, &p)) {
      dec_ok = 0;
      continue;
    }
    gh_dec_path_from_arcs(&g[u], o[u].arcs, o[u].num_arcs, ll[u], T[u], LD, col, 0.5f, &q);
    if (p.num_ilabels != q.num_ilabels || memcmp(p.ilabels, q.ilabels, sizeof(int32_t) * p.num_ilabels) ||
        p.graph_cost != q.graph_cost || p.ac_cost != q.ac_cost || p.num_words != q.num_words) {
      dec_ok = 0;
      printf("#   %s: utterance %d differs from the one-utterance decoder\n", label, u);
    }
    gh_dec_path_free(&p);
    gh_dec_path_free(&q);
  }
  gh_decoder_free(d);
  GH_TEST_OK(reach_ok, "%s: a final state reached exactly where the float64 reference reaches one (%d of %d)", label,
             nreached, B);
  GH_TEST_OK(cost_ok, "%s: best costs = the float64 reference's within 1e-9 relative", label);
  GH_TEST_OK(path_ok, "%s: each path's own float64 cost is the best cost", label);
  GH_TEST_OK(dec_ok, "%s: transition-ids and float costs = lib/decoder's exact decoder's", label);
  GH_TEST_OK(same_out(o, r, B), "%s: costs and arcs = the CPU reference's, bit for bit", label);
  free_out(o, B);
  free_out(r, B);
  for (int u = 0; u < B; ++u) free(ll[u]), gh_dec_graph_free(&g[u]);
}

/* Long utterances: checkpoints every K frames (and by budget) = whole back-pointers. */
static void check_long(gh_backend *b, const char *label, int32_t Tlong) {
  enum { B = 3 };
  gh_dec_graph g[B];
  gh_align_graph gs[B];
  float *ll[B];
  int32_t T[B];
  for (int u = 0; u < B; ++u) {
    /* a left-to-right chain with self-loops (a long transcript), epsilon skips on u = 1 */
    const int32_t S = 30 + 10 * u;
    random_graph(&g[u], S, 0, 0);
    for (int32_t s = 0; s < S; ++s)
      for (int64_t a = g[u].arc_start[s]; a < g[u].arc_start[s + 1]; ++a) {
        gh_dec_arc *e = &g[u].arcs[a];
        const int64_t i = a - g[u].arc_start[s], n = g[u].arc_start[s + 1] - g[u].arc_start[s];
        e->next = (i == 0 && n > 1) || s == S - 1 ? s : s + 1;
        if (e->ilabel == 0 && !(u == 1 && i == 2)) e->ilabel = 1 + irand(NL);
        if (u == 1 && i == 2) e->ilabel = 0;
      }
    T[u] = Tlong - 7 * u;
    ll[u] = random_ll(T[u]);
    gs[u] = view(&g[u]);
  }
  gh_align_out *whole = gh_calloc(B, sizeof *whole);
  run(b, gs, (const float **)ll, T, B, 0, 0, whole);
  int reached = 1;
  for (int u = 0; u < B; ++u) reached &= whole[u].reached;
  GH_TEST_OK(reached, "%s: %d-frame utterances reach a final state", label, Tlong);
  const int32_t Ks[] = {1, 7, 64, 0};
  for (int i = 0; i < 4; ++i) {
    gh_align_out *o = gh_calloc(B, sizeof *o);
    run(b, gs, (const float **)ll, T, B, Ks[i], Ks[i] ? 0 : 4096, o);
    if (Ks[i])
      GH_TEST_OK(same_out(o, whole, B), "%s: checkpoints every %d frames: the same path and cost bits", label, Ks[i]);
    else
      GH_TEST_OK(same_out(o, whole, B), "%s: a 4 KB back-pointer budget (checkpoints every %d frames): the same bits",
                 label, gh_align_ckpt_interval(T[0], 30, 0, 4096));
    free_out(o, B);
  }
  if (b) {
    gh_align_out *r = gh_calloc(B, sizeof *r);
    run(NULL, gs, (const float **)ll, T, B, 64, 0, r);
    GH_TEST_OK(same_out(r, whole, B), "%s: = the CPU reference's bits on %d frames", label, Tlong);
    free_out(r, B);
  }
  free_out(whole, B);
  for (int u = 0; u < B; ++u) free(ll[u]), gh_dec_graph_free(&g[u]);
}

int main(void) {
  for (int i = 1; i <= NL; ++i) col[i] = (i * 5) % LD;
  GH_TEST_OK(gh_align_ckpt_interval(99, 10, 0, 0) == 100 && gh_align_ckpt_interval(99, 10, 0, 4000) == 100 &&
                 gh_align_ckpt_interval(99, 10, 0, 3999) == 18 && gh_align_ckpt_interval(99, 10, 5, 0) == 5 &&
                 gh_align_ckpt_interval(3, 10, 50, 0) == 4,
             "checkpoint interval: whole when it fits, ceil(sqrt(3 (T + 1))) when not, K as given up to T + 1");
  check_random(NULL, "cpu reference");
  check_long(NULL, "cpu reference", 40000);
  gh_backend *b = gh_backend_blas_new();
  check_random(b, "cpu");
  gh_backend_free(b);
  b = gh_backend_opencl_new(NULL, 0);
  if (b && gh_backend_supports(b, GH_CAP_ALIGN)) {
    check_random(b, "opencl");
    check_long(b, "opencl", 40000);
  } else {
    printf("ok %d - # SKIP no OpenCL device with fp64\n", ++gh_t_n);
  }
  gh_backend_free(b);
  if (gh_cuda_device_count() > 0) {
    b = gh_backend_create("cuda");
    check_random(b, "cuda");
    check_long(b, "cuda", 40000);
    gh_backend_free(b);
  } else {
    for (int k = 0; k < 12; ++k) printf("ok %d - # SKIP no GPU\n", ++gh_t_n);
  }
  return gh_test_done();
}
