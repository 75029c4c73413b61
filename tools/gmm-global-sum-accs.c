/* gmm-global-sum-accs -- Kaldi's gmmbin/gmm-global-sum-accs: sum diagonal-covariance
 * global-GMM accumulators (<GMMACCS>); also used as an rxfilename pipe
 * ("gmm-global-sum-accs - 1.*.acc |", the output "-" is stdout).  The same
 * summation as gmm-sum-accs (lib/gmm/accs.c gh_accs_add).
 * Body: drivers/train/global-tools.c gh_sum_accs. */
#include <stdlib.h>

#include "base/gh-base.h"
#include "base/opts.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Sum multiple accumulated stats files for diagonal-covariance GMM training.\n"
      "Usage: gmm-global-sum-accs [options] stats-out stats-in1 stats-in2 ...\n"
      "e.g.: gmm-global-sum-accs 1.acc 1.1.acc 1.2.acc\n"
      "      gmm-global-est 1.mdl \"gmm-global-sum-accs - 1.*.acc |\" 2.mdl\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  gh_opts_bool(po, "binary", &binary, "Write accumulators in binary mode.");
  const int n = gh_opts_parse(po, argc, argv);
  if (n < 2) gh_opts_usage_exit(po);
  const char **in = gh_malloc(sizeof(char *) * (size_t)(n - 1));
  for (int i = 1; i < n; ++i) in[i - 1] = gh_opts_arg(po, i);
  const int rc = gh_sum_accs(GH_COV_DIAG, binary, gh_opts_arg(po, 0), n - 1, in);
  free(in);
  gh_opts_free(po);
  return rc;
}
