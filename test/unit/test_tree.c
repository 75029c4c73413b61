/* test_tree.c -- lib/tree: EventMap lookups (Map, MultiMap, missing keys),
 * the monophone tree's pdf numbering, and byte-exact binary and text
 * round trips of a tree holding every node kind (NULL table slots included). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gh-test.h"
#include "base/gh-base.h"
#include "tree/context-dep.h"
#include "hmm/transition.h"

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

/* A triphone-like tree: split on the left phone (key 0) in {1, 2}; yes ->
 * table on pdf-class with slot 1 empty; no -> constant 7. */
static gh_ctx_dep *make_tree(void) {
  gh_event_map *tab[3] = {gh_event_map_const(3), NULL, gh_event_map_const(5)};
  int32_t yes[2] = {1, 2};
  gh_ctx_dep *c = gh_calloc(1, sizeof(*c));
  c->N = 3;
  c->P = 1;
  c->to_pdf = gh_event_map_split(0, 2, yes, gh_event_map_table(GH_KEY_PDF_CLASS, 3, tab), gh_event_map_const(7));
  return c;
}

static char *slurp(const char *path, long *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)*n + 1);
  if (fread(b, 1, (size_t)*n, f) != (size_t)*n) *n = -1;
  fclose(f);
  return b;
}

int main(void) {
  gh_init("test_tree");
  gh_ctx_dep *c = make_tree();
  int32_t pdf = -1;
  GH_TEST_OK(gh_ctx_dep_num_pdfs(c) == 8, "num pdfs = 1 + largest answer (%d)", gh_ctx_dep_num_pdfs(c));
  int32_t w1[3] = {2, 9, 4}, w2[3] = {3, 9, 4};
  GH_TEST_OK(gh_ctx_dep_compute(c, w1, 2, &pdf) && pdf == 5, "left phone in the yes-set, pdf-class 2 -> 5 (%d)", pdf);
  GH_TEST_OK(gh_ctx_dep_compute(c, w1, 0, &pdf) && pdf == 3, "pdf-class 0 -> 3 (%d)", pdf);
  GH_TEST_OK(!gh_ctx_dep_compute(c, w1, 1, &pdf), "empty table slot: no pdf");
  GH_TEST_OK(!gh_ctx_dep_compute(c, w1, 5, &pdf), "pdf-class beyond the table: no pdf");
  GH_TEST_OK(gh_ctx_dep_compute(c, w2, 1, &pdf) && pdf == 7, "left phone not in the yes-set -> 7 (%d)", pdf);
  /* MultiMap with the left phone unknown: both branches */
  gh_event_pair ev[2] = {{GH_KEY_PDF_CLASS, 0}, {1, 9}};
  int32_t *out = NULL, n = 0, cap = 0;
  gh_event_map_multimap(c->to_pdf, ev, 2, &out, &n, &cap);
  qsort(out, (size_t)n, sizeof(int32_t), cmp_i32);
  GH_TEST_OK(n == 2 && out[0] == 3 && out[1] == 7, "MultiMap without key 0 gives {3, 7} (%d answers)", n);
  free(out);

  /* round trips, binary and text, byte for byte */
  char path[256], path2[256];
  snprintf(path, sizeof path, "/tmp/test_tree.%d", (int)getpid());
  snprintf(path2, sizeof path2, "/tmp/test_tree2.%d", (int)getpid());
  for (int binary = 0; binary <= 1; ++binary) {
    gh_ctx_dep_write(path, binary, c);
    gh_commit_outputs();
    gh_ctx_dep *d = gh_ctx_dep_read(path);
    gh_ctx_dep_write(path2, binary, d);
    gh_commit_outputs();
    long n1, n2;
    char *a = slurp(path, &n1), *b = slurp(path2, &n2);
    GH_TEST_OK(a && b && n1 == n2 && n1 > 0 && !memcmp(a, b, (size_t)n1), "%s round trip byte-identical (%ld bytes)",
               binary ? "binary" : "text", n1);
    if (!binary)
      GH_TEST_OK(a && strstr(a, "TE -1 3 ( CE 3 NULL CE 5 ) \n") != NULL, "text: Kaldi's table form with NULL");
    GH_TEST_OK(gh_ctx_dep_compute(d, w2, 1, &pdf) && pdf == 7 && d->N == 3 && d->P == 1, "read-back tree maps alike");
    free(a);
    free(b);
    gh_ctx_dep_free(d);
  }
  remove(path);
  remove(path2);
  gh_ctx_dep_free(c);

  /* monophone tree: sets {1,2} (3 classes), {3} (1 class), {4} (2 classes):
   * pdfs numbered by set, then pdf-class */
  int32_t s1[2] = {1, 2}, s2[1] = {3}, s3[1] = {4};
  int32_t *sets[3] = {s1, s2, s3}, sizes[3] = {2, 1, 1}, ncls[5] = {0, 3, 3, 1, 2};
  gh_ctx_dep *m = gh_ctx_dep_monophone(3, sets, sizes, ncls, 4, "test");
  GH_TEST_OK(m->N == 1 && m->P == 0 && gh_ctx_dep_num_pdfs(m) == 6, "monophone tree: N 1, P 0, 6 pdfs (%d)",
             gh_ctx_dep_num_pdfs(m));
  int expect[5][3] = {{0}, {0, 1, 2}, {0, 1, 2}, {3, -1, -1}, {4, 5, -1}}, ok = 1;
  for (int32_t ph = 1; ph <= 4; ++ph)
    for (int32_t k = 0; k < ncls[ph]; ++k) {
      int32_t w[1] = {ph};
      if (!gh_ctx_dep_compute(m, w, k, &pdf) || pdf != expect[ph][k]) ok = 0;
    }
  GH_TEST_OK(ok, "monophone tree: shared phones 1, 2 share pdfs 0-2; phone 3 -> 3; phone 4 -> 4, 5");
  gh_ctx_dep_free(m);

  /* the fixture's monophone model and tree: every transition-id comes back
   * through (phone window, pdf-class) -> pdf -> tuple -> transition-id */
  char mdl[512], tree[512];
  snprintf(mdl, sizeof mdl, "%s/data/kaldi-fixtures/align/mono/final.mdl", gh_test_shared());
  snprintf(tree, sizeof tree, "%s/data/kaldi-fixtures/align/mono/tree", gh_test_shared());
  if (access(mdl, R_OK) == 0) {
    gh_transition_model *tm = gh_transition_read_file(mdl);
    gh_ctx_dep *t = gh_ctx_dep_read(tree);
    int bad = 0;
    for (int32_t tid = 1; tid <= tm->num_tids; ++tid) {
      int32_t ph = gh_transition_tid2phone(tm, tid), hs = gh_transition_tid2hmm_state(tm, tid), p2 = -1;
      int32_t cls = gh_transition_entry(tm, ph)->states[hs].forward_pdf_class;
      if (!gh_ctx_dep_compute(t, &ph, cls, &p2) || p2 != gh_transition_tid2pdf(tm, tid)) bad++;
      int32_t ts = gh_transition_tuple_to_tstate(tm, ph, hs, p2, p2);
      if (ts != gh_transition_tid2tstate(tm, tid) || gh_transition_pair_to_tid(tm, ts, gh_transition_tid2index(tm, tid)) != tid)
        bad++;
    }
    GH_TEST_OK(bad == 0, "mono/final.mdl: %d transition-ids rebuilt from tree + tuples (%d wrong)", tm->num_tids, bad);
    GH_TEST_OK(gh_transition_tuple_to_tstate(tm, 1, 0, 5, 5) == 0, "absent tuple -> transition-state 0");
    gh_ctx_dep_free(t);
    gh_transition_free(tm);
  } else {
    printf("# skipped the fixture check: %s not found (set GH_SHARED)\n", mdl);
  }
  return gh_test_done();
}
