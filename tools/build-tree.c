/* build-tree -- train a phonetic decision tree (Kaldi bin/build-tree.cc,
 * tree/build-tree.cc): greedy splitting of the roots of roots.int by the
 * compiled questions up to --max-leaves or while a split gains more than
 * --thresh, then bottom-up clustering of the leaves within each root
 * (--cluster-thresh; -1: the smallest split gain) and rounding of the leaf
 * count to a multiple of 8.  Kaldi's algorithm, arithmetic and order
 * (lib/tree/build-tree.c), so the tree is Kaldi's byte for byte. */
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "base/opts.h"
#include "hmm/transition.h"
#include "tree/build-tree.h"
#include "tree/context-dep.h"
#include "tree/questions.h"
#include "tree/tree-stats.h"

static const char *usage =
    "Train decision tree\n"
    "Usage:  build-tree [options] <tree-stats-in> <roots-file> <questions-file> <topo-file> <tree-out>\n"
    "e.g.: \n"
    " build-tree treeacc roots.txt 1.qst topo tree\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1, round_num_leaves = 1;
  int32_t P = 1, N = 3, max_leaves = 0;
  float thresh = 300.0f, cluster_thresh = -1.0f;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  gh_opts_int(po, "context-width", &N, "Context window size [must match acc-tree-stats]");
  gh_opts_int(po, "central-position", &P, "Central position in context window [must match acc-tree-stats]");
  gh_opts_int(po, "max-leaves", &max_leaves, "Maximum number of leaves to be used in tree-building (if positive)");
  gh_opts_float(po, "thresh", &thresh, "Log-likelihood change threshold for tree-building");
  gh_opts_float(po, "cluster-thresh", &cluster_thresh,
                "Log-likelihood change threshold for clustering after tree-building.  0 means no clustering; -1 means "
                "use as a clustering threshold the likelihood change of the final split.");
  gh_opts_bool(po, "round-num-leaves", &round_num_leaves,
               "If true, then the number of leaves will be reduced to a multiple of 8 by clustering.");
  if (gh_opts_parse(po, argc, argv) != 5) gh_opts_usage_exit(po);
  if (N < 1 || P < 0 || P >= N) gh_die("Invalid options: --central-position=%d, --context-width=%d", P, N);
  const char *stats_rx = gh_opts_arg(po, 0), *roots_rx = gh_opts_arg(po, 1), *q_rx = gh_opts_arg(po, 2);
  const char *topo_rx = gh_opts_arg(po, 3), *tree_wx = gh_opts_arg(po, 4);

  gh_roots roots;
  gh_roots_read(roots_rx, &roots);
  gh_transition_model *topo = gh_topology_read(topo_rx);
  gh_tree_stats stats;
  gh_tree_stats_read(stats_rx, &stats);
  gh_log("Number of separate statistics is %d", stats.num);
  gh_questions q;
  gh_questions_read(q_rx, &q);

  int32_t max_phone = topo->num_phones > 0 ? topo->phones[topo->num_phones - 1] : 0;
  int32_t *ncls = gh_calloc((size_t)max_phone + 1, sizeof(int32_t));
  for (int32_t i = 0; i < topo->num_phones; ++i) ncls[topo->phones[i]] = gh_topology_num_pdf_classes(topo, topo->phones[i]);
  /* the statistics' phones must be in the roots file (Kaldi checks this after
   * building; a tree from another lang's statistics is refused first) */
  {
    char *in_roots = gh_calloc((size_t)max_phone + 2, 1);
    for (int32_t i = 0; i < roots.sets.n; ++i)
      for (int32_t j = 0; j < roots.sets.lists[i].len; ++j)
        if (roots.sets.lists[i].v[j] <= max_phone) in_roots[roots.sets.lists[i].v[j]] = 1;
    for (int32_t i = 0; i < stats.num; ++i)
      for (int32_t k = 0; k < stats.items[i].len; ++k)
        if (stats.items[i].ev[k].key == P) {
          int32_t p = stats.items[i].ev[k].value;
          if (p < 0 || p > max_phone || !in_roots[p])
            gh_die("%s: phone %d appears in the statistics but is not listed in the roots file %s (statistics of "
                   "another lang?)",
                   stats_rx, p, roots_rx);
        }
    free(in_roots);
  }

  /* questions about phones must name phones of the topology */
  for (int32_t k = 0; k < q.num_keys; ++k) {
    if (q.keys[k].key < 0) continue;
    if (q.keys[k].key >= N)
      gh_die("%s: questions for context position %d, but --context-width=%d", q_rx, q.keys[k].key, N);
    for (int32_t i = 0; i < q.keys[k].q.n; ++i)
      for (int32_t j = 0; j < q.keys[k].q.lists[i].len; ++j) {
        int32_t p = q.keys[k].q.lists[i].v[j];
        if (p != 0 && (p < 0 || p > max_phone || ncls[p] == 0))
          gh_die("%s: question %d of context position %d names phone %d, which is not in the topology %s", q_rx, i,
                 q.keys[k].key, p, topo_rx);
      }
  }
  gh_build_tree_opts o = {thresh, max_leaves, cluster_thresh, P, round_num_leaves};
  gh_build_tree_info info;
  gh_event_map *to_pdf = gh_build_tree(&q, &roots, ncls, max_phone + 1, &stats, &o, &info, stats_rx);
  gh_ctx_dep ctx = {N, P, to_pdf};
  gh_ctx_dep_write(tree_wx, binary, &ctx);

  /* Kaldi's closing checks */
  int32_t nall = 0;
  for (int32_t i = 0; i < roots.sets.n; ++i) nall += roots.sets.lists[i].len;
  if (nall != topo->num_phones) gh_warn("Mismatch between phone sets provided in roots file, and those in topology");
  char *seen = gh_calloc((size_t)max_phone + 1, 1);
  for (int32_t i = 0; i < stats.num; ++i)
    for (int32_t k = 0; k < stats.items[i].len; ++k)
      if (stats.items[i].ev[k].key == P) seen[stats.items[i].ev[k].value] = 1;
  char buf[4096];
  size_t off = 0;
  for (int32_t i = 0; i < roots.sets.n; ++i)
    for (int32_t j = 0; j < roots.sets.lists[i].len; ++j) {
      int32_t p = roots.sets.lists[i].v[j];
      if (!seen[p] && off < sizeof buf - 16) off += (size_t)snprintf(buf + off, sizeof buf - off, "%d ", p);
    }
  if (off > 0) gh_warn("Saw no stats for following phones: %s", buf);
  gh_log("Wrote tree");
  free(seen);
  free(ncls);
  gh_event_map_free(to_pdf);
  gh_questions_free(&q);
  gh_tree_stats_free(&stats);
  gh_transition_free(topo);
  gh_roots_free(&roots);
  gh_opts_free(po);
  return 0;
}
