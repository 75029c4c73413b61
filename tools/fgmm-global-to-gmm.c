/* fgmm-global-to-gmm -- Kaldi's fgmmbin/fgmm-global-to-gmm: a full-covariance
 * global GMM as a diagonal one (gh_gmm_full_to_diag, Kaldi
 * DiagGmm::CopyFromFullGmm).
 * Body: drivers/train/global-tools.c gh_global_convert. */
#include "base/gh-base.h"
#include "base/opts.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Convert single full-covariance GMM to single diagonal-covariance GMM.\n"
      "Usage: fgmm-global-to-gmm [options] 1.fgmm 1.gmm\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const int rc = gh_global_convert(GH_COV_FULL, GH_COV_DIAG, binary, gh_opts_arg(po, 0), gh_opts_arg(po, 1));
  gh_opts_free(po);
  return rc;
}
