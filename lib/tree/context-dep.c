/* context-dep.c -- Kaldi ContextDependency read/write, Compute, GetPdfInfo
 * and the monophone tree (see context-dep.h; Kaldi tree/context-dep.cc,
 * tree/build-tree-utils.cc, its initial map over the roots). */
#include "tree/context-dep.h"

#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"

gh_ctx_dep *gh_ctx_dep_read_stream(gh_istream *in, int binary) {
  gh_expect_token(in, binary, "ContextDependency");
  int32_t N = gh_read_int32(in, binary), P = gh_read_int32(in, binary);
  if (N < 1 || N > 100 || P < 0 || P >= N)
    gh_istream_fail(in, "reading ContextDependency: bad context width N=%d / central position P=%d", N, P);
  const char *tok = gh_read_token(in, binary);
  if (!strcmp(tok, "ToLength")) { /* old files: a phone -> length map, unused */
    gh_event_map_free(gh_event_map_read(in, binary));
    tok = gh_read_token(in, binary);
  }
  if (strcmp(tok, "ToPdf"))
    gh_istream_fail(in, "reading ContextDependency: expected ToPdf, got '%s'", gh_printable_token(tok));
  gh_event_map *m = gh_event_map_read(in, binary);
  gh_expect_token(in, binary, "EndContextDependency");
  if (gh_event_map_max_answer(m) < 0) {
    gh_event_map_free(m);
    gh_istream_fail(in, "ContextDependency: the tree has no pdfs");
  }
  gh_ctx_dep *c = gh_calloc(1, sizeof(*c));
  c->N = N;
  c->P = P;
  c->to_pdf = m;
  return c;
}

gh_ctx_dep *gh_ctx_dep_read(const char *rxfilename) {
  gh_istream *in = gh_istream_open(rxfilename);
  if (!in) gh_die("reading tree: %s%s", gh_last_error(), gh_rspecifier_hint(rxfilename));
  int binary = gh_read_binary_marker(in);
  gh_ctx_dep *c = gh_ctx_dep_read_stream(in, binary);
  if (!binary) gh_skip_ws(in);
  if (gh_istream_peek(in) != -1)
    gh_warn("%s: unexpected data after the tree at offset %lld (ignored)", gh_istream_name(in),
            (long long)gh_istream_tell(in));
  gh_istream_close(in);
  return c;
}

void gh_ctx_dep_write_stream(gh_ostream *out, int binary, const gh_ctx_dep *c) {
  gh_write_token(out, binary, "ContextDependency");
  gh_write_int32(out, binary, c->N);
  gh_write_int32(out, binary, c->P);
  gh_write_token(out, binary, "ToPdf");
  gh_event_map_write(out, binary, c->to_pdf);
  gh_write_token(out, binary, "EndContextDependency");
}

void gh_ctx_dep_write(const char *wxfilename, int binary, const gh_ctx_dep *c) {
  gh_ostream *out = gh_ostream_open(wxfilename);
  gh_write_binary_marker(out, binary);
  gh_ctx_dep_write_stream(out, binary, c);
  gh_ostream_close(out);
}

void gh_ctx_dep_free(gh_ctx_dep *c) {
  if (!c) return;
  gh_event_map_free(c->to_pdf);
  free(c);
}

int32_t gh_ctx_dep_num_pdfs(const gh_ctx_dep *c) { return gh_event_map_max_answer(c->to_pdf) + 1; }

int gh_ctx_dep_compute(const gh_ctx_dep *c, const int32_t *window, int32_t pdf_class, int32_t *pdf) {
  gh_event_pair ev[101];
  ev[0].key = GH_KEY_PDF_CLASS;
  ev[0].value = pdf_class;
  for (int32_t i = 0; i < c->N; ++i) {
    if (window[i] < 0) return 0;
    ev[i + 1].key = i;
    ev[i + 1].value = window[i];
  }
  return gh_event_map_map(c->to_pdf, ev, c->N + 1, pdf);
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

static int cmp_pair(const void *a, const void *b) {
  const int32_t *x = a, *y = b;
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return x[1] < y[1] ? -1 : x[1] > y[1];
}

void gh_ctx_dep_pdf_info(const gh_ctx_dep *c, const int32_t *phones, int32_t num_phones,
                         const int32_t *num_pdf_classes, gh_pdf_info *info) {
  int32_t np = gh_ctx_dep_num_pdfs(c);
  info->num_pdfs = np;
  info->lens = gh_calloc((size_t)np, sizeof(int32_t));
  info->pairs = gh_calloc((size_t)np, sizeof(int32_t *));
  int32_t *caps = gh_calloc((size_t)np, sizeof(int32_t));
  int32_t *found = NULL, nfound = 0, cap = 0;
  for (int32_t i = 0; i < num_phones; ++i) {
    int32_t phone = phones[i];
    for (int32_t pos = 0; pos < num_pdf_classes[phone]; ++pos) {
      gh_event_pair ev[2] = {{GH_KEY_PDF_CLASS, pos}, {c->P, phone}};
      nfound = 0;
      gh_event_map_multimap(c->to_pdf, ev, 2, &found, &nfound, &cap);
      if (nfound > 1) qsort(found, (size_t)nfound, sizeof(int32_t), cmp_i32);
      if (nfound == 0)
        gh_warn("ContextDependency: no pdfs for pdf-class %d of phone %d (continuing, but this is a serious error)",
                pos, phone);
      for (int32_t j = 0; j < nfound; ++j) {
        if (j > 0 && found[j] == found[j - 1]) continue;
        int32_t pdf = found[j];
        if (info->lens[pdf] == caps[pdf]) {
          caps[pdf] = caps[pdf] ? 2 * caps[pdf] : 4;
          info->pairs[pdf] = gh_realloc(info->pairs[pdf], (size_t)caps[pdf] * 2 * sizeof(int32_t));
        }
        info->pairs[pdf][2 * info->lens[pdf]] = phone;
        info->pairs[pdf][2 * info->lens[pdf] + 1] = pos;
        info->lens[pdf]++;
      }
    }
  }
  for (int32_t p = 0; p < np; ++p)
    if (info->lens[p] > 1) qsort(info->pairs[p], (size_t)info->lens[p], 2 * sizeof(int32_t), cmp_pair);
  free(found);
  free(caps);
}

void gh_ctx_dep_pdf_info_free(gh_pdf_info *info) {
  for (int32_t p = 0; p < info->num_pdfs; ++p) free(info->pairs[p]);
  free(info->pairs);
  free(info->lens);
  memset(info, 0, sizeof(*info));
}

/* The monophone tree over sets[lo, hi) (P = 0, unshared roots), as Kaldi's build-tree-utils.cc builds it. */
static gh_event_map *monophone_map(int32_t *const *sets, const int32_t *sizes, int32_t lo, int32_t hi,
                              const int32_t *num_classes, int32_t *num_leaves, const char *what) {
  int32_t nsets = hi - lo, max_size = 0, max_phone = 0;
  for (int32_t i = lo; i < hi; ++i) {
    if (sizes[i] > max_size) max_size = sizes[i];
    if (sets[i][sizes[i] - 1] > max_phone) max_phone = sets[i][sizes[i] - 1];
  }
  if (nsets == 1) {
    int32_t max_len = 0;
    for (int32_t j = 0; j < sizes[lo]; ++j) {
      int32_t len = num_classes[sets[lo][j]];
      if (j > 0 && len != max_len)
        gh_warn("%s: phones %d and %d of one set have %d and %d pdf-classes (unusual, but not fatal)", what,
                sets[lo][0], sets[lo][j], max_len, len);
      if (len > max_len) max_len = len;
    }
    gh_event_map *m = gh_event_map_table(GH_KEY_PDF_CLASS, max_len, NULL);
    for (int32_t p = 0; p < max_len; ++p) m->table[p] = gh_event_map_const((*num_leaves)++);
    return m;
  }
  if (max_size == 1 && nsets <= 2 * max_phone) { /* table on the phone */
    gh_event_map *m = gh_event_map_table(0, max_phone + 1, NULL);
    for (int32_t i = lo; i < hi; ++i)
      m->table[sets[i][0]] = monophone_map(sets, sizes, i, i + 1, num_classes, num_leaves, what);
    return m;
  }
  int32_t half = lo + nsets / 2;
  gh_event_map *a = monophone_map(sets, sizes, lo, half, num_classes, num_leaves, what);
  gh_event_map *b = monophone_map(sets, sizes, half, hi, num_classes, num_leaves, what);
  int32_t n = 0;
  for (int32_t i = lo; i < half; ++i) n += sizes[i];
  int32_t *yes = gh_malloc((size_t)n * sizeof(int32_t));
  n = 0;
  for (int32_t i = lo; i < half; ++i)
    for (int32_t j = 0; j < sizes[i]; ++j) yes[n++] = sets[i][j];
  qsort(yes, (size_t)n, sizeof(int32_t), cmp_i32);
  gh_event_map *m = gh_event_map_split(0, n, yes, a, b);
  free(yes);
  return m;
}

gh_ctx_dep *gh_ctx_dep_monophone(int32_t num_sets, int32_t *const *sets, const int32_t *set_sizes,
                                 const int32_t *phone2num_pdf_classes, int32_t max_phone, const char *what) {
  if (num_sets <= 0) gh_die("%s: no phone sets", what);
  char *seen = gh_calloc((size_t)max_phone + 1, 1);
  for (int32_t i = 0; i < num_sets; ++i) {
    if (set_sizes[i] <= 0) gh_die("%s: phone set %d is empty", what, i + 1);
    for (int32_t j = 0; j < set_sizes[i]; ++j) {
      int32_t ph = sets[i][j];
      if (j > 0 && ph <= sets[i][j - 1]) gh_die("%s: phone set %d is not sorted and unique", what, i + 1);
      if (ph <= 0 || ph > max_phone || phone2num_pdf_classes[ph] <= 0)
        gh_die("%s: phone %d (set %d) is not in the topology", what, ph, i + 1);
      if (seen[ph]) gh_die("%s: phone %d appears in more than one set", what, ph);
      seen[ph] = 1;
    }
  }
  free(seen);
  int32_t leaves = 0;
  gh_ctx_dep *c = gh_calloc(1, sizeof(*c));
  c->N = 1;
  c->P = 0;
  c->to_pdf = monophone_map(sets, set_sizes, 0, num_sets, phone2num_pdf_classes, &leaves, what);
  return c;
}
