/* fgmm-global-acc-stats -- Kaldi's fgmmbin/fgmm-global-acc-stats: accumulate
 * the EM statistics of a full-covariance global GMM (<GMMACCS>), with --gselect
 * (posteriors over each frame's selected Gaussians only: the backends'
 * acc_gselect op) or over all Gaussians (the dense E-step); on the GPU when
 * there is one (--device).  Core: drivers/train/global-acc.c gh_global_acc.
 * Body: drivers/train/global-tools.c gh_global_acc_stats (shared with its twin). */
#include "base/gh-base.h"
#include "base/opts.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Accumulate stats for training a full-covariance GMM.\n"
      "Usage:  fgmm-global-acc-stats [options] <model-in> <feature-rspecifier> <stats-out>\n"
      "e.g.: fgmm-global-acc-stats 1.mdl scp:train.scp 1.acc\n"
      "      fgmm-global-acc-stats \"--gselect=ark,s,cs:gunzip -c gselect.1.gz|\" 1.ubm \"$feats\" 1.1.acc\n";
  gh_opts *po = gh_opts_new(usage);
  gh_global_acc_args a = {.binary = 1, .update_flags = "mvw", .gselect = "", .weights = ""};
  gh_opts_bool(po, "binary", &a.binary, "Write output in binary mode");
  gh_opts_string(po, "update-flags", &a.update_flags, "Which GMM parameters will be updated: subset of mvw.");
  gh_opts_string(po, "gselect", &a.gselect, "rspecifier for gselect objects to limit the #Gaussians accessed on each frame.");
  gh_opts_string(po, "weights", &a.weights, "rspecifier for a vector of floats for each utterance, that's a per-frame weight.");
  gh_device_opts_register(po, &a.dev, GH_DEVICE_OPT);
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const int rc = gh_global_acc_stats(GH_COV_FULL, &a, gh_opts_arg(po, 0), gh_opts_arg(po, 1), gh_opts_arg(po, 2));
  gh_opts_free(po);
  return rc;
}
