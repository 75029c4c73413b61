/* fuzz_archive.c -- libFuzzer harness: Kaldi archives through the table
 * readers (lib/io/table.c, lib/io/kaldi-io.c), every object type, sequential and
 * random access, and a write-back round trip.
 * Input: byte 0 picks the object type (low 3 bits) and the mode (bits 3-4):
 *   0 sequential read, then write every entry back (binary) and read the
 *     written archive again: it must hold the same keys, and writing it once
 *     more must give the same bytes (binary encoding is exact);
 *   1 the same with a text archive written back (keys only compared);
 *   2 random access: has_key / value for the keys in reverse order, a
 *     missing key, and a repeated lookup;
 *   3 ark,scp write-back, then the scp read sequentially and randomly: the
 *     values must encode to the same bytes as the sequential read's.
 * Matrices (type 0) are also read as GH_OBJ_MATRIX_VIEW (gmm-score-gpu's
 * reader) in modes 0 and 3: the same keys and bytes as the matrix read; and
 * in mode 0 through gh_ark_scan (its parallel reader): the same keys, dims
 * and bytes, and gh_pread_floats_finite's verdict equal to a scalar check's;
 * in mode 3 the written scp also through gh_scp_index (gh_data_load's
 * indexed reader), checked the same way.
 * Rest: the archive bytes. */
#include "fuzz-common.h"
#include "io/table.h"

static char **keys;
static int nkeys, capkeys;

static void add_key(const char *k) {
  if (nkeys == capkeys) keys = gh_realloc(keys, (size_t)(capkeys = capkeys ? 2 * capkeys : 16) * sizeof *keys);
  keys[nkeys++] = gh_strdup(k);
}

static void free_keys(void) {
  for (int i = 0; i < nkeys; i++) free(keys[i]);
  free(keys);
  keys = NULL;
  nkeys = capkeys = 0;
}

/* Copies archive `in` (sequentially) to wspecifier `out`, recording keys. */
static void copy_table(const char *in, const char *out, gh_objtype t, int record) {
  gh_seq_reader *r = gh_seq_reader_open(in, t);
  gh_writer *w = gh_writer_open(out);
  for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {
    if (record) add_key(gh_seq_reader_key(r));
    gh_writer_write(w, gh_seq_reader_key(r), t, gh_seq_reader_value(r));
  }
  gh_writer_close(w);
  gh_seq_reader_close(r);
}

/* Reads `in` as GH_OBJ_MATRIX and as GH_OBJ_MATRIX_VIEW side by side (the
 * matrix read has succeeded before): aborts unless keys, dims and bytes agree. */
static void check_views(const char *in) {
  gh_seq_reader *a = gh_seq_reader_open(in, GH_OBJ_MATRIX), *b = gh_seq_reader_open(in, GH_OBJ_MATRIX_VIEW);
  for (; !gh_seq_reader_done(a); gh_seq_reader_next(a), gh_seq_reader_next(b)) {
    const gh_matrix *m = gh_seq_reader_value(a);
    const gh_matrix_view *v = gh_seq_reader_value(b);
    if (gh_seq_reader_done(b) || strcmp(gh_seq_reader_key(a), gh_seq_reader_key(b)) || m->rows != v->rows ||
        m->cols != v->cols || (m->data && memcmp(m->data, v->bytes, (size_t)m->rows * m->cols * 4)))
      abort();
  }
  if (!gh_seq_reader_done(b)) abort();
  gh_seq_reader_close(a);
  gh_seq_reader_close(b);
}

/* gh_ark_scan over `in` against the matrix read (which has succeeded before). */
static void check_scan(const char *in) {
  gh_ark_scan *sc = gh_ark_scan_open(in);
  if (!sc) return; /* gzip magic: the sequential reader only */
  gh_seq_reader *a = gh_seq_reader_open(in, GH_OBJ_MATRIX);
  gh_ark_entry e;
  for (; gh_ark_scan_next(sc, &e); gh_seq_reader_next(a)) {
    const gh_matrix_view *v = NULL;
    if (e.offset < 0 && !(v = gh_ark_scan_decode(sc, &e))) break;
    const gh_matrix *m = gh_seq_reader_value(a);
    if (gh_seq_reader_done(a) || strcmp(e.key, gh_seq_reader_key(a)) || e.rows != m->rows || e.cols != m->cols) abort();
    size_t n = (size_t)e.rows * e.cols, bad = 0, first = n;
    if (v) {
      if (n && memcmp(v->bytes, m->data, 4 * n)) abort();
      continue;
    }
    float *buf = gh_malloc(4 * n + 4);
    int rc = gh_pread_floats_finite(gh_ark_scan_fd(sc), e.offset, buf, n, &bad);
    for (size_t i = 0; i < n && first == n; ++i)
      if (!gh_isfinite_f(m->data[i])) first = i;
    if (rc < 0 || (rc == 1) != (first < n) || (rc == 1 && bad != first) || (rc == 0 && n && memcmp(buf, m->data, 4 * n)))
      abort();
    free(buf);
  }
  if (!gh_seq_reader_done(a)) abort();
  gh_seq_reader_close(a);
  gh_ark_scan_close(sc);
}

/* gh_scp_index over scp `in` against its sequential matrix read (which has
 * succeeded before): the same keys, dims and bytes, and
 * gh_pread_floats_finite's verdict equal to a scalar check's. */
static void check_scp_index(const char *in) {
  gh_scp_index *x = gh_scp_index_open(in);
  if (!x) return; /* some entry is not a plain FM matrix: the sequential reader only */
  gh_seq_reader *a = gh_seq_reader_open(in, GH_OBJ_MATRIX);
  int64_t i = 0;
  for (; !gh_seq_reader_done(a); gh_seq_reader_next(a), ++i) {
    const gh_matrix *m = gh_seq_reader_value(a);
    if (i >= x->n) abort();
    const gh_scp_entry *e = &x->e[i];
    if (strcmp(e->key, gh_seq_reader_key(a)) || e->rows != m->rows || e->cols != m->cols) abort();
    size_t n = (size_t)e->rows * e->cols, bad = 0, first = n;
    float *buf = gh_malloc(4 * n + 4);
    int rc = gh_pread_floats_finite(e->fd, e->offset, buf, n, &bad);
    for (size_t j = 0; j < n && first == n; ++j)
      if (!gh_isfinite_f(m->data[j])) first = j;
    if (rc < 0 || (rc == 1) != (first < n) || (rc == 1 && bad != first) || (rc == 0 && n && memcmp(buf, m->data, 4 * n)))
      abort();
    free(buf);
  }
  if (i != x->n) abort();
  gh_seq_reader_close(a);
  gh_scp_index_free(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  gh_objtype t = (gh_objtype)(data[0] & 7);
  int mode = (data[0] >> 3) & 3;
  FUZZ_BEGIN_WITH((keys = NULL, nkeys = capkeys = 0));
  fz_write_file("in.ark", data + 1, size - 1);
  if (mode == 0 || mode == 1) {
    copy_table("ark:in.ark", mode == 0 ? "ark:out1.ark" : "ark,t:out1.ark", t, 1);
    /* Token vectors are text-only: the binary write-back is text too. */
    int n1 = nkeys;
    copy_table("ark:out1.ark", "ark:out2.ark", t, 1);
    if (nkeys != 2 * n1) abort();
    if (t == GH_OBJ_MATRIX) check_views("ark:in.ark");
    if (t == GH_OBJ_MATRIX && mode == 0) check_scan("ark:in.ark");
    for (int i = 0; i < n1; i++) if (strcmp(keys[i], keys[n1 + i])) abort();
    if (mode == 0) {
      size_t a, b;
      uint8_t *x = fz_slurp("out1.ark", &a), *y = fz_slurp("out2.ark", &b);
      if (a != b || memcmp(x, y, a)) abort();
      free(x); free(y);
    }
  } else if (mode == 2) {
    gh_seq_reader *r = gh_seq_reader_open("ark:in.ark", t);
    for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) add_key(gh_seq_reader_key(r));
    gh_seq_reader_close(r);
    gh_rand_reader *rr = gh_rand_reader_open("ark:in.ark", t);
    for (int i = nkeys - 1; i >= 0; i--) {
      if (!gh_rand_reader_has_key(rr, keys[i])) abort();
      if (!gh_rand_reader_value(rr, keys[i])) abort();
    }
    /* a key the archive does not have (libFuzzer once put exactly this key
     * into the archive: then it must be found) */
    const char *absent = "no-such-key-\x01";
    int has_absent = 0;
    for (int i = 0; i < nkeys; i++) has_absent |= !strcmp(keys[i], absent);
    if ((gh_rand_reader_value(rr, absent) != NULL) != has_absent) abort();
    if (nkeys && !gh_rand_reader_value(rr, keys[0])) abort();
    gh_rand_reader_close(rr);
  } else {
    copy_table("ark:in.ark", "ark,scp:out1.ark,out1.scp", t, 1);
    copy_table("scp:out1.scp", "ark:out2.ark", t, 0);
    if (t == GH_OBJ_MATRIX) check_views("scp:out1.scp");
    if (t == GH_OBJ_MATRIX) check_scp_index("scp:out1.scp");
    size_t a, b;
    uint8_t *x = fz_slurp("out1.ark", &a), *y = fz_slurp("out2.ark", &b);
    if (a != b || memcmp(x, y, a)) abort();
    free(x); free(y);
    gh_rand_reader *rr = gh_rand_reader_open("scp:out1.scp", t);
    gh_writer *w = gh_writer_open("ark:out3.ark");
    for (int i = 0; i < nkeys; i++) {
      void *v = gh_rand_reader_value(rr, keys[i]);
      if (!v) abort();
      gh_writer_write(w, keys[i], t, v);
    }
    gh_writer_close(w);
    gh_rand_reader_close(rr);
  }
  free_keys();
  FUZZ_END();
}
