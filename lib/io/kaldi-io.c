/* kaldi-io.c -- Kaldi's binary/text object encodings over gzFile input and
 * stdio output streams.  Byte layouts: doc/format.md. */
#include "io/kaldi-io.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ======================= input stream ======================= */

#ifndef GH_IBUF_SIZE
#define GH_IBUF_SIZE (1 << 20)
#endif
#define IBUF_SIZE GH_IBUF_SIZE /* our own read-ahead buffer over gzread (fuzz builds: small) */
/* Regular files: zlib's own buffer is a quarter of ours, and a refill asks
 * for all the room left in ours; a gzread of at least twice zlib's buffer
 * goes straight into our buffer (read(2), or inflate, into it), so a refill
 * costs one copy from the page cache instead of two.  Pipes and stdin: zlib
 * blocks until a request (or its own buffer) is full, so both stay at
 * PIPE_CHUNK, as before, and a producer that writes a little and waits is
 * not kept waiting for a megabyte. */
#define GZ_BUF_SIZE (IBUF_SIZE / 4)
#define PIPE_CHUNK (IBUF_SIZE < (1 << 17) ? IBUF_SIZE : (1 << 17))
#define MAX_TOKEN 4096      /* longest token / number we accept */

struct gh_istream {
  gzFile gz;
  FILE *pipe;          /* popen'd command, or NULL */
  char *name;          /* for error messages */
  char *key;           /* current table key, or NULL */
  unsigned char *buf;  /* read-ahead buffer */
  size_t pos, len;     /* next byte, bytes valid */
  size_t cap;          /* buffer size (IBUF_SIZE, grown by gh_istream_need) */
  size_t chunk;        /* largest gzread of a refill: IBUF_SIZE, pipes PIPE_CHUNK */
  int64_t file_size;   /* size of a regular file, -1 for pipes / stdin */
  int64_t base;        /* stream offset of buf[0] */
  char *line;          /* gh_read_line's buffer */
  size_t linecap;
  int permissive;      /* a failed input pipe is a warning (Kaldi's "p"), not an error */
  int at_eof;          /* the input's end was seen */
};

static gh_istream *istream_new(gzFile gz, FILE *pipe, const char *name, int64_t file_size) {
  gh_istream *s = gh_calloc(1, sizeof *s);
  s->gz = gz;
  s->pipe = pipe;
  s->name = gh_strdup(name);
  s->buf = gh_malloc(IBUF_SIZE);
  s->cap = IBUF_SIZE;
  s->file_size = file_size;
  s->chunk = file_size >= 0 ? IBUF_SIZE : PIPE_CHUNK;
  gzbuffer(gz, file_size >= 0 ? GZ_BUF_SIZE : PIPE_CHUNK);
  return s;
}

/* Length of rx without trailing spaces. */
static size_t trimmed_len(const char *rx) {
  size_t n = strlen(rx);
  while (n > 0 && isspace((unsigned char)rx[n - 1])) --n;
  return n;
}

static int (*gh_io_filter)(const char *name) = NULL;
void gh_io_set_filter(int (*filter)(const char *name)) { gh_io_filter = filter; }

gh_istream *gh_istream_open(const char *rx) {
  if (gh_io_filter && !gh_io_filter(rx)) { gh_set_error("'%s' refused by the input filter", rx); return NULL; }
  size_t n = trimmed_len(rx);
  if (n == 0 || strcmp(rx, "-") == 0) {
    if (gh_std_closed(0)) { gh_set_error("standard input is closed"); return NULL; }
    int fd = dup(0);
    gzFile gz = fd < 0 ? NULL : gzdopen(fd, "rb");
    if (!gz) { gh_set_error("cannot read standard input: %s", strerror(errno)); return NULL; }
    return istream_new(gz, NULL, "standard input", -1);
  }
  if (rx[n - 1] == '|') {
    char *cmd = gh_strdup(rx);
    cmd[n - 1] = '\0';
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    free(cmd);
    int fd = p ? dup(fileno(p)) : -1;
    gzFile gz = fd < 0 ? NULL : gzdopen(fd, "rb");
    if (!gz) {
      gh_set_error("cannot run input pipe '%s': %s", rx, strerror(errno));
      if (p) pclose(p);
      return NULL;
    }
    return istream_new(gz, p, rx, -1);
  }
  int fd = open(rx, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    gh_set_error("cannot open '%s': it is a directory", rx);
    return NULL;
  }
  gzFile gz = fd < 0 ? NULL : gzdopen(fd, "rb");
  if (!gz) {
    gh_set_error("cannot open '%s': %s", rx, strerror(errno));
    if (fd >= 0) close(fd);
    return NULL;
  }
  return istream_new(gz, NULL, rx, S_ISREG(st.st_mode) ? (int64_t)st.st_size : -1);
}

gh_istream *gh_istream_open_offset(const char *filename, int64_t offset) {
  gh_istream *s = gh_istream_open(filename);
  if (!s) return NULL;
  if (offset > 0 && !gh_istream_seek(s, offset)) {
    gh_set_error("cannot seek to offset %lld in '%s'", (long long)offset, filename);
    gh_istream_close(s);
    return NULL;
  }
  if (gh_istream_peek(s) < 0) {
    gh_set_error("offset %lld is at or past the end of '%s'", (long long)offset, filename);
    gh_istream_close(s);
    return NULL;
  }
  return s;
}

int gh_istream_seek(gh_istream *s, int64_t offset) {
  if (offset >= s->base && offset <= s->base + (int64_t)s->len) {
    s->pos = (size_t)(offset - s->base);
    return 1;
  }
  if (s->pipe || gzseek(s->gz, (z_off_t)offset, SEEK_SET) < 0) return 0;
  s->base = offset;
  s->pos = s->len = 0;
  return 1;
}

static size_t ensure(gh_istream *s, size_t want);
static void read_ended(gh_istream *s, int n);

/* Waits for the input pipe's command (its output has ended, or the reader
 * stops early) and returns its wait status; the pipe is gone afterwards. */
static int reap_pipe(gh_istream *s) {
  FILE *p = s->pipe;
  s->pipe = NULL;
  return pclose(p);
}

/* The command of an input pipe whose output has ended failed: an error (a
 * warning with the "p" option), naming the stream and the cause. */
static void pipe_failed(gh_istream *s, int st) {
  char why[256];
  gh_wait_status_str(st, why, sizeof why);
  char after[512] = "";
  if (s->key) snprintf(after, sizeof after, " (its output ended after key '%s')", s->key);
  if (s->permissive) gh_warn("%s: the input command %s%s; ignored (permissive 'p' option)", s->name, why, after);
  else gh_die("%s: the input command %s%s", s->name, why, after);
}

/* The end of the input has been seen: a pipe's command has closed its
 * output, so it is reaped now and its failure reported here, before any
 * parse error the truncated data would cause. */
static void input_ended(gh_istream *s) {
  s->at_eof = 1;
  if (s->pipe) {
    int st = reap_pipe(s);
    if (st != 0) pipe_failed(s, st);
  }
}

void gh_istream_set_permissive(gh_istream *s, int permissive) { s->permissive = permissive; }

void gh_istream_close(gh_istream *s) {
  if (!s) return;
  if (s->pipe && !s->at_eof && s->pos == s->len) ensure(s, 1); /* ended with the last object read? */
  gzclose(s->gz);
  if (s->pipe) { /* stopped before the end: the command's failure (SIGPIPE, mostly) is ours */
    int st = reap_pipe(s);
    if (st != 0) {
      char why[256];
      gh_vlog(1, "input pipe '%s' %s after the reader stopped early", s->name, gh_wait_status_str(st, why, sizeof why));
    }
  }
  free(s->name);
  free(s->key);
  free(s->buf);
  free(s->line);
  free(s);
}

const char *gh_istream_name(const gh_istream *s) { return s->name; }

void gh_istream_set_name(gh_istream *s, const char *name) {
  free(s->name);
  s->name = gh_strdup(name);
}

void gh_istream_set_key(gh_istream *s, const char *key) {
  free(s->key);
  s->key = key ? gh_strdup(key) : NULL;
}

void gh_istream_fail(gh_istream *s, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (s->key)
    gh_die("%s, key '%s', offset %lld: %s", s->name, s->key, (long long)gh_istream_tell(s), msg);
  gh_die("%s, offset %lld: %s", s->name, (long long)gh_istream_tell(s), msg);
}

/* Makes at least `want` bytes available from pos if the stream has them
 * (growing the buffer beyond IBUF_SIZE only when want needs it); returns
 * the number available. */
static size_t ensure(gh_istream *s, size_t want) {
  if (s->len - s->pos >= want) return s->len - s->pos;
  if (s->pos > 0) {
    memmove(s->buf, s->buf + s->pos, s->len - s->pos);
    s->base += (int64_t)s->pos;
    s->len -= s->pos;
    s->pos = 0;
  }
  while (s->len < want) {
    /* Grow only as data arrives (at most doubling), so a size claimed by a
     * corrupt header costs no more memory than the bytes really there. */
    if (s->len == s->cap) {
      size_t c = 2 * s->cap < want ? 2 * s->cap : want;
      s->buf = gh_realloc(s->buf, c);
      s->cap = c;
    }
    size_t room = s->cap - s->len;
    int n = gzread(s->gz, s->buf + s->len, (unsigned)(room > s->chunk ? s->chunk : room));
    if (n <= 0) { read_ended(s, n); break; }
    s->len += (size_t)n;
  }
  return s->len;
}

/* gzread returned n <= 0: a read error or a corrupt or truncated gzip
 * stream dies (naming the cause); a clean end of input is input_ended. */
static void read_ended(gh_istream *s, int n) {
  int err = Z_OK;
  const char *m = gzerror(s->gz, &err);
  if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) {
    const int e = errno;
    if (s->pipe) input_ended(s); /* a failed command first: it is the cause */
    if (strncmp(m, "<fd:", 4) == 0 && strstr(m, ": ")) m = strstr(m, ": ") + 2; /* zlib names the descriptor */
    char where[512] = "";
    if (s->key) snprintf(where, sizeof where, " (after key '%s')", s->key);
    if (err == Z_ERRNO) gh_die("%s: read error%s: %s", s->name, where, strerror(e));
    if (err == Z_BUF_ERROR) gh_die("%s: read error%s: truncated gzip data (%s)", s->name, where, m);
    gh_die("%s: read error%s: corrupt gzip data (%s)", s->name, where, m);
  }
  input_ended(s);
}

int gh_istream_peek(gh_istream *s) {
  if (s->pos < s->len || ensure(s, 1) > 0) return s->buf[s->pos];
  return -1;
}

int gh_istream_getc(gh_istream *s) {
  int c = gh_istream_peek(s);
  if (c >= 0) s->pos++;
  return c;
}

void gh_istream_read(gh_istream *s, void *dst, size_t n) {
  if (n == 0) return; /* dst may be NULL for an empty object */
  const size_t want = n;
  unsigned char *d = dst;
  size_t have = s->len - s->pos;
  size_t k = have < n ? have : n;
  memcpy(d, s->buf + s->pos, k);
  s->pos += k; d += k; n -= k;
  if (n == 0) return;
  /* Buffer is empty: large reads go straight into the destination. */
  s->base += (int64_t)s->len;
  s->pos = s->len = 0;
  while (n >= s->cap) {
    unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
    int r = gzread(s->gz, d, chunk);
    if (r <= 0) {
      read_ended(s, r);
      gh_istream_fail(s, "unexpected end of file: %zu bytes expected, %zu read", want, want - n);
    }
    s->base += r; d += r; n -= (size_t)r;
  }
  if (n > 0) {
    const size_t got = ensure(s, n);
    if (got < n) gh_istream_fail(s, "unexpected end of file: %zu bytes expected, %zu read", want, want - n + got);
    memcpy(d, s->buf, n);
    s->pos = n;
  }
}

const void *gh_istream_view(gh_istream *s, size_t n) {
  if (n == 0) return NULL;
  const size_t got = ensure(s, n);
  if (got < n) gh_istream_fail(s, "unexpected end of file: %zu bytes expected, %zu read", n, got);
  const void *p = s->buf + s->pos;
  s->pos += n;
  return p;
}

int64_t gh_istream_tell(gh_istream *s) { return s->base + (int64_t)s->pos; }

void gh_istream_need(gh_istream *s, uint64_t count, uint64_t bytes_each, const char *what) {
  const uint64_t max = (uint64_t)1 << 42;
  if (bytes_each && count > max / bytes_each)
    gh_istream_fail(s, "%s needs %llu x %llu bytes, more than any input we read", what,
                    (unsigned long long)count, (unsigned long long)bytes_each);
  uint64_t nbytes = count * bytes_each;
  if (s->len - s->pos >= nbytes) return;
  if (s->file_size >= 0 && gzdirect(s->gz)) {
    int64_t left = s->file_size - gh_istream_tell(s);
    if (left < 0 || (uint64_t)left < nbytes)
      gh_istream_fail(s, "unexpected end of file: %s needs %llu bytes, but only %lld are left in the file", what,
                      (unsigned long long)nbytes, (long long)(left < 0 ? 0 : left));
    return;
  }
  /* Compressed or a pipe: read ahead; the buffer holds only bytes that
   * exist, so memory stays bounded by the input's real size. */
  size_t have = ensure(s, (size_t)nbytes);
  if (have < nbytes)
    gh_istream_fail(s, "unexpected end of file: %s needs %llu bytes, but the input ends after %zu", what,
                    (unsigned long long)nbytes, have);
}

int gh_istream_eof(gh_istream *s) { return gh_istream_peek(s) < 0; }

int gh_read_binary_marker(gh_istream *s) {
  const size_t have = ensure(s, 2);
  if (have >= 2 && s->buf[s->pos] == 0 && s->buf[s->pos + 1] == 'B') {
    s->pos += 2;
    return 1;
  }
  /* a lone NUL at the end: a binary object cut after its first byte */
  if (have == 1 && s->buf[s->pos] == 0)
    gh_istream_fail(s, "unexpected end of file in the binary marker: 2 bytes expected, 1 read");
  return 0;
}

void gh_skip_ws(gh_istream *s) {
  int c;
  while ((c = gh_istream_peek(s)) >= 0 && isspace(c)) s->pos++;
}

/* Reads a whitespace-delimited word (at most MAX_TOKEN-1 chars) into a
 * static buffer after skipping leading whitespace; stops before ']' when
 * stop_bracket is set.  Returns "" at EOF. */
static const char *read_word(gh_istream *s, int stop_bracket) {
  static char w[MAX_TOKEN];
  size_t n = 0;
  int c;
  gh_skip_ws(s);
  while ((c = gh_istream_peek(s)) >= 0 && !isspace(c) && !(stop_bracket && c == ']' && n > 0)) {
    if (n + 1 >= sizeof w) gh_istream_fail(s, "word too long");
    w[n++] = (char)c;
    s->pos++;
  }
  w[n] = '\0';
  return w;
}

/* Text number parsers: the whole word must be a number. */
static double parse_double(gh_istream *s, const char *w) {
  char *end;
  errno = 0;
  double v = strtod(w, &end);
  if (!*w || *end) gh_istream_fail(s, "expected a number, got '%s'", w);
  return v;
}

static float parse_float(gh_istream *s, const char *w) {
  char *end;
  float v = strtof(w, &end);
  if (!*w || *end) gh_istream_fail(s, "expected a number, got '%s'", w);
  return v;
}

static int32_t parse_int32(gh_istream *s, const char *w) {
  char *end;
  errno = 0;
  long long v = strtoll(w, &end, 10);
  if (!*w || *end || errno || v < INT32_MIN || v > INT32_MAX)
    gh_istream_fail(s, "expected a 32-bit integer, got '%s'", w);
  return (int32_t)v;
}

/* Binary: checks the size byte equals `size`. */
static void expect_size_byte(gh_istream *s, int size, const char *what) {
  int c = gh_istream_getc(s);
  if (c < 0) gh_istream_fail(s, "unexpected end of file reading %s", what);
  if (c != size) gh_istream_fail(s, "expected %s (size byte %d), got byte %d", what, size, c);
}

int32_t gh_read_int32(gh_istream *s, int binary) {
  if (!binary) return parse_int32(s, read_word(s, 0));
  int32_t v;
  expect_size_byte(s, 4, "int32");
  gh_istream_read(s, &v, 4);
  return v;
}

double gh_read_double(gh_istream *s, int binary) {
  if (!binary) return parse_double(s, read_word(s, 0));
  int c = gh_istream_getc(s);
  if (c == 4) { float f; gh_istream_read(s, &f, 4); return f; }
  if (c == 8) { double d; gh_istream_read(s, &d, 8); return d; }
  gh_istream_fail(s, "expected float or double (size byte 4 or 8), got byte %d", c);
}

float gh_read_float(gh_istream *s, int binary) {
  if (!binary) return parse_float(s, read_word(s, 0));
  return (float)gh_read_double(s, binary);
}

const char *gh_read_token(gh_istream *s, int binary) {
  const char *w = read_word(s, 0);
  if (!*w) gh_istream_fail(s, "unexpected end of file reading a token");
  int c = gh_istream_getc(s);
  /* binary tokens end with a space: one cut short is not a token */
  if (c < 0 && binary) gh_istream_fail(s, "unexpected end of file in token '%s' (no space after it)", w);
  if (c >= 0 && !isspace(c)) gh_istream_fail(s, "expected space after token '%s'", w);
  return w;
}

const char *gh_peek_token(gh_istream *s, int binary) {
  static char w[MAX_TOKEN];
  gh_skip_ws(s);
  size_t avail = ensure(s, MAX_TOKEN - 1), n = 0;
  while (n < avail && n + 1 < sizeof w && !isspace(s->buf[s->pos + n])) {
    w[n] = (char)s->buf[s->pos + n];
    n++;
  }
  w[n] = '\0';
  return w;
}

void gh_expect_token(gh_istream *s, int binary, const char *tok) {
  const char *w = gh_read_token(s, binary);
  if (strcmp(w, tok) != 0) gh_istream_fail(s, "expected token '%s', got '%s'", tok, w);
}

/* Text "[ a b c ]" (newlines allowed) into a growing array of elements of
 * size esz, parsed as float/double/int32 by kind 'f','d','i'. */
static void *read_text_list(gh_istream *s, char kind, int64_t *n_out) {
  size_t esz = kind == 'd' ? 8 : 4, cap = 64, n = 0;
  char *data = gh_malloc(cap * esz);
  gh_skip_ws(s);
  const int open = gh_istream_getc(s);
  if (open < 0) gh_istream_fail(s, "unexpected end of file in text object (no '[')");
  if (open != '[') gh_istream_fail(s, "expected '[' in text object");
  for (;;) {
    const char *w = read_word(s, 1);
    /* a word the end of the input cut (a number's first digits) is the end of the file, not a bad number */
    if (!*w || (gh_istream_peek(s) < 0 && strcmp(w, "]")))
      gh_istream_fail(s, "unexpected end of file in text object (no ']')");
    if (strcmp(w, "]") == 0) break;
    if (w[0] == ']') gh_istream_fail(s, "unexpected text '%s'", w);
    if (n == cap) data = gh_realloc(data, (cap *= 2) * esz);
    if (kind == 'f') ((float *)data)[n++] = parse_float(s, w);
    else if (kind == 'd') ((double *)data)[n++] = parse_double(s, w);
    else ((int32_t *)data)[n++] = parse_int32(s, w);
  }
  *n_out = (int64_t)n;
  return data;
}

int32_t *gh_read_int32_vector_basic(gh_istream *s, int binary, int32_t *n) {
  if (!binary) {
    int64_t k;
    int32_t *v = read_text_list(s, 'i', &k);
    *n = (int32_t)k;
    return v;
  }
  expect_size_byte(s, 4, "integer vector");
  int32_t k;
  gh_istream_read(s, &k, 4);
  if (k < 0) gh_istream_fail(s, "negative vector size %d", k);
  gh_istream_need(s, (uint64_t)k, 4, "integer vector");
  int32_t *v = gh_malloc(((size_t)k + 1) * sizeof *v);
  gh_istream_read(s, v, (size_t)k * 4);
  *n = k;
  return v;
}

char *gh_read_line(gh_istream *s) {
  /* the buffered bytes scanned with memchr, not byte by byte (a 200,000-line
   * scp: bench/RESULTS.md D33) */
  size_t n = 0;
  int newline = 0;
  while (!newline && (s->pos < s->len || ensure(s, 1) > 0)) {
    const unsigned char *p = s->buf + s->pos, *nl = memchr(p, '\n', s->len - s->pos);
    const size_t k = nl ? (size_t)(nl - p) : s->len - s->pos;
    const unsigned char *nul = memchr(p, 0, k);
    if (nul) {
      s->pos += (size_t)(nul - p) + 1; /* the offset the error names: just after the NUL */
      gh_istream_fail(s, "NUL byte in a line of text (binary data where text was expected?)");
    }
    if (n + k + 2 > s->linecap) {
      size_t c = s->linecap ? 2 * s->linecap : 256;
      while (c < n + k + 2) c *= 2;
      s->line = gh_realloc(s->line, s->linecap = c);
    }
    memcpy(s->line + n, p, k);
    n += k;
    s->pos += k + (nl != NULL);
    newline = nl != NULL;
  }
  if (!newline && n == 0) gh_istream_fail(s, "unexpected end of file (expected a line of text)");
  if (n + 1 > s->linecap) s->line = gh_realloc(s->line, s->linecap = s->linecap ? 2 * s->linecap : 256);
  if (n > 0 && s->line[n - 1] == '\r') --n;
  s->line[n] = '\0';
  return s->line;
}

/* ---------------- matrices ---------------- */

/* Kaldi compressed-matrix decoding (compressed-matrix.cc) with Kaldi's exact
 * arithmetic: percentiles in float, the CM interpolation in double (Kaldi's
 * 1/64.0 constants are double), so decoded values are bit-identical. */
static inline float u16_to_float(float min, float range, uint16_t v) {
  return min + range * 1.52590218966964e-05F * v;
}

static inline float char_to_float(float p0, float p25, float p75, float p100, uint8_t v) {
  if (v <= 64) return p0 + (p25 - p0) * v * (1 / 64.0);
  if (v <= 192) return p25 + (p75 - p25) * (v - 64) * (1 / 128.0);
  return p75 + (p100 - p75) * (v - 192) * (1 / 63.0);
}

/* Reads the body of a "CM"/"CM2"/"CM3" object (after the token) into m. */
static void read_compressed(gh_istream *s, const char *tok, gh_matrix *m) {
  struct { float min, range; int32_t rows, cols; } h;
  gh_istream_read(s, &h, 16);
  if (h.rows < 0 || h.cols < 0 || (h.rows == 0) != (h.cols == 0))
    gh_istream_fail(s, "bad compressed matrix size %d x %d", h.rows, h.cols);
  {
    uint64_t cells = (uint64_t)h.rows * (uint64_t)h.cols;
    uint64_t disk = strcmp(tok, "CM") == 0 ? (uint64_t)h.cols * 8 + cells : strcmp(tok, "CM2") == 0 ? 2 * cells : cells;
    /* cells < 2^62: disk cannot overflow */
    char what[64];
    snprintf(what, sizeof what, "%s matrix %d x %d", tok, h.rows, h.cols);
    gh_istream_need(s, disk, 1, what);
  }
  gh_matrix_resize(m, h.rows, h.cols);
  size_t n = (size_t)h.rows * h.cols;
  if (strcmp(tok, "CM") == 0) {
    uint16_t *ph = gh_malloc((size_t)h.cols * 8 + 1);
    uint8_t *codes = gh_malloc(n + 1);
    gh_istream_read(s, ph, (size_t)h.cols * 8);
    gh_istream_read(s, codes, n);
    for (int32_t c = 0; c < h.cols; c++) {
      float p0 = u16_to_float(h.min, h.range, ph[4 * c]);
      float p25 = u16_to_float(h.min, h.range, ph[4 * c + 1]);
      float p75 = u16_to_float(h.min, h.range, ph[4 * c + 2]);
      float p100 = u16_to_float(h.min, h.range, ph[4 * c + 3]);
      const uint8_t *col = codes + (size_t)c * h.rows;
      for (int32_t r = 0; r < h.rows; r++)
        m->data[(size_t)r * h.cols + c] = char_to_float(p0, p25, p75, p100, col[r]);
    }
    free(ph);
    free(codes);
  } else if (strcmp(tok, "CM2") == 0) {
    uint16_t *v = gh_malloc(2 * n + 2);
    gh_istream_read(s, v, 2 * n);
    float inc = (float)(h.range * (1.0 / 65535.0));
    for (size_t i = 0; i < n; i++) m->data[i] = h.min + v[i] * inc;
    free(v);
  } else {
    uint8_t *v = gh_malloc(n + 1);
    gh_istream_read(s, v, n);
    float inc = (float)(h.range * (1.0 / 255.0));
    for (size_t i = 0; i < n; i++) m->data[i] = h.min + v[i] * inc;
    free(v);
  }
}

/* Reads binary rows/cols (two size-prefixed int32s), checking them. */
static void read_dims(gh_istream *s, int32_t *rows, int32_t *cols) {
  *rows = gh_read_int32(s, 1);
  *cols = gh_read_int32(s, 1);
  if (*rows < 0 || *cols < 0) gh_istream_fail(s, "bad matrix size %d x %d", *rows, *cols);
}

/* Binary "FM"/"DM" (token tok already read): the dims, checked against the
 * bytes left in the input (gh_istream_need); returns rows x cols. */
static size_t read_plain_dims(gh_istream *s, const char *tok, int disk_double, int32_t *rows, int32_t *cols) {
  read_dims(s, rows, cols);
  size_t n = (size_t)*rows * *cols;
  char what[64];
  snprintf(what, sizeof what, "%s matrix %d x %d", tok, *rows, *cols);
  gh_istream_need(s, (uint64_t)n, disk_double ? 8 : 4, what);
  return n;
}

/* Text matrix "[ r0 \n r1 \n ... ]": rows end at newlines; all rows must have
 * the same length.  Values parsed as float or double (kind 'f'/'d'). */
static void *read_text_matrix(gh_istream *s, char kind, int32_t *rows, int32_t *cols) {
  size_t esz = kind == 'd' ? 8 : 4, cap = 256, n = 0;
  char *data = gh_malloc(cap * esz);
  int64_t nrows = 0, ncols = -1, row_len = 0;
  int c;
  gh_skip_ws(s);
  const int open = gh_istream_getc(s);
  if (open < 0) gh_istream_fail(s, "unexpected end of file in text matrix (no '[')");
  if (open != '[') gh_istream_fail(s, "expected '[' at start of text matrix");
  for (;;) {
    while ((c = gh_istream_peek(s)) == ' ' || c == '\t' || c == '\r') s->pos++;
    if (c < 0) gh_istream_fail(s, "unexpected end of file in text matrix (no ']')");
    if (c == '\n' || c == ']') {
      s->pos++;
      if (row_len > 0) {
        if (ncols >= 0 && row_len != ncols)
          gh_istream_fail(s, "text matrix row %lld has %lld values, expected %lld",
                          (long long)nrows, (long long)row_len, (long long)ncols);
        ncols = row_len;
        nrows++;
        row_len = 0;
      }
      if (c == ']') break;
      continue;
    }
    const char *w = read_word(s, 1);
    /* a number the end of the input cut short is the end of the file, not a bad number */
    if (gh_istream_peek(s) < 0) gh_istream_fail(s, "unexpected end of file in text matrix (no ']')");
    if (n == cap) data = gh_realloc(data, (cap *= 2) * esz);
    if (kind == 'f') ((float *)data)[n++] = parse_float(s, w);
    else ((double *)data)[n++] = parse_double(s, w);
    row_len++;
  }
  if (gh_istream_peek(s) == '\r') s->pos++;
  if (gh_istream_peek(s) == '\n') s->pos++;
  if (nrows > INT32_MAX || ncols > INT32_MAX) gh_istream_fail(s, "text matrix too large");
  *rows = (int32_t)nrows;
  *cols = ncols < 0 ? 0 : (int32_t)ncols;
  return data;
}

/* One reader for every matrix encoding: produces a float (is_double == 0)
 * or double matrix of rows x cols in *data (malloc'd, NULL if empty). */
static void read_matrix_any(gh_istream *s, int binary, int is_double,
                            int32_t *rows, int32_t *cols, void **data) {
  size_t esz = is_double ? 8 : 4;
  if (!binary) {
    *data = read_text_matrix(s, is_double ? 'd' : 'f', rows, cols);
    return;
  }
  char tok[8];
  const char *t = gh_read_token(s, 1);
  snprintf(tok, sizeof tok, "%s", t);
  if (tok[0] == 'C') {
    if (strcmp(tok, "CM") && strcmp(tok, "CM2") && strcmp(tok, "CM3"))
      gh_istream_fail(s, "unknown compressed matrix token '%s'", t);
    gh_matrix fm = {0, 0, NULL};
    read_compressed(s, tok, &fm);
    *rows = fm.rows; *cols = fm.cols;
    if (!is_double) { *data = fm.data; return; }
    size_t n = (size_t)fm.rows * fm.cols;
    double *d = n ? gh_malloc(n * 8) : NULL;
    for (size_t i = 0; i < n; i++) d[i] = fm.data[i];
    gh_matrix_free(&fm);
    *data = d;
    return;
  }
  int disk_double;
  if (strcmp(tok, "FM") == 0) disk_double = 0;
  else if (strcmp(tok, "DM") == 0) disk_double = 1;
  else gh_istream_fail(s, "expected matrix token FM, DM, CM, CM2 or CM3, got '%s'", tok);
  size_t n = read_plain_dims(s, tok, disk_double, rows, cols);
  void *buf = n ? gh_malloc(n * (disk_double ? 8 : 4)) : NULL;
  gh_istream_read(s, buf, n * (disk_double ? 8 : 4));
  if (disk_double == is_double) { *data = buf; return; }
  void *out = n ? gh_malloc(n * esz) : NULL;
  for (size_t i = 0; i < n; i++) {
    if (is_double) ((double *)out)[i] = ((float *)buf)[i];
    else ((float *)out)[i] = (float)((double *)buf)[i];
  }
  free(buf);
  *data = out;
}

void gh_read_matrix(gh_istream *s, int binary, gh_matrix *m) {
  gh_matrix_free(m);
  void *d;
  read_matrix_any(s, binary, 0, &m->rows, &m->cols, &d);
  if ((int64_t)m->rows * m->cols == 0) { free(d); d = NULL; }
  m->data = d;
}

void gh_read_matrix_view(gh_istream *s, int binary, gh_matrix_view *v, gh_matrix *scratch) {
  if (binary && strcmp(gh_peek_token(s, 1), "FM") == 0) {
    gh_expect_token(s, 1, "FM");
    size_t n = read_plain_dims(s, "FM", 0, &v->rows, &v->cols);
    v->bytes = n ? gh_istream_view(s, n * 4) : NULL;
    return;
  }
  gh_read_matrix(s, binary, scratch);
  v->rows = scratch->rows;
  v->cols = scratch->cols;
  v->bytes = scratch->data;
}

void gh_read_dmatrix(gh_istream *s, int binary, gh_dmatrix *m) {
  gh_dmatrix_free(m);
  void *d;
  read_matrix_any(s, binary, 1, &m->rows, &m->cols, &d);
  if ((int64_t)m->rows * m->cols == 0) { free(d); d = NULL; }
  m->data = d;
}

/* One reader for vectors ("FV"/"DV" + int32 dim + data, text "[ ... ]") and
 * packed matrices ("FP"/"DP"; packed = 1): returns the element count (for
 * packed, the number of stored values n(n+1)/2) and malloc'd data. */
static int64_t read_vector_any(gh_istream *s, int binary, int is_double, int packed, void **data) {
  int64_t n;
  if (!binary) {
    *data = read_text_list(s, is_double ? 'd' : 'f', &n);
    if (gh_istream_peek(s) == '\r') gh_istream_getc(s);
    if (gh_istream_peek(s) == '\n') gh_istream_getc(s);
  } else {
    const char *t = gh_read_token(s, 1);
    char kind = packed ? 'P' : 'V';
    if (strlen(t) != 2 || (t[0] != 'F' && t[0] != 'D') || t[1] != kind)
      gh_istream_fail(s, "expected token F%c or D%c, got '%s'", kind, kind, t);
    int disk_double = t[0] == 'D';
    int32_t dim = gh_read_int32(s, 1);
    if (dim < 0) gh_istream_fail(s, "negative size %d", dim);
    n = packed ? gh_packed_size(dim) : dim;
    size_t dsz = disk_double ? 8 : 4;
    {
      char what[64];
      snprintf(what, sizeof what, "%s of size %d", t, dim);
      gh_istream_need(s, (uint64_t)n, dsz, what);
    }
    void *buf = gh_malloc((size_t)n * dsz + 8);
    gh_istream_read(s, buf, (size_t)n * dsz);
    if (disk_double != is_double) {
      void *out = gh_malloc((size_t)n * (is_double ? 8 : 4) + 8);
      for (int64_t i = 0; i < n; i++) {
        if (is_double) ((double *)out)[i] = ((float *)buf)[i];
        else ((float *)out)[i] = (float)((double *)buf)[i];
      }
      free(buf);
      buf = out;
    }
    *data = buf;
  }
  if (n == 0) { free(*data); *data = NULL; }
  return n;
}

void gh_read_vector(gh_istream *s, int binary, gh_vector *v) {
  gh_vector_free(v);
  void *d;
  v->dim = (int32_t)read_vector_any(s, binary, 0, 0, &d);
  v->data = d;
}

void gh_read_dvector(gh_istream *s, int binary, gh_dvector *v) {
  gh_dvector_free(v);
  void *d;
  v->dim = (int32_t)read_vector_any(s, binary, 1, 0, &d);
  v->data = d;
}

/* Side n of a packed matrix holding k values (k = n(n+1)/2), or dies. */
static int32_t packed_side(gh_istream *s, int64_t k) {
  int32_t n = 0;
  while (gh_packed_size(n) < k) n++;
  if (gh_packed_size(n) != k) gh_istream_fail(s, "text packed matrix has %lld values (not triangular)", (long long)k);
  return n;
}

void gh_read_packed(gh_istream *s, int binary, int32_t *n, float **data) {
  void *d;
  int64_t k = read_vector_any(s, binary, 0, 1, &d);
  *n = packed_side(s, k);
  *data = d;
}

void gh_read_dpacked(gh_istream *s, int binary, int32_t *n, double **data) {
  void *d;
  int64_t k = read_vector_any(s, binary, 1, 1, &d);
  *n = packed_side(s, k);
  *data = d;
}

/* ---------------- table entries: int32 vectors, posteriors ---------------- */

void gh_read_int32_vector(gh_istream *s, int binary, gh_ivector *v) {
  gh_ivector_free(v);
  if (binary) {
    int32_t n = gh_read_int32(s, 1);
    if (n < 0) gh_istream_fail(s, "negative vector size %d", n);
    gh_istream_need(s, (uint64_t)n, 5, "int32 vector");
    gh_ivector_resize(v, n);
    for (int32_t i = 0; i < n; i++) v->data[i] = gh_read_int32(s, 1);
    return;
  }
  char *line = gh_read_line(s);
  int32_t cap = 0;
  for (char *save = NULL, *w = strtok_r(line, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
    if (v->dim == cap) v->data = gh_realloc(v->data, (size_t)(cap = cap ? 2 * cap : 64) * 4);
    v->data[v->dim++] = parse_int32(s, w);
  }
}

/* Appends one (pdf, weight) pair to the frame being built (frame index
 * p->num_frames, whose end is offsets[num_frames + 1]); cap = capacity. */
static void post_push(gh_posterior *p, int32_t *cap, int32_t pdf, float w) {
  int32_t n = p->offsets[p->num_frames + 1];
  if (n == *cap) {
    *cap = *cap ? 2 * *cap : 64;
    p->pdf = gh_realloc(p->pdf, (size_t)*cap * sizeof *p->pdf);
    p->weight = gh_realloc(p->weight, (size_t)*cap * sizeof *p->weight);
  }
  p->pdf[n] = pdf;
  p->weight[n] = w;
  p->offsets[p->num_frames + 1]++;
}

/* Starts a new frame in p, growing offsets (fcap = frames it can hold). */
static void post_begin_frame(gh_posterior *p, int32_t *fcap) {
  if (p->num_frames + 1 > *fcap) {
    *fcap = *fcap ? 2 * *fcap : 16;
    p->offsets = gh_realloc(p->offsets, ((size_t)*fcap + 1) * sizeof *p->offsets);
    if (p->num_frames == 0) p->offsets[0] = 0;
  }
  p->offsets[p->num_frames + 1] = p->offsets[p->num_frames];
}

void gh_read_posterior(gh_istream *s, int binary, gh_posterior *p) {
  gh_posterior_free(p);
  int32_t cap = 0, fcap = 0;
  post_begin_frame(p, &fcap); /* allocates offsets[0] */
  if (binary) {
    int32_t T = gh_read_int32(s, 1);
    if (T < 0) gh_istream_fail(s, "bad posterior frame count %d", T);
    gh_istream_need(s, (uint64_t)T, 5, "posterior frames");
    for (int32_t t = 0; t < T; t++, p->num_frames++) {
      post_begin_frame(p, &fcap);
      int32_t k = gh_read_int32(s, 1);
      if (k < 0) gh_istream_fail(s, "negative posterior entry count %d", k);
      gh_istream_need(s, (uint64_t)k, 10, "posterior entries");
      for (int32_t j = 0; j < k; j++) {
        int32_t pdf = gh_read_int32(s, 1);
        float w = gh_read_float(s, 1);
        post_push(p, &cap, pdf, w);
      }
    }
    return;
  }
  char *line = gh_read_line(s), *save = NULL;
  for (char *w = strtok_r(line, " \t", &save); w; w = strtok_r(NULL, " \t", &save), p->num_frames++) {
    if (strcmp(w, "[") != 0) gh_istream_fail(s, "posterior: expected '[', got '%s'", w);
    post_begin_frame(p, &fcap);
    for (;;) {
      char *a = strtok_r(NULL, " \t", &save);
      if (!a) gh_istream_fail(s, "posterior: missing ']'");
      if (strcmp(a, "]") == 0) break;
      char *b = strtok_r(NULL, " \t", &save);
      if (!b || strcmp(b, "]") == 0) gh_istream_fail(s, "posterior: pdf '%s' without a weight", a);
      post_push(p, &cap, parse_int32(s, a), parse_float(s, b));
    }
  }
}

/* Starts vector v->num_vecs of v (ocap: capacity of offsets in vectors). */
static void ivv_begin(gh_ivecvec *v, int32_t *ocap) {
  if (v->num_vecs + 1 > *ocap) {
    *ocap = *ocap ? 2 * *ocap : 16;
    v->offsets = gh_realloc(v->offsets, ((size_t)*ocap + 1) * sizeof *v->offsets);
    if (v->num_vecs == 0) v->offsets[0] = 0;
  }
  v->offsets[v->num_vecs + 1] = v->offsets[v->num_vecs];
}

static void ivv_push(gh_ivecvec *v, int32_t *cap, int32_t x) {
  int32_t n = v->offsets[v->num_vecs + 1];
  if (n == *cap) {
    *cap = *cap ? 2 * *cap : 64;
    v->data = gh_realloc(v->data, (size_t)*cap * sizeof *v->data);
  }
  v->data[n] = x;
  v->offsets[v->num_vecs + 1]++;
}

void gh_read_int32_vector_vector(gh_istream *s, int binary, gh_ivecvec *v) {
  gh_ivecvec_free(v);
  int32_t ocap = 0, cap = 0;
  v->offsets = gh_malloc(sizeof *v->offsets);
  v->offsets[0] = 0;
  if (binary) {
    int32_t n = gh_read_int32(s, 1);
    if (n < 0) gh_istream_fail(s, "bad vector-of-vectors size %d", n);
    gh_istream_need(s, (uint64_t)n, 5, "vector of vectors");
    for (int32_t i = 0; i < n; i++, v->num_vecs++) {
      ivv_begin(v, &ocap);
      int32_t k = gh_read_int32(s, 1);
      if (k < 0) gh_istream_fail(s, "negative inner vector size %d", k);
      gh_istream_need(s, (uint64_t)k, 5, "inner int32 vector");
      for (int32_t j = 0; j < k; j++) ivv_push(v, &cap, gh_read_int32(s, 1));
    }
    return;
  }
  char *line = gh_read_line(s), *save = NULL;
  int open = 0;
  for (char *w = strtok_r(line, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
    if (!open) { ivv_begin(v, &ocap); open = 1; }
    if (strcmp(w, ";") == 0) { v->num_vecs++; open = 0; continue; }
    ivv_push(v, &cap, parse_int32(s, w));
  }
  if (open) gh_istream_fail(s, "vector of vectors: the last inner vector has no ';'");
}

/* ======================= output stream ======================= */

struct gh_ostream {
  FILE *fp;
  gh_tmpfile *tmp;  /* file output (committed at close) */
  FILE *pipe;       /* popen'd "| cmd" */
  char *name;
};

gh_ostream *gh_ostream_open(const char *wx) {
  if (gh_io_filter && !gh_io_filter(wx)) gh_die("'%s' refused by the output filter", wx);
  gh_ostream *s = gh_calloc(1, sizeof *s);
  size_t n = trimmed_len(wx);
  const char *p = wx;
  while (isspace((unsigned char)*p)) p++;
  if (n == 0 || strcmp(wx, "-") == 0) {
    if (gh_std_closed(1)) gh_die("cannot write to standard output: it is closed");
    s->fp = stdout;
    s->name = gh_strdup("standard output");
  } else if (*p == '|') {
    fflush(stdout);
    s->pipe = popen(p + 1, "w");
    if (!s->pipe) gh_die("cannot run output pipe '%s': %s", wx, strerror(errno));
    s->fp = s->pipe;
    s->name = gh_strdup(wx);
  } else {
    s->tmp = gh_tmpfile_open(wx);
    s->fp = gh_tmpfile_fp(s->tmp);
    s->name = gh_strdup(wx);
  }
  if (s->fp != stdout) setvbuf(s->fp, NULL, _IOFBF, 1 << 16);
  return s;
}

void gh_ostream_close(gh_ostream *s) {
  if (!s) return;
  if (s->tmp) {
    gh_tmpfile_commit(s->tmp);
  } else if (s->pipe) {
    int e = 0, bad = ferror(s->pipe);
    if (fflush(s->pipe) != 0) { bad = 1; e = errno; }
    int st = pclose(s->pipe);
    char why[256];
    if (st != 0) gh_die("output pipe '%s': the command %s", s->name, gh_wait_status_str(st, why, sizeof why));
    if (bad && e) gh_die("write error on output pipe '%s': %s", s->name, strerror(e));
    if (bad) gh_die("write error on output pipe '%s'", s->name);
  } else {
    int e = 0, bad = ferror(s->fp);
    if (fflush(s->fp) != 0) { bad = 1; e = errno; }
    if (bad && e) gh_die("write error on %s: %s", s->name, strerror(e));
    if (bad) gh_die("write error on %s", s->name);
  }
  free(s->name);
  free(s);
}

FILE *gh_ostream_fp(gh_ostream *s) { return s->fp; }

void gh_ostream_check(gh_ostream *s, const char *what) {
  if (!ferror(s->fp)) return;
  const int e = s->tmp ? gh_tmpfile_errno(s->tmp) : errno;
  if (e) gh_die("%s: error writing '%s': %s", what, s->name, strerror(e));
  gh_die("%s: error writing '%s'", what, s->name);
}
const char *gh_ostream_name(const gh_ostream *s) { return s->name; }

void gh_write_binary_marker(gh_ostream *s, int binary) {
  if (binary) fwrite("\0B", 1, 2, s->fp);
}

void gh_write_int32(gh_ostream *s, int binary, int32_t v) {
  if (!binary) { fprintf(s->fp, "%d ", v); return; }
  putc(4, s->fp);
  fwrite(&v, 4, 1, s->fp);
}

/* Text values: C++ ostream << with precision 7 == printf "%.7g". */
static inline void put_text_value(FILE *fp, double v) { fprintf(fp, "%.7g ", v); }

void gh_write_float(gh_ostream *s, int binary, float v) {
  if (!binary) { put_text_value(s->fp, v); return; }
  putc(4, s->fp);
  fwrite(&v, 4, 1, s->fp);
}

void gh_write_double(gh_ostream *s, int binary, double v) {
  if (!binary) { put_text_value(s->fp, v); return; }
  putc(8, s->fp);
  fwrite(&v, 8, 1, s->fp);
}

void gh_write_token(gh_ostream *s, int binary, const char *tok) {
  fputs(tok, s->fp);
  putc(' ', s->fp);
}

void gh_write_int32_vector_basic(gh_ostream *s, int binary, const int32_t *v, int32_t n) {
  if (binary) {
    putc(4, s->fp);
    fwrite(&n, 4, 1, s->fp);
    if (n) fwrite(v, 4, (size_t)n, s->fp);
    return;
  }
  fputs("[ ", s->fp);
  for (int32_t i = 0; i < n; i++) fprintf(s->fp, "%d ", v[i]);
  fputs("]\n", s->fp);
}

/* Element i of a float (is_double == 0) or double array, as double. */
static inline double elem(const void *d, int is_double, int64_t i) {
  return is_double ? ((const double *)d)[i] : ((const float *)d)[i];
}

/* One writer for FM/DM matrices. Text: " [\n  v v \n  v v ]\n". */
static void write_matrix_any(gh_ostream *s, int binary, int is_double, int32_t rows, int32_t cols,
                             const void *d) {
  if (binary) {
    gh_write_token(s, 1, is_double ? "DM" : "FM");
    gh_write_int32(s, 1, rows);
    gh_write_int32(s, 1, cols);
    size_t n = (size_t)rows * cols;
    if (n) fwrite(d, is_double ? 8 : 4, n, s->fp);
    return;
  }
  if (cols == 0 || rows == 0) { fputs(" [ ]\n", s->fp); return; }
  fputs(" [", s->fp);
  for (int64_t r = 0; r < rows; r++) {
    fputs("\n  ", s->fp);
    for (int64_t c = 0; c < cols; c++) put_text_value(s->fp, elem(d, is_double, r * cols + c));
  }
  fputs("]\n", s->fp);
}

void gh_write_matrix(gh_ostream *s, int binary, const gh_matrix *m) {
  write_matrix_any(s, binary, 0, m->rows, m->cols, m->data);
}

void gh_write_dmatrix(gh_ostream *s, int binary, const gh_dmatrix *m) {
  write_matrix_any(s, binary, 1, m->rows, m->cols, m->data);
}

/* One writer for FV/DV vectors. Text: " [ v v v ]\n". */
static void write_vector_any(gh_ostream *s, int binary, int is_double, int32_t dim, const void *d) {
  if (binary) {
    gh_write_token(s, 1, is_double ? "DV" : "FV");
    gh_write_int32(s, 1, dim);
    if (dim) fwrite(d, is_double ? 8 : 4, (size_t)dim, s->fp);
    return;
  }
  fputs(" [ ", s->fp);
  for (int32_t i = 0; i < dim; i++) put_text_value(s->fp, elem(d, is_double, i));
  fputs("]\n", s->fp);
}

void gh_write_vector(gh_ostream *s, int binary, const gh_vector *v) {
  write_vector_any(s, binary, 0, v->dim, v->data);
}

void gh_write_dvector(gh_ostream *s, int binary, const gh_dvector *v) {
  write_vector_any(s, binary, 1, v->dim, v->data);
}

/* One writer for FP/DP packed matrices. Text: "[\n" rows "v v \n", last row
 * ends "v ]\n"; empty: "[ ]\n". */
static void write_packed_any(gh_ostream *s, int binary, int is_double, int32_t n, const void *d) {
  if (binary) {
    gh_write_token(s, 1, is_double ? "DP" : "FP");
    gh_write_int32(s, 1, n);
    if (n) fwrite(d, is_double ? 8 : 4, (size_t)gh_packed_size(n), s->fp);
    return;
  }
  if (n == 0) { fputs("[ ]\n", s->fp); return; }
  fputs("[\n", s->fp);
  for (int32_t i = 0; i < n; i++) {
    for (int32_t j = 0; j <= i; j++) put_text_value(s->fp, elem(d, is_double, gh_packed_index(i, j)));
    if (i + 1 < n) putc('\n', s->fp);
  }
  fputs("]\n", s->fp);
}

void gh_write_packed(gh_ostream *s, int binary, int32_t n, const float *data) {
  write_packed_any(s, binary, 0, n, data);
}

void gh_write_dpacked(gh_ostream *s, int binary, int32_t n, const double *data) {
  write_packed_any(s, binary, 1, n, data);
}

void gh_write_int32_vector(gh_ostream *s, int binary, const gh_ivector *v) {
  if (binary) gh_write_int32(s, 1, v->dim);
  for (int32_t i = 0; i < v->dim; i++) gh_write_int32(s, binary, v->data[i]);
  if (!binary) putc('\n', s->fp);
}

void gh_write_int32_vector_vector(gh_ostream *s, int binary, const gh_ivecvec *v) {
  if (binary) gh_write_int32(s, 1, v->num_vecs);
  for (int32_t i = 0; i < v->num_vecs; i++) {
    int32_t b = v->offsets[i], e = v->offsets[i + 1];
    if (binary) gh_write_int32(s, 1, e - b);
    for (int32_t j = b; j < e; j++) gh_write_int32(s, binary, v->data[j]);
    if (!binary) fputs("; ", s->fp);
  }
  if (!binary) putc('\n', s->fp);
}

void gh_write_posterior(gh_ostream *s, int binary, const gh_posterior *p) {
  if (binary) gh_write_int32(s, 1, p->num_frames);
  for (int32_t t = 0; t < p->num_frames; t++) {
    int32_t b = p->offsets[t], e = p->offsets[t + 1];
    if (binary) gh_write_int32(s, 1, e - b);
    else fputs("[ ", s->fp);
    for (int32_t j = b; j < e; j++) {
      gh_write_int32(s, binary, p->pdf[j]);
      gh_write_float(s, binary, p->weight[j]);
    }
    if (!binary) fputs("] ", s->fp);
  }
  if (!binary) putc('\n', s->fp);
}

/* See kaldi-io.h. */
const char *gh_printable_token(const char *t) {
  static char buf[4 * 40 + 8];
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)t; *p && n < 4 * 40; ++p) {
    if (*p >= 0x20 && *p < 0x7f) buf[n++] = (char)*p;
    else n += (size_t)snprintf(buf + n, sizeof buf - n, "\\x%02x", *p);
  }
  if (strlen(t) > 40 && n < sizeof buf - 4) { buf[n++] = '.'; buf[n++] = '.'; buf[n++] = '.'; }
  buf[n] = '\0';
  return buf;
}

void gh_istream_fail_type(gh_istream *s, const char *want, const char *tokens, const char *tok,
                          const char *example) {
  static const struct { const char *tok, *is; } kinds[] = {
      {"<GMMACCS>", "GMM accumulators"},  {"<NUMPDFS>", "GMM accumulators"},
      {"<HmmAccs>", "HMM accumulators"},  {"<HmmSet>", "an HMM set"},
      {"<DIMENSION>", "a GMM model"},     {"<TransitionModel>", "a Kaldi model"},
      {"<DiagGMM>", "a diagonal GMM"},    {"<FullGMM>", "a full-covariance GMM"},
  };
  char is[600] = "";
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; ++i)
    if (!strcmp(tok, kinds[i].tok)) snprintf(is, sizeof is, " (that is %s)", kinds[i].is);
  if (!*is && tok[0] != '<' && example)
    snprintf(is, sizeof is, " (an archive or scp list? %s is the first argument, e.g. %s)", want, example);
  gh_istream_fail(s, "not %s: expected %s, got '%s'%s", want, tokens, gh_printable_token(tok), is);
}

const char *gh_rspecifier_hint(const char *rx) {
  static char buf[600];
  size_t n = strcspn(rx, ":");
  if (!rx[n] || n == 0 || n > 20) return "";
  char pre[24], *save = NULL;
  memcpy(pre, rx, n);
  pre[n] = '\0';
  int table = 0;
  for (char *w = strtok_r(pre, ",", &save); w; w = strtok_r(NULL, ",", &save))
    if (!strcmp(w, "ark") || !strcmp(w, "scp")) table = 1;
  if (!table) return "";
  snprintf(buf, sizeof buf, " ('%.400s' is a table rspecifier, not a file: are the arguments swapped? The model "
           "comes first, e.g. gmm-score-gpu final.mdl scp:feats.scp ark:loglikes.ark)", rx);
  return buf;
}
