/* gmm-global-copy -- Kaldi's gmmbin/gmm-global-copy: copy a diagonal global GMM,
 * e.g. between binary and text (lib/gmm/gmm.c readers and writers).
 * Body: drivers/train/global-tools.c gh_global_convert. */
#include "base/gh-base.h"
#include "base/opts.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Copy a diagonal-covariance GMM\n"
      "Usage:  gmm-global-copy [options] <model-in> <model-out>\n"
      "e.g.: gmm-global-copy --binary=false 1.model - | less\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const int rc = gh_global_convert(GH_COV_DIAG, GH_COV_DIAG, binary, gh_opts_arg(po, 0), gh_opts_arg(po, 1));
  gh_opts_free(po);
  return rc;
}
