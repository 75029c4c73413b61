/* sum-tree-stats -- sum tree-building statistics (Kaldi
 * bin/sum-tree-stats.cc): the union of the events of every input, equal
 * events added in argument order (the first file's statistics plus the
 * second's ...), as Kaldi does, so the output is byte-identical to Kaldi's. */
#include <stdio.h>
#include <stdlib.h>

#include "base/gh-base.h"
#include "base/opts.h"
#include "tree/tree-stats.h"

static const char *usage =
    "Sum statistics for phonetic-context tree building.\n"
    "Usage:  sum-tree-stats [options] tree-accs-out tree-accs-in1 tree-accs-in2 ...\n"
    "e.g.: \n"
    " sum-tree-stats treeacc 1.treeacc 2.treeacc 3.treeacc\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs < 2) gh_opts_usage_exit(po);
  gh_tree_stats sum;
  gh_tree_stats_init(&sum);
  for (int a = 1; a < nargs; ++a) {
    const char *rx = gh_opts_arg(po, a);
    gh_tree_stats s;
    gh_tree_stats_read(rx, &s);
    if (sum.dim >= 0 && s.dim >= 0 && s.dim != sum.dim) {
      char against[1024];
      snprintf(against, sizeof against, "the statistics of %s", gh_opts_arg(po, 1));
      gh_die_dim(rx, NULL, "tree statistics", s.dim, sum.dim, against);
    }
    for (int32_t i = 0; i < s.num; ++i) {
      gh_tree_stats_push(&sum, s.items[i].ev, s.items[i].len, s.items[i].stats, rx);
      s.items[i].stats = NULL;
    }
    gh_tree_stats_free(&s);
    gh_tree_stats_sort_merge(&sum); /* keeps the list short: merged as we go */
  }
  gh_log("Wrote summed accs ( %d individual stats)", sum.num);
  if (sum.num == 0) gh_die("no statistics in the inputs: nothing to write");
  gh_tree_stats_write(gh_opts_arg(po, 0), binary, &sum);
  gh_tree_stats_free(&sum);
  gh_opts_free(po);
  return 0;
}
