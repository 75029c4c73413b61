/* fgmm-global-acc-stats -- Kaldi's fgmmbin/fgmm-global-acc-stats: accumulate
 * the EM statistics of a full-covariance global GMM (<GMMACCS>), with --gselect
 * (posteriors over each frame's selected Gaussians only: the backends'
 * acc_gselect op) or over all Gaussians (the dense E-step); on the GPU when
 * there is one (--device).  Core: lib/gmm/gselect.c gh_global_acc. */
#include "backend.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm.h"
#include "train/global-acc.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Accumulate stats for training a full-covariance GMM.\n"
      "Usage:  fgmm-global-acc-stats [options] <model-in> <feature-rspecifier> <stats-out>\n"
      "e.g.: fgmm-global-acc-stats 1.mdl scp:train.scp 1.acc\n"
      "      fgmm-global-acc-stats \"--gselect=ark,s,cs:gunzip -c gselect.1.gz|\" 1.ubm \"$feats\" 1.1.acc\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  const char *update_flags = "mvw", *gselect = "", *weights = "", *device = "auto";
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  gh_opts_string(po, "update-flags", &update_flags, "Which GMM parameters will be updated: subset of mvw.");
  gh_opts_string(po, "gselect", &gselect, "rspecifier for gselect objects to limit the #Gaussians accessed on each frame.");
  gh_opts_string(po, "weights", &weights, "rspecifier for a vector of floats for each utterance, that's a per-frame weight.");
  gh_opts_string(po, "device", &device, "Compute device: auto, cpu, cpu-ref, cuda, cuda:N, opencl or opencl:P:D");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *model_in = gh_opts_arg(po, 0), *feats = gh_opts_arg(po, 1), *accs_out = gh_opts_arg(po, 2);
  uint32_t flags = gh_gmm_flags_parse(update_flags, "update-flags");
  gh_gmm_set model;
  gh_gmm_set_read(model_in, &model);
  gh_gmm *gmm = gh_global_gmm(&model, GH_COV_FULL, model_in);
  gh_backend_start *start = gh_backend_create_begin(device); /* the device starts while we read */
  gh_backend *b = NULL;
  gh_accs_set accs = {0};
  accs.num_pdfs = 1;
  accs.global_form = 1;
  accs.pdfs = gh_calloc(1, sizeof(gh_gmm_accs));
  int32_t num_done, num_err;
  double tot_like, tot_t;
  gh_global_acc(start, &b, gmm, feats, gselect, weights, flags, &accs.pdfs[0], &num_done, &num_err, &tot_like, &tot_t);
  gh_log("Done %d files; %d with errors.", num_done, num_err);
  gh_log("Overall likelihood per frame = %.7g over %.7g (weighted) frames.", tot_like / tot_t, tot_t);
  accs.total_frames = tot_t;
  gh_accs_write(accs_out, binary, &accs);
  gh_log("Written accs to %s", accs_out);
  gh_accs_free(&accs);
  gh_backend_free(b);
  gh_gmm_set_free(&model);
  gh_opts_free(po);
  return 0;
}
