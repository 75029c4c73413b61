/* shrink.c -- shrinkage of full covariances; formulas and sources in
 * shrink.h (Ledoit & Wolf 2004; Chen et al. 2010; Schäfer & Strimmer 2005;
 * Bell & King 2009) and doc/shrink.md. */
#include "gmm/shrink.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "base/opts.h"

static const char *const method_names[] = {"none", "fixed", "occupancy", "oas", "lw", "ss", "diag"};

void gh_shrink_opts_default(gh_shrink_opts *o) {
  memset(o, 0, sizeof *o);
  o->method = GH_SHRINK_NONE;
  o->target = GH_SHRINK_TARGET_DIAG;
}

int gh_shrink_method_parse(const char *s, gh_shrink_method *m) {
  for (int i = 0; i < (int)(sizeof method_names / sizeof *method_names); ++i)
    if (s && !strcmp(s, method_names[i])) {
      *m = (gh_shrink_method)i;
      return 0;
    }
  return -1;
}

const char *gh_shrink_method_name(gh_shrink_method m) {
  return (int)m >= 0 && (int)m < (int)(sizeof method_names / sizeof *method_names) ? method_names[m] : "?";
}

int gh_shrink_needs_stats(gh_shrink_method m) { return m == GH_SHRINK_LW || m == GH_SHRINK_SS; }

int gh_shrink_opts_check(const gh_shrink_opts *o) {
  if (o->method == GH_SHRINK_FIXED && !(o->factor >= 0.0 && o->factor <= 1.0)) {
    gh_set_error("shrinkage factor (lambda) must be in [0, 1], got %g", o->factor);
    return -1;
  }
  if (o->method == GH_SHRINK_OCCUPANCY && !(o->tau >= 0.0 && isfinite(o->tau))) {
    gh_set_error("tau must be finite and >= 0, got %g", o->tau);
    return -1;
  }
  return 0;
}

int gh_shrink_parse(const char *spec, gh_shrink_opts *o) {
  gh_shrink_opts_default(o);
  char name[32];
  const char *colon = strchr(spec, ':');
  size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
  if (len >= sizeof name) len = sizeof name - 1;
  memcpy(name, spec, len);
  name[len] = 0;
  if (gh_shrink_method_parse(name, &o->method) != 0) {
    gh_set_error("unknown shrinkage method '%s' (expected none, fixed:LAMBDA, occupancy:TAU, oas, lw, ss)", name);
    return -1;
  }
  int takes_param = o->method == GH_SHRINK_FIXED || o->method == GH_SHRINK_OCCUPANCY;
  if (colon && !takes_param) {
    gh_set_error("shrinkage method '%s' takes no parameter (got '%s')", name, spec);
    return -1;
  }
  if (takes_param) {
    if (!colon || !colon[1]) {
      gh_set_error("shrinkage method '%s' needs a parameter: %s", name,
                   o->method == GH_SHRINK_FIXED ? "fixed:LAMBDA" : "occupancy:TAU");
      return -1;
    }
    char *end = NULL;
    double v = strtod(colon + 1, &end);
    if (!end || *end) {
      gh_set_error("shrinkage parameter '%s' is not a number", colon + 1);
      return -1;
    }
    if (o->method == GH_SHRINK_FIXED) o->factor = v;
    else o->tau = v;
  }
  return gh_shrink_opts_check(o);
}

void gh_shrink_fourth_about_mean(int32_t D, double n, const double *c, const double *mu, const double *st,
                                 double *F) {
  const int64_t P = gh_packed_size(D);
  const double *s1 = st + 1, *s2 = s1 + D, *s3 = s2 + P, *s4 = s3 + (int64_t)D * D;
  double *dl = gh_malloc(sizeof(double) * (D > 0 ? D : 1));
  for (int32_t i = 0; i < D; ++i) dl[i] = mu[i] - c[i];
  /* y = z - delta: expand (z_i - d_i)^2 (z_j - d_j)^2 and sum with weights. */
  for (int32_t i = 0; i < D; ++i)
    for (int32_t j = 0; j <= i; ++j) {
      double di = dl[i], dj = dl[j];
      F[gh_packed_index(i, j)] = s4[gh_packed_index(i, j)] - 2 * dj * s3[(int64_t)i * D + j] -
                                 2 * di * s3[(int64_t)j * D + i] + dj * dj * s2[gh_packed_index(i, i)] +
                                 di * di * s2[gh_packed_index(j, j)] + 4 * di * dj * s2[gh_packed_index(i, j)] -
                                 2 * di * dj * dj * s1[i] - 2 * di * di * dj * s1[j] + n * di * di * dj * dj;
    }
  free(dl);
}

/* tr(S), ||S||_F^2 and the off-diagonal part of ||S||_F^2 of packed S. */
static void norms(int32_t D, const double *S, double *tr, double *fro2, double *off2) {
  double t = 0, f = 0, o = 0;
  for (int32_t i = 0; i < D; ++i)
    for (int32_t j = 0; j <= i; ++j) {
      double v = S[gh_packed_index(i, j)];
      if (i == j) { t += v; f += v * v; }
      else { f += 2 * v * v; o += 2 * v * v; }
    }
  *tr = t; *fro2 = f; *off2 = o;
}

double gh_shrink_intensity(const gh_shrink_opts *o, int32_t D, const double *S, double n, double N,
                           const double *F, int *clipped) {
  if (clipped) *clipped = 0;
  double tr, fro2, off2;
  norms(D, S, &tr, &fro2, &off2);
  double m = tr / D, lam = -1;
  switch (o->method) {
    case GH_SHRINK_NONE: return 0.0;
    case GH_SHRINK_FIXED: return o->factor;
    case GH_SHRINK_DIAG: return 1.0;
    case GH_SHRINK_OCCUPANCY: return n > 0 ? o->tau / (o->tau + n) : -1.0;
    case GH_SHRINK_OAS: {
      if (!(N > 1) || !(tr > 0)) return -1.0;
      /* Chen et al. 2010 eq. 23 as scikit-learn's _oas (2/p terms dropped). */
      double a = fro2 / ((double)D * D), num = a + m * m, den = (N + 1.0) * (a - m * m / D);
      lam = den == 0 ? 1.0 : num / den;
      break;
    }
    case GH_SHRINK_LW: {
      if (!(N > 1) || !(tr > 0) || !F) return -1.0;
      /* Ledoit & Wolf 2004, consistent estimator S* (scikit-learn ledoit_wolf_shrinkage). */
      double sumF = 0;
      for (int32_t i = 0; i < D; ++i)
        for (int32_t j = 0; j <= i; ++j) sumF += (i == j ? 1.0 : 2.0) * F[gh_packed_index(i, j)];
      double d2 = (fro2 - 2.0 * m * tr + D * m * m) / D;
      double b2 = (sumF / n - fro2) / ((double)D * N);
      if (!(d2 > 0)) return 0.0; /* S = m I already: the target itself */
      lam = b2 / d2;             /* > 1 is clipped below (b^2 = min(b^2, d^2)) */
      break;
    }
    case GH_SHRINK_SS: {
      if (!(N > 1) || !F) return -1.0;
      /* Schäfer & Strimmer 2005 Table 1 target D, weighted with N = n_eff. */
      double num = 0;
      for (int32_t i = 0; i < D; ++i)
        for (int32_t j = 0; j < i; ++j) {
          double s = S[gh_packed_index(i, j)];
          num += 2.0 * (F[gh_packed_index(i, j)] / n - s * s);
        }
      num /= (N - 1.0);
      lam = off2 == 0 ? 0.0 : num / off2;
      break;
    }
  }
  if (!isfinite(lam)) return -1.0;
  if (lam > 1.0) { lam = 1.0; if (clipped) *clipped = 1; }
  if (lam < 0.0) lam = 0.0;
  return lam;
}

void gh_shrink_apply(const gh_shrink_opts *o, int32_t D, double *S, double lambda) {
  int to_identity = o->method == GH_SHRINK_OAS || o->method == GH_SHRINK_LW ||
                    ((o->method == GH_SHRINK_FIXED || o->method == GH_SHRINK_OCCUPANCY) &&
                     o->target == GH_SHRINK_TARGET_IDENTITY);
  double tr = 0;
  for (int32_t i = 0; i < D; ++i) tr += S[gh_packed_index(i, i)];
  double m = tr / D;
  for (int32_t i = 0; i < D; ++i)
    for (int32_t j = 0; j <= i; ++j) {
      double *v = &S[gh_packed_index(i, j)];
      if (i != j) *v *= 1.0 - lambda;
      else if (to_identity) *v = (1.0 - lambda) * *v + lambda * m;
    }
}

void gh_shrink_stats_init(gh_shrink_stats *st) {
  memset(st, 0, sizeof *st);
  st->min_lambda = INFINITY;
  st->max_lambda = -INFINITY;
}

double gh_shrink_gaussian(const gh_shrink_opts *o, const gh_gmm_accs *a, int32_t g, const double *mean,
                          double *S, gh_shrink_stats *st) {
  const int32_t D = a->dim;
  const double n = a->occupancy[g];
  if (!(n > 0)) { st->num_skipped++; return -1.0; }
  const int64_t K = gh_shrink_stats_size(D);
  const double *sg = a->shrink ? a->shrink + (int64_t)g * K : NULL;
  double N = n;
  if (sg && sg[0] > 0) N = n * n / sg[0];
  int uses_N = o->method == GH_SHRINK_OAS || o->method == GH_SHRINK_LW || o->method == GH_SHRINK_SS;
  if (uses_N && sg) st->used_n_eff = 1;
  double *F = NULL;
  if (gh_shrink_needs_stats(o->method)) {
    if (!sg) gh_die("--shrink=%s needs shrinkage statistics (accumulate with --shrinkage-stats=true)",
                    gh_shrink_method_name(o->method));
    F = gh_malloc(sizeof(double) * gh_packed_size(D));
    gh_shrink_fourth_about_mean(D, n, a->shrink_centre + (int64_t)g * D, mean, sg, F);
  }
  int clipped = 0;
  double lam = gh_shrink_intensity(o, D, S, n, N, F, &clipped);
  free(F);
  if (lam < 0) { st->num_skipped++; return -1.0; }
  gh_shrink_apply(o, D, S, lam);
  st->num_shrunk++;
  st->num_clipped += clipped;
  st->sum_lambda += lam;
  if (lam < st->min_lambda) st->min_lambda = lam;
  if (lam > st->max_lambda) st->max_lambda = lam;
  return lam;
}

void gh_shrink_stats_log(const gh_shrink_opts *o, const gh_shrink_stats *st) {
  const char *nname = o->method == GH_SHRINK_OCCUPANCY ? ", n = occupancy"
                      : (o->method == GH_SHRINK_OAS || o->method == GH_SHRINK_LW || o->method == GH_SHRINK_SS)
                          ? (st->used_n_eff ? ", N = effective sample size" : ", N = occupancy")
                          : "";
  if (st->num_shrunk == 0) {
    gh_log("shrinkage %s: no Gaussian shrunk (%lld skipped: no data or sample size <= 1)",
           gh_shrink_method_name(o->method), (long long)st->num_skipped);
    return;
  }
  gh_log("shrinkage %s: lambda mean %.4g (min %.4g, max %.4g) over %lld Gaussians, %lld clipped to lambda = 1, "
         "%lld skipped (no data or sample size <= 1)%s",
         gh_shrink_method_name(o->method), st->sum_lambda / st->num_shrunk, st->min_lambda, st->max_lambda,
         (long long)st->num_shrunk, (long long)st->num_clipped, (long long)st->num_skipped, nname);
}

void gh_accs_shrink_init(gh_accs_set *a, const gh_gmm_set *model) {
  if (a->num_pdfs != model->num_pdfs)
    gh_die("shrinkage statistics: accumulators have %d pdfs, the model %d", a->num_pdfs, model->num_pdfs);
  for (int32_t p = 0; p < a->num_pdfs; ++p) {
    gh_gmm_accs *ap = &a->pdfs[p];
    const gh_gmm *g = &model->pdfs[p];
    if (g->type != GH_COV_FULL)
      gh_die("--shrinkage-stats: pdf %d has diagonal covariances; shrinkage statistics are for full-covariance "
             "models", p);
    const int32_t G = g->num_gauss, D = g->dim;
    free(ap->shrink);
    free(ap->shrink_centre);
    ap->shrink = gh_calloc((size_t)G * (size_t)gh_shrink_stats_size(D), sizeof(double));
    ap->shrink_centre = gh_malloc(sizeof(double) * (size_t)G * D);
    double *w = gh_malloc(sizeof(double) * G), *cov = gh_malloc(sizeof(double) * G * gh_packed_size(D));
    gh_gmm_get_moments(g, w, ap->shrink_centre, cov);
    free(w);
    free(cov);
  }
}

int gh_accs_have_shrink(const gh_accs_set *a) {
  if (a->num_pdfs <= 0) return 0;
  for (int32_t p = 0; p < a->num_pdfs; ++p)
    if (!a->pdfs[p].shrink) return 0;
  return 1;
}

void gh_mstep_shrink_register(gh_opts *po, gh_mstep_shrink *ms) {
  memset(ms, 0, sizeof *ms);
  ms->spec = "none";
  gh_opts_string(po, "shrink", &ms->spec,
                 "Shrink full covariances at every M-step (fc-shrink's methods, doc/shrink.md): none, "
                 "fixed:LAMBDA, occupancy:TAU, oas, lw, ss");
  gh_opts_bool(po, "shrinkage-stats", &ms->shrinkage_stats,
               "With --write-accs: also write the fourth-order statistics of fc-shrink --method=lw|ss");
}

void gh_mstep_shrink_parse(gh_mstep_shrink *ms) {
  if (gh_shrink_parse(ms->spec, &ms->so) != 0) gh_die("--shrink=%s: %s", ms->spec, gh_last_error());
  if (ms->so.method == GH_SHRINK_DIAG) gh_die("--shrink=diag is not an M-step option: use fc-shrink --method=diag");
}

void gh_mstep_shrink_attach(gh_mstep_shrink *ms, const gh_gmm_set *model, const char *model_in,
                            const char *write_accs, gh_est_opts *eo) {
  if (ms->so.method != GH_SHRINK_NONE || ms->shrinkage_stats)
    for (int32_t p = 0; p < model->num_pdfs; ++p)
      if (model->pdfs[p].type != GH_COV_FULL)
        gh_die("%s, pdf %d: diagonal covariances; --shrink and --shrinkage-stats need a full-covariance model",
               model_in, p);
  if (ms->shrinkage_stats && !*write_accs) gh_warn("--shrinkage-stats=true has no effect without --write-accs");
  if (ms->so.method != GH_SHRINK_NONE) {
    eo->shrink = &ms->so;
    eo->shrink_stats = &ms->sst;
  }
}
