/* fgmm-global-to-gmm -- Kaldi's fgmmbin/fgmm-global-to-gmm: a full-covariance
 * global GMM as a diagonal one (gh_gmm_full_to_diag, Kaldi
 * DiagGmm::CopyFromFullGmm).
 * Body: lib/train/global-tools.c gh_global_convert_main. */
#include "base/gh-base.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Convert single full-covariance GMM to single diagonal-covariance GMM.\n"
      "Usage: fgmm-global-to-gmm [options] 1.fgmm 1.gmm\n";
  return gh_global_convert_main(argc, argv, GH_COV_FULL, GH_COV_DIAG, usage);
}
