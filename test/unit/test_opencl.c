/* test_opencl.c -- every op of the OpenCL backend (kernels/opencl/) against
 * the CPU reference backend (kernels/cpu/, double arithmetic; itself checked
 * against float64 moments in test_kernels.c), on the cases the CUDA tests
 * use:
 *  - GMM loglikes and E-step: diagonal, full and mixed sets with variable
 *    Gaussians per pdf (D = 1..128), UBM-size pdfs (1 x 1024 diag, 1 x 512
 *    full), small pdfs next to 300-Gaussian ones, a chunked loglike call
 *    (T x Gaussians > one 16 M-float chunk), a chunked E-step (> 16 M
 *    posteriors) and the E-step's GEMM path for big pdfs; both GEMM paths (CLBlast and the built-in SGEMM) when the
 *    build has CLBlast.  Tolerances: loglikes |got - ref| <= 1e-4 (1 + |ref|)
 *    (fp32 GEMM over expanded features: x_i x_j products of uncentred
 *    features; measured ~1e-5 on real AMI features); E-step statistics
 *    |got - ref| <= 1e-4 max(1, max |ref| of that array), total loglike
 *    relative 1e-5 (fp32 posteriors, double sums).
 *  - HMM forward (log and scaled), Viterbi, forward-backward: batches of
 *    utterances of 0, 1, 2, 3, short, 300, 12,000 and 20,000 frames over
 *    different graphs (left-to-right with skips, ergodic, a 201-state word
 *    loop, one-state graphs with and without a self-loop, a 2,501-state word
 *    loop), random loglikes with a few -inf.  The kernels do the
 *    reference's double arithmetic: log P relative 1e-9, alpha (float)
 *    relative 1e-6 + 1e-5 absolute with the same -inf pattern, Viterbi
 *    scores relative 1e-12 and the returned paths re-scored within 1e-12,
 *    gamma absolute 1e-6, stats (added to the caller's values) relative
 *    1e-8 + 1e-10 absolute.
 *  - The program binary cache (a fresh cache folder: entry written; a
 *    corrupt entry is ignored, rebuilt and rewritten) and device errors
 *    (bad P:D gives NULL and a message; --device=auto never takes a CPU
 *    OpenCL device).
 * With GH_OPENCL_BENCH=1 also "# bench" lines (HMM frames/s, OpenCL vs the
 * CPU reference; no assertion on speed).
 * Without an OpenCL device (or a build without OpenCL): one "# SKIP" line.
 */
#include "registry/registry.h"
#include "base/gh-base.h"
#include "gh-test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t rs = 0x2545F4914F6CDD1DULL;
/* Uniform in (0, 1) (xorshift64, fixed seed). */
static double urand(void) {
  rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
  return ((rs >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double nrand(void) { return sqrt(-2.0 * log(urand())) * cos(2 * M_PI * urand()); }

/* ---------------- GMM cases ---------------- */

/* Random well-formed pdf: precision P = A A'/D + diag(0.3..1.8) (full) or
 * 1/var (diag), means ~ 1.5 N(0, 1), Kaldi's natural parameters. */
static void make_gmm(gh_gmm *g, int G, int D, int full) {
  gh_gmm_init(g, full ? GH_COV_FULL : GH_COV_DIAG, G, D);
  double *Pm = malloc(sizeof(double) * D * D), *A = malloc(sizeof(double) * D * D), *L = malloc(sizeof(double) * D * D);
  double *mu = malloc(sizeof(double) * D), wsum = 0;
  for (int k = 0; k < G; ++k) wsum += (g->weights[k] = (float)(0.2 + urand()));
  for (int k = 0; k < G; ++k) {
    g->weights[k] /= wsum;
    memset(Pm, 0, sizeof(double) * D * D);
    if (full) {
      for (int i = 0; i < D * D; ++i) A[i] = nrand();
      for (int i = 0; i < D; ++i)
        for (int j = 0; j < D; ++j) {
          double s = 0;
          for (int l = 0; l < D; ++l) s += A[i * D + l] * A[j * D + l];
          Pm[i * D + j] = 0.5 * s / D;
        }
    }
    for (int i = 0; i < D; ++i) Pm[i * D + i] += 0.3 + 1.5 * urand();
    /* log det P by Cholesky */
    double logdet = 0;
    for (int i = 0; i < D; ++i)
      for (int j = 0; j <= i; ++j) {
        double s = Pm[i * D + j];
        for (int l = 0; l < j; ++l) s -= L[i * D + l] * L[j * D + l];
        L[i * D + j] = i == j ? sqrt(s) : s / L[j * D + j];
        if (i == j) logdet += 2 * log(L[i * D + i]);
      }
    for (int i = 0; i < D; ++i) mu[i] = 1.5 * nrand();
    double mPm = 0;
    for (int i = 0; i < D; ++i) {
      double b = 0;
      for (int j = 0; j < D; ++j) b += Pm[i * D + j] * mu[j];
      g->means_invvars[(size_t)k * D + i] = (float)b;
      mPm += b * mu[i];
      if (full)
        for (int j = 0; j <= i; ++j) g->inv_vars[(size_t)k * gh_packed_size(D) + gh_packed_index(i, j)] = (float)Pm[i * D + j];
      else
        g->inv_vars[(size_t)k * D + i] = (float)Pm[i * D + i];
    }
    g->gconsts[k] = (float)(log(g->weights[k]) - 0.5 * (D * log(2 * M_PI) - logdet + mPm));
  }
  free(Pm); free(A); free(L); free(mu);
}

typedef struct { gh_gmm_set set; int T; float *X; } problem;

/* P pdfs of dimension D; type 0 diag, 1 full, 2 mixed (p % 3 == 1 full);
 * G uniform in [gmin, gmax], or bimodal (gmin / gmax by p / 3, 17 for the
 * last pdf); T frames near random Gaussians, every 10th far out. */
static void make_problem(problem *pb, int P, int D, int gmin, int gmax, int type, int T, int bimodal) {
  memset(pb, 0, sizeof *pb);
  pb->set.dim = D; pb->set.num_pdfs = P; pb->set.form = GH_SET_AM;
  pb->set.pdfs = calloc(P, sizeof(gh_gmm));
  for (int p = 0; p < P; ++p) {
    int G = gmin + (int)(urand() * (gmax - gmin + 1));
    if (G > gmax) G = gmax;
    if (bimodal) G = p == P - 1 ? 17 : (p / 3) % 2 == 0 ? gmin : gmax;
    make_gmm(&pb->set.pdfs[p], G, D, type == 2 ? p % 3 == 1 : type);
  }
  pb->T = T;
  pb->X = malloc(sizeof(float) * T * D);
  for (int t = 0; t < T; ++t) {
    double scale = t % 10 == 0 ? 4.0 : 1.0;
    for (int i = 0; i < D; ++i) pb->X[(size_t)t * D + i] = (float)(1.5 * nrand() + scale * nrand());
  }
}

static void free_problem(problem *pb) { gh_gmm_set_free(&pb->set); free(pb->X); }

static float *loglikes(gh_backend *b, problem *pb) {
  float *out = malloc(sizeof(float) * (size_t)pb->T * pb->set.num_pdfs + 1);
  gh_dev_model *m = b->ops->gmm->model_upload(b, &pb->set);
  b->ops->gmm->loglikes(b, m, pb->X, pb->T, out);
  b->ops->gmm->model_free(b, m);
  return out;
}

/* E-step of npairs random pairs on b into *accs (initialised here); returns
 * the total.  Two data blocks, to check that accumulators add up. */
static double estep(gh_backend *b, problem *pb, const gh_frame_pdf *pairs, int64_t npairs, gh_accs_set *accs) {
  gh_accs_init(accs, &pb->set);
  gh_dev_model *m = b->ops->gmm->model_upload(b, &pb->set);
  b->ops->gmm->acc_zero(b, m);
  int64_t half = npairs / 3;
  gh_dev_data *d1 = b->ops->gmm->data_upload(b, pb->X, pb->T, pb->set.dim, pairs, half);
  gh_dev_data *d2 = b->ops->gmm->data_upload(b, pb->X, pb->T, pb->set.dim, pairs + half, npairs - half);
  double tot = b->ops->gmm->accumulate(b, m, d1) + b->ops->gmm->accumulate(b, m, d2);
  b->ops->gmm->data_free(b, d1);
  b->ops->gmm->data_free(b, d2);
  b->ops->gmm->acc_fetch(b, m, accs);
  b->ops->gmm->model_free(b, m);
  return tot;
}

static void check_gmm(gh_backend *ocl, gh_backend *cpu, const char *bname, const char *name, problem *pb,
                      int64_t npairs) {
  const int P = pb->set.num_pdfs, T = pb->T, D = pb->set.dim;
  float *a = loglikes(ocl, pb), *r = loglikes(cpu, pb);
  double worst = 0;
  for (size_t i = 0; i < (size_t)T * P; ++i) {
    double e = (isinf(a[i]) && a[i] == r[i]) ? 0 : fabs(a[i] - r[i]) / (1 + fabs(r[i]));
    if (!(e <= worst)) worst = e;
  }
  GH_TEST_OK(worst <= 1e-4, "%s loglikes %s (T=%d): max |err|/(1+|ref|) = %.3g", bname, name, T, worst);
  free(a); free(r);
  if (npairs <= 0) return;
  gh_frame_pdf *pairs = malloc(sizeof(gh_frame_pdf) * npairs);
  for (int64_t k = 0; k < npairs; ++k) {
    pairs[k].frame = (int)(urand() * T) % T;
    pairs[k].pdf = (int)(urand() * P) % P;
    pairs[k].weight = k % 7 == 0 ? 1.0f : (float)urand();
  }
  gh_accs_set ao, ar;
  double to = estep(ocl, pb, pairs, npairs, &ao), tr = estep(cpu, pb, pairs, npairs, &ar);
  double ws = 0;
  for (int p = 0; p < P; ++p) {
    const gh_gmm_accs *x = &ao.pdfs[p], *y = &ar.pdfs[p];
    int64_t G = y->num_gauss, S = y->type == GH_COV_FULL ? gh_packed_size(D) : D;
    struct { const double *got, *ref; int64_t n; } arr[3] = {
        {x->occupancy, y->occupancy, G}, {x->mean_accs, y->mean_accs, G * D}, {x->var_accs, y->var_accs, G * S}};
    for (int k = 0; k < 3; ++k) {
      double scale = 1;
      for (int64_t i = 0; i < arr[k].n; ++i) if (fabs(arr[k].ref[i]) > scale) scale = fabs(arr[k].ref[i]);
      for (int64_t i = 0; i < arr[k].n; ++i) {
        double e = fabs(arr[k].got[i] - arr[k].ref[i]) / scale;
        if (!(e <= ws)) ws = e;
      }
    }
  }
  double et = fabs(to - tr) / (1 + fabs(tr));
  GH_TEST_OK(ws <= 1e-4, "%s E-step stats %s (%lld pairs): max scaled err = %.3g", bname, name, (long long)npairs, ws);
  GH_TEST_OK(et <= 1e-5, "%s E-step total loglike %s: rel err = %.3g", bname, name, et);
  gh_accs_free(&ao); gh_accs_free(&ar);
  free(pairs);
}

static void test_gmm(gh_backend *ocl, gh_backend *cpu, const char *bname) {
  struct { const char *name; int P, D, gmin, gmax, type, T; int64_t npairs; int bimodal; } cases[] = {
      {"diag P=150 D=13 G=1..9", 150, 13, 1, 9, 0, 40, 3000, 0},
      {"full P=70 D=39 G=1..6", 70, 39, 1, 6, 1, 24, 1500, 0},
      {"mixed P=90 D=20 G=1..12", 90, 20, 1, 12, 2, 33, 2000, 0},
      {"full P=3 D=128 G=1..3", 3, 128, 1, 3, 1, 17, 100, 0},
      {"global full P=1 D=5 G=40", 1, 5, 40, 40, 1, 300, 5000, 0},
      {"global diag P=1 D=1 G=3", 1, 1, 3, 3, 0, 50, 200, 0},
      {"UBM full P=1 D=24 G=512", 1, 24, 512, 512, 1, 200, 300, 0},
      {"UBM diag P=1 D=40 G=1024", 1, 40, 1024, 1024, 0, 300, 300, 0},
      {"mixed G=3/300 (+17) P=13 D=20", 13, 20, 3, 300, 2, 37, 600, 1},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    problem pb;
    make_problem(&pb, cases[c].P, cases[c].D, cases[c].gmin, cases[c].gmax, cases[c].type, cases[c].T, cases[c].bimodal);
    check_gmm(ocl, cpu, bname, cases[c].name, &pb, cases[c].npairs);
    free_problem(&pb);
  }
}

/* Chunked inputs: loglikes over more than one 16 M-float chunk of Gaussian
 * columns, and an E-step of more than 16 M posteriors (two gamma chunks,
 * one pdf split across them). */
static void test_chunks(gh_backend *ocl, gh_backend *cpu) {
  problem pb;
  make_problem(&pb, 30000, 4, 1, 2, 0, 900, 0);
  check_gmm(ocl, cpu, "opencl", "chunked loglikes P=30000 (3 chunks)", &pb, 0);
  free_problem(&pb);
  make_problem(&pb, 20, 2, 60, 60, 0, 5000, 0);
  check_gmm(ocl, cpu, "opencl", "chunked E-step 20 x 60 diag, 300000 pairs (18 M posteriors, 2 chunks)", &pb, 300000);
  free_problem(&pb);
}

/* The E-step's GEMM path for pdfs with >= 64 Gaussians and >= 2048 pairs in
 * one call (global UBMs), alone and next to small pdfs (per-pair path). */
static void test_estep_gemm(gh_backend *ocl, gh_backend *cpu, const char *bname) {
  problem pb;
  make_problem(&pb, 1, 6, 1024, 1024, 0, 4000, 0);
  check_gmm(ocl, cpu, bname, "GEMM E-step 1 x 1024 diag D=6, 20000 pairs", &pb, 20000);
  free_problem(&pb);
  make_problem(&pb, 1, 12, 130, 130, 1, 3000, 0);
  check_gmm(ocl, cpu, bname, "GEMM E-step 1 x 130 full D=12, 9000 pairs", &pb, 9000);
  free_problem(&pb);
  make_problem(&pb, 5, 6, 2, 100, 2, 3000, 0);
  check_gmm(ocl, cpu, bname, "GEMM + per-pair E-step, mixed P=5 G=2..100, 40000 pairs", &pb, 40000);
  free_problem(&pb);
}

/* ---------------- HMM cases ---------------- */

#include "hmm-graphs.h"

static void compare_hmm(gh_backend *ocl, const char *name, const gh_hmm_graph *const *graphs, int32_t ng,
                        const gh_hmm_batch *bt) {
  const gh_ops_hmm *co = gh_backend_hmm_ops(ocl), *ro = &gh_cpu_ref_hmm;
  int32_t B = bt->num_utts, P = bt->num_pdfs;
  int64_t F = bt->frame_off[B];
  int64_t *soff = malloc((B + 1) * sizeof(int64_t));
  gh_hmm_batch_state_off(bt, graphs, soff);
  int64_t N = soff[B], NS = gh_hmm_stats_offset(graphs, ng);
  gh_dev_hmm *dc = co->hmm_upload(ocl, graphs, ng), *dr = ro->hmm_upload(NULL, graphs, ng);
  double *Lc = malloc(B * sizeof(double)), *Lr = malloc(B * sizeof(double));
  float *ac = malloc((N + 1) * sizeof(float)), *ar = malloc((N + 1) * sizeof(float));
  int ninf = 0;
  for (int scaled = 0; scaled < 2; ++scaled) {
    int fl = scaled ? GH_HMM_SCALED : 0;
    co->hmm_forward(ocl, dc, bt, fl, Lc, ac);
    ro->hmm_forward(NULL, dr, bt, fl, Lr, ar);
    double wl = 0, wa = 0;
    int64_t pat = 0;
    for (int32_t u = 0; u < B; ++u) { double e = relerr(Lc[u], Lr[u]); if (!(e <= wl)) wl = e; ninf += Lr[u] == -INFINITY; }
    for (int64_t i = 0; i < N; ++i) {
      if (isinf(ar[i]) || isinf(ac[i])) { pat += ar[i] != ac[i]; continue; }
      double e = fabs((double)ac[i] - ar[i]) / (1e-6 * fabs(ar[i]) + 1e-5);
      if (!(e <= wa)) wa = e;
    }
    GH_TEST_OK(wl <= 1e-9, "%s: %s forward log P, %d utts (max rel err %.3g)", name, scaled ? "scaled" : "log", B, wl);
    GH_TEST_OK(wa <= 1 && pat == 0, "%s: %s forward alpha, %lld values (max err/tol %.3g, -inf mismatches %lld)",
               name, scaled ? "scaled" : "log", (long long)N, wa, (long long)pat);
  }
  /* forward without alpha: same log P */
  co->hmm_forward(ocl, dc, bt, 0, Lc, NULL);
  ro->hmm_forward(NULL, dr, bt, 0, Lr, NULL);
  double wl0 = 0;
  for (int32_t u = 0; u < B; ++u) { double e = relerr(Lc[u], Lr[u]); if (!(e <= wl0)) wl0 = e; }
  GH_TEST_OK(wl0 <= 1e-9, "%s: forward without alpha (max rel err %.3g)", name, wl0);
  int32_t *pc = malloc((F + 1) * sizeof(int32_t)), *pr = malloc((F + 1) * sizeof(int32_t));
  co->hmm_viterbi(ocl, dc, bt, pc, Lc);
  ro->hmm_viterbi(NULL, dr, bt, pr, Lr);
  double ws = 0, wp = 0;
  int64_t same = 0, bad = 0;
  for (int32_t u = 0; u < B; ++u) {
    const gh_hmm_graph *g = graphs[bt->graph ? bt->graph[u] : 0];
    int64_t f0 = bt->frame_off[u], T = bt->frame_off[u + 1] - f0;
    double e = relerr(Lc[u], Lr[u]);
    if (!(e <= ws)) ws = e;
    for (int64_t t = 0; t < T; ++t) same += pc[f0 + t] == pr[f0 + t];
    if (Lr[u] == -INFINITY) {
      for (int64_t t = 0; t < T; ++t) bad += pc[f0 + t] != -1;
    } else {
      e = relerr(path_score(g, bt->loglikes + f0 * P, P, T, pc + f0), Lr[u]);
      if (!(e <= wp)) wp = e;
    }
  }
  GH_TEST_OK(ws <= 1e-12, "%s: viterbi score (max rel err %.3g)", name, ws);
  GH_TEST_OK(wp <= 1e-12 && bad == 0, "%s: viterbi path re-scored (max rel err %.3g; %lld of %lld states equal; %lld bad -1 paths)",
             name, wp, (long long)same, (long long)F, (long long)bad);
  double *sc = malloc((NS + 1) * sizeof(double)), *sr = malloc((NS + 1) * sizeof(double));
  for (int64_t k = 0; k < NS; ++k) sc[k] = sr[k] = 1.0;
  co->hmm_fb(ocl, dc, bt, Lc, ac, sc);
  ro->hmm_fb(NULL, dr, bt, Lr, ar, sr);
  double wl = 0, wg = 0, wst = 0;
  for (int32_t u = 0; u < B; ++u) { double e = relerr(Lc[u], Lr[u]); if (!(e <= wl)) wl = e; }
  for (int64_t i = 0; i < N; ++i) { double e = fabs((double)ac[i] - ar[i]); if (!(e <= wg)) wg = e; }
  for (int64_t k = 0; k < NS; ++k) { double e = fabs(sc[k] - sr[k]) / (1e-8 * fabs(sr[k]) + 1e-10); if (!(e <= wst)) wst = e; }
  GH_TEST_OK(wl <= 1e-9, "%s: fb log P (max rel err %.3g; %d utts without a path)", name, wl, ninf / 2);
  GH_TEST_OK(wg <= 1e-6, "%s: fb gamma, %lld values (max abs err %.3g)", name, (long long)N, wg);
  GH_TEST_OK(wst <= 1, "%s: fb stats, %lld values added to 1.0 (max err/tol %.3g)", name, (long long)NS, wst);
  for (int64_t k = 0; k < NS; ++k) sc[k] = 0;
  co->hmm_fb(ocl, dc, bt, Lc, NULL, sc);
  wst = 0;
  for (int64_t k = 0; k < NS; ++k) { double e = fabs(sc[k] + 1.0 - sr[k]) / (1e-8 * fabs(sr[k]) + 1e-10); if (!(e <= wst)) wst = e; }
  GH_TEST_OK(wst <= 1, "%s: fb stats without gamma (max err/tol %.3g)", name, wst);
  check_fb_pairs(co, ocl, dc, name, graphs, NS, bt, ac); /* hmm-graphs.h */
  co->hmm_free(ocl, dc);
  ro->hmm_free(NULL, dr);
  free(soff); free(Lc); free(Lr); free(ac); free(ar); free(pc); free(pr); free(sc); free(sr);
}

static void test_hmm(gh_backend *ocl) {
  GH_TEST_OK(gh_backend_hmm_ops(ocl) == ocl->ops->hmm && gh_backend_supports(ocl, GH_CAP_HMM), "the opencl backend has its own HMM kernels");
  const int32_t P = 60;
  enum { NG = 8, B = 48 };
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
  int64_t off[B + 1];
  int32_t gi[B];
  off[0] = 0;
  for (int32_t u = 0; u < B; ++u) {
    int64_t T = u < 4 ? u : u < 40 ? 2 + (int64_t)(urand() * 80) : u < 46 ? 300 : u == 46 ? 20000 : 12000;
    if (u == 20) T = 0;
    off[u + 1] = off[u] + T;
    gi[u] = u % NG;
  }
  gi[46] = 4; gi[47] = 2;   /* 20,000 frames on the word loop, 12,000 on left-to-right */
  float *ll = random_ll(off[B], P, 0.002);
  gh_hmm_batch bt = {B, P, ll, off, gi};
  compare_hmm(ocl, "mixed batch", graphs, NG, &bt);
  int64_t off2[4] = {0, 1, 250, 700};
  gh_hmm_batch b2 = {3, P, ll, off2, NULL};
  compare_hmm(ocl, "graph NULL (word loop)", graphs + 4, 1, &b2);
  tgraph big;
  tg_wordloop(&big, 500, 5, P);
  const gh_hmm_graph *bg[2] = {&big.g, &tg[3].g};
  int64_t off3[4] = {0, 120, 400, 430};
  int32_t g3[3] = {0, 1, 0};
  gh_hmm_batch b3 = {3, P, ll, off3, g3};
  compare_hmm(ocl, "2501-state word loop", bg, 2, &b3);
  tg_free(&big);
  free(ll);
  for (int k = 0; k < NG; ++k) tg_free(&tg[k]);
}

/* The time-parallel forward, Viterbi and forward-backward (opencl-hmm.c
 * tp_run, hmm.cl gh_tp_*: 1-8 utterances of >= 1024 frames on graphs of
 * <= 64 states, or any length with GH_OPENCL_HMM=timepar) against the CPU
 * reference, through compare_hmm (the forward without alpha, Viterbi and fb
 * take the path; the forward with alpha, and the scaled one, the
 * sequential kernels), and the number of utterances the path took: one utterance of 2,000 frames (ergodic 12 states), three
 * of 1,100-1,500 on left-to-right 37, ergodic 12 and a 41-state word loop,
 * one with no path (frame 900 all -inf), and, forced, lengths 1, 2, 65 and
 * 130 on ergodic 12 and 64 states (0-3 chunks of 64 frames). */
long long gh_ocl_hmm_timepar_utts(void); /* kernels/opencl/opencl-hmm.c */
static void tp_case(gh_backend *ocl, const char *name, const gh_hmm_graph *const *graphs, int32_t ng,
                    const gh_hmm_batch *bt) {
  const long long n0 = gh_ocl_hmm_timepar_utts();
  compare_hmm(ocl, name, graphs, ng, bt);
  const long long n = gh_ocl_hmm_timepar_utts() - n0;
  GH_TEST_OK(n == 8LL * bt->num_utts, "%s: %lld utterance calls by the time-parallel path (expected %lld: forward "
             "without alpha, Viterbi, forward-backward twice, then fb_pairs and forward-backward for each of two "
             "min_post)", name, n, 8LL * bt->num_utts);
}

static void test_hmm_timepar(gh_backend *ocl) {
  const int32_t P = 70;
  tgraph e12, lr37, wl41, e64;
  tg_ergodic(&e12, 12, P);
  tg_lr(&lr37, 37, P, 1, 0);
  tg_wordloop(&wl41, 8, 5, P);
  tg_ergodic(&e64, 64, P);
  float *ll = random_ll(4000, P, 0.002);
  const gh_hmm_graph *g3[3] = {&lr37.g, &e12.g, &wl41.g};
  int64_t off1[2] = {0, 2000};
  gh_hmm_batch b1 = {1, P, ll, off1, NULL};
  tp_case(ocl, "time-parallel: ergodic 12, 2000 frames", g3 + 1, 1, &b1);
  int64_t off3[4] = {0, 1100, 2600, 3900};
  int32_t gi3[3] = {0, 1, 2};
  gh_hmm_batch b3 = {3, P, ll, off3, gi3};
  tp_case(ocl, "time-parallel: 3 utts on left-to-right 37, ergodic 12, word loop 41", g3, 3, &b3);
  float *ln = malloc(2000 * P * sizeof(float));
  memcpy(ln, ll, 2000 * P * sizeof(float));
  for (int32_t j = 0; j < P; ++j) ln[900 * P + j] = -INFINITY;
  gh_hmm_batch bn = {1, P, ln, off1, NULL};
  tp_case(ocl, "time-parallel: ergodic 12, no path", g3 + 1, 1, &bn);
  setenv("GH_OPENCL_HMM", "timepar", 1);
  int64_t offf[5] = {0, 1, 3, 68, 198};
  gh_hmm_batch bf = {4, P, ll, offf, NULL};
  tp_case(ocl, "time-parallel, forced: ergodic 12, lengths 1, 2, 65, 130", g3 + 1, 1, &bf);
  const gh_hmm_graph *ge64 = &e64.g;
  tp_case(ocl, "time-parallel, forced: ergodic 64, lengths 1, 2, 65, 130", &ge64, 1, &bf);
  unsetenv("GH_OPENCL_HMM");
  free(ln);
  free(ll);
  tg_free(&e12); tg_free(&lr37); tg_free(&wl41); tg_free(&e64);
}

/* Speed lines ("# bench ...", no assertion on speed) when GH_OPENCL_BENCH=1
 * (test/run-gpu.sh sets it): the HMM batches of test_hmm_cuda's bench, end
 * to end (loglike upload, kernels, downloads) on OpenCL vs the CPU
 * reference on one core (on the first ncpu utterances). */
static void bench_hmm_case(gh_backend *ocl, const char *name, const gh_hmm_graph *const *graphs, int32_t ng,
                           const gh_hmm_batch *bt, int32_t ncpu) {
  const gh_ops_hmm *co = gh_backend_hmm_ops(ocl), *ro = &gh_cpu_ref_hmm;
  int32_t B = bt->num_utts;
  int64_t F = bt->frame_off[B], *soff = malloc((B + 1) * sizeof(int64_t));
  gh_hmm_batch_state_off(bt, graphs, soff);
  double *L = malloc(B * sizeof(double));
  int32_t *path = malloc((F + 1) * sizeof(int32_t));
  float *gamma = malloc((soff[B] + 1) * sizeof(float));
  double *stats = calloc(gh_hmm_stats_offset(graphs, ng) + 1, sizeof(double));
  gh_dev_hmm *dc = co->hmm_upload(ocl, graphs, ng), *dr = ro->hmm_upload(NULL, graphs, ng);
  gh_hmm_batch sub = *bt;
  sub.num_utts = ncpu;
  const char *opn[3] = {"forward", "viterbi", "fb (gamma+stats)"};
  for (int op = 0; op < 3; ++op) {
    double t[2];
    for (int dev = 0; dev < 2; ++dev) {
      gh_backend *b = dev ? NULL : ocl;
      const gh_ops_hmm *o = dev ? ro : co;
      gh_dev_hmm *d = dev ? dr : dc;
      const gh_hmm_batch *x = dev ? &sub : bt;
      for (int rep = dev; rep < 2; ++rep) { /* OpenCL: one warm-up call */
        double t0 = gh_seconds();
        if (op == 0) o->hmm_forward(b, d, x, 0, L, NULL);
        else if (op == 1) o->hmm_viterbi(b, d, x, path, L);
        else o->hmm_fb(b, d, x, L, gamma, stats);
        t[dev] = gh_seconds() - t0;
      }
    }
    double fc = (double)bt->frame_off[ncpu];
    printf("# bench %s, %s: opencl %.1f ms = %.3g frames/s end to end; cpu (1 core, %d utts) %.3g frames/s\n",
           name, opn[op], 1e3 * t[0], F / t[0], ncpu, fc / t[1]);
  }
  co->hmm_free(ocl, dc);
  ro->hmm_free(NULL, dr);
  free(soff); free(L); free(path); free(gamma); free(stats);
}

static void bench_hmm(gh_backend *ocl) {
  const int32_t P = 150;
  enum { NG = 8, B = 1000 };
  tgraph tg[NG];
  const gh_hmm_graph *graphs[NG];
  for (int k = 0; k < NG; ++k) { tg_lr(&tg[k], 30 + 17 * k, P, 1, 0); graphs[k] = &tg[k].g; }
  int64_t *off = malloc((B + 1) * sizeof(int64_t));
  int32_t *gi = malloc(B * sizeof(int32_t));
  off[0] = 0;
  for (int32_t u = 0; u < B; ++u) { off[u + 1] = off[u] + 200 + (int64_t)(urand() * 201); gi[u] = (int32_t)(urand() * NG) % NG; }
  float *ll = random_ll(off[B], P, 0);
  gh_hmm_batch bt = {B, P, ll, off, gi};
  bench_hmm_case(ocl, "1000 utts x ~300 frames, left-to-right 30-149 states", graphs, NG, &bt, 100);
  free(ll); free(off); free(gi);
  tgraph wl;
  tg_wordloop(&wl, 40, 5, P);
  const gh_hmm_graph *wg[1] = {&wl.g};
  int64_t off1[2] = {0, 10000};
  float *ll1 = random_ll(10000, P, 0);
  gh_hmm_batch b1 = {1, P, ll1, off1, NULL};
  bench_hmm_case(ocl, "1 utt x 10000 frames, 201-state word loop", wg, 1, &b1, 1);
  free(ll1);
  tg_free(&wl);
  for (int k = 0; k < NG; ++k) tg_free(&tg[k]);
}

/* ---------------- program cache and device errors ---------------- */

/* The one cache entry in dir (path into buf); returns its size or -1. */
static long cache_entry(const char *dir, char *buf, size_t n) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "ls %s/gmmhmm/opencl-*.bin 2>/dev/null", dir);
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  long size = -1;
  if (fgets(buf, (int)n, p)) {
    buf[strcspn(buf, "\n")] = 0;
    struct stat st;
    if (stat(buf, &st) == 0) size = (long)st.st_size;
  }
  pclose(p);
  return size;
}

static void test_cache(gh_backend *cpu) {
  char dir[] = "/tmp/gh-opencl-cache-XXXXXX", path[512] = "";
  if (!mkdtemp(dir)) { GH_TEST_OK(0, "mkdtemp"); return; }
  const char *old = getenv("XDG_CACHE_HOME");
  char *saved = old ? gh_strdup(old) : NULL;
  setenv("XDG_CACHE_HOME", dir, 1);
  gh_backend *b = gh_backend_opencl_new(NULL, 0);
  long size = cache_entry(dir, path, sizeof path);
  GH_TEST_OK(b && size > 0, "program cache: a fresh cache folder gets an entry (%ld bytes)", size);
  gh_backend_free(b);
  /* corrupt the entry: same size, garbage in the middle */
  FILE *f = fopen(path, "r+b");
  if (f) { fseek(f, size / 2, SEEK_SET); for (int i = 0; i < 64; ++i) fputc(0x5a, f); fclose(f); }
  b = gh_backend_opencl_new(NULL, 0);
  problem pb;
  make_problem(&pb, 7, 5, 1, 4, 2, 20, 0);
  int ok = 0;
  if (b) {
    float *a = loglikes(b, &pb), *r = loglikes(cpu, &pb);
    ok = 1;
    for (int i = 0; i < 20 * 7; ++i) ok &= fabs(a[i] - r[i]) <= 1e-4 * (1 + fabs(r[i]));
    free(a); free(r);
  }
  GH_TEST_OK(ok, "program cache: a corrupt entry is ignored, the kernels rebuilt and correct");
  gh_backend_free(b);
  /* the rewritten entry must load (no garbage left): checksum in the header */
  char path2[512] = "";
  long size2 = cache_entry(dir, path2, sizeof path2);
  FILE *g = fopen(path2, "rb");
  int differs = 0;
  if (g) { fseek(g, size / 2, SEEK_SET); for (int i = 0; i < 64; ++i) differs |= fgetc(g) != 0x5a; fclose(g); }
  GH_TEST_OK(size2 > 0 && differs, "program cache: the corrupt entry was rewritten (%ld bytes)", size2);
  free_problem(&pb);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) gh_warn("could not remove %s", dir);
  if (saved) { setenv("XDG_CACHE_HOME", saved, 1); free(saved); } else unsetenv("XDG_CACHE_HOME");
}

static void test_errors(void) {
  gh_backend *b = gh_backend_opencl_new("99:0", 0);
  GH_TEST_OK(!b && strstr(gh_last_error(), "platform 99"), "opencl:99:0 -> NULL, '%s'", gh_last_error());
  b = gh_backend_opencl_new("0:99", 0);
  GH_TEST_OK(!b && strstr(gh_last_error(), "no device 99"), "opencl:0:99 -> NULL, '%s'", gh_last_error());
  b = gh_backend_opencl_new("zero", 0);
  GH_TEST_OK(!b && strstr(gh_last_error(), "expected P:D"), "opencl:zero -> NULL, '%s'", gh_last_error());
  if (gh_cuda_device_count() <= 0 && gh_opencl_gpu_count() <= 0) {
    gh_backend *au = gh_backend_create("auto");
    GH_TEST_OK(!strcmp(au->ops->name, "cpu"), "auto without CUDA and OpenCL GPUs -> %s (never a CPU OpenCL device)",
               au->device_name);
    gh_backend_free(au);
  }
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  setenv("GH_OPENCL_CHUNK_MB", "64", 1); /* 16 M-float chunks, so the chunked cases chunk */
  gh_backend *ocl = gh_backend_opencl_new(NULL, 0);
  if (!ocl) {
    printf("ok 1 - # SKIP no OpenCL device (%s)\n", gh_last_error());
    return 0;
  }
  gh_backend *cpu = gh_backend_cpu_new();
  printf("# device: %s\n", ocl->device_name);
  test_errors();
  test_gmm(ocl, cpu, "opencl");
  test_chunks(ocl, cpu);
  test_estep_gemm(ocl, cpu, "opencl");
#ifdef GH_HAVE_CLBLAST
  /* the built-in SGEMM as well (the GPU machine has no CLBlast) */
  setenv("GH_OPENCL_GEMM", "own", 1);
  gh_backend *own = gh_backend_opencl_new(NULL, 0);
  unsetenv("GH_OPENCL_GEMM");
  test_gmm(own, cpu, "opencl (own SGEMM)");
  test_estep_gemm(own, cpu, "opencl (own SGEMM)");
  gh_backend_free(own);
#endif
  test_hmm(ocl);
  test_hmm_timepar(ocl);
  test_cache(cpu);
  const char *bench = getenv("GH_OPENCL_BENCH");
  if (bench && !strcmp(bench, "1")) bench_hmm(ocl);
  gh_backend_free(ocl);
  gh_backend_free(cpu);
  return gh_test_done();
}
