/* gmm-global-copy -- Kaldi's gmmbin/gmm-global-copy: copy a diagonal global GMM,
 * e.g. between binary and text (lib/gmm/gmm.c readers and writers).
 * Body: lib/train/global-tools.c gh_global_convert_main. */
#include "base/gh-base.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Copy a diagonal-covariance GMM\n"
      "Usage:  gmm-global-copy [options] <model-in> <model-out>\n"
      "e.g.: gmm-global-copy --binary=false 1.model - | less\n";
  return gh_global_convert_main(argc, argv, GH_COV_DIAG, GH_COV_DIAG, usage);
}
