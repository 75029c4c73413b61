/* fuzz_spec.c -- libFuzzer harness: rspecifier/wspecifier parsing and scp
 * lists (lib/io/table.c).  Input: "<rspecifier>\n<scp text>".  The private
 * directory holds a small valid archive "a.ark" (matrices) and "w.wav"; the
 * scp text is written to "list.scp" and may point anywhere into them with
 * "key file[:offset]" lines.  The rspecifier is used for a sequential
 * reader, a random-access reader (every key of the scp text plus a missing
 * one) and a wav.scp reader; it is also classified as a wspecifier. */
#include "fuzz-common.h"
#include "io/table.h"
#include "feat/wav.h"

static void make_fixtures(void) {
  static int done;
  if (done) return;
  done = 1;
  gh_writer *w = gh_writer_open("ark,scp:a.ark,a.scp");
  for (int k = 0; k < 3; k++) {
    gh_matrix m = {2 + k, 3, NULL};
    m.data = malloc(sizeof(float) * (size_t)m.rows * m.cols);
    for (int i = 0; i < m.rows * m.cols; i++) m.data[i] = (float)(i * 0.5 - k);
    char key[8];
    snprintf(key, sizeof key, "u%d", k);
    gh_writer_write(w, key, GH_OBJ_MATRIX, &m);
    free(m.data);
  }
  gh_writer_close(w);
  /* 16-bit mono PCM WAV of 8 samples. */
  static const uint8_t wav[] = {
    'R','I','F','F', 52,0,0,0, 'W','A','V','E', 'f','m','t',' ', 16,0,0,0, 1,0, 1,0,
    0x40,0x1f,0,0, 0x80,0x3e,0,0, 2,0, 16,0, 'd','a','t','a', 16,0,0,0,
    1,0, 2,0, 3,0, 4,0, 0xff,0xff, 0xfe,0xff, 0,0x80, 0xff,0x7f };
  fz_write_file("w.wav", wav, sizeof wav);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nl = memchr(data, '\n', size);
  if (!nl || nl - data > 200) return 0;
  char spec[256];
  memcpy(spec, data, (size_t)(nl - data));
  spec[nl - data] = '\0';
  if (strlen(spec) != (size_t)(nl - data)) return 0;
  FUZZ_BEGIN();
  make_fixtures();
  fz_write_file("list.scp", nl + 1, size - (size_t)(nl - data) - 1);
  volatile int w = gh_is_wspecifier(spec);
  (void)w;
  if (gh_is_rspecifier(spec)) {
    gh_seq_reader *r = gh_seq_reader_open(spec, GH_OBJ_MATRIX);
    for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {
      gh_matrix *m = gh_seq_reader_value(r);
      if (m->rows < 0 || m->cols < 0) abort();
    }
    gh_seq_reader_close(r);
    gh_rand_reader *rr = gh_rand_reader_open(spec, GH_OBJ_MATRIX);
    gh_rand_reader_value(rr, "u1");
    gh_rand_reader_value(rr, "missing");
    gh_rand_reader_value(rr, "u0");
    gh_rand_reader_close(rr);
    gh_wave_reader *wr = gh_wave_reader_open(spec);
    for (; !gh_wave_reader_done(wr); gh_wave_reader_next(wr)) gh_wave_reader_value(wr);
    gh_wave_reader_close(wr);
  }
  FUZZ_END();
}
