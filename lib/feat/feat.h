/* feat.h -- feature extraction as Kaldi does it: framing and windows
 * (feat/feature-window.cc), mel filterbanks (feat/mel-computations.cc), MFCC
 * (feat/feature-mfcc.cc) and log mel filterbank (feat/feature-fbank.cc)
 * features, deltas (feat/feature-functions.cc) and cepstral mean and variance
 * normalization (transform/cmvn.cc).
 *
 * Units: sample frequency in Hz, frame length/shift in milliseconds, samples
 * on the int16 scale (see wav.h).  Features are float matrices, one row per
 * frame.  The FFT is FFTW's (double precision) when built with it, else a
 * built-in radix-2 FFT (a plain DFT for sizes that are not powers of two).
 * Spectra, mel energies and the DCT are computed in double (Kaldi: float), so
 * outputs agree with Kaldi's to float rounding (see doc/features.md).
 */
#ifndef GH_FEAT_H
#define GH_FEAT_H
#include <stdint.h>
#include "base/matrix.h"
#include "base/opts.h"

/* Kaldi's FrameExtractionOptions, with Kaldi's defaults. */
typedef struct {
  float samp_freq;           /* --sample-frequency, Hz (16000) */
  float frame_shift_ms;      /* --frame-shift (10) */
  float frame_length_ms;     /* --frame-length (25) */
  float dither;              /* --dither, stddev of Gaussian noise added to samples (1) */
  float preemph_coeff;       /* --preemphasis-coefficient (0.97) */
  int remove_dc_offset;      /* --remove-dc-offset (true) */
  const char *window_type;   /* --window-type: povey|hamming|hanning|rectangular|blackman|sine */
  int round_to_power_of_two; /* --round-to-power-of-two (true) */
  float blackman_coeff;      /* --blackman-coeff (0.42) */
  int snip_edges;            /* --snip-edges (true) */
} gh_frame_opts;

/* Kaldi's MelBanksOptions (no VTLN). */
typedef struct {
  int32_t num_bins; /* --num-mel-bins (23) */
  float low_freq;   /* --low-freq, Hz (20) */
  float high_freq;  /* --high-freq, Hz; <= 0 means Nyquist + high_freq (0) */
} gh_mel_opts;

typedef enum { GH_FEAT_MFCC = 0, GH_FEAT_FBANK = 1 } gh_feat_type;

/* MfccOptions / FbankOptions in one struct; type decides which apply. */
typedef struct {
  gh_feat_type type;
  gh_frame_opts frame;
  gh_mel_opts mel;
  int32_t num_ceps;      /* MFCC: --num-ceps (13) */
  float cepstral_lifter; /* MFCC: --cepstral-lifter (22; 0 = none) */
  int use_energy;        /* --use-energy (MFCC true, fbank false) */
  float energy_floor;    /* --energy-floor (0; > 0 floors the log energy at log(floor)) */
  int raw_energy;        /* --raw-energy (true): energy before preemphasis/window */
  int htk_compat;        /* --htk-compat (false): energy last; MFCC C0 scaled by sqrt(2) if no energy */
  int use_log_fbank;     /* fbank: --use-log-fbank (true) */
  int use_power;         /* fbank: --use-power (true; false = magnitude) */
} gh_feat_opts;

/* Fill with Kaldi's defaults for MFCC or fbank (compute-mfcc-feats /
 * compute-fbank-feats). */
void gh_feat_opts_default(gh_feat_opts *o, gh_feat_type type);
/* Register Kaldi's option names (MfccOptions::Register / FbankOptions::
 * Register, FrameExtractionOptions, MelBanksOptions) on a parser. */
void gh_feat_opts_register(gh_feat_opts *o, gh_opts *po);

/* Frame geometry (feature-window.cc).  Window size and shift in samples are
 * (int)(samp_freq * 0.001 * ms); the padded size is the window size rounded
 * up to a power of two when round_to_power_of_two.  gh_frame_num_frames:
 * with snip_edges, 1 + (n - size) / shift frames (0 if n < size); without,
 * (n + shift/2) / shift.  gh_frame_first_sample: first sample of frame t
 * (negative possible without snip_edges; out-of-range samples are
 * reflected). */
int32_t gh_frame_window_size(const gh_frame_opts *o);
int32_t gh_frame_window_shift(const gh_frame_opts *o);
int32_t gh_frame_padded_size(const gh_frame_opts *o);
int64_t gh_frame_num_frames(int64_t num_samples, const gh_frame_opts *o);
int64_t gh_frame_first_sample(int64_t frame, const gh_frame_opts *o);

/* Window function of length len (FeatureWindowFunction) into out[len], with
 * a = 2 pi / (len - 1): hanning 0.5 - 0.5 cos(a i); sine sin(0.5 a i);
 * hamming 0.54 - 0.46 cos(a i); povey (0.5 - 0.5 cos(a i))^0.85;
 * rectangular 1; blackman c - 0.5 cos(a i) + (0.5 - c) cos(2 a i).
 * Returns 0 (and writes nothing) for an unknown type. */
int gh_window_function(const char *type, int32_t len, float blackman_coeff, double *out);

/* Mel filterbank weights (MelBanks constructor) as a dense matrix
 * num_bins x (padded/2 + 1) (the last column, Nyquist, is always 0 as in
 * Kaldi).  Computed in float as Kaldi does (mel(f) = 1127 ln(1 + f/700)), so
 * the same FFT bins are included.  Returns 0 with gh_last_error() set on bad
 * options (num_bins < 3, frequencies outside (0, Nyquist], an empty bin). */
int gh_mel_banks(const gh_mel_opts *mel, const gh_frame_opts *frame, gh_dmatrix *weights);

/* DCT-II matrix of Kaldi's ComputeDctMatrix, first num_ceps rows:
 * out[k*num_bins + n] = sqrt(1/N) for k = 0, sqrt(2/N) cos(pi/N (n + 0.5) k)
 * otherwise (N = num_bins). */
void gh_dct_matrix(int32_t num_ceps, int32_t num_bins, double *out);
/* Cepstral lifter (ComputeLifterCoeffs): out[i] = 1 + 0.5 Q sin(pi i / Q). */
void gh_lifter_coeffs(int32_t n, double Q, double *out);

/* Power spectrum of a real frame of n samples (any n >= 1):
 * power[k] = |X_k|^2 for k = 0..n/2 (n/2 + 1 values), through FFTW
 * (double precision, one cached r2c plan per frame size). */
void gh_power_spectrum(const double *frame, int32_t n, double *power);

/* A configured MFCC or fbank extractor (MfccComputer / FbankComputer with
 * OfflineFeatureTpl::ComputeFeatures).  gh_feat_computer_new returns NULL
 * with gh_last_error() set on invalid options (unknown window type, bad
 * mel frequencies, num_ceps > num_bins, ...).  Dither uses our own Gaussian
 * generator (xorshift + Box-Muller, fixed seed per computer), so dithered
 * output is deterministic but differs from Kaldi's; --dither=0 is exact. */
typedef struct gh_feat_computer gh_feat_computer;
gh_feat_computer *gh_feat_computer_new(const gh_feat_opts *o);
/* Output dimension: num_ceps (MFCC), num_bins + use_energy (fbank). */
int32_t gh_feat_computer_dim(const gh_feat_computer *c);
/* Features of one channel of n samples (int16 scale) into out, resized to
 * num_frames x dim; a wave shorter than one frame gives a 0 x 0 matrix as
 * in Kaldi.  The caller checks the sample frequency against the options. */
void gh_feat_compute(gh_feat_computer *c, const float *wave, int64_t n, gh_matrix *out);
void gh_feat_computer_free(gh_feat_computer *c);

/* Deltas (ComputeDeltas, DeltaFeatures): out = [x, d1, ..., d_order] of
 * size rows x cols*(order+1); d_i is the delta of d_{i-1} with regression
 * window +-window (sum_j j x_{t+j} / sum_j j^2, frames clamped at the ends).
 * Computed in float in Kaldi's order.  Returns 0 with gh_last_error() set
 * unless 0 <= order < 1000 and 0 < window < 1000. */
int gh_compute_deltas(int32_t order, int32_t window, const gh_matrix *in, gh_matrix *out);

/* CMVN stats (transform/cmvn.cc), a 2 x (dim+1) double matrix: row 0 the
 * per-dimension sums and the frame count in the last column, row 1 the sums
 * of squares (each square rounded to float, as Kaldi does) and 0.
 * gh_cmvn_init resizes and zeroes; gh_cmvn_acc adds every row of feats
 * (feats->cols must equal dim; returns 0 with gh_last_error() otherwise). */
void gh_cmvn_init(gh_dmatrix *stats, int32_t dim);
int gh_cmvn_acc(gh_dmatrix *stats, const gh_matrix *feats);
/* ApplyCmvn: mean normalization x - mean (norm_vars false) or
 * (x - mean) / stddev (variances floored at 1e-20 with a warning).
 * Returns 0 with gh_last_error() set if the dimensions differ, the count is
 * below 1, or the scale is not finite. */
int gh_cmvn_apply(const gh_dmatrix *stats, int norm_vars, gh_matrix *feats);
/* FakeStatsForSomeDims: make dims (0-based) zero-mean unit-variance so that
 * normalization leaves them alone (apply-cmvn --skip-dims). */
void gh_cmvn_fake_stats_for_dims(gh_dmatrix *stats, const int32_t *dims, int32_t n);

/* compute-mfcc-feats / compute-fbank-feats: the options besides fo's
 * (gh_feat_opts_register), Kaldi's names. */
typedef struct {
  gh_feat_opts fo;       /* fo.type picks MFCC or fbank */
  int32_t channel;       /* --channel: -1 expect mono (channel 0 used, warned otherwise), 0 left, 1 right */
  float min_duration;    /* --min-duration: shorter utterances (seconds) are skipped with a warning */
  int subtract_mean;     /* --subtract-mean: subtract each file's per-dimension mean */
} gh_compute_feats_args;

/* The shared body of compute-mfcc-feats and compute-fbank-feats: for each
 * utterance of <wav-rspecifier> the feature matrix [frames x dim] to
 * <feats-wspecifier>.  As in Kaldi, an utterance whose sample frequency
 * differs from --sample-frequency, or that lacks the requested --channel,
 * is skipped with a warning; an unreadable audio file is fatal (scp option
 * "p" skips it); invalid options die (gh_feat_computer_new's message).
 * Logs the counts.  Returns the exit status: 0 if at least one utterance
 * was done, else 1. */
int gh_compute_feats(const gh_compute_feats_args *a, const char *wav_rspec, const char *feat_wspec);

#endif
