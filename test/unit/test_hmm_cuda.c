/* test_hmm_cuda.c -- the CUDA HMM kernels (kernels/cuda/cuda-hmm.cu) against the
 * CPU reference (kernels/cpu/cpu-hmm.c) on random graphs -- left-to-right with
 * skips, ergodic, word-loop-like (a hub state with in-degree W), one-state
 * graphs with and without a self-loop, and a 2,500-state word loop (rows
 * and xi accumulators in global memory) -- and batches of utterances of
 * lengths 0, 1, short, 300 and 12,000 frames with random loglikes (a few
 * -inf).  Checks: forward log P (rel 1e-5) and alpha where finite (rel 1e-5
 * + 1e-4 abs; the -inf pattern must match), scaled forward, Viterbi score
 * (rel 1e-4) and path (re-scored with the CPU formula: rel 1e-4; ties may
 * pick other states), forward-backward log P, gamma (abs 1e-4) and stats
 * (rel 1e-4 + 1e-5 abs, ADDED to the caller's values).  Dense graphs of
 * 64-1024 states through the dense batched path (test_dense: tolerances
 * there).  Long utterances on graphs of <= 64 states through the
 * time-parallel forward (test_timepar: log P rel 1e-9; the log-domain
 * forward must take it), with its speed against the sequential kernels.  Graphs of <= 16
 * states through the packed kernels (test_packed: groups of 4, 8 and 16 lanes; the CPU
 * reference's tolerances, and bit for bit = GH_CUDA_HMM_PACK=0).  Then times CUDA vs
 * CPU on 1,000 utterances x ~300 frames (30-150 states) and on one
 * 10,000-frame utterance; prints frames/s as "# " lines.
 * Without a GPU every check prints "ok N - # SKIP no GPU". */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry/registry.h"
#include "base/gh-base.h"
#include "gh-test.h"

#ifdef GH_HAVE_CUDA
double gh_cuda_hmm_kernel_seconds(void); /* kernels/cuda/cuda-hmm.cu */
long long gh_cuda_hmm_timepar_utts(void);
#else
static double gh_cuda_hmm_kernel_seconds(void) { return 0.0; }
static long long gh_cuda_hmm_timepar_utts(void) { return 0; }
#endif

static unsigned rng = 12345u;
static double urand(void) { rng = rng * 1103515245u + 12345u; return ((rng >> 8) & 0xffffff) / 16777216.0; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }

#include "hmm-graphs.h"

/* Compare all four operations on one batch (cu vs the CPU reference). */
static void compare_batch(gh_backend *cu, const char *name, const gh_hmm_graph *const *graphs, int32_t ng,
                          const gh_hmm_batch *bt) {
  const gh_ops_hmm *co = gh_backend_hmm_ops(cu), *ro = &gh_cpu_ref_hmm;
  int32_t B = bt->num_utts, P = bt->num_pdfs;
  int64_t F = bt->frame_off[B];
  int64_t *soff = malloc((B + 1) * sizeof(int64_t));
  gh_hmm_batch_state_off(bt, graphs, soff);
  int64_t N = soff[B], NS = gh_hmm_stats_offset(graphs, ng);
  gh_dev_hmm *dc = co->hmm_upload(cu, graphs, ng), *dr = ro->hmm_upload(NULL, graphs, ng);
  double *Lc = malloc(B * sizeof(double)), *Lr = malloc(B * sizeof(double));
  float *ac = malloc((N + 1) * sizeof(float)), *ar = malloc((N + 1) * sizeof(float));
  int ninf = 0;
  /* forward, log domain and scaled */
  for (int scaled = 0; scaled < 2; ++scaled) {
    int fl = scaled ? GH_HMM_SCALED : 0;
    co->hmm_forward(cu, dc, bt, fl, Lc, ac);
    ro->hmm_forward(NULL, dr, bt, fl, Lr, ar);
    double wl = 0, wa = 0;
    int64_t pat = 0;
    for (int32_t u = 0; u < B; ++u) { double e = relerr(Lc[u], Lr[u]); if (e > wl) wl = e; if (Lr[u] == -INFINITY) ++ninf; }
    for (int64_t i = 0; i < N; ++i) {
      if (isinf(ar[i]) || isinf(ac[i])) { if (ar[i] != ac[i]) ++pat; continue; }
      double e = fabs((double)ac[i] - ar[i]) / (1e-5 * fabs(ar[i]) + 1e-4);
      if (!(e <= wa)) wa = e;
    }
    GH_TEST_OK(wl <= 1e-5, "%s: %s forward log P, %d utts (max rel err %.3g)", name, scaled ? "scaled" : "log", B, wl);
    GH_TEST_OK(wa <= 1 && pat == 0, "%s: %s forward alpha, %lld values (max err/tol %.3g, -inf mismatches %lld)", name,
               scaled ? "scaled" : "log", (long long)N, wa, (long long)pat);
  }
  /* Viterbi */
  int32_t *pc = malloc((F + 1) * sizeof(int32_t)), *pr = malloc((F + 1) * sizeof(int32_t));
  co->hmm_viterbi(cu, dc, bt, pc, Lc);
  ro->hmm_viterbi(NULL, dr, bt, pr, Lr);
  double ws = 0, wp = 0;
  int64_t same = 0, bad = 0;
  for (int32_t u = 0; u < B; ++u) {
    const gh_hmm_graph *g = graphs[bt->graph ? bt->graph[u] : 0];
    int64_t f0 = bt->frame_off[u], T = bt->frame_off[u + 1] - f0;
    double e = relerr(Lc[u], Lr[u]);
    if (e > ws) ws = e;
    for (int64_t t = 0; t < T; ++t) same += pc[f0 + t] == pr[f0 + t];
    if (Lr[u] == -INFINITY) {
      for (int64_t t = 0; t < T; ++t) bad += pc[f0 + t] != -1;
    } else {
      e = relerr(path_score(g, bt->loglikes + f0 * P, P, T, pc + f0), Lr[u]);
      if (e > wp) wp = e;
    }
  }
  GH_TEST_OK(ws <= 1e-4, "%s: viterbi score (max rel err %.3g)", name, ws);
  GH_TEST_OK(wp <= 1e-4 && bad == 0, "%s: viterbi path re-scored (max rel err %.3g; %lld of %lld states equal; %lld bad -1 paths)",
             name, wp, (long long)same, (long long)F, (long long)bad);
  /* forward-backward, stats added to 1.0 */
  double *sc = malloc((NS + 1) * sizeof(double)), *sr = malloc((NS + 1) * sizeof(double));
  for (int64_t k = 0; k < NS; ++k) sc[k] = sr[k] = 1.0;
  co->hmm_fb(cu, dc, bt, Lc, ac, sc);
  ro->hmm_fb(NULL, dr, bt, Lr, ar, sr);
  double wl = 0, wg = 0, wst = 0;
  for (int32_t u = 0; u < B; ++u) { double e = relerr(Lc[u], Lr[u]); if (e > wl) wl = e; }
  for (int64_t i = 0; i < N; ++i) { double e = fabs((double)ac[i] - ar[i]); if (!(e <= wg)) wg = e; }
  for (int64_t k = 0; k < NS; ++k) { double e = fabs(sc[k] - sr[k]) / (1e-4 * fabs(sr[k]) + 1e-5); if (!(e <= wst)) wst = e; }
  GH_TEST_OK(wl <= 1e-5, "%s: fb log P (max rel err %.3g; %d utts without a path)", name, wl, ninf / 2);
  GH_TEST_OK(wg <= 1e-4, "%s: fb gamma, %lld values (max abs err %.3g)", name, (long long)N, wg);
  GH_TEST_OK(wst <= 1, "%s: fb stats, %lld values added to 1.0 (max err/tol %.3g)", name, (long long)NS, wst);
  /* fb without gamma: same stats */
  for (int64_t k = 0; k < NS; ++k) sc[k] = 0;
  co->hmm_fb(cu, dc, bt, Lc, NULL, sc);
  wst = 0;
  for (int64_t k = 0; k < NS; ++k) { double e = fabs(sc[k] + 1.0 - sr[k]) / (1e-4 * fabs(sr[k]) + 1e-5); if (!(e <= wst)) wst = e; }
  GH_TEST_OK(wst <= 1, "%s: fb stats without gamma (max err/tol %.3g)", name, wst);
  check_fb_pairs(co, cu, dc, name, graphs, NS, bt, ac); /* hmm-graphs.h */
  /* utterances sharing a graph are summed in a fixed order: the same bits every run */
  double *sc2 = calloc(NS + 1, sizeof(double));
  co->hmm_fb(cu, dc, bt, Lc, NULL, sc2);
  GH_TEST_OK(!memcmp(sc, sc2, NS * sizeof(double)), "%s: fb stats of two runs bit-identical", name);
  free(sc2);
  co->hmm_free(cu, dc);
  ro->hmm_free(NULL, dr);
  free(soff); free(Lc); free(Lr); free(ac); free(ar); free(pc); free(pr); free(sc); free(sr);
}

static void test_correctness(gh_backend *cu) {
  const int32_t P = 60;
  enum { NG = 8 };
  tgraph tg[NG];
  tg_one(&tg[0], P, 1);
  tg_one(&tg[1], P, 0);
  tg_lr(&tg[2], 37, P, 1, 0);
  tg_ergodic(&tg[3], 12, P);
  tg_wordloop(&tg[4], 40, 5, P);   /* 201 states, hub in-degree 40 */
  tg_lr(&tg[5], 150, P, 1, 1);
  tg_ergodic(&tg[6], 3, P);
  tg_lr(&tg[7], 80, P, 0, 0);
  const gh_hmm_graph *graphs[NG];
  for (int k = 0; k < NG; ++k) graphs[k] = &tg[k].g;
  /* 48 utterances: lengths 0, 1, 2, 3, random short, 300, and two of 12,000 */
  enum { B = 48 };
  int64_t off[B + 1];
  int32_t gi[B];
  off[0] = 0;
  for (int32_t u = 0; u < B; ++u) {
    int64_t T = u < 4 ? u : u < 40 ? 2 + (int64_t)(urand() * 80) : u < 46 ? 300 : 12000;
    if (u == 20) T = 0;
    off[u + 1] = off[u] + T;
    gi[u] = u % NG;
  }
  gi[46] = 4; gi[47] = 2;   /* the 12,000-frame ones: word loop, left-to-right */
  float *ll = random_ll(off[B], P, 0.002);
  gh_hmm_batch bt = {B, P, ll, off, gi};
  compare_batch(cu, "mixed batch", graphs, NG, &bt);
  /* 600 utterances of one left-to-right graph (hmm-train's batches: one
   * graph per distinct transcript) */
  enum { B4 = 600 };
  int64_t *off4 = malloc((B4 + 1) * sizeof(int64_t));
  int32_t *g4 = calloc(B4, sizeof(int32_t));
  off4[0] = 0;
  for (int32_t u = 0; u < B4; ++u) off4[u + 1] = off4[u] + 40 + (int64_t)(urand() * 60);
  float *ll4 = random_ll(off4[B4], P, 0.002);
  gh_hmm_batch b4 = {B4, P, ll4, off4, g4};
  compare_batch(cu, "600 utterances of one graph", graphs + 2, 1, &b4);
  free(off4); free(g4); free(ll4);
  /* graph == NULL: graph 0 for all (the word loop alone) */
  int64_t off2[4] = {0, 1, 250, 700};
  gh_hmm_batch b2 = {3, P, ll, off2, NULL};
  compare_batch(cu, "graph NULL", graphs + 4, 1, &b2);
  /* large graph: 2,501 states, 5,500 arcs -> rows and xi accumulators in
   * global memory (beyond HMM_SMEM_S / HMM_SMEM_A) */
  tgraph big;
  tg_wordloop(&big, 500, 5, P);
  const gh_hmm_graph *bg[2] = {&big.g, &tg[3].g};
  int64_t off3[4] = {0, 120, 400, 430};
  int32_t g3[3] = {0, 1, 0};
  gh_hmm_batch b3 = {3, P, ll, off3, g3};
  compare_batch(cu, "2501-state word loop", bg, 2, &b3);
  tg_free(&big);
  free(ll);
  for (int k = 0; k < NG; ++k) tg_free(&tg[k]);
}

/* Dense graphs (the dense batched path of cuda-hmm-dense.cu: one graph for the
 * whole batch, A >= S^2/4, S >= 64, no alpha output): S = 64 and 100
 * (ergodic, 4/5 of the arcs; 100 is not a multiple of the 64-state tile),
 * 256 and 1024 (all arcs); a batch of lengths 0, 1, 2, 7, 37, 60, 100, 100
 * (the 37-frame one with no path: all loglikes of frame 5 -inf) and a batch
 * of 1 sequence; random loglikes (0.1 % -inf).  Checks against the
 * CPU reference (double): log-domain forward log P rel 1e-9 (double GEMM),
 * scaled rel 1e-6 (float products: fp32 FMAs or 3xTF32; the backend's
 * --precision auto, fp32 and tf32x3 each) and 1e-3 (one TF32 product), Viterbi score rel 1e-12 (both add the same
 * doubles in the same order, so equal in practice) and the path identical
 * state for state; a differing state counts as an exact tie only if the
 * CUDA path re-scores to the CPU score exactly, and ties are reported. */
static void dense_case(gh_backend *cu, const char *name, const gh_hmm_graph *g, const gh_hmm_batch *bt) {
  const gh_ops_hmm *co = gh_backend_hmm_ops(cu), *ro = &gh_cpu_ref_hmm;
  int32_t B = bt->num_utts, P = bt->num_pdfs;
  int64_t F = bt->frame_off[B];
  gh_dev_hmm *dc = co->hmm_upload(cu, &g, 1), *dr = ro->hmm_upload(NULL, &g, 1);
  double *Lc = malloc(B * sizeof(double)), *Lr = malloc(B * sizeof(double));
  /* log domain; scaled at the backend's precisions (auto = tf32x3 from 1024 states) */
  const int precs[5] = {GH_PREC_AUTO, GH_PREC_AUTO, GH_PREC_FP32, GH_PREC_TF32X3, GH_PREC_TF32};
  const char *pname[5] = {"", " (precision auto)", " (fp32)", " (tf32x3)", " (tf32)"};
  for (int k = 0; k < 5; ++k) {
    const int scaled = k > 0, fl = scaled ? GH_HMM_SCALED : 0;
    cu->precision = precs[k];
    co->hmm_forward(cu, dc, bt, fl, Lc, NULL);
    cu->precision = GH_PREC_AUTO;
    ro->hmm_forward(NULL, dr, bt, fl, Lr, NULL);
    double wl = 0;
    int nnone = 0;
    for (int32_t u = 0; u < B; ++u) {
      double e = relerr(Lc[u], Lr[u]);
      if (!(e <= wl)) wl = e;
      nnone += Lr[u] == -INFINITY;
    }
    double tol = !scaled ? 1e-9 : precs[k] == GH_PREC_TF32 ? 1e-3 : 1e-6;
    GH_TEST_OK(wl <= tol, "dense %s: %s forward%s log P, %d utts, %d without a path (max rel err %.3g, tol %g)", name,
               scaled ? "scaled" : "log", pname[k], B, nnone, wl, tol);
  }
  int32_t *pc = malloc((F + 1) * sizeof(int32_t)), *pr = malloc((F + 1) * sizeof(int32_t));
  co->hmm_viterbi(cu, dc, bt, pc, Lc);
  ro->hmm_viterbi(NULL, dr, bt, pr, Lr);
  double ws = 0;
  int64_t diff = 0, ties = 0;
  for (int32_t u = 0; u < B; ++u) {
    int64_t f0 = bt->frame_off[u], T = bt->frame_off[u + 1] - f0;
    double e = relerr(Lc[u], Lr[u]);
    if (!(e <= ws)) ws = e;
    int64_t d = 0;
    for (int64_t t = 0; t < T; ++t) d += pc[f0 + t] != pr[f0 + t];
    if (d && Lr[u] > -INFINITY && path_score(g, bt->loglikes + f0 * P, P, T, pc + f0) == Lr[u]) ties += d;
    else diff += d;
  }
  GH_TEST_OK(ws <= 1e-12, "dense %s: viterbi score (max rel err %.3g)", name, ws);
  GH_TEST_OK(diff == 0, "dense %s: viterbi path identical (%lld of %lld states differ; %lld on exact ties)", name,
             (long long)diff, (long long)F, (long long)ties);
  co->hmm_free(cu, dc);
  ro->hmm_free(NULL, dr);
  free(Lc); free(Lr); free(pc); free(pr);
}

static void test_dense(gh_backend *cu) {
  const int32_t Ss[4] = {64, 100, 256, 1024};
  for (int k = 0; k < 4; ++k) {
    const int32_t S = Ss[k], P = S + 3;
    tgraph t;
    if (S <= 100) {
      tg_ergodic(&t, S, P);
    } else {
      tg_init(&t, S, P);
      for (int32_t j = 0; j < S; ++j) { t.init[j] = (float)log((0.2 + urand()) / S); t.fin[j] = 0.f; }
      for (int32_t i = 0; i < S; ++i)
        for (int32_t j = 0; j < S; ++j) tg_arc(&t, i, j, (float)log((0.05 + urand()) / (0.55 * S)));
      tg_finish(&t);
    }
    enum { B = 8 };
    int64_t lens[B] = {37, 0, 100, 1, 7, 100, 2, 60}, off[B + 1];
    off[0] = 0;
    for (int u = 0; u < B; ++u) off[u + 1] = off[u] + lens[u];
    float *ll = random_ll(off[B], P, 0.001);
    for (int32_t j = 0; j < P; ++j) ll[(off[0] + 5) * P + j] = -INFINITY; /* utt 0: no path (-inf, redone sparse) */
    char name[64];
    gh_hmm_batch bt = {B, P, ll, off, NULL};
    snprintf(name, sizeof name, "S=%d, %d utts of 0-100 frames", S, B);
    dense_case(cu, name, &t.g, &bt);
    int64_t off1[2] = {0, 80};
    gh_hmm_batch b1 = {1, P, ll + off[1] * P, off1, NULL}; /* frames 37..116: has a path */
    snprintf(name, sizeof name, "S=%d, 1 utt of 80 frames", S);
    dense_case(cu, name, &t.g, &b1);
    free(ll);
    tg_free(&t);
  }
}

/* The time-parallel forward (cuda-hmm-timepar.cu: 1-8 utterances of >= 1024
 * frames on graphs of <= 64 states; $GH_CUDA_HMM=timepar forces it for any
 * length): one-state graphs with and without a self-loop (the latter has
 * no path: -inf, redone by the sequential kernels), ergodic 12 and 64
 * states, left-to-right 37 (Kaldi exit) and 64 (Rabiner exits), a 41-state
 * word loop; utterances of 5,000 frames (random loglikes, 0.2 % -inf), a
 * batch of three, one with no path (frame 2,500 all -inf), and, forced,
 * lengths 1, 2, 65 and 130 (0, 1, 1 and 3 chunks of 64 frames).  log P
 * against the CPU reference (double): rel 1e-9; the log-domain forward
 * must take the path, the scaled one (the reference's scaled recursion,
 * sequential kernels) must not.  Viterbi: score rel 1e-12, the path the
 * CPU's state for state (or of the same score), the path taken.
 * Forward-backward: log P rel 1e-9, gamma abs 1e-6, stats 1e-9 of 1 + |ref|,
 * the path taken. */
static void tp_case(gh_backend *cu, const char *name, const gh_hmm_graph *const *graphs, int32_t ng,
                    const gh_hmm_batch *bt, int expect_tp) {
  const gh_ops_hmm *co = gh_backend_hmm_ops(cu), *ro = &gh_cpu_ref_hmm;
  const int32_t B = bt->num_utts;
  gh_dev_hmm *dc = co->hmm_upload(cu, graphs, ng), *dr = ro->hmm_upload(NULL, graphs, ng);
  double *Lc = malloc(B * sizeof(double)), *Lr = malloc(B * sizeof(double));
  for (int scaled = 0; scaled < 2; ++scaled) {
    const int fl = scaled ? GH_HMM_SCALED : 0;
    const long long n0 = gh_cuda_hmm_timepar_utts();
    co->hmm_forward(cu, dc, bt, fl, Lc, NULL);
    const long long ntp = gh_cuda_hmm_timepar_utts() - n0;
    ro->hmm_forward(NULL, dr, bt, fl, Lr, NULL);
    double wl = 0;
    int nnone = 0;
    for (int32_t u = 0; u < B; ++u) {
      const double e = relerr(Lc[u], Lr[u]);
      if (!(e <= wl)) wl = e;
      nnone += Lr[u] == -INFINITY;
    }
    GH_TEST_OK(wl <= 1e-9 && ntp == (expect_tp && !scaled ? B : 0),
               "time-parallel %s: %s forward log P, %d utts (%d without a path), %lld by the time-parallel path "
               "(max rel err %.3g, tol 1e-9)", name, scaled ? "scaled" : "log", B, nnone, ntp, wl);
  }
  /* Viterbi: score rel 1e-12; path identical, or (a tie resolved otherwise) re-scoring to the CPU's score */
  const int64_t F = bt->frame_off[B];
  int32_t *pc = malloc((F + 1) * sizeof(int32_t)), *pr = malloc((F + 1) * sizeof(int32_t));
  const long long n0 = gh_cuda_hmm_timepar_utts();
  co->hmm_viterbi(cu, dc, bt, pc, Lc);
  const long long ntp = gh_cuda_hmm_timepar_utts() - n0;
  ro->hmm_viterbi(NULL, dr, bt, pr, Lr);
  double ws = 0;
  int64_t diff = 0, ties = 0;
  for (int32_t u = 0; u < B; ++u) {
    const int64_t f0 = bt->frame_off[u], T = bt->frame_off[u + 1] - f0;
    const double e = relerr(Lc[u], Lr[u]);
    if (!(e <= ws)) ws = e;
    int64_t d = 0;
    for (int64_t t = 0; t < T; ++t) d += pc[f0 + t] != pr[f0 + t];
    const gh_hmm_graph *g = graphs[bt->graph ? bt->graph[u] : 0];
    if (d && Lr[u] > -INFINITY && relerr(path_score(g, bt->loglikes + f0 * bt->num_pdfs, bt->num_pdfs, T, pc + f0),
                                         Lr[u]) <= 1e-12)
      ties += d;
    else
      diff += d;
  }
  GH_TEST_OK(ws <= 1e-12 && diff == 0 && ntp == (expect_tp ? B : 0),
             "time-parallel %s: viterbi score (max rel err %.3g, tol 1e-12), path (%lld of %lld states differ, %lld "
             "on paths of the same score), %lld by the time-parallel path", name, ws, (long long)diff, (long long)F,
             (long long)ties, ntp);
  free(pc); free(pr);
  /* forward-backward: log P rel 1e-9, gamma abs 1e-6 (float), stats 1e-9 (rel + abs) */
  int64_t *soff = malloc((B + 1) * sizeof(int64_t));
  gh_hmm_batch_state_off(bt, graphs, soff);
  const int64_t N = soff[B], NS = gh_hmm_stats_offset(graphs, ng);
  float *gc = malloc((N + 1) * sizeof(float)), *gr = malloc((N + 1) * sizeof(float));
  double *sc = calloc(NS + 1, sizeof(double)), *sr = calloc(NS + 1, sizeof(double));
  const long long n1 = gh_cuda_hmm_timepar_utts();
  co->hmm_fb(cu, dc, bt, Lc, gc, sc);
  const long long nfb = gh_cuda_hmm_timepar_utts() - n1;
  ro->hmm_fb(NULL, dr, bt, Lr, gr, sr);
  double wl = 0, wg = 0, ws2 = 0;
  for (int32_t u = 0; u < B; ++u) { const double e = relerr(Lc[u], Lr[u]); if (!(e <= wl)) wl = e; }
  for (int64_t i = 0; i < N; ++i) { const double e = fabs((double)gc[i] - gr[i]); if (!(e <= wg)) wg = e; }
  for (int64_t i = 0; i < NS; ++i) {
    const double e = fabs(sc[i] - sr[i]) / (1 + fabs(sr[i]));
    if (!(e <= ws2)) ws2 = e;
  }
  GH_TEST_OK(wl <= 1e-9 && wg <= 1e-6 && ws2 <= 1e-9 && nfb == (expect_tp ? B : 0),
             "time-parallel %s: forward-backward log P (max rel err %.3g), gamma (max abs err %.3g), stats (max "
             "err %.3g of 1 + |ref|), %lld by the time-parallel path", name, wl, wg, ws2, nfb);
  free(soff); free(gc); free(gr); free(sc); free(sr);
  co->hmm_free(cu, dc);
  ro->hmm_free(NULL, dr);
  free(Lc); free(Lr);
}

static void test_timepar(gh_backend *cu) {
  const int32_t P = 70;
  enum { NG = 7 };
  tgraph tg[NG];
  tg_one(&tg[0], P, 1);
  tg_one(&tg[1], P, 0);
  tg_ergodic(&tg[2], 12, P);
  tg_lr(&tg[3], 37, P, 1, 0);
  tg_ergodic(&tg[4], 64, P);
  tg_lr(&tg[5], 64, P, 1, 1);
  tg_wordloop(&tg[6], 8, 5, P); /* 41 states */
  const int64_t T = 5000;
  float *ll = random_ll(3 * T, P, 0.002);
  for (int k = 0; k < NG; ++k) {
    int64_t off[2] = {0, T};
    gh_hmm_batch bt = {1, P, ll, off, NULL};
    char name[80];
    snprintf(name, sizeof name, "graph %d (%d states), 1 utt of %lld frames", k, tg[k].S, (long long)T);
    const gh_hmm_graph *g1 = &tg[k].g;
    tp_case(cu, name, &g1, 1, &bt, 1);
  }
  const gh_hmm_graph *graphs[NG];
  for (int k = 0; k < NG; ++k) graphs[k] = &tg[k].g;
  int64_t off3[4] = {0, 2000, 5000, 6500};
  int32_t g3[3] = {2, 3, 6};
  gh_hmm_batch b3 = {3, P, ll, off3, g3};
  tp_case(cu, "3 utts of 2000, 3000, 1500 frames on 3 graphs", graphs, NG, &b3, 1);
  /* no path: every loglike of frame 2,500 -inf */
  float *ln = malloc(T * P * sizeof(float));
  memcpy(ln, ll, T * P * sizeof(float));
  for (int32_t j = 0; j < P; ++j) ln[2500 * P + j] = -INFINITY;
  int64_t off1[2] = {0, T};
  gh_hmm_batch bn = {1, P, ln, off1, NULL};
  const gh_hmm_graph *ge = &tg[2].g;
  tp_case(cu, "ergodic 12, no path (frame 2500 all -inf)", &ge, 1, &bn, 1);
  /* too short for the rule: the sequential kernels */
  int64_t offs[2] = {0, 1000};
  gh_hmm_batch bs = {1, P, ll, offs, NULL};
  tp_case(cu, "ergodic 12, 1000 frames (below the rule)", &ge, 1, &bs, 0);
  /* forced: chunk boundaries */
  setenv("GH_CUDA_HMM", "timepar", 1);
  int64_t offf[5] = {0, 1, 3, 68, 198};
  gh_hmm_batch bf = {4, P, ll, offf, NULL};
  tp_case(cu, "forced, ergodic 12, lengths 1, 2, 65, 130", &ge, 1, &bf, 1);
  unsetenv("GH_CUDA_HMM");
  free(ln);
  free(ll);
  /* speed: one long utterance, time-parallel against the sequential kernels */
  const int64_t TL = 100000;
  float *lb = random_ll(TL, P, 0);
  int64_t offb[2] = {0, TL};
  gh_hmm_batch bb = {1, P, lb, offb, NULL};
  const int Ss[2] = {16, 64};
  for (int k = 0; k < 2; ++k) {
    tgraph t;
    tg_ergodic(&t, Ss[k], P);
    const gh_hmm_graph *gp = &t.g;
    const gh_ops_hmm *co = gh_backend_hmm_ops(cu);
    gh_dev_hmm *dc = co->hmm_upload(cu, &gp, 1);
    int32_t *pv = malloc(TL * sizeof(int32_t));
    for (int op = 0; op < (Ss[k] == 16 ? 3 : 2); ++op) { /* forward, Viterbi, (16 states) forward-backward */
      double L1 = 0, L2 = 0, tt[2];
      for (int v = 0; v < 2; ++v) {
        if (v) setenv("GH_CUDA_HMM", "sparse", 1);
        for (int it = 0; it < 2; ++it) { /* a warm-up, then timed */
          const double k0 = gh_cuda_hmm_kernel_seconds();
          if (op == 0) co->hmm_forward(cu, dc, &bb, 0, v ? &L2 : &L1, NULL);
          else if (op == 1) co->hmm_viterbi(cu, dc, &bb, pv, v ? &L2 : &L1);
          else co->hmm_fb(cu, dc, &bb, v ? &L2 : &L1, NULL, NULL);
          tt[v] = gh_cuda_hmm_kernel_seconds() - k0;
        }
        unsetenv("GH_CUDA_HMM");
      }
      printf("# timepar: 1 utt x %lld frames, ergodic %d states, %s: time-parallel %.2f ms (%.3g frames/s), "
             "sequential kernel %.2f ms (%.3g frames/s), %.1fx; %.6f vs %.6f\n", (long long)TL, Ss[k],
             op == 2 ? "forward-backward" : op ? "viterbi" : "forward", tt[0] * 1e3, TL / tt[0], tt[1] * 1e3, TL / tt[1], tt[1] / tt[0], L1, L2);
      GH_TEST_OK(relerr(L1, L2) <= 1e-9, "timepar speed case, ergodic %d, %s: both paths agree (rel %.3g)", Ss[k],
                 op == 2 ? "forward-backward" : op ? "viterbi" : "forward", relerr(L1, L2));
    }
    free(pv);
    co->hmm_free(cu, dc);
    tg_free(&t);
  }
  free(lb);
  for (int k = 0; k < NG; ++k) tg_free(&tg[k]);
}

/* One timed call of op (0 forward, 1 viterbi, 2 fb) on backend ops o;
 * returns seconds. */
static double timed(gh_backend *b, const gh_ops_hmm *o, gh_dev_hmm *d, const gh_hmm_batch *bt, int op,
                    double *L, int32_t *path, float *gamma, double *stats) {
  double t0 = now();
  if (op == 0) o->hmm_forward(b, d, bt, 0, L, NULL);
  else if (op == 1) o->hmm_viterbi(b, d, bt, path, L);
  else o->hmm_fb(b, d, bt, L, gamma, stats);
  return now() - t0;
}

/* Speed: CUDA (end to end incl. the loglike upload and result download, and
 * kernel only) vs the CPU reference (one core; on the first ncpu
 * utterances) in frames/s. */
static void bench(gh_backend *cu, const char *name, const gh_hmm_graph *const *graphs, int32_t ng,
                  const gh_hmm_batch *bt, int32_t ncpu) {
  const gh_ops_hmm *co = gh_backend_hmm_ops(cu), *ro = &gh_cpu_ref_hmm;
  int32_t B = bt->num_utts;
  int64_t F = bt->frame_off[B];
  int64_t *soff = malloc((B + 1) * sizeof(int64_t));
  gh_hmm_batch_state_off(bt, graphs, soff);
  double *L = malloc(B * sizeof(double)), *Lr = malloc(B * sizeof(double));
  int32_t *path = malloc((F + 1) * sizeof(int32_t));
  float *gamma = malloc((soff[B] + 1) * sizeof(float));
  int64_t NS = gh_hmm_stats_offset(graphs, ng);
  double *stats = calloc(NS + 1, sizeof(double));
  gh_dev_hmm *dc = co->hmm_upload(cu, graphs, ng), *dr = ro->hmm_upload(NULL, graphs, ng);
  gh_hmm_batch sub = *bt;
  sub.num_utts = ncpu;
  int64_t Fc = bt->frame_off[ncpu];
  const char *opn[3] = {"forward", "viterbi", "fb (gamma+stats)"};
  int agree = 1;
  for (int op = 0; op < 3; ++op) {
    timed(cu, co, dc, bt, op, L, path, gamma, stats); /* warm-up */
    double k0 = gh_cuda_hmm_kernel_seconds();
    double tg = timed(cu, co, dc, bt, op, L, path, gamma, stats);
    double tk = gh_cuda_hmm_kernel_seconds() - k0;
    double tc = timed(NULL, ro, dr, &sub, op, Lr, path, gamma, stats);
    for (int32_t u = 0; u < ncpu; ++u) if (relerr(L[u], Lr[u]) > 1e-4) agree = 0;
    printf("# bench %s, %s: cuda %.1f ms = %.3g frames/s end to end, kernels %.1f ms = %.3g frames/s; "
           "cpu (1 core, %d utts) %.3g frames/s; speed-up %.0fx end to end\n",
           name, opn[op], 1e3 * tg, F / tg, 1e3 * tk, F / tk, ncpu, Fc / tc, (F / tg) / (Fc / tc));
  }
  GH_TEST_OK(agree, "bench %s: cuda and cpu agree on log P", name);
  co->hmm_free(cu, dc);
  ro->hmm_free(NULL, dr);
  free(soff); free(L); free(Lr); free(path); free(gamma); free(stats);
}

static void test_speed(gh_backend *cu) {
  const int32_t P = 150;
  enum { NG = 8 };
  tgraph tg[NG];
  const gh_hmm_graph *graphs[NG];
  for (int k = 0; k < NG; ++k) { tg_lr(&tg[k], 30 + 17 * k, P, 1, 0); graphs[k] = &tg[k].g; }
  enum { B = 1000 };
  int64_t *off = malloc((B + 1) * sizeof(int64_t));
  int32_t *gi = malloc(B * sizeof(int32_t));
  off[0] = 0;
  for (int32_t u = 0; u < B; ++u) { off[u + 1] = off[u] + 200 + (int64_t)(urand() * 201); gi[u] = (int32_t)(urand() * NG) % NG; }
  float *ll = random_ll(off[B], P, 0);
  gh_hmm_batch bt = {B, P, ll, off, gi};
  printf("# batch: %d utts, %lld frames, left-to-right graphs of 30-149 states with skips, %d pdfs\n", B,
         (long long)off[B], P);
  bench(cu, "1000 utts x ~300 frames", graphs, NG, &bt, 100);
  free(ll);
  /* one 10,000-frame utterance, 201-state word loop */
  tgraph wl;
  tg_wordloop(&wl, 40, 5, P);
  const gh_hmm_graph *wg[1] = {&wl.g};
  int64_t off1[2] = {0, 10000};
  float *ll1 = random_ll(10000, P, 0);
  gh_hmm_batch b1 = {1, P, ll1, off1, NULL};
  bench(cu, "1 utt x 10000 frames, 201-state word loop", wg, 1, &b1, 1);
  free(ll1);
  tg_free(&wl);
  for (int k = 0; k < NG; ++k) tg_free(&tg[k]);
  free(off); free(gi);
}

/* All four operations of h on bt into out (a flat byte record for memcmp). */
typedef struct { double *L, *Ls, *V, *Lf, *st; float *al, *gm; int32_t *path; int64_t B, N, F, NS; } hmm_outs;
static void outs_init(hmm_outs *o, const gh_hmm_graph *const *graphs, int32_t ng, const gh_hmm_batch *bt) {
  o->B = bt->num_utts;
  o->F = bt->frame_off[o->B];
  int64_t *soff = malloc((o->B + 1) * sizeof(int64_t));
  gh_hmm_batch_state_off(bt, graphs, soff);
  o->N = soff[o->B];
  free(soff);
  o->NS = gh_hmm_stats_offset(graphs, ng);
  o->L = calloc(o->B, 8); o->Ls = calloc(o->B, 8); o->V = calloc(o->B, 8); o->Lf = calloc(o->B, 8);
  o->st = calloc(o->NS + 1, 8); o->al = calloc(o->N + 1, 4); o->gm = calloc(o->N + 1, 4); o->path = calloc(o->F + 1, 4);
}
static void outs_run(gh_backend *cu, gh_dev_hmm *h, const gh_hmm_batch *bt, hmm_outs *o) {
  const gh_ops_hmm *co = gh_backend_hmm_ops(cu);
  co->hmm_forward(cu, h, bt, 0, o->L, o->al);
  co->hmm_forward(cu, h, bt, GH_HMM_SCALED, o->Ls, NULL);
  co->hmm_viterbi(cu, h, bt, o->path, o->V);
  memset(o->st, 0, o->NS * 8);
  co->hmm_fb(cu, h, bt, o->Lf, o->gm, o->st);
}
static int outs_same(const hmm_outs *a, const hmm_outs *b) {
  return !memcmp(a->L, b->L, a->B * 8) && !memcmp(a->Ls, b->Ls, a->B * 8) && !memcmp(a->V, b->V, a->B * 8) &&
         !memcmp(a->Lf, b->Lf, a->B * 8) && !memcmp(a->st, b->st, a->NS * 8) && !memcmp(a->al, b->al, a->N * 4) &&
         !memcmp(a->gm, b->gm, a->N * 4) && !memcmp(a->path, b->path, a->F * 4);
}
static void outs_free(hmm_outs *o) {
  free(o->L); free(o->Ls); free(o->V); free(o->Lf); free(o->st); free(o->al); free(o->gm); free(o->path);
}

/* hmm_reweight: graphs given new log-probabilities in place compute as a
 * fresh upload of them does, bit for bit -- the lazily made matrices of
 * the dense and time-parallel paths made before the reweight -- and differ
 * from the old weights' results. */
static void reweight_case(gh_backend *cu, const char *name, tgraph *tg, int32_t ng, const gh_hmm_batch *bt) {
  const gh_ops_hmm *co = gh_backend_hmm_ops(cu);
  const gh_hmm_graph *graphs[8];
  for (int32_t k = 0; k < ng; ++k) graphs[k] = &tg[k].g;
  hmm_outs before, re, fresh;
  outs_init(&before, graphs, ng, bt);
  outs_init(&re, graphs, ng, bt);
  outs_init(&fresh, graphs, ng, bt);
  gh_dev_hmm *dr = co->hmm_upload(cu, graphs, ng);
  outs_run(cu, dr, bt, &before);
  for (int32_t k = 0; k < ng; ++k) {
    for (int32_t a = 0; a < tg[k].A; ++a) if (isfinite(tg[k].lp[a])) tg[k].lp[a] -= (float)(0.7 * urand());
    for (int32_t j = 0; j < tg[k].S; ++j) {
      if (isfinite(tg[k].init[j])) tg[k].init[j] -= (float)(0.3 * urand());
      if (isfinite(tg[k].fin[j]) && tg[k].fin[j] < 0) tg[k].fin[j] -= (float)(0.3 * urand());
    }
  }
  gh_backend_hmm_reweight(cu, &dr, graphs, ng);
  gh_dev_hmm *df = co->hmm_upload(cu, graphs, ng);
  outs_run(cu, dr, bt, &re);
  outs_run(cu, df, bt, &fresh);
  GH_TEST_OK(outs_same(&re, &fresh) && !outs_same(&re, &before),
             "%s: hmm_reweight = a fresh upload bit for bit (forward, scaled, Viterbi, forward-backward), "
             "and not the old weights' results", name);
  co->hmm_free(cu, dr);
  co->hmm_free(cu, df);
  outs_free(&before); outs_free(&re); outs_free(&fresh);
}

static void test_reweight(gh_backend *cu) {
  const int32_t P = 30;
  tgraph tg[3];
  tg_lr(&tg[0], 37, P, 1, 0);
  tg_wordloop(&tg[1], 40, 5, P);
  tg_ergodic(&tg[2], 12, P);
  enum { B = 9 };
  int64_t off[B + 1];
  int32_t gi[B];
  off[0] = 0;
  for (int32_t u = 0; u < B; ++u) { off[u + 1] = off[u] + 50 + (int64_t)(urand() * 200); gi[u] = u % 3; }
  float *ll = random_ll(off[B], P, 0.0);
  gh_hmm_batch bt = {B, P, ll, off, gi};
  reweight_case(cu, "sparse graphs", tg, 3, &bt);
  /* one dense graph (80 states, ergodic): the dense batched path */
  tgraph dg;
  tg_ergodic(&dg, 80, P);
  int64_t off2[5] = {0, 300, 420, 700, 710};
  gh_hmm_batch b2 = {4, P, ll, off2, NULL};
  reweight_case(cu, "dense graph", &dg, 1, &b2);
  tg_free(&dg);
  /* one long utterance on a small graph: the time-parallel path */
  tgraph lg;
  tg_lr(&lg, 20, P, 1, 0);
  float *ll3 = random_ll(3000, P, 0.0);
  int64_t off3[2] = {0, 3000};
  gh_hmm_batch b3 = {1, P, ll3, off3, NULL};
  reweight_case(cu, "time-parallel (3,000 frames, 20 states)", &lg, 1, &b3);
  tg_free(&lg);
  for (int k = 0; k < 3; ++k) tg_free(&tg[k]);
  free(ll); free(ll3);
}

/* Small graphs (<= 16 states, no heavy states): the packed kernels of
 * cuda-hmm-batch.cu ("packed small graphs": groups of 4, 8 or 16 lanes per
 * utterance) against the CPU reference (compare_batch's tolerances), and
 * bit for bit against the one-block-per-utterance kernels
 * ($GH_CUDA_HMM_PACK=0): log P, scaled log P, Viterbi scores and paths,
 * gamma and the forward-backward statistics.  Batches of 700 utterances
 * of 0-120 frames (lengths 0, 1, 2 included; 0.2 % -inf loglikes) over
 * graphs of 1-3, 5-8 and 12-16 states. */
static void test_packed(gh_backend *cu) {
  const int32_t P = 40;
  enum { NG = 7 };
  tgraph tg[NG];
  tg_one(&tg[0], P, 1);
  tg_ergodic(&tg[1], 3, P);
  tg_one(&tg[2], P, 0);
  tg_lr(&tg[3], 8, P, 1, 0);
  tg_lr(&tg[4], 5, P, 1, 1);
  tg_ergodic(&tg[5], 12, P);
  tg_lr(&tg[6], 16, P, 0, 0);
  static const struct { const char *name; int k0, n; } sets[3] = {
      {"packed, groups of 4 (1-3 states)", 0, 3},
      {"packed, groups of 8 (5-8 states)", 3, 2},
      {"packed, groups of 16 (5-16 states)", 3, 4},
  };
  enum { B = 700 };
  int64_t off[B + 1];
  int32_t gi[B];
  for (int c = 0; c < 3; ++c) {
    off[0] = 0;
    for (int32_t u = 0; u < B; ++u) {
      const int64_t T = u < 3 ? u : (int64_t)(urand() * 120);
      off[u + 1] = off[u] + T;
      gi[u] = (int32_t)(urand() * sets[c].n);
    }
    float *ll = random_ll(off[B], P, 0.002);
    gh_hmm_batch bt = {B, P, ll, off, gi};
    const gh_hmm_graph *graphs[NG];
    for (int k = 0; k < sets[c].n; ++k) graphs[k] = &tg[sets[c].k0 + k].g;
    compare_batch(cu, sets[c].name, graphs, sets[c].n, &bt);
    hmm_outs pk, one;
    outs_init(&pk, graphs, sets[c].n, &bt);
    outs_init(&one, graphs, sets[c].n, &bt);
    gh_dev_hmm *h = gh_backend_hmm_ops(cu)->hmm_upload(cu, graphs, sets[c].n);
    outs_run(cu, h, &bt, &pk);
    setenv("GH_CUDA_HMM_PACK", "0", 1);
    outs_run(cu, h, &bt, &one);
    unsetenv("GH_CUDA_HMM_PACK");
    GH_TEST_OK(outs_same(&pk, &one), "%s: = one block per utterance bit for bit (forward, scaled, Viterbi, "
               "forward-backward)", sets[c].name);
    gh_backend_hmm_ops(cu)->hmm_free(cu, h);
    outs_free(&pk); outs_free(&one);
    free(ll);
  }
  for (int k = 0; k < NG; ++k) tg_free(&tg[k]);
}

int main(void) {
  if (gh_cuda_device_count() > 0) {
    gh_backend *cu = gh_backend_create("cuda");
    GH_TEST_OK(gh_backend_hmm_ops(cu) == cu->ops->hmm && gh_backend_supports(cu, GH_CAP_HMM),
               "the cuda backend has its own HMM kernels (%s)", cu->device_name);
    test_correctness(cu);
    test_dense(cu);
    test_timepar(cu);
    test_reweight(cu);
    test_packed(cu);
    test_speed(cu);
    gh_backend_free(cu);
  } else {
    for (int k = 0; k < 4; ++k) printf("ok %d - # SKIP no GPU\n", ++gh_t_n);
  }
  return gh_test_done();
}
