/* hmm-est -- re-estimate an HMM set's transition (and initial)
 * probabilities from summed accumulators (Rabiner 1989 eqs. 40a-b; Kaldi's
 * transition floor and min count), the M-step of hmm-bw. */
#include "base/gh-base.h"
#include "hmm/hmm.h"
#include "base/opts.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Re-estimate the transition and initial probabilities of an HMM set from accumulators\n"
      "(hmm-bw --write-accs, summed by hmm-sum-accs).\n"
      "Usage:  hmm-est [options] <hmm-in> <accs-in> <hmm-out>\n"
      "e.g.:   hmm-est words.0.hmm 1.acc words.1.hmm\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  gh_hmm_update_opts uo;
  gh_hmm_update_opts_default(&uo);
  gh_opts_bool(po, "binary", &binary, "Write the HMM set in binary mode");
  gh_opts_double(po, "transition-min-count", &uo.min_count, "Keep a state's transitions if its count is below this");
  gh_opts_double(po, "transition-floor", &uo.floor, "Floor of re-estimated transition probabilities");
  gh_opts_bool(po, "update-init", &uo.update_init, "Also re-estimate initial-state probabilities");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  gh_hmm_set set;
  gh_hmm_set_read(gh_opts_arg(po, 0), &set);
  gh_hmm_accs a;
  gh_hmm_accs_read(gh_opts_arg(po, 1), &a);
  gh_hmm_accs_check(&a, &set, gh_opts_arg(po, 1));
  int64_t kept = 0, done = gh_hmm_update(&set, &a, &uo, &kept);
  gh_log("re-estimated %lld transition distributions, kept %lld (count below %g); data: %lld utterances, "
         "average log-likelihood %.4f per frame over %.0f frames", (long long)done, (long long)kept, uo.min_count,
         (long long)a.num_utts, a.total_frames ? a.total_like / a.total_frames : 0.0, a.total_frames);
  gh_hmm_set_write(gh_opts_arg(po, 2), binary, &set);
  gh_hmm_accs_free(&a);
  gh_hmm_set_free(&set);
  gh_opts_free(po);
  return 0;
}
