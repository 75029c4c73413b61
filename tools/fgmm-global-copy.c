/* fgmm-global-copy -- Kaldi's fgmmbin/fgmm-global-copy: copy a full-covariance global GMM,
 * e.g. between binary and text (lib/gmm/gmm.c readers and writers). */
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm.h"
#include "gmm/gselect.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Copy a full-covariance GMM\n"
      "Usage:  fgmm-global-copy [options] <model-in> <model-out>\n"
      "e.g.: fgmm-global-copy --binary=false 1.model - | less\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *in = gh_opts_arg(po, 0), *out = gh_opts_arg(po, 1);
  gh_gmm_set s;
  gh_gmm_set_read(in, &s);
  gh_global_gmm(&s, GH_COV_FULL, in);
  s.form = GH_SET_GLOBAL;
  gh_gmm_set_write(out, binary, &s);
  gh_log("Written model to %s", out);
  gh_gmm_set_free(&s);
  gh_opts_free(po);
  return 0;
}
