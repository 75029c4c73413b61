/* feat-functions.h -- per-utterance feature transforms of Kaldi's featbin and
 * ivectorbin tools: energy voice-activity detection (ivector/voice-activity-
 * detection.cc), sliding-window cepstral mean (and variance) normalization
 * (feat/feature-functions.cc SlidingWindowCmn), frame selection by a VAD
 * vector (ivectorbin/select-voiced-frames.cc), frame sub-sampling
 * (featbin/subsample-feats.cc), frame splicing (feature-functions.cc
 * SpliceFrames) and column selection (featbin/select-feats.cc).
 *
 * Features are float matrices, one row per frame (T x D).  Functions that
 * can fail on their inputs return 0 and leave a one-line message in
 * gh_last_error(); the caller adds the file and key.
 */
#ifndef GH_FEAT_FUNCTIONS_H
#define GH_FEAT_FUNCTIONS_H
#include <stdint.h>
#include "base/matrix.h"
#include "base/opts.h"

/* ---------------- energy VAD ----------------
 * Kaldi's VadEnergyOptions, with Kaldi's defaults. */
typedef struct {
  float energy_threshold;     /* --vad-energy-threshold (5.0): constant term of the threshold on column 0 */
  float energy_mean_scale;    /* --vad-energy-mean-scale (0.5): threshold += scale * mean of column 0 */
  int32_t frames_context;     /* --vad-frames-context (0): frames of context on each side */
  float proportion_threshold; /* --vad-proportion-threshold (0.6): in (0, 1) */
} gh_vad_opts;
void gh_vad_opts_default(gh_vad_opts *o);
void gh_vad_opts_register(gh_vad_opts *o, gh_opts *po);
/* 0 (gh_last_error set) unless mean_scale >= 0, frames_context >= 0 and
 * 0 < proportion_threshold < 1 (Kaldi asserts the same). */
int gh_vad_opts_check(const gh_vad_opts *o);

/* ComputeVadEnergy: voiced[t] = 1.0 if at least proportion_threshold of the
 * frames t2 in [t - context, t + context] (inside the utterance) have
 * feats[t2][0] (the log energy, natural log) > threshold, else 0.0, where
 * threshold = energy_threshold + energy_mean_scale * mean_t feats[t][0]
 * (the mean summed in double, the threshold in float as Kaldi).  Column 0
 * must be a log energy (MFCC with --use-energy=true, or C0).  voiced is
 * resized to T; T == 0 gives an empty vector.  feats->cols must be >= 1
 * when T > 0 (returns 0 otherwise).  Kaldi before 2015 compared frame t
 * instead of t2 inside the window; the two agree for --vad-frames-context=0
 * (the default and what the sid recipes use). */
int gh_compute_vad_energy(const gh_vad_opts *o, const gh_matrix *feats, gh_vector *voiced);

/* ---------------- sliding-window CMN ----------------
 * Kaldi's SlidingWindowCmnOptions, with Kaldi's defaults. */
typedef struct {
  int32_t cmn_window;   /* --cmn-window (600): window in frames */
  int32_t min_window;   /* --min-cmn-window (100): minimum window at the start (center=false only) */
  int32_t max_warnings; /* --max-warnings (5): variance-floor warnings per utterance; 0 none, -1 all */
  int norm_vars;        /* --norm-vars (false): also normalize the variance to one */
  int center;           /* --center (false): window centred on the frame; else the frames before it */
} gh_sliding_cmn_opts;
void gh_sliding_cmn_opts_default(gh_sliding_cmn_opts *o);
void gh_sliding_cmn_opts_register(gh_sliding_cmn_opts *o, gh_opts *po);
/* 0 (gh_last_error set) unless cmn_window > 0 and, with center,
 * 0 < min_window <= cmn_window (Kaldi's SlidingWindowCmnOptions::Check). */
int gh_sliding_cmn_opts_check(const gh_sliding_cmn_opts *o);

/* SlidingWindowCmn: out[t] = in[t] - mean of in over the window of frame t
 * (computed in double with running sums, as Kaldi).  Window of frame t,
 * [start, end): center: start = t - cmn_window/2, end = start + cmn_window;
 * else start = t - cmn_window, end = t + 1, and end is raised to
 * max(t + 1, min_window) when the window was shifted; a window starting
 * before 0 is shifted right, one ending past T shifted left (then clipped
 * at 0).  With norm_vars, out[t] is also divided by the window's standard
 * deviation (variance floored at 1e-10, a warning naming key per floored
 * frame, at most max_warnings per utterance; a one-frame window gives 0).
 * out is resized to in's shape.  Returns the number of frames whose
 * variance was floored. */
int64_t gh_sliding_cmn(const gh_sliding_cmn_opts *o, const gh_matrix *in, gh_matrix *out, const char *key);

/* ---------------- frame selection ---------------- */

/* select-voiced-frames: out = the rows t of feats with voiced[t] != 0, in
 * order.  Returns 0 (gh_last_error set) if voiced->dim != feats->rows or a
 * value is neither 0 nor 1 (Kaldi asserts). */
int gh_select_voiced_frames(const gh_matrix *feats, const gh_vector *voiced, gh_matrix *out);

/* subsample-feats: n > 0: rows offset, offset + n, ... (< T); n < 0: every
 * row repeated -n times (offset must be 0).  n == 0 or offset < 0 is an
 * error (returns 0); an empty result is not (out has 0 rows). */
int gh_subsample_frames(int32_t n, int32_t offset, const gh_matrix *in, gh_matrix *out);

/* SpliceFrames: out[t] = [in[t - left], ..., in[t + right]] (indices clamped
 * to [0, T-1]); out is T x D*(1 + left + right).  Returns 0 on negative
 * contexts or an empty input. */
int gh_splice_frames(int32_t left, int32_t right, const gh_matrix *in, gh_matrix *out);

/* select-feats column lists: "0-4,9,12-13" (0-based, ranges inclusive) into
 * a malloc'd array *cols of *n indices, each checked < dim.  Returns 0 on a
 * malformed list or an index out of range. */
int gh_parse_column_ranges(const char *spec, int32_t dim, int32_t **cols, int32_t *n);
/* out[t][j] = in[t][cols[j]]. */
void gh_select_columns(const gh_matrix *in, const int32_t *cols, int32_t n, gh_matrix *out);

/* ---------------- element-wise functions (copy-matrix) ----------------
 * Applied in Kaldi's order: scale, log (after flooring at 1e-20), exp,
 * softmax of each row, power. */
typedef struct {
  float scale;               /* --scale (1) */
  int apply_log;             /* --apply-log (false): natural log */
  int apply_exp;             /* --apply-exp (false) */
  int apply_softmax_per_row; /* --apply-softmax-per-row (false): exp(x - max) / sum, per row */
  float apply_power;         /* --apply-power (1) */
} gh_matrix_apply_opts;
void gh_matrix_apply_opts_default(gh_matrix_apply_opts *o);
/* Applies the options to m in place (float arithmetic, as Kaldi).  Returns
 * 0 (gh_last_error naming row and column) if a result is a NaN or an
 * infinity (e.g. a negative number to a fractional power, exp overflow),
 * which Kaldi would write out or assert on. */
int gh_matrix_apply(const gh_matrix_apply_opts *o, gh_matrix *m);

#endif
