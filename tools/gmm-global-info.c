/* gmm-global-info -- Kaldi's gmmbin/gmm-global-info: print the number of
 * Gaussians and the feature dimension of a global GMM (diagonal; a
 * full-covariance one is accepted too). */
#include <stdio.h>

#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Write to standard output various properties of GMM model\n"
      "This is for a single diagonal GMM, e.g. as used for a UBM.\n"
      "Usage:  gmm-global-info [options] <gmm>\n"
      "e.g.:\n"
      " gmm-global-info 1.dubm\n"
      "See also: gmm-info, am-info\n";
  gh_opts *po = gh_opts_new(usage);
  if (gh_opts_parse(po, argc, argv) != 1) gh_opts_usage_exit(po);
  const char *in = gh_opts_arg(po, 0);
  gh_gmm_set s;
  gh_gmm_set_read(in, &s);
  if (s.num_pdfs != 1) gh_die("%s: expected a global GMM, found a set of %d pdfs", in, s.num_pdfs);
  printf("number of gaussians %d\n", s.pdfs[0].num_gauss);
  printf("feature dimension %d\n", s.dim);
  gh_gmm_set_free(&s);
  gh_opts_free(po);
  return 0;
}
