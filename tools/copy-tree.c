/* copy-tree -- copy a decision tree, converting between binary and text
 * (Kaldi bin/copy-tree.cc).  A binary copy of a Kaldi tree is
 * byte-identical; the output is written to a temp file and renamed. */
#include "base/gh-base.h"
#include "base/opts.h"
#include "tree/context-dep.h"

static const char *usage =
    "Copy decision tree (possibly changing binary/text format)\n"
    "Usage:  copy-tree [--binary=false] <tree-in> <tree-out>\n"
    "e.g.:\n"
    " copy-tree --binary=false exp/mono/tree tree.txt\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  gh_ctx_dep *c = gh_ctx_dep_read(gh_opts_arg(po, 0));
  gh_ctx_dep_write(gh_opts_arg(po, 1), binary, c);
  gh_ctx_dep_free(c);
  gh_opts_free(po);
  return 0;
}
