/* wav.c -- audio input through libsndfile, and the wav.scp reader.
 * See wav.h.  Follows Kaldi's feat/wave-reader.cc for the sample scale. */
#include "feat/wav.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "io/kaldi-io.h"

#ifndef GH_NO_SNDFILE
#include <sndfile.h>

/* ---- libsndfile virtual I/O over a memory buffer ---- */
typedef struct {
  const unsigned char *p;
  sf_count_t n, pos;
} mem_file;

static sf_count_t vio_len(void *u) { return ((mem_file *)u)->n; }
static sf_count_t vio_seek(sf_count_t off, int whence, void *u) {
  mem_file *m = u;
  sf_count_t np = whence == SEEK_SET ? off : whence == SEEK_CUR ? m->pos + off : m->n + off;
  if (np < 0) np = 0;
  if (np > m->n) np = m->n;
  m->pos = np;
  return np;
}
static sf_count_t vio_read(void *dst, sf_count_t count, void *u) {
  mem_file *m = u;
  sf_count_t k = m->n - m->pos;
  if (k > count) k = count;
  if (k < 0) k = 0;
  memcpy(dst, m->p + m->pos, (size_t)k);
  m->pos += k;
  return k;
}
static sf_count_t vio_write(const void *src, sf_count_t count, void *u) { return 0; }
static sf_count_t vio_tell(void *u) { return ((mem_file *)u)->pos; }
#endif

/* RIFF/WAVE: the size its "data" chunk declares and the bytes the buffer
 * really holds after the chunk header.  libsndfile silently shortens a
 * truncated data chunk, so this is how a truncated file is noticed.
 * Returns 0 if buf is not a RIFF/WAVE file or has no data chunk. */
static int riff_data_sizes(const unsigned char *b, size_t n, uint64_t *declared, uint64_t *present) {
  if (n < 12 || memcmp(b, "RIFF", 4) || memcmp(b + 8, "WAVE", 4)) return 0;
  size_t off = 12;
  while (off + 8 <= n) {
    uint32_t sz = (uint32_t)b[off + 4] | (uint32_t)b[off + 5] << 8 | (uint32_t)b[off + 6] << 16 |
                  (uint32_t)b[off + 7] << 24;
    if (!memcmp(b + off, "data", 4)) {
      *declared = sz;
      *present = n - (off + 8);
      return 1;
    }
    off += 8 + (size_t)sz + (sz & 1);
  }
  return 0;
}

void gh_wave_free(gh_wave *w) {
  free(w->data);
  memset(w, 0, sizeof *w);
}

int gh_wave_read_mem(const void *buf, size_t n, const char *name, gh_wave *w) {
  gh_wave_free(w);
#ifdef GH_NO_SNDFILE
  (void)buf; (void)n; (void)name;
  gh_set_error("cannot decode audio: gmmhmm was built without libsndfile "
               "(install libsndfile1-dev and rebuild)");
  return 0;
#else
  if (n == 0) { gh_set_error("empty file (no data)"); return 0; }
  mem_file m = {buf, (sf_count_t)n, 0};
  SF_VIRTUAL_IO vio = {vio_len, vio_seek, vio_read, vio_write, vio_tell};
  SF_INFO info;
  memset(&info, 0, sizeof info);
  SNDFILE *sf = sf_open_virtual(&vio, SFM_READ, &info, &m);
  if (!sf) {
    gh_set_error("truncated or unreadable audio header (%zu bytes): %s", n, sf_strerror(NULL));
    return 0;
  }
  if (info.channels <= 0 || info.samplerate <= 0) {
    sf_close(sf);
    gh_set_error("bad audio header: %d channels, sample rate %d", info.channels, info.samplerate);
    return 0;
  }
  if (info.frames <= 0) {
    sf_close(sf);
    gh_set_error("empty file (no audio samples)");
    return 0;
  }
  /* Normalized double reads give x / 2^(bits-1) for PCM and the stored value
   * for float; times 32768 puts every encoding on the int16 scale Kaldi uses
   * (16-bit PCM exactly: both factors are powers of two). */
  sf_command(sf, SFC_SET_NORM_DOUBLE, NULL, SF_TRUE);
  int64_t nf = info.frames, nc = info.channels, got = 0;
  enum { CHUNK = 8192 };
  double *tmp = gh_malloc((size_t)(CHUNK * nc) * sizeof *tmp);
  w->data = gh_malloc((size_t)(nf * nc) * sizeof *w->data);
  while (got < nf) { /* decode in chunks, deinterleaving into channel rows */
    sf_count_t k = sf_readf_double(sf, tmp, nf - got < CHUNK ? nf - got : CHUNK);
    if (k <= 0) break;
    for (int64_t i = 0; i < k; ++i)
      for (int64_t c = 0; c < nc; ++c) w->data[c * nf + got + i] = (float)(tmp[i * nc + c] * 32768.0);
    got += k;
  }
  sf_close(sf);
  free(tmp);
  if (got <= 0) {
    gh_wave_free(w);
    gh_set_error("empty file (no audio samples could be read)");
    return 0;
  }
  uint64_t declared, present;
  if (got == nf && riff_data_sizes(buf, n, &declared, &present) && declared != 0xffffffffu &&
      declared > present)
    gh_warn("%s: the data chunk declares %llu bytes but the file holds only %llu (truncated file?); "
            "read %lld samples per channel", name, (unsigned long long)declared,
            (unsigned long long)present, (long long)got);
  if (got < nf) { /* fewer samples than the header says: compact the channel rows */
    gh_warn("%s: expected %lld samples per channel, read only %lld (truncated file?)", name, (long long)nf,
            (long long)got);
    for (int64_t c = 1; c < nc; ++c) memmove(w->data + c * got, w->data + c * nf, (size_t)got * sizeof *w->data);
  }
  w->num_channels = (int32_t)nc;
  w->num_samples = got;
  w->samp_freq = info.samplerate;
  return 1;
#endif
}

int gh_wave_read(const char *rx, gh_wave *w) {
  gh_istream *s = gh_istream_open(rx);
  if (!s) return 0;
  size_t cap = 1 << 16, n = 0;
  unsigned char *buf = gh_malloc(cap);
  int c;
  while ((c = gh_istream_getc(s)) >= 0) {
    if (n == cap) buf = gh_realloc(buf, cap *= 2);
    buf[n++] = (unsigned char)c;
  }
  gh_istream_close(s);
  int ok = gh_wave_read_mem(buf, n, rx, w);
  free(buf);
  return ok;
}

/* ---------------- wav.scp reader ---------------- */

struct gh_wave_reader {
  char *spec;
  gh_istream *scp;
  int permissive, done;
  char *key, *rx;
  gh_wave wave;
};

/* Reads scp lines until one decodes (or, non-permissive, dies). */
static void reader_advance(gh_wave_reader *r) {
  for (;;) {
    free(r->key); free(r->rx);
    r->key = r->rx = NULL;
    gh_wave_free(&r->wave);
    if (gh_istream_peek(r->scp) < 0) { r->done = 1; return; }
    char *line = gh_read_line(r->scp);
    while (*line && isspace((unsigned char)*line)) ++line;
    if (!*line) continue;
    char *k = line;
    while (*line && !isspace((unsigned char)*line)) ++line;
    if (*line) *line++ = '\0';
    while (*line && isspace((unsigned char)*line)) ++line;
    size_t len = strlen(line);
    while (len > 0 && isspace((unsigned char)line[len - 1])) line[--len] = '\0';
    if (!len) gh_die("%s, key '%s': line has no filename", r->spec, k);
    r->key = gh_strdup(k);
    r->rx = gh_strdup(line);
    if (gh_wave_read(r->rx, &r->wave)) return;
    if (!r->permissive) gh_die("%s, key '%s': %s: %s", r->spec, r->key, r->rx, gh_last_error());
    gh_warn("%s, key '%s': %s: %s (skipped: permissive)", r->spec, r->key, r->rx, gh_last_error());
  }
}

gh_wave_reader *gh_wave_reader_open(const char *spec) {
  const char *colon = strchr(spec, ':');
  if (!colon) gh_die("bad wave rspecifier '%s' (expected scp:wav.scp)", spec);
  int is_scp = 0, is_ark = 0, perm = 0;
  char *opts = gh_strdup(spec);
  opts[colon - spec] = '\0';
  for (char *tok = strtok(opts, ","); tok; tok = strtok(NULL, ",")) {
    if (!strcmp(tok, "scp")) is_scp = 1;
    else if (!strcmp(tok, "ark")) is_ark = 1;
    else if (!strcmp(tok, "p")) perm = 1;
    else if (strcmp(tok, "s") && strcmp(tok, "cs") && strcmp(tok, "o") && strcmp(tok, "b") &&
             strcmp(tok, "t") && strcmp(tok, "bg") && strcmp(tok, "ns") && strcmp(tok, "ncs") &&
             strcmp(tok, "no") && strcmp(tok, "np"))
      gh_die("bad wave rspecifier '%s': unknown option '%s'", spec, tok);
  }
  free(opts);
  if (is_ark) gh_die("%s: archives of WAV objects are not supported; use scp:wav.scp", spec);
  if (!is_scp) gh_die("bad wave rspecifier '%s' (expected scp:wav.scp)", spec);
  gh_wave_reader *r = gh_calloc(1, sizeof *r);
  r->spec = gh_strdup(spec);
  r->permissive = perm;
  r->scp = gh_istream_open(colon + 1);
  if (!r->scp) gh_die("%s: %s", spec, gh_last_error());
  reader_advance(r);
  return r;
}

int gh_wave_reader_done(gh_wave_reader *r) { return r->done; }
const char *gh_wave_reader_key(gh_wave_reader *r) { return r->key; }
const char *gh_wave_reader_rxfilename(gh_wave_reader *r) { return r->rx; }
const gh_wave *gh_wave_reader_value(gh_wave_reader *r) { return &r->wave; }
void gh_wave_reader_next(gh_wave_reader *r) {
  if (!r->done) reader_advance(r);
}

void gh_wave_reader_close(gh_wave_reader *r) {
  if (!r) return;
  gh_istream_close(r->scp);
  free(r->spec); free(r->key); free(r->rx);
  gh_wave_free(&r->wave);
  free(r);
}
