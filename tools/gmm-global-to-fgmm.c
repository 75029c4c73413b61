/* gmm-global-to-fgmm -- Kaldi's gmmbin/gmm-global-to-fgmm: a diagonal
 * global GMM as a full-covariance one (gh_gmm_diag_to_full, Kaldi
 * FullGmm::CopyFromDiagGmm). */
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm.h"
#include "gmm/gselect.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Convert single diagonal-covariance GMM to single full-covariance GMM.\n"
      "Usage: gmm-global-to-fgmm [options] 1.gmm 1.fgmm\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *in = gh_opts_arg(po, 0), *out = gh_opts_arg(po, 1);
  gh_gmm_set s;
  gh_gmm_set_read(in, &s);
  gh_gmm *g = gh_global_gmm(&s, GH_COV_DIAG, in);
  gh_gmm full = {0};
  gh_gmm_diag_to_full(&full, g);
  gh_gmm_free(g);
  *g = full;
  s.form = GH_SET_GLOBAL;
  gh_gmm_set_write(out, binary, &s);
  gh_log("Written full GMM to %s", out);
  gh_gmm_set_free(&s);
  gh_opts_free(po);
  return 0;
}
