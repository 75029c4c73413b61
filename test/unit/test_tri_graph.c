/* test_tri_graph.c -- lib/decoder's training graphs with phone context:
 * on a small lexicon with optional silence between words, every path of the
 * graph is enumerated (self-loops aside) and checked against the lexicon's
 * phone sequences, counted independently: each sequence must occur exactly
 * once, and every phone's pdf must be the tree's for its window (left,
 * phone, right; 0 at the edges), where the tree gives every window its own
 * pdf.  Triphone (N 3, P 1), left biphone (2, 1), right biphone (2, 0) and
 * monophone trees. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gh-test.h"
#include "base/gh-base.h"
#include "decoder/training-graph.h"
#include "hmm/transition.h"
#include "tree/context-dep.h"

#define NPH 4 /* phones 1..4; 4 is the silence */

/* pdf of a window: its phones read as base-5 digits, the centre's - 1 first */
static int32_t pdf_of(int N, int P, const int32_t *win) {
  int32_t pdf = win[P] - 1;
  for (int k = 0; k < N; k++)
    if (k != P) pdf = pdf * (NPH + 1) + win[k];
  return pdf;
}

/* Nested tables over the keys: the centre first, then the others in order. */
static gh_event_map *build(int N, int P, int32_t *win, int depth) {
  int key = depth == 0 ? P : (depth <= P ? depth - 1 : depth);
  if (depth == N) return gh_event_map_const(pdf_of(N, P, win));
  gh_event_map *ch[NPH + 1];
  for (int v = 0; v <= NPH; v++) {
    if (key == P && v == 0) { ch[v] = NULL; continue; }
    win[key] = v;
    ch[v] = build(N, P, win, depth + 1);
  }
  return gh_event_map_table(key, NPH + 1, ch);
}

typedef struct {
  int32_t seqs[64][8];
  int32_t lens[64], counts[64];
  int n, bad_pdf, paths;
} found;

static void dfs(const gh_fst *g, const gh_transition_model *tm, int N, int P, int32_t s, int32_t *ph, int32_t *pdf,
                int len, found *f) {
  if (g->states[s].final != GH_FST_ZERO) {
    f->paths++;
    for (int i = 0; i < len; i++) {
      int32_t win[3], k = 0;
      for (int j = i - P; j < i - P + N; j++) win[k++] = j >= 0 && j < len ? ph[j] : 0;
      if (pdf[i] != pdf_of(N, P, win)) f->bad_pdf++;
    }
    int m;
    for (m = 0; m < f->n; m++)
      if (f->lens[m] == len && !memcmp(f->seqs[m], ph, sizeof(int32_t) * (size_t)len)) break;
    if (m == f->n && f->n < 64) memcpy(f->seqs[f->n], ph, sizeof(int32_t) * (size_t)len), f->lens[f->n++] = len;
    if (m < 64) f->counts[m]++;
  }
  for (int32_t a = 0; a < g->states[s].narcs; a++) {
    const gh_fst_arc *arc = &g->states[s].arcs[a];
    if (arc->nextstate == s || len >= 8) continue;
    ph[len] = gh_transition_tid2phone(tm, arc->ilabel);
    pdf[len] = gh_transition_tid2pdf(tm, arc->ilabel);
    dfs(g, tm, N, P, arc->nextstate, ph, pdf, len + 1, f);
  }
}

/* L: [SIL] w (SIL or not) w ... [SIL]; word 1 = phones 1 2, word 2 = phone 3 */
static void make_lexicon(gh_fst *L) {
  gh_fst_init(L);
  for (int i = 0; i < 5; i++) gh_fst_add_state(L);
  gh_fst_set_start(L, 0);
  gh_fst_add_arc(L, 0, 0, 0, 0.7f, 1);
  gh_fst_add_arc(L, 0, 4, 0, 0.7f, 1);
  gh_fst_add_arc(L, 1, 1, 1, 0.0f, 2);
  gh_fst_add_arc(L, 2, 2, 0, 0.0f, 3);
  gh_fst_add_arc(L, 1, 3, 2, 0.0f, 3);
  gh_fst_add_arc(L, 3, 0, 0, 0.7f, 1);
  gh_fst_add_arc(L, 3, 4, 0, 0.7f, 1);
  gh_fst_add_arc(L, 3, 4, 0, 0.7f, 4);
  gh_fst_set_final(L, 3, 0.7f);
  gh_fst_set_final(L, 4, 0.0f);
}

static void check(int N, int P, const gh_transition_model *topo) {
  int32_t win[3] = {0, 0, 0};
  gh_ctx_dep ctx = {N, P, build(N, P, win, 0)};
  gh_transition_model *tm = gh_transition_init(topo, &ctx, "test tree");
  gh_fst L, g;
  make_lexicon(&L);
  gh_fst_init(&g);
  gh_tgc *c = gh_tgc_new(tm, &ctx, &L, NULL, 0, 1.0f, 1.0f, "test lexicon");
  int32_t words[2] = {1, 2};
  char err[256];
  int ok = gh_tgc_compile(c, words, 2, &g, err, sizeof err);
  GH_TEST_OK(ok, "N=%d P=%d: graph of words 1 2 compiled", N, P);
  int32_t ph[8], pdf[8];
  found f;
  memset(&f, 0, sizeof f);
  if (ok) dfs(&g, tm, N, P, g.start, ph, pdf, 0, &f);
  /* expected: [4] 1 2 [4] 3 [4], each choice once: 8 sequences */
  int expect = 0, once = 1;
  for (int m = 0; m < 8; m++) {
    int32_t e[8], n = 0;
    if (m & 1) e[n++] = 4;
    e[n++] = 1, e[n++] = 2;
    if (m & 2) e[n++] = 4;
    e[n++] = 3;
    if (m & 4) e[n++] = 4;
    for (int k = 0; k < f.n; k++)
      if (f.lens[k] == n && !memcmp(f.seqs[k], e, sizeof(int32_t) * (size_t)n)) {
        expect++;
        once &= f.counts[k] == 1;
      }
  }
  GH_TEST_OK(f.n == 8 && expect == 8 && f.paths == 8 && once,
             "N=%d P=%d: the 8 lexicon phone sequences, each on one path (%d sequences, %d paths)", N, P, f.n,
             f.paths);
  GH_TEST_OK(f.bad_pdf == 0 && f.paths > 0, "N=%d P=%d: every phone's pdf is its window's (%d wrong)", N, P,
             f.bad_pdf);
  gh_tgc_free(c);
  gh_fst_free(&g);
  gh_transition_free(tm);
  gh_event_map_free(ctx.to_pdf);
}

int main(void) {
  char path[] = "/tmp/test_tri_graph_topoXXXXXX";
  int fd = mkstemp(path);
  const char *topo_text = "<Topology>\n<TopologyEntry>\n<ForPhones>\n1 2 3 4\n</ForPhones>\n"
                          "<State> 0 <PdfClass> 0 <Transition> 0 0.5 <Transition> 1 0.5 </State>\n"
                          "<State> 1 </State>\n</TopologyEntry>\n</Topology>\n";
  if (fd < 0 || write(fd, topo_text, strlen(topo_text)) != (ssize_t)strlen(topo_text)) {
    printf("not ok 1 - cannot write %s\n", path);
    return 1;
  }
  close(fd);
  gh_transition_model *topo = gh_topology_read(path);
  unlink(path);
  check(3, 1, topo);
  check(2, 1, topo);
  check(2, 0, topo);
  check(1, 0, topo);
  gh_transition_free(topo);
  return gh_test_done();
}
