/* fgmm-global-get-frame-likes -- Kaldi's fgmmbin/fgmm-global-get-frame-likes: per-frame
 * log-likelihoods of a full-covariance global GMM as one float vector per
 * utterance, or with --average=true the utterance's average as one float;
 * with --gselect, the log-sum over each frame's selected Gaussians only
 * (the backends' acc_gselect op), else over all (the loglikes kernel).
 * Body: drivers/train/global-tools.c gh_global_get_frame_likes (shared with its
 * twin). */
#include "base/gh-base.h"
#include "base/opts.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Print out per-frame log-likelihoods for each utterance, as an archive\n"
      "of vectors of floats.  If --average=true, prints out the average per-frame\n"
      "log-likelihood for each utterance, as a single float.\n"
      "(full-covariance GMM)\n"
      "Usage:  fgmm-global-get-frame-likes [options] <model-in> <feature-rspecifier> <likes-out-wspecifier>\n"
      "e.g.: fgmm-global-get-frame-likes 1.mdl scp:train.scp ark:1.likes\n";
  gh_opts *po = gh_opts_new(usage);
  gh_global_likes_args a = {.average = 0, .gselect = ""};
  gh_opts_bool(po, "average", &a.average,
               "If true, print out the average per-frame log-likelihood as a single float per utterance.");
  gh_opts_string(po, "gselect", &a.gselect, "rspecifier for gselect objects to limit the #Gaussians accessed on each frame.");
  gh_device_opts_register(po, &a.dev, GH_DEVICE_OPT);
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const int rc = gh_global_get_frame_likes(GH_COV_FULL, &a, gh_opts_arg(po, 0), gh_opts_arg(po, 1), gh_opts_arg(po, 2));
  gh_opts_free(po);
  return rc;
}
