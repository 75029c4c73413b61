/* hmm-sum-accs -- sum HMM transition accumulators (from hmm-bw
 * --write-accs), e.g. of parallel jobs, as Kaldi's gmm-sum-accs. */
#include "base/gh-base.h"
#include "hmm/hmm.h"
#include "base/opts.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Sum HMM transition accumulators (hmm-bw --write-accs) of the same HMM set.\n"
      "Usage:  hmm-sum-accs [options] <accs-out> <accs-in1> [<accs-in2> ...]\n"
      "e.g.:   hmm-sum-accs 1.acc 1.1.acc 1.2.acc 1.3.acc\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  gh_opts_bool(po, "binary", &binary, "Write the accumulators in binary mode");
  int n = gh_opts_parse(po, argc, argv);
  if (n < 2) gh_opts_usage_exit(po);
  gh_hmm_accs sum, a;
  gh_hmm_accs_read(gh_opts_arg(po, 1), &sum);
  for (int i = 2; i < n; ++i) {
    gh_hmm_accs_read(gh_opts_arg(po, i), &a);
    gh_hmm_accs_add(&sum, &a, gh_opts_arg(po, i));
    gh_hmm_accs_free(&a);
  }
  gh_hmm_accs_write(gh_opts_arg(po, 0), binary, &sum);
  gh_log("summed %d accumulators: %lld utterances, %.0f frames, average log-likelihood %.4f per frame", n - 1,
         (long long)sum.num_utts, sum.total_frames, sum.total_frames ? sum.total_like / sum.total_frames : 0.0);
  gh_hmm_accs_free(&sum);
  gh_opts_free(po);
  return 0;
}
