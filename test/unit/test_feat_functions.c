/* test_feat_functions.c -- unit tests of lib/feat/feat-functions.c (energy
 * VAD, sliding-window CMN, voiced-frame selection, sub-sampling, splicing,
 * column ranges, element-wise functions) and lib/io/compressed-matrix.c
 * (Kaldi's CompressedMatrix encoding) on hand-computed cases.  The tools'
 * comparisons with real Kaldi's outputs are in test/bats/kaldi-feat.bats. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "feat/feat-functions.h"
#include "gh-test.h"
#include "io/compressed-matrix.h"

static gh_matrix mat(int32_t rows, int32_t cols, const float *v) {
  gh_matrix m = {0, 0, NULL};
  gh_matrix_resize(&m, rows, cols);
  if (rows && cols) memcpy(m.data, v, (size_t)rows * cols * sizeof(float));
  return m;
}

static int same(const float *a, const float *b, int n, double tol) {
  for (int i = 0; i < n; i++)
    if (!(fabs((double)a[i] - b[i]) <= tol)) {
      printf("#   element %d: got %.9g expected %.9g\n", i, a[i], b[i]);
      return 0;
    }
  return 1;
}

static void test_vad(void) {
  /* column 0 = log energy; column 1 ignored */
  float x[] = {10, 99, 0, 99, 10, 99, 10, 99, 0, 99};
  gh_matrix f = mat(5, 2, x);
  gh_vector v = {0, NULL};
  gh_vad_opts o;
  gh_vad_opts_default(&o);
  o.energy_mean_scale = 0.0f;
  GH_TEST_OK(gh_compute_vad_energy(&o, &f, &v) && v.dim == 5 && same(v.data, (float[]){1, 0, 1, 1, 0}, 5, 0),
             "vad: threshold 5, no context");
  /* threshold 5 + 0.5 * mean(6) = 8: still 10 > 8 */
  o.energy_mean_scale = 0.5f;
  GH_TEST_OK(gh_compute_vad_energy(&o, &f, &v) && same(v.data, (float[]){1, 0, 1, 1, 0}, 5, 0),
             "vad: threshold 5 + 0.5 * mean");
  o.energy_threshold = 6.0f; /* 6 + 3 = 9 */
  GH_TEST_OK(gh_compute_vad_energy(&o, &f, &v) && same(v.data, (float[]){1, 0, 1, 1, 0}, 5, 0), "vad: threshold 9");
  o.energy_threshold = 7.5f; /* 7.5 + 3 = 10.5: nothing above */
  GH_TEST_OK(gh_compute_vad_energy(&o, &f, &v) && same(v.data, (float[]){0, 0, 0, 0, 0}, 5, 0), "vad: threshold 10.5");
  /* context 1, proportion 0.6: frame t voiced if num >= 0.6 * den over [t-1, t+1] ∩ [0, 4]
   * above = 1 0 1 1 0: t0 {1,0}: 1 >= 1.2 no; t1 {1,0,1}: 2 >= 1.8 yes; t2 {0,1,1} yes; t3 {1,1,0} yes; t4 {1,0} no */
  o.energy_threshold = 5.0f;
  o.energy_mean_scale = 0.0f;
  o.frames_context = 1;
  GH_TEST_OK(gh_compute_vad_energy(&o, &f, &v) && same(v.data, (float[]){0, 1, 1, 1, 0}, 5, 0),
             "vad: --vad-frames-context=1 (frames t-1..t+1 counted, not t three times)");
  o.proportion_threshold = 0.5f; /* t0 and t4: 1 >= 1.0 */
  GH_TEST_OK(gh_compute_vad_energy(&o, &f, &v) && same(v.data, (float[]){1, 1, 1, 1, 1}, 5, 0),
             "vad: --vad-proportion-threshold=0.5");
  o.proportion_threshold = 1.0f;
  GH_TEST_OK(!gh_compute_vad_energy(&o, &f, &v) && strstr(gh_last_error(), "must be in (0, 1)"),
             "vad: proportion 1 is an error");
  gh_matrix e = {0, 0, NULL};
  gh_vad_opts_default(&o);
  GH_TEST_OK(gh_compute_vad_energy(&o, &e, &v) && v.dim == 0, "vad: empty features give an empty vector");
  gh_matrix_free(&f);
  gh_vector_free(&v);
}

static void test_sliding_cmn(void) {
  float x[] = {1, 2, 6};
  gh_matrix in = mat(3, 1, x), out = {0, 0, NULL};
  gh_sliding_cmn_opts o;
  gh_sliding_cmn_opts_default(&o);
  o.center = 1;
  gh_sliding_cmn(&o, &in, &out, "u");
  GH_TEST_OK(same(out.data, (float[]){-2, -1, 3}, 3, 1e-6), "sliding cmn: centred, window longer than the utterance");
  /* left window of 1 frame, min window 1: [0,1) [0,2) [1,3) -> means 1, 1.5, 4 */
  gh_sliding_cmn_opts_default(&o);
  o.cmn_window = 1;
  o.min_window = 1;
  gh_sliding_cmn(&o, &in, &out, "u");
  GH_TEST_OK(same(out.data, (float[]){0, 0.5f, 2}, 3, 1e-6), "sliding cmn: left window 1, min window 1");
  /* min window 3: t0 and t1 use [0,3), t2 its own window [1,3) */
  o.min_window = 3;
  gh_sliding_cmn(&o, &in, &out, "u");
  GH_TEST_OK(same(out.data, (float[]){-2, -1, 2}, 3, 1e-6), "sliding cmn: --min-cmn-window=3");
  /* centred window 2: t0 [-1,1) -> [0,2); t1 [0,2); t2 [1,3) */
  gh_sliding_cmn_opts_default(&o);
  o.center = 1;
  o.cmn_window = 2;
  o.min_window = 1;
  gh_sliding_cmn(&o, &in, &out, "u");
  GH_TEST_OK(same(out.data, (float[]){-0.5f, 0.5f, 2}, 3, 1e-6), "sliding cmn: centred window 2");
  o.norm_vars = 1; /* windows of 2 frames: (x - mean) / (|a - b| / 2) = +-1 */
  int64_t fl = gh_sliding_cmn(&o, &in, &out, "u");
  GH_TEST_OK(fl == 0 && same(out.data, (float[]){-1, 1, 1}, 3, 1e-6), "sliding cmn: --norm-vars");
  o.cmn_window = 1; /* one-frame windows give 0 */
  gh_sliding_cmn(&o, &in, &out, "u");
  GH_TEST_OK(same(out.data, (float[]){0, 0, 0}, 3, 0), "sliding cmn: --norm-vars with one-frame windows");
  o.cmn_window = 0;
  GH_TEST_OK(!gh_sliding_cmn_opts_check(&o), "sliding cmn: --cmn-window=0 is an error");
  o.cmn_window = 5;
  o.min_window = 6;
  GH_TEST_OK(!gh_sliding_cmn_opts_check(&o), "sliding cmn: centred with --min-cmn-window > --cmn-window is an error");
  gh_matrix_free(&in);
  gh_matrix_free(&out);
}

static void test_selection(void) {
  float x[] = {0, 10, 1, 11, 2, 12, 3, 13, 4, 14};
  gh_matrix in = mat(5, 2, x), out = {0, 0, NULL};
  gh_vector vad = {0, NULL};
  gh_vector_resize(&vad, 5);
  float v[] = {1, 0, 0, 1, 1};
  memcpy(vad.data, v, sizeof v);
  GH_TEST_OK(gh_select_voiced_frames(&in, &vad, &out) && out.rows == 3 &&
                 same(out.data, (float[]){0, 10, 3, 13, 4, 14}, 6, 0), "select voiced frames");
  vad.data[1] = 0.5f;
  GH_TEST_OK(!gh_select_voiced_frames(&in, &vad, &out) && strstr(gh_last_error(), "VAD value 0.5 at frame 1"),
             "select voiced frames: 0.5 is an error");
  gh_vector_resize(&vad, 4);
  GH_TEST_OK(!gh_select_voiced_frames(&in, &vad, &out), "select voiced frames: length mismatch is an error");

  GH_TEST_OK(gh_subsample_frames(2, 1, &in, &out) && out.rows == 2 && same(out.data, (float[]){1, 11, 3, 13}, 4, 0),
             "subsample --n=2 --offset=1");
  GH_TEST_OK(gh_subsample_frames(3, 0, &in, &out) && out.rows == 2 && same(out.data, (float[]){0, 10, 3, 13}, 4, 0),
             "subsample --n=3");
  GH_TEST_OK(gh_subsample_frames(1, 5, &in, &out) && out.rows == 0, "subsample: offset past the end gives no rows");
  GH_TEST_OK(gh_subsample_frames(-2, 0, &in, &out) && out.rows == 10 &&
                 same(out.data, (float[]){0, 10, 0, 10, 1, 11, 1, 11, 2, 12}, 10, 0), "subsample --n=-2 repeats");
  GH_TEST_OK(!gh_subsample_frames(0, 0, &in, &out) && !gh_subsample_frames(-2, 1, &in, &out) &&
                 !gh_subsample_frames(2, -1, &in, &out), "subsample: n = 0, offset with negative n, negative offset");

  GH_TEST_OK(gh_splice_frames(1, 1, &in, &out) && out.rows == 5 && out.cols == 6 &&
                 same(out.data, (float[]){0, 10, 0, 10, 1, 11, 0, 10, 1, 11, 2, 12}, 12, 0) &&
                 same(gh_row(&out, 4), (float[]){3, 13, 4, 14, 4, 14}, 6, 0), "splice -1..+1, ends repeated");
  gh_matrix empty = {0, 0, NULL};
  GH_TEST_OK(!gh_splice_frames(1, 1, &empty, &out) && !gh_splice_frames(-1, 0, &in, &out),
             "splice: empty input, negative context");

  int32_t *cols = NULL, n = 0;
  GH_TEST_OK(gh_parse_column_ranges("0,3-5,9-7,2", 10, &cols, &n) && n == 8 &&
                 !memcmp(cols, (int32_t[]){0, 3, 4, 5, 9, 8, 7, 2}, 8 * sizeof(int32_t)),
             "column ranges 0,3-5,9-7,2");
  free(cols);
  const char *bad[] = {"", "1,", ",1", "a", "5-", "-1", "1--2", "3 ", "10", "2-10"};
  int all_bad = 1;
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    if (gh_parse_column_ranges(bad[i], 10, &cols, &n)) {
      printf("#   '%s' was accepted\n", bad[i]);
      all_bad = 0;
    }
    free(cols);
  }
  GH_TEST_OK(all_bad, "column ranges: malformed and out-of-range lists are errors");
  gh_parse_column_ranges("1,0", 2, &cols, &n);
  gh_select_columns(&in, cols, n, &out);
  GH_TEST_OK(out.cols == 2 && same(out.data, (float[]){10, 0, 11, 1}, 4, 0), "select columns 1,0");
  free(cols);

  gh_matrix_apply_opts ao;
  gh_matrix_apply_opts_default(&ao);
  float y[] = {1, 2, 3, 0};
  gh_matrix m = mat(2, 2, y);
  ao.apply_softmax_per_row = 1;
  GH_TEST_OK(gh_matrix_apply(&ao, &m) &&
                 same(m.data, (float[]){1 / (1 + expf(1)), expf(1) / (1 + expf(1)), expf(3) / (1 + expf(3)),
                                        1 / (1 + expf(3))}, 4, 1e-7), "softmax per row");
  gh_matrix_apply_opts_default(&ao);
  ao.scale = -1;
  ao.apply_power = 0.5f;
  GH_TEST_OK(!gh_matrix_apply(&ao, &m) && strstr(gh_last_error(), "NaN at row 0, col 0"), "sqrt of a negative: error");
  gh_matrix_free(&m);
  gh_matrix_free(&in);
  gh_matrix_free(&out);
  gh_vector_free(&vad);
}

static uint16_t u16_at(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static void test_compressed(void) {
  float x[] = {0, 1, 0.5f, 0.25f};
  gh_matrix m = mat(2, 2, x), d = {0, 0, NULL};
  gh_cmatrix c = {0};
  /* one byte: code (int)(f * 255 + 0.499): 0, 255, 127 (127.999), 64 (64.249) */
  GH_TEST_OK(gh_cmatrix_compress(&m, GH_COMPRESS_ONE_BYTE_AUTO, &c) && c.format == 3 && c.min_value == 0 &&
                 c.range == 1 && c.nbytes == 4 && !memcmp(c.data, (uint8_t[]){0, 255, 127, 64}, 4),
             "CM3 codes of a 2x2 matrix");
  gh_cmatrix_decompress(&c, &d);
  GH_TEST_OK(same(d.data, (float[]){0, 1, 127 / 255.0f, 64 / 255.0f}, 4, 1e-7), "CM3 decoding");
  /* two bytes: 0.5 * 65535 = 32767.5 -> 32767; 0.25 -> 16384 */
  GH_TEST_OK(gh_cmatrix_compress(&m, GH_COMPRESS_AUTO, &c) && c.format == 2 && c.nbytes == 8 &&
                 u16_at(c.data) == 0 && u16_at(c.data + 2) == 65535 && u16_at(c.data + 4) == 32767 &&
                 u16_at(c.data + 6) == 16384, "method 1 on 2 rows is CM2; its codes");
  GH_TEST_OK(gh_cmatrix_compress(&m, GH_COMPRESS_TWO_BYTE_SIGNED, &c) && c.min_value == -32768 && c.range == 65535 &&
                 u16_at(c.data) == 32768 && u16_at(c.data + 2) == 32769, "CM2 signed-integer range");
  gh_cmatrix_free(&c);
  gh_matrix_free(&m);

  /* CM with a column at the global maximum: percentiles clamped to 65532..65535 */
  float y[12];
  for (int r = 0; r < 6; r++) { y[2 * r] = (float)r; y[2 * r + 1] = 5; }
  m = mat(6, 2, y);
  GH_TEST_OK(gh_cmatrix_compress(&m, GH_COMPRESS_SPEECH_FEATURE, &c) && c.format == 1 && c.nbytes == 2 * 8 + 12 &&
                 u16_at(c.data + 8) == 65532 && u16_at(c.data + 10) == 65533 && u16_at(c.data + 12) == 65534 &&
                 u16_at(c.data + 14) == 65535, "CM: percentiles of a column at the maximum are 65532..65535");
  /* column 0 = 0..5, n/4 = 1: percentiles sorted[0] = 0, sorted[1] = 1, sorted[3] = 3, sorted[5] = 5 */
  GH_TEST_OK(u16_at(c.data) == 0 && u16_at(c.data + 2) == 13107 && u16_at(c.data + 4) == 39321 &&
                 u16_at(c.data + 6) == 65535, "CM: column percentiles (order statistics)");
  gh_cmatrix_decompress(&c, &d);
  GH_TEST_OK(same(d.data, y, 12, 2.0 / 63 / 2 + 1e-5), "CM: decoding within the code resolution (half a step of 2/63 in [p75, p100])");
  gh_matrix_free(&m);

  /* fewer than 5 rows: sorted values, each percentile at least one above the last */
  float z[] = {2, 2};
  m = mat(2, 1, z);
  GH_TEST_OK(gh_cmatrix_compress(&m, GH_COMPRESS_SPEECH_FEATURE, &c) && c.min_value == 2 && c.range == 3 &&
                 u16_at(c.data) == 0 && u16_at(c.data + 2) == 1 && u16_at(c.data + 4) == 2 && u16_at(c.data + 6) == 3,
             "CM: a constant 2-row column (range 1 + |min|, percentiles 0 1 2 3)");
  gh_matrix_free(&m);

  gh_matrix e = {0, 0, NULL};
  GH_TEST_OK(gh_cmatrix_compress(&e, GH_COMPRESS_AUTO, &c) && c.rows == 0 && c.format == 1, "empty matrix");
  float bad[] = {1, NAN};
  m = mat(1, 2, bad);
  GH_TEST_OK(!gh_cmatrix_compress(&m, GH_COMPRESS_AUTO, &c) && strstr(gh_last_error(), "NaN (row 0, col 1)"),
             "a NaN cannot be compressed");
  GH_TEST_OK(!gh_cmatrix_compress(&m, 8, &c), "method 8 is an error");
  gh_matrix_free(&m);

  /* random matrices: decoding error within each format's resolution */
  srand(7);
  float r[40 * 3];
  for (int i = 0; i < 120; i++) r[i] = (float)(rand() % 20001 - 10000) / 100.0f;
  m = mat(40, 3, r);
  double worst[4] = {0};
  for (int method = 2; method <= 5; method += 1) {
    if (method == 4) continue;
    gh_cmatrix_compress(&m, method, &c);
    gh_cmatrix_decompress(&c, &d);
    for (int i = 0; i < 120; i++) worst[c.format] = fmax(worst[c.format], fabs(d.data[i] - r[i]));
  }
  GH_TEST_OK(worst[2] <= 200.0 / 65535 && worst[3] <= 200.0 / 255 * 0.51 && worst[1] <= 200.0 / 64 * 0.6,
             "random 40x3: errors CM %.3g, CM2 %.3g, CM3 %.3g within resolution", worst[1], worst[2], worst[3]);
  gh_matrix_free(&m);
  gh_matrix_free(&d);
  gh_cmatrix_free(&c);
}

static int cmpf(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* CM column percentiles against a full sort, on columns long enough for the
 * selection (not the small-column sort) and with many ties. */
static void test_compressed_percentiles(void) {
  srand(11);
  int bad = 0;
  for (int trial = 0; trial < 20 && !bad; trial++) {
    int R = 17 + rand() % 300, C = 3;
    float *x = malloc(sizeof(float) * R * C), *col = malloc(sizeof(float) * R);
    for (int i = 0; i < R * C; i++) x[i] = (float)(rand() % (trial % 2 ? 7 : 2000)) * 0.5f;
    gh_matrix m = mat(R, C, x);
    gh_cmatrix c = {0};
    gh_cmatrix_compress(&m, GH_COMPRESS_SPEECH_FEATURE, &c);
    for (int j = 0; j < C; j++) {
      for (int r = 0; r < R; r++) col[r] = x[r * C + j];
      qsort(col, R, sizeof(float), cmpf);
      int q = R / 4;
      float v[4] = {col[0], col[q], col[3 * q], col[R - 1]};
      unsigned want[4];
      for (int k = 0; k < 4; k++) {
        float f = (v[k] - c.min_value) / c.range;
        want[k] = (unsigned)(int)((double)(f * 65535.0f) + 0.499);
      }
      /* the clamps: p0 <= 65532, each at least one above the previous */
      want[0] = want[0] < 65532 ? want[0] : 65532;
      for (int k = 1; k < 4; k++) {
        if (want[k] < want[k - 1] + 1) want[k] = want[k - 1] + 1;
        if (k < 3 && want[k] > 65532u + k) want[k] = 65532u + k;
      }
      for (int k = 0; k < 4; k++)
        if (u16_at(c.data + 8 * j + 2 * k) != want[k]) {
          printf("#   trial %d R=%d col %d percentile %d: %u, want %u\n", trial, R, j, k,
                 u16_at(c.data + 8 * j + 2 * k), want[k]);
          bad = 1;
        }
    }
    gh_cmatrix_free(&c);
    gh_matrix_free(&m);
    free(x);
    free(col);
  }
  GH_TEST_OK(!bad, "CM percentiles by selection equal those of a full sort (20 random matrices, ties)");
}

int main(void) {
  test_vad();
  test_sliding_cmn();
  test_selection();
  test_compressed();
  test_compressed_percentiles();
  return gh_test_done();
}
