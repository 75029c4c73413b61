/* gmm-global-to-fgmm -- Kaldi's gmmbin/gmm-global-to-fgmm: a diagonal
 * global GMM as a full-covariance one (gh_gmm_diag_to_full, Kaldi
 * FullGmm::CopyFromDiagGmm).
 * Body: drivers/train/global-tools.c gh_global_convert. */
#include "base/gh-base.h"
#include "base/opts.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Convert single diagonal-covariance GMM to single full-covariance GMM.\n"
      "Usage: gmm-global-to-fgmm [options] 1.gmm 1.fgmm\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const int rc = gh_global_convert(GH_COV_DIAG, GH_COV_FULL, binary, gh_opts_arg(po, 0), gh_opts_arg(po, 1));
  gh_opts_free(po);
  return rc;
}
