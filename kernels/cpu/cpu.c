/* cpu.c -- the plain-C reference backend.
 *
 * A full, readable implementation of every kernel in backend.h; the CUDA
 * backend is tested against it.  No blocking, no SIMD, no threads: one loop
 * nest per formula.
 *
 * Per-Gaussian log-likelihood: the float64 reference form of
 * kernels/gemm-forms.h (doc/reliability.md, "Numerical contract"):
 *   ll_g(x) = norm_g - 0.5 (x - mu_g)' P_g (x - mu_g)
 * with mu_g = P_g^{-1} b_g and norm_g = log w_g + 0.5 log det P_g - D/2 log 2pi
 * computed in double from the stored float means_invvars b and inverse
 * (co)variances P at upload (the stored float gconst is not used: Kaldi's
 * expanded form gconst + x.b - 0.5 x'Px cancels large terms for features
 * with an offset, and a float gconst of -1e7 alone is off by 0.5 nats).
 * Everything in double, so this backend is the reference.  A dead Gaussian
 * (weight 0, P not positive definite) is -inf and never poisons the others.
 * Per-pdf log-likelihood: log-sum-exp over the pdf's Gaussians (max + log
 * sum exp(ll - max)).
 *
 * E-step (Araújo et al. 2014, eq. for gamma; Kaldi AccumDiagGmm /
 * AccumFullGmm): for a pair (x, pdf, w), gamma_g = w exp(ll_g - lse), then
 * occ_g += gamma_g, mean_g += gamma_g x, var_g += gamma_g x.^2 (diag) or
 * gamma_g x x' (full, packed lower triangle), all in double.
 */
#include "backend.h"
#include "gemm-forms.h"
#include "base/gh-base.h"
#include "cpu/cpu-dd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int32_t dim, num_pdfs;
  gh_gmm *pdfs;      /* deep copies of the model's GMMs */
  double **occ;      /* [P][G] */
  double **mean;     /* [P][G x D] */
  double **var;      /* [P][G x S], S = D (diag) or D(D+1)/2 (full) */
  double **mu;       /* [P][G x D] exact means (gemm-forms.h gh_gauss_exact) */
  double **norm;     /* [P][G] normalisers, -inf for a dead Gaussian */
  double *scratch;   /* [max G] */
  double *master;    /* acc_commit: double-double master, hi [n] then lo [n] in the raw layout; NULL until used */
} cpu_model;

typedef struct { int dummy; } cpu_ctx;

static int64_t at_least1(int64_t n) { return n > 0 ? n : 1; }

static int64_t var_size(const gh_gmm *g) {
  return g->type == GH_COV_FULL ? gh_packed_size(g->dim) : g->dim;
}

/* Fills ll[G] (exact form, gemm-forms.h) and returns log sum_g exp(ll[g])
 * (-inf if G == 0 or every term is -inf). */
static double gmm_loglikes(const cpu_model *m, int32_t p, const float *x, double *ll) {
  const gh_gmm *gmm = &m->pdfs[p];
  const int32_t D = gmm->dim;
  double mx = -INFINITY;
  for (int32_t g = 0; g < gmm->num_gauss; ++g) {
    ll[g] = gh_gauss_exact_loglike(gmm, g, m->mu[p] + (int64_t)g * D, m->norm[p][g], x);
    if (ll[g] > mx) mx = ll[g];
  }
  if (!(mx > -INFINITY)) return mx; /* -inf, or NaN from a NaN frame */
  double sum = 0.0;
  for (int32_t g = 0; g < gmm->num_gauss; ++g) sum += exp(ll[g] - mx);
  return mx + log(sum);
}

static void cpu_free(gh_backend *b) {
  free(b->ctx);
  free(b);
}

static gh_dev_model *cpu_model_upload(gh_backend *b, const gh_gmm_set *s) {
  cpu_model *m = gh_calloc(1, sizeof *m);
  m->dim = s->dim;
  m->num_pdfs = s->num_pdfs;
  m->pdfs = gh_calloc(s->num_pdfs > 0 ? s->num_pdfs : 1, sizeof *m->pdfs);
  m->occ = gh_calloc(s->num_pdfs > 0 ? s->num_pdfs : 1, sizeof *m->occ);
  m->mean = gh_calloc(s->num_pdfs > 0 ? s->num_pdfs : 1, sizeof *m->mean);
  m->var = gh_calloc(s->num_pdfs > 0 ? s->num_pdfs : 1, sizeof *m->var);
  m->mu = gh_calloc(s->num_pdfs > 0 ? s->num_pdfs : 1, sizeof *m->mu);
  m->norm = gh_calloc(s->num_pdfs > 0 ? s->num_pdfs : 1, sizeof *m->norm);
  double *work = gh_malloc(sizeof(double) * gh_gauss_work_size(s->dim));
  int32_t maxg = 1;
  for (int32_t p = 0; p < s->num_pdfs; ++p) {
    const gh_gmm *src = &s->pdfs[p];
    if (src->dim != s->dim)
      gh_die("model upload: pdf %d has dimension %d, the set has %d", p, src->dim, s->dim);
    gh_gmm *g = &m->pdfs[p];
    int64_t G = src->num_gauss, D = src->dim, S = var_size(src);
    g->type = src->type;
    g->num_gauss = src->num_gauss;
    g->dim = src->dim;
    g->gconsts = gh_malloc(at_least1(G) * sizeof(float));
    g->weights = gh_malloc(at_least1(G) * sizeof(float));
    g->means_invvars = gh_malloc(at_least1(G * D) * sizeof(float));
    g->inv_vars = gh_malloc(at_least1(G * S) * sizeof(float));
    memcpy(g->gconsts, src->gconsts, G * sizeof(float));
    memcpy(g->weights, src->weights, G * sizeof(float));
    memcpy(g->means_invvars, src->means_invvars, G * D * sizeof(float));
    memcpy(g->inv_vars, src->inv_vars, G * S * sizeof(float));
    m->occ[p] = gh_calloc(at_least1(G), sizeof(double));
    m->mean[p] = gh_calloc(at_least1(G * D), sizeof(double));
    m->var[p] = gh_calloc(at_least1(G * S), sizeof(double));
    m->mu[p] = gh_malloc(at_least1(G * D) * sizeof(double));
    m->norm[p] = gh_malloc(at_least1(G) * sizeof(double));
    for (int32_t k = 0; k < G; ++k) {
      gh_gauss_info info;
      gh_gauss_exact(g, k, m->mu[p] + k * D, &info, work);
      m->norm[p][k] = info.norm;
    }
    if (src->num_gauss > maxg) maxg = src->num_gauss;
  }
  free(work);
  m->scratch = gh_malloc(maxg * sizeof(double));
  return (gh_dev_model *)m;
}

static void cpu_model_free(gh_backend *b, gh_dev_model *dm) {
  cpu_model *m = (cpu_model *)dm;
  if (!m) return;
  for (int32_t p = 0; p < m->num_pdfs; ++p) {
    free(m->pdfs[p].gconsts);
    free(m->pdfs[p].weights);
    free(m->pdfs[p].means_invvars);
    free(m->pdfs[p].inv_vars);
    free(m->occ[p]);
    free(m->mean[p]);
    free(m->var[p]);
    free(m->mu[p]);
    free(m->norm[p]);
  }
  free(m->mu);
  free(m->norm);
  free(m->pdfs);
  free(m->occ);
  free(m->mean);
  free(m->var);
  free(m->scratch);
  free(m->master);
  free(m);
}

static void cpu_loglikes(gh_backend *b, gh_dev_model *dm, const float *X, int32_t T, float *out) {
  cpu_model *m = (cpu_model *)dm;
  const int32_t D = m->dim, P = m->num_pdfs;
  double t_start = gh_seconds();
  for (int32_t t = 0; t < T; ++t) {
    const float *x = X + (int64_t)t * D;
    float *o = out + (int64_t)t * P;
    for (int32_t p = 0; p < P; ++p) o[p] = (float)gmm_loglikes(m, p, x, m->scratch);
  }
  b->kernel_seconds += gh_seconds() - t_start;
  b->path_pairs[GH_PATH_DOUBLE] += (int64_t)T * P; /* the reference form, in double */
}

static void cpu_acc_zero(gh_backend *b, gh_dev_model *dm) {
  cpu_model *m = (cpu_model *)dm;
  for (int32_t p = 0; p < m->num_pdfs; ++p) {
    const gh_gmm *g = &m->pdfs[p];
    int64_t G = g->num_gauss;
    memset(m->occ[p], 0, G * sizeof(double));
    memset(m->mean[p], 0, G * g->dim * sizeof(double));
    memset(m->var[p], 0, G * var_size(g) * sizeof(double));
  }
}

/* Resident E-step data of the reference: the caller's host arrays, read in
 * place (backend.h data_upload). */
typedef struct {
  const float *X;
  int32_t T, D, max_pdf;
  const gh_frame_pdf *pairs;
  int64_t npairs;
} cpu_data;

static gh_dev_data *cpu_data_upload(gh_backend *b, const float *X, int32_t T, int32_t D,
                                    const gh_frame_pdf *pairs, int64_t npairs) {
  cpu_data *d = gh_calloc(1, sizeof *d);
  d->X = X; d->T = T; d->D = D; d->pairs = pairs; d->npairs = npairs;
  d->max_pdf = gh_pairs_check(pairs, npairs, T);
  return (gh_dev_data *)d;
}

static void cpu_data_free(gh_backend *b, gh_dev_data *dd) { free(dd); }

static void cpu_data_set_pairs(gh_backend *b, gh_dev_data *dd, const gh_frame_pdf *pairs, int64_t npairs) {
  cpu_data *d = (cpu_data *)dd;
  d->max_pdf = gh_pairs_check(pairs, npairs, d->T);
  d->pairs = pairs;
  d->npairs = npairs;
}

static double cpu_accumulate(gh_backend *b, gh_dev_model *dm, gh_dev_data *dd) {
  cpu_model *m = (cpu_model *)dm;
  const cpu_data *d = (const cpu_data *)dd;
  const int32_t D = m->dim;
  if (d->D != D) gh_die("accumulate: data dimension %d, model dimension %d", d->D, D);
  if (d->max_pdf >= m->num_pdfs)
    gh_die("accumulate: the data has pdf id %d, the model only %d pdfs", d->max_pdf, m->num_pdfs);
  double total = 0.0;
  int64_t ncand = 0;
  for (int64_t k = 0; k < d->npairs; ++k) {
    const gh_frame_pdf *pr = &d->pairs[k];
    const gh_gmm *gmm = &m->pdfs[pr->pdf];
    const float *x = d->X + (int64_t)pr->frame * D;
    double *ll = m->scratch;
    double lse = gmm_loglikes(m, pr->pdf, x, ll);
    if (gmm->num_gauss == 0) continue;
    total += pr->weight * lse;
    if (!(lse > -INFINITY)) continue; /* no Gaussian can produce x (or NaN): no statistics */
    double mx = -INFINITY;
    for (int32_t g = 0; g < gmm->num_gauss; ++g) mx = ll[g] > mx ? ll[g] : mx;
    for (int32_t g = 0; g < gmm->num_gauss; ++g) ncand += ll[g] - mx >= -GH_CAND_NATS;
    double *occ = m->occ[pr->pdf], *mean = m->mean[pr->pdf], *var = m->var[pr->pdf];
    const int64_t S = var_size(gmm);
    for (int32_t g = 0; g < gmm->num_gauss; ++g) {
      double gamma = pr->weight * exp(ll[g] - lse);
      if (gamma == 0.0) continue;
      occ[g] += gamma;
      double *mg = mean + (int64_t)g * D, *vg = var + (int64_t)g * S;
      for (int32_t i = 0; i < D; ++i) mg[i] += gamma * x[i];
      if (gmm->type == GH_COV_DIAG) {
        for (int32_t i = 0; i < D; ++i) vg[i] += gamma * x[i] * x[i];
      } else {
        for (int32_t i = 0; i < D; ++i) {
          double gx = gamma * x[i];
          double *row = vg + gh_packed_index(i, 0);
          for (int32_t j = 0; j <= i; ++j) row[j] += gx * x[j];
        }
      }
    }
  }
  b->path_pairs[GH_PATH_DOUBLE] += d->npairs;
  b->cand_pairs += d->npairs;
  b->cand_gauss += ncand;
  return total;
}

static void cpu_acc_fetch(gh_backend *b, gh_dev_model *dm, gh_accs_set *accs) {
  cpu_model *m = (cpu_model *)dm;
  if (accs->num_pdfs != m->num_pdfs)
    gh_die("acc_fetch: accumulators have %d pdfs, the model %d", accs->num_pdfs, m->num_pdfs);
  for (int32_t p = 0; p < m->num_pdfs; ++p) {
    const gh_gmm *g = &m->pdfs[p];
    gh_gmm_accs *a = &accs->pdfs[p];
    if (a->num_gauss != g->num_gauss || a->dim != g->dim || a->type != g->type)
      gh_die("acc_fetch: pdf %d: accumulators (%d Gaussians, dim %d) do not match the model "
             "(%d Gaussians, dim %d)", p, a->num_gauss, a->dim, g->num_gauss, g->dim);
    int64_t G = g->num_gauss, D = g->dim, S = var_size(g);
    for (int64_t i = 0; i < G; ++i) a->occupancy[i] += m->occ[p][i];
    for (int64_t i = 0; i < G * D; ++i) a->mean_accs[i] += m->mean[p][i];
    for (int64_t i = 0; i < G * S; ++i) a->var_accs[i] += m->var[p][i];
  }
}

/* backend.h acc_raw_*: per pdf occupancy [G], first order [G x D],
 * second order [G x S] (gh_accs_flatten's layout without the totals);
 * acc_commit: cpu-dd.h over the same stretches. */
static int64_t cpu_acc_raw_size(gh_backend *b, gh_dev_model *dm) {
  cpu_model *m = (cpu_model *)dm;
  int64_t n = 0;
  for (int32_t p = 0; p < m->num_pdfs; ++p) n += (int64_t)m->pdfs[p].num_gauss * (1 + m->pdfs[p].dim + var_size(&m->pdfs[p]));
  return n;
}
/* dir 0: accumulators -> host, 1: host -> accumulators, 2: acc_commit(flags) */
static void cpu_acc_walk(gh_backend *b, cpu_model *m, double *host, int dir, int flags) {
  const int64_t n = cpu_acc_raw_size(b, (gh_dev_model *)m);
  if (dir == 2 && !m->master) m->master = gh_calloc((size_t)(2 * n + 1), sizeof(double));
  int64_t k = 0;
  for (int32_t p = 0; p < m->num_pdfs; ++p) {
    const gh_gmm *g = &m->pdfs[p];
    double *part[3] = {m->occ[p], m->mean[p], m->var[p]};
    const int64_t cnt[3] = {g->num_gauss, (int64_t)g->num_gauss * g->dim, (int64_t)g->num_gauss * var_size(g)};
    for (int j = 0; j < 3; ++j) {
      if (dir == 0) memcpy(host + k, part[j], sizeof(double) * (size_t)cnt[j]);
      else if (dir == 1) memcpy(part[j], host + k, sizeof(double) * (size_t)cnt[j]);
      else gh_cpu_acc_commit(part[j], m->master + k, m->master + n + k, cnt[j], flags);
      k += cnt[j];
    }
  }
}
static void cpu_acc_raw_get(gh_backend *b, gh_dev_model *dm, double *host) { cpu_acc_walk(b, (cpu_model *)dm, host, 0, 0); }
static void cpu_acc_raw_set(gh_backend *b, gh_dev_model *dm, const double *host) {
  cpu_acc_walk(b, (cpu_model *)dm, (double *)host, 1, 0);
}
static void cpu_acc_commit(gh_backend *b, gh_dev_model *dm, int flags) { cpu_acc_walk(b, (cpu_model *)dm, NULL, 2, flags); }
static void cpu_acc_master_get(gh_backend *b, gh_dev_model *dm, double *hi, double *lo) {
  cpu_model *m = (cpu_model *)dm;
  const int64_t n = cpu_acc_raw_size(b, dm);
  if (!m->master) m->master = gh_calloc((size_t)(2 * n + 1), sizeof(double));
  memcpy(hi, m->master, sizeof(double) * (size_t)n);
  memcpy(lo, m->master + n, sizeof(double) * (size_t)n);
}

static const gh_ops_gmm cpu_gmm = {
    .free = cpu_free,
    .model_upload = cpu_model_upload,
    .model_free = cpu_model_free,
    .loglikes = cpu_loglikes,
    .acc_zero = cpu_acc_zero,
    .data_upload = cpu_data_upload,
    .data_free = cpu_data_free,
    .accumulate = cpu_accumulate,
    .acc_fetch = cpu_acc_fetch,
};
static const gh_ops_pairs cpu_pairs = {.data_set_pairs = cpu_data_set_pairs};
/* HMM kernels: kernels/cpu/cpu-hmm.c */
const gh_ops_hmm gh_cpu_ref_hmm = {
    .hmm_upload = gh_cpu_hmm_upload,
    .hmm_free = gh_cpu_hmm_free,
    .hmm_forward = gh_cpu_hmm_forward,
    .hmm_viterbi = gh_cpu_hmm_viterbi,
    .hmm_fb = gh_cpu_hmm_fb,
};
const gh_ops_shrink gh_cpu_ref_shrink = {.acc_shrink = gh_cpu_acc_shrink}; /* kernels/cpu/shrink.c */
/* Fallbacks of the registry only (not in cpu_ops: gh_backend_acc_gselect
 * and gh_backend_kmeans_* reach them for every backend without its own). */
const gh_ops_gselect gh_cpu_ref_gselect = {.acc_gselect = gh_cpu_acc_gselect}; /* kernels/cpu/gselect.c */
const gh_ops_kmeans gh_cpu_ref_kmeans = {                                   /* kernels/cpu/kmeans.c */
    .kmeans_upload = gh_cpu_kmeans_upload,
    .kmeans_nearest = gh_cpu_kmeans_nearest,
    .kmeans_fetch = gh_cpu_kmeans_fetch,
    .kmeans_free = gh_cpu_kmeans_free,
};
const gh_ops_align gh_cpu_ref_align = {.align_batch = gh_cpu_align_batch}; /* kernels/cpu/align.c */
static const gh_ops_dist cpu_dist = {
    .acc_raw_size = cpu_acc_raw_size,
    .acc_raw_get = cpu_acc_raw_get,
    .acc_raw_set = cpu_acc_raw_set,
    .acc_commit = cpu_acc_commit, /* cpu-dd.h */
    .acc_master_get = cpu_acc_master_get,
};
static const gh_backend_ops cpu_ops = {
    .name = "cpu-ref",
    .gmm = &cpu_gmm,
    .pairs = &cpu_pairs,
    .hmm = &gh_cpu_ref_hmm,
    .shrink = &gh_cpu_ref_shrink,
    .dist = &cpu_dist,
    .align = &gh_cpu_ref_align,
};

const gh_backend_ops *gh_backend_cpu_ops(void) { return &cpu_ops; }

/* The CPU reference backend; never fails. */
gh_backend *gh_backend_cpu_new(void) {
  gh_backend *b = gh_calloc(1, sizeof *b);
  b->ops = &cpu_ops;
  b->ctx = gh_calloc(1, sizeof(cpu_ctx));
  strcpy(b->device_name, "cpu-ref");
  return b;
}
