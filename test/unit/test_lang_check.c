/* test_lang_check.c -- lib/decoder/lang-check.h on two small langs whose
 * phone ids overlap, as those of a dictionary with and without word-position
 * phones do: lang A has phones 1..6 and disambiguation symbols 7, 8; lang B
 * phones 1..3 and 4, 5.  Each lang's model (its topology) passes with its own
 * phones.txt, disambiguation symbols and lexicon; every mixed pair that can
 * tell dies with the expected line; the one that cannot (A's model, B's
 * lexicon, neither phones.txt nor disambiguation symbols) passes, as
 * documented. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gh-test.h"
#include "base/gh-base.h"
#include "decoder/lang-check.h"
#include "hmm/transition.h"
#include "io/fst.h"

static jmp_buf die_jmp;
static char die_msg[1024];
static void die_to_jmp(const char *msg) {
  snprintf(die_msg, sizeof die_msg, "%s", msg);
  longjmp(die_jmp, 1);
}

static char *write_tmp(const char *text) {
  char *path = gh_strdup("/tmp/test_lang_checkXXXXXX");
  int fd = mkstemp(path);
  if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
    printf("not ok - cannot write %s\n", path);
    exit(1);
  }
  close(fd);
  return path;
}

/* phones 1..n: a one-state topology */
static gh_transition_model *topo_of(int n) {
  char text[512], list[64] = "";
  for (int p = 1; p <= n; p++) snprintf(list + strlen(list), sizeof list - strlen(list), "%d ", p);
  snprintf(text, sizeof text,
           "<Topology>\n<TopologyEntry>\n<ForPhones>\n%s\n</ForPhones>\n"
           "<State> 0 <PdfClass> 0 <Transition> 0 0.5 <Transition> 1 0.5 </State>\n"
           "<State> 1 </State>\n</TopologyEntry>\n</Topology>\n",
           list);
  char *p = write_tmp(text);
  gh_transition_model *t = gh_topology_read(p);
  unlink(p);
  free(p);
  return t;
}

/* one word per phone 1..n (word w = phone w), then back to the start through disambiguation symbol dis
 * (0: an epsilon, as in L.fst) */
static void lexicon_of(gh_fst *L, int n, int32_t dis) {
  gh_fst_init(L);
  int32_t s0 = gh_fst_add_state(L), s1 = gh_fst_add_state(L);
  gh_fst_set_start(L, s0);
  for (int p = 1; p <= n; p++) gh_fst_add_arc(L, s0, p, p, 0.0f, s1);
  gh_fst_add_arc(L, s1, dis, 0, 0.0f, s0);
  gh_fst_set_final(L, s1, 0.0f);
}

/* Runs the check; returns "" when it passed, else the message it died with. */
static const char *check(const gh_transition_model *tm, const gh_fst *L, const int32_t *dis, int32_t nd,
                         const char *phones) {
  die_msg[0] = 0;
  gh_set_die_hook(die_to_jmp);
  if (setjmp(die_jmp) == 0) gh_lang_check_model(tm, "M", L, "L", dis, nd, "D", phones);
  gh_set_die_hook(NULL);
  return die_msg;
}

static const char *compat(const char *a, const char *b) {
  die_msg[0] = 0;
  gh_set_die_hook(die_to_jmp);
  if (setjmp(die_jmp) == 0) gh_phones_check_compatible(a, b);
  gh_set_die_hook(NULL);
  return die_msg;
}

#define HAS(msg, want) (strstr((msg), (want)) != NULL)

int main(void) {
  gh_transition_model *ta = topo_of(6), *tb = topo_of(3);
  gh_fst la, la0, lb;
  lexicon_of(&la, 6, 7);
  lexicon_of(&la0, 6, 0);
  lexicon_of(&lb, 3, 4);
  const int32_t da[2] = {7, 8}, db[2] = {4, 5};
  char *pa = write_tmp("<eps> 0\na 1\nb 2\nc 3\nd 4\ne 5\nf 6\n#0 7\n#1 8\n");
  char *pb = write_tmp("<eps> 0\na 1\nb 2\nc 3\n#0 4\n#1 5\n");
  char *pa2 = write_tmp("<eps> 0\na 1\nb 2\nc 3\nd 4\ne 5\nf 6\n#0 7\n");  /* other #n only */
  char *pax = write_tmp("<eps> 0\na 1\nx 2\nc 3\nd 4\ne 5\nf 6\n#0 7\n#1 8\n"); /* phone 2 renamed */
  const char *m;

  m = check(ta, &la, da, 2, pa);
  GH_TEST_OK(!*m, "lang A's model with A's phones.txt, disambiguation symbols and lexicon passes (%s)", m);
  m = check(tb, &lb, db, 2, pb);
  GH_TEST_OK(!*m, "lang B's model with B's passes (%s)", m);
  m = check(ta, &la0, NULL, 0, NULL);
  GH_TEST_OK(!*m, "A's model with A's lexicon without disambiguation symbols (L.fst) alone passes (%s)", m);
  m = check(ta, &la, NULL, 0, NULL);
  GH_TEST_OK(HAS(m, "input label 7") && HAS(m, "no disambiguation symbols given"),
             "A's model, A's L_disambig.fst without its disambiguation symbols: %s", m);

  m = check(ta, &lb, db, 2, pb);
  GH_TEST_OK(HAS(m, ": phone 4 of the model M is the symbol '#0' there (the table has 3 phones, the model 6: 1 .. 6)"),
             "A's model, B's phones.txt: %s", m);
  m = check(ta, &lb, db, 2, NULL);
  GH_TEST_OK(HAS(m, "D: disambiguation symbol 4 is phone 4 of the model M (6 phones, 1 .. 6): the lang has fewer "
                    "phones than the model"),
             "A's model, B's disambiguation symbols: %s", m);
  m = check(ta, &lb, NULL, 0, NULL);
  GH_TEST_OK(!*m, "A's model, B's lexicon alone: cannot tell (documented), passes (%s)", m);

  m = check(tb, &la, da, 2, pa);
  GH_TEST_OK(HAS(m, ": phone 4 'd' is not a phone of the model M (the table has 6 phones, the model 3: 1 .. 3)"),
             "B's model, A's phones.txt: %s", m);
  m = check(tb, &la, da, 2, NULL);
  GH_TEST_OK(HAS(m, "the lexicon FST L has input label 4 on an arc of state 0: neither a phone of the model nor a "
                    "disambiguation symbol (the model M has 3 phones, 1 .. 3; D)"),
             "B's model, A's lexicon: %s", m);
  m = check(tb, &la, NULL, 0, NULL);
  GH_TEST_OK(HAS(m, "input label 4") && HAS(m, "no disambiguation symbols given"),
             "B's model, A's lexicon, no disambiguation symbols: %s", m);

  m = compat(pa, pa2);
  GH_TEST_OK(!*m, "phones.txt that differ in #n only are compatible (%s)", m);
  m = compat(pa, pax);
  GH_TEST_OK(HAS(m, "are not compatible: id 2 is 'b' in the first, 'x' in the second"), "a renamed phone: %s", m);
  m = compat(pa, pb);
  GH_TEST_OK(HAS(m, "are not compatible: id 4 is 'd' in the first, no phone in the second"), "fewer phones: %s", m);

  unlink(pa), unlink(pb), unlink(pa2), unlink(pax);
  free(pa), free(pb), free(pa2), free(pax);
  gh_fst_free(&la);
  gh_fst_free(&la0);
  gh_fst_free(&lb);
  gh_transition_free(ta);
  gh_transition_free(tb);
  return gh_test_done();
}
