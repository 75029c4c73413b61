/* questions.c -- phone-set files, roots files and Kaldi's compiled
 * questions (see questions.h; Kaldi tree/build-tree-questions.cc,
 * tree/build-tree.cc ReadRootsFile). */
#include "tree/questions.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"

void gh_intlists_push(gh_intlists *l, const int32_t *v, int32_t len) {
  if ((l->n & (l->n - 1)) == 0) /* grow at powers of two */
    l->lists = gh_realloc(l->lists, (size_t)(l->n ? 2 * l->n : 1) * sizeof(gh_intlist));
  gh_intlist *t = &l->lists[l->n++];
  t->len = len;
  t->v = gh_malloc((size_t)(len > 0 ? len : 1) * sizeof(int32_t));
  if (len > 0) memcpy(t->v, v, (size_t)len * sizeof(int32_t));
}

void gh_intlists_free(gh_intlists *l) {
  for (int32_t i = 0; i < l->n; ++i) free(l->lists[i].v);
  free(l->lists);
  l->n = 0;
  l->lists = NULL;
}

/* Parses the integers of one line into *v (realloc'd); returns the count,
 * or -1 at a token that is not an integer (*bad points at it). */
static int32_t parse_ints(char *line, int32_t **v, int32_t *cap, char **bad) {
  int32_t n = 0;
  char *p = line;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') ++p;
    if (!*p) break;
    char *end;
    errno = 0;
    long x = strtol(p, &end, 10);
    if (end == p || (*end && *end != ' ' && *end != '\t' && *end != '\r' && *end != '\n') || errno ||
        x < INT32_MIN || x > INT32_MAX) {
      *bad = p;
      return -1;
    }
    if (n == *cap) *v = gh_realloc(*v, (size_t)(*cap = *cap ? 2 * *cap : 64) * sizeof(int32_t));
    (*v)[n++] = (int32_t)x;
    p = end;
  }
  return n;
}

void gh_intlists_read(const char *rxfilename, gh_intlists *out) {
  memset(out, 0, sizeof(*out));
  gh_istream *in = gh_istream_open(rxfilename);
  char *line;
  int32_t *v = NULL, cap = 0;
  int64_t lineno = 0;
  while (!gh_istream_eof(in)) {
    line = gh_read_line(in);
    ++lineno;
    char *bad;
    int32_t n = parse_ints(line, &v, &cap, &bad);
    if (n < 0) {
      char tok[48];
      snprintf(tok, sizeof tok, "%.40s", bad);
      tok[strcspn(tok, " \t\r\n")] = '\0';
      gh_die("%s, line %lld: '%s' is not an integer (expected lists of integers, one per line)", rxfilename,
             (long long)lineno, tok);
    }
    gh_intlists_push(out, v, n);
  }
  free(v);
  gh_istream_close(in);
}

void gh_intlists_write(const char *wxfilename, const gh_intlists *l) {
  gh_ostream *out = gh_ostream_open(wxfilename);
  FILE *fp = gh_ostream_fp(out);
  for (int32_t i = 0; i < l->n; ++i) {
    for (int32_t j = 0; j < l->lists[i].len; ++j) fprintf(fp, j ? " %d" : "%d", l->lists[i].v[j]);
    putc('\n', fp);
  }
  gh_ostream_close(out);
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

static int cmp_list(const void *a, const void *b) {
  const gh_intlist *x = a, *y = b;
  int32_t n = x->len < y->len ? x->len : y->len;
  for (int32_t i = 0; i < n; ++i)
    if (x->v[i] != y->v[i]) return x->v[i] < y->v[i] ? -1 : 1;
  return x->len < y->len ? -1 : x->len > y->len;
}

int32_t gh_intlists_sort_uniq(gh_intlists *l, int32_t *dup_phone_list) {
  *dup_phone_list = -1;
  for (int32_t i = 0; i < l->n; ++i) {
    qsort(l->lists[i].v, (size_t)l->lists[i].len, sizeof(int32_t), cmp_i32);
    for (int32_t j = 1; j < l->lists[i].len; ++j)
      if (l->lists[i].v[j] == l->lists[i].v[j - 1] && *dup_phone_list < 0) *dup_phone_list = i;
  }
  if (l->n == 0) return 0;
  qsort(l->lists, (size_t)l->n, sizeof(gh_intlist), cmp_list);
  int32_t out = 1;
  for (int32_t i = 1; i < l->n; ++i) {
    if (!cmp_list(&l->lists[out - 1], &l->lists[i])) free(l->lists[i].v);
    else l->lists[out++] = l->lists[i];
  }
  int32_t removed = l->n - out;
  l->n = out;
  return removed;
}

void gh_roots_read(const char *rxfilename, gh_roots *r) {
  memset(r, 0, sizeof(*r));
  gh_istream *in = gh_istream_open(rxfilename);
  char *line;
  int32_t *v = NULL, cap = 0, rcap = 0;
  int64_t lineno = 0;
  while (!gh_istream_eof(in)) {
    line = gh_read_line(in);
    ++lineno;
    char w1[32] = "", w2[32] = "";
    int off = 0;
    if (sscanf(line, "%31s %31s %n", w1, w2, &off) < 2 || (strcmp(w1, "shared") && strcmp(w1, "not-shared")) ||
        (strcmp(w2, "split") && strcmp(w2, "not-split")))
      gh_die("%s, line %lld: bad line in roots file (expected 'shared|not-shared split|not-split <phones>'): %s",
             rxfilename, (long long)lineno, line);
    char *bad;
    int32_t n = parse_ints(line + off, &v, &cap, &bad);
    if (n < 0) {
      char tok[48];
      snprintf(tok, sizeof tok, "%.40s", bad);
      tok[strcspn(tok, " \t\r\n")] = '\0';
      gh_die("%s, line %lld: '%s' is not a phone id (roots file lines are 'shared|not-shared split|not-split "
             "<phones>')", rxfilename, (long long)lineno, tok);
    }
    if (n > 0) qsort(v, (size_t)n, sizeof(int32_t), cmp_i32);
    int ok = n > 0 && v[0] > 0;
    for (int32_t j = 1; ok && j < n; ++j)
      if (v[j] == v[j - 1]) ok = 0;
    if (!ok)
      gh_die("%s, line %lld: bad line in roots file [empty, or contains non-positive or duplicate phone-ids]: %s",
             rxfilename, (long long)lineno, line);
    if (r->sets.n == rcap) {
      rcap = rcap ? 2 * rcap : 64;
      r->shared = gh_realloc(r->shared, (size_t)rcap * sizeof(int32_t));
      r->split = gh_realloc(r->split, (size_t)rcap * sizeof(int32_t));
    }
    r->shared[r->sets.n] = !strcmp(w1, "shared");
    r->split[r->sets.n] = !strcmp(w2, "split");
    gh_intlists_push(&r->sets, v, n);
  }
  free(v);
  gh_istream_close(in);
  if (r->sets.n == 0) gh_die("%s: empty roots file", rxfilename);
}

void gh_roots_free(gh_roots *r) {
  gh_intlists_free(&r->sets);
  free(r->shared);
  free(r->split);
  memset(r, 0, sizeof(*r));
}

const gh_key_questions *gh_questions_for_key(const gh_questions *q, int32_t key) {
  for (int32_t i = 0; i < q->num_keys; ++i)
    if (q->keys[i].key == key) return &q->keys[i];
  return NULL;
}

void gh_questions_set(gh_questions *qs, int32_t key, const gh_intlists *q, int32_t refine_iters,
                      int32_t refine_top_n) {
  int32_t i = 0;
  while (i < qs->num_keys && qs->keys[i].key < key) ++i;
  if (i == qs->num_keys || qs->keys[i].key != key) {
    qs->keys = gh_realloc(qs->keys, (size_t)(qs->num_keys + 1) * sizeof(gh_key_questions));
    memmove(&qs->keys[i + 1], &qs->keys[i], (size_t)(qs->num_keys - i) * sizeof(gh_key_questions));
    qs->num_keys++;
    memset(&qs->keys[i], 0, sizeof(gh_key_questions));
  } else {
    gh_intlists_free(&qs->keys[i].q);
  }
  gh_key_questions *k = &qs->keys[i];
  k->key = key;
  k->refine_iters = refine_iters;
  k->refine_top_n = refine_top_n;
  for (int32_t j = 0; j < q->n; ++j) gh_intlists_push(&k->q, q->lists[j].v, q->lists[j].len);
}

void gh_questions_free(gh_questions *q) {
  for (int32_t i = 0; i < q->num_keys; ++i) gh_intlists_free(&q->keys[i].q);
  free(q->keys);
  memset(q, 0, sizeof(*q));
}

void gh_questions_read(const char *rxfilename, gh_questions *q) {
  memset(q, 0, sizeof(*q));
  gh_istream *in = gh_istream_open(rxfilename);
  int binary = gh_read_binary_marker(in);
  const char *tok = gh_read_token(in, binary);
  if (strcmp(tok, "<Questions>")) gh_istream_fail_type(in, "compiled questions", "<Questions>", tok, NULL);
  for (;;) {
    tok = gh_read_token(in, binary);
    if (!strcmp(tok, "</Questions>")) break;
    if (strcmp(tok, "<Key>"))
      gh_istream_fail(in, "reading questions: expected <Key> or </Questions>, got '%s'", gh_printable_token(tok));
    int32_t key = gh_read_int32(in, binary);
    gh_expect_token(in, binary, "<QuestionsForKey>");
    int32_t n = gh_read_int32(in, binary);
    if (n < 0) gh_istream_fail(in, "reading questions of key %d: negative count %d", key, n);
    gh_intlists l = {0, NULL};
    for (int32_t i = 0; i < n; ++i) {
      int32_t len;
      int32_t *v = gh_read_int32_vector_basic(in, binary, &len);
      for (int32_t j = 1; j < len; ++j)
        if (v[j] <= v[j - 1]) gh_istream_fail(in, "question %d of key %d is not sorted and unique", i, key);
      gh_intlists_push(&l, v, len);
      free(v);
    }
    gh_expect_token(in, binary, "<RefineClustersOptions>");
    int32_t iters = gh_read_int32(in, binary), top_n = gh_read_int32(in, binary);
    gh_expect_token(in, binary, "</RefineClustersOptions>");
    gh_expect_token(in, binary, "</QuestionsForKey>");
    gh_questions_set(q, key, &l, iters, top_n);
    gh_intlists_free(&l);
  }
  gh_istream_close(in);
}

void gh_questions_write(const char *wxfilename, int binary, const gh_questions *q) {
  gh_ostream *out = gh_ostream_open(wxfilename);
  gh_write_binary_marker(out, binary);
  gh_write_token(out, binary, "<Questions>");
  for (int32_t i = 0; i < q->num_keys; ++i) {
    const gh_key_questions *k = &q->keys[i];
    gh_write_token(out, binary, "<Key>");
    gh_write_int32(out, binary, k->key);
    gh_write_token(out, binary, "<QuestionsForKey>");
    gh_write_int32(out, binary, k->q.n);
    for (int32_t j = 0; j < k->q.n; ++j) gh_write_int32_vector_basic(out, binary, k->q.lists[j].v, k->q.lists[j].len);
    gh_write_token(out, binary, "<RefineClustersOptions>");
    gh_write_int32(out, binary, k->refine_iters);
    gh_write_int32(out, binary, k->refine_top_n);
    gh_write_token(out, binary, "</RefineClustersOptions>");
    gh_write_token(out, binary, "</QuestionsForKey>");
  }
  gh_write_token(out, binary, "</Questions>");
  gh_ostream_close(out);
}
