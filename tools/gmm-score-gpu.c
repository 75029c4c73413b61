/* gmm-score-gpu -- per-frame, per-pdf log-likelihoods of features under a
 * GMM set (Kaldi's gmm-compute-likes / fgmm-global-get-frame-likes), on the
 * GPU when there is one.  Utterances are batched (--batch-frames) into one
 * call of the backend's loglikes (kernels/backend.h); reading, scoring and
 * writing overlap (drivers/gmm/score-pipeline.h). */
#include "registry/registry.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm.h"
#include "gmm/numerics.h"
#include "gmm/score-pipeline.h"
#include "train/device-opts.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Compute per-frame log-likelihoods of every pdf of a GMM set (natural log), one\n"
      "matrix (frames x pdfs) per utterance, as Kaldi's gmm-compute-likes writes them.\n"
      "The model may be a GMM set, a Kaldi .mdl, or a Kaldi global <DiagGMM>/<FullGMM>\n"
      "(one pdf: column 0 is then the per-frame log-likelihood).\n"
      "Usage: gmm-score-gpu [options] <model-in> <feats-rspecifier> <loglikes-wspecifier>\n"
      " e.g.: gmm-score-gpu --device=cuda final.mdl scp:feats.scp ark:loglikes.ark";
  gh_opts *po = gh_opts_new(usage);
  gh_score_opts so;
  gh_score_opts_default(&so);
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPTS_BOTH);
  gh_opts_int(po, "batch-frames", &so.batch_frames,
              "Score utterances in batches of about this many frames (one kernel call each); 0: "
              "for models of at most 64 pdfs 32 MB of features (16384 to 262144 frames: large "
              "batches keep the GPU busy and let the upload overlap the kernels), else 32 MB of "
              "log-likelihoods (1024 to 16384 frames)");
  gh_opts_int(po, "io-threads", &so.io_threads,
              "Threads that copy the features into the batches when the input is a plain binary archive "
              "file (ark:FILE; one more thread scans it): -1 = from the core count (2 to 8), 0 = the "
              "sequential reader (one thread, any input)");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *model_rx = gh_opts_arg(po, 0), *feats_rspec = gh_opts_arg(po, 1),
             *out_wspec = gh_opts_arg(po, 2);
  if (so.batch_frames < 0) gh_die("--batch-frames must be >= 0 (got %d)", so.batch_frames);

  gh_gmm_set set;
  gh_gmm_set_read(model_rx, &set);
  gh_gmm_set_contract_check(&set, model_rx);
  if (set.num_pdfs <= 0) gh_die("%s: model has no pdfs", model_rx);
  gh_backend *be = gh_device_opts_open(&dev);

  gh_score_stats st;
  gh_score_pipeline_run(be, &set, feats_rspec, out_wspec, &so, &st);
  const double secs = st.seconds;
  gh_log("Processed %lld utterances, %lld frames; average log-likelihood of the best pdf "
         "%.4f per frame; %.0f frames/s on %s (loglikes kernel alone %.0f frames/s)",
         (long long)st.num_done, (long long)st.total_frames,
         st.total_frames ? st.best_sum / st.total_frames : 0.0, secs > 0 ? st.total_frames / secs : 0.0,
         be->device_name, be->kernel_seconds > 0 ? st.total_frames / be->kernel_seconds : 0.0);
  /* where the time went: the thread that never waits is the bound */
  if (st.parallel_reader) gh_vlog(1, "input: the parallel archive reader, %d copy threads", st.io_threads);
  else gh_vlog(1, "input: the sequential reader");
  gh_vlog(1, "set-up (one frame scored before the pipeline) %.3f s", st.setup_seconds);
  gh_vlog(1, "pipeline over %.3f s: reader waited %.3f s, scorer %.3f s (in loglikes_begin %.3f s, loglikes_end "
          "%.3f s; kernels %.3f s, uploads %.3f s of device time), writer %.3f s",
          secs, st.wait_reader, st.wait_scorer, st.t_begin, st.t_end, be->kernel_seconds, be->upload_seconds,
          st.wait_writer);
  char paths[256];
  gh_backend_paths_describe(be, paths, sizeof paths);
  gh_vlog(1, "%s", paths);
  if (st.num_done == 0) gh_die("%s: no utterances (empty input); %s not written", feats_rspec, out_wspec);
  gh_backend_free(be);
  gh_gmm_set_free(&set);
  gh_opts_free(po);
  return 0;
}
