/* event-map.c -- Kaldi EventMap read/write/map (see event-map.h; Kaldi
 * tree/event-map.cc). */
#include "tree/event-map.h"

#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"

#define MAX_DEPTH 10000
#define GH_MAX_TABLE (1 << 24) /* largest table node accepted on read */

gh_event_map *gh_event_map_const(int32_t answer) {
  gh_event_map *m = gh_calloc(1, sizeof(*m));
  m->kind = GH_EM_CONST;
  m->answer = answer;
  return m;
}

gh_event_map *gh_event_map_table(int32_t key, int32_t size, gh_event_map **children) {
  gh_event_map *m = gh_calloc(1, sizeof(*m));
  m->kind = GH_EM_TABLE;
  m->key = key;
  m->table_size = size;
  m->table = gh_calloc((size_t)(size > 0 ? size : 1), sizeof(gh_event_map *));
  if (size > 0 && children) memcpy(m->table, children, (size_t)size * sizeof(gh_event_map *));
  return m;
}

gh_event_map *gh_event_map_split(int32_t key, int32_t num_yes, const int32_t *yes_set, gh_event_map *yes,
                                 gh_event_map *no) {
  gh_event_map *m = gh_calloc(1, sizeof(*m));
  m->kind = GH_EM_SPLIT;
  m->key = key;
  m->num_yes = num_yes;
  m->yes_set = gh_malloc((size_t)(num_yes > 0 ? num_yes : 1) * sizeof(int32_t));
  if (num_yes > 0) memcpy(m->yes_set, yes_set, (size_t)num_yes * sizeof(int32_t));
  m->yes = yes;
  m->no = no;
  return m;
}

void gh_event_map_free(gh_event_map *m) {
  if (!m) return;
  if (m->kind == GH_EM_TABLE)
    for (int32_t i = 0; i < m->table_size; ++i) gh_event_map_free(m->table[i]);
  free(m->table);
  free(m->yes_set);
  gh_event_map_free(m->yes);
  gh_event_map_free(m->no);
  free(m);
}

gh_event_map *gh_event_map_copy(const gh_event_map *m) {
  if (!m) return NULL;
  switch (m->kind) {
    case GH_EM_CONST: return gh_event_map_const(m->answer);
    case GH_EM_TABLE: {
      gh_event_map *t = gh_event_map_table(m->key, m->table_size, NULL);
      for (int32_t i = 0; i < m->table_size; ++i) t->table[i] = gh_event_map_copy(m->table[i]);
      return t;
    }
    default:
      return gh_event_map_split(m->key, m->num_yes, m->yes_set, gh_event_map_copy(m->yes), gh_event_map_copy(m->no));
  }
}

/* Value of key in the sorted event, or 0 if absent. */
static int lookup(const gh_event_pair *ev, int32_t n, int32_t key, int32_t *value) {
  int32_t lo = 0, hi = n;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (ev[mid].key < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < n && ev[lo].key == key) {
    *value = ev[lo].value;
    return 1;
  }
  return 0;
}

static int in_set(const int32_t *set, int32_t n, int32_t v) {
  int32_t lo = 0, hi = n;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (set[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && set[lo] == v;
}

int gh_event_map_map(const gh_event_map *m, const gh_event_pair *ev, int32_t n, int32_t *answer) {
  while (m) {
    int32_t v;
    switch (m->kind) {
      case GH_EM_CONST: *answer = m->answer; return 1;
      case GH_EM_TABLE:
        if (!lookup(ev, n, m->key, &v) || v < 0 || v >= m->table_size) return 0;
        m = m->table[v];
        break;
      default:
        if (!lookup(ev, n, m->key, &v)) return 0;
        m = in_set(m->yes_set, m->num_yes, v) ? m->yes : m->no;
        break;
    }
  }
  return 0;
}

void gh_event_map_multimap(const gh_event_map *m, const gh_event_pair *ev, int32_t n, int32_t **out, int32_t *num,
                           int32_t *cap) {
  if (!m) return;
  int32_t v;
  switch (m->kind) {
    case GH_EM_CONST:
      if (*num == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        *out = gh_realloc(*out, (size_t)*cap * sizeof(int32_t));
      }
      (*out)[(*num)++] = m->answer;
      return;
    case GH_EM_TABLE:
      if (lookup(ev, n, m->key, &v)) {
        if (v >= 0 && v < m->table_size) gh_event_map_multimap(m->table[v], ev, n, out, num, cap);
      } else {
        for (int32_t i = 0; i < m->table_size; ++i) gh_event_map_multimap(m->table[i], ev, n, out, num, cap);
      }
      return;
    default:
      if (lookup(ev, n, m->key, &v)) {
        gh_event_map_multimap(in_set(m->yes_set, m->num_yes, v) ? m->yes : m->no, ev, n, out, num, cap);
      } else {
        gh_event_map_multimap(m->yes, ev, n, out, num, cap);
        gh_event_map_multimap(m->no, ev, n, out, num, cap);
      }
      return;
  }
}

int32_t gh_event_map_max_answer(const gh_event_map *m) {
  if (!m) return -1;
  int32_t best = -1, a;
  switch (m->kind) {
    case GH_EM_CONST: return m->answer;
    case GH_EM_TABLE:
      for (int32_t i = 0; i < m->table_size; ++i)
        if ((a = gh_event_map_max_answer(m->table[i])) > best) best = a;
      return best;
    default:
      best = gh_event_map_max_answer(m->yes);
      a = gh_event_map_max_answer(m->no);
      return a > best ? a : best;
  }
}

/* ---------------- I/O ---------------- */

static uint32_t read_uint32(gh_istream *in, int binary) {
  if (!binary) {
    const char *w = gh_read_token(in, 0);
    char *end;
    unsigned long long v = strtoull(w, &end, 10);
    if (*w == '\0' || *w == '-' || *end != '\0' || v > UINT32_MAX)
      gh_istream_fail(in, "reading EventMap: expected an unsigned 32-bit integer, got '%s'", gh_printable_token(w));
    return (uint32_t)v;
  }
  int c = gh_istream_getc(in);
  if (c != 0xFC) gh_istream_fail(in, "reading EventMap: expected uint32 (size byte 0xFC), got byte %d", c);
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

static gh_event_map *read_rec(gh_istream *in, int binary, int depth) {
  if (depth > MAX_DEPTH) gh_istream_fail(in, "reading EventMap: nesting deeper than %d", MAX_DEPTH);
  const char *tok = gh_read_token(in, binary);
  if (!strcmp(tok, "NULL")) return NULL;
  if (!strcmp(tok, "CE")) return gh_event_map_const(gh_read_int32(in, binary));
  if (!strcmp(tok, "TE")) {
    int32_t key = gh_read_int32(in, binary);
    uint32_t size = read_uint32(in, binary);
    if (size > (uint32_t)GH_MAX_TABLE) gh_istream_fail(in, "reading EventMap: table size %u too large", size);
    gh_istream_need(in, size, 4, "EventMap table entries");
    gh_expect_token(in, binary, "(");
    gh_event_map *m = gh_event_map_table(key, (int32_t)size, NULL);
    for (uint32_t i = 0; i < size; ++i) m->table[i] = read_rec(in, binary, depth + 1);
    gh_expect_token(in, binary, ")");
    return m;
  }
  if (!strcmp(tok, "SE")) {
    int32_t key = gh_read_int32(in, binary), ny = 0;
    int32_t *yes = gh_read_int32_vector_basic(in, binary, &ny);
    for (int32_t i = 1; i < ny; ++i)
      if (yes[i] <= yes[i - 1])
        gh_istream_fail(in, "reading EventMap: split set not sorted and unique (%d after %d)", yes[i], yes[i - 1]);
    gh_expect_token(in, binary, "{");
    gh_event_map *y = read_rec(in, binary, depth + 1);
    gh_event_map *n = read_rec(in, binary, depth + 1);
    if (!y || !n) gh_istream_fail(in, "reading EventMap: a split node has a NULL branch");
    gh_expect_token(in, binary, "}");
    gh_event_map *m = gh_event_map_split(key, ny, yes, y, n);
    free(yes);
    return m;
  }
  gh_istream_fail(in, "reading EventMap: expected CE, TE, SE or NULL, got '%s'", gh_printable_token(tok));
}

gh_event_map *gh_event_map_read(gh_istream *in, int binary) { return read_rec(in, binary, 0); }

void gh_event_map_write(gh_ostream *out, int binary, const gh_event_map *m) {
  FILE *fp = gh_ostream_fp(out);
  if (!m) {
    gh_write_token(out, binary, "NULL");
    return;
  }
  switch (m->kind) {
    case GH_EM_CONST:
      gh_write_token(out, binary, "CE");
      gh_write_int32(out, binary, m->answer);
      return;
    case GH_EM_TABLE:
      gh_write_token(out, binary, "TE");
      gh_write_int32(out, binary, m->key);
      write_uint32(out, binary, (uint32_t)m->table_size);
      gh_write_token(out, binary, "(");
      for (int32_t i = 0; i < m->table_size; ++i) gh_event_map_write(out, binary, m->table[i]);
      gh_write_token(out, binary, ")");
      if (!binary) putc('\n', fp);
      return;
    default:
      gh_write_token(out, binary, "SE");
      gh_write_int32(out, binary, m->key);
      gh_write_int32_vector_basic(out, binary, m->yes_set, m->num_yes);
      gh_write_token(out, binary, "{");
      gh_event_map_write(out, binary, m->yes);
      gh_event_map_write(out, binary, m->no);
      gh_write_token(out, binary, "}");
      if (!binary) putc('\n', fp);
      return;
  }
}
