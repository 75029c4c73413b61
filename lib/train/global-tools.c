/* global-tools.c -- the diagonal / full twins of Kaldi's global-GMM tools
 * (global-tools.h). */
#include "train/global-tools.h"

#include <stdlib.h>

#include "backend.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gselect.h"
#include "train/global-acc.h"

static const char *type_name(gh_covtype type) { return type == GH_COV_FULL ? "full-covariance" : "diagonal-covariance"; }

int gh_global_acc_stats_main(int argc, char **argv, gh_covtype type, const char *usage) {
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
  gh_gmm *gmm = gh_global_gmm(&model, type, model_in);
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

int gh_sum_accs_main(int argc, char **argv, int global_type, const char *usage) {
  int binary = 1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary,
               global_type < 0 ? "Write output in binary mode" : "Write accumulators in binary mode.");
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs < 2) gh_opts_usage_exit(po);
  const char *out = gh_opts_arg(po, 0);
  gh_accs_set sum;
  gh_accs_read(gh_opts_arg(po, 1), &sum);
  if (global_type >= 0 && (!sum.global_form || sum.pdfs[0].type != (gh_covtype)global_type))
  {
    char want[64], got[96];
    snprintf(want, sizeof want, "%s global-GMM accumulators", type_name((gh_covtype)global_type));
    if (!sum.global_form) snprintf(got, sizeof got, "<NUMPDFS> (that is the accumulators of a GMM set)");
    else snprintf(got, sizeof got, "<GMMACCS> (that is accumulators of %s Gaussians)", type_name(sum.pdfs[0].type));
    gh_die_type(gh_opts_arg(po, 1), want, "<GMMACCS>", got);
  }
  for (int i = 2; i < nargs; ++i) {
    gh_accs_set a;
    gh_accs_read(gh_opts_arg(po, i), &a);
    gh_accs_add(&sum, &a, gh_opts_arg(po, i));
    gh_accs_free(&a);
  }
  const double frames = sum.total_frames;
  if (sum.global_form)
    gh_log("Summed %d stats, total count %.7g", nargs - 1, gh_accs_total_occupancy(&sum));
  else
    gh_log("Summed %d stats, total count %.7g, avg like/frame %.7g", nargs - 1, frames,
           frames > 0 ? sum.total_loglike / frames : 0.0);
  gh_accs_write(out, binary, &sum);
  gh_log("Written stats to %s", out);
  gh_accs_free(&sum);
  gh_opts_free(po);
  return 0;
}

int gh_global_convert_main(int argc, char **argv, gh_covtype from, gh_covtype to, const char *usage) {
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *in = gh_opts_arg(po, 0), *out = gh_opts_arg(po, 1);
  gh_gmm_set s;
  gh_gmm_set_read(in, &s);
  gh_gmm *g = gh_global_gmm(&s, from, in);
  if (to != from) {
    gh_gmm conv = {0};
    if (to == GH_COV_FULL) gh_gmm_diag_to_full(&conv, g);
    else gh_gmm_full_to_diag(&conv, g);
    gh_gmm_free(g);
    *g = conv;
  }
  s.form = GH_SET_GLOBAL;
  gh_gmm_set_write(out, binary, &s);
  gh_log("Written %s to %s", to == from ? "model" : to == GH_COV_FULL ? "full GMM" : "diagonal GMM", out);
  gh_gmm_set_free(&s);
  gh_opts_free(po);
  return 0;
}
