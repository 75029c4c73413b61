/* feat-functions.c -- see feat-functions.h. */
#include "feat/feat-functions.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"

/* ---------------- energy VAD ---------------- */

void gh_vad_opts_default(gh_vad_opts *o) {
  o->energy_threshold = 5.0f;
  o->energy_mean_scale = 0.5f;
  o->frames_context = 0;
  o->proportion_threshold = 0.6f;
}

void gh_vad_opts_register(gh_vad_opts *o, gh_opts *po) {
  gh_opts_float(po, "vad-energy-threshold", &o->energy_threshold,
                "Constant term in energy threshold for MFCC0 for VAD (also see --vad-energy-mean-scale)");
  gh_opts_float(po, "vad-energy-mean-scale", &o->energy_mean_scale,
                "If this is set to s, to get the actual threshold we let m be the mean log-energy of the file, "
                "and use s*m + vad-energy-threshold");
  gh_opts_int(po, "vad-frames-context", &o->frames_context,
              "Number of frames of context on each side of central frame, in window for which energy is monitored");
  gh_opts_float(po, "vad-proportion-threshold", &o->proportion_threshold,
                "Parameter controlling the proportion of frames within the window that need to have more energy "
                "than the threshold");
}

int gh_vad_opts_check(const gh_vad_opts *o) {
  if (!(o->energy_mean_scale >= 0.0f)) {
    gh_set_error("--vad-energy-mean-scale=%g must be >= 0", (double)o->energy_mean_scale);
    return 0;
  }
  if (o->frames_context < 0) {
    gh_set_error("--vad-frames-context=%d must be >= 0", o->frames_context);
    return 0;
  }
  if (!(o->proportion_threshold > 0.0f && o->proportion_threshold < 1.0f)) {
    gh_set_error("--vad-proportion-threshold=%g must be in (0, 1)", (double)o->proportion_threshold);
    return 0;
  }
  return 1;
}

int gh_compute_vad_energy(const gh_vad_opts *o, const gh_matrix *feats, gh_vector *voiced) {
  int32_t T = feats->rows;
  gh_vector_resize(voiced, T);
  if (T == 0) return 1;
  if (feats->cols < 1) {
    gh_set_error("features have no columns (column 0 must be the log energy)");
    return 0;
  }
  if (!gh_vad_opts_check(o)) return 0;
  float threshold = o->energy_threshold;
  if (o->energy_mean_scale != 0.0f) {
    double sum = 0.0;
    for (int32_t t = 0; t < T; ++t) sum += gh_row(feats, t)[0];
    threshold += o->energy_mean_scale * (float)sum / T;
  }
  int32_t ctx = o->frames_context;
  for (int32_t t = 0; t < T; ++t) {
    int32_t num = 0, den = 0;
    for (int32_t t2 = t - ctx; t2 <= t + ctx; ++t2) {
      if (t2 < 0 || t2 >= T) continue;
      den++;
      if (gh_row(feats, t2)[0] > threshold) num++;
    }
    voiced->data[t] = num >= den * o->proportion_threshold ? 1.0f : 0.0f;
  }
  return 1;
}

/* ---------------- sliding-window CMN ---------------- */

void gh_sliding_cmn_opts_default(gh_sliding_cmn_opts *o) {
  o->cmn_window = 600;
  o->min_window = 100;
  o->max_warnings = 5;
  o->norm_vars = 0;
  o->center = 0;
}

void gh_sliding_cmn_opts_register(gh_sliding_cmn_opts *o, gh_opts *po) {
  gh_opts_int(po, "cmn-window", &o->cmn_window, "Window in frames for running average CMN computation");
  gh_opts_int(po, "min-cmn-window", &o->min_window,
              "Minimum CMN window used at start of decoding (adds latency only at start). "
              "Only applicable if center == false, ignored if center==true");
  gh_opts_int(po, "max-warnings", &o->max_warnings,
              "Maximum warnings to report per utterance. 0 to disable, -1 to show all.");
  gh_opts_bool(po, "norm-vars", &o->norm_vars, "If true, normalize variance to one.");
  gh_opts_bool(po, "center", &o->center,
               "If true, use a window centered on the current frame (to the extent possible, modulo end "
               "effects). If false, window is to the left.");
}

int gh_sliding_cmn_opts_check(const gh_sliding_cmn_opts *o) {
  if (o->cmn_window <= 0) {
    gh_set_error("--cmn-window=%d must be > 0", o->cmn_window);
    return 0;
  }
  if (o->center && (o->min_window <= 0 || o->min_window > o->cmn_window)) {
    gh_set_error("--min-cmn-window=%d must be in [1, --cmn-window=%d]", o->min_window, o->cmn_window);
    return 0;
  }
  return 1;
}

int64_t gh_sliding_cmn(const gh_sliding_cmn_opts *o, const gh_matrix *in, gh_matrix *out, const char *key) {
  int32_t T = in->rows, D = in->cols;
  gh_matrix_resize(out, T, D);
  if (T == 0 || D == 0) return 0;
  double *sum = gh_calloc((size_t)D, sizeof(double)), *sumsq = gh_calloc((size_t)D, sizeof(double));
  double *var = gh_malloc((size_t)D * sizeof(double));
  int32_t last_start = -1, last_end = -1;
  int64_t num_floored_frames = 0, warned = 0;
  for (int32_t t = 0; t < T; ++t) {
    int32_t start, end; /* [start, end) */
    if (o->center) {
      start = t - o->cmn_window / 2;
      end = start + o->cmn_window;
    } else {
      start = t - o->cmn_window;
      end = t + 1;
    }
    if (start < 0) {
      end -= start;
      start = 0;
    }
    if (!o->center && end > t) end = t + 1 > o->min_window ? t + 1 : o->min_window;
    if (end > T) {
      start -= end - T;
      end = T;
      if (start < 0) start = 0;
    }
    if (last_start == -1) {
      for (int32_t r = start; r < end; ++r) {
        const float *x = gh_row(in, r);
        for (int32_t d = 0; d < D; ++d) {
          sum[d] += x[d];
          if (o->norm_vars) sumsq[d] += (double)x[d] * x[d];
        }
      }
    } else {
      /* The window moves by at most one frame at each end (Kaldi asserts it). */
      if (start > last_start) {
        const float *x = gh_row(in, last_start);
        for (int32_t d = 0; d < D; ++d) {
          sum[d] -= x[d];
          if (o->norm_vars) sumsq[d] -= (double)x[d] * x[d];
        }
      }
      if (end > last_end) {
        const float *x = gh_row(in, last_end);
        for (int32_t d = 0; d < D; ++d) {
          sum[d] += x[d];
          if (o->norm_vars) sumsq[d] += (double)x[d] * x[d];
        }
      }
    }
    int32_t n = end - start;
    last_start = start;
    last_end = end;
    const float *x = gh_row(in, t);
    float *y = gh_row(out, t);
    /* x - sum / n as Kaldi's AddVec (BLAS daxpy) computes it with an FMA BLAS
     * (OpenBLAS, MKL on AVX2 machines): one rounding; this reproduces the
     * fixture's bytes (test/bats/kaldi-feat.bats). */
    if (!o->norm_vars) {
      for (int32_t d = 0; d < D; ++d) y[d] = (float)fma(-1.0 / n, sum[d], (double)x[d]);
      continue;
    }
    if (n == 1) {
      for (int32_t d = 0; d < D; ++d) y[d] = 0.0f;
      continue;
    }
    int32_t floored = 0;
    for (int32_t d = 0; d < D; ++d) {
      var[d] = sumsq[d] * (1.0 / n) + (-1.0 / ((double)n * n)) * sum[d] * sum[d];
      if (var[d] < 1.0e-10) {
        var[d] = 1.0e-10;
        floored++;
      }
    }
    if (floored > 0) {
      num_floored_frames++;
      if (o->max_warnings < 0 || warned < o->max_warnings) {
        warned++;
        gh_warn("utterance '%s', frame %d: flooring the variance when normalizing it: floored %d elements; "
                "the window had %d frames", key ? key : "?", t, floored, n);
      }
    }
    for (int32_t d = 0; d < D; ++d) y[d] = (float)(fma(-1.0 / n, sum[d], (double)x[d]) * pow(var[d], -0.5));
  }
  free(sum);
  free(sumsq);
  free(var);
  return num_floored_frames;
}

/* ---------------- frame selection ---------------- */

int gh_select_voiced_frames(const gh_matrix *feats, const gh_vector *voiced, gh_matrix *out) {
  if (voiced->dim != feats->rows) {
    gh_set_error("the features have %d frames but the VAD vector has %d", feats->rows, voiced->dim);
    return 0;
  }
  int32_t n = 0;
  for (int32_t t = 0; t < voiced->dim; ++t) {
    float v = voiced->data[t];
    if (v != 0.0f && v != 1.0f) {
      gh_set_error("VAD value %g at frame %d (must be 0 or 1)", (double)v, t);
      return 0;
    }
    n += v != 0.0f;
  }
  gh_matrix_resize(out, n, feats->cols);
  int32_t i = 0;
  for (int32_t t = 0; t < feats->rows; ++t)
    if (voiced->data[t] != 0.0f)
      memcpy(gh_row(out, i++), gh_row(feats, t), (size_t)feats->cols * sizeof(float));
  return 1;
}

int gh_subsample_frames(int32_t n, int32_t offset, const gh_matrix *in, gh_matrix *out) {
  if (n == 0) {
    gh_set_error("--n=0 is not allowed");
    return 0;
  }
  if (offset < 0 || (n < 0 && offset != 0)) {
    gh_set_error("--offset=%d %s", offset, n < 0 ? "cannot be used with a negative --n" : "must be >= 0");
    return 0;
  }
  size_t row_bytes = (size_t)in->cols * sizeof(float);
  if (n > 0) {
    int32_t num = offset < in->rows ? (int32_t)((in->rows - 1 - (int64_t)offset) / n + 1) : 0;
    gh_matrix_resize(out, num, in->cols);
    for (int32_t i = 0; i < num; ++i) memcpy(gh_row(out, i), gh_row(in, offset + (int64_t)i * n), row_bytes);
    return 1;
  }
  int64_t repeat = -(int64_t)n, rows = (int64_t)in->rows * repeat;
  if (rows > INT32_MAX) {
    gh_set_error("repeating %d frames %lld times gives more than 2^31 rows", in->rows, (long long)repeat);
    return 0;
  }
  gh_matrix_resize(out, (int32_t)rows, in->cols);
  for (int64_t i = 0; i < rows; ++i) memcpy(gh_row(out, (int32_t)i), gh_row(in, (int32_t)(i / repeat)), row_bytes);
  return 1;
}

int gh_splice_frames(int32_t left, int32_t right, const gh_matrix *in, gh_matrix *out) {
  int32_t T = in->rows, D = in->cols;
  if (left < 0 || right < 0) {
    gh_set_error("negative context (--left-context=%d, --right-context=%d)", left, right);
    return 0;
  }
  if (T == 0 || D == 0) {
    gh_set_error("empty feature matrix (%d x %d)", T, D);
    return 0;
  }
  int64_t N = 1 + (int64_t)left + right;
  if ((int64_t)D * N > INT32_MAX) {
    gh_set_error("spliced dimension %lld too large", (long long)D * N);
    return 0;
  }
  gh_matrix_resize(out, T, (int32_t)(D * N));
  for (int32_t t = 0; t < T; ++t) {
    float *dst = gh_row(out, t);
    for (int64_t j = 0; j < N; ++j) {
      int64_t t2 = t + j - left;
      if (t2 < 0) t2 = 0;
      if (t2 >= T) t2 = T - 1;
      memcpy(dst + j * D, gh_row(in, (int32_t)t2), (size_t)D * sizeof(float));
    }
  }
  return 1;
}

/* Parses a non-negative decimal integer at *p (advancing it); -1 if none or too large. */
static int64_t parse_index(const char **p) {
  const char *s = *p;
  if (*s < '0' || *s > '9') return -1;
  int64_t v = 0;
  while (*s >= '0' && *s <= '9') {
    v = v * 10 + (*s++ - '0');
    if (v > INT32_MAX) return -1;
  }
  *p = s;
  return v;
}

int gh_parse_column_ranges(const char *spec, int32_t dim, int32_t **cols, int32_t *n) {
  *cols = NULL;
  *n = 0;
  size_t cap = 0;
  const char *p = spec;
  if (!*p) {
    gh_set_error("empty selection");
    return 0;
  }
  for (;;) {
    int64_t s = parse_index(&p), e = s;
    if (s >= 0 && *p == '-') {
      p++;
      e = parse_index(&p);
    }
    if (s < 0 || e < 0 || (*p != ',' && *p != '\0')) {
      gh_set_error("malformed selection '%s' (expected e.g. 0,3-12,24-22)", spec);
      goto fail;
    }
    if (s >= dim || e >= dim) {
      gh_set_error("selection '%s': index %lld is out of range for features of dimension %d", spec,
                   (long long)(s >= dim ? s : e), dim);
      goto fail;
    }
    int64_t step = s <= e ? 1 : -1; /* "24-22" selects 24, 23, 22, as in Kaldi */
    for (int64_t i = s;; i += step) {
      if ((size_t)*n == cap) *cols = gh_realloc(*cols, (cap = cap ? 2 * cap : 16) * sizeof **cols);
      (*cols)[(*n)++] = (int32_t)i;
      if (i == e) break;
    }
    if (*p == '\0') break;
    p++;
  }
  return 1;
fail:
  free(*cols);
  *cols = NULL;
  *n = 0;
  return 0;
}

void gh_select_columns(const gh_matrix *in, const int32_t *cols, int32_t n, gh_matrix *out) {
  gh_matrix_resize(out, in->rows, n);
  for (int32_t t = 0; t < in->rows; ++t) {
    const float *x = gh_row(in, t);
    float *y = gh_row(out, t);
    for (int32_t j = 0; j < n; ++j) y[j] = x[cols[j]];
  }
}

/* ---------------- element-wise functions ---------------- */

void gh_matrix_apply_opts_default(gh_matrix_apply_opts *o) {
  o->scale = 1.0f;
  o->apply_log = 0;
  o->apply_exp = 0;
  o->apply_softmax_per_row = 0;
  o->apply_power = 1.0f;
}

int gh_matrix_apply(const gh_matrix_apply_opts *o, gh_matrix *m) {
  size_t n = (size_t)m->rows * m->cols;
  float *x = m->data;
  if (o->scale != 1.0f)
    for (size_t i = 0; i < n; ++i) x[i] *= o->scale;
  if (o->apply_log)
    for (size_t i = 0; i < n; ++i) x[i] = logf(x[i] < 1.0e-20f ? 1.0e-20f : x[i]);
  if (o->apply_exp)
    for (size_t i = 0; i < n; ++i) x[i] = expf(x[i]);
  if (o->apply_softmax_per_row)
    for (int32_t r = 0; r < m->rows; ++r) {
      float *row = gh_row(m, r), mx = row[0], sum = 0.0f;
      for (int32_t c = 1; c < m->cols; ++c) mx = row[c] > mx ? row[c] : mx;
      for (int32_t c = 0; c < m->cols; ++c) sum += (row[c] = expf(row[c] - mx));
      float inv = (float)(1.0 / sum);
      for (int32_t c = 0; c < m->cols; ++c) row[c] *= inv;
    }
  if (o->apply_power != 1.0f) {
    float p = o->apply_power;
    for (size_t i = 0; i < n; ++i) x[i] = p == 2.0f ? x[i] * x[i] : p == 0.5f ? sqrtf(x[i]) : powf(x[i], p);
  }
  for (size_t i = 0; i < n; ++i)
    if (!gh_isfinite_f(x[i])) {
      gh_set_error("the result is %s at row %lld, col %lld", x[i] != x[i] ? "NaN" : "infinite",
                   (long long)(i / m->cols), (long long)(i % m->cols));
      return 0;
    }
  return 1;
}
