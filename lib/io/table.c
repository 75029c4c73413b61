/* table.c -- Kaldi Table readers and writers over kaldi-io streams.
 * Specifier grammar and byte layouts: doc/format.md. */
#include "io/table.h"
#include "base/strmap.h"
#include "io/compressed-matrix.h"
#include "io/fst.h"
#include <omp.h>
#include <pthread.h>

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ======================= specifiers ======================= */

typedef struct {
  int ark, scp;           /* table kind (both for "ark,scp" writers) */
  int binary;             /* writers: -1 unspecified, 0 text, 1 binary */
  int flush, permissive, sorted, called_sorted, once;
  const char *rest;       /* text after the first ':' (points into the spec) */
} spec_t;

/* Parses "opt,opt,...:rest".  for_write selects the allowed option set.
 * Returns 1 if spec is a valid r/wspecifier, else 0 (no side effects). */
static int parse_spec(const char *spec, int for_write, spec_t *o) {
  memset(o, 0, sizeof *o);
  o->binary = -1;
  const char *colon = strchr(spec, ':');
  if (!colon) return 0;
  char opts[64];
  size_t n = (size_t)(colon - spec);
  if (n == 0 || n >= sizeof opts) return 0;
  memcpy(opts, spec, n);
  opts[n] = '\0';
  char *save = NULL;
  for (char *w = strtok_r(opts, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    while (isspace((unsigned char)*w)) w++;
    if (!strcmp(w, "ark")) o->ark = 1;
    else if (!strcmp(w, "scp")) o->scp = 1;
    else if (!strcmp(w, "b")) o->binary = 1;
    else if (!strcmp(w, "t")) o->binary = 0;
    else if (!strcmp(w, "p")) o->permissive = 1;
    else if (for_write && !strcmp(w, "f")) o->flush = 1;
    else if (for_write && !strcmp(w, "nf")) o->flush = 0;
    else if (!for_write && !strcmp(w, "s")) o->sorted = 1;
    else if (!for_write && !strcmp(w, "cs")) o->called_sorted = 1;
    else if (!for_write && !strcmp(w, "o")) o->once = 1;
    else if (!for_write && (!strcmp(w, "ns") || !strcmp(w, "ncs") || !strcmp(w, "no") ||
                            !strcmp(w, "np") || !strcmp(w, "bg"))) { /* defaults / ignored */ }
    else return 0;
  }
  if (!o->ark && !o->scp) return 0;
  if (!for_write && o->ark && o->scp) return 0;
  o->rest = colon + 1;
  while (isspace((unsigned char)*o->rest)) o->rest++;
  return 1;
}

/* A hint for a specifier that failed to parse (" (did you mean scp:feats.scp?)"
 * for a bare .scp/.ark name, else what a specifier looks like) or for a
 * parsed one whose file name suggests the other table type (ark:x.scp,
 * scp:x.ark); "" if none.  Written to buf (size n). */
static const char *spec_hint(const char *spec, const spec_t *sp, int for_write, char *buf, size_t n) {
  const char *name = sp ? sp->rest : spec;
  size_t len = name ? strlen(name) : 0;
  int is_scp = len > 4 && !strcmp(name + len - 4, ".scp"), is_ark = len > 4 && !strcmp(name + len - 4, ".ark");
  buf[0] = '\0';
  if (!sp) {
    if (!strchr(spec, ':') && (is_scp || is_ark))
      snprintf(buf, n, " (did you mean %s:%s?)", is_scp && !for_write ? "scp" : "ark", spec);
    else
      snprintf(buf, n, " (%s starts with ark: or scp:, e.g. %s)", for_write ? "a wspecifier" : "an rspecifier",
               for_write ? "ark:out.ark or ark,scp:out.ark,out.scp" : "scp:feats.scp or ark:feats.ark");
  } else if (!for_write && sp->ark && is_scp) {
    snprintf(buf, n, " (a .scp file read as an archive: did you mean scp:%s?)", name);
  } else if (!for_write && sp->scp && is_ark) {
    snprintf(buf, n, " (an archive read as an scp list: did you mean ark:%s?)", name);
  }
  return buf;
}

int gh_is_rspecifier(const char *s) { spec_t o; return parse_spec(s, 0, &o); }
int gh_is_wspecifier(const char *s) { spec_t o; return parse_spec(s, 1, &o); }

/* ======================= objects: one dispatch per type ======================= */

typedef union {
  gh_matrix m;
  gh_dmatrix dm;
  gh_vector v;
  gh_dvector dv;
  gh_ivector iv;
  gh_posterior p;
  gh_ivecvec vv;
  int32_t i;
  float f;
  char *str;
  struct { gh_matrix_view v; gh_matrix own; } mv; /* own: decoded, when not FM */
  gh_fst fst;
} gh_obj;

static void obj_free(gh_objtype t, gh_obj *o) {
  switch (t) {
    case GH_OBJ_MATRIX: gh_matrix_free(&o->m); break;
    case GH_OBJ_DMATRIX: gh_dmatrix_free(&o->dm); break;
    case GH_OBJ_VECTOR: gh_vector_free(&o->v); break;
    case GH_OBJ_DVECTOR: gh_dvector_free(&o->dv); break;
    case GH_OBJ_INT32_VECTOR: gh_ivector_free(&o->iv); break;
    case GH_OBJ_POSTERIOR: gh_posterior_free(&o->p); break;
    case GH_OBJ_INT32_VECTOR_VECTOR: gh_ivecvec_free(&o->vv); break;
    case GH_OBJ_INT32: case GH_OBJ_FLOAT: break;
    case GH_OBJ_TOKEN_VECTOR: free(o->str); break;
    case GH_OBJ_MATRIX_VIEW: gh_matrix_free(&o->mv.own); break;
    case GH_OBJ_CMATRIX: break; /* written only, never held by a reader */
    case GH_OBJ_FST: gh_fst_free(&o->fst); break;
    case GH_OBJ_INT32_PAIR_VECTOR: break; /* written only */
  }
  memset(o, 0, sizeof *o);
}

/* The void* handed to callers: the struct, or the string itself for
 * GH_OBJ_TOKEN_VECTOR. */
static void *obj_ptr(gh_objtype t, gh_obj *o) {
  return t == GH_OBJ_TOKEN_VECTOR ? (void *)o->str : (void *)o;
}

/* Tokens of a line joined by single spaces (malloc'd). */
static char *normalize_tokens(const char *line) {
  char *out = gh_malloc(strlen(line) + 1), *q = out;
  for (const char *p = line; *p;) {
    while (*p && isspace((unsigned char)*p)) p++;
    if (!*p) break;
    if (q != out) *q++ = ' ';
    while (*p && !isspace((unsigned char)*p)) *q++ = *p++;
  }
  *q = '\0';
  return out;
}

/* Reads one table object (binary marker included) into o (already freed). */
static void obj_read(gh_istream *s, gh_objtype t, gh_obj *o) {
  if (t != GH_OBJ_TOKEN_VECTOR && gh_istream_eof(s)) gh_istream_fail(s, "unexpected end of file (no object)");
  int binary = gh_read_binary_marker(s);
  switch (t) {
    case GH_OBJ_MATRIX: gh_read_matrix(s, binary, &o->m); break;
    case GH_OBJ_MATRIX_VIEW: gh_read_matrix_view(s, binary, &o->mv.v, &o->mv.own); break;
    case GH_OBJ_DMATRIX: gh_read_dmatrix(s, binary, &o->dm); break;
    case GH_OBJ_VECTOR: gh_read_vector(s, binary, &o->v); break;
    case GH_OBJ_DVECTOR: gh_read_dvector(s, binary, &o->dv); break;
    case GH_OBJ_INT32_VECTOR: gh_read_int32_vector(s, binary, &o->iv); break;
    case GH_OBJ_POSTERIOR: gh_read_posterior(s, binary, &o->p); break;
    case GH_OBJ_INT32_VECTOR_VECTOR: gh_read_int32_vector_vector(s, binary, &o->vv); break;
    case GH_OBJ_FLOAT: {
      o->f = gh_read_float(s, binary);
      if (!binary) {
        const char *rest = gh_istream_eof(s) ? "" : gh_read_line(s);
        while (isspace((unsigned char)*rest)) rest++;
        if (*rest) gh_istream_fail(s, "expected one number per line, got extra text '%s'", rest);
      }
      break;
    }
    case GH_OBJ_INT32: {
      o->i = gh_read_int32(s, binary);
      if (!binary) {
        const char *rest = gh_istream_eof(s) ? "" : gh_read_line(s);
        while (isspace((unsigned char)*rest)) rest++;
        if (*rest) gh_istream_fail(s, "expected one integer per line, got extra text '%s'", rest);
      }
      break;
    }
    case GH_OBJ_TOKEN_VECTOR:
      if (binary) gh_istream_fail(s, "token vectors are text-only, found binary data");
      o->str = normalize_tokens(gh_istream_eof(s) ? "" : gh_read_line(s));
      break;
    case GH_OBJ_CMATRIX: gh_die("internal: GH_OBJ_CMATRIX is for writing only (read compressed matrices as GH_OBJ_MATRIX)");
    case GH_OBJ_FST: gh_fst_read_holder(s, &o->fst); break; /* no marker: the magic is not "\0B" */
    case GH_OBJ_INT32_PAIR_VECTOR: gh_die("internal: GH_OBJ_INT32_PAIR_VECTOR is for writing only");
  }
}

/* Writes one table object (binary marker included). */
static void obj_write(gh_ostream *s, int binary, gh_objtype t, const void *obj) {
  if (t == GH_OBJ_TOKEN_VECTOR) {
    const char *str = obj;
    char *norm = normalize_tokens(str ? str : "");
    FILE *fp = gh_ostream_fp(s);
    for (char *save = NULL, *w = strtok_r(norm, " ", &save); w; w = strtok_r(NULL, " ", &save))
      fprintf(fp, "%s ", w);
    putc('\n', fp);
    free(norm);
    return;
  }
  if (t == GH_OBJ_FST) { gh_fst_write_holder(s, binary, obj); return; } /* Kaldi writes no marker */
  gh_write_binary_marker(s, binary);
  switch (t) {
    case GH_OBJ_MATRIX: gh_write_matrix(s, binary, obj); break;
    case GH_OBJ_DMATRIX: gh_write_dmatrix(s, binary, obj); break;
    case GH_OBJ_VECTOR: gh_write_vector(s, binary, obj); break;
    case GH_OBJ_DVECTOR: gh_write_dvector(s, binary, obj); break;
    case GH_OBJ_INT32_VECTOR: gh_write_int32_vector(s, binary, obj); break;
    case GH_OBJ_POSTERIOR: gh_write_posterior(s, binary, obj); break;
    case GH_OBJ_INT32_VECTOR_VECTOR: gh_write_int32_vector_vector(s, binary, obj); break;
    case GH_OBJ_FLOAT:
      gh_write_float(s, binary, *(const float *)obj);
      if (!binary) putc('\n', gh_ostream_fp(s));
      break;
    case GH_OBJ_INT32:
      gh_write_int32(s, binary, *(const int32_t *)obj);
      if (!binary) putc('\n', gh_ostream_fp(s));
      break;
    case GH_OBJ_TOKEN_VECTOR: break;
    case GH_OBJ_MATRIX_VIEW: gh_die("internal: GH_OBJ_MATRIX_VIEW is for reading only");
    case GH_OBJ_CMATRIX: gh_write_cmatrix(s, binary, obj); break;
    case GH_OBJ_FST: break;
    case GH_OBJ_INT32_PAIR_VECTOR: { /* Kaldi BasicPairVectorHolder */
      const gh_ivector *v = obj;
      int32_t n = v->dim / 2;
      if (binary) {
        gh_write_int32(s, 1, n);
        for (int32_t i = 0; i < 2 * n; ++i) gh_write_int32(s, 1, v->data[i]);
      } else {
        FILE *fp = gh_ostream_fp(s);
        for (int32_t i = 0; i < n; ++i) fprintf(fp, i + 1 < n ? "%d %d ; " : "%d %d ", v->data[2 * i], v->data[2 * i + 1]);
        putc('\n', fp);
      }
      break;
    }
  }
}

/* ======================= scp entries ======================= */

/* Splits an scp rxfilename "file:123" into file + offset (offset -1 if the
 * name has no ":digits" suffix or is a pipe).  *file is malloc'd. */
static void split_offset(const char *rx, char **file, int64_t *offset) {
  size_t n = strlen(rx), i = n;
  *offset = -1;
  while (i > 0 && isdigit((unsigned char)rx[i - 1])) i--;
  if (i > 1 && i < n && rx[i - 1] == ':' && rx[n - 1] != '|') {
    *file = gh_strdup(rx);
    (*file)[i - 1] = '\0';
    *offset = strtoll(rx + i, NULL, 10);
  } else {
    *file = gh_strdup(rx);
  }
}

/* An open data file kept between scp entries (consecutive entries usually
 * point into the same archive, so we seek instead of reopening). */
typedef struct {
  gh_istream *in;
  char *file;
} scp_src;

static void scp_src_close(scp_src *src) {
  gh_istream_close(src->in);
  free(src->file);
  src->in = NULL;
  src->file = NULL;
}

/* Makes a view borrowed from a stream point at its own copy (own) instead. */
static void view_own(gh_matrix_view *v, gh_matrix *own) {
  if (!v->bytes || v->bytes == own->data) return;
  gh_matrix_resize(own, v->rows, v->cols);
  memcpy(own->data, v->bytes, (size_t)v->rows * v->cols * sizeof(float));
  v->bytes = own->data;
}

/* Reads the object of scp entry (key, rx) into o.  Returns 0 (with the
 * reason in gh_last_error()) if the file cannot be opened or the offset is
 * past its end and permissive is set; otherwise dies naming spec and key. */
static int scp_load(scp_src *src, const char *spec, const char *key, const char *rx,
                    gh_objtype t, gh_obj *o, int permissive) {
  char *file;
  int64_t off;
  split_offset(rx, &file, &off);
  int reusable = src->in && src->file && !strcmp(src->file, file) && off >= 0;
  if (!reusable || !gh_istream_seek(src->in, off) || gh_istream_eof(src->in)) {
    scp_src_close(src);
    src->in = off >= 0 ? gh_istream_open_offset(file, off) : gh_istream_open(file);
    if (!src->in) {
      free(file);
      if (permissive) return 0;
      gh_die("%s, key '%s': %s", spec, key, gh_last_error());
    }
    char name[1024];
    snprintf(name, sizeof name, "%s (from %s)", file, spec);
    gh_istream_set_name(src->in, name);
    src->file = file;
    file = NULL;
  }
  free(file);
  gh_istream_set_key(src->in, key);
  obj_read(src->in, t, o);
  if (off < 0) { /* whole-file entries are not reused */
    if (t == GH_OBJ_MATRIX_VIEW) view_own(&o->mv.v, &o->mv.own); /* the view dies with the stream */
    scp_src_close(src);
  }
  return 1;
}

/* Parses one scp line into key and rxfilename (pointers into line, which is
 * modified).  Returns 0 for a blank line; dies on a line without a file. */
static int scp_parse_line(char *line, const char *spec, char **key, char **rx) {
  char *p = line;
  while (isspace((unsigned char)*p)) p++;
  if (!*p) return 0;
  *key = p;
  while (*p && !isspace((unsigned char)*p)) p++;
  if (*p) *p++ = '\0';
  while (isspace((unsigned char)*p)) p++;
  size_t n = strlen(p);
  while (n > 0 && isspace((unsigned char)p[n - 1])) p[--n] = '\0';
  if (!*p) gh_die("%s: bad scp line for key '%s' (no filename)", spec, *key);
  *rx = p;
  return 1;
}

/* ======================= sequential reader ======================= */

struct gh_seq_reader {
  char *spec;
  gh_objtype type;
  spec_t sp;
  gh_istream *in;    /* the archive (ark) or the scp list (scp) */
  scp_src src;       /* scp: current data file */
  char *key;
  size_t keycap;
  gh_obj obj;
  int done;
};

/* Reads an archive key (skipping leading whitespace) and the single space
 * or tab after it.  Returns 0 at a clean end of file. */
static int read_ark_key(gh_seq_reader *r) {
  gh_istream *s = r->in;
  gh_skip_ws(s);
  size_t n = 0;
  int c;
  while ((c = gh_istream_peek(s)) >= 0 && !isspace(c)) {
    if (c == 0) {
      if (n + 1 > r->keycap) r->key = gh_realloc(r->key, r->keycap = n + 1);
      r->key[n] = '\0';
      gh_istream_fail(s, "archive key '%s' contains a NUL byte (binary data where a key should be?)",
                      gh_printable_token(r->key));
    }
    if (n + 2 > r->keycap) r->key = gh_realloc(r->key, r->keycap = r->keycap ? 2 * r->keycap : 128);
    r->key[n++] = (char)gh_istream_getc(s);
  }
  if (n == 0) return 0;
  r->key[n] = '\0';
  gh_istream_set_key(s, r->key);
  if (c < 0) gh_istream_fail(s, "unexpected end of file after key");
  if (c != '\n') gh_istream_getc(s);
  return 1;
}

/* Advances to the next entry: sets key/obj, or done. */
static void seq_read_next(gh_seq_reader *r) {
  obj_free(r->type, &r->obj);
  if (r->sp.ark) {
    if (!read_ark_key(r)) { r->done = 1; return; }
    obj_read(r->in, r->type, &r->obj);
    return;
  }
  for (;;) {
    if (gh_istream_eof(r->in)) { r->done = 1; return; }
    char *line = gh_read_line(r->in), *key, *rx;
    if (!scp_parse_line(line, r->spec, &key, &rx)) continue;
    size_t n = strlen(key) + 1;
    if (n > r->keycap) r->key = gh_realloc(r->key, r->keycap = n);
    memcpy(r->key, key, n);
    char *rxcopy = gh_strdup(rx);
    scp_load(&r->src, r->spec, r->key, rxcopy, r->type, &r->obj, 0);
    free(rxcopy);
    return;
  }
}

gh_seq_reader *gh_seq_reader_open(const char *rspecifier, gh_objtype type) {
  gh_seq_reader *r = gh_calloc(1, sizeof *r);
  r->spec = gh_strdup(rspecifier);
  r->type = type;
  char hint[512];
  if (!parse_spec(r->spec, 0, &r->sp))
    gh_die("invalid rspecifier '%s'%s", rspecifier, spec_hint(rspecifier, NULL, 0, hint, sizeof hint));
  r->in = gh_istream_open(r->sp.rest);
  if (!r->in) gh_die("%s: %s", rspecifier, gh_last_error());
  /* ark:/scp: mix-ups: the hint goes into the stream's name, so that the
   * read error it causes (at the first key) carries it. */
  spec_hint(rspecifier, &r->sp, 0, hint, sizeof hint);
  if (*hint) {
    char name[1200];
    snprintf(name, sizeof name, "%s%s", rspecifier, hint);
    gh_istream_set_name(r->in, name);
  } else {
    gh_istream_set_name(r->in, rspecifier);
  }
  gh_istream_set_permissive(r->in, r->sp.permissive);
  seq_read_next(r);
  return r;
}

int gh_seq_reader_done(gh_seq_reader *r) { return r->done; }
const char *gh_seq_reader_key(gh_seq_reader *r) { return r->done ? NULL : r->key; }
void *gh_seq_reader_value(gh_seq_reader *r) { return r->done ? NULL : obj_ptr(r->type, &r->obj); }
const char *gh_seq_reader_spec(const gh_seq_reader *r) { return r->spec; }

void gh_seq_reader_next(gh_seq_reader *r) {
  if (!r->done) seq_read_next(r);
}

void gh_seq_reader_close(gh_seq_reader *r) {
  if (!r) return;
  obj_free(r->type, &r->obj);
  scp_src_close(&r->src);
  gh_istream_close(r->in);
  free(r->key);
  free(r->spec);
  free(r);
}

/* ======================= random-access reader ======================= */

struct gh_rand_reader {
  char *spec;
  gh_objtype type;
  spec_t sp;
  gh_strmap index;     /* key -> entry number */
  /* ark: every entry read so far, cached; seq reads further on demand. */
  gh_seq_reader *seq;
  gh_obj *objs;
  int32_t nobj, capobj;
  /* scp: rxfilename per entry, one loaded object. */
  char **rx;
  int32_t nrx, caprx;
  scp_src src;
  gh_obj cur;
  int32_t cur_entry;   /* entry held in cur, or -1 */
};

/* scp: reads the whole list into index/rx. */
static void rand_index_scp(gh_rand_reader *r) {
  gh_istream *in = gh_istream_open(r->sp.rest);
  if (!in) gh_die("%s: %s", r->spec, gh_last_error());
  gh_istream_set_name(in, r->spec);
  gh_istream_set_permissive(in, r->sp.permissive);
  while (!gh_istream_eof(in)) {
    char *line = gh_read_line(in), *key, *rx;
    if (!scp_parse_line(line, r->spec, &key, &rx)) continue;
    if (!gh_strmap_put(&r->index, key, r->nrx)) /* as Kaldi's RandomAccessTableReaderScriptImpl */
      gh_die("%s: duplicate key '%s' in the script file (a random-access table needs unique keys)", r->spec, key);
    if (r->nrx == r->caprx) r->rx = gh_realloc(r->rx, (size_t)(r->caprx = r->caprx ? 2 * r->caprx : 64) * sizeof *r->rx);
    r->rx[r->nrx++] = gh_strdup(rx);
  }
  gh_istream_close(in);
}

gh_rand_reader *gh_rand_reader_open(const char *rspecifier, gh_objtype type) {
  gh_rand_reader *r = gh_calloc(1, sizeof *r);
  r->spec = gh_strdup(rspecifier);
  r->type = type;
  r->cur_entry = -1;
  char hint[512];
  if (!parse_spec(r->spec, 0, &r->sp))
    gh_die("invalid rspecifier '%s'%s", rspecifier, spec_hint(rspecifier, NULL, 0, hint, sizeof hint));
  if (type == GH_OBJ_MATRIX_VIEW) gh_die("internal: %s: random-access readers keep their objects; use GH_OBJ_MATRIX", rspecifier);
  if (r->sp.scp) rand_index_scp(r);
  else r->seq = gh_seq_reader_open(rspecifier, type);
  return r;
}

/* The entry of key in an archive table, reading on until it is found (-1:
 * absent); key NULL: reads all the remaining entries. */
static int32_t rand_find_ark(gh_rand_reader *r, const char *key) {
  int32_t e = key ? gh_strmap_get(&r->index, key) : -1;
  while (e < 0 && !r->seq->done) {
    if (r->nobj == r->capobj)
      r->objs = gh_realloc(r->objs, (size_t)(r->capobj = r->capobj ? 2 * r->capobj : 64) * sizeof *r->objs);
    if (!gh_strmap_put(&r->index, r->seq->key, r->nobj)) /* as Kaldi's RandomAccessTableReaderUnsortedArchiveImpl */
      gh_die("%s: duplicate key '%s' in the archive (a random-access table needs unique keys)", r->spec, r->seq->key);
    r->objs[r->nobj] = r->seq->obj; /* take ownership */
    memset(&r->seq->obj, 0, sizeof r->seq->obj);
    if (key && !strcmp(r->seq->key, key)) e = r->nobj;
    r->nobj++;
    gh_seq_reader_next(r->seq);
  }
  return e;
}

int gh_rand_reader_has_key(gh_rand_reader *r, const char *key) {
  if (r->sp.scp) return gh_strmap_get(&r->index, key) >= 0;
  return rand_find_ark(r, key) >= 0;
}

void gh_rand_reader_load_all(gh_rand_reader *r) {
  if (!r->sp.scp) rand_find_ark(r, NULL);
}

struct gh_rand_reader_opening {
  char *spec;
  gh_objtype type;
  gh_rand_reader *r;
  double seconds;
  pthread_t th;
  int threaded;
};

static void *open_bg_main(void *arg) {
  gh_rand_reader_opening *op = arg;
  const double t0 = gh_seconds();
  op->r = gh_rand_reader_open(op->spec, op->type);
  gh_rand_reader_load_all(op->r);
  op->seconds = gh_seconds() - t0;
  return NULL;
}

gh_rand_reader_opening *gh_rand_reader_open_bg(const char *rspecifier, gh_objtype type) {
  gh_rand_reader_opening *op = gh_calloc(1, sizeof *op);
  op->spec = gh_strdup(rspecifier);
  op->type = type;
  op->threaded = pthread_create(&op->th, NULL, open_bg_main, op) == 0;
  if (!op->threaded) open_bg_main(op);
  return op;
}

gh_rand_reader *gh_rand_reader_open_wait(gh_rand_reader_opening *op, double *seconds) {
  if (op->threaded) pthread_join(op->th, NULL);
  gh_rand_reader *r = op->r;
  if (seconds) *seconds = op->seconds;
  free(op->spec);
  free(op);
  return r;
}

void *gh_rand_reader_value(gh_rand_reader *r, const char *key) {
  if (!r->sp.scp) {
    int32_t e = rand_find_ark(r, key);
    return e < 0 ? NULL : obj_ptr(r->type, &r->objs[e]);
  }
  int32_t e = gh_strmap_get(&r->index, key);
  if (e < 0) return NULL;
  if (e != r->cur_entry) {
    obj_free(r->type, &r->cur);
    r->cur_entry = -1;
    if (!scp_load(&r->src, r->spec, key, r->rx[e], r->type, &r->cur, r->sp.permissive)) return NULL;
    r->cur_entry = e;
  }
  return obj_ptr(r->type, &r->cur);
}

const char *gh_rand_reader_spec(const gh_rand_reader *r) { return r->spec; }

/* 1 if rx names a regular file (gzip'd or not): not stdin, not "cmd |". */
static int rx_is_regular_file(const char *rx) {
  size_t n = strlen(rx);
  while (n > 0 && isspace((unsigned char)rx[n - 1])) n--;
  struct stat st;
  return n > 0 && strcmp(rx, "-") && rx[n - 1] != '|' && stat(rx, &st) == 0 && S_ISREG(st.st_mode);
}

/* The entries of an archive file after the last one looked up: read, their
 * objects dropped, so that a key found twice anywhere in the table is an
 * error, as the lookups that read on would have found it.  Not for stdin
 * and pipes: those may not end (a command writing forever, stopped by
 * SIGPIPE when the reader closes), and Kaldi does not read them on. */
static void rand_check_rest(gh_rand_reader *r) {
  if (!rx_is_regular_file(r->sp.rest)) return;
  for (; !r->seq->done; gh_seq_reader_next(r->seq))
    if (!gh_strmap_put(&r->index, r->seq->key, INT32_MAX))
      gh_die("%s: duplicate key '%s' in the archive (a random-access table needs unique keys)", r->spec, r->seq->key);
}

void gh_rand_reader_close(gh_rand_reader *r) {
  if (!r) return;
  if (r->seq) rand_check_rest(r);
  for (int32_t i = 0; i < r->nobj; i++) obj_free(r->type, &r->objs[i]);
  free(r->objs);
  for (int32_t i = 0; i < r->nrx; i++) free(r->rx[i]);
  free(r->rx);
  obj_free(r->type, &r->cur);
  scp_src_close(&r->src);
  gh_seq_reader_close(r->seq);
  gh_strmap_free(&r->index);
  free(r->spec);
  free(r);
}

/* ======================= writer ======================= */

struct gh_writer {
  char *spec;
  spec_t sp;
  int binary;
  gh_ostream *ark;
  gh_ostream *scp;     /* "ark,scp": the index */
  char *ark_name;      /* archive wxfilename as written into the scp */
};

gh_writer *gh_writer_open_binary(const char *wspecifier, int binary_default) {
  gh_writer *w = gh_calloc(1, sizeof *w);
  w->spec = gh_strdup(wspecifier);
  char hint[512];
  if (!parse_spec(w->spec, 1, &w->sp))
    gh_die("invalid wspecifier '%s'%s", wspecifier, spec_hint(wspecifier, NULL, 1, hint, sizeof hint));
  if (!w->sp.ark) gh_die("%s: writing 'scp:' tables without 'ark' is not supported", wspecifier);
  w->binary = w->sp.binary >= 0 ? w->sp.binary : binary_default;
  if (w->sp.scp) {
    const char *comma = strchr(w->sp.rest, ',');
    if (!comma) gh_die("%s: 'ark,scp' needs two names: <ark-wxfilename>,<scp-wxfilename>", wspecifier);
    w->ark_name = gh_strdup(w->sp.rest);
    w->ark_name[comma - w->sp.rest] = '\0';
    w->ark = gh_ostream_open(w->ark_name);
    w->scp = gh_ostream_open(comma + 1);
  } else {
    w->ark_name = gh_strdup(w->sp.rest);
    w->ark = gh_ostream_open(w->ark_name);
  }
  return w;
}

gh_writer *gh_writer_open(const char *wspecifier) { return gh_writer_open_binary(wspecifier, 1); }

void gh_writer_write(gh_writer *w, const char *key, gh_objtype type, const void *obj) {
  if (!key || !*key) gh_die("%s: empty key", w->spec);
  for (const char *p = key; *p; p++)
    if (isspace((unsigned char)*p)) gh_die("%s: invalid key '%s' (contains whitespace)", w->spec, key);
  FILE *fp = gh_ostream_fp(w->ark);
  fputs(key, fp);
  putc(' ', fp);
  if (w->scp) {
    long off = ftell(fp);
    if (off < 0) gh_die("%s, key '%s': cannot get the archive offset for the scp (%s)", w->spec, key, strerror(errno));
    fprintf(gh_ostream_fp(w->scp), "%s %s:%ld\n", key, w->ark_name, off);
  }
  obj_write(w->ark, w->binary, type, obj);
  if (ferror(fp)) {
    char what[1024];
    snprintf(what, sizeof what, "%s, key '%s'", w->spec, key);
    gh_ostream_check(w->ark, what);
  }
  if (w->sp.flush) fflush(fp);
}

void gh_writer_close(gh_writer *w) {
  if (!w) return;
  gh_ostream_close(w->ark);
  if (w->scp) gh_ostream_close(w->scp);
  free(w->ark_name);
  free(w->spec);
  free(w);
}

/* ======================= checks ======================= */

void gh_check_finite_matrix(const gh_matrix *m, const char *spec, const char *key) {
  int64_t n = (int64_t)m->rows * m->cols;
  for (int64_t i = 0; i < n; i++) {
    float x = m->data[i];
    if (!gh_isfinite_f(x))
      gh_die("%s, key '%s': %s at row %lld, col %lld", spec, key ? key : "?",
             x != x ? "NaN" : "infinity", (long long)(i / m->cols), (long long)(i % m->cols));
  }
}

/* 1 if the n floats at p are all finite: no exponent field all ones.  Blocks
 * of 16 with an OR of per-lane compare masks (and, compare, or: SSE2), so
 * gcc -O2 vectorises it (faster than a running max of |bits|, whose
 * unsigned max SSE2 lacks). */
static int all_finite(const float *restrict p, size_t n) {
  int32_t acc[16] = {0};
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    int32_t u[16];
    memcpy(u, p + i, sizeof u);
    for (int k = 0; k < 16; ++k) acc[k] |= -((u[k] & 0x7f800000) == 0x7f800000);
  }
  int32_t m = 0;
  for (int k = 0; k < 16; ++k) m |= acc[k];
  for (; i < n; ++i) {
    int32_t u;
    memcpy(&u, p + i, 4);
    m |= (u & 0x7f800000) == 0x7f800000;
  }
  return m == 0;
}

/* dst[0..n) = the n floats at src (any alignment); returns 0 if one is not
 * finite.  Copied and checked 256 KB at a time, the check while the block is
 * in cache (as gh_pread_floats_finite). */
static int copy_finite(float *restrict dst, const unsigned char *restrict src, size_t n) {
  enum { CHUNK = 65536 };
  int ok = 1;
  for (size_t i = 0; i < n; i += CHUNK) {
    const size_t m = n - i < CHUNK ? n - i : CHUNK;
    memcpy(dst + i, src + 4 * i, 4 * m);
    ok &= all_finite(dst + i, m);
  }
  return ok;
}

void gh_matrix_view_copy_finite(const gh_matrix_view *v, float *dst, const char *spec, const char *key) {
  size_t n = (size_t)v->rows * v->cols;
  if (n == 0 || copy_finite(dst, v->bytes, n)) return;
  gh_matrix m = {v->rows, v->cols, dst}; /* the copy holds the same values: name the bad one */
  gh_check_finite_matrix(&m, spec, key);
}

/* ======================= archive index scan ======================= */

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

enum { SCAN_WIN = 512 }; /* one pread per entry header: key + 16 bytes fit unless the key is long */

struct gh_ark_scan {
  char *spec, *path;
  int fd;
  int64_t size, pos;    /* file size at open; start of the next entry */
  int64_t slow_at;      /* start of the entry gh_ark_scan_decode reads, or -1 */
  char key[SCAN_WIN];
  gh_seq_reader *seq;   /* the sequential reader's code on the same file, opened at the first decode */
};

/* An fd of f if f names a regular file that is not gzip (zlib inflates
 * those), with its size; -1 for anything else (stdin, a pipe, a missing
 * file: the sequential reader then reads it, or says why it cannot). */
static int open_plain(const char *f, int64_t *size) {
  size_t n = strlen(f);
  if (n == 0 || !strcmp(f, "-") || f[n - 1] == '|' || isspace((unsigned char)f[n - 1])) return -1;
  int fd = open(f, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  unsigned char magic[2];
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      (pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b)) {
    close(fd);
    return -1;
  }
  *size = (int64_t)st.st_size;
  return fd;
}

gh_ark_scan *gh_ark_scan_open(const char *rspecifier) {
  spec_t sp;
  if (!parse_spec(rspecifier, 0, &sp) || !sp.ark) return NULL;
  const char *f = sp.rest;
  int64_t size;
  int fd = open_plain(f, &size);
  if (fd < 0) return NULL;
  gh_ark_scan *sc = gh_calloc(1, sizeof *sc);
  sc->spec = gh_strdup(rspecifier);
  sc->path = gh_strdup(f);
  sc->fd = fd;
  sc->size = size;
  sc->slow_at = -1;
  return sc;
}

int gh_ark_scan_fd(const gh_ark_scan *sc) { return sc->fd; }
int64_t gh_ark_scan_remaining(const gh_ark_scan *sc) { return sc->size > sc->pos ? sc->size - sc->pos : 0; }
const char *gh_ark_scan_spec(const gh_ark_scan *sc) { return sc->spec; }

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int gh_ark_scan_next(gh_ark_scan *sc, gh_ark_entry *e) {
  unsigned char w[SCAN_WIN];
  memset(e, 0, sizeof *e);
  e->offset = -1;
  sc->slow_at = sc->pos;
  ssize_t got = sc->pos < sc->size ? pread(sc->fd, w, SCAN_WIN, sc->pos) : 0;
  if (got < 0) return 1; /* the decode reports the read error */
  size_t len = (size_t)got, i = 0;
  int at_end = sc->pos + (int64_t)len >= sc->size;
  while (i < len && isspace(w[i])) ++i;
  if (i == len) return at_end ? 0 : 1; /* only whitespace: end; a longer run: decode */
  size_t k = i;
  while (k < len && w[k] && !isspace(w[k])) ++k;
  /* key, ' ', "\0B", "FM ", 0x04 rows, 0x04 cols: anything else is decoded */
  if (k + 16 > len || w[k] != ' ' || memcmp(w + k + 1, "\0BFM \4", 6) || w[k + 11] != 4) return 1;
  int32_t rows = (int32_t)le32(w + k + 7), cols = (int32_t)le32(w + k + 12);
  int64_t off = sc->pos + (int64_t)k + 16;
  if (rows < 0 || cols < 0 || (uint64_t)rows * (uint64_t)cols > (uint64_t)(sc->size - off) / 4) return 1;
  memcpy(sc->key, w + i, k - i);
  sc->key[k - i] = '\0';
  e->key = sc->key;
  e->offset = off;
  e->rows = rows;
  e->cols = cols;
  sc->pos = off + 4 * (int64_t)rows * cols;
  sc->slow_at = -1;
  return 1;
}

const gh_matrix_view *gh_ark_scan_decode(gh_ark_scan *sc, gh_ark_entry *e) {
  if (sc->slow_at < 0) gh_die("internal: gh_ark_scan_decode without an entry to decode");
  gh_seq_reader *r = sc->seq;
  if (!r) {
    r = sc->seq = gh_calloc(1, sizeof *r);
    r->spec = gh_strdup(sc->spec);
    r->type = GH_OBJ_MATRIX_VIEW;
    parse_spec(r->spec, 0, &r->sp);
    r->in = gh_istream_open(sc->path);
    if (!r->in) gh_die("%s: %s", sc->spec, gh_last_error());
    char hint[512], name[1200];
    snprintf(name, sizeof name, "%s%s", sc->spec, spec_hint(sc->spec, &r->sp, 0, hint, sizeof hint));
    gh_istream_set_name(r->in, name);
    gh_istream_peek(r->in); /* zlib settles on plain copying, so seeks are lseeks */
  }
  if (!gh_istream_seek(r->in, sc->slow_at)) gh_die("%s: cannot seek to offset %lld", sc->spec, (long long)sc->slow_at);
  sc->slow_at = -1;
  seq_read_next(r);
  if (r->done) return NULL;
  sc->pos = gh_istream_tell(r->in);
  e->key = r->key;
  e->rows = r->obj.mv.v.rows;
  e->cols = r->obj.mv.v.cols;
  return &r->obj.mv.v;
}

void gh_ark_scan_close(gh_ark_scan *sc) {
  if (!sc) return;
  gh_seq_reader_close(sc->seq);
  close(sc->fd);
  free(sc->spec);
  free(sc->path);
  free(sc);
}

int gh_pread_floats_finite(int fd, int64_t off, float *dst, size_t n, size_t *bad) {
  enum { CHUNK = 65536 }; /* floats: 256 KB, checked while in L2 */
  for (size_t i = 0; i < n;) {
    size_t m = n - i < CHUNK ? n - i : CHUNK, done = 0;
    char *d = (char *)(dst + i);
    while (done < 4 * m) {
      ssize_t r = pread(fd, d + done, 4 * m - done, off + 4 * (int64_t)i + (int64_t)done);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) { if (r == 0) errno = 0; return -1; }
      done += (size_t)r;
    }
    if (!all_finite(dst + i, m)) {
      for (size_t j = i; j < i + m; ++j)
        if (!gh_isfinite_f(dst[j])) { *bad = j; return 1; }
    }
    i += m;
  }
  return 0;
}

/* ======================= scp index ======================= */

enum { SCP_MAX_FILES = 256 }; /* distinct archives an indexed table may point into */

/* The fd of path (opened once per distinct file), or -1 if path is not a
 * regular, uncompressed file (or too many files: the caller falls back). */
static int scp_index_fd(gh_scp_index *x, const char *path, int64_t *size) {
  /* the file of the previous line first: a Kaldi scp lists each archive's entries together (with
   * --nj 100, 200,000 lines would otherwise compare ~50 paths each) */
  const int last = x->last_file;
  if (last < x->nfiles && !strcmp(x->paths[last], path)) { *size = x->sizes[last]; return x->fds[last]; }
  for (int i = 0; i < x->nfiles; ++i)
    if (!strcmp(x->paths[i], path)) { *size = x->sizes[x->last_file = i]; return x->fds[i]; }
  if (x->nfiles == SCP_MAX_FILES) return -1;
  int fd = open_plain(path, size);
  if (fd < 0) return -1;
  if (x->nfiles == 0) {
    x->paths = gh_calloc(SCP_MAX_FILES, sizeof *x->paths);
    x->fds = gh_calloc(SCP_MAX_FILES, sizeof *x->fds);
    x->sizes = gh_calloc(SCP_MAX_FILES, sizeof *x->sizes);
  }
  x->paths[x->nfiles] = gh_strdup(path);
  x->fds[x->nfiles] = fd;
  x->sizes[x->nfiles] = *size;
  x->last_file = x->nfiles++;
  return fd;
}

gh_scp_index *gh_scp_index_open(const char *rspecifier) {
  spec_t sp;
  char *spec = gh_strdup(rspecifier);
  struct stat st;
  /* the list must be a regular file: the fallback reads it again */
  if (!parse_spec(spec, 0, &sp) || !sp.scp || sp.ark || stat(sp.rest, &st) != 0 || !S_ISREG(st.st_mode)) {
    free(spec);
    return NULL;
  }
  gh_istream *in = gh_istream_open(sp.rest);
  if (!in) { free(spec); return NULL; } /* the sequential reader says why */
  gh_scp_index *x = gh_calloc(1, sizeof *x);
  int64_t cap = 0;
  int ok = 1;
  /* the lines (serial), then every entry's header pread in parallel (a
   * list of 200,000 utterances: one small read each), then checked in order */
  int64_t *fsize = NULL;
  while (ok && !gh_istream_eof(in)) {
    char *line = gh_read_line(in), *key, *rx;
    if (!scp_parse_line(line, spec, &key, &rx)) continue;
    char *file;
    int64_t off, size = 0;
    split_offset(rx, &file, &off);
    int fd = off >= 0 ? scp_index_fd(x, file, &size) : -1;
    free(file);
    if (fd < 0 || off > size - 15) {
      ok = 0;
      break;
    }
    if (x->n == cap) {
      cap = cap ? 2 * cap : 1024;
      x->e = gh_realloc(x->e, sizeof *x->e * (size_t)cap);
      fsize = gh_realloc(fsize, sizeof *fsize * (size_t)cap);
    }
    gh_scp_entry *e = &x->e[x->n];
    fsize[x->n++] = size;
    e->key = gh_strdup(key);
    e->fd = fd;
    e->offset = off; /* of the header, until checked */
    e->rows = e->cols = -1;
  }
  gh_istream_close(in);
  free(spec);
  if (ok) {
    const int64_t n = x->n;
    const int nth = omp_get_max_threads() < 16 ? omp_get_max_threads() : 16;
#pragma omp parallel for schedule(dynamic, 256) num_threads(nth) if (n >= 4096)
    for (int64_t i = 0; i < n; ++i) {
      /* "\0B", "FM ", 0x04 rows, 0x04 cols, then the payload: anything else falls back */
      gh_scp_entry *e = &x->e[i];
      unsigned char h[15];
      if (pread(e->fd, h, 15, e->offset) != 15 || memcmp(h, "\0BFM \4", 6) || h[10] != 4) continue;
      const int32_t rows = (int32_t)le32(h + 6), cols = (int32_t)le32(h + 11);
      const int64_t pay = e->offset + 15;
      if (rows < 0 || cols < 0 || (uint64_t)rows * (uint64_t)cols > (uint64_t)(fsize[i] - pay) / 4) continue;
      e->rows = rows;
      e->cols = cols;
      e->offset = pay;
    }
    for (int64_t i = 0; i < n && ok; ++i) ok = x->e[i].rows >= 0;
  }
  free(fsize);
  if (!ok) { gh_scp_index_free(x); return NULL; }
  return x;
}

void gh_scp_index_free(gh_scp_index *x) {
  if (!x) return;
  for (int64_t i = 0; i < x->n; ++i) free(x->e[i].key);
  for (int i = 0; i < x->nfiles; ++i) { close(x->fds[i]); free(x->paths[i]); }
  free(x->e);
  free(x->paths);
  free(x->fds);
  free(x->sizes);
  free(x);
}
