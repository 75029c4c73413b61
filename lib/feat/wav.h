/* wav.h -- reading audio for feature extraction (Kaldi's feat/wave-reader.cc
 * and the "wav.scp" tables of featbin/compute-mfcc-feats.cc).
 *
 * Audio is decoded with libsndfile (WAV and whatever else it reads: FLAC,
 * AIFF, ...).  Samples are returned on Kaldi's scale: a 16-bit PCM sample is
 * its int16 value (-32768..32767), not a number in [-1, 1).  Other encodings
 * are put on the same 16-bit full scale: 8-bit PCM (u - 128) * 256, 24-bit
 * PCM x / 256, 32-bit PCM x / 65536, float/double WAV x * 32768.  (Kaldi
 * itself reads only 16-bit PCM and rejects the others.)
 *
 * Built without libsndfile (GH_NO_SNDFILE), every reader fails with
 * "built without libsndfile".
 */
#ifndef GH_WAV_H
#define GH_WAV_H
#include <stddef.h>
#include <stdint.h>
#include "base/matrix.h"

/* One decoded waveform.  data holds num_channels rows of num_samples
 * samples (channel-major, like Kaldi's WaveData matrix: row = channel). */
typedef struct {
  int32_t num_channels;
  int64_t num_samples;    /* per channel */
  double samp_freq;       /* Hz, from the file header */
  float *data;            /* num_channels * num_samples, 16-bit scale */
} gh_wave;

/* Decode an audio file held in memory (the whole file: header and data).
 * name is used in messages only.  Returns 1 on success; on failure returns 0
 * with the reason in gh_last_error() ("truncated or unreadable header: ...",
 * "no audio samples", "built without libsndfile").  A data chunk shorter
 * than its header says is read as far as it goes (Kaldi warns; so do we). */
int gh_wave_read_mem(const void *buf, size_t n, const char *name, gh_wave *w);

/* Read an audio file from an rxfilename ("path", "cmd |", "-"): the stream is
 * read to memory (so pipes work) and decoded by gh_wave_read_mem.  Returns 1
 * on success, 0 with gh_last_error() set on failure. */
int gh_wave_read(const char *rxfilename, gh_wave *w);

/* Frees the samples; leaves the struct zeroed.  Safe on a zeroed struct. */
void gh_wave_free(gh_wave *w);

/* Sequential reader of a wav.scp table: rspecifier "scp[,opts]:<rxfilename>"
 * whose lines are "key rxfilename" (rxfilename: a path, relative to the
 * working directory, or "cmd |").  Option "p" (permissive) skips entries
 * that cannot be read, with a warning; otherwise an unreadable entry dies
 * with "<rspecifier>, key '<key>': <rxfilename>: <reason>".  "ark:" (an
 * archive of WAV objects) is not supported and dies.  Blank lines are
 * skipped; a line without a filename dies naming the line. */
typedef struct gh_wave_reader gh_wave_reader;
gh_wave_reader *gh_wave_reader_open(const char *rspecifier);
int gh_wave_reader_done(gh_wave_reader *r);
const char *gh_wave_reader_key(gh_wave_reader *r);
/* The rxfilename of the current entry (for messages). */
const char *gh_wave_reader_rxfilename(gh_wave_reader *r);
const gh_wave *gh_wave_reader_value(gh_wave_reader *r);
void gh_wave_reader_next(gh_wave_reader *r);
void gh_wave_reader_close(gh_wave_reader *r);

#endif
