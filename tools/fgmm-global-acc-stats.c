/* fgmm-global-acc-stats -- Kaldi's fgmmbin/fgmm-global-acc-stats: accumulate
 * the EM statistics of a full-covariance global GMM (<GMMACCS>), with --gselect
 * (posteriors over each frame's selected Gaussians only: the backends'
 * acc_gselect op) or over all Gaussians (the dense E-step); on the GPU when
 * there is one (--device).  Core: lib/gmm/gselect.c gh_global_acc.
 * Body: lib/train/global-tools.c gh_global_acc_stats_main. */
#include "base/gh-base.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Accumulate stats for training a full-covariance GMM.\n"
      "Usage:  fgmm-global-acc-stats [options] <model-in> <feature-rspecifier> <stats-out>\n"
      "e.g.: fgmm-global-acc-stats 1.mdl scp:train.scp 1.acc\n"
      "      fgmm-global-acc-stats \"--gselect=ark,s,cs:gunzip -c gselect.1.gz|\" 1.ubm \"$feats\" 1.1.acc\n";
  return gh_global_acc_stats_main(argc, argv, GH_COV_FULL, usage);
}
