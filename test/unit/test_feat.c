/* test_feat.c -- unit tests of lib/feat/feat.c and lib/feat/wav.c: frame geometry,
 * windows, FFT, DCT/lifter, mel banks, deltas and CMVN on hand-computed
 * cases; WAV decoding from memory (16-bit, 8-bit, float, stereo, truncated,
 * empty); and MFCC / fbank / deltas / CMVN against the outputs of real Kaldi
 * in kaldi-fixtures (MFCC and fbank to 1e-4 * max(1, |x|), deltas, CMVN stats
 * and applied CMVN bit for bit). */
#include <stdlib.h>
#include <string.h>

#include "feat/feat.h"
#include "gh-test.h"
#include "io/table.h"
#include "feat/wav.h"

static const char *fixture(const char *rel) {
  static char buf[4][1024];
  static int k = 0;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/data/kaldi-fixtures/%s", gh_test_shared(), rel);
  return buf[k];
}

/* ---- a minimal WAV writer (PCM or float), for the decoder tests ---- */
static void put32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static void put16(unsigned char *p, uint16_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
/* 44-byte header + data; fmt 1 = PCM, 3 = IEEE float.  Returns malloc'd buffer, *n its size. */
static unsigned char *make_wav(int fmt, int channels, int rate, int bits, const void *data, uint32_t nbytes, size_t *n) {
  unsigned char *b = calloc(1, 44 + nbytes);
  memcpy(b, "RIFF", 4); put32(b + 4, 36 + nbytes); memcpy(b + 8, "WAVEfmt ", 8);
  put32(b + 16, 16); put16(b + 20, (uint16_t)fmt); put16(b + 22, (uint16_t)channels); put32(b + 24, (uint32_t)rate);
  put32(b + 28, (uint32_t)(rate * channels * bits / 8)); put16(b + 32, (uint16_t)(channels * bits / 8));
  put16(b + 34, (uint16_t)bits); memcpy(b + 36, "data", 4); put32(b + 40, nbytes);
  memcpy(b + 44, data, nbytes);
  *n = 44 + nbytes;
  return b;
}

static void test_wav(void) {
  int16_t s16[6] = {0, 1, -1, 32767, -32768, 1234};
  size_t n;
  unsigned char *b = make_wav(1, 1, 8000, 16, s16, sizeof s16, &n);
  gh_wave w = {0, 0, 0, NULL};
#ifdef GH_NO_SNDFILE
  GH_TEST_OK(!gh_wave_read_mem(b, n, "x.wav", &w) && strstr(gh_last_error(), "without libsndfile"),
             "built without libsndfile: clear error");
  free(b);
  return;
#endif
  int ok = gh_wave_read_mem(b, n, "x.wav", &w);
  int exact = ok && w.num_channels == 1 && w.num_samples == 6 && w.samp_freq == 8000;
  for (int i = 0; exact && i < 6; i++) exact = w.data[i] == s16[i];
  GH_TEST_OK(exact, "16-bit mono: samples are the int16 values, 8000 Hz");
  free(b);

  int16_t st[6] = {1, -1, 2, -2, 3, -3}; /* L R L R L R */
  b = make_wav(1, 2, 16000, 16, st, sizeof st, &n);
  ok = gh_wave_read_mem(b, n, "s.wav", &w);
  GH_TEST_OK(ok && w.num_channels == 2 && w.num_samples == 3 && w.samp_freq == 16000 && w.data[0] == 1 &&
                 w.data[2] == 3 && w.data[3] == -1 && w.data[5] == -3,
             "16-bit stereo 16 kHz: channel-major rows");
  free(b);

  unsigned char u8[4] = {128, 129, 0, 255};
  b = make_wav(1, 1, 8000, 8, u8, sizeof u8, &n);
  ok = gh_wave_read_mem(b, n, "u8.wav", &w);
  GH_TEST_OK(ok && w.num_samples == 4 && w.data[0] == 0 && w.data[1] == 256 && w.data[2] == -32768 &&
                 w.data[3] == 127 * 256,
             "8-bit PCM: (u - 128) * 256");
  free(b);

  float f32[3] = {0.5f, -1.0f, 1234.0f / 32768.0f};
  b = make_wav(3, 1, 8000, 32, f32, sizeof f32, &n);
  ok = gh_wave_read_mem(b, n, "f.wav", &w);
  GH_TEST_OK(ok && w.num_samples == 3 && w.data[0] == 16384 && w.data[1] == -32768 && w.data[2] == 1234,
             "float WAV: x * 32768");
  free(b);

  b = make_wav(1, 1, 8000, 16, s16, sizeof s16, &n);
  GH_TEST_OK(!gh_wave_read_mem(b, 20, "t.wav", &w) && strstr(gh_last_error(), "header"),
             "truncated header fails: %s", gh_last_error());
  GH_TEST_OK(!gh_wave_read_mem(b, 0, "e.wav", &w) && strstr(gh_last_error(), "empty"), "empty file fails: %s",
             gh_last_error());
  GH_TEST_OK(!gh_wave_read_mem(b, 44, "h.wav", &w), "header without samples fails: %s", gh_last_error());
  ok = gh_wave_read_mem(b, 44 + 7, "d.wav", &w); /* 3.5 samples of 6 */
  GH_TEST_OK(ok && w.num_samples == 3 && w.data[2] == -1, "truncated data: reads what is there (%lld samples)",
             (long long)w.num_samples);
  free(b);
  gh_wave_free(&w);
}

static void test_frames(void) {
  gh_feat_opts o;
  gh_feat_opts_default(&o, GH_FEAT_MFCC);
  o.frame.samp_freq = 8000;
  GH_TEST_OK(gh_frame_window_size(&o.frame) == 200 && gh_frame_window_shift(&o.frame) == 80 &&
                 gh_frame_padded_size(&o.frame) == 256,
             "8 kHz: 200-sample window, 80 shift, 256 FFT");
  GH_TEST_OK(gh_frame_num_frames(1000, &o.frame) == 11 && gh_frame_num_frames(199, &o.frame) == 0 &&
                 gh_frame_num_frames(200, &o.frame) == 1,
             "snip-edges frame count 1 + (n - 200) / 80");
  o.frame.snip_edges = 0;
  GH_TEST_OK(gh_frame_num_frames(1000, &o.frame) == 13 && gh_frame_first_sample(0, &o.frame) == -60 &&
                 gh_frame_first_sample(2, &o.frame) == 100,
             "no snip-edges: (n + 40) / 80 frames, centred");
  o.frame.samp_freq = 16000;
  o.frame.round_to_power_of_two = 0;
  GH_TEST_OK(gh_frame_window_size(&o.frame) == 400 && gh_frame_padded_size(&o.frame) == 400,
             "16 kHz, no rounding: 400");
}

static void test_windows(void) {
  double w[5];
  gh_window_function("hamming", 5, 0.42f, w);
  GH_TEST_NEAR(w[0], 0.08, 1e-7, "hamming ends 0.08");
  GH_TEST_NEAR(w[2], 1.0, 1e-7, "hamming middle 1");
  gh_window_function("hanning", 5, 0.42f, w);
  GH_TEST_NEAR(w[1], 0.5, 1e-7, "hanning quarter 0.5");
  gh_window_function("povey", 5, 0.42f, w);
  GH_TEST_NEAR(w[1], pow(0.5, 0.85), 1e-7, "povey = hanning^0.85");
  gh_window_function("sine", 5, 0.42f, w);
  GH_TEST_NEAR(w[1], sin(M_PI / 4), 1e-7, "sine window");
  gh_window_function("blackman", 5, 0.42f, w);
  GH_TEST_NEAR(w[0], 0.0, 1e-7, "blackman ends 0");
  GH_TEST_NEAR(w[2], 1.0, 1e-7, "blackman middle 1");
  gh_window_function("rectangular", 5, 0.42f, w);
  GH_TEST_OK(w[0] == 1.0 && w[4] == 1.0, "rectangular");
  GH_TEST_OK(!gh_window_function("triangle", 5, 0.42f, w), "unknown window type rejected");
}

static void test_fft_dct(void) {
  int sizes[3] = {256, 200, 8};
  for (int s = 0; s < 3; s++) {
    int n = sizes[s];
    double *x = malloc(n * sizeof *x), *p1 = malloc((n / 2 + 1) * sizeof *p1);
    for (int i = 0; i < n; i++) x[i] = sin(0.3 * i) * 1000 + (i % 7) - 3;
    gh_power_spectrum(x, n, p1);
    double maxerr = 0, maxp = 0;
    for (int k = 0; k <= n / 2; k++) { /* direct DFT in long double */
      long double re = 0, im = 0;
      for (int t = 0; t < n; t++) { re += x[t] * cosl(2 * M_PI * k * t / n); im -= x[t] * sinl(2 * M_PI * k * t / n); }
      double p = (double)(re * re + im * im);
      if (fabs(p - p1[k]) > maxerr) maxerr = fabs(p - p1[k]);
      if (p > maxp) maxp = p;
    }
    GH_TEST_OK(maxerr <= 1e-10 * maxp, "power spectrum n=%d matches a direct DFT (rel err %.2g)", n, maxerr / maxp);
    free(x); free(p1);
  }
  int N = 23;
  double *d = malloc(N * N * sizeof *d);
  gh_dct_matrix(N, N, d);
  double maxerr = 0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < N; k++) s += d[i * N + k] * d[j * N + k];
      maxerr = fmax(maxerr, fabs(s - (i == j)));
    }
  GH_TEST_OK(maxerr < 1e-12, "DCT matrix is orthonormal");
  free(d);
  double l[13];
  gh_lifter_coeffs(13, 22, l);
  GH_TEST_OK(l[0] == 1.0 && fabs(l[11] - (1 + 11 * sin(M_PI / 2))) < 1e-12, "lifter 1 + 11 sin(pi i / 22)");
}

static void test_mel(void) {
  gh_feat_opts o;
  gh_feat_opts_default(&o, GH_FEAT_MFCC);
  o.frame.samp_freq = 8000;
  gh_dmatrix w = {0, 0, NULL};
  GH_TEST_OK(gh_mel_banks(&o.mel, &o.frame, &w) && w.rows == 23 && w.cols == 129, "mel banks 23 x 129");
  int ok = 1;
  for (int b = 0; b < w.rows; b++) {
    double mx = 0;
    for (int i = 0; i < w.cols; i++) { mx = fmax(mx, gh_drow(&w, b)[i]); if (gh_drow(&w, b)[i] < 0) ok = 0; }
    if (mx <= 0.5 || mx > 1.0) ok = 0;
    if (gh_drow(&w, b)[128] != 0.0) ok = 0;
  }
  GH_TEST_OK(ok, "every bin is a triangle with peak in (0.5, 1], Nyquist bin unused");
  GH_TEST_OK(gh_drow(&w, 0)[0] == 0.0 && gh_drow(&w, 0)[1] > 0.0, "first bin starts above --low-freq=20 Hz");
  o.mel.high_freq = 5000;
  GH_TEST_OK(!gh_mel_banks(&o.mel, &o.frame, &w), "--high-freq above Nyquist rejected: %s", gh_last_error());
  o.mel.high_freq = -400;
  GH_TEST_OK(gh_mel_banks(&o.mel, &o.frame, &w), "--high-freq=-400: offset from Nyquist");
  o.mel.high_freq = 0;
  o.mel.num_bins = 200;
  GH_TEST_OK(!gh_mel_banks(&o.mel, &o.frame, &w), "too many mel bins rejected: %s", gh_last_error());
  gh_dmatrix_free(&w);
  o.mel.num_bins = 23;
  o.num_ceps = 24;
  GH_TEST_OK(gh_feat_computer_new(&o) == NULL, "num-ceps > num-mel-bins rejected: %s", gh_last_error());
  o.num_ceps = 13;
  o.frame.window_type = "bogus";
  GH_TEST_OK(gh_feat_computer_new(&o) == NULL, "bad window type rejected: %s", gh_last_error());
}

static void test_deltas(void) {
  gh_matrix in = {0, 0, NULL}, out = {0, 0, NULL};
  gh_matrix_resize(&in, 5, 1);
  float x[5] = {1, 2, 4, 8, 16};
  memcpy(in.data, x, sizeof x);
  GH_TEST_OK(gh_compute_deltas(2, 2, &in, &out) && out.rows == 5 && out.cols == 3, "deltas 5 x 1 -> 5 x 3");
  GH_TEST_OK(gh_row(&out, 2)[0] == 4.0f, "static part copied");
  GH_TEST_NEAR(gh_row(&out, 0)[1], 0.7, 1e-6, "delta at t=0 (clamped): (-2-1+2+8)/10");
  GH_TEST_NEAR(gh_row(&out, 2)[1], 3.6, 1e-6, "delta at t=2: (-2-2+8+32)/10");
  GH_TEST_NEAR(gh_row(&out, 2)[2], 0.73, 1e-6, "delta-delta at t=2 (9-tap filter, clamped)");
  gh_matrix_resize(&in, 20, 2);
  for (int t = 0; t < 20; t++) { gh_row(&in, t)[0] = (float)t; gh_row(&in, t)[1] = 3.0f; }
  gh_compute_deltas(2, 2, &in, &out);
  int ok = 1;
  for (int t = 4; t < 16; t++)
    ok &= fabsf(gh_row(&out, t)[2] - 1.0f) < 1e-6f && fabsf(gh_row(&out, t)[4]) < 1e-6f &&
          gh_row(&out, t)[3] == 0.0f && gh_row(&out, t)[5] == 0.0f;
  GH_TEST_OK(ok, "ramp: delta 1, delta-delta 0 inside; constant: 0");
  GH_TEST_OK(gh_compute_deltas(0, 2, &in, &out) && out.cols == 2 && gh_row(&out, 7)[0] == 7.0f, "order 0 copies");
  GH_TEST_OK(!gh_compute_deltas(2, 0, &in, &out), "window 0 rejected");
  gh_matrix_free(&in);
  gh_matrix_free(&out);
}

static void test_cmvn(void) {
  gh_matrix f = {0, 0, NULL};
  gh_matrix_resize(&f, 2, 2);
  float v[4] = {1, 2, 5, 4};
  memcpy(f.data, v, sizeof v);
  gh_dmatrix st = {0, 0, NULL};
  gh_cmvn_init(&st, 2);
  gh_cmvn_acc(&st, &f);
  GH_TEST_OK(st.rows == 2 && st.cols == 3 && gh_drow(&st, 0)[0] == 6 && gh_drow(&st, 0)[1] == 6 &&
                 gh_drow(&st, 0)[2] == 2 && gh_drow(&st, 1)[0] == 26 && gh_drow(&st, 1)[1] == 20 &&
                 gh_drow(&st, 1)[2] == 0,
             "stats [[6 6 2] [26 20 0]]");
  gh_matrix g = {0, 0, NULL};
  gh_matrix_resize(&g, 2, 2);
  memcpy(g.data, v, sizeof v);
  gh_cmvn_apply(&st, 0, &g);
  GH_TEST_OK(g.data[0] == -2 && g.data[1] == -1 && g.data[2] == 2 && g.data[3] == 1, "mean normalization");
  memcpy(g.data, v, sizeof v);
  gh_cmvn_apply(&st, 1, &g); /* dim 0: mean 3 var 4; dim 1: mean 3 var 1 */
  GH_TEST_OK(g.data[0] == -1 && g.data[1] == -1 && g.data[2] == 1 && g.data[3] == 1, "mean and variance normalization");
  int32_t dims[1] = {1};
  gh_cmvn_fake_stats_for_dims(&st, dims, 1);
  memcpy(g.data, v, sizeof v);
  gh_cmvn_apply(&st, 1, &g);
  GH_TEST_OK(g.data[0] == -1 && g.data[1] == 2 && g.data[3] == 4, "skip-dims leaves dimension 1 alone");
  gh_dmatrix_resize(&st, 2, 3);
  GH_TEST_OK(!gh_cmvn_apply(&st, 0, &g) && strstr(gh_last_error(), "count"), "count 0 rejected: %s", gh_last_error());
  gh_dmatrix_resize(&st, 2, 4);
  GH_TEST_OK(!gh_cmvn_apply(&st, 0, &g), "dimension mismatch rejected: %s", gh_last_error());
  gh_matrix_free(&f);
  gh_matrix_free(&g);
  gh_dmatrix_free(&st);
}

/* ---- against real Kaldi (kaldi-fixtures) ---- */

static int identical(const gh_matrix *a, const gh_matrix *b) {
  return a->rows == b->rows && a->cols == b->cols &&
         (a->rows == 0 || !memcmp(a->data, b->data, (size_t)a->rows * a->cols * sizeof(float)));
}

#ifndef GH_NO_SNDFILE
/* max over entries of |a-b| / max(1, |b|); -1 on shape mismatch. */
static double max_rel(const gh_matrix *a, const gh_matrix *b) {
  if (a->rows != b->rows || a->cols != b->cols) return -1;
  double m = 0;
  for (int64_t i = 0; i < (int64_t)a->rows * a->cols; i++)
    m = fmax(m, fabs((double)a->data[i] - b->data[i]) / fmax(1.0, fabs((double)b->data[i])));
  return m;
}
static void test_kaldi_features(gh_feat_type type, const char *ark, double tol) {
  gh_feat_opts o;
  gh_feat_opts_default(&o, type);
  o.frame.samp_freq = 8000;
  o.frame.dither = 0;
  gh_feat_computer *c = gh_feat_computer_new(&o);
  char spec[1100];
  snprintf(spec, sizeof spec, "ark:%s", fixture(ark));
  gh_rand_reader *ref = gh_rand_reader_open(spec, GH_OBJ_MATRIX);
  FILE *scp = fopen(fixture("wav.scp"), "r");
  char key[256], rel[512];
  gh_matrix feats = {0, 0, NULL};
  gh_wave w = {0, 0, 0, NULL};
  double worst = 0;
  int n = 0, bad = 0;
  while (scp && fscanf(scp, "%255s %511s", key, rel) == 2) {
    if (!gh_wave_read(fixture(rel), &w)) { bad++; continue; }
    gh_feat_compute(c, w.data, w.num_samples, &feats);
    const gh_matrix *r = gh_rand_reader_value(ref, key);
    double e = r ? max_rel(&feats, r) : -1;
    if (e < 0) bad++;
    worst = fmax(worst, e);
    n++;
  }
  if (scp) fclose(scp);
  GH_TEST_OK(n == 6 && !bad && worst <= tol, "%s of 6 utterances match Kaldi's %s: max |a-b|/max(1,|b|) = %.3g (tol %g)",
             type == GH_FEAT_MFCC ? "MFCC" : "fbank", ark, worst, tol);
  gh_rand_reader_close(ref);
  gh_feat_computer_free(c);
  gh_matrix_free(&feats);
  gh_wave_free(&w);
}
#endif

static void test_kaldi_deltas_cmvn(void) {
  char s1[1100], s2[1100], s3[1100], s4[1100];
  snprintf(s1, sizeof s1, "ark:%s", fixture("mfcc.ark"));
  snprintf(s2, sizeof s2, "ark:%s", fixture("mfcc-deltas.ark"));
  snprintf(s3, sizeof s3, "ark:%s", fixture("cmvn.ark"));
  snprintf(s4, sizeof s4, "ark:%s", fixture("mfcc-deltas-cmvn.ark"));
  gh_seq_reader *mf = gh_seq_reader_open(s1, GH_OBJ_MATRIX);
  gh_rand_reader *dr = gh_rand_reader_open(s2, GH_OBJ_MATRIX), *cr = gh_rand_reader_open(s3, GH_OBJ_DMATRIX),
                 *nr = gh_rand_reader_open(s4, GH_OBJ_MATRIX);
  gh_matrix d = {0, 0, NULL};
  gh_dmatrix st = {0, 0, NULL};
  int n = 0, okd = 1, okc = 1, okn = 1;
  for (; !gh_seq_reader_done(mf); gh_seq_reader_next(mf), n++) {
    const char *key = gh_seq_reader_key(mf);
    gh_compute_deltas(2, 2, gh_seq_reader_value(mf), &d);
    const gh_matrix *rd = gh_rand_reader_value(dr, key);
    okd &= rd && identical(&d, rd);
    gh_cmvn_init(&st, d.cols);
    gh_cmvn_acc(&st, rd);
    const gh_dmatrix *rc = gh_rand_reader_value(cr, key);
    okc &= rc && rc->rows == 2 && rc->cols == st.cols && !memcmp(rc->data, st.data, 2 * st.cols * sizeof(double));
    gh_matrix_resize(&d, rd->rows, rd->cols);
    memcpy(d.data, rd->data, (size_t)rd->rows * rd->cols * sizeof(float));
    gh_cmvn_apply(rc, 1, &d);
    const gh_matrix *rn = gh_rand_reader_value(nr, key);
    okn &= rn && identical(&d, rn);
  }
  GH_TEST_OK(n == 6 && okd, "deltas of Kaldi's mfcc.ark are bit-identical to Kaldi's add-deltas");
  GH_TEST_OK(n == 6 && okc, "CMVN stats are bit-identical to Kaldi's compute-cmvn-stats");
  GH_TEST_OK(n == 6 && okn, "apply-cmvn --norm-vars=true output is bit-identical to Kaldi's");
  gh_seq_reader_close(mf);
  gh_rand_reader_close(dr); gh_rand_reader_close(cr); gh_rand_reader_close(nr);
  gh_matrix_free(&d);
  gh_dmatrix_free(&st);
}

int main(void) {
  test_wav();
  test_frames();
  test_windows();
  test_fft_dct();
  test_mel();
  test_deltas();
  test_cmvn();
#ifndef GH_NO_SNDFILE
  test_kaldi_features(GH_FEAT_MFCC, "mfcc.ark", 1e-4);
  test_kaldi_features(GH_FEAT_FBANK, "fbank.ark", 1e-5);
#endif
  test_kaldi_deltas_cmvn();
  return gh_test_done();
}
