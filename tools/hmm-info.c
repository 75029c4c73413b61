/* hmm-info -- print a summary of an HMM set (ours, doc/format.md "HMM
 * sets") or of a Kaldi transition model (Kaldi hmmbin/hmm-info.cc: a .mdl,
 * or a bare <TransitionModel> as copy-transition-model writes it).  Output on
 * stdout, one "name value" per line. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/gh-base.h"
#include "base/opts.h"
#include "hmm/hmm.h"
#include "hmm/transition.h"
#include "io/kaldi-io.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Print information about an HMM set (hmm-init-topo, hmm-bw, hmm-est, hmm-make-loop), or, as\n"
      "Kaldi's hmm-info, about a Kaldi transition model (a .mdl or a bare <TransitionModel>):\n"
      "phones, pdfs, transition-ids and transition-states.  For an HMM set: the number of HMMs,\n"
      "pdfs (1 + largest pdf id), states and arcs; one line per HMM (name, states, arcs, pdf ids,\n"
      "initial and exit states, word labels); with --print-transitions also its transition\n"
      "probabilities (not log).\n"
      "Usage:  hmm-info [options] <hmm-in>\n"
      "e.g.:   hmm-info exp/mono/final.hmm\n"
      "        hmm-info final.mdl          # Kaldi: number of phones, pdfs, transition-ids, ...\n";
  gh_opts *po = gh_opts_new(usage);
  int print_trans = 0;
  gh_opts_bool(po, "print-transitions", &print_trans, "Also print every HMM's initial, arc and exit probabilities");
  if (gh_opts_parse(po, argc, argv) != 1) gh_opts_usage_exit(po);
  const char *rx = gh_opts_arg(po, 0);

  gh_istream *in = gh_istream_open(rx);
  if (!in) gh_die("cannot open %s: %s%s", rx, gh_last_error(), gh_rspecifier_hint(rx));
  int binary = gh_read_binary_marker(in);
  const char *tok = gh_peek_token(in, binary);
  if (!strcmp(tok, "<TransitionModel>")) {
    /* Kaldi's hmm-info prints exactly these four lines. */
    gh_transition_model *tm = gh_transition_read(in, binary);
    gh_istream_close(in);
    printf("number of phones %d\n", tm->num_phones);
    printf("number of pdfs %d\n", tm->num_pdfs);
    printf("number of transition-ids %d\n", tm->num_tids);
    printf("number of transition-states %d\n", tm->num_tuples);
    gh_transition_free(tm);
    gh_opts_free(po);
    return 0;
  }
  if (strcmp(tok, "<HmmSet>"))
    gh_istream_fail_type(in, "an HMM set or a Kaldi model", "<HmmSet> or <TransitionModel>", tok, NULL);
  gh_hmm_set s;
  gh_hmm_set_read_stream(in, binary, &s);
  gh_istream_close(in);
  int64_t states = 0, arcs = 0;
  for (int32_t i = 0; i < s.num_hmms; ++i) {
    states += s.hmms[i].num_states;
    arcs += s.hmms[i].num_arcs;
  }
  printf("number of hmms %d\n", s.num_hmms);
  printf("number of pdfs %d\n", gh_hmm_set_num_pdfs(&s));
  printf("number of states %lld\n", (long long)states);
  printf("number of arcs %lld\n", (long long)arcs);
  for (int32_t i = 0; i < s.num_hmms; ++i) {
    const gh_hmm *h = &s.hmms[i];
    int32_t ninit = 0, nfinal = 0, nword = 0;
    for (int32_t j = 0; j < h->num_states; ++j) {
      ninit += h->init[j] > -INFINITY;
      nfinal += h->final[j] > -INFINITY;
      nword += h->word && h->word[j];
    }
    printf("hmm %s states %d arcs %d initial-states %d exit-states %d word-labels %d pdfs [", h->name, h->num_states,
           h->num_arcs, ninit, nfinal, nword);
    for (int32_t j = 0; j < h->num_states; ++j) printf(" %d", h->pdf[j]);
    printf(" ]\n");
    if (!print_trans) continue;
    for (int32_t j = 0; j < h->num_states; ++j) {
      printf("  state %d pdf %d", j, h->pdf[j]);
      if (h->init[j] > -INFINITY) printf(" init %.6g", exp((double)h->init[j]));
      for (int32_t a = 0; a < h->num_arcs; ++a)
        if (h->arcs[a].from == j) printf(" ->%d %.6g", h->arcs[a].to, exp((double)h->arcs[a].logp));
      if (h->final[j] > -INFINITY) printf(" exit %.6g", exp((double)h->final[j]));
      if (h->word && h->word[j]) printf(" word %s", h->word[j]);
      printf("\n");
    }
  }
  gh_hmm_set_free(&s);
  gh_opts_free(po);
  return 0;
}
