/* gmm-info -- print a summary of a GMM model file (Kaldi gmmbin/gmm-info.cc;
 * also covers gmm-global-info / fgmm-global-info): for a .mdl the phones,
 * transition-ids and transition-states of its TransitionModel, and for every
 * model the number of pdfs, feature dimension, number of Gaussians and the
 * covariance type; the smallest Gaussian weight; with --print-weights the
 * weights of every pdf, with --accs (accumulators) or --occs (gmm-est
 * --write-occs) the occupancies.  Output on stdout, one "name value" per line. */
#include <stdio.h>

#include "base/gh-base.h"
#include "gmm/gmm.h"
#include "base/opts.h"
#include "hmm/transition.h"
#include "io/kaldi-io.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Print information about a GMM model: a Kaldi .mdl (TransitionModel + AmDiagGmm),\n"
      "a GMM set (<DIMENSION> <NUMPDFS> ...) or a global <DiagGMM>/<FullGMM>.\n"
      "Usage:  gmm-info [options] <model-in>\n"
      "e.g.:\n"
      " gmm-info 1.mdl\n"
      " gmm-info --print-weights --accs=1.acc 0.mdl       # weights and occupancies per pdf\n"
      " gmm-info --occs=final.occs final.mdl              # occupancies from gmm-est --write-occs\n"
      "Always printed besides Kaldi's lines: the smallest Gaussian weight and where it is.\n"
      "--print-weights: one line per pdf, \"pdf P weights [ w1 w2 ... ]\".  --accs: one line per\n"
      "pdf, \"pdf P occupancy O gaussian-occupancies [ o1 o2 ... ]\" (sums of posteriors, frames),\n"
      "and the total; --occs (a Kaldi float vector of per-pdf occupancies): \"pdf P occupancy O\".\n";
  gh_opts *po = gh_opts_new(usage);
  int print_weights = 0;
  const char *accs_rx = "", *occs_rx = "";
  gh_opts_bool(po, "print-weights", &print_weights, "Print the Gaussian weights of every pdf");
  int print_args = 1; /* Kaldi's generic option; train_mono.sh passes --print-args=false (we never echo them) */
  gh_opts_bool(po, "print-args", &print_args, "Print the command line arguments (to stderr); accepted for Kaldi's scripts");
  gh_opts_string(po, "accs", &accs_rx, "Accumulators of this model (gmm-acc-stats-gpu, gmm-sum-accs): print "
                                       "per-pdf and per-Gaussian occupancies");
  gh_opts_string(po, "occs", &occs_rx, "Per-pdf occupancies (gmm-est --write-occs, Kaldi vector): print them");
  if (gh_opts_parse(po, argc, argv) != 1) gh_opts_usage_exit(po);

  const char *model_rx = gh_opts_arg(po, 0);
  gh_gmm_set s;
  gh_gmm_set_read(model_rx, &s);
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
  int32_t wp = 0, wg = 0;
  for (int32_t p = 0; p < s.num_pdfs; ++p)
    for (int32_t g = 0; g < s.pdfs[p].num_gauss; ++g)
      if (s.pdfs[p].weights[g] < s.pdfs[wp].weights[wg]) { wp = p; wg = g; }
  printf("smallest gaussian weight %g (pdf %d, gaussian %d)\n", (double)s.pdfs[wp].weights[wg], wp, wg);
  if (print_weights)
    for (int32_t p = 0; p < s.num_pdfs; ++p) {
      printf("pdf %d weights [", p);
      for (int32_t g = 0; g < s.pdfs[p].num_gauss; ++g) printf(" %g", (double)s.pdfs[p].weights[g]);
      printf(" ]\n");
    }
  if (*accs_rx) {
    gh_accs_set a;
    gh_accs_read(accs_rx, &a);
    if (a.num_pdfs != s.num_pdfs) gh_die("%s has %d pdfs but %s has %d", accs_rx, a.num_pdfs, model_rx, s.num_pdfs);
    double tot = 0;
    for (int32_t p = 0; p < a.num_pdfs; ++p) {
      if (a.pdfs[p].num_gauss != s.pdfs[p].num_gauss)
        gh_die("%s, pdf %d: %d Gaussians but the model has %d (accumulators of another model?)", accs_rx, p,
               a.pdfs[p].num_gauss, s.pdfs[p].num_gauss);
      double o = 0;
      for (int32_t g = 0; g < a.pdfs[p].num_gauss; ++g) o += a.pdfs[p].occupancy[g];
      tot += o;
      printf("pdf %d occupancy %.10g gaussian-occupancies [", p, o);
      for (int32_t g = 0; g < a.pdfs[p].num_gauss; ++g) printf(" %.10g", a.pdfs[p].occupancy[g]);
      printf(" ]\n");
    }
    printf("total occupancy %.10g\n", tot);
    gh_accs_free(&a);
  }
  if (*occs_rx) {
    gh_istream *in = gh_istream_open(occs_rx);
    if (!in) gh_die("--occs: %s", gh_last_error());
    int binary = gh_read_binary_marker(in);
    gh_vector v = {0};
    gh_read_vector(in, binary, &v);
    gh_istream_close(in);
    if (v.dim != s.num_pdfs) gh_die("%s has %d occupancies but %s has %d pdfs", occs_rx, v.dim, model_rx, s.num_pdfs);
    double tot = 0;
    for (int32_t p = 0; p < v.dim; ++p) {
      printf("pdf %d occupancy %.10g\n", p, (double)v.data[p]);
      tot += v.data[p];
    }
    printf("total occupancy %.10g\n", tot);
    gh_vector_free(&v);
  }
  gh_gmm_set_free(&s);
  gh_opts_free(po);
  return 0;
}
