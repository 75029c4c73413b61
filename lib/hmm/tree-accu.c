/* tree-accu.c -- see tree-accu.h (Kaldi hmm/tree-accu.cc). */
#include "hmm/tree-accu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"
#include "hmm/hmm-utils.h"

struct gh_tree_accu {
  gh_tree_accu_opts opts;
  int32_t *ci;          /* own copy of opts.ci_phones */
  int32_t dim;
  gh_tree_stats stats;  /* events in order of first appearance */
  int32_t *hash;        /* [hash_size] event index or -1 */
  uint32_t hash_size;   /* power of 2 */
  int32_t *ends;        /* scratch: phone ends */
  int32_t ends_cap;
};

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

int32_t *gh_parse_ci_phones(const char *s, int32_t *n) {
  *n = 0;
  if (!s || !*s) return NULL;
  size_t len = strlen(s);
  int32_t *v = gh_malloc((len / 2 + 1) * sizeof(int32_t));
  const char *p = s;
  for (;;) {
    char *end;
    errno = 0;
    long x = strtol(p, &end, 10);
    if (end == p || (*end != ':' && *end != '\0') || errno || x <= 0 || x > INT32_MAX)
      gh_die("Invalid --ci-phones option: '%s' (expected positive phone ids separated by ':')", s);
    v[(*n)++] = (int32_t)x;
    if (*end == '\0') break;
    p = end + 1;
  }
  qsort(v, (size_t)*n, sizeof(int32_t), cmp_i32);
  for (int32_t i = 1; i < *n; ++i)
    if (v[i] == v[i - 1]) gh_die("Invalid --ci-phones option: '%s' (phone %d twice)", s, v[i]);
  return v;
}

int32_t *gh_read_phone_map(const char *rx, int32_t *size) {
  gh_istream *in = gh_istream_open(rx);
  if (!in) gh_die("Error reading phone map from %s: %s", rx, gh_last_error());
  int32_t *map = NULL, cap = 0, line_no = 0, n = 0;
  while (!gh_istream_eof(in)) {
    char *line = gh_read_line(in), *end = NULL;
    line_no++;
    long v[3];
    int k = 0;
    const char *p = line;
    for (; k < 3; ++k) {
      while (*p == ' ' || *p == '\t') p++;
      if (!*p) break;
      errno = 0;
      v[k] = strtol(p, &end, 10);
      if (end == p || (*end && *end != ' ' && *end != '\t') || errno || v[k] <= 0 || v[k] > 100000000) {
        k = -1;
        break;
      }
      p = end;
    }
    if (k != 2)
      gh_die("Error reading phone map from %s: line %d is not \"old-phone new-phone\" (two positive integers): "
             "'%s'", rx, line_no, line);
    if (v[0] >= cap) {
      int32_t nc = cap ? cap : 64;
      while (nc <= v[0]) nc *= 2;
      map = gh_realloc(map, (size_t)nc * sizeof(int32_t));
      for (int32_t i = cap; i < nc; ++i) map[i] = -1;
      cap = nc;
    }
    if (map[v[0]] != -1)
      gh_die("Error reading phone map from %s: line %d maps phone %ld a second time", rx, line_no, v[0]);
    map[v[0]] = (int32_t)v[1];
    if (v[0] + 1 > n) n = (int32_t)v[0] + 1;
  }
  gh_istream_close(in);
  if (n == 0) gh_die("Read empty phone map from %s", rx);
  *size = n;
  return map;
}

int32_t gh_map_phone(const int32_t *map, int32_t size, int32_t phone) {
  if (phone == 0 || !map) return phone;
  return phone > 0 && phone < size ? map[phone] : -1;
}

gh_tree_accu *gh_tree_accu_new(const gh_tree_accu_opts *opts, int32_t dim) {
  if (opts->context_width < 1 || opts->context_width > 100 || opts->central_position < 0 ||
      opts->central_position >= opts->context_width)
    gh_die("Invalid options: --central-position=%d, --context-width=%d", opts->central_position,
           opts->context_width);
  gh_tree_accu *a = gh_calloc(1, sizeof(*a));
  a->opts = *opts;
  if (opts->num_ci_phones > 0) {
    a->ci = gh_malloc((size_t)opts->num_ci_phones * sizeof(int32_t));
    memcpy(a->ci, opts->ci_phones, (size_t)opts->num_ci_phones * sizeof(int32_t));
  }
  a->opts.ci_phones = a->ci;
  a->dim = dim;
  gh_tree_stats_init(&a->stats);
  a->hash_size = 1024;
  a->hash = gh_malloc(a->hash_size * sizeof(int32_t));
  memset(a->hash, 0xff, a->hash_size * sizeof(int32_t));
  return a;
}

void gh_tree_accu_free(gh_tree_accu *a) {
  if (!a) return;
  gh_tree_stats_free(&a->stats);
  free(a->hash);
  free(a->ci);
  free(a->ends);
  free(a);
}

static uint32_t hash_event(const gh_event_pair *ev, int32_t len) {
  uint32_t h = 2166136261u;
  for (int32_t i = 0; i < len; ++i) {
    h = (h ^ (uint32_t)ev[i].key) * 16777619u;
    h = (h ^ (uint32_t)ev[i].value) * 16777619u;
  }
  return h ^ (h >> 15);
}

static void rehash(gh_tree_accu *a) {
  a->hash_size *= 2;
  free(a->hash);
  a->hash = gh_malloc(a->hash_size * sizeof(int32_t));
  memset(a->hash, 0xff, a->hash_size * sizeof(int32_t));
  for (int32_t i = 0; i < a->stats.num; ++i) {
    uint32_t h = hash_event(a->stats.items[i].ev, a->stats.items[i].len) & (a->hash_size - 1);
    while (a->hash[h] >= 0) h = (h + 1) & (a->hash_size - 1);
    a->hash[h] = i;
  }
}

static int32_t find_or_add(gh_tree_accu *a, const gh_event_pair *ev, int32_t len) {
  uint32_t h = hash_event(ev, len) & (a->hash_size - 1);
  while (a->hash[h] >= 0) {
    const gh_tree_stat *t = &a->stats.items[a->hash[h]];
    if (!gh_event_compare(t->ev, t->len, ev, len)) return a->hash[h];
    h = (h + 1) & (a->hash_size - 1);
  }
  int32_t i = a->stats.num;
  gh_tree_stats_push(&a->stats, ev, len, gh_gclust_new(a->dim, (double)a->opts.var_floor), "tree statistics");
  a->hash[h] = i;
  if ((uint32_t)a->stats.num * 2 > a->hash_size) rehash(a);
  return i;
}

static int in_sorted(const int32_t *v, int32_t n, int32_t x) {
  int32_t lo = 0, hi = n;
  while (lo < hi) {
    int32_t m = lo + (hi - lo) / 2;
    if (v[m] < x) lo = m + 1;
    else hi = m;
  }
  return lo < n && v[lo] == x;
}

static int32_t tid2pdf_class(const gh_transition_model *tm, int32_t tid) {
  const gh_trans_tuple *t = &tm->tuples[tm->id2state[tid] - 1];
  const gh_hmm_state *s = &gh_transition_entry(tm, t->phone)->states[t->hmm_state];
  return gh_transition_is_self_loop(tm, tid) ? s->self_loop_pdf_class : s->forward_pdf_class;
}

static int32_t mapped(const gh_tree_accu *a, int32_t phone) {
  int32_t m = gh_map_phone(a->opts.phone_map, a->opts.phone_map_size, phone);
  if (m < 0) gh_die("%s: the phone map has no entry for phone %d",
                    a->opts.phone_map_name ? a->opts.phone_map_name : "--phone-map", phone);
  return m;
}

int32_t gh_tree_accu_unmapped_phone(const gh_tree_accu *a, const gh_transition_model *tm, const int32_t *ali,
                                    int32_t n) {
  if (!a->opts.phone_map) return 0;
  for (int32_t t = 0; t < n; ++t) {
    int32_t ph = gh_transition_tid2phone(tm, ali[t]);
    if (gh_map_phone(a->opts.phone_map, a->opts.phone_map_size, ph) < 0) return ph;
  }
  return 0;
}

int gh_tree_accu_events(gh_tree_accu *a, const gh_transition_model *tm, const int32_t *ali, int32_t n,
                        int32_t *ev_index) {
  int32_t nph = 0;
  if (!gh_split_to_phones(tm, ali, n, &a->ends, &nph)) return 0;
  const int32_t N = a->opts.context_width, P = a->opts.central_position;
  gh_event_pair ev[101];
  for (int32_t c = 0; c < nph; ++c) { /* c = i + P: the central instance */
    int32_t start = c > 0 ? a->ends[c - 1] : 0, end = a->ends[c];
    int32_t central = mapped(a, gh_transition_tid2phone(tm, ali[start]));
    int ctx_dep = !in_sorted(a->opts.ci_phones, a->opts.num_ci_phones, central);
    int32_t len = 1;
    for (int32_t j = 0; j < N; ++j) {
      int32_t k = c - P + j, phone = 0;
      if (k >= 0 && k < nph) phone = mapped(a, gh_transition_tid2phone(tm, ali[k > 0 ? a->ends[k - 1] : 0]));
      if (ctx_dep || j == P) {
        ev[len].key = j;
        ev[len].value = phone;
        len++;
      }
    }
    ev[0].key = GH_KEY_PDF_CLASS; /* -1 sorts first */
    for (int32_t t = start; t < end; ++t) {
      ev[0].value = tid2pdf_class(tm, ali[t]);
      ev_index[t] = find_or_add(a, ev, len);
    }
  }
  return 1;
}

int gh_tree_accu_utterance(gh_tree_accu *a, const gh_transition_model *tm, const int32_t *ali, int32_t n,
                           const float *feats, int32_t dim) {
  if (dim != a->dim) gh_die("tree statistics: features of dimension %d, accumulator of dimension %d", dim, a->dim);
  int32_t *idx = gh_malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
  int ok = gh_tree_accu_events(a, tm, ali, n, idx);
  if (ok)
    for (int32_t t = 0; t < n; ++t) gh_gclust_add_stats(a->stats.items[idx[t]].stats, feats + (int64_t)t * dim, 1.0f);
  free(idx);
  return ok;
}

int32_t gh_tree_accu_num_events(const gh_tree_accu *a) { return a->stats.num; }

gh_gclust *gh_tree_accu_stats(gh_tree_accu *a, int32_t i) { return a->stats.items[i].stats; }

void gh_tree_accu_take(gh_tree_accu *a, gh_tree_stats *out) {
  gh_tree_stats_sort_merge(&a->stats);
  *out = a->stats;
  out->dim = a->dim;
  gh_tree_stats_init(&a->stats);
  memset(a->hash, 0xff, a->hash_size * sizeof(int32_t));
}
