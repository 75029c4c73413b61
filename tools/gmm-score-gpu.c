/* gmm-score-gpu -- per-frame, per-pdf log-likelihoods of features under a
 * GMM set (Kaldi's gmm-compute-likes / fgmm-global-get-frame-likes), on the
 * GPU when there is one.  Utterances are batched (--batch-frames) into one
 * call of the backend's loglikes (kernels/backend.h); reading, scoring and
 * writing overlap (drivers/gmm/score-pipeline.h).  With --spk-models, each
 * utterance is scored under its speaker's model (gmm-adapt-map --spk2utt's
 * table), all speakers in one process. */
#include "registry/registry.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm.h"
#include "gmm/numerics.h"
#include "gmm/score-pipeline.h"
#include "train/device-opts.h"
#include "base/strmap.h"
#include "io/table.h"

#include <stdlib.h>
#include <string.h>

/* utterance -> model index for gh_score_models (the reader thread's lookups;
 * read-only once built) */
typedef struct {
  gh_strmap models;  /* model key (speaker, or utterance without --utt2spk) -> index */
  gh_strmap utt2spk; /* utterance -> index in spk[] (with --utt2spk) */
  char **spk;
  int32_t num_spk;
  const char *models_rspec, *utt2spk_rspec;
} spk_map;

static int32_t model_of_utt(void *ctx, const char *utt) {
  const spk_map *sm = ctx;
  const char *key = utt;
  if (sm->utt2spk_rspec) {
    const int32_t s = gh_strmap_get(&sm->utt2spk, utt);
    if (s < 0) gh_die("utterance '%s' is not in --utt2spk=%s", utt, sm->utt2spk_rspec);
    key = sm->spk[s];
  }
  const int32_t i = gh_strmap_get(&sm->models, key);
  if (i < 0) {
    if (key != utt) gh_die("speaker '%s' of utterance '%s' has no model in --spk-models=%s", key, utt, sm->models_rspec);
    gh_die("utterance '%s' has no model in --spk-models=%s (keyed by speaker? give --utt2spk)", utt, sm->models_rspec);
  }
  return i;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Compute per-frame log-likelihoods of every pdf of a GMM set (natural log), one\n"
      "matrix (frames x pdfs) per utterance, as Kaldi's gmm-compute-likes writes them.\n"
      "The model may be a GMM set, a Kaldi .mdl, or a Kaldi global <DiagGMM>/<FullGMM>\n"
      "(one pdf: column 0 is then the per-frame log-likelihood).\n"
      "With --spk-models (a table of models, e.g. gmm-adapt-map --spk2utt's) each utterance is\n"
      "scored under its speaker's model (--utt2spk) or, without --utt2spk, its own; <model-in>\n"
      "then gives the shape every model must have.\n"
      "Usage: gmm-score-gpu [options] <model-in> <feats-rspecifier> <loglikes-wspecifier>\n"
      " e.g.: gmm-score-gpu --device=cuda final.mdl scp:feats.scp ark:loglikes.ark\n"
      "       gmm-score-gpu --utt2spk=ark:utt2spk --spk-models=ark:map.ark final.mdl scp:feats.scp ark:-";
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
  const char *spk_models = "", *utt2spk = "";
  gh_opts_string(po, "spk-models", &spk_models,
                 "rspecifier of a table of models (ark:...), one per speaker (with --utt2spk) or per utterance: "
                 "each utterance scored under its own");
  gh_opts_string(po, "utt2spk", &utt2spk, "rspecifier for utterance to speaker map (with --spk-models)");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  if (*utt2spk && !*spk_models) gh_die("--utt2spk needs --spk-models (the per-speaker models)");
  const char *model_rx = gh_opts_arg(po, 0), *feats_rspec = gh_opts_arg(po, 1),
             *out_wspec = gh_opts_arg(po, 2);
  if (so.batch_frames < 0) gh_die("--batch-frames must be >= 0 (got %d)", so.batch_frames);

  gh_gmm_set set;
  gh_gmm_set_read(model_rx, &set);
  gh_gmm_set_contract_check(&set, model_rx);
  if (set.num_pdfs <= 0) gh_die("%s: model has no pdfs", model_rx);
  gh_device_opts_auto_small(&dev, gh_cpu_rate_gmm(&set, 1), "scoring this model");
  gh_backend *be = gh_device_opts_open(&dev);

  gh_score_stats st;
  spk_map map;
  memset(&map, 0, sizeof map);
  char **mkeys = NULL;
  gh_gmm_set *models = NULL;
  int32_t nmodels = 0;
  if (*spk_models) {
    nmodels = gh_gmm_set_table_read(spk_models, &mkeys, &models);
    if (nmodels == 0) gh_die("--spk-models=%s holds no models", spk_models);
    for (int32_t i = 0; i < nmodels; ++i) {
      if (models[i].dim != set.dim || models[i].num_pdfs != set.num_pdfs)
        gh_die("--spk-models=%s, key '%s': dimension %d and %d pdfs, but %s has %d and %d", spk_models, mkeys[i],
               models[i].dim, models[i].num_pdfs, model_rx, set.dim, set.num_pdfs);
      gh_gmm_set_contract_check(&models[i], mkeys[i]);
      gh_strmap_put(&map.models, mkeys[i], i);
    }
    map.models_rspec = spk_models;
    if (*utt2spk) {
      map.utt2spk_rspec = utt2spk;
      gh_strmap spks = {0};
      gh_seq_reader *r = gh_seq_reader_open(utt2spk, GH_OBJ_TOKEN_VECTOR);
      for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {
        const char *spk = gh_seq_reader_value(r);
        if (!*spk || strchr(spk, ' ')) gh_die("%s, key '%s': expected one speaker id, got '%s'", utt2spk,
                                             gh_seq_reader_key(r), spk);
        int32_t si = gh_strmap_get(&spks, spk);
        if (si < 0) {
          si = map.num_spk++;
          map.spk = gh_realloc(map.spk, sizeof *map.spk * (size_t)map.num_spk);
          map.spk[si] = gh_strdup(spk);
          gh_strmap_put(&spks, spk, si);
        }
        if (!gh_strmap_put(&map.utt2spk, gh_seq_reader_key(r), si))
          gh_die("%s: utterance '%s' appears twice", utt2spk, gh_seq_reader_key(r));
      }
      gh_seq_reader_close(r);
      gh_strmap_free(&spks);
    }
    const gh_score_models sm = {nmodels, models, model_of_utt, &map};
    gh_score_pipeline_run_models(be, &sm, feats_rspec, out_wspec, &so, &st);
  } else {
    gh_score_pipeline_run(be, &set, feats_rspec, out_wspec, &so, &st);
  }
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
  for (int32_t i = 0; i < nmodels; ++i) {
    free(mkeys[i]);
    gh_gmm_set_free(&models[i]);
  }
  free(mkeys);
  free(models);
  for (int32_t i = 0; i < map.num_spk; ++i) free(map.spk[i]);
  free(map.spk);
  gh_strmap_free(&map.models);
  gh_strmap_free(&map.utt2spk);
  gh_gmm_set_free(&set);
  gh_opts_free(po);
  return 0;
}
