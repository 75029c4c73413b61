/* gmm-global-to-fgmm -- Kaldi's gmmbin/gmm-global-to-fgmm: a diagonal
 * global GMM as a full-covariance one (gh_gmm_diag_to_full, Kaldi
 * FullGmm::CopyFromDiagGmm).
 * Body: lib/train/global-tools.c gh_global_convert_main. */
#include "base/gh-base.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Convert single diagonal-covariance GMM to single full-covariance GMM.\n"
      "Usage: gmm-global-to-fgmm [options] 1.gmm 1.fgmm\n";
  return gh_global_convert_main(argc, argv, GH_COV_DIAG, GH_COV_FULL, usage);
}
