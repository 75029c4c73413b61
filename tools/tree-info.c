/* tree-info -- print the number of pdfs, context width and central position
 * of a decision tree (Kaldi bin/tree-info.cc; the tree is read by
 * lib/tree/context-dep.c). */
#include <stdio.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "tree/context-dep.h"

static const char *usage =
    "Print information about decision tree (mainly the number of pdfs), to stdout\n"
    "Usage:  tree-info <tree-in>\n"
    "e.g.:\n"
    " tree-info exp/mono/tree\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_opts *po = gh_opts_new(usage);
  if (gh_opts_parse(po, argc, argv) != 1) gh_opts_usage_exit(po);
  gh_ctx_dep *c = gh_ctx_dep_read(gh_opts_arg(po, 0));
  printf("num-pdfs %d\n", gh_ctx_dep_num_pdfs(c));
  printf("context-width %d\n", c->N);
  printf("central-position %d\n", c->P);
  if (fflush(stdout) != 0 || ferror(stdout)) gh_die("tree-info: error writing to standard output");
  gh_ctx_dep_free(c);
  gh_opts_free(po);
  return 0;
}
