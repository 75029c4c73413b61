/* gmm-info -- print a summary of a GMM model file (Kaldi gmmbin/gmm-info.cc;
 * also covers gmm-global-info / fgmm-global-info): for a .mdl the phones,
 * transition-ids and transition-states of its TransitionModel, and for every
 * model the number of pdfs, feature dimension, number of Gaussians and the
 * covariance type.  Output on stdout, one "name value" per line. */
#include <stdio.h>

#include "base/gh-base.h"
#include "gmm/gmm.h"
#include "base/opts.h"
#include "hmm/transition.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Print information about a GMM model: a Kaldi .mdl (TransitionModel + AmDiagGmm),\n"
      "a GMM set (<DIMENSION> <NUMPDFS> ...) or a global <DiagGMM>/<FullGMM>.\n"
      "Usage:  gmm-info [options] <model-in>\n"
      "e.g.:\n"
      " gmm-info 1.mdl\n";
  gh_opts *po = gh_opts_new(usage);
  if (gh_opts_parse(po, argc, argv) != 1) gh_opts_usage_exit(po);

  gh_gmm_set s;
  gh_gmm_set_read(gh_opts_arg(po, 0), &s);
  int ndiag = 0, nfull = 0;
  for (int32_t p = 0; p < s.num_pdfs; ++p) {
    if (s.pdfs[p].type == GH_COV_FULL) ++nfull;
    else ++ndiag;
  }
  if (s.trans) {
    printf("number of phones %d\n", s.trans->num_phones);
    printf("number of pdfs %d\n", s.num_pdfs);
    printf("number of transition-ids %d\n", s.trans->num_tids);
    printf("number of transition-states %d\n", s.trans->num_tuples);
  } else {
    printf("number of pdfs %d\n", s.num_pdfs);
  }
  printf("feature dimension %d\n", s.dim);
  printf("number of gaussians %lld\n", (long long)gh_gmm_set_total_gauss(&s));
  printf("covariance type %s\n", nfull == 0 ? "diag" : ndiag == 0 ? "full" : "mixed");
  printf("model form %s\n", s.trans ? "kaldi-mdl" : s.form == GH_SET_GLOBAL ? "global" : "gmm-set");
  gh_gmm_set_free(&s);
  gh_opts_free(po);
  return 0;
}
