/* gmm-init -- initialise a GMM set from features: one global GMM, or one
 * GMM per pdf from labels.  k-means++ seeding + Lloyd iterations + split
 * (drivers/gmm/gmm-init.c), then EM iterations on the backend (see doc/gmm-init.md). */
#include <stdlib.h>
#include <string.h>

#include "registry/registry.h"
#include "base/gh-base.h"
#include "train/gmm-data.h"
#include "gmm/gmm-est.h"
#include "gmm/gmm-init.h"
#include "gmm/gmm.h"
#include "base/opts.h"
#include "train/device-opts.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Initialise a GMM set from features: k-means++ seeding and k-means of the frames of each\n"
      "pdf, Gaussians from the cluster moments (split up to --num-gauss if the data supports\n"
      "fewer), then --num-iters EM iterations.  Without --labels: one global GMM (a set of 1 pdf);\n"
      "with --labels=<rspecifier>, one GMM per pdf, --label-type saying what the table holds:\n"
      "ali = per-frame pdf ids (int32 vectors), utt = one pdf id per utterance (int32),\n"
      "post = posteriors (frames weighted).  The device (--device) computes the k-means distances\n"
      "and the EM iterations; it is not started for --num-gauss=1 --num-iters=0 (host work).\n"
      "Usage:  gmm-init [options] <feats-rspecifier> <model-out>\n"
      "e.g.:   gmm-init --num-gauss=64 scp:feats.scp ubm.0\n"
      "        gmm-init --labels=ark:pdf.ali --num-gauss=4 --cov-type=full ark:feats.ark 0.mdl\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1, global_form = 0;
  int32_t num_gauss = 1, num_pdfs = 0, num_iters = 10, seed = 1;
  const char *cov_type = "diag", *labels = "", *label_type = "ali";
  gh_init_opts io;
  gh_init_opts_default(&io);
  gh_est_opts eo;
  gh_est_opts_default(&eo);
  eo.remove_low_count_gaussians = 0; /* keep the requested number of Gaussians */
  gh_opts_int(po, "num-gauss", &num_gauss, "Number of Gaussians per pdf");
  gh_opts_string(po, "cov-type", &cov_type, "Covariance type: diag or full");
  gh_opts_string(po, "labels", &labels, "Label rspecifier (per-pdf GMMs); empty = one global GMM");
  gh_opts_string(po, "label-type", &label_type, "What --labels holds: ali, utt or post");
  gh_opts_int(po, "num-pdfs", &num_pdfs, "Number of pdfs (default: largest label + 1)");
  gh_opts_int(po, "num-iters", &num_iters, "EM iterations after the k-means initialisation");
  gh_opts_int(po, "seed", &seed, "Random seed (the k-means initialisation is the same on every device; EM is deterministic on one)");
  gh_opts_int(po, "kmeans-iters", &io.kmeans_iters, "Maximum Lloyd iterations after k-means++ seeding");
  gh_opts_bool(po, "kmeans-normalize", &io.kmeans_normalize, "Run k-means on variance-normalised frames (default: raw frames, as scikit-learn)");
  gh_opts_int(po, "max-frames", &io.max_frames, "Use at most this many frames per pdf for k-means");
  gh_opts_int(po, "min-frames-per-gauss", &io.min_frames_per_gauss,
              "k-means uses at most frames/this centres; the rest come from splitting");
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPT);
  gh_opts_bool(po, "binary", &binary, "Write the model in binary mode");
  gh_opts_bool(po, "global-form", &global_form,
               "Without --labels: write a bare Kaldi <DiagGMM>/<FullGMM> (gmm-global-* form)");
  gh_est_opts_register(po, &eo);
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *feats_rspec = gh_opts_arg(po, 0), *model_out = gh_opts_arg(po, 1);
  if (num_gauss < 1) gh_die("--num-gauss must be >= 1 (got %d)", num_gauss);
  if (num_iters < 0) gh_die("--num-iters must be >= 0 (got %d)", num_iters);
  if (!strcmp(cov_type, "diag")) io.cov_type = GH_COV_DIAG;
  else if (!strcmp(cov_type, "full")) io.cov_type = GH_COV_FULL;
  else gh_die("--cov-type must be diag or full (got '%s')", cov_type);
  io.num_gauss = num_gauss;
  io.min_variance = eo.variance_floor >= 0 ? eo.variance_floor : eo.min_variance;

  gh_data_opts dopt = {feats_rspec, *labels ? labels : NULL, GH_LABELS_NONE, num_pdfs, 0, NULL};
  if (*labels) {
    if (gh_label_type_parse(label_type, &dopt.label_type) != 0 || dopt.label_type == GH_LABELS_NONE)
      gh_die("--label-type must be ali, utt or post (got '%s')", label_type);
  } else if (num_pdfs > 1) {
    gh_die("--num-pdfs=%d needs --labels", num_pdfs);
  }
  /* the backend starts while the features are read; it computes the
   * k-means distances (same result on every device) and the EM iterations.
   * One Gaussian per pdf and no EM iterations (a flat start) is host work
   * whatever the device (the k-means of one centre gives the same bits
   * everywhere): the device is not started, which on a GPU would cost more
   * than the job (0.3-0.5 s on an H200, bench/RESULTS.md D35). */
  const int device_work = num_gauss > 1 || num_iters > 0;
  if (device_work) gh_device_opts_begin(&dev);
  gh_data data;
  gh_data_load(&data, &dopt);
  gh_backend *be = device_work ? gh_device_opts_end(&dev) : NULL;
  if (!be) gh_log("one Gaussian per pdf and no EM iterations: computed on the host (--device=%s not started)", dev.device);
  io.backend = be;
  int32_t P = num_pdfs > 0 ? num_pdfs : data.max_pdf + 1;
  gh_log("loaded %d utterances, %d frames of dimension %d; initialising %d pdf(s) with %d %s Gaussians",
         data.num_utts, data.num_frames, data.dim, P, num_gauss, cov_type);

  gh_gmm_set model;
  memset(&model, 0, sizeof model);
  model.dim = data.dim;
  model.num_pdfs = P;
  model.pdfs = gh_calloc(P, sizeof(gh_gmm));
  model.form = (!*labels && global_form) ? GH_SET_GLOBAL : GH_SET_AM;
  model.trans = NULL;
  int64_t *poff, *pidx; /* each pdf's pairs */
  gh_data_pdf_index(&data, P, &poff, &pidx);
  for (int32_t p = 0; p < P; ++p) {
    float *X, *w;
    const int64_t n = poff[p + 1] - poff[p];
    gh_data_pairs_frames(&data, pidx + poff[p], n, &X, &w);
    gh_init_opts po_p = io;
    po_p.seed = (uint64_t)seed * 1000003ULL + (uint64_t)p;
    char what[64];
    snprintf(what, sizeof what, "pdf %d", p);
    if (n == 0) { /* unseen pdf: one Gaussian from all the data */
      gh_warn("pdf %d has no frames: initialised with one Gaussian from all the data", p);
      po_p.num_gauss = 1;
      gh_gmm_init_from_data(&model.pdfs[p], data.feats, NULL, data.num_frames, data.dim, &po_p, what);
    } else {
      gh_gmm_init_from_data(&model.pdfs[p], X, w, n, data.dim, &po_p, what);
    }
    free(X);
    free(w);
  }
  free(poff);
  free(pidx);

  if (num_iters > 0) {
    for (int32_t it = 1; it <= num_iters; ++it) {
      gh_accs_set accs;
      double secs = 0;
      double avg = gh_data_estep(be, &model, &data, &accs, &secs);
      gh_log("iteration %d: avg loglike per frame %.6f over %.0f frames, %.3g frames/s", it, avg,
             data.total_weight, secs > 0 ? data.num_frames / secs : 0.0);
      gh_gmm_set_update(&model, &accs, &eo, NULL);
      gh_accs_free(&accs);
    }
  }
  gh_backend_free(be);
  gh_gmm_set_write(model_out, binary, &model);
  gh_log("wrote %s: %d pdfs, %lld Gaussians", model_out, P, (long long)gh_gmm_set_total_gauss(&model));
  gh_gmm_set_free(&model);
  gh_data_free(&data);
  gh_opts_free(po);
  return 0;
}
