/* show-transitions -- print a transition model in human-readable form, with
 * per-pdf occupancies if given (Kaldi bin/show-transitions.cc and
 * TransitionModel::Print; the same lines, numbers printed as C++'s default
 * stream format, %g). */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "hmm/hmm-utils.h"
#include "hmm/transition.h"
#include "io/kaldi-io.h"

static const char *usage =
    "Print debugging info from transition model, in human-readable form\n"
    "Usage:  show-transitions <phones-symbol-table> <transition/model-file> [<occs-file>]\n"
    "e.g.: \n"
    " show-transitions phones.txt 1.mdl 1.occs\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_opts *po = gh_opts_new(usage);
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs < 2 || nargs > 3) gh_opts_usage_exit(po);
  const char *syms_rx = gh_opts_arg(po, 0), *model_rx = gh_opts_arg(po, 1);
  const char *occs_rx = nargs == 3 ? gh_opts_arg(po, 2) : NULL;
  int32_t nsyms;
  char **names = gh_phone_names_read(syms_rx, &nsyms);
  gh_transition_model *tm = gh_transition_read_file(model_rx);
  for (int32_t i = 0; i < tm->num_tuples; ++i)
    if (tm->tuples[i].phone >= nsyms || !names[tm->tuples[i].phone])
      gh_die("%s: phone %d of the model %s is not in the symbol table (a model of another lang?)", syms_rx,
             tm->tuples[i].phone, model_rx);
  gh_dvector occs = {0, NULL};
  if (occs_rx) {
    gh_istream *in = gh_istream_open(occs_rx);
    if (!in) gh_die("%s", gh_last_error());
    int binary = gh_read_binary_marker(in);
    gh_read_dvector(in, binary, &occs);
    gh_istream_close(in);
    if (occs.dim != tm->num_pdfs)
      gh_die("%s: %d occupancies but the model %s has %d pdfs", occs_rx, occs.dim, model_rx, tm->num_pdfs);
  }
  int is_hmm = gh_transition_is_hmm(tm);
  for (int32_t ts = 1; ts <= tm->num_tuples; ++ts) {
    const gh_trans_tuple *t = &tm->tuples[ts - 1];
    printf("Transition-state %d: phone = %s hmm-state = %d", ts, names[t->phone], t->hmm_state);
    if (is_hmm)
      printf(" pdf = %d\n", t->forward_pdf);
    else
      printf(" forward-pdf = %d self-loop-pdf = %d\n", t->forward_pdf, t->self_loop_pdf);
    const gh_hmm_state *st = &gh_transition_entry(tm, t->phone)->states[t->hmm_state];
    for (int32_t tid = tm->state2id[ts]; tid < tm->state2id[ts + 1]; ++tid) {
      int32_t idx = tid - tm->state2id[ts];
      int self = st->dst[idx] == t->hmm_state;
      printf(" Transition-id = %d p = %g", tid, (double)expf(tm->log_probs[tid]));
      if (occs_rx) printf(" count of pdf = %g", occs.data[self ? t->self_loop_pdf : t->forward_pdf]);
      if (self)
        printf(" [self-loop]\n");
      else
        printf(" [%d -> %d]\n", t->hmm_state, st->dst[idx]);
    }
  }
  if (fflush(stdout) != 0 || ferror(stdout)) gh_die("show-transitions: error writing to standard output");
  for (int32_t i = 0; i < nsyms; ++i) free(names[i]);
  free(names);
  gh_dvector_free(&occs);
  gh_transition_free(tm);
  gh_opts_free(po);
  return 0;
}
