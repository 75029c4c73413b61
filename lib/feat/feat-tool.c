/* feat-tool.c -- the shared loop of compute-mfcc-feats and
 * compute-fbank-feats (Kaldi's featbin ComputeFeatures): one pass over a
 * wav.scp table, features per utterance, a feature archive out.  The
 * tools' mains (usage, options) are in tools/.  See feat.h. */
#include "feat/feat.h"
#include "base/gh-base.h"
#include "io/table.h"
#include "feat/wav.h"

int gh_compute_feats(const gh_compute_feats_args *a, const char *wav_rspec, const char *feat_wspec) {
  const gh_feat_opts fo = a->fo;
  const int32_t channel = a->channel;
  const float min_duration = a->min_duration;
  const int subtract_mean = a->subtract_mean;
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
  return num_success != 0 ? 0 : 1;
}
