/* test_kernels.c -- the compute backends (kernels/backend.h) against an
 * independent float64 reference.
 *
 * Random models (diagonal, full, and sets mixing both; a variable number of
 * Gaussians per pdf) are built here from moments in double: covariance
 * Sigma = A A'/D + diag(u), Cholesky L, inverse P, and Kaldi's natural
 * parameters (b = P mu, gconst = log w - 0.5 (D log 2pi + log det Sigma +
 * mu' P mu)) rounded to float as a model file stores them.  The reference
 * log-likelihood is computed from the moments, not the natural parameters:
 *   log N(x; mu, Sigma) + log w = log w - 0.5 (D log 2pi + log det Sigma
 *                                  + |L^-1 (x - mu)|^2),
 * log-sum-exp over the pdf's Gaussians.  The E-step reference is the same
 * in double: gamma = w softmax, occupancy, sum gamma x, sum gamma x^2 or
 * gamma x x' (packed).
 *
 * Tolerances: loglikes |got - ref| <= 1e-4 (1 + |ref|); statistics
 * |got - ref| <= 1e-4 max(1, max |ref| of that statistic array); total
 * log-likelihood relative 1e-5.  (The only approximation is float32 model
 * parameters and, on the GPU, float32 arithmetic.)
 *
 * The CPU backend is always tested; the CUDA backend only when
 * gh_cuda_device_count() > 0 (else "ok N - # SKIP no GPU").
 *
 * The device M-step (backend op mstep, CUDA) is checked against the host
 * M-step (lib/gmm/gmm-est.c gh_gmm_set_update, double) from the same fetched
 * accumulators: every parameter within 1e-5 (1 + |ref|) (float rounding of
 * double results computed in another order), the same counts and
 * auxiliary-function change (1e-6 relative), the next E-step on the
 * updated device model equal to one on the uploaded host model, two runs
 * bit-identical, and a declined M-step (a Gaussian to remove) leaving the
 * model unchanged.  Eigenvalue floors (Jacobi on the device; constant
 * dimensions and max-condition floors at D = 13, 16, 39, 40, 64, 100) and
 * --rel-variance-floor are checked the same way, with the host M-step
 * required to have floored something (same tolerance: the floored
 * covariances differ from LAPACK's by rounding, ~1e-13 relative, far
 * below the float parameters' 6e-8).
 *
 * The k-means distance ops (backend.h kmeans_*: CPU, CUDA, OpenCL) must
 * give the bits of the plain loop, and gmm-init on a device the bytes of
 * gmm-init without one.
 *
 * "test_kernels mstep" runs only the M-step and k-means checks.
 */
#include "registry/registry.h"
#include "base/gh-base.h"
#include "gh-test.h"
#include "gemm-forms.h"
#include "gmm/gmm-est.h"
#include "gmm/gmm-init.h"

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdlib.h>
#include <string.h>

/* ---------- random numbers ---------- */
static uint64_t rng_state = 88172645463325252ULL;
/* Uniform in (0, 1) (xorshift64, fixed seed: runs are reproducible). */
static double urand(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return ((rng_state >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
/* Standard normal (Box-Muller). */
static double nrand(void) { return sqrt(-2.0 * log(urand())) * cos(2 * M_PI * urand()); }

/* ---------- reference model (moments, double) ---------- */
typedef struct {
  int G, D, full;
  double *w;      /* [G] */
  double *mu;     /* [G x D] */
  double *L;      /* [G x D x D] Cholesky factor of Sigma (lower) */
  double *logdet; /* [G] */
} ref_gmm;

/* Lower Cholesky factor L [D x D] of the SPD matrix A [D x D] (row-major). */
static void cholesky(const double *A, double *L, int D) {
  memset(L, 0, sizeof(double) * D * D);
  for (int i = 0; i < D; ++i)
    for (int j = 0; j <= i; ++j) {
      double s = A[i * D + j];
      for (int k = 0; k < j; ++k) s -= L[i * D + k] * L[j * D + k];
      L[i * D + j] = i == j ? sqrt(s) : s / L[j * D + j];
    }
}

/* Offset added to every mean (dimension 0 fully, the others a fifth of it):
 * an MFCC-like c0 far from 0, where expanded-feature (GEMM) arithmetic
 * without centring loses digits to cancellation. */
static double g_mean_offset = 0.0;

/* Builds pdf gm (natural parameters, float) and its reference r. */
static void make_gmm(gh_gmm *gm, ref_gmm *r, int G, int D, int full, double mean_scale) {
  gh_gmm_init(gm, full ? GH_COV_FULL : GH_COV_DIAG, G, D);
  r->G = G; r->D = D; r->full = full;
  r->w = calloc(G, sizeof(double));
  r->mu = calloc((size_t)G * D, sizeof(double));
  r->L = calloc((size_t)G * D * D, sizeof(double));
  r->logdet = calloc(G, sizeof(double));
  double wsum = 0;
  for (int g = 0; g < G; ++g) wsum += (r->w[g] = 0.2 + urand());
  double *S = calloc((size_t)D * D, sizeof(double)), *Pm = calloc((size_t)D * D, sizeof(double));
  double *A = calloc((size_t)D * D, sizeof(double)), *Linv = calloc((size_t)D * D, sizeof(double));
  for (int g = 0; g < G; ++g) {
    r->w[g] /= wsum;
    double *mu = r->mu + (size_t)g * D, *L = r->L + (size_t)g * D * D;
    for (int i = 0; i < D; ++i) mu[i] = mean_scale * nrand() + g_mean_offset * (i == 0 ? 1.0 : 0.2);
    memset(S, 0, sizeof(double) * D * D);
    if (full) {
      for (int i = 0; i < D * D; ++i) A[i] = nrand();
      for (int i = 0; i < D; ++i)
        for (int j = 0; j < D; ++j) {
          double s = 0;
          for (int k = 0; k < D; ++k) s += A[i * D + k] * A[j * D + k];
          S[i * D + j] = 0.5 * s / D;
        }
    }
    for (int i = 0; i < D; ++i) S[i * D + i] += 0.3 + 1.5 * urand();
    cholesky(S, L, D);
    r->logdet[g] = 0;
    for (int i = 0; i < D; ++i) r->logdet[g] += 2 * log(L[i * D + i]);
    /* Linv (lower), P = Linv' Linv */
    memset(Linv, 0, sizeof(double) * D * D);
    for (int c = 0; c < D; ++c)
      for (int i = c; i < D; ++i) {
        double s = i == c ? 1.0 : 0.0;
        for (int k = c; k < i; ++k) s -= L[i * D + k] * Linv[k * D + c];
        Linv[i * D + c] = s / L[i * D + i];
      }
    for (int i = 0; i < D; ++i)
      for (int j = 0; j < D; ++j) {
        double s = 0;
        for (int k = 0; k < D; ++k) s += Linv[k * D + i] * Linv[k * D + j];
        Pm[i * D + j] = s;
      }
    double mPm = 0;
    for (int i = 0; i < D; ++i) {
      double b = 0;
      for (int j = 0; j < D; ++j) b += Pm[i * D + j] * mu[j];
      gm->means_invvars[(size_t)g * D + i] = (float)b;
      mPm += b * mu[i];
    }
    if (full) {
      for (int i = 0; i < D; ++i)
        for (int j = 0; j <= i; ++j)
          gm->inv_vars[(size_t)g * gh_packed_size(D) + gh_packed_index(i, j)] = (float)Pm[i * D + j];
    } else {
      for (int i = 0; i < D; ++i) gm->inv_vars[(size_t)g * D + i] = (float)Pm[i * D + i];
    }
    gm->weights[g] = (float)r->w[g];
    gm->gconsts[g] = (float)(log(r->w[g]) - 0.5 * (D * log(2 * M_PI) + r->logdet[g] + mPm));
  }
  free(S); free(Pm); free(A); free(Linv);
}

/* Frees the arrays of reference model r. */
static void ref_free(ref_gmm *r) { free(r->w); free(r->mu); free(r->L); free(r->logdet); }

/* Per-Gaussian reference ll[G]; returns the log-sum-exp. */
static double ref_loglike(const ref_gmm *r, const float *x, double *ll) {
  const int D = r->D;
  double z[512], mx = -INFINITY;
  for (int g = 0; g < r->G; ++g) {
    const double *mu = r->mu + (size_t)g * D, *L = r->L + (size_t)g * D * D;
    double q = 0;
    for (int i = 0; i < D; ++i) {
      double s = x[i] - mu[i];
      for (int k = 0; k < i; ++k) s -= L[i * D + k] * z[k];
      z[i] = s / L[i * D + i];
      q += z[i] * z[i];
    }
    ll[g] = log(r->w[g]) - 0.5 * (D * log(2 * M_PI) + r->logdet[g] + q);
    if (ll[g] > mx) mx = ll[g];
  }
  double s = 0;
  for (int g = 0; g < r->G; ++g) s += exp(ll[g] - mx);
  return mx + log(s);
}

/* ---------- test problems ---------- */
typedef struct {
  const char *name;
  gh_gmm_set set;
  ref_gmm *ref;
  int T;
  float *X;
} problem;

/* Random problem pb: P pdfs of dimension D, T frames.  type: 0 diag, 1 full,
 * 2 mixed (pdf p full when p % 3 == 1).  Gaussians per pdf: uniform in
 * [gmin, gmax]; bimodal != 0 instead gives gmin to pdfs with (p / 3) even and
 * gmax to the others, and 17 to the last pdf (one more than the CUDA
 * backend's diagonal segment size), so a set mixes small pdfs with pdfs the
 * CUDA backend splits into Gaussian segments. */
static void make_problem(problem *pb, const char *name, int P, int D, int gmin, int gmax, int type,
                         int T, int bimodal) {
  pb->name = name;
  memset(&pb->set, 0, sizeof pb->set);
  pb->set.dim = D;
  pb->set.num_pdfs = P;
  pb->set.pdfs = calloc(P, sizeof(gh_gmm));
  pb->set.form = GH_SET_AM;
  pb->ref = calloc(P, sizeof(ref_gmm));
  for (int p = 0; p < P; ++p) {
    int G = gmin + (int)(urand() * (gmax - gmin + 1));
    if (G > gmax) G = gmax;
    if (bimodal) G = p == P - 1 ? 17 : (p / 3) % 2 == 0 ? gmin : gmax;
    int full = type == 2 ? (p % 3 == 1) : type;
    make_gmm(&pb->set.pdfs[p], &pb->ref[p], G, D, full, 1.5);
  }
  pb->T = T;
  pb->X = malloc(sizeof(float) * T * D);
  for (int t = 0; t < T; ++t) {
    /* near a random Gaussian of a random pdf, sometimes far away */
    const ref_gmm *r = &pb->ref[(int)(urand() * P) % P];
    int g = (int)(urand() * r->G) % r->G;
    double scale = t % 10 == 0 ? 4.0 : 1.0;
    for (int i = 0; i < D; ++i) pb->X[(size_t)t * D + i] = (float)(r->mu[(size_t)g * D + i] + scale * nrand());
  }
}

/* Frees problem pb (model, references, frames). */
static void free_problem(problem *pb) {
  for (int p = 0; p < pb->set.num_pdfs; ++p) ref_free(&pb->ref[p]);
  free(pb->ref);
  gh_gmm_set_free(&pb->set);
  free(pb->X);
}

/* Max of |got - ref| / (1 + |ref|) over the [T x P] matrix. */
static double check_loglikes(gh_backend *b, problem *pb, float *out_keep) {
  const int P = pb->set.num_pdfs, T = pb->T, D = pb->set.dim;
  float *out = malloc(sizeof(float) * (size_t)T * P);
  gh_dev_model *m = b->ops->gmm->model_upload(b, &pb->set);
  b->ops->gmm->loglikes(b, m, pb->X, T, out);
  b->ops->gmm->model_free(b, m);
  double worst = 0, ll[4096];
  for (int t = 0; t < T; ++t)
    for (int p = 0; p < P; ++p) {
      double ref = ref_loglike(&pb->ref[p], pb->X + (size_t)t * D, ll);
      double e = fabs(out[(size_t)t * P + p] - ref) / (1 + fabs(ref));
      if (!(e <= worst)) worst = e; /* NaN propagates as failure */
    }
  if (out_keep) memcpy(out_keep, out, sizeof(float) * (size_t)T * P);
  free(out);
  return worst;
}

/* E-step on npairs random pairs; returns worst error over the statistics
 * (scaled as documented at the top) and the total's relative error. */
static void check_estep(gh_backend *b, problem *pb, int64_t npairs, double *worst_stat,
                        double *tot_err) {
  const int P = pb->set.num_pdfs, T = pb->T, D = pb->set.dim;
  gh_frame_pdf *pairs = malloc(sizeof(gh_frame_pdf) * npairs);
  for (int64_t k = 0; k < npairs; ++k) {
    pairs[k].frame = (int)(urand() * T) % T;
    pairs[k].pdf = (int)(urand() * P) % P;
    pairs[k].weight = k % 7 == 0 ? 1.0f : (float)urand();
  }
  gh_accs_set accs;
  gh_accs_init(&accs, &pb->set);
  gh_dev_model *m = b->ops->gmm->model_upload(b, &pb->set);
  b->ops->gmm->acc_zero(b, m);
  /* two calls, to check that accumulators add up across calls */
  int64_t half = npairs / 2;
  gh_dev_data *d1 = b->ops->gmm->data_upload(b, pb->X, T, D, pairs, half);
  gh_dev_data *d2 = b->ops->gmm->data_upload(b, pb->X, T, D, pairs + half, npairs - half);
  double tot = b->ops->gmm->accumulate(b, m, d1);
  tot += b->ops->gmm->accumulate(b, m, d2);
  b->ops->gmm->data_free(b, d1);
  b->ops->gmm->data_free(b, d2);
  b->ops->gmm->acc_fetch(b, m, &accs);
  b->ops->gmm->model_free(b, m);

  /* reference */
  double rtot = 0, ll[4096];
  double **occ = calloc(P, sizeof(double *)), **mean = calloc(P, sizeof(double *)),
         **var = calloc(P, sizeof(double *));
  for (int p = 0; p < P; ++p) {
    const ref_gmm *r = &pb->ref[p];
    int64_t S = r->full ? gh_packed_size(D) : D;
    occ[p] = calloc(r->G, sizeof(double));
    mean[p] = calloc((size_t)r->G * D, sizeof(double));
    var[p] = calloc((size_t)r->G * S, sizeof(double));
  }
  for (int64_t k = 0; k < npairs; ++k) {
    const ref_gmm *r = &pb->ref[pairs[k].pdf];
    const float *x = pb->X + (size_t)pairs[k].frame * D;
    double lse = ref_loglike(r, x, ll);
    rtot += pairs[k].weight * lse;
    int64_t S = r->full ? gh_packed_size(D) : D;
    for (int g = 0; g < r->G; ++g) {
      double gm = pairs[k].weight * exp(ll[g] - lse);
      occ[pairs[k].pdf][g] += gm;
      for (int i = 0; i < D; ++i) {
        mean[pairs[k].pdf][(size_t)g * D + i] += gm * x[i];
        if (r->full)
          for (int j = 0; j <= i; ++j) var[pairs[k].pdf][(size_t)g * S + gh_packed_index(i, j)] += gm * x[i] * x[j];
        else
          var[pairs[k].pdf][(size_t)g * S + i] += gm * x[i] * x[i];
      }
    }
  }
  double worst = 0;
  for (int p = 0; p < P; ++p) {
    const ref_gmm *r = &pb->ref[p];
    int64_t S = r->full ? gh_packed_size(D) : D;
    const gh_gmm_accs *a = &accs.pdfs[p];
    struct { const double *got, *ref; int64_t n; } arr[3] = {
        {a->occupancy, occ[p], r->G}, {a->mean_accs, mean[p], (int64_t)r->G * D},
        {a->var_accs, var[p], (int64_t)r->G * S}};
    for (int k = 0; k < 3; ++k) {
      double scale = 1;
      for (int64_t i = 0; i < arr[k].n; ++i) if (fabs(arr[k].ref[i]) > scale) scale = fabs(arr[k].ref[i]);
      for (int64_t i = 0; i < arr[k].n; ++i) {
        double e = fabs(arr[k].got[i] - arr[k].ref[i]) / scale;
        if (!(e <= worst)) worst = e;
      }
    }
    free(occ[p]); free(mean[p]); free(var[p]);
  }
  free(occ); free(mean); free(var);
  *worst_stat = worst;
  *tot_err = fabs(tot - rtot) / (1 + fabs(rtot));
  gh_accs_free(&accs);
  free(pairs);
}

/* All loglike and E-step cases on backend b (bname for the messages):
 * prints one TAP line per check (tolerances at the top of the file). */
static void run_backend(gh_backend *b, const char *bname) {
  struct { const char *name; int P, D, gmin, gmax, type, T; int64_t npairs; int bimodal; } cases[] = {
      {"diag P=150 D=13 G=1..9", 150, 13, 1, 9, 0, 40, 3000, 0},
      {"full P=70 D=39 G=1..6", 70, 39, 1, 6, 1, 24, 1500, 0},
      {"mixed P=90 D=20 G=1..12", 90, 20, 1, 12, 2, 33, 2000, 0},
      {"full P=3 D=128 G=1..3", 3, 128, 1, 3, 1, 17, 100, 0},
      {"global full P=1 D=5 G=40 (G>32, >2048 pairs)", 1, 5, 40, 40, 1, 300, 5000, 0},
      {"global diag P=1 D=1 G=3", 1, 1, 3, 3, 0, 50, 200, 0},
      /* few pdfs, many Gaussians: the CUDA backend splits them into
       * segments and log-adds the segments (k_combine) */
      {"UBM full P=1 D=24 G=512", 1, 24, 512, 512, 1, 53, 120, 0},
      {"UBM diag P=1 D=40 G=1024", 1, 40, 1024, 1024, 0, 70, 150, 0},
      {"mixed G=3/300 (+17) P=13 D=20", 13, 20, 3, 300, 2, 37, 600, 1},
      /* many pairs per pdf: the CUDA backend's GEMM E-step under auto */
      {"few pdfs full P=3 D=19 G=16, 9000 pairs", 3, 19, 16, 16, 1, 3000, 9000, 0},
      {"global diag P=1 D=40 G=128, 4000 pairs", 1, 40, 128, 128, 0, 4000, 4000, 0},
      {"offset 60 (MFCC-like c0) full P=2 D=13 G=8", 2, 13, 8, 8, 1, 2500, 5000, 0},
      /* more Gaussians than one CPU scoring block (2048), more frames than
       * one chunk (256): the CPU backend's blocks of pdfs */
      {"diag P=400 D=13 G=8..12, 600 frames", 400, 13, 8, 12, 0, 600, 3000, 0},
      {"offset 60 (MFCC-like c0) diag P=2 D=13 G=70", 2, 13, 70, 70, 0, 2500, 5000, 0},
      /* the CUDA tensor-core kernels (cuda-tc.cu): several Gaussian tiles
       * of 64 / 128 with partial last tiles, frame counts not multiples of
       * the 128-frame / 32-frame tiles, the largest row (D=63: Ep=128),
       * many slices of the statistics */
      {"diag P=7 D=36 G=60..300, 333 frames", 7, 36, 60, 300, 0, 333, 2000, 0},
      {"global diag P=1 D=63 G=200, 3000 pairs", 1, 63, 200, 200, 0, 1500, 3000, 0},
      {"global diag P=1 D=2 G=130, 20000 pairs", 1, 2, 130, 130, 0, 4000, 20000, 0},
      /* more frames than two chunks of the CUDA backend's overlapped
       * uploads (cuda-loglikes.cu OVL_CHUNK, D a multiple of 4) */
      {"UBM diag P=1 D=40 G=64, 70000 frames", 1, 40, 64, 64, 0, 70000, 500, 0},
      /* the CUDA fused E-step's tasks of several segments per pdf (diagonal
       * pdfs of <= 32 Gaussians with more than 2048 pairs: an HMM-GMM
       * block), their partial statistics added in task order; with
       * GH_CUDA_ESTEP=fused, one pdf over several batches of 1 M pairs */
      {"HMM-GMM block diag P=80 D=13 G=8, 400000 pairs", 80, 13, 8, 8, 0, 20000, 400000, 0},
      {"offset 60 (MFCC-like c0) diag P=2 D=13 G=8, 9000 pairs", 2, 13, 8, 8, 0, 3000, 9000, 0},
      {"global diag P=1 D=13 G=8, 2500000 pairs", 1, 13, 8, 8, 0, 5000, 2500000, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    problem pb;
    g_mean_offset = !strncmp(cases[c].name, "offset", 6) ? 60.0 : 0.0;
    make_problem(&pb, cases[c].name, cases[c].P, cases[c].D, cases[c].gmin, cases[c].gmax,
                 cases[c].type, cases[c].T, cases[c].bimodal);
    g_mean_offset = 0.0;
    double e = check_loglikes(b, &pb, NULL);
    GH_TEST_OK(e <= 1e-4, "%s loglikes %s: max |err|/(1+|ref|) = %.3g", bname, pb.name, e);
    double es, et;
    check_estep(b, &pb, cases[c].npairs, &es, &et);
    /* offset cases: the float32 parameters alone cost ~5e-5 here (the CPU
     * backend's error), and the fused CUDA kernels, which do not centre,
     * reach 1.2e-4: tolerance 2e-4 */
    const double stol = !strncmp(pb.name, "offset", 6) ? 2e-4 : 1e-4;
    GH_TEST_OK(es <= stol, "%s E-step stats %s: max scaled err = %.3g (tol %g)", bname, pb.name, es, stol);
    GH_TEST_OK(et <= 1e-5, "%s E-step total loglike %s: rel err = %.3g", bname, pb.name, et);
    free_problem(&pb);
  }
}

/* TAP test driver: CPU always, CUDA when a GPU is present; exit status 0
 * iff every check passed. */
static int set_same(const gh_gmm_set *a, const gh_gmm_set *r) {
  for (int p = 0; p < r->num_pdfs; ++p) {
    const gh_gmm *x = &a->pdfs[p], *y = &r->pdfs[p];
    const int64_t G = y->num_gauss, D = y->dim, S = y->type == GH_COV_FULL ? D * (D + 1) / 2 : D;
    if (memcmp(x->weights, y->weights, 4 * G) || memcmp(x->means_invvars, y->means_invvars, 4 * G * D) ||
        memcmp(x->inv_vars, y->inv_vars, 4 * G * S))
      return 0;
    /* the device rows hold the gconst recomputed in double (gemm-forms.h),
     * which may differ from the stored float in its last bits */
    for (int64_t k = 0; k < G; ++k)
      if (!(fabs((double)x->gconsts[k] - y->gconsts[k]) <= 1e-6 * (1 + fabs((double)y->gconsts[k])))) return 0;
  }
  return 1;
}

/* The device M-step of backend b on problem pb with every frame assigned to
 * a random pdf (weight 1 or random), options eo, against the host M-step.
 * expect_decline: the device must decline (and leave the model as it was). */
static int g_mstep_floored; /* the host M-step's num_floored in the last check_mstep */
static void check_mstep(gh_backend *b, problem *pb, const gh_est_opts *eo, int expect_decline) {
  const int P = pb->set.num_pdfs, T = pb->T, D = pb->set.dim;
  gh_frame_pdf *pairs = malloc(sizeof(gh_frame_pdf) * T);
  for (int t = 0; t < T; ++t) {
    pairs[t].frame = t;
    pairs[t].pdf = P > 1 && t % 17 ? (int)(urand() * (P - 1)) % (P - 1) : 0; /* pdf P - 1: no data when P > 2 */
    pairs[t].weight = t % 5 ? 1.0f : (float)urand();
  }
  gh_dev_data *dd = b->ops->gmm->data_upload(b, pb->X, T, D, pairs, T);
  gh_gmm_set dev, host, again;
  memset(&dev, 0, sizeof dev); memset(&host, 0, sizeof host); memset(&again, 0, sizeof again);
  gh_gmm_set_copy(&dev, &pb->set);
  gh_gmm_set_copy(&host, &pb->set);
  gh_gmm_set_copy(&again, &pb->set);
  gh_dev_model *m = b->ops->gmm->model_upload(b, &pb->set);
  b->ops->gmm->acc_zero(b, m);
  b->ops->gmm->accumulate(b, m, dd);
  gh_accs_set accs;
  gh_accs_init(&accs, &pb->set);
  b->ops->gmm->acc_fetch(b, m, &accs);
  gh_est_stats sd, sh;
  memset(&sd, 0, sizeof sd); memset(&sh, 0, sizeof sh);
  int rc = b->ops->mstep->mstep(b, m, eo, &sd);
  if (rc == 1 && !expect_decline &&
      (strstr(gh_last_error(), "too large for the device M-step") ||
       strstr(gh_last_error(), "not used on CPU OpenCL devices"))) {
    /* a device with less local / shared memory than this dimension needs, or a CPU OpenCL
     * device (PoCL: no Jacobi floor pass, doc/reliability.md): the host M-step runs */
    printf("ok %d - # SKIP %s: %s\n", ++gh_t_n, pb->name, gh_last_error());
    ++gh_t_pass;
    b->ops->gmm->model_free(b, m);
    gh_accs_free(&accs);
    gh_gmm_set_free(&dev); gh_gmm_set_free(&host); gh_gmm_set_free(&again);
    b->ops->gmm->data_free(b, dd);
    free(pairs);
    return;
  }
  b->ops->mstep->model_fetch(b, m, &dev);
  if (expect_decline) {
    GH_TEST_OK(rc == 1 && set_same(&dev, &pb->set), "%s: device M-step declined (%s), model unchanged",
               pb->name, rc == 1 ? gh_last_error() : "it did not");
  } else {
    gh_gmm_set_update(&host, &accs, eo, &sh);
    g_mstep_floored = sh.num_floored;
    double err = gh_gmm_set_max_diff(&dev, &host);
    double oerr = fabs(sd.objf_change - sh.objf_change) / (1 + fabs(sh.objf_change));
    GH_TEST_OK(rc == 0 && err <= 1e-5, "%s: device M-step vs host: max param err %.3g (rc %d%s%s)", pb->name, err, rc,
               rc ? ": " : "", rc ? gh_last_error() : "");
    GH_TEST_OK(oerr <= 1e-6 && fabs(sd.count - sh.count) <= 1e-9 * sh.count &&
                   sd.num_not_updated == sh.num_not_updated && sd.num_floored == sh.num_floored &&
                   sd.num_pdfs_no_data == sh.num_pdfs_no_data,
               "%s: device M-step counts: objf change %.9g vs %.9g, not updated %d/%d, floored %d/%d, no data %d/%d",
               pb->name, sd.objf_change, sh.objf_change, sd.num_not_updated, sh.num_not_updated, sd.num_floored,
               sh.num_floored, sd.num_pdfs_no_data, sh.num_pdfs_no_data);
    /* the M-step again from the same statistics (the E-step's own atomics,
     * fused path, may order additions differently between runs): the same bits */
    uint64_t h1 = 0, h2 = 0, h3 = 0;
    const int hr1 = gh_backend_supports(b, GH_CAP_HASH) ? b->ops->hash->model_hash(b, m, &h1) : -1;
    gh_est_stats s3;
    memset(&s3, 0, sizeof s3);
    b->ops->mstep->mstep(b, m, eo, &s3);
    b->ops->mstep->model_fetch(b, m, &again);
    GH_TEST_OK(set_same(&again, &dev), "%s: device M-step twice from the same statistics: bit-identical models",
               pb->name);
    const int hr2 = gh_backend_supports(b, GH_CAP_HASH) ? b->ops->hash->model_hash(b, m, &h2) : -1;
    /* the next E-step on the device-updated model = on the uploaded host model */
    b->ops->gmm->acc_zero(b, m);
    double t1 = b->ops->gmm->accumulate(b, m, dd);
    gh_dev_model *m2 = b->ops->gmm->model_upload(b, &host);
    b->ops->gmm->acc_zero(b, m2);
    double t2 = b->ops->gmm->accumulate(b, m2, dd);
    b->ops->gmm->model_free(b, m2);
    GH_TEST_OK(fabs(t1 - t2) <= 1e-5 * (1 + fabs(t2)), "%s: E-step after the device M-step %.9g, on the host's model %.9g",
               pb->name, t1, t2);
    if (gh_backend_supports(b, GH_CAP_HASH)) {
      /* the device-side hash (distributed training's per-iteration check):
       * the same for the same bits, another after an M-step that changed them */
      gh_est_stats s4;
      memset(&s4, 0, sizeof s4);
      gh_gmm_set third;
      memset(&third, 0, sizeof third);
      gh_gmm_set_copy(&third, &pb->set);
      const int rc4 = b->ops->mstep->mstep(b, m, eo, &s4);
      b->ops->mstep->model_fetch(b, m, &third);
      const int hr3 = b->ops->hash->model_hash(b, m, &h3);
      const int changed = !set_same(&third, &dev);
      GH_TEST_OK(hr1 == 0 && hr2 == 0 && hr3 == 0 && h1 == h2 && (changed ? h3 != h1 : h3 == h1),
                 "%s: device model hash %016llx twice from the same statistics, %016llx after another M-step "
                 "(rc %d; the model %s)", pb->name, (unsigned long long)h1, (unsigned long long)h3, rc4,
                 changed ? "changed" : "did not change");
      gh_gmm_set_free(&third);
    }
  }
  b->ops->gmm->model_free(b, m);
  gh_accs_free(&accs);
  gh_gmm_set_free(&dev); gh_gmm_set_free(&host); gh_gmm_set_free(&again);
  b->ops->gmm->data_free(b, dd);
  free(pairs);
}

/* The k-means distance ops of backend b (NULL: the CPU implementation)
 * against the plain loop gmm-init ran before them (sum_d (z_d - c_d)^2 in
 * order, first minimum wins): the same bits for Lloyd's assignment (reset,
 * all centres, duplicated centres for ties, MFCC-like offsets) and for
 * k-means++'s one-centre updates; then gmm-init on b against gmm-init with
 * no backend: byte-identical models (diag and full). */
static void run_kmeans(gh_backend *b) {
  const char *bn = b ? b->ops->name : "cpu (no backend)";
  struct { int64_t N; int D, K; double offset; } cs[] = {
      {1001, 13, 100, 60.0}, {3000, 40, 300, 0.0}, {777, 1, 5, 0.0}, {2000, 64, 16, 3.0}, {64, 7, 1, 0.0}};
  for (size_t c = 0; c < sizeof cs / sizeof cs[0]; ++c) {
    const int64_t N = cs[c].N;
    const int D = cs[c].D, K = cs[c].K;
    double *Z = malloc(sizeof(double) * N * D), *C = malloc(sizeof(double) * K * D);
    for (int64_t i = 0; i < N * D; ++i) Z[i] = nrand() + (i % D == 0 ? cs[c].offset : 0.0);
    for (int k = 0; k < K; ++k) /* centres on frames; centre k = 2 duplicates centre 1 (a tie) */
      memcpy(C + (int64_t)k * D, Z + (int64_t)((k == 2 ? 1 : k) * 13 % N) * D, sizeof(double) * D);
    double *rd = malloc(sizeof(double) * N), *gd = malloc(sizeof(double) * N);
    int32_t *ra = malloc(sizeof(int32_t) * N), *ga = malloc(sizeof(int32_t) * N);
    for (int64_t i = 0; i < N; ++i)
      for (int k = 0; k < K; ++k) {
        double e = 0;
        for (int d = 0; d < D; ++d) { double t = Z[i * D + d] - C[(int64_t)k * D + d]; e += t * t; }
        if (k == 0 || e < rd[i]) { rd[i] = e; ra[i] = k; }
      }
    gh_dev_kmeans *z = gh_backend_kmeans_upload(b, Z, N, D);
    gh_backend_kmeans_nearest(b, z, C, 0, K, 1);
    gh_backend_kmeans_fetch(b, z, gd, ga);
    GH_TEST_OK(!memcmp(rd, gd, sizeof(double) * N) && !memcmp(ra, ga, sizeof(int32_t) * N),
               "%s: k-means assignment N=%lld D=%d K=%d: the plain loop's bits", bn, (long long)N, D, K);
    /* one centre at a time (k-means++), the state kept on the backend */
    for (int k = 0; k < K; ++k) gh_backend_kmeans_nearest(b, z, C + (int64_t)k * D, k, 1, k == 0);
    gh_backend_kmeans_fetch(b, z, gd, ga);
    GH_TEST_OK(!memcmp(rd, gd, sizeof(double) * N) && !memcmp(ra, ga, sizeof(int32_t) * N),
               "%s: k-means++ updates N=%lld D=%d K=%d: the plain loop's bits", bn, (long long)N, D, K);
    gh_backend_kmeans_free(b, z);
    free(Z); free(C); free(rd); free(gd); free(ra); free(ga);
  }
  /* gmm-init with the backend's own ops = without a backend (the CPU
   * implementation; the CPU backends have no ops of their own) */
  for (int full = 0; full < 2 && b && gh_backend_supports(b, GH_CAP_KMEANS); ++full) {
    const int D = 13;
    const int64_t N = 6000;
    float *X = malloc(sizeof(float) * N * D);
    for (int64_t i = 0; i < N; ++i) {
      const int cl = (int)(i % 7);
      for (int d = 0; d < D; ++d) X[i * D + d] = (float)(nrand() + 3.0 * cl * (d % 3 == 0) + (d == 0 ? 50.0 : 0.0));
    }
    gh_init_opts io;
    gh_init_opts_default(&io);
    io.num_gauss = full ? 24 : 300;
    io.cov_type = full ? GH_COV_FULL : GH_COV_DIAG;
    io.max_frames = 5000;
    gh_gmm g0, g1;
    memset(&g0, 0, sizeof g0);
    memset(&g1, 0, sizeof g1);
    gh_gmm_init_from_data(&g0, X, NULL, N, D, &io, "host");
    io.backend = b;
    gh_gmm_init_from_data(&g1, X, NULL, N, D, &io, "backend");
    const int64_t S = full ? (int64_t)D * (D + 1) / 2 : D;
    int same = g0.num_gauss == g1.num_gauss && !memcmp(g0.weights, g1.weights, 4 * g0.num_gauss) &&
               !memcmp(g0.gconsts, g1.gconsts, 4 * g0.num_gauss) &&
               !memcmp(g0.means_invvars, g1.means_invvars, 4 * g0.num_gauss * D) &&
               !memcmp(g0.inv_vars, g1.inv_vars, 4 * g0.num_gauss * S);
    GH_TEST_OK(same, "%s: gmm-init %s %d Gaussians from 5000 frames: the same model as without a backend", bn,
               full ? "full" : "diag", g0.num_gauss);
    gh_gmm_free(&g0);
    gh_gmm_free(&g1);
    free(X);
  }
}

/* The device M-step cases on backend b; with_variants: each E-step path of
 * the CUDA backend (GH_CUDA_ESTEP=gemm|fused) in turn. */
static void run_mstep_cases(gh_backend *b, int with_variants);
static void run_mstep(gh_backend *b, int with_variants) {
  /* the device M-step works on the fp32 rows; models whose fp32 form the
   * numerical contract sends to the host (doc/reliability.md) would make
   * it decline, so these problems keep the fp32 path */
  setenv("GH_GEMM_MAX_ROW_ERROR", "1e30", 1);
  run_mstep_cases(b, with_variants);
  unsetenv("GH_GEMM_MAX_ROW_ERROR");
}

static void run_mstep_cases(gh_backend *b, int with_variants) {
  gh_est_opts eo;
  struct { const char *name; int P, D, gmin, gmax, type, T; } cs[] = {
      {"mstep UBM full 1 x 64 D=40", 1, 40, 64, 64, 1, 40000},
      {"mstep UBM diag 1 x 256 D=40", 1, 40, 256, 256, 0, 40000},
      {"mstep mixed 7 pdfs x 2..9 D=13", 7, 13, 2, 9, 2, 30000},
      {"mstep full 3 x 4 D=100", 3, 100, 4, 4, 1, 20000},
  };
  const char *estep[] = {"gemm", "fused"};
  for (int v = 0; v < (with_variants ? 2 : 1); ++v) {
    if (with_variants) setenv("GH_CUDA_ESTEP", estep[v], 1);
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; ++c) {
      problem pb;
      char name[160];
      snprintf(name, sizeof name, "%s: %s%s%s%s", b->ops->name, cs[c].name, with_variants ? " (" : "",
               with_variants ? estep[v] : "", with_variants ? " E-step)" : "");
      make_problem(&pb, name, cs[c].P, cs[c].D, cs[c].gmin, cs[c].gmax, cs[c].type, cs[c].T, 0);
      gh_est_opts_default(&eo);
      eo.remove_low_count_gaussians = 0; /* low-count Gaussians kept: the not-updated path */
      check_mstep(b, &pb, &eo, 0);
      free_problem(&pb);
    }
  }
  unsetenv("GH_CUDA_ESTEP");
  /* diagonal variances floored: one dimension of the data nearly constant */
  {
    problem pb;
    make_problem(&pb, "mstep diag floor (dimension 3 constant)", 2, 20, 8, 8, 0, 20000, 0);
    for (int t = 0; t < pb.T; ++t) pb.X[(size_t)t * 20 + 3] = 0.5f + 1e-4f * (float)(t % 3);
    gh_est_opts_default(&eo);
    eo.remove_low_count_gaussians = 0;
    check_mstep(b, &pb, &eo, 0);
    free_problem(&pb);
  }
  /* --rel-variance-floor (diagonal pdfs of a mixed set): floors from each
   * pdf's data variance, computed on the device */
  {
    problem pb;
    make_problem(&pb, "mstep --rel-variance-floor=0.5 (mixed 4 pdfs, D=20)", 4, 20, 8, 8, 2, 20000, 0);
    gh_est_opts_default(&eo);
    eo.remove_low_count_gaussians = 0;
    eo.rel_variance_floor = 0.5;
    g_mstep_floored = 0;
    check_mstep(b, &pb, &eo, 0);
    GH_TEST_OK(g_mstep_floored > 0, "mstep --rel-variance-floor: the host M-step floored %d variances", g_mstep_floored);
    free_problem(&pb);
  }
  /* declined: Gaussians to remove (Kaldi's defaults, few frames) */
  {
    problem pb;
    make_problem(&pb, "mstep removal", 1, 12, 64, 64, 1, 3000, 0);
    gh_est_opts_default(&eo);
    check_mstep(b, &pb, &eo, 1);
    free_problem(&pb);
  }
  /* eigenvalues to floor, on the device (Jacobi, kernels/jacobi-eig.h):
   * a constant dimension (every Gaussian floored at min_variance), and
   * dimensions scaled down so that max-condition floors some eigenvalues
   * of most Gaussians (as on the 2 M x 40 job of bench/train.sh), at even and
   * odd D (the padded Jacobi), D = 64, and D = 100 (on CUDA 164 KB of
   * shared memory; devices with less decline, and the check is skipped) */
  struct { const char *name; int P, D, G, T, constant; double scale; } fl[] = {
      {"mstep eigenvalue floor (dimension 5 constant) D=16", 1, 16, 4, 20000, 5, 1},
      {"mstep eigenvalue floor (max-condition) UBM 1 x 64 D=40", 1, 40, 64, 40000, -1, 3e-3},
      {"mstep eigenvalue floor (max-condition) 3 x 8 D=39", 3, 39, 8, 30000, -1, 3e-3},
      {"mstep eigenvalue floor (max-condition) 1 x 16 D=64", 1, 64, 16, 30000, -1, 3e-3},
      {"mstep eigenvalue floor (dimension 0 constant) 2 x 3 D=13", 2, 13, 3, 10000, 0, 1},
      {"mstep eigenvalue floor (max-condition) 2 x 4 D=100", 2, 100, 4, 20000, -1, 3e-3},
  };
  for (size_t c = 0; c < sizeof fl / sizeof fl[0]; ++c) {
    problem pb;
    char name[160];
    snprintf(name, sizeof name, "%s: %s", b->ops->name, fl[c].name);
    make_problem(&pb, name, fl[c].P, fl[c].D, fl[c].G, fl[c].G, 1, fl[c].T, 0);
    const int D = fl[c].D;
    for (int t = 0; t < pb.T; ++t) {
      if (fl[c].constant >= 0) pb.X[(size_t)t * D + fl[c].constant] = 2.0f;
      else /* every third dimension shrunk: variance ratios ~1e-5 against the others */
        for (int d = 1; d < D; d += 3) pb.X[(size_t)t * D + d] *= (float)fl[c].scale;
    }
    gh_est_opts_default(&eo);
    eo.remove_low_count_gaussians = 0;
    g_mstep_floored = 0;
    check_mstep(b, &pb, &eo, 0);
    GH_TEST_OK(g_mstep_floored > 0 || strstr(gh_last_error(), "dimension") ||
                   strstr(gh_last_error(), "not used on CPU OpenCL devices"),
               "%s: the host M-step floored %d eigenvalues (last error: %s)", name, g_mstep_floored,
               gh_last_error());
    free_problem(&pb);
  }
}

/* backend.h data_set_pairs through gh_backend_data_pairs: accumulators of
 * resident data whose pairs were replaced equal (byte for byte) those of a
 * fresh upload of the frames with the new pairs, and differ from the old
 * pairs' (hmm-train replaces each block's pairs every iteration). */
static int accs_equal(const gh_accs_set *a, const gh_accs_set *b) {
  for (int32_t p = 0; p < a->num_pdfs; ++p) {
    const gh_gmm_accs *x = &a->pdfs[p], *y = &b->pdfs[p];
    int64_t G = x->num_gauss, D = x->dim, S = x->type == GH_COV_FULL ? D * (D + 1) / 2 : D;
    if (memcmp(x->occupancy, y->occupancy, G * sizeof(double)) || memcmp(x->mean_accs, y->mean_accs, G * D * sizeof(double)) ||
        memcmp(x->var_accs, y->var_accs, G * S * sizeof(double)))
      return 0;
  }
  return 1;
}

static void check_set_pairs(gh_backend *b, const char *bname) {
  problem pb;
  make_problem(&pb, "set_pairs", 4, 13, 1, 4, 2, 12000, 0);
  const int T = pb.T, D = pb.set.dim, P = pb.set.num_pdfs;
  gh_frame_pdf *A = malloc(sizeof(gh_frame_pdf) * 2 * T), *B = malloc(sizeof(gh_frame_pdf) * 2 * T);
  int64_t na = 0, nb = 0;
  for (int t = 0; t < T; ++t) {
    A[na++] = (gh_frame_pdf){t, (int32_t)(urand() * P) % P, 1.0f};
    int k = 1 + (t % 3 == 0);
    for (int j = 0; j < k; ++j) B[nb++] = (gh_frame_pdf){t, (int32_t)(urand() * P) % P, (float)(0.25 + 0.5 * urand())};
  }
  gh_dev_model *m = b->ops->gmm->model_upload(b, &pb.set);
  gh_accs_set a0, a1, a2;
  gh_accs_init(&a0, &pb.set);
  gh_accs_init(&a1, &pb.set);
  gh_accs_init(&a2, &pb.set);
  gh_dev_data *d = NULL, *d2 = NULL;
  gh_backend_data_pairs(b, &d, pb.X, T, D, A, na);
  b->ops->gmm->acc_zero(b, m);
  double t0 = b->ops->gmm->accumulate(b, m, d);
  b->ops->gmm->acc_fetch(b, m, &a0);
  gh_backend_data_pairs(b, &d, pb.X, T, D, B, nb); /* the frames stay, the pairs change */
  b->ops->gmm->acc_zero(b, m);
  double t1 = b->ops->gmm->accumulate(b, m, d);
  b->ops->gmm->acc_fetch(b, m, &a1);
  gh_backend_data_pairs(b, &d2, pb.X, T, D, B, nb); /* a fresh upload */
  b->ops->gmm->acc_zero(b, m);
  double t2 = b->ops->gmm->accumulate(b, m, d2);
  b->ops->gmm->acc_fetch(b, m, &a2);
  GH_TEST_OK(t1 == t2 && accs_equal(&a1, &a2),
             "%s: data_set_pairs (%s) = a fresh upload with the new pairs, byte for byte (totals %.17g, %.17g)", bname,
             gh_backend_supports(b, GH_CAP_PAIRS) ? "backend op" : "upload fallback", t1, t2);
  GH_TEST_OK(t0 != t1 && !accs_equal(&a0, &a1), "%s: the new pairs' accumulators differ from the old pairs'", bname);
  b->ops->gmm->data_free(b, d);
  b->ops->gmm->data_free(b, d2);
  b->ops->gmm->model_free(b, m);
  gh_accs_free(&a0); gh_accs_free(&a1); gh_accs_free(&a2);
  free(A); free(B);
  free_problem(&pb);
}

/* gh_pairs_sort_by_pdf: the stable counting sort by pdf of every backend's
 * E-step data, parallel over chunks of pairs: 1 and 4 threads give the
 * arrays of a plain stable sort (by pdf, then position); a bad pair dies
 * (not tested here: gh_die exits). */
static void check_pairs_sort(void) {
  const int64_t n = 400000;
  const int32_t T = 50000, P = 97;
  gh_frame_pdf *pr = malloc(sizeof(gh_frame_pdf) * n);
  for (int64_t k = 0; k < n; ++k)
    pr[k] = (gh_frame_pdf){(int32_t)(urand() * T) % T, (int32_t)(urand() * urand() * P) % P, (float)urand()};
  /* the expected arrays: for each pdf in order, its pairs in order */
  int32_t *ef = malloc(sizeof(int32_t) * n), *f1 = malloc(sizeof(int32_t) * n), *f4 = malloc(sizeof(int32_t) * n);
  float *ew = malloc(sizeof(float) * n), *w1 = malloc(sizeof(float) * n), *w4 = malloc(sizeof(float) * n);
  int64_t q = 0, *eoff = calloc(P + 1, sizeof(int64_t));
  int32_t emax = -1;
  for (int32_t p = 0; p < P; ++p) {
    eoff[p] = q;
    for (int64_t k = 0; k < n; ++k)
      if (pr[k].pdf == p) { ef[q] = pr[k].frame; ew[q] = pr[k].weight; ++q; emax = p; }
  }
  eoff[P] = q;
  int32_t m1, m4;
#ifdef _OPENMP
  const int nt = omp_get_max_threads();
  omp_set_num_threads(1);
#endif
  int64_t *o1 = gh_pairs_sort_by_pdf(pr, n, T, &m1, f1, w1);
#ifdef _OPENMP
  omp_set_num_threads(4);
#endif
  int64_t *o4 = gh_pairs_sort_by_pdf(pr, n, T, &m4, f4, w4);
#ifdef _OPENMP
  omp_set_num_threads(nt);
#endif
  const size_t no = sizeof(int64_t) * (size_t)(emax + 2);
  GH_TEST_OK(m1 == emax && m4 == emax && !memcmp(o1, eoff, no) && !memcmp(o4, eoff, no) &&
                 !memcmp(f1, ef, sizeof(int32_t) * n) && !memcmp(f4, ef, sizeof(int32_t) * n) &&
                 !memcmp(w1, ew, sizeof(float) * n) && !memcmp(w4, ew, sizeof(float) * n),
             "gh_pairs_sort_by_pdf: 400,000 pairs of %d pdfs sorted as a plain stable sort, 1 and 4 threads", emax + 1);
  int32_t m0;
  int64_t *o0 = gh_pairs_sort_by_pdf(pr, 0, T, &m0, f1, w1);
  GH_TEST_OK(m0 == -1 && o0[0] == 0, "gh_pairs_sort_by_pdf: no pairs -> max pdf -1");
  free(o0); free(o1); free(o4); free(eoff);
  free(pr); free(ef); free(f1); free(f4); free(ew); free(w1); free(w4);
}

/* gh_backend_loglikes_rows: loglikes of a row range of resident data (the
 * backend's loglikes_data, or loglikes of the host rows) = loglikes of
 * those rows from the host, bit for bit (diagonal and full pdfs, D = 13
 * and 39: rows padded to the device pitch). */
static void check_loglikes_rows(gh_backend *b, const char *bname) {
  for (int k = 0; k < 2; ++k) {
    problem pb;
    make_problem(&pb, "loglikes_rows", 6, k ? 39 : 13, 1, 5, 2, 70000, 0);
    const int T = pb.T, D = pb.set.dim, P = pb.set.num_pdfs;
    gh_frame_pdf pr = {0, 0, 1.0f};
    gh_dev_data *d = NULL;
    gh_backend_data_pairs(b, &d, pb.X, T, D, &pr, 1);
    gh_dev_model *m = b->ops->gmm->model_upload(b, &pb.set);
    const int row0 = 1234, n = T - 1234 - 77, ld = k ? P : P + 3; /* output rows padded (k = 0) or not */
    float *a = malloc(sizeof(float) * (size_t)n * ld), *r = malloc(sizeof(float) * (size_t)n * P);
    for (size_t i = 0; i < (size_t)n * ld; ++i) a[i] = 7.0f; /* the padding must stay */
    gh_backend_loglikes_rows(b, m, d, pb.X, D, row0, n, a, P, ld);
    b->ops->gmm->loglikes(b, m, pb.X + (size_t)row0 * D, n, r);
    int finite = 1, same = 1;
    for (size_t i = 0; i < (size_t)n * P; ++i) finite &= isfinite(r[i]) != 0;
    for (int t = 0; t < n; ++t) {
      same &= !memcmp(a + (size_t)t * ld, r + (size_t)t * P, sizeof(float) * P);
      for (int j = P; j < ld; ++j) same &= a[(size_t)t * ld + j] == 7.0f;
    }
    GH_TEST_OK(finite && same,
               "%s: loglikes of rows %d .. %d of resident data (%s, D = %d, output stride %d) = loglikes from the host, "
               "bit for bit", bname, row0, row0 + n - 1, gh_backend_supports(b, GH_CAP_RESIDENT) ? "loglikes_data" : "host fallback", D, ld);
    free(a); free(r);
    b->ops->gmm->model_free(b, m);
    b->ops->gmm->data_free(b, d);
    free_problem(&pb);
  }
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  /* "test_kernels mstep": only the device M-step and k-means checks (CPU,
   * CUDA, OpenCL) */
  const int only_mstep = argc > 1 && !strcmp(argv[1], "mstep");
  /* "test_kernels mstep-repeat [N [D]]": not part of the suite: the reproducer of the rare
   * OpenCL (PoCL) M-step mismatch (doc/reliability.md): one E-step, then N device M-steps from
   * the same statistics (2 pdfs x 3 full Gaussians, dimension D, dimension 0 constant, so every
   * Gaussian takes the Jacobi floor), each fetched model compared with the first, bit for bit */
  if (argc > 1 && !strcmp(argv[1], "mstep-repeat")) {
    setenv("GH_OPENCL_JACOBI", "1", 0); /* the pass under study (not used on CPU devices otherwise) */
    gh_backend *b = gh_backend_opencl_new(NULL, 0);
    if (!gh_backend_supports(b, GH_CAP_MSTEP)) { printf("# no OpenCL device with an M-step\n"); return 0; }
    setenv("GH_GEMM_MAX_ROW_ERROR", "1e30", 1);
    const int n = argc > 2 ? atoi(argv[2]) : 1000, Dd = argc > 3 ? atoi(argv[3]) : 13;
    problem pb;
    make_problem(&pb, "mstep-repeat", 2, Dd, 3, 3, 1, 10000, 0);
    for (int t = 0; t < pb.T; ++t) pb.X[(size_t)t * Dd] = 2.0f;
    gh_est_opts eo;
    gh_est_opts_default(&eo);
    eo.remove_low_count_gaussians = 0;
    gh_frame_pdf *pairs = malloc(sizeof(gh_frame_pdf) * pb.T);
    for (int t = 0; t < pb.T; ++t) pairs[t] = (gh_frame_pdf){t, t % pb.set.num_pdfs, 1.0f};
    gh_dev_data *dd = b->ops->gmm->data_upload(b, pb.X, pb.T, Dd, pairs, pb.T);
    gh_dev_model *m = b->ops->gmm->model_upload(b, &pb.set);
    b->ops->gmm->acc_zero(b, m);
    b->ops->gmm->accumulate(b, m, dd);
    gh_gmm_set first, cur;
    memset(&first, 0, sizeof first); memset(&cur, 0, sizeof cur);
    gh_gmm_set_copy(&first, &pb.set); gh_gmm_set_copy(&cur, &pb.set);
    gh_est_stats st;
    int declined = b->ops->mstep->mstep(b, m, &eo, &st), differ = 0;
    b->ops->mstep->model_fetch(b, m, &first);
    for (int it = 0; it < n; ++it) {
      declined += b->ops->mstep->mstep(b, m, &eo, &st) != 0;
      b->ops->mstep->model_fetch(b, m, &cur);
      differ += !set_same(&cur, &first);
    }
    printf("# mstep-repeat D=%d: %d of %d device M-steps differ from the first, %d declined\n", Dd, differ, n, declined);
    return 0;
  }
  if (!only_mstep) check_pairs_sort();
  GH_TEST_NEAR(gh_gauss_flops(GH_COV_FULL, 36), 5 * 630 + 4 * 36 + 9, 0, "flop count full D=36");
  GH_TEST_NEAR(gh_gauss_flops(GH_COV_DIAG, 36), 4 * 36 + 9, 0, "flop count diag D=36");

  /* gh_gemm_row_to_gmm inverts gh_gemm_param_row exactly (the backends'
   * model_fetch), row-major and with a column stride */
  for (int full = 0; full < 2; ++full) {
    gh_gmm g, h;
    ref_gmm r;
    make_gmm(&g, &r, 5, 7, full, 1.5);
    memset(&h, 0, sizeof h);
    gh_gmm_copy(&h, &g);
    memset(h.gconsts, 0, 5 * sizeof(float));
    memset(h.means_invvars, 0, 5 * 7 * sizeof(float));
    memset(h.inv_vars, 0, 5 * gh_gmm_cov_size(&h) * sizeof(float));
    const int K = gh_gemm_depth(7, full);
    float *rows = malloc(sizeof(float) * 5 * K), *cols = malloc(sizeof(float) * 5 * K);
    for (int k = 0; k < 5; ++k) {
      gh_gemm_param_row(&g, k, NULL, rows + k * K);
      for (int e = 0; e < K; ++e) cols[e * 5 + k] = rows[k * K + e];
    }
    int same = 1;
    for (int pass = 0; pass < 2; ++pass) {
      for (int k = 0; k < 5; ++k) gh_gemm_row_to_gmm(pass ? cols + k : rows + k * K, pass ? 5 : 1, &h, k);
      for (int k = 0; k < 5; ++k) /* the row's gconst: recomputed in double (gemm-forms.h) */
        same = same && h.gconsts[k] == rows[k * K] && fabs((double)h.gconsts[k] - g.gconsts[k]) <= 1e-6 * (1 + fabs(g.gconsts[k]));
      same = same && !memcmp(h.means_invvars, g.means_invvars, 5 * 7 * sizeof(float)) &&
             !memcmp(h.inv_vars, g.inv_vars, 5 * gh_gmm_cov_size(&g) * sizeof(float));
    }
    GH_TEST_OK(same, "gh_gemm_row_to_gmm inverts gh_gemm_param_row exactly (%s, rows and columns)", full ? "full" : "diag");
    free(rows); free(cols);
    gh_gmm_free(&g); gh_gmm_free(&h); ref_free(&r);
  }

  gh_backend *ref = gh_backend_create("cpu-ref");
  GH_TEST_OK(ref && !strcmp(ref->ops->name, "cpu-ref"), "create cpu-ref backend");
  if (!only_mstep) run_backend(ref, "cpu-ref");
  /* The BLAS backend: GEMM forms, OpenMP; large pdfs (>= 2 x 256 pairs per
   * thread) take the split path when there are 2 or more threads. */
  gh_backend *cpu = gh_backend_create("cpu");
  GH_TEST_OK(cpu && !strcmp(cpu->ops->name, "cpu"), "create cpu backend (%s)", cpu->device_name);
  if (!only_mstep) run_backend(cpu, "cpu");
  if (!only_mstep) {
    check_set_pairs(ref, "cpu-ref");
    check_set_pairs(cpu, "cpu");
    check_loglikes_rows(cpu, "cpu");
  }
  run_kmeans(NULL);
  run_kmeans(cpu);

  if (gh_cuda_device_count() > 0) {
    gh_backend *cu = gh_backend_create("cuda");
    GH_TEST_OK(cu && !strcmp(cu->ops->name, "cuda"), "create cuda backend (%s)", cu->device_name);
    /* Every variant of the CUDA backend: its automatic choice, the fused
     * kernels alone, the GEMM forms alone in fp32 and in 3xTF32 (the
     * GH_CUDA_SCORE / GH_CUDA_ESTEP overrides, doc/kernels.md "Environment knobs"). */
    /* GH_CUDA_TC: the tensor-core kernels for every diagonal pdf (1) or for
     * none (0: cuBLAS 3xTF32); GH_CUDA_WG: of those, the mma.sync kernels
     * of cuda-tc.cu (0) or the warpgroup kernels of cuda-wg.cu (1, on an
     * H100 / H200; elsewhere the same as 0). */
    /* GH_CUDA_WG_LL_BYTES: the warpgroup E-step's log-likelihoods in parts
     * of at most 64 KB (several parts on these small problems). */
    struct { const char *name, *score, *estep, *tc, *wg; int prec; const char *ll_bytes; } var[] = {
        {"cuda", NULL, NULL, NULL, NULL, GH_PREC_AUTO, NULL},
        {"cuda fused", "fused", "fused", NULL, NULL, GH_PREC_AUTO, NULL},
        {"cuda gemm fp32", "gemm", "gemm", NULL, NULL, GH_PREC_FP32, NULL},
        {"cuda gemm tf32x3", "gemm", "gemm", NULL, NULL, GH_PREC_TF32X3, NULL},
        {"cuda gemm tf32x3 cuBLAS", "gemm", "gemm", "0", NULL, GH_PREC_TF32X3, NULL},
        {"cuda tensor-core kernels", "gemm", "gemm", "1", "0", GH_PREC_AUTO, NULL},
        {"cuda warpgroup kernels", "gemm", "gemm", "1", "1", GH_PREC_AUTO, NULL},
        {"cuda warpgroup kernels, L in parts", "gemm", "gemm", "1", "1", GH_PREC_AUTO, "65536"},
    };
    for (size_t v = 0; v < (only_mstep ? 0 : sizeof var / sizeof var[0]); ++v) {
      if (var[v].score) setenv("GH_CUDA_SCORE", var[v].score, 1); else unsetenv("GH_CUDA_SCORE");
      if (var[v].estep) setenv("GH_CUDA_ESTEP", var[v].estep, 1); else unsetenv("GH_CUDA_ESTEP");
      if (var[v].tc) setenv("GH_CUDA_TC", var[v].tc, 1); else unsetenv("GH_CUDA_TC");
      if (var[v].wg) setenv("GH_CUDA_WG", var[v].wg, 1); else unsetenv("GH_CUDA_WG");
      if (var[v].ll_bytes) setenv("GH_CUDA_WG_LL_BYTES", var[v].ll_bytes, 1); else unsetenv("GH_CUDA_WG_LL_BYTES");
      cu->precision = var[v].prec;
      run_backend(cu, var[v].name);
    }
    unsetenv("GH_CUDA_SCORE");
    unsetenv("GH_CUDA_ESTEP");
    unsetenv("GH_CUDA_TC");
    unsetenv("GH_CUDA_WG");
    unsetenv("GH_CUDA_WG_LL_BYTES");
    cu->precision = GH_PREC_AUTO;
    /* Reproducibility: two E-steps over the same resident data write
     * byte-identical accumulators (no order-dependent atomics; the second
     * E-step takes the expanded features from the data's cache): a mixed
     * set of small pdfs, and a diagonal UBM of 1024 Gaussians (the
     * warpgroup kernels on an H100 / H200, the mma.sync kernels elsewhere). */
    struct { const char *name; int P, D, G, type; } rp[] = {{"4 pdfs D=24 G=32, mixed types", 4, 24, 32, 2},
                                                             {"UBM diag D=40 G=1024", 1, 40, 1024, 0}};
    for (size_t q = 0; q < (only_mstep ? 0 : sizeof rp / sizeof rp[0]); ++q) {
      problem pr;
      const int P = rp[q].P, D = rp[q].D;
      make_problem(&pr, "repro", P, D, rp[q].G, rp[q].G, rp[q].type, 20000, 0);
      int64_t np = 40000;
      gh_frame_pdf *pairs = malloc(sizeof(gh_frame_pdf) * np);
      for (int64_t k = 0; k < np; ++k) {
        pairs[k].frame = (int)(k / 2);
        pairs[k].pdf = (int)(urand() * P) % P;
        pairs[k].weight = (float)urand();
      }
      gh_dev_data *dd = cu->ops->gmm->data_upload(cu, pr.X, pr.T, D, pairs, np);
      gh_accs_set a[2];
      double tot[2];
      for (int r = 0; r < 2; ++r) {
        gh_accs_init(&a[r], &pr.set);
        gh_dev_model *m = cu->ops->gmm->model_upload(cu, &pr.set);
        cu->ops->gmm->acc_zero(cu, m);
        tot[r] = cu->ops->gmm->accumulate(cu, m, dd);
        cu->ops->gmm->acc_fetch(cu, m, &a[r]);
        cu->ops->gmm->model_free(cu, m);
      }
      int same = tot[0] == tot[1];
      for (int p = 0; p < P; ++p) {
        const gh_gmm_accs *x = &a[0].pdfs[p], *y = &a[1].pdfs[p];
        int64_t S = x->type == GH_COV_FULL ? gh_packed_size(D) : D;
        same = same && !memcmp(x->occupancy, y->occupancy, sizeof(double) * x->num_gauss) &&
               !memcmp(x->mean_accs, y->mean_accs, sizeof(double) * x->num_gauss * D) &&
               !memcmp(x->var_accs, y->var_accs, sizeof(double) * x->num_gauss * S);
      }
      GH_TEST_OK(same, "cuda E-step twice on the same data (%s): byte-identical accumulators and total", rp[q].name);
      gh_accs_free(&a[0]);
      gh_accs_free(&a[1]);
      cu->ops->gmm->data_free(cu, dd);
      free(pairs);
      free_problem(&pr);
    }
    run_mstep(cu, 1);
    run_kmeans(cu);
    if (only_mstep) goto cuda_done;
    /* Chunked loglikes (T larger than one output chunk) vs the CPU backend. */
    problem pb;
    make_problem(&pb, "chunked", 30000, 4, 1, 2, 0, 2300, 0);
    float *a = malloc(sizeof(float) * (size_t)pb.T * 30000), *bb = malloc(sizeof(float) * (size_t)pb.T * 30000);
    gh_dev_model *m1 = cu->ops->gmm->model_upload(cu, &pb.set);
    cu->ops->gmm->loglikes(cu, m1, pb.X, pb.T, a);
    cu->ops->gmm->model_free(cu, m1);
    gh_dev_model *m2 = cpu->ops->gmm->model_upload(cpu, &pb.set);
    cpu->ops->gmm->loglikes(cpu, m2, pb.X, pb.T, bb);
    cpu->ops->gmm->model_free(cpu, m2);
    double worst = 0;
    for (size_t i = 0; i < (size_t)pb.T * 30000; ++i) {
      double e = fabs(a[i] - bb[i]) / (1 + fabs(bb[i]));
      if (!(e <= worst)) worst = e;
    }
    GH_TEST_OK(worst <= 1e-5, "cuda vs cpu, chunked loglikes (T=2300, P=30000): max err %.3g", worst);
    free(a); free(bb);
    free_problem(&pb);
    check_set_pairs(cu, "cuda");
    check_loglikes_rows(cu, "cuda");
  cuda_done:
    gh_backend_free(cu);
  } else {
    printf("ok %d - # SKIP no GPU\n", ++gh_t_n);
    ++gh_t_pass;
  }
  /* OpenCL (PoCL in CI): its device M-step against the host M-step */
  gh_backend *ocl = gh_backend_opencl_new(NULL, 0);
  if (gh_backend_supports(ocl, GH_CAP_MSTEP)) {
    run_mstep(ocl, 0);
    run_kmeans(ocl);
    if (!only_mstep) check_set_pairs(ocl, "opencl");
    if (!only_mstep) check_loglikes_rows(ocl, "opencl");
  } else {
    printf("ok %d - # SKIP no OpenCL device with double precision (%s)\n", ++gh_t_n, ocl ? "no fp64" : gh_last_error());
    ++gh_t_pass;
  }
  if (ocl) gh_backend_free(ocl);
  gh_backend *au = gh_backend_create("auto");
  GH_TEST_OK(au != NULL, "create auto backend -> %s", au->ops->name);
  gh_backend_free(au);
  gh_backend_free(cpu);
  gh_backend_free(ref);
  return gh_test_done();
}
