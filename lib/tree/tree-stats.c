/* tree-stats.c -- Kaldi's tree statistics files (see tree-stats.h; Kaldi
 * tree/build-tree-utils.cc WriteBuildTreeStats / ReadBuildTreeStats,
 * tree/event-map.cc WriteEventType). */
#include "tree/tree-stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"

#define GH_MAX_EVENT_LEN 1000

int gh_event_compare(const gh_event_pair *a, int32_t na, const gh_event_pair *b, int32_t nb) {
  int32_t n = na < nb ? na : nb;
  for (int32_t i = 0; i < n; ++i) {
    if (a[i].key != b[i].key) return a[i].key < b[i].key ? -1 : 1;
    if (a[i].value != b[i].value) return a[i].value < b[i].value ? -1 : 1;
  }
  return na < nb ? -1 : na > nb;
}

void gh_tree_stats_init(gh_tree_stats *s) {
  memset(s, 0, sizeof(*s));
  s->dim = -1;
}

void gh_tree_stats_free(gh_tree_stats *s) {
  for (int32_t i = 0; i < s->num; ++i) {
    free(s->items[i].ev);
    gh_gclust_free(s->items[i].stats);
  }
  free(s->items);
  gh_tree_stats_init(s);
}

void gh_tree_stats_push(gh_tree_stats *s, const gh_event_pair *ev, int32_t len, gh_gclust *stats, const char *what) {
  if (stats) {
    if (s->dim >= 0 && stats->dim != s->dim)
      gh_die_dim(what, NULL, "tree statistics", stats->dim, s->dim, "the earlier statistics");
    s->dim = stats->dim;
  }
  if (s->num == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 256;
    s->items = gh_realloc(s->items, (size_t)s->cap * sizeof(gh_tree_stat));
  }
  gh_tree_stat *t = &s->items[s->num++];
  t->len = len;
  t->ev = gh_malloc((size_t)(len > 0 ? len : 1) * sizeof(gh_event_pair));
  if (len > 0) memcpy(t->ev, ev, (size_t)len * sizeof(gh_event_pair));
  t->stats = stats;
}

static uint32_t read_uint32(gh_istream *in, int binary, const char *what) {
  if (!binary) {
    const char *w = gh_read_token(in, 0);
    char *end;
    unsigned long long v = strtoull(w, &end, 10);
    if (*w == '\0' || *w == '-' || *end != '\0' || v > UINT32_MAX)
      gh_istream_fail(in, "reading %s: expected an unsigned 32-bit integer, got '%s'", what, gh_printable_token(w));
    return (uint32_t)v;
  }
  int c = gh_istream_getc(in);
  if (c != 0xFC) gh_istream_fail(in, "reading %s: expected uint32 (size byte 0xFC), got byte %d", what, c);
  uint32_t v;
  gh_istream_read(in, &v, 4);
  return v;
}

static void write_uint32(gh_ostream *out, int binary, uint32_t v) {
  FILE *fp = gh_ostream_fp(out);
  if (binary) {
    putc(0xFC, fp);
    fwrite(&v, 4, 1, fp);
  } else {
    fprintf(fp, "%u ", v);
  }
}

static int read_bool(gh_istream *in, int binary) {
  if (!binary) gh_skip_ws(in);
  int c = gh_istream_getc(in);
  if (c != 'T' && c != 'F') gh_istream_fail(in, "reading tree statistics: expected a bool (T or F), got byte %d", c);
  return c == 'T';
}

void gh_tree_stats_read_stream(gh_istream *in, int binary, gh_tree_stats *s) {
  gh_tree_stats_init(s);
  const char *tok = gh_read_token(in, binary);
  if (strcmp(tok, "BTS") != 0) gh_istream_fail_type(in, "tree statistics", "BTS", tok, NULL);
  uint32_t n = read_uint32(in, binary, "tree statistics");
  gh_event_pair ev[GH_MAX_EVENT_LEN];
  char what[512];
  snprintf(what, sizeof what, "%s", gh_istream_name(in));
  for (uint32_t i = 0; i < n; ++i) {
    gh_expect_token(in, binary, "EV");
    uint32_t len = read_uint32(in, binary, "an event");
    if (len > GH_MAX_EVENT_LEN) gh_istream_fail(in, "reading an event: %u pairs (at most %d)", len, GH_MAX_EVENT_LEN);
    for (uint32_t k = 0; k < len; ++k) {
      ev[k].key = gh_read_int32(in, binary);
      ev[k].value = gh_read_int32(in, binary);
      if (k > 0 && ev[k].key <= ev[k - 1].key)
        gh_istream_fail(in, "reading statistic %u: event keys not sorted and unique (%d after %d)", i, ev[k].key,
                        ev[k - 1].key);
    }
    gh_gclust *c = NULL;
    if (read_bool(in, binary)) {
      c = gh_gclust_read(in, binary);
      if (s->dim >= 0 && c->dim != s->dim)
        gh_istream_fail(in, "statistic %u has dimension %d, earlier ones %d", i, c->dim, s->dim);
    }
    gh_tree_stats_push(s, ev, (int32_t)len, c, what);
  }
}

void gh_tree_stats_read(const char *rxfilename, gh_tree_stats *s) {
  gh_istream *in = gh_istream_open(rxfilename);
  int binary = gh_read_binary_marker(in);
  gh_tree_stats_read_stream(in, binary, s);
  gh_istream_close(in);
}

void gh_tree_stats_write_stream(gh_ostream *out, int binary, const gh_tree_stats *s) {
  FILE *fp = gh_ostream_fp(out);
  gh_write_token(out, binary, "BTS");
  write_uint32(out, binary, (uint32_t)s->num);
  for (int32_t i = 0; i < s->num; ++i) {
    const gh_tree_stat *t = &s->items[i];
    gh_write_token(out, binary, "EV");
    write_uint32(out, binary, (uint32_t)t->len);
    for (int32_t k = 0; k < t->len; ++k) {
      gh_write_int32(out, binary, t->ev[k].key);
      gh_write_int32(out, binary, t->ev[k].value);
    }
    if (!binary) putc('\n', fp);
    fputs(t->stats ? "T" : "F", fp);
    if (!binary) putc(' ', fp);
    if (t->stats) gh_gclust_write(out, binary, t->stats);
  }
  if (!binary) putc('\n', fp);
  gh_ostream_check(out, "tree statistics");
}

void gh_tree_stats_write(const char *wxfilename, int binary, const gh_tree_stats *s) {
  gh_ostream *out = gh_ostream_open(wxfilename);
  gh_write_binary_marker(out, binary);
  gh_tree_stats_write_stream(out, binary, s);
  gh_ostream_close(out);
}

static int cmp_item(const void *a, const void *b) {
  const gh_tree_stat *x = a, *y = b;
  int c = gh_event_compare(x->ev, x->len, y->ev, y->len);
  return c;
}

typedef struct { gh_tree_stat item; int64_t pos; } idx_item;
static int cmp_idx(const void *a, const void *b) {
  const idx_item *x = a, *y = b;
  int c = cmp_item(&x->item, &y->item);
  if (c) return c;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

void gh_tree_stats_sort_merge(gh_tree_stats *s) {
  if (s->num == 0) return;
  idx_item *v = gh_malloc((size_t)s->num * sizeof(idx_item));
  for (int32_t i = 0; i < s->num; ++i) {
    v[i].item = s->items[i];
    v[i].pos = i;
  }
  qsort(v, (size_t)s->num, sizeof(idx_item), cmp_idx);
  int32_t out = 0;
  for (int32_t i = 0; i < s->num; ++i) {
    gh_tree_stat *t = &v[i].item;
    if (out > 0 && !gh_event_compare(s->items[out - 1].ev, s->items[out - 1].len, t->ev, t->len)) {
      gh_tree_stat *first = &s->items[out - 1];
      if (!first->stats) {
        first->stats = t->stats;
      } else if (t->stats) {
        gh_gclust_add(first->stats, t->stats);
        gh_gclust_free(t->stats);
      }
      free(t->ev);
    } else {
      s->items[out++] = *t;
    }
  }
  s->num = out;
  free(v);
}

double gh_tree_stats_total_count(const gh_tree_stats *s) {
  double c = 0.0;
  for (int32_t i = 0; i < s->num; ++i)
    if (s->items[i].stats) c += s->items[i].stats->count;
  return c;
}
