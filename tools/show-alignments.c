/* show-alignments -- print alignments split into phones, transition-ids
 * above phone names, columns padded to line up (Kaldi
 * bin/show-alignments.cc). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "hmm/hmm-utils.h"
#include "hmm/transition.h"
#include "io/table.h"

static const char *usage =
    "Display alignments in human-readable form\n"
    "Usage:  show-alignments  [options] <phone-syms> <model> <alignments-rspecifier>\n"
    "e.g.: \n"
    " show-alignments phones.txt 1.mdl ark:1.ali\n"
    "See also: ali-to-phones, copy-int-vector\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_opts *po = gh_opts_new(usage);
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *syms_rx = gh_opts_arg(po, 0), *model_rx = gh_opts_arg(po, 1), *rspec = gh_opts_arg(po, 2);
  gh_transition_model *tm = gh_transition_read_file(model_rx);
  int32_t nsyms;
  char **names = gh_phone_names_read(syms_rx, &nsyms);
  if (nsyms == 0) gh_die("Error opening symbol table file %s (no symbols)", syms_rx);
  for (int32_t i = 0; i < tm->num_tuples; ++i)
    if (tm->tuples[i].phone >= nsyms || !names[tm->tuples[i].phone])
      gh_die("%s: phone %d of the model %s is not in the symbol table (a model of another lang?)", syms_rx,
             tm->tuples[i].phone, model_rx);
  gh_seq_reader *r = gh_seq_reader_open(rspec, GH_OBJ_INT32_VECTOR);
  int32_t *ends = NULL, nph = 0;
  size_t cap = 256;
  char *a = gh_malloc(cap), *b = gh_malloc(cap);
  for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {
    const char *key = gh_seq_reader_key(r);
    const gh_ivector *ali = gh_seq_reader_value(r);
    gh_transition_check_alignment(tm, ali->data, ali->dim, rspec, key, model_rx);
    gh_split_to_phones(tm, ali->data, ali->dim, &ends, &nph);
    printf("%s  ", key);
    /* two passes over the phones: ids line, then names line */
    for (int pass = 0; pass < 2; ++pass) {
      if (pass) printf("%s  ", key);
      for (int32_t i = 0, s = 0; i < nph; s = ends[i], ++i) {
        size_t need = 16 + 12 * (size_t)(ends[i] - s);
        if (need > cap) {
          cap = 2 * need;
          a = gh_realloc(a, cap);
          b = gh_realloc(b, cap);
        }
        size_t la = (size_t)sprintf(a, "[ ");
        for (int32_t t = s; t < ends[i]; ++t) la += (size_t)sprintf(a + la, "%d ", ali->data[t]);
        la += (size_t)sprintf(a + la, "] ");
        int32_t phone = gh_transition_tid2phone(tm, ali->data[s]);
        const char *name = names[phone];
        size_t lb = strlen(name) + 1;
        const char *text = pass ? name : a;
        size_t len = pass ? lb : la, other = pass ? la : lb;
        fputs(text, stdout);
        if (pass) putchar(' ');
        for (size_t k = len; k < other; ++k) putchar(' ');
      }
      putchar('\n');
    }
    putchar('\n');
  }
  gh_seq_reader_close(r);
  if (fflush(stdout) != 0 || ferror(stdout)) gh_die("show-alignments: error writing to standard output");
  free(a);
  free(b);
  free(ends);
  for (int32_t i = 0; i < nsyms; ++i) free(names[i]);
  free(names);
  gh_transition_free(tm);
  gh_opts_free(po);
  return 0;
}
