/* lang.h -- Kaldi's lang directory (utils/prepare_lang.sh and the helpers it calls:
 * make_lexicon_fst.py, add_lex_disambig.pl, apply_map.pl, sym2int.pl, gen_topo.pl)
 * from a dictionary directory in Kaldi's local/dict layout.
 *
 * Inputs (dict_dir): silence_phones.txt, nonsilence_phones.txt (one base phone set a
 * line), optional_silence.txt (one phone), extra_questions.txt (optional), and
 * lexiconp.txt ("word prob phone ...", used if present) or lexicon.txt ("word phone
 * ...", probability 1.0).
 * Outputs (lang_dir): phones.txt, words.txt, topo, oov.{txt,int}, L.fst,
 * L_disambig.fst and phones/{sets,roots,extra_questions,silence,nonsilence,
 * optional_silence,context_indep,disambig,word_boundary,wdisambig,align_lexicon}.*
 * byte-identical to the script's; in tmp_dir the script's lexiconp.txt,
 * lexiconp_disambig.txt, phone_map.txt, lex_ndisambig and align_lexicon.txt.
 * Unlike the script, dict_dir is never written to (the script adds lexiconp.txt).
 *
 * Errors: gh_die with the file and line: a missing input file, a phone of the
 * lexicon or of extra_questions.txt that no phone list has, a phone listed twice,
 * a word without pronunciation, a bad or non-positive probability, an empty lexicon,
 * <s> or </s> or <eps> as a word, an OOV word missing from the lexicon; with a phone
 * symbol table, a phone missing from it, no #0 in it, or position-dependent phones in
 * it when not asked for (or the reverse).  Outputs go
 * through gh_ostream_open (committed together when the tool succeeds).
 */
#ifndef GH_LANG_H
#define GH_LANG_H

typedef struct {
  int position_dependent_phones; /* 1: _B _E _I _S word-position variants (default 1) */
  int num_sil_states;            /* default 5 */
  int num_nonsil_states;         /* default 3 */
  int share_silence_phones;      /* 1: all silence phones in one tree root (default 0) */
  double sil_prob;               /* optional-silence probability in L.fst, [0, 1) (0.5) */
  const char *phone_symbol_table; /* an existing phones.txt whose ids to keep, or NULL */
} gh_lang_opts;

void gh_lang_opts_default(gh_lang_opts *o);
/* Writes the lang directory (lang_dir and lang_dir/phones must exist, as tmp_dir). */
void gh_prepare_lang(const gh_lang_opts *o, const char *dict_dir, const char *oov_word,
                     const char *tmp_dir, const char *lang_dir);

#endif
