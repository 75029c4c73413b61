/* gmm-acc-stats-gpu -- one E-step on the GPU (CPU fallback): accumulate GMM
 * statistics for a model and write them (the "accumulate" part of
 * accumulate -> gmm-sum-accs -> gmm-est for cluster jobs). */
#include <stdlib.h>

#include "registry/registry.h"
#include "base/gh-base.h"
#include "train/gmm-data.h"
#include "gmm/gmm.h"
#include "base/opts.h"
#include "gmm/shrink.h"
#include "train/device-opts.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Accumulate EM statistics (occupancies, first- and second-order sums, in double) of a GMM\n"
      "set over features, on the GPU when there is one (--device).  Labels as for gmm-est-gpu:\n"
      "none (global GMM, model with 1 pdf), or --label-type=ali|utt|post.  Sum the outputs of\n"
      "several jobs with gmm-sum-accs and update with gmm-est.\n"
      "Usage:  gmm-acc-stats-gpu [options] <model-in> <feats-rspecifier> [<labels-rspecifier>] <stats-out>\n"
      "e.g.:   gmm-acc-stats-gpu 1.mdl scp:split4/1/feats.scp ark:1.pdf.ali 1.1.acc\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  const char *label_type = "ali";
  gh_opts_bool(po, "binary", &binary, "Write the accumulators in binary mode");
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPTS_BOTH);
  gh_opts_string(po, "label-type", &label_type, "What the labels argument holds: ali, utt or post");
  int shrinkage_stats = 0;
  gh_opts_bool(po, "shrinkage-stats", &shrinkage_stats,
               "Also accumulate the fourth-order statistics of fc-shrink --method=lw|ss and --shrink (full "
               "covariances; written after the standard accs, doc/format.md)");
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs != 3 && nargs != 4) gh_opts_usage_exit(po);
  const char *model_in = gh_opts_arg(po, 0), *feats_rspec = gh_opts_arg(po, 1);
  const char *labels_rspec = nargs == 4 ? gh_opts_arg(po, 2) : NULL, *accs_out = gh_opts_arg(po, nargs - 1);

  gh_gmm_set model;
  gh_gmm_set_read(model_in, &model);
  gh_device_opts_begin(&dev); /* the device starts while we read */
  gh_data data;
  gh_data_load_for_model(&data, &model, model_in, feats_rspec, labels_rspec, label_type);
  gh_backend *be = gh_device_opts_end(&dev);
  gh_accs_set accs;
  double secs = 0;
  double avg = gh_data_estep(be, &model, &data, &accs, &secs);
  if (model.form == GH_SET_GLOBAL) accs.global_form = 1;
  if (shrinkage_stats) { /* second pass, centres = the model's means (lib/gmm/shrink.h) */
    gh_accs_shrink_init(&accs, &model);
    gh_backend_acc_shrink(be, &model, data.feats, data.num_frames, data.pairs, data.num_pairs, &accs);
  }
  gh_accs_write(accs_out, binary, &accs);
  gh_log("done %d utterances, skipped %d; avg loglike per frame %.6f over %.0f frames, %.3g frames/s",
         data.num_utts, data.num_skipped, avg, data.total_weight, secs > 0 ? data.num_frames / secs : 0.0);
  gh_accs_free(&accs);
  gh_backend_free(be);
  gh_data_free(&data);
  gh_gmm_set_free(&model);
  gh_opts_free(po);
  return 0;
}
