/* gmm-mixup -- mix up a model's GMMs by occupancy (Kaldi gmmbin/gmm-mixup.cc,
 * AmDiagGmm::SplitByCount): Gaussians allocated to pdfs as occ^power, at
 * least min-count frames each, the heaviest Gaussian split first with
 * Kaldi's random perturbation (C library rand() from seed 1, as every Kaldi
 * process), so that on Kaldi's inputs the model is byte-identical to
 * Kaldi's.  --mix-down merges first (AmDiagGmm::MergeByCount: the same
 * per-pdf targets, then DiagGmm::Merge's greedy pairwise merging of the
 * pair that loses the least likelihood), as Kaldi, before any mix-up. */
#include <stdlib.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm.h"
#include "gmm/init-model.h"
#include "io/kaldi-io.h"

static const char *usage =
    "Does GMM mixing up (and Gaussian merging)\n"
    "Usage:  gmm-mixup [options] <model-in> <state-occs-in> <model-out>\n"
    "e.g. of mixing up:\n"
    " gmm-mixup --mix-up=4000 1.mdl 1.occs 2.mdl\n"
    "e.g. of merging:\n"
    " gmm-mixup --mix-down=2000 1.mdl 1.occs 2.mdl\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1;
  int32_t mixup = 0, mixdown = 0;
  float perturb = 0.01f, power = 0.2f, min_count = 20.0f;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  gh_opts_int(po, "mix-up", &mixup, "Increase number of mixture components to this overall target.");
  gh_opts_float(po, "min-count", &min_count, "Minimum count enforced while mixing up.");
  gh_opts_int(po, "mix-down", &mixdown, "If nonzero, merge mixture components to this target.");
  gh_opts_float(po, "power", &power, "If mixing up, power to allocate Gaussians to states.");
  gh_opts_float(po, "perturb-factor", &perturb, "While mixing up, perturb means by standard deviation times this "
                                                "factor.");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  if (mixdown < 0) gh_die("--mix-down=%d: must not be negative", mixdown);
  if (mixup < 0) gh_die("--mix-up=%d: must not be negative", mixup);
  const char *model_rx = gh_opts_arg(po, 0), *occs_rx = gh_opts_arg(po, 1), *model_wx = gh_opts_arg(po, 2);
  gh_gmm_set set;
  gh_gmm_set_read(model_rx, &set);
  if (!set.trans) gh_die("%s is not a Kaldi acoustic model (.mdl with a transition model)", model_rx);
  if (mixup != 0 || mixdown != 0) {
    gh_istream *in = gh_istream_open(occs_rx);
    if (!in) gh_die("cannot open %s: %s", occs_rx, gh_last_error());
    int occ_binary = gh_read_binary_marker(in);
    gh_vector occs = {0};
    gh_read_vector(in, occ_binary, &occs);
    gh_istream_close(in);
    if (occs.dim != set.num_pdfs)
      gh_die("Dimension of state occupancies %d (%s) does not match num-pdfs %d (%s)", occs.dim, occs_rx,
             set.num_pdfs, model_rx);
    if (mixdown != 0) {
      int64_t before = gh_gmm_set_total_gauss(&set);
      int64_t after = gh_gmm_set_merge_by_count_kaldi(&set, occs.data, mixdown, power, min_count);
      gh_log("Merged %d states with target = %d, power = %g and min_count = %g, merged from %lld to %lld",
             set.num_pdfs, mixdown, (double)power, (double)min_count, (long long)before, (long long)after);
    }
    if (mixup != 0) {
      int64_t before = gh_gmm_set_total_gauss(&set);
      srand(1);
      int64_t after = gh_gmm_set_split_by_count_kaldi(&set, occs.data, mixup, perturb, power, min_count);
      gh_log("Split %d states with target = %d, power = %g, perturb_factor = %g and min_count = %g, split #Gauss "
             "from %lld to %lld",
             set.num_pdfs, mixup, (double)power, (double)perturb, (double)min_count, (long long)before,
             (long long)after);
    }
    gh_vector_free(&occs);
  }
  gh_gmm_set_write(model_wx, binary, &set);
  gh_log("Written model to %s", model_wx);
  gh_gmm_set_free(&set);
  gh_opts_free(po);
  return 0;
}
