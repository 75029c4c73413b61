/* fgmm-global-to-gmm -- Kaldi's fgmmbin/fgmm-global-to-gmm: a full-covariance
 * global GMM as a diagonal one (gh_gmm_full_to_diag, Kaldi
 * DiagGmm::CopyFromFullGmm). */
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm.h"
#include "gmm/gselect.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Convert single full-covariance GMM to single diagonal-covariance GMM.\n"
      "Usage: fgmm-global-to-gmm [options] 1.fgmm 1.gmm\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *in = gh_opts_arg(po, 0), *out = gh_opts_arg(po, 1);
  gh_gmm_set s;
  gh_gmm_set_read(in, &s);
  gh_gmm *g = gh_global_gmm(&s, GH_COV_FULL, in);
  gh_gmm diag = {0};
  gh_gmm_full_to_diag(&diag, g);
  gh_gmm_free(g);
  *g = diag;
  s.form = GH_SET_GLOBAL;
  gh_gmm_set_write(out, binary, &s);
  gh_log("Written diagonal GMM to %s", out);
  gh_gmm_set_free(&s);
  gh_opts_free(po);
  return 0;
}
