/* word-align.h -- word boundaries from a phone alignment and the transcript
 * (what Kaldi's steps/get_train_ctm.sh gets from linear-to-nbest |
 * lattice-align-words[-lexicon] | nbest-to-ctm on a training alignment).
 *
 * Two kinds of word information, as Kaldi's two tools take them:
 *  - the alignment lexicon (lang/phones/align_lexicon.int, lines "word word
 *    phone ..."; the word 0 (<eps>) entries are the optional silence): the
 *    phone sequence is parsed as the transcript's words, each one of its
 *    pronunciations, with any number of word-0 entries between and around
 *    them (lattice-align-words-lexicon);
 *  - word-position marks (lang/phones/word_boundary.int, lines "phone
 *    begin|end|internal|singleton|nonword"): a word is a singleton phone or a
 *    begin .. internal* .. end run, a nonword phone is silence, and the words
 *    are the transcript's in order (lattice-align-words).
 *
 * Units: frames (an alignment has one transition-id per frame). */
#ifndef GH_WORD_ALIGN_H
#define GH_WORD_ALIGN_H
#include <stddef.h>
#include <stdint.h>
#include "hmm/transition.h"

typedef struct gh_word_info gh_word_info;

/* Reads either file above; which one is decided by the first line (a second
 * field that is a word-position name: word_boundary.int).  Dies (gh_die)
 * naming the file and line on a malformed line, a negative id, a word with
 * no phones, an unknown position name, or an empty file. */
gh_word_info *gh_word_info_read(const char *rxfilename);
void gh_word_info_free(gh_word_info *wi);
/* 1 if read from word_boundary.int, 0 for an alignment lexicon. */
int gh_word_info_is_boundary(const gh_word_info *wi);
/* Dies naming file `what` if a phone the word information uses is not a
 * phone of tm (a lexicon of another lang directory). */
void gh_word_info_check(const gh_word_info *wi, const gh_transition_model *tm, const char *what, const char *model);

/* One word (or, word == 0, optional silence) of an utterance: frames
 * [start, start + len). */
typedef struct {
  int32_t word, start, len;
} gh_word_seg;

/* Splits ali[n] (transition-ids, checked with gh_transition_check_alignment)
 * into phones and those into the words of words[nwords] (ids, 0 never).
 * *segs (realloc'd) receives *nseg segments in time order covering all n
 * frames: every word of the transcript once, in order, and word 0 for the
 * phones between, before and after words (silence), one segment per
 * silence phone.  Returns 1, or 0 with a one-line reason in err[errlen]
 * (the alignment does not split into phones; the phones are not any
 * pronunciation sequence of the transcript; position marks that do not
 * form words; a word count that differs from the transcript's).  Where the
 * lexicon allows several parses, each (phone, word) position keeps the first
 * way it was reached, scanning phone positions left to right and trying the
 * word-0 entries before the word's pronunciations, in the file's order. */
int gh_word_align(const gh_word_info *wi, const gh_transition_model *tm, const int32_t *ali, int32_t n,
                  const int32_t *words, int32_t nwords, gh_word_seg **segs, int32_t *nseg, char *err, size_t errlen);

#endif
