/* fgmm-global-sum-accs -- Kaldi's fgmmbin/fgmm-global-sum-accs: sum full-covariance
 * global-GMM accumulators (<GMMACCS>); also used as an rxfilename pipe
 * ("fgmm-global-sum-accs - 1.*.acc |", the output "-" is stdout).  The same
 * summation as gmm-sum-accs (lib/gmm/accs.c gh_accs_add).
 * Body: lib/train/global-tools.c gh_sum_accs_main. */
#include "base/gh-base.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Sum multiple accumulated stats files for full-covariance GMM training.\n"
      "Usage: fgmm-global-sum-accs [options] stats-out stats-in1 stats-in2 ...\n"
      "e.g.: fgmm-global-sum-accs 1.acc 1.1.acc 1.2.acc\n"
      "      fgmm-global-est 1.mdl \"fgmm-global-sum-accs - 1.*.acc |\" 2.mdl\n";
  return gh_sum_accs_main(argc, argv, GH_COV_FULL, usage);
}
