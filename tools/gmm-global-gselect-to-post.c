/* gmm-global-gselect-to-post -- Kaldi's gmmbin/gmm-global-gselect-to-post: per frame
 * the posteriors of a diagonal-covariance global GMM over the frame's
 * Gaussian-selection list (the backends' acc_gselect op), pruned below
 * --min-post and renormalised (the largest kept if all fall below), in the
 * list's order, as a Posterior archive.
 * Body: drivers/train/global-tools.c gh_global_gselect_to_post (shared with its
 * twin). */
#include "base/gh-base.h"
#include "base/opts.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Given features and Gaussian-selection (gselect) information for\n"
      "a diagonal-covariance GMM, output per-frame posteriors for the selected\n"
      "indices.  Also supports pruning the posteriors if they are below\n"
      "a stated threshold, (and renormalizing the rest to sum to one)\n"
      "See also: gmm-gselect, fgmm-gselect, gmm-global-get-post,\n"
      " gmm-global-gselect-to-post\n"
      "\n"
      "Usage:  gmm-global-gselect-to-post [options] <model-in> <feature-rspecifier> "
      "<gselect-rspecifier> <post-wspecifier>\n"
      "e.g.: gmm-global-gselect-to-post 1.ubm ark:- 'ark:gunzip -c 1.gselect|' ark:-\n";
  gh_opts *po = gh_opts_new(usage);
  gh_global_post_args a = {.min_post = 0.0f};
  gh_opts_float(po, "min-post", &a.min_post,
                "If nonzero, posteriors below this threshold will be pruned away and the rest will be renormalized "
                "to sum to one.");
  gh_device_opts_register(po, &a.dev, GH_DEVICE_OPT);
  if (gh_opts_parse(po, argc, argv) != 4) gh_opts_usage_exit(po);
  const int rc = gh_global_gselect_to_post(GH_COV_DIAG, &a, gh_opts_arg(po, 0), gh_opts_arg(po, 1), gh_opts_arg(po, 2),
                                           gh_opts_arg(po, 3));
  gh_opts_free(po);
  return rc;
}
