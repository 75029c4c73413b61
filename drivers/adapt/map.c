/* map.c -- MAP adaptation of diagonal GMMs; see map.h. */
#include "adapt/map.h"

#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "gmm/gmm-est.h"

void gh_map_opts_default(gh_map_opts *o) {
  o->mean_tau = 10.0;
  o->variance_tau = 50.0;
  o->weight_tau = 10.0;
  o->flags = 1u;
}

int gh_map_parse_flags(const char *s, uint32_t *flags) {
  uint32_t f = 0;
  if (!s || !*s) return -1;
  for (; *s; ++s) {
    if (*s == 'm') f |= 1u;
    else if (*s == 'v') f |= 2u;
    else if (*s == 'w') f |= 4u;
    else return -1;
  }
  *flags = f;
  return 0;
}

double gh_gmm_map_update(gh_gmm *g, const gh_gmm_accs *a, const gh_map_opts *o, int pdf_index) {
  if (g->type != GH_COV_DIAG || a->type != GH_COV_DIAG)
    gh_die("MAP adaptation: pdf %d is not a diagonal-covariance GMM", pdf_index);
  if (a->num_gauss != g->num_gauss || a->dim != g->dim)
    gh_die("MAP adaptation: pdf %d has %d Gaussians of dimension %d, its statistics %d of dimension %d", pdf_index,
           g->num_gauss, g->dim, a->num_gauss, a->dim);
  if (o->mean_tau < 0 || o->variance_tau < 0 || o->weight_tau < 0)
    gh_die("MAP adaptation: tau values must be >= 0");
  const int32_t G = g->num_gauss, D = g->dim;
  double obj_old = gh_gmm_ml_objective(g, a);
  double *w = gh_malloc(sizeof(double) * G), *mu = gh_malloc(sizeof(double) * G * D),
         *var = gh_malloc(sizeof(double) * G * D);
  gh_gmm_get_moments(g, w, mu, var);
  double occ_sum = 0;
  for (int32_t k = 0; k < G; ++k) occ_sum += a->occupancy[k];
  for (int32_t k = 0; k < G; ++k) {
    double occ = a->occupancy[k];
    if ((o->flags & 4u) && occ_sum + o->weight_tau > 0) w[k] = (occ + o->weight_tau * w[k]) / (occ_sum + o->weight_tau);
    if (occ <= 0) continue;
    const double *m = a->mean_accs + (int64_t)k * D, *s = a->var_accs + (int64_t)k * D;
    double *mk = mu + (int64_t)k * D, *vk = var + (int64_t)k * D;
    if (o->flags & 1u)
      for (int32_t d = 0; d < D; ++d) mk[d] = (m[d] + o->mean_tau * mk[d]) / (occ + o->mean_tau);
    if (o->flags & 2u)
      for (int32_t d = 0; d < D; ++d) {
        double v = s[d] / occ + mk[d] * mk[d] - 2.0 * mk[d] * m[d] / occ;
        vk[d] = (occ * v + o->variance_tau * vk[d]) / (occ + o->variance_tau);
      }
  }
  if (gh_gmm_set_moments(g, w, mu, var) != 0) gh_die("MAP adaptation, pdf %d: %s", pdf_index, gh_last_error());
  gh_gmm_compute_gconsts(g);
  free(w); free(mu); free(var);
  return gh_gmm_ml_objective(g, a) - obj_old;
}

double gh_gmm_set_map_update(gh_gmm_set *s, const gh_accs_set *accs, const gh_map_opts *o, double *count) {
  if (accs->num_pdfs != s->num_pdfs)
    gh_die("MAP adaptation: statistics for %d pdfs, model has %d", accs->num_pdfs, s->num_pdfs);
  double change = 0, tot = 0;
  for (int32_t p = 0; p < s->num_pdfs; ++p) {
    change += gh_gmm_map_update(&s->pdfs[p], &accs->pdfs[p], o, p);
    for (int32_t k = 0; k < accs->pdfs[p].num_gauss; ++k) tot += accs->pdfs[p].occupancy[k];
  }
  if (count) *count = tot;
  return change;
}
