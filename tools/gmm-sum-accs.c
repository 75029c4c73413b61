/* gmm-sum-accs -- sum GMM accumulator files (Kaldi gmmbin/gmm-sum-accs.cc,
 * also gmm-global-sum-accs / fgmm-global-sum-accs): per-pdf occupancies,
 * first- and second-order statistics, transition counts and the frame /
 * log-likelihood totals are added; all inputs must have the same shape.
 * A set of bare global accs is written back as a bare global acc. */
#include "base/gh-base.h"
#include "gmm/gmm.h"
#include "base/opts.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Sum multiple accumulated stats files for GMM training.\n"
      "Usage: gmm-sum-accs [options] <stats-out> <stats-in1> <stats-in2> ...\n"
      "e.g.:\n"
      " gmm-sum-accs 1.acc 1.1.acc 1.2.acc\n";
  int binary = 1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs < 2) gh_opts_usage_exit(po);
  const char *out = gh_opts_arg(po, 0);

  gh_accs_set sum;
  gh_accs_read(gh_opts_arg(po, 1), &sum);
  for (int i = 2; i < nargs; ++i) {
    gh_accs_set a;
    gh_accs_read(gh_opts_arg(po, i), &a);
    gh_accs_add(&sum, &a, gh_opts_arg(po, i));
    gh_accs_free(&a);
  }
  double frames = sum.total_frames;
  if (sum.global_form)
    gh_log("Summed %d stats, total count %.7g", nargs - 1, gh_accs_total_occupancy(&sum));
  else
    gh_log("Summed %d stats, total count %.7g, avg like/frame %.7g", nargs - 1, frames,
           frames > 0 ? sum.total_loglike / frames : 0.0);
  gh_accs_write(out, binary, &sum);
  gh_log("Written stats to %s", out);
  gh_accs_free(&sum);
  gh_opts_free(po);
  return 0;
}
