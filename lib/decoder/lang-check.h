/* lang-check.h -- does a model belong to a lang directory?  The checks made
 * where a lexicon FST (L.fst) meets a transition model (compile-train-graphs,
 * the resident trainers), so that a model of one lang used with the lexicon
 * of another fails with one line instead of compiling graphs of the wrong
 * phones.
 *
 * What can tell, and why these checks never fire on a consistent lang: a lang
 * directory (Kaldi's utils/prepare_lang.sh or ours) numbers <eps> 0, then its
 * phones, then the disambiguation symbols #0 .. #n after all of them
 * (phones.txt, phones/disambig.int); its topo covers exactly the phones of
 * phones.txt that are not <eps> or #n (gen_topo.pl over silence.csl and
 * nonsilence.csl; Kaldi's validate_lang.pl checks it), and a model trained
 * on it carries that topology.  L.fst's input labels are phones of the lang
 * (L_disambig.fst's also disambiguation symbols).  Phone ids of two langs
 * overlap (the position-dependent lang of the cathy dictionary has 346
 * phones, the one without word positions 86; ids 1 .. 86 exist in both), so
 * a label that is merely "in range" proves nothing; what differs is the
 * number of phones, and that shows up as
 *   - a symbol of phones.txt (not <eps>, not #...) that is not a phone of the
 *     model, or a phone of the model that has no such symbol;
 *   - a disambiguation symbol that is a phone of the model (the lang has
 *     fewer phones than the model);
 *   - an input label of L.fst that is not a phone of the model (the lang has
 *     more phones than the model).
 * Without phones.txt and without the disambiguation symbols (Kaldi's
 * compile-train-graphs without --read-disambig-syms) a model with more phones
 * than the lexicon's lang cannot be told from a lexicon that uses few of the
 * model's phones: L.fst carries no symbols. */
#ifndef GH_LANG_CHECK_H
#define GH_LANG_CHECK_H
#include <stdint.h>
#include "hmm/transition.h"
#include "io/fst.h"

/* Checks that transition model tm (a .mdl's, or a topology's from
 * gh_topology_read; named mdl_name in messages) belongs to the lang of
 *   lex            a lexicon FST (L.fst or L_disambig.fst, named lex_name),
 *   disambig[n]    the lang's phone-side disambiguation symbols
 *                  (phones/disambig.int, named disambig_name), may be NULL/0,
 *   phones_txt     the lang's phone symbol table (phones.txt), may be NULL.
 * Dies (one line naming the file, the phone or label and the cause) when a
 * non-#, non-<eps> symbol of phones_txt is not a phone of tm or a phone of tm
 * has no such symbol there, a disambiguation symbol is <= 0 or a phone of
 * tm, or an input label of lex is neither 0, a phone of tm nor a
 * disambiguation symbol; also when phones_txt cannot be read or is
 * malformed.  Reads phones_txt once and every arc of lex once. */
void gh_lang_check_model(const gh_transition_model *tm, const char *mdl_name, const gh_fst *lex, const char *lex_name,
                         const int32_t *disambig, int32_t ndisambig, const char *disambig_name,
                         const char *phones_txt);

/* Kaldi's utils/lang/check_phones_compatible.sh: the phone symbol tables a
 * and b (phones.txt of a lang and of a model directory) give the same id to
 * every symbol not beginning with '#' (disambiguation symbols may differ).
 * Dies naming both files and the first symbol that differs. */
void gh_phones_check_compatible(const char *a, const char *b);

#endif
