/* compressed-matrix.c -- see compressed-matrix.h.  The arithmetic follows
 * Kaldi's matrix/compressed-matrix.cc step by step (float operations, double
 * rounding constants where Kaldi has double literals), which is what makes
 * the bytes equal; the percentiles are exact order statistics, so the
 * selection method does not matter. */
#include "io/compressed-matrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "io/kaldi-io.h"

/* Kaldi's FloatToUint16 / FloatToUint8: f = (v - min) / range in float,
 * clamped to [0, 1], code = (int)(f * 65535 + 0.499) (the product in float,
 * the sum in double). */
static inline uint16_t float_to_u16(float min, float range, float v) {
  float f = (v - min) / range;
  if (f > 1.0f) f = 1.0f;
  if (f < 0.0f) f = 0.0f;
  return (uint16_t)(int)((double)(f * 65535.0f) + 0.499);
}

static inline uint8_t float_to_u8(float min, float range, float v) {
  float f = (v - min) / range;
  if (f > 1.0f) f = 1.0f;
  if (f < 0.0f) f = 0.0f;
  return (uint8_t)(int)((double)(f * 255.0f) + 0.499);
}

/* Kaldi's Uint16ToFloat: min + range * (1/65535 as float) * v, in float. */
static inline float u16_to_float(float min, float range, uint16_t v) {
  return min + range * 1.52590218966964e-05F * (float)v;
}

/* Kaldi's FloatToChar: the value's position between the column's
 * percentiles, codes 0..64 in [p0, p25), 64..192 in [p25, p75), 192..255 in
 * [p75, p100]. */
static inline uint8_t float_to_char(float p0, float p25, float p75, float p100, float v) {
  int ans;
  if (v < p25) {
    float f = (v - p0) / (p25 - p0);
    ans = (int)((double)(f * 64.0f) + 0.5);
    if (ans < 0) ans = 0;
    if (ans > 64) ans = 64;
  } else if (v < p75) {
    float f = (v - p25) / (p75 - p25);
    ans = 64 + (int)((double)(f * 128.0f) + 0.5);
    if (ans < 64) ans = 64;
    if (ans > 192) ans = 192;
  } else {
    float f = (v - p75) / (p100 - p75);
    ans = 192 + (int)((double)(f * 63.0f) + 0.5);
    if (ans < 192) ans = 192;
    if (ans > 255) ans = 255;
  }
  return (uint8_t)ans;
}

static inline float char_to_float(float p0, float p25, float p75, float p100, uint8_t v) {
  if (v <= 64) return (float)(p0 + (p25 - p0) * v * (1 / 64.0));
  if (v <= 192) return (float)(p25 + (p75 - p25) * (v - 64) * (1 / 128.0));
  return (float)(p75 + (p100 - p75) * (v - 192) * (1 / 63.0));
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* Reorders a[0..n) so that a[k] is the value a sort would put there, with
 * a[i] <= a[k] for i < k and a[i] >= a[k] for i > k (std::nth_element):
 * quickselect with a median-of-three pivot, O(n) on average; after 64
 * rounds (adversarial input) the remaining range is sorted instead. */
static void nth_element(float *a, size_t n, size_t k) {
  size_t lo = 0, hi = n; /* a[k] lies in [lo, hi) */
  for (int round = 0; hi - lo > 16; ++round) {
    if (round == 64) break;
    float x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1];
    float pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
    /* three-way partition: [lo, lt) < pivot, [lt, gt) == pivot, [gt, hi) > pivot */
    size_t lt = lo, i = lo, gt = hi;
    while (i < gt) {
      if (a[i] < pivot) { float t = a[lt]; a[lt++] = a[i]; a[i++] = t; }
      else if (a[i] > pivot) { float t = a[--gt]; a[gt] = a[i]; a[i] = t; }
      else i++;
    }
    if (k < lt) hi = lt;
    else if (k >= gt) lo = gt;
    else return;
  }
  qsort(a + lo, hi - lo, sizeof(float), cmp_float);
}

static inline uint16_t min_u16(uint32_t a, uint32_t b) { return (uint16_t)(a < b ? a : b); }
static inline uint16_t max_u16(uint32_t a, uint32_t b) { return (uint16_t)(a > b ? a : b); }

/* Kaldi's ComputeColHeader on one sorted column of n >= 1 values: the 0th,
 * 25th, 75th and 100th percentiles (sorted[0], sorted[n/4], sorted[3(n/4)],
 * sorted[n-1] for n >= 5; sorted[0..3] for smaller n), each at least one
 * code above the previous one and at most 65532..65534 (uint16 arithmetic
 * as Kaldi's: percentile + 1 wraps at 65535). */
static void col_header(float min, float range, const float *sorted, int32_t n, uint16_t h[4]) {
  if (n >= 5) {
    int32_t q = n / 4;
    h[0] = min_u16(float_to_u16(min, range, sorted[0]), 65532);
    h[1] = min_u16(max_u16(float_to_u16(min, range, sorted[q]), (uint16_t)(h[0] + 1)), 65533);
    h[2] = min_u16(max_u16(float_to_u16(min, range, sorted[3 * q]), (uint16_t)(h[1] + 1)), 65534);
    h[3] = max_u16(float_to_u16(min, range, sorted[n - 1]), (uint16_t)(h[2] + 1));
    return;
  }
  h[0] = min_u16(float_to_u16(min, range, sorted[0]), 65532);
  h[1] = n > 1 ? min_u16(max_u16(float_to_u16(min, range, sorted[1]), (uint32_t)h[0] + 1), 65533)
               : (uint16_t)(h[0] + 1);
  h[2] = n > 2 ? min_u16(max_u16(float_to_u16(min, range, sorted[2]), (uint32_t)h[1] + 1), 65534)
               : (uint16_t)(h[1] + 1);
  h[3] = n > 3 ? max_u16(float_to_u16(min, range, sorted[3]), (uint32_t)h[2] + 1) : (uint16_t)(h[2] + 1);
}

void gh_cmatrix_free(gh_cmatrix *c) {
  free(c->data);
  memset(c, 0, sizeof *c);
}

const char *gh_cmatrix_token(const gh_cmatrix *c) {
  return c->format == 2 ? "CM2" : c->format == 3 ? "CM3" : "CM";
}

int gh_cmatrix_compress(const gh_matrix *m, int method, gh_cmatrix *c) {
  gh_cmatrix_free(c);
  if (method < GH_COMPRESS_AUTO || method > GH_COMPRESS_ONE_BYTE_ZERO_ONE) {
    gh_set_error("invalid compression method %d (1 through 7)", method);
    return 0;
  }
  c->format = 1;
  if (m->rows == 0 || m->cols == 0) return 1; /* Kaldi stores any empty matrix as an empty CM */
  int32_t R = m->rows, C = m->cols;
  size_t n = (size_t)R * C;
  for (size_t i = 0; i < n; ++i)
    if (!gh_isfinite_f(m->data[i])) {
      gh_set_error("cannot compress a matrix with a %s (row %lld, col %lld)", m->data[i] != m->data[i] ? "NaN" : "infinity",
                   (long long)(i / C), (long long)(i % C));
      return 0;
    }
  if (method == GH_COMPRESS_AUTO) method = R > 8 ? GH_COMPRESS_SPEECH_FEATURE : GH_COMPRESS_TWO_BYTE_AUTO;
  switch (method) {
    case GH_COMPRESS_SPEECH_FEATURE: c->format = 1; break;
    case GH_COMPRESS_TWO_BYTE_AUTO: case GH_COMPRESS_TWO_BYTE_SIGNED: c->format = 2; break;
    default: c->format = 3; break;
  }
  c->rows = R;
  c->cols = C;
  if (method == GH_COMPRESS_TWO_BYTE_SIGNED) {
    c->min_value = -32768.0f;
    c->range = 65535.0f;
  } else if (method == GH_COMPRESS_ONE_BYTE_UNSIGNED) {
    c->min_value = 0.0f;
    c->range = 255.0f;
  } else if (method == GH_COMPRESS_ONE_BYTE_ZERO_ONE) {
    c->min_value = 0.0f;
    c->range = 1.0f;
  } else {
    float mn = m->data[0], mx = m->data[0];
    for (size_t i = 1; i < n; ++i) {
      if (m->data[i] < mn) mn = m->data[i];
      if (m->data[i] > mx) mx = m->data[i];
    }
    if (mx == mn) mx = (float)(mn + (1.0 + fabs(mn))); /* a constant matrix */
    c->min_value = mn;
    c->range = mx - mn;
    if (!(c->range > 0.0f) || !gh_isfinite_f(c->range)) {
      gh_set_error("cannot compress a matrix whose range (%g to %g) is not a finite positive float", (double)mn,
                   (double)mx);
      return 0;
    }
  }
  float mn = c->min_value, range = c->range;
  if (c->format == 1) {
    c->nbytes = (size_t)C * 8 + n;
    c->data = gh_malloc(c->nbytes);
    uint8_t *codes = c->data + (size_t)C * 8;
    float *col = gh_malloc((size_t)R * sizeof(float)), *sorted = gh_malloc((size_t)R * sizeof(float));
    for (int32_t j = 0; j < C; ++j) {
      for (int32_t r = 0; r < R; ++r) col[r] = m->data[(size_t)r * C + j];
      memcpy(sorted, col, (size_t)R * sizeof(float));
      if (R >= 5) { /* the four order statistics col_header reads, as Kaldi's nth_element calls */
        size_t q = (size_t)R / 4;
        nth_element(sorted, (size_t)R, q);
        nth_element(sorted, q, 0);
        nth_element(sorted + q + 1, (size_t)R - q - 1, 2 * q - 1);
        nth_element(sorted + 3 * q + 1, (size_t)R - 3 * q - 1, (size_t)R - 3 * q - 2);
      } else {
        qsort(sorted, (size_t)R, sizeof(float), cmp_float);
      }
      uint16_t h[4];
      col_header(mn, range, sorted, R, h);
      memcpy(c->data + (size_t)j * 8, h, 8); /* little-endian hosts only (as the reader) */
      float p0 = u16_to_float(mn, range, h[0]), p25 = u16_to_float(mn, range, h[1]);
      float p75 = u16_to_float(mn, range, h[2]), p100 = u16_to_float(mn, range, h[3]);
      uint8_t *dst = codes + (size_t)j * R;
      for (int32_t r = 0; r < R; ++r) dst[r] = float_to_char(p0, p25, p75, p100, col[r]);
    }
    free(col);
    free(sorted);
  } else if (c->format == 2) {
    c->nbytes = 2 * n;
    c->data = gh_malloc(c->nbytes);
    for (size_t i = 0; i < n; ++i) {
      uint16_t v = float_to_u16(mn, range, m->data[i]);
      memcpy(c->data + 2 * i, &v, 2);
    }
  } else {
    c->nbytes = n;
    c->data = gh_malloc(c->nbytes);
    for (size_t i = 0; i < n; ++i) c->data[i] = float_to_u8(mn, range, m->data[i]);
  }
  return 1;
}

void gh_cmatrix_decompress(const gh_cmatrix *c, gh_matrix *m) {
  int32_t R = c->rows, C = c->cols;
  gh_matrix_resize(m, R, C);
  if (R == 0 || C == 0) return;
  size_t n = (size_t)R * C;
  if (c->format == 1) {
    const uint8_t *codes = c->data + (size_t)C * 8;
    for (int32_t j = 0; j < C; ++j) {
      uint16_t h[4];
      memcpy(h, c->data + (size_t)j * 8, 8);
      float p0 = u16_to_float(c->min_value, c->range, h[0]), p25 = u16_to_float(c->min_value, c->range, h[1]);
      float p75 = u16_to_float(c->min_value, c->range, h[2]), p100 = u16_to_float(c->min_value, c->range, h[3]);
      for (int32_t r = 0; r < R; ++r)
        m->data[(size_t)r * C + j] = char_to_float(p0, p25, p75, p100, codes[(size_t)j * R + r]);
    }
  } else if (c->format == 2) {
    float inc = (float)(c->range * (1.0 / 65535.0));
    for (size_t i = 0; i < n; ++i) {
      uint16_t v;
      memcpy(&v, c->data + 2 * i, 2);
      m->data[i] = c->min_value + v * inc;
    }
  } else {
    float inc = (float)(c->range * (1.0 / 255.0));
    for (size_t i = 0; i < n; ++i) m->data[i] = c->min_value + c->data[i] * inc;
  }
}

void gh_write_cmatrix(gh_ostream *s, int binary, const gh_cmatrix *c) {
  if (!binary) {
    gh_matrix m = {0, 0, NULL};
    gh_cmatrix_decompress(c, &m);
    gh_write_matrix(s, 0, &m);
    gh_matrix_free(&m);
    return;
  }
  FILE *fp = gh_ostream_fp(s);
  gh_write_token(s, 1, gh_cmatrix_token(c));
  struct { float min_value, range; int32_t rows, cols; } h = {c->min_value, c->range, c->rows, c->cols};
  if (c->rows == 0 || c->cols == 0) memset(&h, 0, sizeof h);
  fwrite(&h, sizeof h, 1, fp);
  if (c->rows && c->cols && c->nbytes) fwrite(c->data, 1, c->nbytes, fp);
}
