/* fgmm-global-copy -- Kaldi's fgmmbin/fgmm-global-copy: copy a full-covariance global GMM,
 * e.g. between binary and text (lib/gmm/gmm.c readers and writers).
 * Body: drivers/train/global-tools.c gh_global_convert. */
#include "base/gh-base.h"
#include "base/opts.h"
#include "train/global-tools.h"

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
  const int rc = gh_global_convert(GH_COV_FULL, GH_COV_FULL, binary, gh_opts_arg(po, 0), gh_opts_arg(po, 1));
  gh_opts_free(po);
  return rc;
}
