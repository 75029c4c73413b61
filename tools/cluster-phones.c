/* cluster-phones -- cluster phones (or sets of phones) into sets for tree
 * questions (Kaldi bin/cluster-phones.cc, tree/build-tree.cc
 * AutomaticallyObtainQuestions / KMeansClusterPhones): the statistics of
 * the listed pdf-classes summed per phone set, then top-down binary k-means
 * clustering; every node of the cluster tree is a question.  The k-means
 * initialisations draw from rand() seeded as a fresh process is (srand(1)),
 * as Kaldi's Rand(): with glibc the draws, and the questions, are Kaldi's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "base/opts.h"
#include "tree/build-tree.h"
#include "tree/questions.h"
#include "tree/tree-stats.h"

static const char *usage =
    "Cluster phones (or sets of phones) into sets for various purposes\n"
    "Usage:  cluster-phones [options] <tree-stats-in> <phone-sets-in> <clustered-phones-out>\n"
    "e.g.: \n"
    " cluster-phones 1.tacc phonesets.txt questions.txt\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int32_t P = 1, N = 3, num_classes = -1;
  const char *pdf_class_list = "1", *mode = "questions";
  gh_opts *po = gh_opts_new(usage);
  gh_opts_int(po, "central-position", &P, "Central position in context window [must match acc-tree-stats]");
  gh_opts_int(po, "context-width", &N, "Does not have any effect-- included for scripting convenience.");
  gh_opts_string(po, "pdf-class-list", &pdf_class_list,
                 "Colon-separated list of HMM positions to consider [Default = 1: just central position for 3-state "
                 "models].");
  gh_opts_string(po, "mode", &mode,
                 "Mode of operation: \"questions\"->sets suitable for decision trees; \"k-means\"->k-means algorithm, "
                 "output k classes (set num-classes options)");
  gh_opts_int(po, "num-classes", &num_classes, "For k-means mode, number of classes.");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  if (P < 0) gh_die("Invalid option --central-position=%d", P);
  const char *stats_rx = gh_opts_arg(po, 0), *sets_rx = gh_opts_arg(po, 1), *out_wx = gh_opts_arg(po, 2);
  if (strcmp(mode, "questions") && strcmp(mode, "k-means"))
    gh_die("--mode=%s: expected \"questions\" or \"k-means\"", mode);

  /* --pdf-class-list: colon-separated integers */
  int32_t ncls = 0, *cls = gh_malloc((strlen(pdf_class_list) / 2 + 1) * sizeof(int32_t));
  for (const char *p = pdf_class_list;;) {
    char *end;
    errno = 0;
    long x = strtol(p, &end, 10);
    if (end == p || (*end != ':' && *end) || errno || x < 0 || x > INT32_MAX)
      gh_die("Invalid pdf-class-list string [expecting colon-separated list of integers]: %s", pdf_class_list);
    cls[ncls++] = (int32_t)x;
    if (!*end) break;
    p = end + 1;
  }

  gh_tree_stats stats;
  gh_tree_stats_read(stats_rx, &stats);
  gh_intlists sets;
  gh_intlists_read(sets_rx, &sets);
  if (sets.n == 0) gh_die("%s: no phone sets in phone sets file", sets_rx);
  for (int32_t i = 0; i < sets.n; ++i) {
    if (sets.lists[i].len == 0) gh_die("%s, line %d: empty phone set", sets_rx, i + 1);
    for (int32_t j = 0; j < sets.lists[i].len; ++j)
      if (sets.lists[i].v[j] <= 0) gh_die("%s, line %d: phone %d is not a positive phone id", sets_rx, i + 1, sets.lists[i].v[j]);
  }

  srand(1); /* Kaldi's Rand() in a fresh process */
  gh_intlists out;
  if (!strcmp(mode, "questions")) {
    if (num_classes != -1) gh_die("num-classes option is not (currently) compatible with \"questions\" mode.");
    gh_obtain_questions(&stats, &sets, cls, ncls, P, &out);
  } else {
    if (num_classes <= 1 || num_classes > sets.n)
      gh_die("num-classes invalid: num_classes is %d, number of phone sets is %d", num_classes, sets.n);
    gh_kmeans_cluster_phones(&stats, &sets, cls, ncls, P, num_classes, &out);
  }
  gh_intlists_write(out_wx, &out);
  gh_log("Wrote questions to %s", out_wx);
  gh_intlists_free(&out);
  gh_intlists_free(&sets);
  gh_tree_stats_free(&stats);
  free(cls);
  gh_opts_free(po);
  return 0;
}
