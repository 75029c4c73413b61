/* gmm-sum-accs -- sum GMM accumulator files (Kaldi gmmbin/gmm-sum-accs.cc,
 * also gmm-global-sum-accs / fgmm-global-sum-accs): per-pdf occupancies,
 * first- and second-order statistics, transition counts and the frame /
 * log-likelihood totals are added; all inputs must have the same shape.
 * A set of bare global accs is written back as a bare global acc.
 * Body: drivers/train/global-tools.c gh_sum_accs. */
#include <stdlib.h>

#include "base/gh-base.h"
#include "base/opts.h"
#include "train/global-tools.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Sum multiple accumulated stats files for GMM training.\n"
      "Usage: gmm-sum-accs [options] <stats-out> <stats-in1> <stats-in2> ...\n"
      "e.g.:\n"
      " gmm-sum-accs 1.acc 1.1.acc 1.2.acc\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  const int n = gh_opts_parse(po, argc, argv);
  if (n < 2) gh_opts_usage_exit(po);
  const char **in = gh_malloc(sizeof(char *) * (size_t)(n - 1));
  for (int i = 1; i < n; ++i) in[i - 1] = gh_opts_arg(po, i);
  const int rc = gh_sum_accs(-1, binary, gh_opts_arg(po, 0), n - 1, in);
  free(in);
  gh_opts_free(po);
  return rc;
}
