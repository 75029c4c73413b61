/* fstarcsort -- sort the arcs of a binary FST (OpenFst's fstarcsort): by (ilabel,
 * olabel) or (olabel, ilabel), leaving equal arcs where OpenFst 1.7 leaves them, so the
 * output is byte-identical to OpenFst's. */
#include <string.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "io/fst.h"

static const char *usage =
    "Sorts arcs of an FST.\n"
    "\n"
    "Usage: fstarcsort [--sort_type=ilabel|olabel] [in.fst [out.fst]]\n"
    " e.g.: fstarcsort --sort_type=olabel L_unsorted.fst L.fst\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *type = "ilabel";
  gh_opts *po = gh_opts_new(usage);
  gh_opts_string(po, "sort_type", &type, "Comparison method, one of: \"ilabel\", \"olabel\"");
  int n = gh_opts_parse(po, argc, argv);
  if (n > 2) gh_opts_usage_exit(po);
  gh_fst_sort_type t;
  if (!strcmp(type, "ilabel")) t = GH_FST_SORT_ILABEL;
  else if (!strcmp(type, "olabel")) t = GH_FST_SORT_OLABEL;
  else gh_die("--sort_type='%s': expected ilabel or olabel", type);
  const char *in = n >= 1 ? gh_opts_arg(po, 0) : "-", *out = n >= 2 ? gh_opts_arg(po, 1) : "-";
  gh_fst f;
  gh_fst_init(&f);
  gh_fst_read_file(in, &f);
  gh_fst_arcsort(&f, t);
  gh_fst_write_file(out, &f);
  gh_fst_free(&f);
  gh_opts_free(po);
  return 0;
}
