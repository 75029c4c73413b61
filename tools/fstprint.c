/* fstprint -- print a binary FST as text (OpenFst's fstprint without symbol tables):
 * the start state first, tab-separated "src dst ilabel olabel [weight]" and
 * "state [final-weight]" lines, weights with 9 significant digits. */
#include <stdio.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "io/fst.h"
#include "io/kaldi-io.h"

static const char *usage =
    "Prints out binary FSTs in simple text format (OpenFst's vector FSTs of standard arcs;\n"
    "no symbol tables).\n"
    "\n"
    "Usage: fstprint [binary.fst [text.fst]]\n"
    " e.g.: fstprint data/lang/L.fst | head\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_opts *po = gh_opts_new(usage);
  int n = gh_opts_parse(po, argc, argv);
  if (n > 2) gh_opts_usage_exit(po);
  const char *in = n >= 1 ? gh_opts_arg(po, 0) : "-", *out = n >= 2 ? gh_opts_arg(po, 1) : "-";
  gh_fst f;
  gh_fst_init(&f);
  gh_fst_read_file(in, &f);
  gh_ostream *os = gh_ostream_open(out);
  gh_fst_print(gh_ostream_fp(os), &f, 9);
  gh_ostream_check(os, "FST text");
  gh_ostream_close(os);
  gh_fst_free(&f);
  gh_opts_free(po);
  return 0;
}
