/* gmm-sum-accs -- sum GMM accumulator files (Kaldi gmmbin/gmm-sum-accs.cc,
 * also gmm-global-sum-accs / fgmm-global-sum-accs): per-pdf occupancies,
 * first- and second-order statistics, transition counts and the frame /
 * log-likelihood totals are added; all inputs must have the same shape.
 * A set of bare global accs is written back as a bare global acc.
 * Body: lib/train/global-tools.c gh_sum_accs_main. */
#include "base/gh-base.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Sum multiple accumulated stats files for GMM training.\n"
      "Usage: gmm-sum-accs [options] <stats-out> <stats-in1> <stats-in2> ...\n"
      "e.g.:\n"
      " gmm-sum-accs 1.acc 1.1.acc 1.2.acc\n";
  return gh_sum_accs_main(argc, argv, -1, usage);
}
