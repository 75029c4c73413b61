/* gmm-boost-silence -- scale the Gaussian weights of the pdfs of given
 * phones (Kaldi gmmbin/gmm-boost-silence.cc, GetPdfsForPhones): their
 * likelihoods rise by the factor; gconsts recomputed as Kaldi does
 * (lib/gmm/kaldi-gconst.c), so the output is byte-identical to Kaldi's. */
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm.h"
#include "gmm/kaldi-gconst.h"
#include "hmm/transition.h"

static const char *usage =
    "Modify GMM-based model to boost (by a certain factor) all\n"
    "probabilities associated with the specified phones (could be\n"
    "all silence phones, or just the ones used for optional silence).\n"
    "Note: this is done by modifying the GMM weights.  If the silence\n"
    "model shares a GMM with other models, then it will modify the GMM\n"
    "weights for all models that may correspond to silence.\n"
    "\n"
    "Usage:  gmm-boost-silence [options] <silence-phones-list> <model-in> <model-out>\n"
    "e.g.: gmm-boost-silence --boost=1.5 1:2:3 1.mdl 1_boostsil.mdl\n";

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

static int has(const int32_t *v, int32_t n, int32_t x) { return bsearch(&x, v, (size_t)n, sizeof(int32_t), cmp_i32) != NULL; }

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1;
  float boost = 1.5f;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  gh_opts_float(po, "boost", &boost, "Factor by which to boost silence probs");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *csl = gh_opts_arg(po, 0), *model_rx = gh_opts_arg(po, 1), *model_wx = gh_opts_arg(po, 2);
  if (!(boost > 0.0f) || !gh_isfinite_f(boost)) gh_die("--boost=%g: must be a positive number", (double)boost);

  int32_t *phones = NULL, nph = 0;
  if (*csl) {
    char *copy = gh_strdup(csl), *save = NULL;
    for (char *tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
      char *end;
      long v = strtol(tok, &end, 10);
      if (*end || v <= 0 || v > GH_MAX_PHONE) gh_die("bad silence-phones list '%s' ('%s' is not a phone id)", csl, tok);
      phones = gh_realloc(phones, (size_t)(nph + 1) * sizeof(int32_t));
      phones[nph++] = (int32_t)v;
    }
    free(copy);
    qsort(phones, (size_t)nph, sizeof(int32_t), cmp_i32);
    for (int32_t i = 1; i < nph; ++i)
      if (phones[i] == phones[i - 1]) gh_die("bad silence-phones list '%s': phone %d repeated", csl, phones[i]);
  } else {
    gh_warn("gmm-boost-silence: no silence phones specified, doing nothing.");
  }

  gh_gmm_set s;
  gh_gmm_set_read(model_rx, &s);
  if (!s.trans) gh_die("%s: not a Kaldi .mdl (no TransitionModel)", model_rx);
  const gh_transition_model *tm = s.trans;
  /* GetPdfsForPhones */
  char *sel = gh_calloc((size_t)s.num_pdfs + 1, 1);
  for (int32_t i = 0; i < tm->num_tuples; ++i)
    if (has(phones, nph, tm->tuples[i].phone)) {
      if (tm->tuples[i].forward_pdf >= s.num_pdfs || tm->tuples[i].self_loop_pdf >= s.num_pdfs)
        gh_die("%s: transition model and GMMs disagree (pdf %d of %d)", model_rx, tm->tuples[i].forward_pdf, s.num_pdfs);
      sel[tm->tuples[i].forward_pdf] = sel[tm->tuples[i].self_loop_pdf] = 1;
    }
  int shared = 0;
  for (int32_t i = 0; i < tm->num_tuples; ++i)
    if ((sel[tm->tuples[i].forward_pdf] || sel[tm->tuples[i].self_loop_pdf]) && !has(phones, nph, tm->tuples[i].phone))
      shared = 1;
  if (shared) gh_warn("The pdfs for the silence phones may be shared by other phones (note: this probably does not matter.)");
  int32_t npdfs = 0;
  for (int32_t p = 0; p < s.num_pdfs; ++p) {
    if (!sel[p]) continue;
    npdfs++;
    gh_gmm *g = &s.pdfs[p];
    for (int32_t k = 0; k < g->num_gauss; ++k) g->weights[k] *= boost;
    gh_gmm_kaldi_gconsts(g, model_rx);
  }
  gh_log("Boosted weights for %d pdfs, by factor of %g", npdfs, (double)boost);
  gh_gmm_set_write(model_wx, binary, &s);
  gh_log("Wrote model to %s", model_wx);
  free(sel);
  free(phones);
  gh_gmm_set_free(&s);
  gh_opts_free(po);
  return 0;
}
