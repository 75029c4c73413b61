/* gmm-est-gpu -- EM re-estimation of a GMM set on the GPU (CPU fallback):
 * gmm-train as one plain process (communicator "none", one rank), with the
 * same EM engine (drivers/train/dist-em.h gh_dist_em): the features are read
 * into frame blocks (drivers/train/shard.h, --block-frames) uploaded once and
 * resident across iterations; the blocks' accumulators are combined in
 * double-double; the model stays on the device too when the backend does
 * the M-step there (CUDA), else every iteration runs the M-step on the host
 * (lib/gmm/gmm-est.c, Kaldi's MleDiagGmmUpdate / MleFullGmmUpdate) and
 * uploads the new model.  With the same --block-frames its model is
 * gmm-train's, bit for bit. */
#include <stdlib.h>
#include <string.h>

#include "registry/registry.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm-est.h"
#include "gmm/gmm.h"
#include "gmm/shrink.h"
#include "train/device-opts.h"
#include "train/comm.h"
#include "train/dist-em.h"
#include "train/shard.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "EM re-estimation of a GMM set (diagonal or full covariance), E-step on the GPU when\n"
      "there is one (--device), M-step with Kaldi's estimation options.  Without a label\n"
      "argument every frame trains pdf 0 (a global GMM; the model must have 1 pdf); with one,\n"
      "--label-type says what it holds: ali = per-frame pdf ids (int32 vectors, e.g. from\n"
      "ali-to-pdf), utt = one pdf id per utterance (int32), post = posteriors (pdf, weight).\n"
      "Logs per iteration the average log-likelihood per frame of the model before its update;\n"
      "--tol stops early when it improves by less than tol (see --tol), --num-iters the maximum.\n"
      "Usage:  gmm-est-gpu [options] <model-in> <feats-rspecifier> [<labels-rspecifier>] <model-out>\n"
      "e.g.:   gmm-est-gpu --num-iters=10 ubm.0 scp:feats.scp ubm.10\n"
      "        gmm-est-gpu --label-type=post --mix-up=2000 1.mdl ark:feats.ark ark:1.post 2.mdl\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  int32_t num_iters = 1;
  const char *label_type = "ali", *write_accs = "";
  gh_est_opts eo;
  gh_est_opts_default(&eo);
  gh_opts_bool(po, "binary", &binary, "Write the output model in binary mode");
  gh_opts_int(po, "num-iters", &num_iters, "Number of EM iterations (the maximum with --tol)");
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPTS_BOTH);
  gh_opts_string(po, "label-type", &label_type, "What the labels argument holds: ali, utt or post");
  gh_em_tool_opts eto;
  gh_em_tool_opts_register(po, &eto);
  gh_opts_string(po, "write-accs", &write_accs, "Write the accumulators of the last E-step to this file");
  int64_t block_frames = 65536;
  gh_opts_int64(po, "block-frames", &block_frames,
                "Frames per block of the E-step (utterances in key order, cut at utterance boundaries), as "
                "gmm-train's");
  gh_est_opts_register(po, &eo);
  gh_mstep_shrink ms;
  gh_mstep_shrink_register(po, &ms);
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs != 3 && nargs != 4) gh_opts_usage_exit(po);
  const char *model_in = gh_opts_arg(po, 0), *feats_rspec = gh_opts_arg(po, 1);
  const char *labels_rspec = nargs == 4 ? gh_opts_arg(po, 2) : NULL, *model_out = gh_opts_arg(po, nargs - 1);
  if (num_iters < 1) gh_die("--num-iters must be >= 1 (got %d)", num_iters);
  if (block_frames < 1) gh_die("--block-frames must be >= 1 (got %lld)", (long long)block_frames);

  gh_gmm_set model;
  gh_gmm_set_read(model_in, &model);

  gh_mstep_shrink_parse(&ms);
  gh_mstep_shrink_attach(&ms, &model, model_in, write_accs, &eo);
  gh_label_type lt = GH_LABELS_NONE;
  if (labels_rspec && (gh_label_type_parse(label_type, &lt) != 0 || lt == GH_LABELS_NONE))
    gh_die("--label-type must be ali, utt or post (got '%s')", label_type);
  if (!labels_rspec && model.num_pdfs != 1)
    gh_die("%s has %d pdfs: a labels argument is needed", model_in, model.num_pdfs);
  gh_comm *comm = gh_comm_single(); /* one rank: gmm-train's EM as a plain process */
  gh_device_opts_begin(&dev); /* the device starts while we read */
  gh_data_opts dopt = {feats_rspec, labels_rspec, labels_rspec ? lt : GH_LABELS_NONE, model.num_pdfs, model.dim,
                       model_in};
  gh_shard_data sd;
  gh_shard_data_load(&sd, &dopt, block_frames, 1, 0, NULL);
  gh_shard_data_warn(&sd, &dopt);
  int64_t num_pairs = 0;
  for (int32_t k = 0; k < sd.num_blocks; ++k) num_pairs += sd.blocks[k].num_pairs;
  const int64_t num_frames = sd.plan.frame_off[sd.plan.num_utts];
  gh_log("loaded %lld utterances, %lld frames of dimension %d (%lld frame-pdf pairs) in %d blocks",
         (long long)sd.plan.num_utts, (long long)num_frames, model.dim, (long long)num_pairs, sd.num_blocks);
  gh_backend *be = gh_device_opts_end(&dev);
  gh_host_blas_serial(); /* the M-step's small LAPACK calls run faster on one thread */
  gh_dist_em em;
  gh_dist_em_init(&em, comm, be, &model, &sd, 0); /* frames resident across iterations */
  gh_rng rng;
  gh_rng_seed(&rng, (uint64_t)eto.seed);
  gh_accs_set accs;
  double avg = 0;
  gh_em_monitor mon;
  gh_em_monitor_init(&mon, eto.tol);
  for (int32_t it = 1; it <= num_iters; ++it) {
    /* The accumulators come to the host (and the M-step runs there) only
     * when something here needs them; else the M-step stays on the device
     * when the backend has one (gh_dist_em). */
    const int may_be_last = it == num_iters || eto.tol > 0; /* with --tol any iteration may be the last */
    const int want_accs = ms.so.method != GH_SHRINK_NONE || (it == 1 && eto.mix_up > 0) || (may_be_last && *write_accs);
    avg = gh_dist_em_estep(&em, want_accs ? &accs : NULL);
    const int last = gh_em_monitor_report(&mon, avg) || it == num_iters;
    gh_log("iteration %d: avg loglike per frame %.6f over %.0f frames, %.3g frames/s", it, avg,
           em.total_weight, em.estep_seconds > 0 ? num_frames / em.estep_seconds : 0.0);
    if (gh_shrink_needs_stats(ms.so.method) || (ms.shrinkage_stats && last && *write_accs)) {
      gh_accs_shrink_init(&accs, &model); /* second pass, centres = this E-step model's means */
      gh_dist_em_acc_shrink(&em, &accs);
    }
    gh_est_stats st;
    memset(&st, 0, sizeof st);
    gh_shrink_stats_init(&ms.sst);
    gh_dist_em_mstep(&em, &eo, want_accs ? &accs : NULL, &st);
    if (ms.so.method != GH_SHRINK_NONE) gh_shrink_stats_log(&ms.so, &ms.sst);
    gh_vlog(1, "iteration %d: auxiliary function change per frame %.6f over %.0f frames (M-step on the %s, %.3g s)",
            it, st.count > 0 ? st.objf_change / st.count : 0.0, st.count, em.mstep_on_device ? "device" : "host",
            em.mstep_seconds);
    if (it == 1 && eto.mix_up > 0) gh_dist_em_mixup(&em, &eto, &accs, &rng);
    if (want_accs && (!last || !*write_accs)) gh_accs_free(&accs);
    if (last) break;
  }
  {
    char conv[192];
    gh_em_monitor_describe(&mon, conv, sizeof conv);
    gh_log("%s", conv);
  }
  if (*write_accs) {
    gh_accs_write(write_accs, binary, &accs);
    gh_accs_free(&accs);
  }
  gh_dist_em_sync(&em);
  gh_gmm_set_write(model_out, binary, &model);
  gh_log("wrote %s: %d pdfs, %lld Gaussians; last avg loglike per frame %.6f over %.0f frames", model_out,
         model.num_pdfs, (long long)gh_gmm_set_total_gauss(&model), avg, em.total_weight);
  char paths[256];
  gh_backend_paths_describe(be, paths, sizeof paths);
  gh_vlog(1, "%s", paths);
  gh_dist_em_free(&em);
  gh_backend_free(be);
  gh_shard_data_free(&sd);
  gh_gmm_set_free(&model);
  gh_comm_finalize(comm);
  gh_opts_free(po);
  return 0;
}
