/* test_dist_em.c -- lib/train/dist-em.h helpers the distributed trainers
 * share: the accumulators' flat form (the reduction buffer) and the model
 * hash (the per-iteration same-model check). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gh-test.h"
#include "gmm/shrink.h"
#include "train/dist-em.h"

static void make_set(gh_gmm_set *s) {
  memset(s, 0, sizeof *s);
  s->dim = 3;
  s->num_pdfs = 2;
  s->form = GH_SET_AM;
  s->pdfs = calloc(2, sizeof(gh_gmm));
  gh_gmm_init(&s->pdfs[0], GH_COV_DIAG, 2, 3);
  gh_gmm_init(&s->pdfs[1], GH_COV_FULL, 3, 3);
  for (int p = 0; p < 2; ++p) {
    gh_gmm *g = &s->pdfs[p];
    const int64_t S = gh_gmm_cov_size(g);
    for (int k = 0; k < g->num_gauss; ++k) {
      g->weights[k] = 1.0f / g->num_gauss;
      for (int i = 0; i < 3; ++i) g->means_invvars[k * 3 + i] = 0.1f * (k + i);
      for (int q = 0; q < S; ++q) g->inv_vars[k * S + q] = 0.0f;
      if (g->type == GH_COV_DIAG) for (int i = 0; i < 3; ++i) g->inv_vars[k * S + i] = 1.0f + k;
      else for (int i = 0, q = 0; i < 3; ++i) for (int j = 0; j <= i; ++j, ++q) g->inv_vars[k * S + q] = i == j ? 2.0f : 0.1f;
    }
    gh_gmm_compute_gconsts(g);
  }
}

int main(void) {
  gh_gmm_set s;
  make_set(&s);
  gh_accs_set a, b;
  gh_accs_init(&a, &s);
  gh_accs_init(&b, &s);
  /* 2 x (1 + 3 + 3) + 3 x (1 + 3 + 6) doubles, then total_loglike, total_frames */
  const size_t n = gh_accs_flat_size(&a, 0);
  GH_TEST_OK(n == 2 * 7 + 3 * 10 + 2, "flat size %zu = 2 diag x 7 + 3 full x 10 + 2 totals", n);
  double *f = malloc(sizeof(double) * n), *g = malloc(sizeof(double) * n);
  for (size_t i = 0; i < n; ++i) f[i] = 1.0 + i * 0.5;
  gh_accs_unflatten(&a, 0, f);
  GH_TEST_OK(a.pdfs[0].occupancy[0] == 1.0 && a.pdfs[0].mean_accs[0] == 2.0 && a.pdfs[1].occupancy[0] == 1.0 + 14 * 0.5,
             "layout: per pdf occupancy, means, variances");
  GH_TEST_OK(a.total_loglike == f[n - 2] && a.total_frames == f[n - 1], "totals last (loglike, frames)");
  gh_accs_flatten(&a, 0, g);
  GH_TEST_OK(!memcmp(f, g, sizeof(double) * n), "flatten(unflatten(x)) == x");
  GH_TEST_OK(gh_accs_flat_size(&a, 1) == 0, "no shrinkage statistics: shrink part empty");
  /* shrinkage statistics: only full pdfs may carry them; use a full-only set */
  gh_gmm_set t;
  make_set(&t);
  gh_gmm_free(&t.pdfs[0]);
  gh_gmm_copy(&t.pdfs[0], &t.pdfs[1]);
  gh_accs_set c;
  gh_accs_init(&c, &t);
  gh_accs_shrink_init(&c, &t);
  const size_t ns = gh_accs_flat_size(&c, 1);
  GH_TEST_OK(ns == (size_t)(6 * gh_shrink_stats_size(3)), "shrink part: 6 Gaussians x %lld", (long long)gh_shrink_stats_size(3));
  double *h = malloc(sizeof(double) * ns), *h2 = malloc(sizeof(double) * ns);
  for (size_t i = 0; i < ns; ++i) h[i] = -1.0 * i;
  gh_accs_unflatten(&c, 1, h);
  gh_accs_flatten(&c, 1, h2);
  GH_TEST_OK(!memcmp(h, h2, sizeof(double) * ns) && c.pdfs[1].shrink[0] == -1.0 * gh_shrink_stats_size(3) * 3,
             "shrink part round trip, pdf order");
  /* the model hash: equal sets equal, any changed bit differs */
  gh_gmm_set u;
  memset(&u, 0, sizeof u);
  gh_gmm_set_copy(&u, &s);
  GH_TEST_OK(gh_gmm_set_hash(&u) == gh_gmm_set_hash(&s), "hash of a copy is equal");
  u.pdfs[1].inv_vars[5] = nextafterf(u.pdfs[1].inv_vars[5], 10.0f);
  GH_TEST_OK(gh_gmm_set_hash(&u) != gh_gmm_set_hash(&s), "one ulp in one inverse covariance changes the hash");
  free(f); free(g); free(h); free(h2);
  gh_accs_free(&a); gh_accs_free(&b); gh_accs_free(&c);
  gh_gmm_set_free(&s); gh_gmm_set_free(&t); gh_gmm_set_free(&u);
  return gh_test_done();
}
