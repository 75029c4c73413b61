/* compile-questions -- compile phone-set questions for tree building
 * (Kaldi bin/compile-questions.cc): the same questions for every phone
 * position of the context window, and the pdf-class questions {0}, {0,1},
 * ... up to the largest number of pdf-classes in the topology, written as
 * Kaldi's Questions object (the .qst file, byte-identical to Kaldi's). */
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "base/opts.h"
#include "hmm/transition.h"
#include "tree/event-map.h"
#include "tree/questions.h"

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

static const char *usage =
    "Compile questions\n"
    "Usage:  compile-questions [options] <topo> <questions-text-file> <questions-out>\n"
    "e.g.: \n"
    " compile-questions topo questions.txt questions.qst\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1;
  int32_t P = 1, N = 3, num_iters_refine = 0;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  gh_opts_int(po, "context-width", &N, "Context window size [must match acc-tree-stats].");
  gh_opts_int(po, "central-position", &P, "Central position in phone context window [must match acc-tree-stats]");
  gh_opts_int(po, "num-iters-refine", &num_iters_refine,
              "Number of iters of refining questions at each node.  >0 --> questions not refined");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  if (N < 1 || P < 0 || P >= N) gh_die("Invalid options: --central-position=%d, --context-width=%d", P, N);
  const char *topo_rx = gh_opts_arg(po, 0), *q_rx = gh_opts_arg(po, 1), *q_wx = gh_opts_arg(po, 2);

  gh_transition_model *topo = gh_topology_read(topo_rx);
  gh_intlists q;
  gh_intlists_read(q_rx, &q);
  int32_t dup = -1;
  int32_t removed = gh_intlists_sort_uniq(&q, &dup);
  if (dup >= 0) gh_die("%s: a question contains the same phone twice", q_rx);
  if (removed > 0) gh_warn("%d duplicate questions present in %s", removed, q_rx);

  /* Kaldi ProcessTopo: every phone asked about must be in the topology */
  int32_t seen_cap = 0, nseen = 0, *seen = NULL;
  for (int32_t i = 0; i < q.n; ++i)
    for (int32_t j = 0; j < q.lists[i].len; ++j) {
      if (nseen == seen_cap) seen = gh_realloc(seen, (size_t)(seen_cap = seen_cap ? 2 * seen_cap : 256) * sizeof(int32_t));
      seen[nseen++] = q.lists[i].v[j];
    }
  qsort(seen, (size_t)nseen, sizeof(int32_t), cmp_i32);
  int32_t *s = seen, ns = 0;
  for (int32_t i = 0; i < nseen; ++i)
    if (i == 0 || seen[i] != seen[i - 1]) s[ns++] = seen[i];
  int same = ns == topo->num_phones && (ns == 0 || !memcmp(s, topo->phones, (size_t)ns * sizeof(int32_t)));
  if (!same) {
    int32_t unknown = -1;
    for (int32_t i = 0; i < ns && unknown < 0; ++i) {
      int found = 0;
      for (int32_t k = 0; k < topo->num_phones && !found; ++k) found = topo->phones[k] == s[i];
      if (!found) unknown = s[i];
    }
    if (unknown >= 0)
      gh_die("%s: phone %d is asked about in the questions but is not in the topology %s", q_rx, unknown, topo_rx);
    gh_warn("ProcessTopo: phones seen in questions differ from those in topology: %d phones asked about, %d in %s",
            ns, topo->num_phones, topo_rx);
  }
  int32_t max_pdf_classes = 0;
  for (int32_t i = 0; i < topo->num_phones; ++i) {
    int32_t c = gh_topology_num_pdf_classes(topo, topo->phones[i]);
    if (c > max_pdf_classes) max_pdf_classes = c;
  }
  gh_log("Max # pdf classes is %d", max_pdf_classes);

  gh_questions qo = {0, NULL};
  for (int32_t n = 0; n < N; ++n) {
    gh_log("Setting questions for phonetic-context position %d", n);
    gh_questions_set(&qo, n, &q, num_iters_refine, 2);
  }
  gh_intlists pq = {0, NULL};
  int32_t *cls = gh_malloc((size_t)(max_pdf_classes > 0 ? max_pdf_classes : 1) * sizeof(int32_t));
  for (int32_t i = 0; i < max_pdf_classes - 1; ++i) {
    cls[i] = i;
    gh_intlists_push(&pq, cls, i + 1);
  }
  gh_log("Setting questions for hmm-position [hmm-position ranges from 0 to %d]", max_pdf_classes - 1);
  gh_questions_set(&qo, GH_KEY_PDF_CLASS, &pq, num_iters_refine, 2);
  gh_questions_write(q_wx, binary, &qo);
  gh_log("Wrote questions to %s", q_wx);
  free(cls);
  free(seen);
  gh_intlists_free(&pq);
  gh_intlists_free(&q);
  gh_questions_free(&qo);
  gh_transition_free(topo);
  gh_opts_free(po);
  return 0;
}
