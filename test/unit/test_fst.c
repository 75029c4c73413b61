/* test_fst.c -- lib/io/fst: building FSTs through the API, OpenFst's property word (the
 * expected values are what OpenFst 1.7.9's fstcompile / fstarcsort wrote for the same
 * text), the binary round trip, and reading Kaldi's golden L.fst. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/gh-base.h"
#include "io/fst.h"
#include "gh-test.h"

static void build_a(gh_fst *f) { /* fstcompile of "0 1 1 2 0.5 / 1 2 3 3 / 1 0 2 1 / 2" */
  gh_fst_compiler *c = gh_fst_compiler_new(f);
  gh_fst_compile_arc(c, 0, 1, 1, 2, 0.5f);
  gh_fst_compile_arc(c, 1, 2, 3, 3, GH_FST_ONE);
  gh_fst_compile_arc(c, 1, 0, 2, 1, GH_FST_ONE);
  gh_fst_compile_final(c, 2, GH_FST_ONE);
  gh_fst_compiler_free(c);
}

int main(void) {
  gh_set_deferred_commit(0);
  gh_fst f;
  gh_fst_init(&f);
  build_a(&f);
  GH_TEST_OK(f.nstates == 3 && f.start == 0 && gh_fst_num_arcs(&f) == 3, "compiled: 3 states, 3 arcs, start 0");
  GH_TEST_OK(f.props == 0x81aa820003ULL,
             "properties as fstcompile's (0x%llx)", (unsigned long long)f.props);
  gh_fst_arcsort(&f, GH_FST_SORT_OLABEL);
  GH_TEST_OK(f.props == 0x814a820003ULL, "after the olabel sort as fstarcsort's (0x%llx)", (unsigned long long)f.props);
  GH_TEST_OK(f.states[1].arcs[0].olabel == 1 && f.states[1].arcs[1].olabel == 3, "state 1's arcs sorted on olabel");

  gh_fst b;
  gh_fst_init(&b);
  int32_t s0 = gh_fst_add_state(&b), s1 = gh_fst_add_state(&b), s2 = gh_fst_add_state(&b);
  gh_fst_set_start(&b, s0);
  gh_fst_add_arc(&b, s0, 1, 1, GH_FST_ONE, s1);
  gh_fst_add_arc(&b, s1, 2, 2, GH_FST_ONE, s2);
  gh_fst_set_final(&b, s2, GH_FST_ONE);
  /* fstcompile of "0 1 1 1 / 1 2 2 2 / 2" wrote 0x6a5a810003 */
  GH_TEST_OK(b.props == 0x6a5a810003ULL, "an acceptor built state by state, as fstcompile's: 0x%llx", (unsigned long long)b.props);

  /* binary round trip */
  char path[] = "/tmp/test_fst.XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  gh_fst_write_file(path, &f);
  gh_fst r;
  gh_fst_init(&r);
  gh_fst_read_file(path, &r);
  int same = r.nstates == f.nstates && r.start == f.start && r.props == ((f.props & ~0x3ULL) | 3);
  for (int32_t s = 0; same && s < f.nstates; s++)
    same = r.states[s].final == f.states[s].final && r.states[s].narcs == f.states[s].narcs &&
           (f.states[s].narcs == 0 ||
            !memcmp(r.states[s].arcs, f.states[s].arcs, (size_t)f.states[s].narcs * sizeof(gh_fst_arc)));
  GH_TEST_OK(same, "write + read gives the same FST");
  unlink(path);

  /* Kaldi's golden L.fst (OpenFst 1.7.9) */
  char fix[1024], rx[1100];
  snprintf(fix, sizeof fix, "%s/data/kaldi-fixtures/align/lang/L.fst.gz", gh_test_shared());
  FILE *fp = fopen(fix, "rb");
  if (fp) {
    fclose(fp);
    snprintf(rx, sizeof rx, "%s", fix);
    gh_fst_read_file(rx, &r);
    GH_TEST_OK(r.nstates == 13672 && gh_fst_num_arcs(&r) == 20064 && r.start == 0, "golden L.fst: 13,672 states, 20,064 arcs");
    GH_TEST_OK(r.props == 0x8145420003ULL, "golden L.fst: its header's properties kept");
    GH_TEST_OK(r.states[1].final == 0.0f && r.states[0].final == GH_FST_ZERO, "golden L.fst: the loop state is final");
  } else {
    GH_TEST_OK(1, "# SKIP %s not found", fix);
  }
  gh_fst_free(&f);
  gh_fst_free(&b);
  gh_fst_free(&r);
  return gh_test_done();
}
