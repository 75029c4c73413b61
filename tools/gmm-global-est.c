/* gmm-global-est -- Kaldi's gmmbin/gmm-global-est: one M-step of a diagonal-covariance
 * global GMM from its accumulators (lib/gmm/gmm-est.c gh_gmm_update,
 * Kaldi's MleDiagGmmUpdate), then optional mixing up (gh_gmm_split, Kaldi
 * DiagGmm::Split).  Body: drivers/train/global-tools.c gh_global_est (shared with
 * its twin). */
#include "base/gh-base.h"
#include "base/opts.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Estimate a diagonal-covariance GMM from the accumulated stats.\n"
      "Usage:  gmm-global-est [options] <model-in> <stats-in> <model-out>\n"
      "e.g.: gmm-global-est --min-gaussian-weight=0.0001 1.mdl \"gmm-global-sum-accs - 1.*.acc |\" 2.mdl\n";
  gh_opts *po = gh_opts_new(usage);
  gh_global_est_args a = {.binary = 1, .update_flags = "mvw", .mix_up = 0, .perturb = 0.01, .write_occs = ""};
  gh_est_opts_default(&a.eo);
  gh_opts_bool(po, "binary", &a.binary, "Write output in binary mode");
  gh_opts_string(po, "update-flags", &a.update_flags, "Which GMM parameters will be updated: subset of mvw.");
  gh_opts_int(po, "mix-up", &a.mix_up, "Increase number of mixture components to this overall target.");
  gh_opts_double(po, "perturb-factor", &a.perturb, "While mixing up, perturb means by standard deviation times this factor.");
  gh_opts_string(po, "write-occs", &a.write_occs, "File to write the Gaussians' occupancies to (a float vector).");
  gh_est_opts_register_cov(po, &a.eo, GH_COV_DIAG);
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const int rc = gh_global_est(GH_COV_DIAG, &a, gh_opts_arg(po, 0), gh_opts_arg(po, 1), gh_opts_arg(po, 2));
  gh_opts_free(po);
  return rc;
}
