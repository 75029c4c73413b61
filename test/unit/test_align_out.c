/* test_align_out.c -- the aligner's failure diagnosis and the TextGrid writer:
 * gh_dec_graph_min_frames against a brute-force search over frame counts on
 * random graphs with epsilon arcs and infinite costs; gh_align_diagnose's
 * reasons; gh_tg_fill's gap filling, clipping and errors; gh_tg_write's
 * layout and number format. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "decoder/align-report.h"
#include "gh-test.h"
#include "io/textgrid.h"

/* the fewest frames by brute force: the set of states reachable with exactly t
 * emitting arcs (and any epsilons), for t = 0 .. S + 1 */
static int32_t brute_min_frames(const gh_fst *f) {
  const int32_t S = f->nstates;
  if (f->start < 0 || S <= 0) return -1;
  unsigned char *cur = calloc((size_t)S, 1), *nxt = calloc((size_t)S, 1);
  cur[f->start] = 1;
  int32_t ans = -1;
  for (int32_t t = 0; t <= S + 1 && ans < 0; ++t) {
    for (int changed = 1; changed;) { /* epsilon closure */
      changed = 0;
      for (int32_t s = 0; s < S; ++s)
        if (cur[s])
          for (int32_t a = 0; a < f->states[s].narcs; ++a) {
            const gh_fst_arc *arc = &f->states[s].arcs[a];
            if (arc->ilabel == 0 && isfinite(arc->weight) && !cur[arc->nextstate]) cur[arc->nextstate] = changed = 1;
          }
    }
    for (int32_t s = 0; s < S; ++s)
      if (cur[s] && isfinite(f->states[s].final)) ans = t;
    memset(nxt, 0, (size_t)S);
    for (int32_t s = 0; s < S; ++s)
      if (cur[s])
        for (int32_t a = 0; a < f->states[s].narcs; ++a) {
          const gh_fst_arc *arc = &f->states[s].arcs[a];
          if (arc->ilabel != 0 && isfinite(arc->weight)) nxt[arc->nextstate] = 1;
        }
    unsigned char *tmp = cur;
    cur = nxt;
    nxt = tmp;
  }
  free(cur);
  free(nxt);
  return ans;
}

static void test_min_frames(void) {
  srand(7);
  int bad = 0, reach = 0, none = 0;
  for (int it = 0; it < 2000; ++it) {
    gh_fst f;
    gh_fst_init(&f);
    const int32_t S = 1 + rand() % 9;
    for (int32_t s = 0; s < S; ++s) gh_fst_add_state(&f);
    gh_fst_set_start(&f, rand() % S);
    for (int32_t s = 0; s < S; ++s) {
      if (rand() % 4 == 0) gh_fst_set_final(&f, s, rand() % 5 == 0 ? INFINITY : 0.5f);
      const int na = rand() % 4;
      for (int a = 0; a < na; ++a)
        gh_fst_add_arc(&f, s, rand() % 3 == 0 ? 0 : 1 + rand() % 3, 0, rand() % 8 == 0 ? INFINITY : 1.0f,
                       rand() % S);
    }
    gh_dec_graph g;
    gh_dec_graph_from_fst(&g, &f, 0);
    const int32_t got = gh_dec_graph_min_frames(&g), want = brute_min_frames(&f);
    if (got != want) {
      if (bad++ < 5) printf("# graph %d: min frames %d, brute force %d\n", it, got, want);
    }
    if (want >= 0) reach++;
    else none++;
    gh_dec_graph_free(&g);
    gh_fst_free(&f);
  }
  GH_TEST_OK(bad == 0 && reach > 300 && none > 300,
             "min frames = brute force on 2000 random graphs (%d with a final state reachable, %d without)", reach,
             none);
}

static void test_diagnose(void) {
  /* a chain of 3 emitting arcs with an epsilon shortcut over the second: 2 frames at least */
  gh_fst f;
  gh_fst_init(&f);
  for (int i = 0; i < 4; ++i) gh_fst_add_state(&f);
  gh_fst_set_start(&f, 0);
  gh_fst_add_arc(&f, 0, 1, 0, 0.0f, 1);
  gh_fst_add_arc(&f, 1, 2, 0, 0.0f, 2);
  gh_fst_add_arc(&f, 1, 0, 0, 0.0f, 2);
  gh_fst_add_arc(&f, 2, 3, 0, 0.0f, 3);
  gh_fst_set_final(&f, 3, 0.0f);
  gh_dec_graph g;
  gh_dec_graph_from_fst(&g, &f, 0);
  int32_t m = 0;
  GH_TEST_OK(gh_align_diagnose(&g, 1, 0, &m) == GH_ALIGN_TOO_FEW_FRAMES && m == 2, "1 frame < 2: too-few-frames");
  GH_TEST_OK(gh_align_diagnose(&g, 5, 0, &m) == GH_ALIGN_NO_PATH, "5 frames, exact search failed: no-path");
  GH_TEST_OK(gh_align_diagnose(&g, 3, 1, &m) == GH_ALIGN_BEAM, "3 frames, exact search reached: beam");
  gh_dec_graph_free(&g);
  gh_fst_set_final(&f, 3, INFINITY);
  gh_dec_graph_from_fst(&g, &f, 0);
  GH_TEST_OK(gh_align_diagnose(&g, 3, 0, &m) == GH_ALIGN_NO_PATH && m == -1, "no final state: no-path, min -1");
  GH_TEST_OK(!strcmp(gh_align_failure_name(GH_ALIGN_TOO_FEW_FRAMES), "too-few-frames") &&
                 !strcmp(gh_align_failure_name(GH_ALIGN_BEAM), "beam"),
             "reason names");
  gh_dec_graph_free(&g);
  gh_fst_free(&f);
}

static void test_textgrid(void) {
  gh_tg_interval in[] = {{0.06, 0.49, "AUTHOR"}, {0.48, 0.59, "OF"}, {0.59, 0.59, "Z"}, {0.7, 1.0, "say \"hi\""}};
  gh_tg_interval *out = NULL;
  int32_t n = 0;
  char err[256];
  int ok = gh_tg_fill(in, 4, 0.0, 1.25, &out, &n, err, sizeof err);
  /* "" 0-0.06, AUTHOR, OF clipped to 0.49-0.59, Z dropped, "" 0.59-0.7, say "hi", "" 1.0-1.25 */
  GH_TEST_OK(ok && n == 6 && out[0].xmax == 0.06 && !strcmp(out[0].text, "") && out[2].xmin == 0.49 &&
                 !strcmp(out[3].text, "") && out[3].xmin == 0.59 && out[3].xmax == 0.7 && out[5].xmin == 1.0 &&
                 out[5].xmax == 1.25,
             "fill: gaps, an overlap clipped, a zero-length interval dropped (%d intervals)", n);
  char *buf = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&buf, &len);
  gh_tg_tier t = {"words", n, out};
  gh_tg_write(fp, 0.0, 1.25, &t, 1);
  fclose(fp);
  GH_TEST_OK(strstr(buf, "File type = \"ooTextFile\"\nObject class = \"TextGrid\"\n\nxmin = 0 \nxmax = 1.25 \n"
                         "tiers? <exists> \nsize = 1 \nitem []: \n    item [1]:\n        class = \"IntervalTier\" \n"
                         "        name = \"words\" \n") == buf &&
                 strstr(buf, "        intervals: size = 6 \n        intervals [1]:\n            xmin = 0 \n"
                             "            xmax = 0.06 \n            text = \"\" \n") &&
                 strstr(buf, "text = \"say \"\"hi\"\"\" \n"),
             "write: Praat's long format, shortest numbers, quotes doubled");
  free(buf);
  free(out);
  gh_tg_interval outside[] = {{0.5, 2.0, "X"}};
  ok = gh_tg_fill(outside, 1, 0.0, 1.0, &out, &n, err, sizeof err);
  GH_TEST_OK(!ok && strstr(err, "lies outside"), "fill: an interval past the end is an error (%s)", err);
  ok = gh_tg_fill(NULL, 0, 0.0, 2.0, &out, &n, err, sizeof err);
  GH_TEST_OK(ok && n == 1 && out[0].xmax == 2.0, "fill: no intervals: one empty interval");
  free(out);
}

int main(void) {
  test_min_frames();
  test_diagnose();
  test_textgrid();
  return gh_test_done();
}
