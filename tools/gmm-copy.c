/* gmm-copy -- copy a GMM model file, converting between binary and text
 * (Kaldi gmmbin/gmm-copy.cc, gmm-global-copy, fgmm-global-copy).  Accepts a
 * Kaldi .mdl (TransitionModel + AmDiagGmm), a GMM set, or a global
 * <DiagGMM>/<FullGMM>, and writes it back in the same form; a binary copy of
 * a Kaldi-written file is byte-identical.  The output is written to a temp
 * file and renamed, so a failure never leaves a truncated model. */
#include "base/gh-base.h"
#include "gmm/gmm.h"
#include "base/opts.h"
#include "hmm/transition.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Copy a GMM model (Kaldi .mdl, GMM set, or global diagonal/full GMM), e.g. to\n"
      "convert it between binary and text.\n"
      "Usage:  gmm-copy [options] <model-in> <model-out>\n"
      "e.g.:\n"
      " gmm-copy --binary=false 1.mdl 1_txt.mdl\n";
  int binary = 1, copy_tm = 1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  gh_opts_bool(po, "copy-tm", &copy_tm, "Copy the transition model of a .mdl (if false, write the GMM set only)");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *in = gh_opts_arg(po, 0), *out = gh_opts_arg(po, 1);

  gh_gmm_set s;
  gh_gmm_set_read(in, &s);
  if (!copy_tm && s.trans) {
    gh_transition_free(s.trans);
    s.trans = NULL;
  }
  gh_gmm_set_write(out, binary, &s);
  gh_log("copied model %s (%d pdfs, %lld Gaussians) to %s", in, s.num_pdfs,
         (long long)gh_gmm_set_total_gauss(&s), out);
  gh_gmm_set_free(&s);
  gh_opts_free(po);
  return 0;
}
