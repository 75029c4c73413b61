/* fc-shrink -- shrink the full covariances of a GMM set (or Kaldi global /
 * .mdl model) toward a target, with the intensity fixed, occupancy-based or
 * estimated (OAS, Ledoit-Wolf, Schäfer-Strimmer), from accumulators of the
 * same model.  Formulas and sources: lib/gmm/shrink.h, doc/shrink.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "gmm/gmm-est.h"
#include "gmm/gmm.h"
#include "base/opts.h"
#include "gmm/shrink.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Shrink full covariance matrices toward a target: Sigma = (1 - lambda) S + lambda T for each\n"
      "Gaussian, S its ML sample covariance from the accumulators (occupancy n), then the\n"
      "M-step's eigenvalue floor (--min-variance, --max-condition), so the output is positive\n"
      "definite.  Weights and means of <model-in> are kept; covariances are replaced.\n"
      "Methods (--method):\n"
      "  fixed      lambda = --factor, T = diag(S) (--target=identity: tr(S)/D I, as\n"
      "             scikit-learn ShrunkCovariance)\n"
      "  occupancy  lambda = tau / (tau + n), T as for fixed (--tau)\n"
      "  oas        Chen, Wiesel, Eldar & Hero 2010 (IEEE TSP 58(10), eq. 23, scikit-learn's form),\n"
      "             T = tr(S)/D I\n"
      "  lw         Ledoit & Wolf 2004 (J. Multivariate Anal. 88, consistent estimator S*), T = tr(S)/D I\n"
      "  ss         Schafer & Strimmer 2005 (SAGMB 4(1) art. 32, Table 1 target D) per Gaussian\n"
      "             with posterior weights as Bell & King 2009: variances kept, off-diagonals\n"
      "             scaled by (1 - lambda)\n"
      "  diag       make the model diagonal (keeps the variances; accs only checked)\n"
      "oas, lw and ss use the effective sample size n^2 / sum gamma^2 when the accs have\n"
      "shrinkage statistics; lw and ss need them (gmm-acc-stats-gpu --shrinkage-stats=true).\n"
      "Prints the mean and range of lambda and the number of Gaussians clipped to lambda = 1.\n"
      "Usage:  fc-shrink [options] <model-in> <accs-in> <model-out>\n"
      "e.g.:   gmm-acc-stats-gpu --shrinkage-stats=true final.mdl scp:feats.scp ark:ali final.acc\n"
      "        fc-shrink --method=ss final.mdl final.acc final.ss.mdl\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  const char *method = "", *target = "diag";
  double factor = NAN, tau = NAN, min_count = 0.0, min_variance = 1e-3, max_condition = 1e4;
  gh_opts_bool(po, "binary", &binary, "Write the output model in binary mode");
  gh_opts_string(po, "method", &method, "Shrinkage method: fixed, occupancy, oas, lw, ss or diag (required)");
  gh_opts_double(po, "factor", &factor, "fixed: the shrinkage intensity lambda, in [0, 1]");
  gh_opts_double(po, "tau", &tau, "occupancy: lambda = tau / (tau + occupancy), tau >= 0 (frames)");
  gh_opts_string(po, "target", &target, "fixed, occupancy: target diag (diag(S)) or identity (tr(S)/D I)");
  gh_opts_double(po, "min-count", &min_count,
                 "Gaussians with occupancy <= this keep their covariance (always when occupancy is 0)");
  gh_opts_double(po, "min-variance", &min_variance, "Eigenvalue floor after shrinkage (as gmm-est)");
  gh_opts_double(po, "max-condition", &max_condition,
                 "Eigenvalues also floored at max eigenvalue / this (as gmm-est; <= 0: off)");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *model_in = gh_opts_arg(po, 0), *accs_in = gh_opts_arg(po, 1), *model_out = gh_opts_arg(po, 2);

  gh_shrink_opts so;
  gh_shrink_opts_default(&so);
  if (!*method) gh_die("--method is required (fixed, occupancy, oas, lw, ss or diag)");
  if (gh_shrink_method_parse(method, &so.method) != 0 || so.method == GH_SHRINK_NONE)
    gh_die("unknown --method=%s (expected fixed, occupancy, oas, lw, ss or diag)", method);
  if (!strcmp(target, "diag")) so.target = GH_SHRINK_TARGET_DIAG;
  else if (!strcmp(target, "identity")) so.target = GH_SHRINK_TARGET_IDENTITY;
  else gh_die("unknown --target=%s (expected diag or identity)", target);
  if (so.method == GH_SHRINK_FIXED) {
    if (isnan(factor)) gh_die("--method=fixed needs --factor=LAMBDA (in [0, 1])");
    so.factor = factor;
  } else if (!isnan(factor)) {
    gh_die("--factor is only for --method=fixed");
  }
  if (so.method == GH_SHRINK_OCCUPANCY) {
    if (isnan(tau)) gh_die("--method=occupancy needs --tau=TAU (>= 0)");
    so.tau = tau;
  } else if (!isnan(tau)) {
    gh_die("--tau is only for --method=occupancy");
  }
  if (gh_shrink_opts_check(&so) != 0) gh_die("--method=%s: %s", method, gh_last_error());
  if (!(min_variance > 0)) gh_die("--min-variance must be > 0 (got %g): the output must be positive definite",
                                  min_variance);

  gh_gmm_set model;
  gh_gmm_set_read(model_in, &model);
  gh_accs_set accs;
  gh_accs_read(accs_in, &accs);
  if (accs.num_pdfs != model.num_pdfs)
    gh_die("%s has %d pdfs but %s has %d: the accumulators must be of this model", accs_in, accs.num_pdfs, model_in,
           model.num_pdfs);
  for (int32_t p = 0; p < model.num_pdfs; ++p) {
    const gh_gmm *g = &model.pdfs[p];
    const gh_gmm_accs *a = &accs.pdfs[p];
    if (a->num_gauss != g->num_gauss || a->dim != g->dim || a->type != g->type)
      gh_die("%s, pdf %d: %d %s Gaussians of dimension %d, but %s has %d %s of dimension %d: the accumulators must "
             "be of this model (e.g. gmm-acc-stats-gpu on it)", accs_in, p, a->num_gauss,
             a->type == GH_COV_FULL ? "full" : "diagonal", a->dim, model_in, g->num_gauss,
             g->type == GH_COV_FULL ? "full" : "diagonal", g->dim);
    if (so.method != GH_SHRINK_DIAG && g->type != GH_COV_FULL)
      gh_die("%s, pdf %d: diagonal covariances; --method=%s needs a full-covariance model", model_in, p, method);
    if (so.method != GH_SHRINK_DIAG && !(a->flags & 2u))
      gh_die("%s, pdf %d: no variance accumulators (flags %u)", accs_in, p, (unsigned)a->flags);
  }
  if (gh_shrink_needs_stats(so.method) && !gh_accs_have_shrink(&accs))
    gh_die("%s has no shrinkage statistics, which --method=%s needs (accumulate with gmm-acc-stats-gpu "
           "--shrinkage-stats=true)", accs_in, method);

  gh_shrink_stats st;
  gh_shrink_stats_init(&st);
  int64_t floored = 0;
  for (int32_t p = 0; p < model.num_pdfs; ++p) {
    gh_gmm *g = &model.pdfs[p];
    const gh_gmm_accs *a = &accs.pdfs[p];
    const int32_t G = g->num_gauss, D = g->dim;
    const int64_t S = gh_gmm_cov_size(g);
    double *w = gh_malloc(sizeof(double) * G), *mu = gh_malloc(sizeof(double) * G * D);
    double *cov = gh_malloc(sizeof(double) * G * S);
    gh_gmm_get_moments(g, w, mu, cov);
    if (so.method == GH_SHRINK_DIAG) {
      if (g->type == GH_COV_FULL) {
        double *var = gh_malloc(sizeof(double) * G * D);
        for (int32_t k = 0; k < G; ++k)
          for (int32_t d = 0; d < D; ++d) var[(int64_t)k * D + d] = cov[(int64_t)k * S + gh_packed_index(d, d)];
        gh_gmm_free(g);
        gh_gmm_init(g, GH_COV_DIAG, G, D);
        if (gh_gmm_set_moments(g, w, mu, var) != 0) gh_die("%s, pdf %d: %s", model_in, p, gh_last_error());
        free(var);
      }
      st.num_shrunk += G;
      st.sum_lambda += G;
      st.min_lambda = st.max_lambda = 1.0;
    } else {
      double *Sg = gh_malloc(sizeof(double) * S), *m = gh_malloc(sizeof(double) * D);
      for (int32_t k = 0; k < G; ++k) {
        double n = a->occupancy[k];
        if (!(n > 0) || n <= min_count) { st.num_skipped++; continue; }
        const double *macc = a->mean_accs + (int64_t)k * D, *vacc = a->var_accs + (int64_t)k * S;
        for (int32_t d = 0; d < D; ++d) m[d] = macc[d] / n;
        for (int32_t i = 0; i < D; ++i)
          for (int32_t j = 0; j <= i; ++j) Sg[gh_packed_index(i, j)] = vacc[gh_packed_index(i, j)] / n - m[i] * m[j];
        double lam = gh_shrink_gaussian(&so, a, k, m, Sg, &st);
        if (lam < 0) continue;
        floored += gh_cov_floor(Sg, D, min_variance, max_condition) > 0;
        memcpy(cov + (int64_t)k * S, Sg, sizeof(double) * S);
        gh_vlog(1, "pdf %d, Gaussian %d: occupancy %.1f, lambda %.4g", p, k, n, lam);
      }
      if (gh_gmm_set_moments(g, w, mu, cov) != 0)
        gh_die("%s, pdf %d: shrunk covariance not usable: %s", model_in, p, gh_last_error());
      free(Sg);
      free(m);
    }
    free(w); free(mu); free(cov);
  }
  gh_shrink_stats_log(&so, &st);
  if (floored) gh_log("%lld shrunk covariances had eigenvalues floored (--min-variance=%g, --max-condition=%g)",
                      (long long)floored, min_variance, max_condition);
  if (st.num_shrunk == 0) gh_die("no Gaussian was shrunk (every one had too little data): not writing %s", model_out);
  gh_gmm_set_write(model_out, binary, &model);
  gh_log("wrote %s: %d pdfs, %lld Gaussians", model_out, model.num_pdfs, (long long)gh_gmm_set_total_gauss(&model));
  gh_accs_free(&accs);
  gh_gmm_set_free(&model);
  gh_opts_free(po);
  return 0;
}
