/* compute-vad -- energy-based voice activity detection (Kaldi's
 * ivectorbin/compute-vad.cc; the decision is lib/feat/feat-functions.c
 * gh_compute_vad_energy).  Writes one float vector per utterance, 1.0 for a
 * voiced frame and 0.0 otherwise. */
#include "base/gh-base.h"
#include "base/opts.h"
#include "feat/feat-functions.h"
#include "io/table.h"

static const char *usage =
    "This program reads input features and writes out, for each utterance,\n"
    "a vector of floats that are 1.0 if we judge the frame voiced and 0.0\n"
    "otherwise.  The algorithm thresholds the log energy (column 0 of the\n"
    "features) and takes the consensus of the decisions within a window\n"
    "centred on the frame; see the options.  Intended for speaker-ID.\n"
    "\n"
    "Usage: compute-vad [options] <feats-rspecifier> <vad-wspecifier>\n"
    "e.g.: compute-vad --vad-energy-threshold=5.5 --vad-energy-mean-scale=0.5 scp:feats.scp ark:vad.ark\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int omit_unvoiced_utts = 0;
  gh_vad_opts vo;
  gh_vad_opts_default(&vo);
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "omit-unvoiced-utts", &omit_unvoiced_utts,
               "If true, do not write out voicing information for utterances that were judged 100% unvoiced.");
  gh_vad_opts_register(&vo, po);
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  if (!gh_vad_opts_check(&vo)) gh_die("%s", gh_last_error());
  const char *rspec = gh_opts_arg(po, 0), *wspec = gh_opts_arg(po, 1);

  gh_seq_reader *reader = gh_seq_reader_open(rspec, GH_OBJ_MATRIX);
  gh_writer *writer = gh_writer_open(wspec);
  gh_vector voiced = {0, NULL};
  int64_t num_done = 0, num_err = 0, num_unvoiced = 0;
  double tot_length = 0.0, tot_decision = 0.0;
  char first_unvoiced[256] = "", first_empty[256] = ""; /* for the error when nothing was voiced */
  for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader)) {
    const char *key = gh_seq_reader_key(reader);
    const gh_matrix *feats = gh_seq_reader_value(reader);
    gh_check_finite_matrix(feats, rspec, key);
    if (feats->rows == 0) {
      gh_warn("%s, key '%s': empty feature matrix", rspec, key);
      if (!num_err++) snprintf(first_empty, sizeof first_empty, "%s", key);
      continue;
    }
    if (!gh_compute_vad_energy(&vo, feats, &voiced)) gh_die("%s, key '%s': %s", rspec, key, gh_last_error());
    double sum = 0.0;
    for (int32_t t = 0; t < voiced.dim; ++t) sum += voiced.data[t];
    if (sum == 0.0) {
      gh_warn("%s, key '%s': no frames were judged voiced", rspec, key);
      if (!num_unvoiced++) snprintf(first_unvoiced, sizeof first_unvoiced, "%s", key);
    } else {
      num_done++;
    }
    tot_decision += sum;
    tot_length += voiced.dim;
    if (!(omit_unvoiced_utts && sum == 0.0)) gh_writer_write(writer, key, GH_OBJ_VECTOR, &voiced);
  }
  gh_seq_reader_close(reader);
  gh_writer_close(writer);
  gh_vector_free(&voiced);
  gh_log("Applied energy based voice activity detection; processed %lld utterances successfully; "
         "%lld had empty features, and %lld were completely unvoiced.",
         (long long)num_done, (long long)num_err, (long long)num_unvoiced);
  gh_log("Proportion of voiced frames was %g over %g frames.", tot_length > 0 ? tot_decision / tot_length : 0.0,
         tot_length);
  /* Kaldi's exit status 1 when no utterance had a voiced frame, with its cause */
  if (!num_done && num_unvoiced)
    gh_die("%s: no utterance has a voiced frame (%lld of %lld: key '%s' first): no frame was judged voiced with "
           "--vad-energy-threshold=%g --vad-energy-mean-scale=%g (the threshold on column 0, the log energy: "
           "features without it, or a threshold too high?)",
           rspec, (long long)num_unvoiced, (long long)(num_unvoiced + num_err), first_unvoiced,
           vo.energy_threshold, vo.energy_mean_scale);
  if (!num_done && num_err) gh_die("%s: no utterance has a voiced frame: all %lld have empty features (key '%s' first)", rspec,
                      (long long)num_err, first_empty);
  if (!num_done) gh_die("%s: no utterances", rspec);
  gh_opts_free(po);
  return 0;
}
