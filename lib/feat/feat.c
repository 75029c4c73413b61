/* feat.c -- MFCC / fbank extraction, deltas and CMVN.  See feat.h; follows
 * Kaldi's feat/feature-window.cc, feat/mel-computations.cc,
 * feat/feature-mfcc.cc, feat/feature-fbank.cc, feat/feature-functions.cc and
 * transform/cmvn.cc. */
#include "feat/feat.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"

#include <fftw3.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ---------------- options ---------------- */

void gh_feat_opts_default(gh_feat_opts *o, gh_feat_type type) {
  memset(o, 0, sizeof *o);
  o->type = type;
  o->frame.samp_freq = 16000.0f;
  o->frame.frame_shift_ms = 10.0f;
  o->frame.frame_length_ms = 25.0f;
  o->frame.dither = 1.0f;
  o->frame.preemph_coeff = 0.97f;
  o->frame.remove_dc_offset = 1;
  o->frame.window_type = "povey";
  o->frame.round_to_power_of_two = 1;
  o->frame.blackman_coeff = 0.42f;
  o->frame.snip_edges = 1;
  o->mel.num_bins = 23;
  o->mel.low_freq = 20.0f;
  o->mel.high_freq = 0.0f;
  o->num_ceps = 13;
  o->cepstral_lifter = 22.0f;
  o->use_energy = type == GH_FEAT_MFCC;
  o->energy_floor = 0.0f;
  o->raw_energy = 1;
  o->htk_compat = 0;
  o->use_log_fbank = 1;
  o->use_power = 1;
}

void gh_feat_opts_register(gh_feat_opts *o, gh_opts *po) {
  gh_frame_opts *f = &o->frame;
  gh_opts_float(po, "sample-frequency", &f->samp_freq, "Waveform data sample frequency (must match the waveform file, if specified there)");
  gh_opts_float(po, "frame-length", &f->frame_length_ms, "Frame length in milliseconds");
  gh_opts_float(po, "frame-shift", &f->frame_shift_ms, "Frame shift in milliseconds");
  gh_opts_float(po, "preemphasis-coefficient", &f->preemph_coeff, "Coefficient for use in signal preemphasis");
  gh_opts_bool(po, "remove-dc-offset", &f->remove_dc_offset, "Subtract mean from waveform on each frame");
  gh_opts_float(po, "dither", &f->dither, "Dithering constant (0.0 means no dither; our random generator differs from Kaldi's)");
  gh_opts_string(po, "window-type", &f->window_type, "Type of window (\"hamming\"|\"hanning\"|\"povey\"|\"rectangular\"|\"sine\"|\"blackman\")");
  gh_opts_float(po, "blackman-coeff", &f->blackman_coeff, "Constant coefficient for generalized Blackman window.");
  gh_opts_bool(po, "round-to-power-of-two", &f->round_to_power_of_two, "If true, round window size to power of two by zero-padding input to FFT.");
  gh_opts_bool(po, "snip-edges", &f->snip_edges, "If true, end effects will be handled by outputting only frames that completely fit in the file, and the number of frames depends on the frame-length.  If false, the number of frames depends only on the frame-shift, and we reflect the data at the ends.");
  gh_opts_int(po, "num-mel-bins", &o->mel.num_bins, "Number of triangular mel-frequency bins");
  gh_opts_float(po, "low-freq", &o->mel.low_freq, "Low cutoff frequency for mel bins");
  gh_opts_float(po, "high-freq", &o->mel.high_freq, "High cutoff frequency for mel bins (if <= 0, offset from Nyquist)");
  if (o->type == GH_FEAT_MFCC) {
    gh_opts_int(po, "num-ceps", &o->num_ceps, "Number of cepstra in MFCC computation (including C0)");
    gh_opts_float(po, "cepstral-lifter", &o->cepstral_lifter, "Constant that controls scaling of MFCCs");
  }
  gh_opts_bool(po, "use-energy", &o->use_energy, o->type == GH_FEAT_MFCC ? "Use energy (not C0) in MFCC computation" : "Add an extra dimension with energy to the FBANK output.");
  gh_opts_float(po, "energy-floor", &o->energy_floor, "Floor on energy (absolute, not relative) in MFCC/FBANK computation. Only makes a difference if --use-energy=true; only necessary if --dither=0.0.  Suggested values: 0.1 or 1.0");
  gh_opts_bool(po, "raw-energy", &o->raw_energy, "If true, compute energy before preemphasis and windowing");
  gh_opts_bool(po, "htk-compat", &o->htk_compat, "If true, put energy or C0 last and use a factor of sqrt(2) on C0.  Warning: not sufficient to get HTK compatible features (need to change other parameters).");
  if (o->type == GH_FEAT_FBANK) {
    gh_opts_bool(po, "use-log-fbank", &o->use_log_fbank, "If true, produce log-filterbank, else produce linear.");
    gh_opts_bool(po, "use-power", &o->use_power, "If true, use power, else use magnitude.");
  }
}

/* ---------------- framing (feature-window.cc) ---------------- */

int32_t gh_frame_window_size(const gh_frame_opts *o) {
  return (int32_t)(o->samp_freq * 0.001 * o->frame_length_ms);
}
int32_t gh_frame_window_shift(const gh_frame_opts *o) {
  return (int32_t)(o->samp_freq * 0.001 * o->frame_shift_ms);
}
int32_t gh_frame_padded_size(const gh_frame_opts *o) {
  int32_t n = gh_frame_window_size(o);
  if (!o->round_to_power_of_two) return n;
  int32_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

int64_t gh_frame_num_frames(int64_t num_samples, const gh_frame_opts *o) {
  int64_t shift = gh_frame_window_shift(o), size = gh_frame_window_size(o);
  if (o->snip_edges) return num_samples < size ? 0 : 1 + (num_samples - size) / shift;
  return (num_samples + shift / 2) / shift;
}

int64_t gh_frame_first_sample(int64_t frame, const gh_frame_opts *o) {
  int64_t shift = gh_frame_window_shift(o), size = gh_frame_window_size(o);
  if (o->snip_edges) return frame * shift;
  int64_t mid = shift * frame + shift / 2;
  return mid - size / 2;
}

int gh_window_function(const char *type, int32_t len, float blackman_coeff, double *out) {
  double a = 2.0 * M_PI / (len - 1);
  int kind;
  if (!strcmp(type, "hanning")) kind = 0;
  else if (!strcmp(type, "sine")) kind = 1;
  else if (!strcmp(type, "hamming")) kind = 2;
  else if (!strcmp(type, "povey")) kind = 3;
  else if (!strcmp(type, "rectangular")) kind = 4;
  else if (!strcmp(type, "blackman")) kind = 5;
  else return 0;
  for (int32_t i = 0; i < len; ++i) {
    double x = i, w;
    switch (kind) {
      case 0: w = 0.5 - 0.5 * cos(a * x); break;
      case 1: w = sin(0.5 * a * x); break;
      case 2: w = 0.54 - 0.46 * cos(a * x); break;
      case 3: w = pow(0.5 - 0.5 * cos(a * x), 0.85); break;
      case 4: w = 1.0; break;
      default: w = blackman_coeff - 0.5 * cos(a * x) + (0.5 - blackman_coeff) * cos(2 * a * x); break;
    }
    out[i] = (float)w; /* Kaldi keeps the window as a float vector */
  }
  return 1;
}

/* ---------------- mel banks (mel-computations.cc) ---------------- */

static float mel_scale(float f) { return 1127.0f * logf(1.0f + f / 700.0f); }

int gh_mel_banks(const gh_mel_opts *mel, const gh_frame_opts *frame, gh_dmatrix *w) {
  int32_t num_bins = mel->num_bins;
  if (num_bins < 3) { gh_set_error("must have at least 3 mel bins (--num-mel-bins=%d)", num_bins); return 0; }
  float sample_freq = frame->samp_freq;
  int32_t padded = gh_frame_padded_size(frame), num_fft_bins = padded / 2;
  float nyquist = 0.5f * sample_freq;
  float low_freq = mel->low_freq, high_freq = mel->high_freq > 0.0f ? mel->high_freq : nyquist + mel->high_freq;
  if (!(low_freq >= 0.0f && low_freq < nyquist && high_freq > 0.0f && high_freq <= nyquist && low_freq < high_freq)) {
    gh_set_error("bad values in options: --low-freq=%g and --high-freq=%g vs. nyquist %g", (double)low_freq,
                 (double)high_freq, (double)nyquist);
    return 0;
  }
  float fft_bin_width = sample_freq / padded;
  float mel_low = mel_scale(low_freq), mel_high = mel_scale(high_freq);
  float delta = (mel_high - mel_low) / (num_bins + 1);
  gh_dmatrix_resize(w, num_bins, num_fft_bins + 1);
  for (int32_t b = 0; b < num_bins; ++b) {
    float left = mel_low + b * delta, center = mel_low + (b + 1) * delta, right = mel_low + (b + 2) * delta;
    int any = 0;
    for (int32_t i = 0; i < num_fft_bins; ++i) {
      float m = mel_scale(fft_bin_width * i);
      if (m > left && m < right) {
        float weight = m <= center ? (m - left) / (center - left) : (right - m) / (right - center);
        gh_drow(w, b)[i] = weight;
        any = 1;
      }
    }
    if (!any) {
      gh_set_error("mel bin %d is empty: you may have set --num-mel-bins too large (%d)", b, num_bins);
      return 0;
    }
  }
  return 1;
}

void gh_dct_matrix(int32_t K, int32_t N, double *out) {
  for (int32_t k = 0; k < K; ++k)
    for (int32_t n = 0; n < N; ++n)
      out[k * N + n] = k == 0 ? sqrt(1.0 / N) : sqrt(2.0 / N) * cos(M_PI / N * (n + 0.5) * k);
}

void gh_lifter_coeffs(int32_t n, double Q, double *out) {
  for (int32_t i = 0; i < n; ++i) out[i] = 1.0 + 0.5 * Q * sin(M_PI * i / Q);
}

/* ---------------- FFT ---------------- */

/* One cached FFTW plan (tools use a single frame size). */
static struct { int32_t n; double *in; fftw_complex *out; fftw_plan plan; } fft_cache;

static void fftw_power(const double *x, int32_t n, double *power) {
  if (fft_cache.n != n) {
    if (fft_cache.n) {
      fftw_destroy_plan(fft_cache.plan);
      fftw_free(fft_cache.in);
      fftw_free(fft_cache.out);
    }
    fft_cache.n = n;
    fft_cache.in = fftw_malloc(sizeof(double) * (size_t)n);
    fft_cache.out = fftw_malloc(sizeof(fftw_complex) * (size_t)(n / 2 + 1));
    if (!fft_cache.in || !fft_cache.out) gh_die("out of memory (FFT of size %d)", n);
    fft_cache.plan = fftw_plan_dft_r2c_1d(n, fft_cache.in, fft_cache.out, FFTW_ESTIMATE);
  }
  memcpy(fft_cache.in, x, sizeof(double) * (size_t)n);
  fftw_execute(fft_cache.plan);
  for (int32_t k = 0; k <= n / 2; ++k)
    power[k] = fft_cache.out[k][0] * fft_cache.out[k][0] + fft_cache.out[k][1] * fft_cache.out[k][1];
}

void gh_power_spectrum(const double *x, int32_t n, double *power) { fftw_power(x, n, power); }

/* ---------------- the computer ---------------- */

struct gh_feat_computer {
  gh_feat_opts o;
  int32_t size, shift, padded, dim;
  double *window;        /* [size] */
  gh_dmatrix mel;        /* num_bins x (padded/2 + 1) */
  int32_t *mel_first, *mel_last; /* nonzero range of each bin */
  double *dct, *lifter;  /* num_ceps x num_bins, num_ceps */
  double log_energy_floor;
  double *frame, *power, *mel_energies;
  uint64_t rng;
};

gh_feat_computer *gh_feat_computer_new(const gh_feat_opts *o) {
  const gh_frame_opts *f = &o->frame;
  int32_t size = gh_frame_window_size(f), shift = gh_frame_window_shift(f);
  if (size < 2 || shift < 1) {
    gh_set_error("bad frame options: --frame-length=%g ms and --frame-shift=%g ms at --sample-frequency=%g "
                 "give %d and %d samples", (double)f->frame_length_ms, (double)f->frame_shift_ms,
                 (double)f->samp_freq, size, shift);
    return NULL;
  }
  if (o->type == GH_FEAT_MFCC && o->num_ceps > o->mel.num_bins) {
    gh_set_error("--num-ceps (%d) cannot be larger than --num-mel-bins (%d)", o->num_ceps, o->mel.num_bins);
    return NULL;
  }
  if (o->type == GH_FEAT_MFCC && o->num_ceps < 1) {
    gh_set_error("--num-ceps must be positive (got %d)", o->num_ceps);
    return NULL;
  }
  gh_feat_computer *c = gh_calloc(1, sizeof *c);
  c->o = *o;
  c->size = size;
  c->shift = shift;
  c->padded = gh_frame_padded_size(f);
  c->window = gh_malloc((size_t)size * sizeof *c->window);
  if (!gh_window_function(f->window_type, size, f->blackman_coeff, c->window)) {
    gh_set_error("invalid --window-type '%s' (povey, hamming, hanning, rectangular, blackman, sine)", f->window_type);
    gh_feat_computer_free(c);
    return NULL;
  }
  if (!gh_mel_banks(&o->mel, f, &c->mel)) {
    gh_feat_computer_free(c);
    return NULL;
  }
  int32_t nb = o->mel.num_bins;
  c->mel_first = gh_malloc((size_t)nb * sizeof *c->mel_first);
  c->mel_last = gh_malloc((size_t)nb * sizeof *c->mel_last);
  for (int32_t b = 0; b < nb; ++b) {
    const double *row = gh_drow(&c->mel, b);
    int32_t first = -1, last = -1;
    for (int32_t i = 0; i < c->mel.cols; ++i)
      if (row[i] != 0.0) { if (first < 0) first = i; last = i; }
    if (first < 0) first = last = 0; /* all-zero bin (weights 0 at the edges): sums to 0 */
    c->mel_first[b] = first;
    c->mel_last[b] = last;
  }
  if (o->type == GH_FEAT_MFCC) {
    c->dim = o->num_ceps;
    c->dct = gh_malloc((size_t)o->num_ceps * nb * sizeof *c->dct);
    gh_dct_matrix(o->num_ceps, nb, c->dct);
    for (int64_t i = 0; i < (int64_t)o->num_ceps * nb; ++i) c->dct[i] = (float)c->dct[i];
    if (o->cepstral_lifter != 0.0f) {
      c->lifter = gh_malloc((size_t)o->num_ceps * sizeof *c->lifter);
      gh_lifter_coeffs(o->num_ceps, o->cepstral_lifter, c->lifter);
      for (int32_t i = 0; i < o->num_ceps; ++i) c->lifter[i] = (float)c->lifter[i];
    }
  } else {
    c->dim = nb + (o->use_energy ? 1 : 0);
  }
  c->log_energy_floor = o->energy_floor > 0.0f ? log((double)o->energy_floor) : 0.0;
  c->frame = gh_calloc((size_t)c->padded, sizeof *c->frame);
  c->power = gh_calloc((size_t)c->padded / 2 + 1, sizeof *c->power);
  c->mel_energies = gh_calloc((size_t)nb, sizeof *c->mel_energies);
  c->rng = 0x2545F4914F6CDD1DULL;
  return c;
}

int32_t gh_feat_computer_dim(const gh_feat_computer *c) { return c->dim; }

void gh_feat_computer_free(gh_feat_computer *c) {
  if (!c) return;
  free(c->window);
  gh_dmatrix_free(&c->mel);
  free(c->mel_first); free(c->mel_last);
  free(c->dct); free(c->lifter);
  free(c->frame); free(c->power); free(c->mel_energies);
  free(c);
}

/* Uniform in (0, 1] and standard normal (Box-Muller, as Kaldi's RandGauss
 * but with an xorshift64* generator instead of rand_r). */
static double rand_uniform(uint64_t *s) {
  *s ^= *s >> 12; *s ^= *s << 25; *s ^= *s >> 27;
  uint64_t r = *s * 0x2545F4914F6CDD1DULL;
  return ((r >> 11) + 1.0) / 9007199254740992.0;
}
static double rand_gauss(uint64_t *s) {
  double u1 = rand_uniform(s), u2 = rand_uniform(s);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* One frame into out[dim] (ExtractWindow + ProcessWindow + Compute). */
static void compute_frame(gh_feat_computer *c, const float *wave, int64_t n, int64_t t, float *out) {
  const gh_feat_opts *o = &c->o;
  const gh_frame_opts *f = &o->frame;
  double *x = c->frame;
  int64_t start = gh_frame_first_sample(t, f);
  for (int32_t i = 0; i < c->size; ++i) {
    int64_t s = start + i;
    while (s < 0 || s >= n) s = s < 0 ? -s - 1 : 2 * n - 1 - s; /* reflect at the ends */
    x[i] = wave[s];
  }
  for (int32_t i = c->size; i < c->padded; ++i) x[i] = 0.0;
  if (f->dither != 0.0f)
    for (int32_t i = 0; i < c->size; ++i) x[i] += rand_gauss(&c->rng) * f->dither;
  if (f->remove_dc_offset) {
    double mean = 0.0;
    for (int32_t i = 0; i < c->size; ++i) mean += x[i];
    mean /= c->size;
    for (int32_t i = 0; i < c->size; ++i) x[i] -= mean;
  }
  double log_energy = 0.0;
  if (o->use_energy && o->raw_energy) {
    double e = 0.0;
    for (int32_t i = 0; i < c->size; ++i) e += x[i] * x[i];
    log_energy = log(e > FLT_EPSILON ? e : FLT_EPSILON);
  }
  if (f->preemph_coeff != 0.0f) {
    double p = f->preemph_coeff;
    for (int32_t i = c->size - 1; i > 0; --i) x[i] -= p * x[i - 1];
    x[0] -= p * x[0];
  }
  for (int32_t i = 0; i < c->size; ++i) x[i] *= c->window[i];
  if (o->use_energy && !o->raw_energy) {
    double e = 0.0;
    for (int32_t i = 0; i < c->size; ++i) e += x[i] * x[i];
    log_energy = log(e > FLT_EPSILON ? e : FLT_EPSILON);
  }
  if (o->use_energy && o->energy_floor > 0.0f && log_energy < c->log_energy_floor) log_energy = c->log_energy_floor;

  gh_power_spectrum(x, c->padded, c->power);
  if (o->type == GH_FEAT_FBANK && !o->use_power)
    for (int32_t k = 0; k <= c->padded / 2; ++k) c->power[k] = sqrt(c->power[k]);
  int32_t nb = o->mel.num_bins;
  double *me = c->mel_energies;
  for (int32_t b = 0; b < nb; ++b) {
    const double *row = gh_drow(&c->mel, b);
    double s = 0.0;
    for (int32_t i = c->mel_first[b]; i <= c->mel_last[b]; ++i) s += row[i] * c->power[i];
    me[b] = s;
  }

  if (o->type == GH_FEAT_FBANK) {
    int32_t off = o->use_energy && !o->htk_compat ? 1 : 0;
    for (int32_t b = 0; b < nb; ++b) {
      double v = me[b];
      if (o->use_log_fbank) v = log(v > FLT_EPSILON ? v : FLT_EPSILON);
      out[off + b] = (float)v;
    }
    if (o->use_energy) out[o->htk_compat ? nb : 0] = (float)log_energy;
    return;
  }
  for (int32_t b = 0; b < nb; ++b) me[b] = log(me[b] > FLT_EPSILON ? me[b] : FLT_EPSILON);
  int32_t K = o->num_ceps;
  double tmp[K];
  for (int32_t k = 0; k < K; ++k) {
    double s = 0.0;
    const double *d = c->dct + (int64_t)k * nb;
    for (int32_t b = 0; b < nb; ++b) s += d[b] * me[b];
    tmp[k] = c->lifter ? s * c->lifter[k] : s;
  }
  if (o->use_energy) tmp[0] = log_energy;
  if (o->htk_compat) {
    double e = tmp[0];
    for (int32_t k = 0; k < K - 1; ++k) tmp[k] = tmp[k + 1];
    if (!o->use_energy) e *= M_SQRT2;
    tmp[K - 1] = e;
  }
  for (int32_t k = 0; k < K; ++k) out[k] = (float)tmp[k];
}

void gh_feat_compute(gh_feat_computer *c, const float *wave, int64_t n, gh_matrix *out) {
  int64_t rows = gh_frame_num_frames(n, &c->o.frame);
  if (rows <= 0 || n <= 0) {
    gh_matrix_resize(out, 0, 0);
    return;
  }
  gh_matrix_resize(out, (int32_t)rows, c->dim);
  for (int64_t t = 0; t < rows; ++t) compute_frame(c, wave, n, t, gh_row(out, (int32_t)t));
}

/* ---------------- deltas (feature-functions.cc) ---------------- */

int gh_compute_deltas(int32_t order, int32_t window, const gh_matrix *in, gh_matrix *out) {
  if (order < 0 || order >= 1000 || window <= 0 || window >= 1000) {
    gh_set_error("bad delta options: --delta-order=%d --delta-window=%d", order, window);
    return 0;
  }
  /* scales[i]: the FIR filter of order i, length 2 * i * window + 1 (float). */
  float **scales = gh_malloc((size_t)(order + 1) * sizeof *scales);
  int32_t *len = gh_malloc((size_t)(order + 1) * sizeof *len);
  scales[0] = gh_malloc(sizeof(float));
  scales[0][0] = 1.0f;
  len[0] = 1;
  for (int32_t i = 1; i <= order; ++i) {
    int32_t prev_off = (len[i - 1] - 1) / 2, cur_off = prev_off + window;
    len[i] = len[i - 1] + 2 * window;
    scales[i] = gh_calloc((size_t)len[i], sizeof(float));
    float norm = 0.0f;
    for (int32_t j = -window; j <= window; ++j) {
      norm += (float)(j * j);
      for (int32_t k = -prev_off; k <= prev_off; ++k)
        scales[i][j + k + cur_off] += (float)j * scales[i - 1][k + prev_off];
    }
    float alpha = (float)(1.0 / norm);
    for (int32_t k = 0; k < len[i]; ++k) scales[i][k] *= alpha;
  }
  int32_t T = in->rows, D = in->cols;
  gh_matrix_resize(out, T, D * (order + 1));
  for (int32_t t = 0; t < T; ++t) {
    float *o = gh_row(out, t);
    for (int32_t i = 0; i <= order; ++i) {
      int32_t max_off = (len[i] - 1) / 2;
      float *dst = o + (int64_t)i * D;
      for (int32_t j = -max_off; j <= max_off; ++j) {
        int32_t f = t + j;
        if (f < 0) f = 0;
        else if (f >= T) f = T - 1;
        float s = scales[i][j + max_off];
        if (s == 0.0f) continue;
        const float *src = gh_row(in, f);
        for (int32_t d = 0; d < D; ++d) dst[d] += s * src[d];
      }
    }
  }
  for (int32_t i = 0; i <= order; ++i) free(scales[i]);
  free(scales);
  free(len);
  return 1;
}

/* ---------------- CMVN (transform/cmvn.cc) ---------------- */

void gh_cmvn_init(gh_dmatrix *stats, int32_t dim) { gh_dmatrix_resize(stats, 2, dim + 1); }

int gh_cmvn_acc(gh_dmatrix *stats, const gh_matrix *feats) {
  int32_t dim = stats->cols - 1;
  if (stats->rows != 2 || feats->cols != dim) {
    gh_set_error("features of dimension %d, expected %d (the CMVN stats)", feats->cols, dim); /* gh_die_dim's wording */
    return 0;
  }
  double *mean = gh_drow(stats, 0), *var = gh_drow(stats, 1);
  for (int32_t t = 0; t < feats->rows; ++t) {
    const float *x = gh_row(feats, t);
    mean[dim] += 1.0;
    for (int32_t d = 0; d < dim; ++d) {
      mean[d] += x[d];
      var[d] += (float)(x[d] * x[d]); /* Kaldi multiplies in float */
    }
  }
  return 1;
}

int gh_cmvn_apply(const gh_dmatrix *stats, int norm_vars, gh_matrix *feats) {
  int32_t dim = stats->cols - 1;
  if (stats->rows != 2 || dim != feats->cols) {
    gh_set_error("CMVN stats are %d x %d, expected 2 x %d for features of dimension %d", stats->rows,
                 stats->cols, feats->cols + 1, feats->cols);
    return 0;
  }
  const double *s0 = gh_drow(stats, 0), *s1 = gh_drow(stats, 1);
  double count = s0[dim];
  if (count < 1.0) {
    gh_set_error("insufficient stats for cepstral mean and variance normalization: count = %g", count);
    return 0;
  }
  float *offset = gh_malloc((size_t)(dim > 0 ? dim : 1) * sizeof *offset);
  float *scale = gh_malloc((size_t)(dim > 0 ? dim : 1) * sizeof *scale);
  if (!norm_vars) {
    float alpha = (float)(-1.0 / count);
    for (int32_t d = 0; d < dim; ++d) offset[d] = (float)(alpha * s0[d]);
  } else {
    for (int32_t d = 0; d < dim; ++d) {
      double mean = s0[d] / count, var = s1[d] / count - mean * mean;
      if (var < 1.0e-20) {
        gh_warn("flooring cepstral variance of dimension %d from %g to 1e-20", d, var);
        var = 1.0e-20;
      }
      double sc = 1.0 / sqrt(var);
      if (sc != sc || 1 / sc == 0.0) {
        free(offset); free(scale);
        gh_set_error("NaN or infinity in cepstral mean/variance computation");
        return 0;
      }
      offset[d] = (float)(-(mean * sc));
      scale[d] = (float)sc;
    }
  }
  for (int32_t t = 0; t < feats->rows; ++t) {
    float *x = gh_row(feats, t);
    if (norm_vars)
      for (int32_t d = 0; d < dim; ++d) x[d] *= scale[d];
    for (int32_t d = 0; d < dim; ++d) x[d] += offset[d];
  }
  free(offset);
  free(scale);
  return 1;
}

void gh_cmvn_fake_stats_for_dims(gh_dmatrix *stats, const int32_t *dims, int32_t n) {
  int32_t dim = stats->cols - 1;
  double count = gh_drow(stats, 0)[dim];
  for (int32_t i = 0; i < n; ++i) {
    int32_t d = dims[i];
    if (d < 0 || d >= dim) continue;
    gh_drow(stats, 0)[d] = 0.0;
    gh_drow(stats, 1)[d] = count;
  }
}
