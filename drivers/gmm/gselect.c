/* gselect.c -- see gselect.h. */
#include "gmm/gselect.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"

void gh_gmm_explode(const gh_gmm *gmm, gh_gmm_set *out) {
  const int32_t G = gmm->num_gauss, D = gmm->dim;
  const int64_t S = gh_gmm_cov_size(gmm);
  memset(out, 0, sizeof *out);
  out->dim = D;
  out->num_pdfs = G;
  out->form = GH_SET_AM;
  out->pdfs = gh_calloc((size_t)(G > 0 ? G : 1), sizeof(gh_gmm));
  for (int32_t g = 0; g < G; ++g) {
    gh_gmm *p = &out->pdfs[g];
    gh_gmm_init(p, gmm->type, 1, D);
    /* the backends evaluate a Gaussian from its weight, means_invvars and
     * inv_vars (the normaliser recomputed in double, the stored gconst
     * unused: doc/reliability.md "Numerical contract"), so w_g must stay
     * the Gaussian's weight for pdf g's log-likelihood to include log w_g */
    p->gconsts[0] = gmm->gconsts[g];
    p->weights[0] = gmm->weights[g];
    memcpy(p->means_invvars, gmm->means_invvars + (int64_t)g * D, sizeof(float) * D);
    memcpy(p->inv_vars, gmm->inv_vars + (int64_t)g * S, sizeof(float) * S);
  }
}

typedef struct { float v; int32_t i; } pair_t;

/* Decreasing (value, index), as std::greater on std::pair<float, int32>. */
static int pair_desc(const void *a, const void *b) {
  const pair_t *x = a, *y = b;
  if (x->v != y->v) return x->v < y->v ? 1 : -1;
  return x->i < y->i ? 1 : (x->i > y->i ? -1 : 0);
}

int32_t gh_gselect_frame(const float *ll, int32_t G, int32_t n, const int32_t *allowed, int32_t na, int32_t *out,
                         double *lse) {
  const int32_t m = allowed ? na : G;
  pair_t stackbuf[256], *pr = m <= 256 ? stackbuf : gh_malloc(sizeof(pair_t) * (size_t)m);
  for (int32_t j = 0; j < m; ++j) {
    int32_t g = allowed ? allowed[j] : j;
    pr[j].v = ll[g];
    pr[j].i = g;
  }
  qsort(pr, (size_t)m, sizeof *pr, pair_desc);
  int32_t k = n < m ? n : m;
  double mx = k > 0 ? pr[0].v : -INFINITY, s = 0.0;
  for (int32_t j = 0; j < k; ++j) {
    out[j] = pr[j].i;
    s += exp((double)pr[j].v - mx);
  }
  *lse = (k > 0 && isfinite(mx)) ? mx + log(s) : mx;
  if (pr != stackbuf) free(pr);
  return k;
}

/* Decreasing posterior; ties by index (std::nth_element + sort leave their
 * order unspecified; ties of float posteriors are rare). */
static int post_desc(const void *a, const void *b) {
  const pair_t *x = a, *y = b;
  if (x->v != y->v) return x->v < y->v ? 1 : -1;
  return x->i < y->i ? -1 : (x->i > y->i ? 1 : 0);
}

double gh_post_topn(const float *ll, int32_t G, int32_t n, float min_post, int32_t *idx, float *post, int32_t *k) {
  if (n > G) n = G;
  /* Kaldi VectorBase::ApplySoftMax in float: max, exp(x - max) summed in
   * double... (it sums with Sum() after ApplyExp, in float) */
  float mx = -INFINITY;
  for (int32_t g = 0; g < G; ++g)
    if (ll[g] > mx) mx = ll[g];
  pair_t stackbuf[256], *pr = G <= 256 ? stackbuf : gh_malloc(sizeof(pair_t) * (size_t)G);
  double sum = 0.0;
  for (int32_t g = 0; g < G; ++g) {
    pr[g].v = expf(ll[g] - mx);
    pr[g].i = g;
    sum += pr[g].v;
  }
  const double lse = mx + log(sum);
  for (int32_t g = 0; g < G; ++g) pr[g].v = (float)(pr[g].v / sum);
  qsort(pr, (size_t)G, sizeof *pr, post_desc);
  int32_t m = n;
  while (m > 1 && pr[m - 1].v < min_post) --m;
  float tot = 0.0f;
  for (int32_t j = 0; j < m; ++j) tot += pr[j].v;
  const float inv = 1.0f / tot;
  for (int32_t j = 0; j < m; ++j) {
    idx[j] = pr[j].i;
    post[j] = pr[j].v * inv;
  }
  *k = m;
  if (pr != stackbuf) free(pr);
  return lse;
}

uint32_t gh_gmm_flags_parse(const char *s, const char *option) {
  uint32_t f = 0;
  for (const char *p = s; *p; ++p) {
    switch (*p) {
      case 'm': f |= 1u; break;
      case 'v': f |= 2u; break;
      case 'w': f |= 4u; break;
      case 't': break;
      default: gh_die("--%s=%s: invalid character '%c' (expected a subset of mvw)", option, s, *p);
    }
  }
  return f;
}

uint32_t gh_gmm_flags_augment(uint32_t flags) {
  if (flags & 2u) flags |= 1u;
  if (flags & 1u) flags |= 4u;
  if (!(flags & 4u)) {
    gh_warn("adding in the weights (\"w\") to empty update flags");
    flags |= 4u;
  }
  return flags;
}

gh_gmm *gh_global_gmm(gh_gmm_set *s, gh_covtype type, const char *name) {
  const int diag = type == GH_COV_DIAG;
  if (s->num_pdfs != 1) {
    char got[64];
    snprintf(got, sizeof got, "a GMM set of %d pdfs", s->num_pdfs);
    gh_die_type(name, "a global GMM", diag ? "one <DiagGMM>" : "one <FullGMM>", got);
  }
  if (s->pdfs[0].type != type)
    gh_die_type(name, diag ? "a diagonal-covariance GMM" : "a full-covariance GMM", diag ? "<DiagGMM>" : "<FullGMM>",
                diag ? "<FullGMM> (that is a full-covariance GMM)" : "<DiagGMM> (that is a diagonal-covariance GMM)");
  return &s->pdfs[0];
}


void gh_gmm_full_to_diag(gh_gmm *dst, const gh_gmm *src) {
  const int32_t G = src->num_gauss, D = src->dim;
  const int64_t S = gh_packed_size(D);
  double *w = gh_malloc(sizeof(double) * (size_t)(G > 0 ? G : 1));
  double *mu = gh_malloc(sizeof(double) * (size_t)((int64_t)G * D + 1));
  double *cov = gh_malloc(sizeof(double) * (size_t)((int64_t)G * S + 1));
  gh_gmm_get_moments(src, w, mu, cov);
  gh_gmm_free(dst);
  gh_gmm_init(dst, GH_COV_DIAG, G, D);
  for (int32_t g = 0; g < G; ++g) {
    dst->weights[g] = src->weights[g];
    for (int32_t i = 0; i < D; ++i) {
      const float iv = (float)(1.0 / cov[(int64_t)g * S + gh_packed_index(i, i)]);
      dst->inv_vars[(int64_t)g * D + i] = iv;
      dst->means_invvars[(int64_t)g * D + i] = (float)mu[(int64_t)g * D + i] * iv;
    }
  }
  gh_gmm_compute_gconsts(dst);
  free(w); free(mu); free(cov);
}
