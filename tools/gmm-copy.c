/* gmm-copy -- copy a GMM model file, converting between binary and text
 * (Kaldi gmmbin/gmm-copy.cc, gmm-global-copy, fgmm-global-copy).  Accepts a
 * Kaldi .mdl (TransitionModel + AmDiagGmm), a GMM set, or a global
 * <DiagGMM>/<FullGMM>, and writes it back in the same form; a binary copy of
 * a Kaldi-written file is byte-identical.  The output is written to a temp
 * file and renamed, so a failure never leaves a truncated model. */
#include <stdlib.h>

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
      " gmm-copy --binary=false 1.mdl 1_txt.mdl\n"
      " gmm-copy --split-gaussians kmeans.mdl 0.mdl   # pdf g = Gaussian g (ergodic HMM states)\n"
      "--split-gaussians: from a model of one pdf with G Gaussians (e.g. gmm-init --num-iters=0:\n"
      "k-means), write a GMM set of G one-Gaussian pdfs, pdf g = Gaussian g with weight 1 (the\n"
      "initial state GMMs of an ergodic HMM, as hmmlearn initialises its means by k-means).\n";
  int binary = 1, copy_tm = 1, split = 0;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  gh_opts_bool(po, "copy-tm", &copy_tm, "Copy the transition model of a .mdl (if false, write the GMM set only)");
  gh_opts_bool(po, "split-gaussians", &split, "One pdf per Gaussian of a one-pdf model (weights 1)");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *in = gh_opts_arg(po, 0), *out = gh_opts_arg(po, 1);

  gh_gmm_set s;
  gh_gmm_set_read(in, &s);
  if (!copy_tm && s.trans) {
    gh_transition_free(s.trans);
    s.trans = NULL;
  }
  if (split) {
    if (s.num_pdfs != 1) gh_die("%s: --split-gaussians needs a model of one pdf, this one has %d", in, s.num_pdfs);
    const gh_gmm *g = &s.pdfs[0];
    int32_t G = g->num_gauss, D = g->dim;
    int64_t C = gh_gmm_cov_size(g); /* per Gaussian: D (diag) or D(D+1)/2 (full) */
    double *w = gh_malloc(sizeof(double) * G), *mu = gh_malloc(sizeof(double) * G * D);
    double *cov = gh_malloc(sizeof(double) * G * C), one = 1.0;
    gh_gmm_get_moments(g, w, mu, cov);
    gh_gmm_set out_set = {0};
    out_set.dim = D;
    out_set.num_pdfs = G;
    out_set.form = GH_SET_AM;
    out_set.pdfs = gh_calloc(G, sizeof(gh_gmm));
    for (int32_t k = 0; k < G; ++k) {
      gh_gmm_init(&out_set.pdfs[k], g->type, 1, D);
      if (gh_gmm_set_moments(&out_set.pdfs[k], &one, mu + (int64_t)k * D, cov + k * C) != 0)
        gh_die("%s, Gaussian %d: %s", in, k, gh_last_error());
    }
    free(w); free(mu); free(cov);
    gh_gmm_set_free(&s);
    s = out_set;
  }
  gh_gmm_set_write(out, binary, &s);
  gh_log("copied model %s (%d pdfs, %lld Gaussians) to %s", in, s.num_pdfs,
         (long long)gh_gmm_set_total_gauss(&s), out);
  gh_gmm_set_free(&s);
  gh_opts_free(po);
  return 0;
}
