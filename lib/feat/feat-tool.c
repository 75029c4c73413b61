/* feat-tool.c -- the body of compute-mfcc-feats and compute-fbank-feats
 * (Kaldi's featbin ComputeFeatures): one loop over a wav.scp table, features
 * per utterance, a feature archive out.  See feat.h. */
#include "feat/feat.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "io/table.h"
#include "feat/wav.h"

int gh_compute_feats_main(int argc, char **argv, gh_feat_type type, const char *usage) {
  gh_init(argv[0]);
  gh_feat_opts fo;
  gh_feat_opts_default(&fo, type);
  int32_t channel = -1;
  float min_duration = 0.0f;
  int subtract_mean = 0;
  gh_opts *po = gh_opts_new(usage);
  gh_feat_opts_register(&fo, po);
  gh_opts_int(po, "channel", &channel, "Channel to extract (-1 -> expect mono, 0 -> left, 1 -> right)");
  gh_opts_float(po, "min-duration", &min_duration, "Minimum duration of segments to process (in seconds).");
  gh_opts_bool(po, "subtract-mean", &subtract_mean, "Subtract mean of each feature file [CMS]; not recommended to do it this way.");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *wav_rspec = gh_opts_arg(po, 0), *feat_wspec = gh_opts_arg(po, 1);

  gh_feat_computer *comp = gh_feat_computer_new(&fo);
  if (!comp) gh_die("%s", gh_last_error());
  gh_wave_reader *reader = gh_wave_reader_open(wav_rspec);
  gh_writer *writer = gh_writer_open(feat_wspec);
  gh_matrix feats = {0, 0, NULL};
  int64_t num_utts = 0, num_success = 0, num_frames = 0;
  for (; !gh_wave_reader_done(reader); gh_wave_reader_next(reader)) {
    const char *key = gh_wave_reader_key(reader), *rx = gh_wave_reader_rxfilename(reader);
    const gh_wave *w = gh_wave_reader_value(reader);
    num_utts++;
    int32_t chan = channel;
    if (channel == -1) {
      chan = 0;
      if (w->num_channels != 1)
        gh_warn("%s, key '%s': channel not specified but the file has %d channels; defaulting to zero", rx, key,
                w->num_channels);
    } else if (channel < 0 || channel >= w->num_channels) {
      gh_warn("%s, key '%s': file has %d channels but you specified channel %d, producing no output", rx, key,
              w->num_channels, channel);
      continue;
    }
    if (w->samp_freq != fo.frame.samp_freq) {
      gh_warn("%s, key '%s': waveform sample frequency %g Hz does not match --sample-frequency=%g, "
              "producing no output", rx, key, w->samp_freq, (double)fo.frame.samp_freq);
      continue;
    }
    if (min_duration > 0.0f && w->num_samples / w->samp_freq < min_duration) {
      gh_warn("%s, key '%s': duration %g s is less than --min-duration, skipping", rx, key,
              w->num_samples / w->samp_freq);
      continue;
    }
    gh_feat_compute(comp, w->data + (int64_t)chan * w->num_samples, w->num_samples, &feats);
    if (feats.rows == 0)
      gh_warn("%s, key '%s': %lld samples is shorter than one frame, writing an empty matrix", rx, key,
              (long long)w->num_samples);
    if (subtract_mean && feats.rows > 0) {
      for (int32_t d = 0; d < feats.cols; ++d) {
        float mean = 0.0f;
        for (int32_t t = 0; t < feats.rows; ++t) mean += gh_row(&feats, t)[d];
        mean /= feats.rows;
        for (int32_t t = 0; t < feats.rows; ++t) gh_row(&feats, t)[d] -= mean;
      }
    }
    gh_writer_write(writer, key, GH_OBJ_MATRIX, &feats);
    num_frames += feats.rows;
    num_success++;
  }
  gh_wave_reader_close(reader);
  gh_writer_close(writer);
  gh_matrix_free(&feats);
  gh_feat_computer_free(comp);
  gh_log("Done %lld out of %lld utterances (%lld frames).", (long long)num_success, (long long)num_utts,
         (long long)num_frames);
  gh_opts_free(po);
  return num_success != 0 ? 0 : 1;
}
