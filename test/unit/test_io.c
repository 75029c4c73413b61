/* test_io.c -- unit tests of kaldi-io and table: object round trips in
 * binary and text, exact byte layouts, compressed-matrix decoding against
 * Kaldi's own output, DM reading, random access, the archive scan of the
 * parallel reader, specifier parsing. */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gh-test.h"
#include "io/kaldi-io.h"
#include "io/table.h"
#include "base/strmap.h"

static char tmpdir[] = "/tmp/gh-test-io-XXXXXX";
static char path_buf[512];

static const char *tmp_path(const char *name) {
  snprintf(path_buf, sizeof path_buf, "%s/%s", tmpdir, name);
  return path_buf;
}

static const char *shared_path(const char *rel) {
  static char buf[1024];
  snprintf(buf, sizeof buf, "%s/data/%s", gh_test_shared(), rel);
  return buf;
}

/* Reads a whole file into a malloc'd buffer; *n = size. */
static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) { *n = 0; return NULL; }
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)sz + 1);
  *n = fread(b, 1, (size_t)sz, f);
  fclose(f);
  return b;
}

/* ---- round trips of every table object type, binary and text ---- */
static void test_round_trips(int binary) {
  const char *mode = binary ? "binary" : "text";
  char spec[600];
  snprintf(spec, sizeof spec, "ark,%s:%s", binary ? "b" : "t", tmp_path(binary ? "rt_b.ark" : "rt_t.ark"));
  gh_matrix m = {0, 0, NULL};
  gh_matrix_resize(&m, 3, 2);
  for (int i = 0; i < 6; i++) m.data[i] = 0.5f * i - 1.25f;
  gh_dmatrix dm = {0, 0, NULL};
  gh_dmatrix_resize(&dm, 2, 3);
  for (int i = 0; i < 6; i++) dm.data[i] = 1e6 + i;
  gh_vector v = {0, NULL};
  gh_vector_resize(&v, 4);
  for (int i = 0; i < 4; i++) v.data[i] = -2.5f + i;
  gh_ivector iv = {0, NULL};
  gh_ivector_resize(&iv, 5);
  for (int i = 0; i < 5; i++) iv.data[i] = 100 * i - 7;
  int32_t off[4] = {0, 1, 1, 3}, pdf[3] = {4, 7, 9};
  float w[3] = {1.0f, 0.25f, 0.75f};
  gh_posterior p = {3, off, pdf, w};
  int32_t i32 = -42;
  gh_matrix empty = {0, 0, NULL};

  gh_writer *wr = gh_writer_open(spec);
  gh_writer_write(wr, "m", GH_OBJ_MATRIX, &m);
  gh_writer_write(wr, "empty", GH_OBJ_MATRIX, &empty);
  gh_writer_close(wr);
  /* separate archives per type (a Kaldi table holds one type) */
  const struct { const char *name; gh_objtype t; const void *obj; } items[] = {
      {"dm", GH_OBJ_DMATRIX, &dm}, {"v", GH_OBJ_VECTOR, &v}, {"iv", GH_OBJ_INT32_VECTOR, &iv},
      {"post", GH_OBJ_POSTERIOR, &p}, {"i32", GH_OBJ_INT32, &i32}};
  for (size_t k = 0; k < sizeof items / sizeof items[0]; k++) {
    char s2[600];
    snprintf(s2, sizeof s2, "ark,%s:%s/%s_%s.ark", binary ? "b" : "t", tmpdir, items[k].name, mode);
    gh_writer *w2 = gh_writer_open(s2);
    gh_writer_write(w2, "k1", items[k].t, items[k].obj);
    gh_writer_write(w2, "k2", items[k].t, items[k].obj);
    gh_writer_close(w2);
    gh_seq_reader *r = gh_seq_reader_open(s2, items[k].t);
    int n = 0, same = 1;
    for (; !gh_seq_reader_done(r); gh_seq_reader_next(r), n++) {
      void *o = gh_seq_reader_value(r);
      switch (items[k].t) {
        case GH_OBJ_DMATRIX: {
          gh_dmatrix *x = o;
          same &= x->rows == 2 && x->cols == 3 && !memcmp(x->data, dm.data, 6 * sizeof(double));
          break;
        }
        case GH_OBJ_VECTOR: {
          gh_vector *x = o;
          same &= x->dim == 4 && !memcmp(x->data, v.data, 4 * sizeof(float));
          break;
        }
        case GH_OBJ_INT32_VECTOR: {
          gh_ivector *x = o;
          same &= x->dim == 5 && !memcmp(x->data, iv.data, 5 * sizeof(int32_t));
          break;
        }
        case GH_OBJ_POSTERIOR: {
          gh_posterior *x = o;
          same &= x->num_frames == 3 && !memcmp(x->offsets, off, sizeof off) && !memcmp(x->pdf, pdf, sizeof pdf) &&
                  !memcmp(x->weight, w, sizeof w);
          break;
        }
        case GH_OBJ_INT32: same &= *(int32_t *)o == -42; break;
        default: break;
      }
    }
    gh_seq_reader_close(r);
    GH_TEST_OK(n == 2 && same, "%s round trip of %s", mode, items[k].name);
  }
  gh_seq_reader *r = gh_seq_reader_open(spec, GH_OBJ_MATRIX);
  gh_matrix *x = gh_seq_reader_value(r);
  GH_TEST_OK(!strcmp(gh_seq_reader_key(r), "m") && x->rows == 3 && x->cols == 2 &&
                 !memcmp(x->data, m.data, 6 * sizeof(float)), "%s round trip of a float matrix", mode);
  gh_seq_reader_next(r);
  x = gh_seq_reader_value(r);
  GH_TEST_OK(!gh_seq_reader_done(r) && x->rows == 0 && x->cols == 0 && x->data == NULL,
             "%s round trip of an empty matrix", mode);
  gh_seq_reader_next(r);
  GH_TEST_OK(gh_seq_reader_done(r), "%s archive ends after two entries", mode);
  gh_seq_reader_close(r);
  gh_matrix_free(&m); gh_dmatrix_free(&dm); gh_vector_free(&v); gh_ivector_free(&iv);
}

/* ---- exact byte layouts ---- */
static void test_layouts(void) {
  char spec[600];
  gh_ivector iv = {0, NULL};
  gh_ivector_resize(&iv, 2);
  iv.data[0] = 1; iv.data[1] = 258;
  snprintf(spec, sizeof spec, "ark:%s", tmp_path("ali.ark"));
  gh_writer *w = gh_writer_open(spec);
  gh_writer_write(w, "a", GH_OBJ_INT32_VECTOR, &iv);
  gh_writer_close(w);
  size_t n;
  unsigned char *b = slurp(tmp_path("ali.ark"), &n);
  const unsigned char want[] = {'a', ' ', 0, 'B', 4, 2, 0, 0, 0, 4, 1, 0, 0, 0, 4, 2, 1, 0, 0};
  GH_TEST_OK(n == sizeof want && !memcmp(b, want, n), "binary int32 vector: size byte before each element");
  free(b);

  snprintf(spec, sizeof spec, "ark,t:%s", tmp_path("ali.txt"));
  w = gh_writer_open(spec);
  gh_writer_write(w, "a", GH_OBJ_INT32_VECTOR, &iv);
  int32_t one = 7;
  gh_writer_close(w);
  b = slurp(tmp_path("ali.txt"), &n);
  GH_TEST_OK(n == 9 && !memcmp(b, "a 1 258 \n", 9), "text int32 vector layout 'a 1 258 \\n'");
  free(b);

  int32_t off[3] = {0, 1, 3}, pdf[3] = {3, 4, 5};
  float wt[3] = {1.0f, 0.5f, 0.5f};
  gh_posterior p = {2, off, pdf, wt};
  snprintf(spec, sizeof spec, "ark,t:%s", tmp_path("post.txt"));
  w = gh_writer_open(spec);
  gh_writer_write(w, "u", GH_OBJ_POSTERIOR, &p);
  gh_writer_write(w, "v", GH_OBJ_INT32, &one);
  gh_writer_close(w);
  b = slurp(tmp_path("post.txt"), &n);
  const char *wantp = "u [ 3 1 ] [ 4 0.5 5 0.5 ] \nv 7 \n";
  GH_TEST_OK(n == strlen(wantp) && !memcmp(b, wantp, n), "text posterior layout");
  free(b);

  snprintf(spec, sizeof spec, "ark:%s", tmp_path("post.bin"));
  w = gh_writer_open(spec);
  gh_writer_write(w, "u", GH_OBJ_POSTERIOR, &p);
  gh_writer_close(w);
  b = slurp(tmp_path("post.bin"), &n);
  /* "u " \0B, 0x04 T=2, 0x04 1, 0x04 3, 0x04 1.0f, 0x04 2, ... */
  GH_TEST_OK(n == 4 + 5 + 5 + 10 + 5 + 20, "binary posterior size (%zu bytes)", n);
  GH_TEST_OK(b && b[4] == 4 && b[5] == 2 && b[9] == 4 && b[10] == 1 && b[14] == 4 && b[15] == 3 && b[19] == 4,
             "binary posterior layout: size bytes before T, counts, pdfs and weights");
  free(b);
  gh_ivector_free(&iv);

  /* vector and matrix text layouts */
  gh_vector v = {0, NULL};
  gh_vector_resize(&v, 2);
  v.data[0] = 1.5f; v.data[1] = -2.0f;
  gh_matrix m = {0, 0, NULL};
  gh_matrix_resize(&m, 2, 2);
  m.data[0] = 1; m.data[1] = 2; m.data[2] = 3.14159274f; m.data[3] = 1e-10f;
  gh_ostream *os = gh_ostream_open(tmp_path("objs.txt"));
  gh_write_vector(os, 0, &v);
  gh_write_matrix(os, 0, &m);
  gh_write_packed(os, 0, 2, m.data);
  gh_ostream_close(os);
  b = slurp(tmp_path("objs.txt"), &n);
  const char *wantv = " [ 1.5 -2 ]\n [\n  1 2 \n  3.141593 1e-10 ]\n[\n1 \n2 3.141593 ]\n";
  GH_TEST_OK(b && n == strlen(wantv) && !memcmp(b, wantv, n), "text vector, matrix, packed layouts (Kaldi's)");
  if (b && (n != strlen(wantv) || memcmp(b, wantv, n))) printf("#   got '%.*s'\n", (int)n, b);
  free(b);
  gh_istream *is = gh_istream_open(tmp_path("objs.txt"));
  gh_vector v2 = {0, NULL};
  gh_matrix m2 = {0, 0, NULL};
  int32_t pn;
  float *pd;
  gh_read_vector(is, 0, &v2);
  gh_read_matrix(is, 0, &m2);
  gh_read_packed(is, 0, &pn, &pd);
  GH_TEST_OK(v2.dim == 2 && v2.data[1] == -2.0f && m2.rows == 2 && m2.cols == 2 && m2.data[3] == 1e-10f &&
                 pn == 2 && pd[1] == 2.0f, "text vector, matrix, packed read back");
  gh_istream_close(is);
  free(pd);
  gh_vector_free(&v); gh_vector_free(&v2); gh_matrix_free(&m); gh_matrix_free(&m2);
}

/* Max |a-b| over two archives of float matrices (same keys in order);
 * returns -1 on any structural mismatch. */
static double max_diff(const char *spec_a, const char *spec_b, int *count) {
  gh_seq_reader *a = gh_seq_reader_open(spec_a, GH_OBJ_MATRIX), *b = gh_seq_reader_open(spec_b, GH_OBJ_MATRIX);
  double mx = 0;
  *count = 0;
  for (; !gh_seq_reader_done(a); gh_seq_reader_next(a), gh_seq_reader_next(b), ++*count) {
    if (gh_seq_reader_done(b) || strcmp(gh_seq_reader_key(a), gh_seq_reader_key(b))) { mx = -1; break; }
    gh_matrix *x = gh_seq_reader_value(a), *y = gh_seq_reader_value(b);
    if (x->rows != y->rows || x->cols != y->cols) { mx = -1; break; }
    for (int64_t i = 0; i < (int64_t)x->rows * x->cols; i++) {
      double d = fabs((double)x->data[i] - y->data[i]);
      if (d > mx) mx = d;
    }
  }
  if (mx >= 0 && !gh_seq_reader_done(b)) mx = -1;
  gh_seq_reader_close(a);
  gh_seq_reader_close(b);
  return mx;
}

static void test_compressed(void) {
  char a[1024], b[1024];
  int n;
  snprintf(a, sizeof a, "ark:%s", shared_path("kaldi-ami-feats/feats_compressed.ark"));
  snprintf(b, sizeof b, "ark:%s", shared_path("kaldi-ami-feats/feats.ark"));
  double d = max_diff(a, b, &n);
  GH_TEST_OK(n == 10 && d >= 0 && d <= 1e-4, "CM decode matches feats.ark (max diff %g, %d utts)", d, n);
  GH_TEST_OK(d == 0, "CM decode is bit-exact");
  snprintf(a, sizeof a, "ark:%s", shared_path("kaldi-fixtures/ami-cm2.ark"));
  snprintf(b, sizeof b, "ark:%s", shared_path("kaldi-fixtures/ami-cm2.decoded.ark"));
  d = max_diff(a, b, &n);
  GH_TEST_OK(n == 10 && d == 0, "CM2 decode equals Kaldi's decoding (max diff %g)", d);
  snprintf(a, sizeof a, "ark:%s", shared_path("kaldi-fixtures/ami-cm3.ark"));
  snprintf(b, sizeof b, "ark:%s", shared_path("kaldi-fixtures/ami-cm3.decoded.ark"));
  d = max_diff(a, b, &n);
  GH_TEST_OK(n == 10 && d == 0, "CM3 decode equals Kaldi's decoding (max diff %g)", d);
  snprintf(a, sizeof a, "ark:%s", shared_path("kaldi-ami-feats/feats_ascii.ark"));
  snprintf(b, sizeof b, "ark:head -c 25276 %s |", shared_path("kaldi-ami-feats/feats.ark"));
  d = max_diff(a, b, &n);
  GH_TEST_OK(n == 2 && d >= 0 && d < 1e-4, "text archive matches FM (max diff %g), input pipe", d);
}

static void test_dm(void) {
  char spec[1024];
  snprintf(spec, sizeof spec, "ark:%s", shared_path("kaldi-yesno-mono-model/cmvn_train.ark"));
  gh_seq_reader *r = gh_seq_reader_open(spec, GH_OBJ_DMATRIX);
  gh_dmatrix *m = gh_seq_reader_value(r);
  GH_TEST_OK(!strcmp(gh_seq_reader_key(r), "Speaker1") && m->rows == 2 && m->cols == 14,
             "DM cmvn stats: key Speaker1, 2 x 14");
  GH_TEST_NEAR(m->data[13], 30498, 0, "DM cmvn stats count = 30498 frames");
  gh_seq_reader_close(r);
  r = gh_seq_reader_open(spec, GH_OBJ_MATRIX);
  gh_matrix *f = gh_seq_reader_value(r);
  GH_TEST_OK(f->rows == 2 && f->cols == 14 && f->data[13] == 30498.0f, "DM read as a float matrix");
  gh_seq_reader_close(r);
}

static void test_random_access(void) {
  char spec[1024];
  const char *k_last = "AMI_ES2011a_H00_FEE041_0005856_0006217", *k_first = "AMI_ES2011a_H00_FEE041_0003427_0003714";
  snprintf(spec, sizeof spec, "ark:%s", shared_path("kaldi-ami-feats/feats.ark"));
  gh_rand_reader *r = gh_rand_reader_open(spec, GH_OBJ_MATRIX);
  gh_matrix *a = gh_rand_reader_value(r, k_last), *b = gh_rand_reader_value(r, k_first);
  GH_TEST_OK(a && a->rows == 359 && b && b->rows == 285 && a->rows == 359, "ark random access, out of order");
  GH_TEST_OK(!gh_rand_reader_value(r, "nope") && !gh_rand_reader_has_key(r, "nope"), "ark random access: missing key is NULL");
  gh_rand_reader_close(r);

  /* scp with absolute paths, written by ark,scp */
  char w[2100];
  snprintf(w, sizeof w, "ark,scp:%s/c.ark,%s/c.scp", tmpdir, tmpdir);
  gh_seq_reader *sr = gh_seq_reader_open(spec, GH_OBJ_MATRIX);
  gh_writer *wr = gh_writer_open(w);
  for (; !gh_seq_reader_done(sr); gh_seq_reader_next(sr))
    gh_writer_write(wr, gh_seq_reader_key(sr), GH_OBJ_MATRIX, gh_seq_reader_value(sr));
  gh_writer_close(wr);
  gh_seq_reader_close(sr);
  snprintf(spec, sizeof spec, "scp:%s", tmp_path("c.scp"));
  r = gh_rand_reader_open(spec, GH_OBJ_MATRIX);
  GH_TEST_OK(gh_rand_reader_has_key(r, k_first) && !gh_rand_reader_has_key(r, "nope"), "scp random access: has_key");
  a = gh_rand_reader_value(r, k_last);
  int ok = a && a->rows == 359 && a->cols == 13;
  b = gh_rand_reader_value(r, k_first);
  GH_TEST_OK(ok && b && b->rows == 285 && !gh_rand_reader_value(r, "nope"), "scp random access via offsets");
  gh_rand_reader_close(r);

  /* opened in the background (the trainers' transcripts and labels beside the feature index) */
  snprintf(spec, sizeof spec, "ark:%s", shared_path("kaldi-ami-feats/feats.ark"));
  gh_rand_reader_opening *op = gh_rand_reader_open_bg(spec, GH_OBJ_MATRIX);
  double secs = -1;
  r = gh_rand_reader_open_wait(op, &secs);
  a = gh_rand_reader_value(r, k_last);
  b = gh_rand_reader_value(r, k_first);
  GH_TEST_OK(secs >= 0 && a && a->rows == 359 && b && b->rows == 285 && !gh_rand_reader_has_key(r, "nope"),
             "ark random access opened in the background: every entry there");
  gh_rand_reader_close(r);
}

/* The key index (base/strmap.h): 100,000 keys of one shape (growth from 64
 * slots, hashes kept beside the keys), every one found with its value, absent
 * keys absent, a second put refused. */
static void test_strmap(void) {
  gh_strmap h = {0};
  char k[64];
  int ok = 1;
  for (int i = 0; i < 100000; ++i) {
    snprintf(k, sizeof k, "r%03d-tr_f%02d-d%d-r%d", i / 1000, i % 97, i % 10, i);
    ok &= gh_strmap_put(&h, k, i) == 1;
  }
  for (int i = 0; i < 100000; ++i) {
    snprintf(k, sizeof k, "r%03d-tr_f%02d-d%d-r%d", i / 1000, i % 97, i % 10, i);
    ok &= gh_strmap_get(&h, k) == i && gh_strmap_put(&h, k, -5) == 0;
  }
  ok &= gh_strmap_get(&h, "r000-tr_f00-d0-r1") == -1 && gh_strmap_get(&h, "") == -1 && h.n == 100000;
  GH_TEST_OK(ok, "strmap: 100,000 keys found with their values, absent keys absent, duplicates refused");
  gh_strmap_free(&h);
}

/* Every key and matrix of rspec read as GH_OBJ_MATRIX_VIEW equals (bytes)
 * the GH_OBJ_MATRIX read; returns the number of entries, -1 on a mismatch. */
static int views_match(const char *rspec) {
  gh_seq_reader *a = gh_seq_reader_open(rspec, GH_OBJ_MATRIX), *b = gh_seq_reader_open(rspec, GH_OBJ_MATRIX_VIEW);
  int n = 0;
  for (; !gh_seq_reader_done(a); gh_seq_reader_next(a), gh_seq_reader_next(b), ++n) {
    const gh_matrix *m = gh_seq_reader_value(a);
    const gh_matrix_view *v = gh_seq_reader_value(b);
    if (gh_seq_reader_done(b) || strcmp(gh_seq_reader_key(a), gh_seq_reader_key(b)) || m->rows != v->rows ||
        m->cols != v->cols || (m->data && memcmp(m->data, v->bytes, (size_t)m->rows * m->cols * 4))) n = -1000000;
  }
  if (!gh_seq_reader_done(b)) n = -1000000;
  gh_seq_reader_close(a);
  gh_seq_reader_close(b);
  return n < 0 ? -1 : n;
}

static jmp_buf die_jmp;
static char die_msg[512];
static void die_to_jmp(const char *msg) { snprintf(die_msg, sizeof die_msg, "%s", msg); longjmp(die_jmp, 1); }

/* gh_matrix_view_copy_finite on an unaligned source of n floats, value
 * `bad` at index `at` (at < 0: none): 1 if it copied exactly and did not
 * die, 0 if it died naming row at / cols, col at % cols. */
static int copy_finite_case(int32_t rows, int32_t cols, int64_t at, float bad) {
  size_t n = (size_t)rows * cols;
  unsigned char *raw = malloc(4 * n + 1);
  float *src = malloc(4 * n + 4), *dst = malloc(4 * n + 4);
  for (size_t i = 0; i < n; ++i) src[i] = (float)i - 0.5f * (float)n;
  if (at >= 0) src[at] = bad;
  memcpy(raw + 1, src, 4 * n);
  gh_matrix_view v = {rows, cols, raw + 1};
  int ok;
  gh_set_die_hook(die_to_jmp);
  if (setjmp(die_jmp) == 0) {
    gh_matrix_view_copy_finite(&v, dst, "ark:x", "k");
    ok = memcmp(dst, src, 4 * n) == 0;
  } else {
    char want[128];
    snprintf(want, sizeof want, "at row %lld, col %lld", (long long)(at / cols), (long long)(at % cols));
    ok = strstr(die_msg, want) && strstr(die_msg, "key 'k'") ? 0 : -1;
  }
  gh_set_die_hook(NULL);
  free(raw); free(src); free(dst);
  return ok;
}

/* GH_OBJ_MATRIX_VIEW (gmm-score-gpu's reader) against GH_OBJ_MATRIX over
 * every encoding and source, and its copy with the finite check. */
static void test_matrix_view(void) {
  char spec[1200], feats[1024];
  snprintf(feats, sizeof feats, "%s", shared_path("kaldi-ami-feats/feats.ark"));
  snprintf(spec, sizeof spec, "ark:%s", feats);
  GH_TEST_OK(views_match(spec) == 10, "matrix view = matrix read: FM archive");
  const char *others[] = {"kaldi-ami-feats/feats_compressed.ark", "kaldi-fixtures/ami-cm2.ark",
                          "kaldi-fixtures/ami-cm3.ark", "kaldi-ami-feats/feats_ascii.ark",
                          "kaldi-yesno-mono-model/cmvn_train.ark"};
  for (int i = 0; i < 5; ++i) {
    snprintf(spec, sizeof spec, "ark:%s", shared_path(others[i]));
    GH_TEST_OK(views_match(spec) > 0, "matrix view = matrix read: %s (CM, CM2, CM3, text, DM: decoded)", others[i]);
  }
  snprintf(spec, sizeof spec, "ark:cat %s |", feats);
  GH_TEST_OK(views_match(spec) == 10, "matrix view = matrix read: input pipe");
  /* scp: offsets into an archive, and whole-file entries (the stream closes
   * after each: the view must own a copy) */
  char w[1200];
  snprintf(w, sizeof w, "ark,scp:%s/v.ark,%s/v.scp", tmpdir, tmpdir);
  snprintf(spec, sizeof spec, "ark:%s", feats);
  gh_seq_reader *sr = gh_seq_reader_open(spec, GH_OBJ_MATRIX);
  gh_writer *wr = gh_writer_open(w);
  FILE *whole = fopen(tmp_path("whole.scp"), "w");
  int k = 0;
  for (; !gh_seq_reader_done(sr); gh_seq_reader_next(sr), ++k) {
    gh_writer_write(wr, gh_seq_reader_key(sr), GH_OBJ_MATRIX, gh_seq_reader_value(sr));
    char name[64];
    snprintf(name, sizeof name, "m%d.mat", k);
    gh_ostream *o = gh_ostream_open(tmp_path(name));
    gh_write_binary_marker(o, 1);
    gh_write_matrix(o, 1, gh_seq_reader_value(sr));
    gh_ostream_close(o);
    fprintf(whole, "%s %s\n", gh_seq_reader_key(sr), tmp_path(name));
  }
  fclose(whole);
  gh_writer_close(wr);
  gh_seq_reader_close(sr);
  snprintf(spec, sizeof spec, "scp:%s", tmp_path("v.scp"));
  GH_TEST_OK(views_match(spec) == 10, "matrix view = matrix read: scp with offsets");
  snprintf(spec, sizeof spec, "scp,s,cs:%s", tmp_path("whole.scp"));
  GH_TEST_OK(views_match(spec) == 10, "matrix view = matrix read: scp of whole-file matrices");
  GH_TEST_OK(copy_finite_case(7, 13, -1, 0) == 1 && copy_finite_case(1, 1, -1, 0) == 1 &&
             copy_finite_case(0, 0, -1, 0) == 1, "view copy: exact, unaligned source, 0 to 91 values");
  int ok = 1;
  const int64_t at[] = {0, 5, 16, 47, 90};
  for (int i = 0; i < 5; ++i) {
    ok &= copy_finite_case(7, 13, at[i], NAN) == 0;
    ok &= copy_finite_case(7, 13, at[i], -INFINITY) == 0;
  }
  GH_TEST_OK(ok, "view copy: a NaN or infinity in a block of 16 or in the tail dies naming row and col");
}

/* ---- gh_ark_scan (gmm-score-gpu's parallel reader) against the sequential reader ---- */

/* Writes the matrices rows[i] x cols (values from i, j; NaN at (nan_u,
 * nan_at) when nan_u >= 0) as "ark:path", binary FM. */
static void write_scan_ark(const char *path, const int32_t *rows, int n, int32_t cols, int nan_u, int64_t nan_at) {
  char spec[600];
  snprintf(spec, sizeof spec, "ark:%s", path);
  gh_writer *w = gh_writer_open(spec);
  for (int i = 0; i < n; ++i) {
    gh_matrix m = {rows[i], cols, NULL};
    if ((int64_t)rows[i] * cols > 0) m.data = malloc((size_t)rows[i] * cols * 4);
    for (int64_t j = 0; j < (int64_t)rows[i] * cols; ++j) m.data[j] = (float)(i * 1000 + j % 977) * 0.25f - 3.0f;
    if (i == nan_u) m.data[nan_at] = NAN;
    char key[32];
    snprintf(key, sizeof key, "utt-%03d", i);
    gh_writer_write(w, key, GH_OBJ_MATRIX, &m);
    free(m.data);
  }
  gh_writer_close(w);
}

/* Scans rspec (threads = 0: in this thread, as bench-read --threads=0 does)
 * and compares every entry with the sequential reader's GH_OBJ_MATRIX:
 * returns the number of entries (-1 on a difference); *fast counts the
 * entries that came back with an offset (not decoded). */
static int scan_matches(const char *rspec, int *fast) {
  gh_ark_scan *sc = gh_ark_scan_open(rspec);
  if (!sc) return -2;
  gh_seq_reader *r = gh_seq_reader_open(rspec, GH_OBJ_MATRIX);
  gh_ark_entry e;
  int n = 0;
  *fast = 0;
  for (; gh_ark_scan_next(sc, &e); ++n, gh_seq_reader_next(r)) {
    float *got = NULL;
    if (e.offset >= 0) {
      ++*fast;
      size_t bad, cnt = (size_t)e.rows * e.cols;
      got = malloc(4 * cnt + 4);
      if (gh_pread_floats_finite(gh_ark_scan_fd(sc), e.offset, got, cnt, &bad) != 0) n = -1000000;
    } else {
      const gh_matrix_view *v = gh_ark_scan_decode(sc, &e);
      if (!v) break;
      got = malloc(4 * (size_t)v->rows * v->cols + 4);
      if ((int64_t)v->rows * v->cols > 0) memcpy(got, v->bytes, 4 * (size_t)v->rows * v->cols);
    }
    const gh_matrix *m = gh_seq_reader_value(r);
    if (gh_seq_reader_done(r) || strcmp(e.key, gh_seq_reader_key(r)) || e.rows != m->rows || e.cols != m->cols ||
        (m->data && memcmp(got, m->data, 4 * (size_t)m->rows * m->cols)))
      n = -1000000;
    free(got);
  }
  if (!gh_seq_reader_done(r)) n = -1000000;
  gh_seq_reader_close(r);
  gh_ark_scan_close(sc);
  return n < 0 ? -1 : n;
}

/* Scans rspec to its end (preads included): "" if it ends cleanly, else the die message. */
static const char *scan_error(const char *rspec) {
  static char msg[600];
  gh_ark_scan *volatile sc = gh_ark_scan_open(rspec);
  if (!sc) return "(refused)";
  msg[0] = '\0';
  gh_set_die_hook(die_to_jmp);
  if (setjmp(die_jmp) == 0) {
    gh_ark_entry e;
    while (gh_ark_scan_next(sc, &e)) {
      if (e.offset < 0) { if (!gh_ark_scan_decode(sc, &e)) break; continue; }
      size_t bad, cnt = (size_t)e.rows * e.cols;
      float *buf = malloc(4 * cnt + 4);
      int rc = gh_pread_floats_finite(gh_ark_scan_fd(sc), e.offset, buf, cnt, &bad);
      if (rc > 0) snprintf(msg, sizeof msg, "key %s: not finite at row %lld, col %lld", e.key,
                           (long long)(bad / e.cols), (long long)(bad % e.cols));
      free(buf);
      if (rc) break;
    }
  } else {
    snprintf(msg, sizeof msg, "%s", die_msg);
  }
  gh_set_die_hook(NULL);
  gh_ark_scan_close(sc);
  return msg;
}

static void test_ark_scan(void) {
  char spec[1200], cmd[2600];
  /* 0-row matrices, a 1-row one, one of 70,000 rows (bigger than any batch
   * and than the 256 KB check chunk), odd sizes */
  const int32_t rows[] = {3, 0, 1, 70000, 0, 17, 0, 250};
  const char *a = gh_strdup(tmp_path("scan.ark"));
  write_scan_ark(a, rows, 8, 13, -1, 0);
  snprintf(spec, sizeof spec, "ark,s,cs:%s", a);
  int fast = 0;
  GH_TEST_OK(scan_matches(spec, &fast) == 8 && fast == 8,
             "ark scan = sequential reader: 8 FM matrices (0-row ones, 70,000 x 13), all by offset (%d)", fast);
  snprintf(spec, sizeof spec, "ark:%s", shared_path("kaldi-ami-feats/feats.ark"));
  GH_TEST_OK(scan_matches(spec, &fast) == 10 && fast == 10, "ark scan = sequential reader: Kaldi's AMI archive");
  /* mixed: FM, then Kaldi's CM2 entries, text entries, then FM again: the
   * others are decoded through the sequential reader's code */
  const char *mixed = gh_strdup(tmp_path("mixed.ark"));
  snprintf(cmd, sizeof cmd, "cat %s %s %s %s > %s", a, shared_path("kaldi-fixtures/ami-cm2.ark"), a, a, mixed);
  int ok1 = system(cmd) == 0;
  snprintf(cmd, sizeof cmd, "cat %s >> %s", shared_path("kaldi-ami-feats/feats_ascii.ark"), mixed);
  ok1 &= system(cmd) == 0;
  snprintf(cmd, sizeof cmd, "cat %s >> %s", a, mixed);
  ok1 &= system(cmd) == 0;
  snprintf(spec, sizeof spec, "ark:%s", mixed);
  int n = scan_matches(spec, &fast);
  GH_TEST_OK(ok1 && n > 32 && fast == 32, "ark scan = sequential reader: FM, CM2, text and FM entries mixed (%d, %d by offset)",
             n, fast);
  /* refused: gzip, pipes, stdin, scp, a missing file, a directory */
  snprintf(cmd, sizeof cmd, "gzip -c %s > %s.gz", a, a);
  int ok2 = system(cmd) == 0;
  snprintf(spec, sizeof spec, "ark:%s.gz", a);
  ok2 &= gh_ark_scan_open(spec) == NULL;
  snprintf(spec, sizeof spec, "ark:cat %s |", a);
  ok2 &= gh_ark_scan_open(spec) == NULL && gh_ark_scan_open("ark:-") == NULL && gh_ark_scan_open("ark:/nonexistent") == NULL &&
         gh_ark_scan_open("ark:/tmp") == NULL;
  snprintf(spec, sizeof spec, "scp:%s", a);
  ok2 &= gh_ark_scan_open(spec) == NULL;
  GH_TEST_OK(ok2, "ark scan refuses gzip, pipes, stdin, scp, missing files and directories");
  /* truncated last payload: the header is decoded by the sequential code, which names the key */
  snprintf(cmd, sizeof cmd, "head -c -10 %s > %s", a, tmp_path("trunc.ark"));
  ok2 = system(cmd) == 0;
  snprintf(spec, sizeof spec, "ark:%s", tmp_path("trunc.ark"));
  const char *m = scan_error(spec);
  GH_TEST_OK(ok2 && strstr(m, "key 'utt-007'") && strstr(m, "unexpected end of file") && strstr(m, "FM matrix 250 x 13"),
             "ark scan, truncated last payload: one error naming the key (%s)", m);
  /* cut inside a header, and a garbage header */
  unsigned char *buf;
  size_t len;
  buf = slurp(a, &len);
  FILE *f = fopen(tmp_path("cut.ark"), "wb");
  fwrite(buf, 1, 3 * 4 * 13 + 30, f); /* utt-000 (3 x 13), utt-001's key and part of its header */
  fclose(f);
  snprintf(spec, sizeof spec, "ark:%s", tmp_path("cut.ark"));
  char m1[600];
  snprintf(m1, sizeof m1, "%s", scan_error(spec));
  int ok3 = strstr(m1, "key 'utt-001'") != NULL;
  buf[10] = 'X'; /* utt-000's "FM " -> "XM " */
  f = fopen(tmp_path("bad.ark"), "wb");
  fwrite(buf, 1, len, f);
  fclose(f);
  free(buf);
  snprintf(spec, sizeof spec, "ark:%s", tmp_path("bad.ark"));
  const char *m2 = scan_error(spec);
  GH_TEST_OK(ok3 && strstr(m2, "key 'utt-000'") && strstr(m2, "XM"), "ark scan, a cut or a bad header: the error names the key (%s | %s)",
             m1, m2);
  /* NaN in a payload: named by row and column; past the first 256 KB check chunk too */
  write_scan_ark(tmp_path("nan.ark"), rows, 8, 13, 5, 4 * 13 + 7);
  snprintf(spec, sizeof spec, "ark:%s", tmp_path("nan.ark"));
  snprintf(m1, sizeof m1, "%s", scan_error(spec));
  write_scan_ark(tmp_path("nan2.ark"), rows, 8, 13, 3, 69000LL * 13 + 12);
  snprintf(spec, sizeof spec, "ark:%s", tmp_path("nan2.ark"));
  m2 = scan_error(spec);
  GH_TEST_OK(strstr(m1, "key utt-005: not finite at row 4, col 7") != NULL, "ark scan, NaN in a payload: row and column (%s)", m1);
  GH_TEST_OK(strstr(m2, "key utt-003: not finite at row 69000, col 12") != NULL,
             "ark scan, NaN at row 69,000 of a 70,000-row payload (%s)", m2);
  free((void *)a);
  free((void *)mixed);
}

static void test_specifiers(void) {
  GH_TEST_OK(gh_is_rspecifier("ark:-") && gh_is_rspecifier("scp,s,cs:a.scp") && gh_is_rspecifier("ark,p,o:gunzip -c x.gz |"),
             "valid rspecifiers");
  GH_TEST_OK(!gh_is_rspecifier("foo.ark") && !gh_is_rspecifier("ark,scp:a,b") && !gh_is_rspecifier("ark,zz:x"),
             "invalid rspecifiers");
  GH_TEST_OK(gh_is_wspecifier("ark,t:-") && gh_is_wspecifier("ark,scp,f:a.ark,a.scp") && gh_is_wspecifier("ark:| gzip -c > x"),
             "valid wspecifiers");
  GH_TEST_OK(!gh_is_wspecifier("-") && !gh_is_wspecifier("ark,s:x"), "invalid wspecifiers");
}

/* gh_commit_outputs: with the commit deferred, finished outputs
 * appear only when committed, all together; gh_wait_status_str words. */
static void test_deferred_commit(void) {
  char a[700], b[700];
  snprintf(a, sizeof a, "%s/defer-a.txt", tmpdir);
  snprintf(b, sizeof b, "%s/defer-b.txt", tmpdir);
  gh_set_deferred_commit(1);
  gh_ostream *oa = gh_ostream_open(a), *ob = gh_ostream_open(b);
  fputs("A\n", gh_ostream_fp(oa));
  fputs("B\n", gh_ostream_fp(ob));
  gh_ostream_close(oa);
  GH_TEST_OK(access(a, F_OK) != 0, "deferred commit: a finished output is not on disk before gh_commit_outputs");
  gh_ostream_close(ob);
  GH_TEST_OK(access(a, F_OK) != 0 && access(b, F_OK) != 0, "deferred commit: nor are two");
  gh_commit_outputs();
  FILE *fa = fopen(a, "r"), *fb = fopen(b, "r");
  char la[8] = "", lb[8] = "";
  if (fa) { if (!fgets(la, sizeof la, fa)) la[0] = 0; fclose(fa); }
  if (fb) { if (!fgets(lb, sizeof lb, fb)) lb[0] = 0; fclose(fb); }
  GH_TEST_OK(!strcmp(la, "A\n") && !strcmp(lb, "B\n"), "deferred commit: both on disk, whole, after gh_commit_outputs");
  /* the same file written three times before the commit (a per-iteration dump): the newest is committed, and
   * nothing else is left in the directory */
  for (int k = 1; k <= 3; ++k) {
    gh_ostream *o = gh_ostream_open(a);
    fprintf(gh_ostream_fp(o), "A%d\n", k);
    gh_ostream_close(o);
  }
  gh_commit_outputs();
  fa = fopen(a, "r");
  la[0] = 0;
  if (fa) { if (!fgets(la, sizeof la, fa)) la[0] = 0; fclose(fa); }
  int others = 0;
  DIR *dd = opendir(tmpdir);
  for (struct dirent *de; dd && (de = readdir(dd));)
    if (!strncmp(de->d_name, "defer-a.txt.", 12)) ++others;
  if (dd) closedir(dd);
  GH_TEST_OK(!strcmp(la, "A3\n") && others == 0,
             "deferred commit: a file written 3 times before the commit holds the third version ('%s'), %d other files",
             la, others);
  gh_set_deferred_commit(0);
  char w[256];
  GH_TEST_OK(!strcmp(gh_wait_status_str(3 << 8, w, sizeof w), "exited with status 3"), "wait status 768: '%s'", w);
  GH_TEST_OK(!strncmp(gh_wait_status_str(9, w, sizeof w), "was killed by signal 9", 22), "wait status 9: '%s'", w);
  GH_TEST_OK(strstr(gh_wait_status_str(127 << 8, w, sizeof w), "command not found") != NULL, "wait status 127 << 8: '%s'", w);
}

/* A write that fails part-way (the file size limit, as a full disk: write(2)
 * returns -1) under gh_tmpfile's stdio stream: in a child process, one
 * fwrite larger than the stdio buffer and many small ones, each onto an
 * existing file.  Each must end in one error naming the file and the cause,
 * the old file intact, never a crash (glibc's cookie write must not see -1). */
static void test_write_failure(void) {
  const char *path = tmp_path("full.mdl");
  for (int big = 0; big < 2; ++big) {
    FILE *f = fopen(path, "w");
    fputs("OLD MODEL\n", f);
    fclose(f);
    int fds[2];
    if (pipe(fds) != 0) { GH_TEST_OK(0, "pipe"); return; }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      struct rlimit rl = {256 << 10, 256 << 10};
      signal(SIGXFSZ, SIG_IGN); /* write returns EFBIG instead */
      setrlimit(RLIMIT_FSIZE, &rl);
      static int out;
      out = fds[1];
      gh_set_die_hook(NULL);
      if (setjmp(die_jmp) == 0) {
        gh_set_die_hook(die_to_jmp);
        gh_ostream *o = gh_ostream_open(path);
        /* the data ends where a page without access begins, so that a read past its end (stdio
         * after a cookie write returned -1) crashes here as it would somewhere in a tool */
        size_t n = 1 << 20, pg = (size_t)sysconf(_SC_PAGESIZE);
        char *buf = mmap(NULL, n + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (buf == MAP_FAILED || mprotect(buf + n, pg, PROT_NONE) != 0) _exit(5);
        if (big) fwrite(buf, 1, n, gh_ostream_fp(o));
        else for (size_t i = 0; i < n / 100; ++i) fwrite(buf, 1, 100, gh_ostream_fp(o));
        gh_ostream_close(o);
        _exit(0);
      }
      if (write(out, die_msg, strlen(die_msg)) < 0) _exit(4);
      _exit(3);
    }
    close(fds[1]);
    char msg[512] = "";
    ssize_t m = read(fds[0], msg, sizeof msg - 1);
    msg[m > 0 ? m : 0] = '\0';
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    size_t n;
    unsigned char *old = slurp(path, &n);
    int intact = old && n == 10 && !memcmp(old, "OLD MODEL\n", 10);
    free(old);
    char want[600];
    snprintf(want, sizeof want, "error writing '%s': File too large", path);
    GH_TEST_OK(WIFEXITED(st) && WEXITSTATUS(st) == 3 && strstr(msg, want) && intact,
               "write failure (%s): one error naming the file and the cause, old file intact (status %d%s, '%s')",
               big ? "one 1 MB fwrite" : "100-byte fwrites", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
               WIFSIGNALED(st) ? " signal" : "", msg);
  }
}

/* Runs body(arg, m) in a child process and copies the message it leaves in
 * m (a gh_die caught by die_to_jmp, or "") into msg[n].  A reader abandoned
 * mid-read by the die (as a tool's gh_die abandons it) is not freed: the
 * child leaves with _exit, which skips the leak check. */
static void msg_in_child(void (*body)(const void *arg, char *m), const void *arg, char *msg, size_t n) {
  msg[0] = '\0';
  int p[2];
  if (pipe(p) != 0) { snprintf(msg, n, "pipe failed"); return; }
  fflush(NULL);
  const pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    char m[600] = "";
    gh_set_die_hook(die_to_jmp);
    if (setjmp(die_jmp) == 0) body(arg, m);
    else snprintf(m, sizeof m, "%s", die_msg);
    gh_set_die_hook(NULL);
    const ssize_t w = write(p[1], m, strlen(m));
    (void)w;
    _exit(0);
  }
  close(p[1]);
  size_t got = 0;
  ssize_t k;
  while (got + 1 < n && (k = read(p[0], msg + got, n - 1 - got)) > 0) got += (size_t)k;
  msg[got] = '\0';
  close(p[0]);
  int st;
  waitpid(pid, &st, 0);
}

typedef struct { const char *rspec, *key; gh_objtype t; } table_arg;

static void read_all_body(const void *arg, char *m) {
  const table_arg *a = arg;
  (void)m;
  gh_seq_reader *r = gh_seq_reader_open(a->rspec, a->t);
  for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {}
  gh_seq_reader_close(r);
}

/* The message of reading rspec to its end with a sequential reader of type
 * t (every key; "" if it read to the end without dying) into msg[n]. */
static void read_all_msg(const char *rspec, gh_objtype t, char *msg, size_t n) {
  const table_arg a = {rspec, NULL, t};
  msg_in_child(read_all_body, &a, msg, n);
}

static void rand_body(const void *arg, char *m) {
  const table_arg *a = arg;
  (void)m;
  gh_rand_reader *r = gh_rand_reader_open(a->rspec, GH_OBJ_MATRIX);
  gh_rand_reader_value(r, a->key);
  gh_rand_reader_close(r);
}

/* The message of looking key up in the random-access table rspec ("" if
 * it did not die) into msg[n]. */
static void rand_msg(const char *rspec, const char *key, char *msg, size_t n) {
  const table_arg a = {rspec, key, GH_OBJ_MATRIX};
  msg_in_child(rand_body, &a, msg, n);
}

/* A writer that dies mid-object (a truncated archive, from a file and from a
 * pipe): cut at every byte of the second and third objects (and at every
 * 7th byte of their payloads), the reader must say "unexpected end of file"
 * naming the table and the key, whatever byte it stopped in (key, binary
 * marker, token, size byte, dimension, payload, text number), never report
 * what it read as something else (a text object, a wrong token, a
 * dimension).  Random access (a lookup reading up to the last key) too. */
static void test_truncated(void) {
  gh_matrix m = {0};
  gh_matrix_resize(&m, 4, 6);
  for (int i = 0; i < 24; ++i) m.data[i] = -1.25f * (float)i - 0.5f;
  for (int k = 0; k < 2; ++k) {
    char w[700], path[600];
    snprintf(path, sizeof path, "%s/trunc-full.%s", tmpdir, k ? "txt" : "ark");
    snprintf(w, sizeof w, "ark%s:%s", k ? ",t" : "", path);
    gh_writer *wr = gh_writer_open(w);
    gh_writer_write(wr, "u0", GH_OBJ_MATRIX, &m);
    gh_writer_write(wr, "u1", GH_OBJ_MATRIX, &m);
    gh_writer_write(wr, "u2", GH_OBJ_MATRIX, &m);
    gh_writer_close(wr);
    size_t n;
    unsigned char *full = slurp(path, &n);
    const unsigned char *u1 = memmem(full, n, "u1 ", 3);
    size_t start = u1 ? (size_t)(u1 - full) : n; /* where u1's entry begins */
    int bad = 0, cases = 0;
    char first_bad[800] = "";
    for (size_t cut = start; cut < n - 1; ++cut) {
      if (cut > start + 40 && (cut - start) % 7) continue;
      const char *tp = tmp_path("trunc.ark");
      FILE *f = fopen(tp, "wb");
      fwrite(full, 1, cut, f);
      fclose(f);
      for (int pipe_in = 0; pipe_in < 2; ++pipe_in) {
        char spec[800], msg[600];
        if (pipe_in) snprintf(spec, sizeof spec, "ark:cat %s |", tp);
        else snprintf(spec, sizeof spec, "ark:%s", tp);
        read_all_msg(spec, GH_OBJ_MATRIX, msg, sizeof msg);
        ++cases;
        /* a cut right before u1, or right after a text matrix's ']', leaves whole objects: no error */
        int ok = cut == start || (k && full[cut - 1] == ']') ? !msg[0] :
                 strstr(msg, "unexpected end of file") && strstr(msg, spec) &&
                 (strstr(msg, "key 'u1'") || strstr(msg, "key 'u2'") || strstr(msg, "key 'u'"));
        if (!ok && !bad++) snprintf(first_bad, sizeof first_bad, "cut %zu: '%s'", cut, msg);
      }
    }
    GH_TEST_OK(!bad, "truncated %s archive: %d of %d cuts (file, pipe) not reported as an end of file naming the key%s%s",
               k ? "text" : "binary", bad, cases, bad ? ": " : "", first_bad);
    /* random access: the lookup of u2 reads through the truncated u1 */
    FILE *f = fopen(tmp_path("trunc.ark"), "wb");
    fwrite(full, 1, start + 12, f);
    fclose(f);
    char spec[800], msg[600];
    snprintf(spec, sizeof spec, "ark:%s", tmp_path("trunc.ark"));
    rand_msg(spec, "u2", msg, sizeof msg);
    GH_TEST_OK(strstr(msg, "unexpected end of file") && strstr(msg, "key 'u1'") && (k || strstr(msg, " read")),
               "truncated %s archive, random access: '%s'", k ? "text" : "binary", msg);
    free(full);
  }
  gh_matrix_free(&m);
}

int main(void) {
  gh_init("test_io");
  gh_set_deferred_commit(0); /* the tests read back what they write */
  if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 1; }
  test_round_trips(1);
  test_round_trips(0);
  test_layouts();
  test_compressed();
  test_dm();
  test_random_access();
  test_strmap();
  test_matrix_view();
  test_ark_scan();
  test_specifiers();
  test_deferred_commit();
  test_write_failure();
  test_truncated();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) printf("# could not remove %s\n", tmpdir);
  return gh_test_done();
}
