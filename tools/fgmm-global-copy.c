/* fgmm-global-copy -- Kaldi's fgmmbin/fgmm-global-copy: copy a full-covariance global GMM,
 * e.g. between binary and text (lib/gmm/gmm.c readers and writers).
 * Body: lib/train/global-tools.c gh_global_convert_main. */
#include "base/gh-base.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Copy a full-covariance GMM\n"
      "Usage:  fgmm-global-copy [options] <model-in> <model-out>\n"
      "e.g.: fgmm-global-copy --binary=false 1.model - | less\n";
  return gh_global_convert_main(argc, argv, GH_COV_FULL, GH_COV_FULL, usage);
}
