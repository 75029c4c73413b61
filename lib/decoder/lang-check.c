/* lang-check.c -- does a model belong to a lang directory (lang-check.h). */
#include "decoder/lang-check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "hmm/hmm-utils.h"

static int is_phone_of(const gh_transition_model *tm, int64_t p) {
  return p > 0 && p < tm->num_phone2idx && tm->phone2idx[p] >= 0;
}

/* A phone symbol: neither <eps> (id 0) nor a disambiguation symbol (#...). */
static int is_phone_symbol(char *const *names, int32_t n, int32_t id) {
  return id > 0 && id < n && names[id] && names[id][0] != '#';
}

static void free_names(char **names, int32_t n) {
  for (int32_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

void gh_lang_check_model(const gh_transition_model *tm, const char *mdl_name, const gh_fst *lex, const char *lex_name,
                         const int32_t *disambig, int32_t ndisambig, const char *disambig_name,
                         const char *phones_txt) {
  if (tm->num_phones == 0) gh_die("the model %s has no phones", mdl_name);
  const int32_t first = tm->phones[0], last = tm->phones[tm->num_phones - 1];
  if (phones_txt) {
    /* the message is made before the table is freed, so that nothing leaks when the die is caught */
    char msg[1024] = "";
    int32_t n = 0, nsym = 0;
    char **names = gh_phone_names_read(phones_txt, &n);
    for (int32_t id = 1; id < n; id++) nsym += is_phone_symbol(names, n, id);
    for (int32_t i = 0; i < tm->num_phones && !*msg; i++) {
      const int32_t p = tm->phones[i];
      if (!is_phone_symbol(names, n, p)) {
        char what[200] = "no symbol";
        if (p < n && names[p]) snprintf(what, sizeof what, "the symbol '%s'", gh_printable_token(names[p]));
        snprintf(msg, sizeof msg,
                 "%s: phone %d of the model %s is %s there (the table has %d phones, the model %d: %d .. %d): the "
                 "model is of another lang",
                 phones_txt, p, mdl_name, what, nsym, tm->num_phones, first, last);
      }
    }
    for (int32_t id = 1; id < n && !*msg; id++)
      if (is_phone_symbol(names, n, id) && !is_phone_of(tm, id))
        snprintf(msg, sizeof msg,
                 "%s: phone %d '%s' is not a phone of the model %s (the table has %d phones, the model %d: %d .. "
                 "%d): the model is of another lang",
                 phones_txt, id, gh_printable_token(names[id]), mdl_name, nsym, tm->num_phones, first, last);
    free_names(names, n);
    if (*msg) gh_die("%s", msg);
  }
  for (int32_t i = 0; i < ndisambig; i++) {
    if (disambig[i] <= 0)
      gh_die("%s: disambiguation symbol %d is not a positive label", disambig_name, disambig[i]);
    if (is_phone_of(tm, disambig[i]))
      gh_die("%s: disambiguation symbol %d is phone %d of the model %s (%d phones, %d .. %d): the lang has fewer "
             "phones than the model, the model is of another lang",
             disambig_name, disambig[i], disambig[i], mdl_name, tm->num_phones, first, last);
  }
  for (int32_t s = 0; s < lex->nstates; s++)
    for (int32_t a = 0; a < lex->states[s].narcs; a++) {
      const int32_t il = lex->states[s].arcs[a].ilabel;
      if (il == 0 || is_phone_of(tm, il)) continue;
      int dis = 0;
      for (int32_t i = 0; i < ndisambig && !dis; i++) dis = disambig[i] == il;
      if (dis) continue;
      gh_die("the lexicon FST %s has input label %d on an arc of state %d: neither a phone of the model nor a "
             "disambiguation symbol (the model %s has %d phones, %d .. %d; %s): the lexicon is of another lang",
             lex_name, il, s, mdl_name, tm->num_phones, first, last,
             ndisambig ? disambig_name : "no disambiguation symbols given");
    }
}

void gh_phones_check_compatible(const char *a, const char *b) {
  int32_t na = 0, nb = 0;
  char **sa = gh_phone_names_read(a, &na), **sb = gh_phone_names_read(b, &nb);
  char msg[1024] = "";
  const int32_t n = na > nb ? na : nb;
  for (int32_t id = 0; id < n && !*msg; id++) {
    const char *x = id < na && sa[id] && sa[id][0] != '#' ? sa[id] : NULL;
    const char *y = id < nb && sb[id] && sb[id][0] != '#' ? sb[id] : NULL;
    if ((x || y) && !(x && y && strcmp(x, y) == 0)) {
      char dx[200] = "no phone", dy[200] = "no phone";
      if (x) snprintf(dx, sizeof dx, "'%s'", gh_printable_token(x));
      if (y) snprintf(dy, sizeof dy, "'%s'", gh_printable_token(y));
      snprintf(msg, sizeof msg,
               "phone symbol tables %s and %s are not compatible: id %d is %s in the first, %s in the second (a "
               "model of another lang)",
               a, b, id, dx, dy);
    }
  }
  free_names(sa, na);
  free_names(sb, nb);
  if (*msg) gh_die("%s", msg);
}
