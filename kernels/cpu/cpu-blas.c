/* cpu-blas.c -- the fast CPU backend (--device=cpu): GMM likelihoods and
 * the E-step as GEMMs over expanded features (kernels/gemm-forms.h) through
 * BLAS (OpenBLAS), on all cores with OpenMP.  The plain-loop reference
 * (kernels/cpu/cpu.c, --device=cpu-ref) stays the accurate backend every
 * other one is tested against; the HMM kernels and the shrinkage
 * statistics are the reference's.
 *
 * Arithmetic (doc/kernels.md "CPU BLAS backend"):
 *  - likelihoods: features centred at the model centre
 *    (gh_gemm_model_centre), expanded, one SGEMM L = Xe A^T per work item
 *    of 256 frames x a block of pdfs (fp32 products, as Kaldi's own BLAS
 *    likelihoods), then per pdf a log-sum-exp in double;
 *  - E-step: the same likelihoods for the pairs of one pdf (chunks of at
 *    most 256 pairs), posteriors gamma = w exp(ll - lse) in double, and
 *    the statistics R^T Xe as a DGEMM over the expanded features in
 *    double, added to the pdf's centred accumulators (uncentred exactly at
 *    acc_fetch by gh_gemm_stats_uncentre).  The PyTorch peer
 *    (bench/peers/gemm_em_peer.py) does this GEMM in fp32; in double the
 *    statistics do not depend on the chunking, so N jobs + gmm-sum-accs
 *    equal one job up to the order of double additions (test/bats/repro.bats) and fMLLR / MAP on the
 *    CPU match float64 references (doc/kernels.md gives the cost).
 * b->precision is ignored (no tensor cores).
 *
 * Numerical contract (doc/reliability.md): the rows come from the float64
 * reference form (gemm-forms.h gh_gemm_param_row_d: the stored gconst is
 * not used), and a pdf any of whose Gaussians would err by more than
 * GH_GEMM_MAX_ROW_ERROR nats in fp32 at the model centre
 * (gh_gemm_row_error: a Gaussian far from the centre in its own sigmas,
 * tiny or huge variances, strong correlations) is scored and accumulated
 * with the same GEMM forms in double (DGEMM, double rows), at about twice
 * the cost; a log line says how many pdfs.  With GH_CPU_WHITE=1 a full pdf
 * takes the whitened form first when its estimate is within the same
 * budget (gemm-forms.h gh_white_error: per Gaussian, the frames centred at
 * its mean in double, rounded to float, times the float Cholesky factor of
 * its precision in one SGEMM, the squares summed in double; no quadratic
 * cancellation); off by default, as it costs more than the double GEMM on
 * a CPU (bench/RESULTS.md W1).  The E-step's statistics are the same DGEMM
 * over expanded features on every path.  The backend counts the (frame,
 * pdf) pairs of each path and, in the E-step, the Gaussians within
 * GH_CAND_NATS of each pair's best (gh_backend path_pairs, cand_*).
 *
 * Threads: BLAS runs single-threaded (gh_host_blas_serial: OpenBLAS set to
 * one thread; other BLAS libraries are assumed serial) inside our OpenMP
 * loops, so calls never nest thread pools.  Work is cut in a fixed way:
 * scoring by (frames, pdf block) items (rows are independent); the E-step
 * by pdf (a pdf's chunks in order, by one
 * thread), except a pdf with many pairs, whose chunks are dealt to the
 * threads round-robin into per-thread partial statistics summed in thread
 * order.  So results are identical run to run for a given thread count
 * (OMP_NUM_THREADS); a different count may change the last bits of a large
 * pdf's statistics.
 */
#include "backend.h"
#include "gemm-forms.h"
#include "cpu/cpu-dd.h"
#include "base/env.h"
#include "base/gh-base.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  CHUNK_PAIRS = 256,          /* E-step rows per GEMM */
  SCORE_ROWS = 256,           /* scoring: frames per GEMM */
  SCORE_BLOCK_GAUSS = 2048,   /* scoring: Gaussians per GEMM (whole pdfs; a larger pdf alone) */
};

typedef struct {
  int32_t D, P, Kd, Kf, maxG;
  int64_t Gd, Gf;    /* Gaussians of each type */
  int32_t *G;        /* [P] Gaussians of pdf p */
  unsigned char *full; /* [P] */
  int64_t *row;      /* [P] first row of pdf p in its type's matrices */
  float *Wd, *Wf;    /* [Gd x Kd], [Gf x Kf] parameter rows centred at c */
  unsigned char *exact; /* [P] 0: fp32 GEMM; 1: the GEMM in double (fp32 error estimate too large);
                           2: the reference form (kernels/cpu/cpu.c: even double would cancel);
                           3: the whitened form (WHITE) */
  int64_t *wrow;     /* [P] first whitened Gaussian of pdf p (exact == 3) in Lw / muw / normw */
  int64_t nwg;       /* whitened Gaussians (full pdfs only) */
  float *Lw;         /* [nwg x D x D] float Cholesky factors */
  double *muw, *normw; /* [nwg x D] means, [nwg] norms */
  int32_t nref, *ref_pdf; /* the exact == 2 pdfs, evaluated by ref_b / ref_m over the sub-set sub */
  gh_backend *ref_b;
  gh_dev_model *ref_m;
  gh_gmm_set sub;
  double *Wd64, *Wf64;  /* double rows, filled for the exact pdfs only (NULL when none) */
  double *Ad, *Af;   /* [Gd x Kd], [Gf x Kf] centred statistics (accumulators) */
  double *c;         /* [D] centre */
  double *master;    /* acc_commit: double-double master, hi [Gd Kd + Gf Kf] then lo; NULL until used */
  /* scoring blocks: consecutive pdfs p0 .. p1-1 of one covariance type,
   * rows g0 .. g0+ng-1 of that type's matrices, ng <= SCORE_BLOCK_GAUSS
   * unless one pdf is larger */
  int32_t nblk, *blk_p0, *blk_p1;
  int64_t *blk_g0, *blk_ng;
} blas_model;

typedef struct {
  const float *X;
  int32_t T, D, max_pdf;
  int64_t npairs;
  int64_t *off;      /* [max_pdf + 2] pairs of pdf p: off[p] .. off[p+1]-1 */
  int32_t *frame;    /* [npairs] sorted by pdf (stable) */
  float *weight;     /* [npairs] */
} blas_data;

/* Per-thread scratch, grown on demand. */
typedef struct {
  double *xe, *R, *Ld; float *xf, *L, *dm, *y;
  size_t xe_cap, R_cap, xf_cap, L_cap, Ld_cap, dm_cap, y_cap;
} scratch;

typedef struct { int threads; } blas_ctx;

static void *grow(void *p, size_t *cap, size_t bytes) {
  if (*cap >= bytes) return p;
  free(p);
  *cap = bytes;
  return gh_malloc(bytes ? bytes : 1);
}

static void scratch_free(scratch *s) {
  free(s->xe); free(s->R); free(s->Ld); free(s->xf); free(s->L); free(s->dm); free(s->y);
}

/* Expanded features of rows r < n: frame frames[r] (or first + r when
 * frames == NULL) of X [. x D], as float into s->xf [rows x K] (rows >= n;
 * rows n .. rows-1 zero) and, when want_double, as double into s->xe
 * [n x K].  The SGEMMs always run on `rows` rows (SCORE_ROWS or
 * CHUNK_PAIRS): OpenBLAS's kernels on AVX-512 machines round a row
 * differently in the last partial tile and in its small-matrix path, so a
 * fixed shape keeps a frame's log-likelihoods independent of where it sits
 * in a batch (the same bits whatever the batch size, job split or thread
 * count; test/bats/score.bats, train.bats).  OpenBLAS's AVX2 kernels
 * (Haswell, Zen) also round a row by its position in the tile: 126 of 256
 * copies of one row differed in their last bits in an SGEMM of 256 x 16 x
 * 27 on an AMD EPYC (bench/experiments/sgemm-row-position.c; bench/RESULTS.md
 * D39), and a frame's
 * scores with the batch size, by up to 5e-5 nats on the AMI fixture
 * (within the numerical contract's 5e-4).  The fixed blocks of the resident
 * trainers (lib/train) put every frame at the same place whatever R, so
 * their results still do not depend on R. */
static void expand_rows(scratch *s, const float *X, int32_t D, int full, int32_t K, const double *c,
                        const int32_t *frames, int64_t first, int n, int want_double, int rows) {
  s->xe = grow(s->xe, &s->xe_cap, sizeof(double) * (size_t)(want_double ? rows : 1) * K);
  s->xf = grow(s->xf, &s->xf_cap, sizeof(float) * (size_t)rows * K);
  memset(s->xf + (size_t)n * K, 0, sizeof(float) * (size_t)(rows - n) * K);
  if (want_double) memset(s->xe + (size_t)n * K, 0, sizeof(double) * (size_t)(rows - n) * K);
  for (int r = 0; r < n; ++r) {
    double *xe = s->xe + (want_double ? (size_t)r * K : 0);
    gh_gemm_expand(X + (int64_t)(frames ? frames[r] : first + r) * D, c, D, full, xe);
    float *xf = s->xf + (size_t)r * K;
    for (int32_t e = 0; e < K; ++e) xf[e] = (float)xe[e];
  }
}

static void blas_free(gh_backend *b) {
  free(b->ctx);
  free(b);
}

static gh_dev_model *blas_model_upload(gh_backend *b, const gh_gmm_set *s) {
  blas_model *m = gh_calloc(1, sizeof *m);
  const int32_t D = s->dim, P = s->num_pdfs;
  m->D = D; m->P = P;
  m->Kd = gh_gemm_depth(D, 0);
  m->Kf = gh_gemm_depth(D, 1);
  m->G = gh_calloc(P + 1, sizeof *m->G);
  m->full = gh_calloc(P + 1, 1);
  m->row = gh_calloc(P + 1, sizeof *m->row);
  for (int32_t p = 0; p < P; ++p) {
    const gh_gmm *g = &s->pdfs[p];
    if (g->dim != D) gh_die("model upload: pdf %d has dimension %d, the set has %d", p, g->dim, D);
    m->G[p] = g->num_gauss;
    m->full[p] = g->type == GH_COV_FULL;
    m->row[p] = m->full[p] ? m->Gf : m->Gd;
    if (m->full[p]) m->Gf += g->num_gauss;
    else m->Gd += g->num_gauss;
    if (g->num_gauss > m->maxG) m->maxG = g->num_gauss;
  }
  m->c = gh_malloc(sizeof(double) * (D > 0 ? D : 1));
  gh_gemm_model_centre(s, m->c);
  m->Wd = gh_malloc(sizeof(float) * (size_t)(m->Gd * m->Kd + 1));
  m->Wf = gh_malloc(sizeof(float) * (size_t)(m->Gf * m->Kf + 1));
  m->Ad = gh_calloc((size_t)(m->Gd * m->Kd + 1), sizeof(double));
  m->Af = gh_calloc((size_t)(m->Gf * m->Kf + 1), sizeof(double));
  m->blk_p0 = gh_malloc(sizeof(int32_t) * (P + 1)); m->blk_p1 = gh_malloc(sizeof(int32_t) * (P + 1));
  m->blk_g0 = gh_malloc(sizeof(int64_t) * (P + 1)); m->blk_ng = gh_malloc(sizeof(int64_t) * (P + 1));
  m->exact = gh_calloc(P + 1, 1);
  m->wrow = gh_calloc(P + 1, sizeof *m->wrow);
  double worst = 0.0, worstw = 0.0;
  const double wmax = gh_white_max_error();
  /* GH_CPU_WHITE: 0 (default) the double GEMM for the pdfs out of the fp32
   * budget: on a CPU it costs what the whitened form does (DGEMM runs at half
   * the SGEMM rate over half the depth; the whitened form's per-Gaussian
   * SGEMMs of D x D are small) and is exact, bench/RESULTS.md "Real speech";
   * 1: the whitened form first for those; 2: the whitened form for every full
   * pdf within its budget (tests: numerics.bats, fuzz_numerics). */
  const int white = (int)gh_env_int("GH_CPU_WHITE", 0, 0, 2);
  int32_t nexact = 0;
  /* threads only where the rows are worth it (gemm-forms.c's rule): a small
   * model's upload is microseconds, and a parallel region on a loaded host
   * costs milliseconds (bench/RESULTS.md Y3) */
  const int64_t Gt = m->Gd + m->Gf;
#pragma omp parallel if (Gt * (m->Gf ? (int64_t)D * D * D : (int64_t)D * 64) >= ((int64_t)1 << 22))
  {
    double *work = gh_malloc(sizeof(double) * (size_t)(gh_gauss_work_size(D) + D + m->Kf));
    double *mu = work + gh_gauss_work_size(D), *ad = mu + D;
#pragma omp for schedule(dynamic, 16) reduction(max : worst, worstw) reduction(+ : nexact)
    for (int32_t p = 0; p < P; ++p) {
      const gh_gmm *g = &s->pdfs[p];
      const int32_t K = m->full[p] ? m->Kf : m->Kd;
      float *W = (m->full[p] ? m->Wf : m->Wd) + (size_t)m->row[p] * K;
      double err = 0.0, errd = 0.0, errw = 0.0;
      for (int32_t k = 0; k < m->G[p]; ++k) {
        gh_gauss_info info;
        gh_gauss_exact(g, k, mu, &info, work);
        const double ew = gh_white_error(g, k, &info, work);
        if (!(ew <= errw)) errw = ew;
        const double e = gh_gemm_row_error(g, k, mu, &info, m->c);
        if (!(e <= err)) err = e;
        const double ed = gh_gemm_row_error_d(g, k, mu, &info, m->c);
        if (!(ed <= errd)) errd = ed;
        gh_gemm_param_row_d(g, k, mu, &info, m->c, ad);
        for (int32_t e2 = 0; e2 < K; ++e2) W[(size_t)k * K + e2] = (float)ad[e2];
      }
      if (white == 2 && errw <= wmax) { /* forced (tests) */
        m->exact[p] = 3;
        ++nexact;
      } else if (!(err <= GH_GEMM_MAX_ROW_ERROR)) {
        /* full pdfs only (errw is INFINITY for diagonal ones) */
        m->exact[p] = white && errw <= wmax ? 3 : errd <= GH_GEMM_MAX_ROW_ERROR ? 1 : 2;
        ++nexact;
        if (m->exact[p] != 3 && m->full[p] && errw > worstw) worstw = errw;
      }
      if (err > worst) worst = err;
    }
    free(work);
  }
  if (nexact > 0) {
    m->Wd64 = gh_malloc(sizeof(double) * (size_t)(m->Gd * m->Kd + 1));
    m->Wf64 = gh_malloc(sizeof(double) * (size_t)(m->Gf * m->Kf + 1));
    double *work = gh_malloc(sizeof(double) * (size_t)(gh_gauss_work_size(D) + D));
    double *mu = work + gh_gauss_work_size(D);
    int64_t wcap = 0;
    for (int32_t p = 0; p < P; ++p) {
      if (m->exact[p] == 3) { /* the whitened form: mean, norm, factor */
        const gh_gmm *g = &s->pdfs[p];
        m->wrow[p] = m->nwg;
        m->nwg += m->G[p];
        for (int32_t k = 0; k < m->G[p]; ++k) {
          const int64_t w = m->wrow[p] + k;
          if (w + 1 > wcap) {
            wcap = 2 * (w + 1);
            m->muw = gh_realloc(m->muw, sizeof(double) * (size_t)wcap * D);
            m->normw = gh_realloc(m->normw, sizeof(double) * (size_t)wcap);
            m->Lw = gh_realloc(m->Lw, sizeof(float) * (size_t)wcap * D * D);
          }
          gh_gauss_info info;
          gh_gauss_exact(g, k, m->muw + (size_t)w * D, &info, work);
          m->normw[w] = info.norm;
          gh_white_factor(D, work, m->Lw + (size_t)w * D * D);
        }
        continue;
      }
      if (m->exact[p] != 1) continue;
      const int32_t K = m->full[p] ? m->Kf : m->Kd;
      double *W = (m->full[p] ? m->Wf64 : m->Wd64) + (size_t)m->row[p] * K;
      for (int32_t k = 0; k < m->G[p]; ++k) {
        gh_gauss_info info;
        gh_gauss_exact(&s->pdfs[p], k, mu, &info, work);
        gh_gemm_param_row_d(&s->pdfs[p], k, mu, &info, m->c, W + (size_t)k * K);
      }
    }
    free(work);
    /* the reference form for pdfs whose Gaussians are so far from the
     * centre (in their own sigmas) that even the double GEMM cancels */
    for (int32_t p = 0; p < P; ++p) m->nref += m->exact[p] == 2;
    if (m->nref) {
      m->ref_pdf = gh_malloc(sizeof(int32_t) * m->nref);
      m->sub.dim = D;
      m->sub.num_pdfs = m->nref;
      m->sub.pdfs = gh_calloc(m->nref, sizeof(gh_gmm));
      for (int32_t p = 0, j = 0; p < P; ++p)
        if (m->exact[p] == 2) { m->ref_pdf[j] = p; gh_gmm_copy(&m->sub.pdfs[j], &s->pdfs[p]); ++j; }
      m->ref_b = gh_backend_cpu_new();
      m->ref_m = m->ref_b->ops->gmm->model_upload(m->ref_b, &m->sub);
    }
    int32_t nwhite = 0;
    for (int32_t p = 0; p < P; ++p) nwhite += m->exact[p] == 3;
    gh_vlog(1, "cpu backend: %d of %d pdfs evaluated in double (%d of them in the reference form; their fp32 GEMM "
            "form could err by up to %.3g nats)", nexact - nwhite, P, m->nref, worst);
    gh_vlog(1, "cpu backend: %d of %d pdfs in the whitened fp32 form (budget %.3g nats; the pdfs in double "
            "would err by up to %.3g in it)", nwhite, P, wmax, worstw);
  }
  for (int32_t p = 0; p < P; ++p) {
    const int32_t k = m->nblk - 1;
    if (k >= 0 && m->full[m->blk_p0[k]] == m->full[p] && m->exact[m->blk_p0[k]] == m->exact[p] &&
        m->blk_ng[k] + m->G[p] <= SCORE_BLOCK_GAUSS) {
      m->blk_p1[k] = p + 1;
      m->blk_ng[k] += m->G[p];
    } else {
      m->blk_p0[m->nblk] = p; m->blk_p1[m->nblk] = p + 1;
      m->blk_g0[m->nblk] = m->row[p]; m->blk_ng[m->nblk] = m->G[p];
      m->nblk++;
    }
  }
  return (gh_dev_model *)m;
}

static void blas_model_free(gh_backend *b, gh_dev_model *dm) {
  blas_model *m = (blas_model *)dm;
  if (!m) return;
  free(m->G); free(m->full); free(m->row); free(m->Wd); free(m->Wf); free(m->Ad); free(m->Af);
  free(m->blk_p0); free(m->blk_p1); free(m->blk_g0); free(m->blk_ng);
  free(m->c); free(m->exact); free(m->Wd64); free(m->Wf64);
  free(m->wrow); free(m->Lw); free(m->muw); free(m->normw);
  free(m->master);
  if (m->ref_b) {
    m->ref_b->ops->gmm->model_free(m->ref_b, m->ref_m);
    gh_backend_free(m->ref_b);
    gh_gmm_set_free(&m->sub);
    free(m->ref_pdf);
  }
  free(m);
}

/* exp(d) for d = ll - max <= 0: 0 below -87 (where expf underflows to a
 * denormal through glibc's slow path; the term is < 1e-37 of the max's). */
static inline float softexp(float d) { return d < -87.0f ? 0.0f : expf(d); } /* NaN stays NaN */

/* An fp32 GEMM term that is NaN or +inf is an overflow artifact (inf - inf,
 * or cross terms that overflow first, of a frame far outside the contract's
 * range: its true value is hugely negative; a finite model's log-likelihood
 * is at most its normaliser, far below FLT_MAX): it counts as -inf and never
 * poisons the others (doc/reliability.md).  found by fuzz_numerics: a
 * Gaussian of inverse variance 2e38 and a frame 1e21 sigma away gave +inf
 * under OpenBLAS's Haswell kernels, and the log-sum-exp NaN. */
static inline float ovf(float v) { return v < INFINITY ? v : -INFINITY; }

/* log sum_g exp(ll[g]) of fp32 terms, summed in double (-inf if G == 0 or
 * all -inf); NaN and +inf terms count as -inf (ovf). */
static double lse(const float *ll, int32_t G) {
  float mx = -INFINITY;
  for (int32_t g = 0; g < G; ++g) {
    const float v = ovf(ll[g]);
    if (v > mx) mx = v;
  }
  if (mx == -INFINITY) return -INFINITY;
  double sum = 0.0;
  for (int32_t g = 0; g < G; ++g) sum += softexp(ovf(ll[g]) - mx);
  return mx + log(sum);
}

/* log sum_g exp(ll[g]) of double terms (-inf if G == 0 or all -inf; NaN
 * stays NaN). */
static double lse_d(const double *ll, int32_t G) {
  double mx = -INFINITY;
  for (int32_t g = 0; g < G; ++g) if (ll[g] > mx || isnan(ll[g])) mx = ll[g];
  if (!(mx > -INFINITY)) return mx;
  double sum = 0.0;
  for (int32_t g = 0; g < G; ++g) sum += exp(ll[g] - mx);
  return mx + log(sum);
}

/* The whitened form (exact == 3) of pdf p for rows r < n: frame
 * frames[r] (or first + r when frames == NULL) of X [. x D]; log-likelihood
 * of Gaussian k into Ld[r * ldl + k] (double).  Full: per Gaussian, the
 * rows d = fl(x - mu) (subtracted in double), padded with zero rows to
 * `rows` (a fixed GEMM shape, as expand_rows), Y = d Lf by one SGEMM and
 * ll = norm - 0.5 sum_j y_j^2 in double (full pdfs only).  NaN or an
 * infinite distance (overflow far outside the range) gives -inf. */
static void white_ll(const blas_model *m, int32_t p, const float *X, const int32_t *frames, int64_t first, int n,
                     int rows, scratch *s, double *Ld, int64_t ldl) {
  const int32_t D = m->D, G = m->G[p];
  s->dm = grow(s->dm, &s->dm_cap, sizeof(float) * (size_t)rows * D);
  s->y = grow(s->y, &s->y_cap, sizeof(float) * (size_t)rows * D);
  memset(s->dm + (size_t)n * D, 0, sizeof(float) * (size_t)(rows - n) * D);
  for (int32_t k = 0; k < G; ++k) {
    const int64_t w = m->wrow[p] + k;
    const double *mu = m->muw + (size_t)w * D, norm = m->normw[w];
    if (norm == -INFINITY) {
      for (int r = 0; r < n; ++r) Ld[r * ldl + k] = -INFINITY;
      continue;
    }
    for (int r = 0; r < n; ++r) {
      const float *x = X + (int64_t)(frames ? frames[r] : first + r) * D;
      float *d = s->dm + (size_t)r * D;
      for (int32_t i = 0; i < D; ++i) d[i] = (float)((double)x[i] - mu[i]);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, D, D, 1.0f, s->dm, D, m->Lw + (size_t)w * D * D, D,
                0.0f, s->y, D);
    for (int r = 0; r < n; ++r) {
      const float *y = s->y + (size_t)r * D;
      double q = 0.0;
      for (int32_t j = 0; j < D; ++j) q += (double)y[j] * y[j];
      const double ll = norm - 0.5 * q;
      Ld[r * ldl + k] = ll == ll ? ll : -INFINITY;
    }
  }
}

/* Work item = (chunk of SCORE_ROWS frames, block of pdfs): expand the
 * chunk, padded with zero rows to SCORE_ROWS (so every GEMM has the same
 * shape and a frame's result does not depend on how many frames a call
 * has: BLAS kernels may sum differently for other row counts; cheap: K
 * per frame against K x ng for the GEMM), one SGEMM against
 * the block's parameter rows, each pdf's log-sum-exp.  256 frames per GEMM
 * keep it compute-bound (the block's rows are read once per 256 frames);
 * blocks bound the [frames x Gaussians] scratch.  Items are independent,
 * so the output does not depend on the thread count. */
static void blas_loglikes(gh_backend *b, gh_dev_model *dm, const float *X, int32_t T, float *out) {
  blas_model *m = (blas_model *)dm;
  const int32_t D = m->D, P = m->P;
  if (T <= 0 || P <= 0) return;
  const int64_t nchunks = (T + SCORE_ROWS - 1) / SCORE_ROWS, nitems = nchunks * m->nblk;
  double t_start = gh_seconds();
#pragma omp parallel
  {
    scratch s = {0};
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < nitems; ++it) {
      const int64_t ch = it / m->nblk, t0 = ch * SCORE_ROWS;
      const int32_t k = (int32_t)(it % m->nblk);
      const int n = (int)(T - t0 < SCORE_ROWS ? T - t0 : SCORE_ROWS);
      const int full = m->full[m->blk_p0[k]];
      const int32_t K = full ? m->Kf : m->Kd;
      const int64_t ng = m->blk_ng[k];
      const int ex = m->exact[m->blk_p0[k]];
      if (ex == 2) continue; /* the reference form, below */
      if (ex == 3) { /* the whitened form, pdf by pdf */
        s.Ld = grow(s.Ld, &s.Ld_cap, sizeof(double) * (size_t)SCORE_ROWS * (m->maxG > 0 ? m->maxG : 1));
        for (int32_t p = m->blk_p0[k]; p < m->blk_p1[k]; ++p) {
          white_ll(m, p, X, NULL, t0, n, SCORE_ROWS, &s, s.Ld, m->G[p]);
          for (int r = 0; r < n; ++r) out[(t0 + r) * P + p] = (float)lse_d(s.Ld + (size_t)r * m->G[p], m->G[p]);
        }
        continue;
      }
      if (ex) { /* double rows and features: DGEMM */
        s.Ld = grow(s.Ld, &s.Ld_cap, sizeof(double) * (size_t)SCORE_ROWS * (ng > 0 ? ng : 1));
        if (ng > 0) {
          expand_rows(&s, X, D, full, K, m->c, NULL, t0, n, 1, SCORE_ROWS);
          cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, SCORE_ROWS, (int)ng, K, 1.0, s.xe, K,
                      (full ? m->Wf64 : m->Wd64) + (size_t)m->blk_g0[k] * K, K, 0.0, s.Ld, (int)ng);
        }
        for (int r = 0; r < n; ++r) {
          const double *l = s.Ld + (size_t)r * ng;
          float *o = out + (t0 + r) * P;
          for (int32_t p = m->blk_p0[k]; p < m->blk_p1[k]; ++p)
            o[p] = (float)lse_d(l + (m->row[p] - m->blk_g0[k]), m->G[p]);
        }
        continue;
      }
      s.L = grow(s.L, &s.L_cap, sizeof(float) * (size_t)SCORE_ROWS * (ng > 0 ? ng : 1));
      if (ng > 0) {
        expand_rows(&s, X, D, full, K, m->c, NULL, t0, n, 0, SCORE_ROWS);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, SCORE_ROWS, (int)ng, K, 1.0f, s.xf, K,
                    (full ? m->Wf : m->Wd) + (size_t)m->blk_g0[k] * K, K, 0.0f, s.L, (int)ng);
      }
      for (int r = 0; r < n; ++r) {
        const float *l = s.L + (size_t)r * ng;
        float *o = out + (t0 + r) * P;
        for (int32_t p = m->blk_p0[k]; p < m->blk_p1[k]; ++p)
          o[p] = (float)lse(l + (m->row[p] - m->blk_g0[k]), m->G[p]);
      }
    }
    scratch_free(&s);
  }
  for (int32_t p = 0; p < P; ++p) {
    static const int path[4] = {GH_PATH_FP32, GH_PATH_DOUBLE, GH_PATH_DOUBLE, GH_PATH_WHITE};
    b->path_pairs[path[m->exact[p]]] += T;
  }
  if (m->nref) {
    float *o = gh_malloc(sizeof(float) * (size_t)T * m->nref);
    m->ref_b->ops->gmm->loglikes(m->ref_b, m->ref_m, X, T, o);
    for (int64_t t = 0; t < T; ++t)
      for (int32_t j = 0; j < m->nref; ++j) out[t * P + m->ref_pdf[j]] = o[t * m->nref + j];
    free(o);
  }
  b->kernel_seconds += gh_seconds() - t_start;
}

static void blas_acc_zero(gh_backend *b, gh_dev_model *dm) {
  blas_model *m = (blas_model *)dm;
  memset(m->Ad, 0, sizeof(double) * (size_t)(m->Gd * m->Kd));
  memset(m->Af, 0, sizeof(double) * (size_t)(m->Gf * m->Kf));
  if (m->ref_m) m->ref_b->ops->gmm->acc_zero(m->ref_b, m->ref_m);
}

/* d's pairs sorted by pdf (counting sort, stable) from pairs[npairs]. */
static void blas_data_sort(blas_data *d, const gh_frame_pdf *pairs, int64_t npairs) {
  d->npairs = npairs;
  d->frame = gh_malloc(sizeof(int32_t) * (size_t)(npairs + 1));
  d->weight = gh_malloc(sizeof(float) * (size_t)(npairs + 1));
  d->off = gh_pairs_sort_by_pdf(pairs, npairs, d->T, &d->max_pdf, d->frame, d->weight);
}

static gh_dev_data *blas_data_upload(gh_backend *b, const float *X, int32_t T, int32_t D,
                                     const gh_frame_pdf *pairs, int64_t npairs) {
  blas_data *d = gh_calloc(1, sizeof *d);
  d->X = X; d->T = T; d->D = D;
  blas_data_sort(d, pairs, npairs);
  return (gh_dev_data *)d;
}

static void blas_data_set_pairs(gh_backend *b, gh_dev_data *dd, const gh_frame_pdf *pairs, int64_t npairs) {
  blas_data *d = (blas_data *)dd;
  free(d->off); free(d->frame); free(d->weight);
  blas_data_sort(d, pairs, npairs);
}

static void blas_data_free(gh_backend *b, gh_dev_data *dd) {
  blas_data *d = (blas_data *)dd;
  if (!d) return;
  free(d->off); free(d->frame); free(d->weight);
  free(d);
}

/* E-step of pairs first .. first+n-1 (all of pdf p): centred statistics
 * added to A [G x K] (double); returns sum w * lse of these pairs.  The
 * likelihoods are an SGEMM over at most CHUNK_PAIRS rows, the statistics
 * R^T Xe a DGEMM (double posteriors and features), so the accumulators
 * do not depend on how the pairs are cut into chunks or jobs beyond the
 * order of double additions. */
static double estep_chunk(const blas_model *m, const blas_data *d, int32_t p, int64_t first, int n, scratch *s,
                          double *A, int64_t *ncand) {
  const int32_t G = m->G[p], full = m->full[p], K = full ? m->Kf : m->Kd;
  const float *W = (full ? m->Wf : m->Wd) + (size_t)m->row[p] * K;
  expand_rows(s, d->X, m->D, full, K, m->c, d->frame + first, 0, n, 1, CHUNK_PAIRS);
  s->R = grow(s->R, &s->R_cap, sizeof(double) * (size_t)n * G);
  const int ex = m->exact[p];
  if (ex == 3) {
    s->Ld = grow(s->Ld, &s->Ld_cap, sizeof(double) * (size_t)CHUNK_PAIRS * G);
    white_ll(m, p, d->X, d->frame + first, 0, n, CHUNK_PAIRS, s, s->Ld, G);
  } else if (ex) {
    s->Ld = grow(s->Ld, &s->Ld_cap, sizeof(double) * (size_t)CHUNK_PAIRS * G);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, CHUNK_PAIRS, G, K, 1.0, s->xe, K,
                (full ? m->Wf64 : m->Wd64) + (size_t)m->row[p] * K, K, 0.0, s->Ld, G);
  } else {
    s->L = grow(s->L, &s->L_cap, sizeof(float) * (size_t)CHUNK_PAIRS * G);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, CHUNK_PAIRS, G, K, 1.0f, s->xf, K, W, K, 0.0f, s->L, G);
  }
  double total = 0.0;
  for (int r = 0; r < n; ++r) {
    double *R = s->R + (size_t)r * G;
    if (ex) {
      for (int32_t g = 0; g < G; ++g) R[g] = s->Ld[(size_t)r * G + g];
    } else { /* a NaN or +inf term of the fp32 form (overflow far outside the range) counts as -inf (ovf) */
      for (int32_t g = 0; g < G; ++g) R[g] = ovf(s->L[(size_t)r * G + g]);
    }
    double mx = -INFINITY;
    for (int32_t g = 0; g < G; ++g) if (R[g] > mx || isnan(R[g])) mx = R[g];
    const double w = d->weight[first + r];
    if (!(mx > -INFINITY)) { /* no Gaussian can produce x (or NaN): no statistics */
      total += w * mx;
      for (int32_t g = 0; g < G; ++g) R[g] = 0.0;
      continue;
    }
    double sum = 0.0;
    for (int32_t g = 0; g < G; ++g) *ncand += R[g] - mx >= -GH_CAND_NATS;
    for (int32_t g = 0; g < G; ++g) sum += (R[g] = R[g] - mx < -745.0 ? 0.0 : exp(R[g] - mx));
    total += w * (mx + log(sum));
    const double scale = w / sum;
    for (int32_t g = 0; g < G; ++g) R[g] *= scale;
  }
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, G, K, n, 1.0, s->R, G, s->xe, K, 1.0, A, K);
  return total;
}

/* Pairs of one pdf are cut into parts of PART_CHUNKS chunks from the pdf's
 * first pair; a part's statistics are summed chunk by chunk from zero into
 * its own buffer, and a pdf's parts are added to its accumulators in part
 * order.  The cut depends on the data only, so the accumulators are the
 * same bits whatever the thread count.  The parts of all pdfs, in (pdf,
 * part) order, run in waves of at most WAVE_DOUBLES buffer doubles (at
 * least one part): one parallel loop per wave (dynamic schedule), then the
 * wave's buffers added in order.  One wave covers a small model's whole
 * E-step (8 pdfs of 45,000 pairs: 88 parts), so the threads meet at one
 * barrier per call instead of one per nth parts of each pdf -- on a loaded
 * 2-core host each barrier waited for a descheduled thread (bench/RESULTS.md
 * Y3). */
enum { PART_CHUNKS = 16 };
#define WAVE_DOUBLES ((int64_t)8 << 20)

static double blas_accumulate(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd) {
  blas_model *m = (blas_model *)dm;
  const blas_data *d = (const blas_data *)dd;
  const blas_ctx *ctx = b->ctx;
  if (d->D != m->D) gh_die("accumulate: data dimension %d, model dimension %d", d->D, m->D);
  if (d->max_pdf >= m->P)
    gh_die("accumulate: the data has pdf id %d, the model only %d pdfs", d->max_pdf, m->P);
  const int32_t np = d->max_pdf + 1;
  const int nth = ctx->threads;
  const int64_t part_pairs = (int64_t)CHUNK_PAIRS * PART_CHUNKS;
  double *tot = gh_calloc((size_t)np + 1, sizeof(double));
  int64_t ncand = 0; /* Gaussians within GH_CAND_NATS of their pair's best, summed over the pairs */
  /* the parts: pdf, first pair (relative to the pdf's), buffer offset */
  int64_t nparts = 0;
  for (int32_t p = 0; p < np; ++p) {
    const int64_t n = d->off[p + 1] - d->off[p];
    if (n > 0 && m->G[p] > 0 && m->exact[p] != 2) nparts += (n + part_pairs - 1) / part_pairs;
  }
  int32_t *ppdf = gh_malloc(sizeof(int32_t) * (size_t)(nparts + 1));
  int64_t *pk0 = gh_malloc(sizeof(int64_t) * (size_t)(nparts + 1));
  int64_t *pbuf = gh_malloc(sizeof(int64_t) * (size_t)(nparts + 1));
  double *pt = gh_malloc(sizeof(double) * (size_t)(nparts + 1));
  for (int32_t p = 0, q = 0; p < np; ++p) {
    const int64_t n = d->off[p + 1] - d->off[p];
    if (n == 0 || m->G[p] == 0 || m->exact[p] == 2) continue;
    for (int64_t k0 = 0; k0 < n; k0 += part_pairs, ++q) { ppdf[q] = p; pk0[q] = k0; }
  }
  double *buf = NULL;
  int64_t buf_cap = 0;
  for (int64_t q0 = 0; q0 < nparts;) {
    int64_t q1 = q0, nb = 0;
    while (q1 < nparts) {
      const int32_t p = ppdf[q1];
      const int64_t GK = (int64_t)m->G[p] * (m->full[p] ? m->Kf : m->Kd);
      if (q1 > q0 && nb + GK > WAVE_DOUBLES) break;
      pbuf[q1++] = nb;
      nb += GK;
    }
    if (nb > buf_cap) { free(buf); buf_cap = nb; buf = gh_malloc(sizeof(double) * (size_t)nb); }
#pragma omp parallel num_threads(q1 - q0 < nth ? (int)(q1 - q0) : nth) reduction(+ : ncand)
    {
      scratch s = {0};
#pragma omp for schedule(dynamic, 1)
      for (int64_t q = q0; q < q1; ++q) {
        const int32_t p = ppdf[q];
        const int64_t n = d->off[p + 1] - d->off[p];
        const int64_t k0 = pk0[q], k1 = k0 + part_pairs < n ? k0 + part_pairs : n;
        double *P = buf + pbuf[q];
        memset(P, 0, sizeof(double) * (size_t)m->G[p] * (m->full[p] ? m->Kf : m->Kd));
        double t = 0.0;
        for (int64_t k = k0; k < k1; k += CHUNK_PAIRS)
          t += estep_chunk(m, d, p, d->off[p] + k, (int)(k1 - k < CHUNK_PAIRS ? k1 - k : CHUNK_PAIRS), &s, P, &ncand);
        pt[q] = t;
      }
      scratch_free(&s);
    }
    for (int64_t q = q0; q < q1; ++q) {
      const int32_t p = ppdf[q];
      const int32_t K = m->full[p] ? m->Kf : m->Kd;
      const size_t GK = (size_t)m->G[p] * K;
      double *A = (m->full[p] ? m->Af : m->Ad) + (size_t)m->row[p] * K;
      const double *P = buf + pbuf[q];
      for (size_t e = 0; e < GK; ++e) A[e] += P[e];
      tot[p] += pt[q];
    }
    q0 = q1;
  }
  free(buf); free(ppdf); free(pk0); free(pbuf); free(pt);
  /* pdfs in the reference form: their pairs, renumbered, on the reference backend */
  int64_t nr = 0;
  for (int32_t j = 0; j < m->nref; ++j)
    if (m->ref_pdf[j] < np) nr += d->off[m->ref_pdf[j] + 1] - d->off[m->ref_pdf[j]];
  if (nr > 0) {
    gh_frame_pdf *rp = gh_malloc(sizeof *rp * (size_t)nr);
    int64_t q = 0;
    for (int32_t j = 0; j < m->nref; ++j) {
      const int32_t p = m->ref_pdf[j];
      if (p >= np) continue;
      for (int64_t k = d->off[p]; k < d->off[p + 1]; ++k) rp[q++] = (gh_frame_pdf){d->frame[k], j, d->weight[k]};
    }
    gh_dev_data *rd = m->ref_b->ops->gmm->data_upload(m->ref_b, d->X, d->T, d->D, rp, nr);
    tot[0] += m->ref_b->ops->gmm->accumulate(m->ref_b, m->ref_m, rd);
    m->ref_b->ops->gmm->data_free(m->ref_b, rd);
    free(rp);
  }
  double total = 0.0;
  for (int32_t p = 0; p < np; ++p) total += tot[p];
  static const int path[4] = {GH_PATH_FP32, GH_PATH_DOUBLE, GH_PATH_DOUBLE, GH_PATH_WHITE};
  int64_t counted = 0;
  for (int32_t p = 0; p < np; ++p) {
    const int64_t n = d->off[p + 1] - d->off[p];
    b->path_pairs[path[m->exact[p]]] += n;
    if (m->exact[p] != 2) counted += n;
  }
  b->cand_pairs += counted;
  b->cand_gauss += ncand;
  free(tot);
  return total;
}

static void blas_acc_fetch(gh_backend *b, gh_dev_model *dm, gh_accs_set *accs) {
  blas_model *m = (blas_model *)dm;
  if (accs->num_pdfs != m->P)
    gh_die("acc_fetch: accumulators have %d pdfs, the model %d", accs->num_pdfs, m->P);
  for (int32_t p = 0; p < m->P; ++p) {
    gh_gmm_accs *a = &accs->pdfs[p];
    const int full = m->full[p];
    if (a->num_gauss != m->G[p] || a->dim != m->D || (a->type == GH_COV_FULL) != full)
      gh_die("acc_fetch: pdf %d: accumulators (%d Gaussians, dim %d) do not match the model "
             "(%d Gaussians, dim %d)", p, a->num_gauss, a->dim, m->G[p], m->D);
    const int32_t K = full ? m->Kf : m->Kd, S = full ? m->D * (m->D + 1) / 2 : m->D;
    const double *A = (full ? m->Af : m->Ad) + (size_t)m->row[p] * K;
    for (int32_t g = 0; g < m->G[p]; ++g)
      gh_gemm_stats_uncentre(m->D, full, m->c, A + (size_t)g * K, &a->occupancy[g],
                             a->mean_accs + (size_t)g * m->D, a->var_accs + (size_t)g * S);
  }
  if (m->nref) { /* uncentred statistics of the reference-form pdfs (zero rows in A above) */
    gh_accs_set sa;
    gh_accs_init(&sa, &m->sub);
    m->ref_b->ops->gmm->acc_fetch(m->ref_b, m->ref_m, &sa);
    for (int32_t j = 0; j < m->nref; ++j) {
      gh_gmm_accs *a = &accs->pdfs[m->ref_pdf[j]];
      const gh_gmm_accs *r = &sa.pdfs[j];
      const int64_t G = r->num_gauss, S = r->type == GH_COV_FULL ? gh_packed_size(r->dim) : r->dim;
      for (int64_t i = 0; i < G; ++i) a->occupancy[i] += r->occupancy[i];
      for (int64_t i = 0; i < G * r->dim; ++i) a->mean_accs[i] += r->mean_accs[i];
      for (int64_t i = 0; i < G * S; ++i) a->var_accs[i] += r->var_accs[i];
    }
    gh_accs_free(&sa);
  }
}

/* backend.h acc_raw_*: Ad then Af, the centred statistics as accumulated
 * (acc_fetch uncentres them); acc_commit: cpu-dd.h over the same layout. */
/* Pdfs evaluated in the reference form (exact == 2) keep their statistics
 * in the embedded cpu-ref model, outside Ad / Af: the raw and double-double
 * paths would drop them, so they refuse (one clear error, never a sum
 * without them). */
static void no_ref_pdfs(const blas_model *m, const char *op) {
  if (m->nref > 0)
    gh_die("%s: %d pdf(s) of this model (the first: pdf %d) are so far from the data's centre that the cpu "
           "backend evaluates them in the reference form, which the trainers' raw accumulators do not cover; "
           "train with --device=cpu-ref", op, m->nref, m->ref_pdf[0]);
}
static int64_t blas_acc_raw_size(gh_backend *b, gh_dev_model *dm) {
  blas_model *m = (blas_model *)dm;
  no_ref_pdfs(m, "accumulators");
  return m->Gd * m->Kd + m->Gf * m->Kf;
}
static void blas_acc_raw_get(gh_backend *b, gh_dev_model *dm, double *host) {
  blas_model *m = (blas_model *)dm;
  memcpy(host, m->Ad, sizeof(double) * (size_t)(m->Gd * m->Kd));
  memcpy(host + m->Gd * m->Kd, m->Af, sizeof(double) * (size_t)(m->Gf * m->Kf));
}
static void blas_acc_raw_set(gh_backend *b, gh_dev_model *dm, const double *host) {
  blas_model *m = (blas_model *)dm;
  memcpy(m->Ad, host, sizeof(double) * (size_t)(m->Gd * m->Kd));
  memcpy(m->Af, host + m->Gd * m->Kd, sizeof(double) * (size_t)(m->Gf * m->Kf));
}
static void blas_acc_commit(gh_backend *b, gh_dev_model *dm, int flags) {
  blas_model *m = (blas_model *)dm;
  no_ref_pdfs(m, "acc_commit");
  const int64_t nd = m->Gd * m->Kd, n = nd + m->Gf * m->Kf;
  if (!m->master) m->master = gh_calloc((size_t)(2 * n + 1), sizeof(double));
  gh_cpu_acc_commit(m->Ad, m->master, m->master + n, nd, flags);
  gh_cpu_acc_commit(m->Af, m->master + nd, m->master + n + nd, n - nd, flags);
}
static void blas_acc_master_get(gh_backend *b, gh_dev_model *dm, double *hi, double *lo) {
  blas_model *m = (blas_model *)dm;
  const int64_t n = blas_acc_raw_size(b, dm);
  if (!m->master) m->master = gh_calloc((size_t)(2 * n + 1), sizeof(double));
  memcpy(hi, m->master, sizeof(double) * (size_t)n);
  memcpy(lo, m->master + n, sizeof(double) * (size_t)n);
}

static const gh_ops_gmm blas_gmm = {
    .free = blas_free,
    .model_upload = blas_model_upload,
    .model_free = blas_model_free,
    .loglikes = blas_loglikes,
    .acc_zero = blas_acc_zero,
    .data_upload = blas_data_upload,
    .data_free = blas_data_free,
    .accumulate = blas_accumulate,
    .acc_fetch = blas_acc_fetch,
};
static const gh_ops_pairs blas_pairs = {.data_set_pairs = blas_data_set_pairs};
static const gh_ops_dist blas_dist = {
    .acc_raw_size = blas_acc_raw_size,
    .acc_raw_get = blas_acc_raw_get,
    .acc_raw_set = blas_acc_raw_set,
    .acc_commit = blas_acc_commit, /* cpu-dd.h */
    .acc_master_get = blas_acc_master_get,
};
/* HMM kernels, shrinkage statistics and the aligner: the CPU reference's
 * sub-tables (kernels/cpu/cpu-hmm.c, shrink.c, align.c; they never touch
 * b->ctx). */
static const gh_backend_ops blas_ops = {
    .name = "cpu",
    .gmm = &blas_gmm,
    .pairs = &blas_pairs,
    .hmm = &gh_cpu_ref_hmm,
    .shrink = &gh_cpu_ref_shrink,
    .dist = &blas_dist,
    .align = &gh_cpu_ref_align,
};

gh_backend *gh_backend_blas_new(void) {
  gh_host_blas_serial(); /* single-threaded BLAS calls: we thread around them */
  gh_backend *b = gh_calloc(1, sizeof *b);
  blas_ctx *c = gh_calloc(1, sizeof *c);
  c->threads = omp_get_max_threads();
  if (c->threads < 1) c->threads = 1;
  b->ops = &blas_ops;
  b->ctx = c;
  snprintf(b->device_name, sizeof b->device_name, "cpu (BLAS, %d thread%s)", c->threads,
           c->threads == 1 ? "" : "s");
  return b;
}
