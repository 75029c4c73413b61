/* gmm-global-sum-accs -- Kaldi's gmmbin/gmm-global-sum-accs: sum diagonal-covariance
 * global-GMM accumulators (<GMMACCS>); also used as an rxfilename pipe
 * ("gmm-global-sum-accs - 1.*.acc |", the output "-" is stdout).  The same
 * summation as gmm-sum-accs (lib/gmm/accs.c gh_accs_add).
 * Body: lib/train/global-tools.c gh_sum_accs_main. */
#include "base/gh-base.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Sum multiple accumulated stats files for diagonal-covariance GMM training.\n"
      "Usage: gmm-global-sum-accs [options] stats-out stats-in1 stats-in2 ...\n"
      "e.g.: gmm-global-sum-accs 1.acc 1.1.acc 1.2.acc\n"
      "      gmm-global-est 1.mdl \"gmm-global-sum-accs - 1.*.acc |\" 2.mdl\n";
  return gh_sum_accs_main(argc, argv, GH_COV_DIAG, usage);
}
