/* gmm-global-sum-accs -- Kaldi's gmmbin/gmm-global-sum-accs: sum diagonal-covariance
 * global-GMM accumulators (<GMMACCS>); also used as an rxfilename pipe
 * ("gmm-global-sum-accs - 1.*.acc |", the output "-" is stdout).  The same
 * summation as gmm-sum-accs (lib/gmm/accs.c gh_accs_add). */
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Sum multiple accumulated stats files for diagonal-covariance GMM training.\n"
      "Usage: gmm-global-sum-accs [options] stats-out stats-in1 stats-in2 ...\n"
      "e.g.: gmm-global-sum-accs 1.acc 1.1.acc 1.2.acc\n"
      "      gmm-global-est 1.mdl \"gmm-global-sum-accs - 1.*.acc |\" 2.mdl\n";
  int binary = 1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write accumulators in binary mode.");
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs < 2) gh_opts_usage_exit(po);
  const char *out = gh_opts_arg(po, 0);
  gh_accs_set sum;
  gh_accs_read(gh_opts_arg(po, 1), &sum);
  if (!sum.global_form || sum.pdfs[0].type != GH_COV_DIAG)
    gh_die("%s: not a diagonal-covariance global-GMM accumulator (<GMMACCS>)", gh_opts_arg(po, 1));
  for (int i = 2; i < nargs; ++i) {
    gh_accs_set a;
    gh_accs_read(gh_opts_arg(po, i), &a);
    gh_accs_add(&sum, &a, gh_opts_arg(po, i));
    gh_accs_free(&a);
  }
  gh_log("Summed %d stats, total count %.7g", nargs - 1, gh_accs_total_occupancy(&sum));
  gh_accs_write(out, binary, &sum);
  gh_log("Written stats to %s", out);
  gh_accs_free(&sum);
  gh_opts_free(po);
  return 0;
}
