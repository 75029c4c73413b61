/* ali-to-word-ctm -- word CTM from training alignments and their transcripts:
 * what Kaldi's steps/get_train_ctm.sh gets from linear-to-nbest |
 * lattice-align-words-lexicon (or lattice-align-words) | lattice-1best |
 * nbest-to-ctm | int2sym.pl -f 5, in one tool (lib/hmm/word-align.h: the
 * phones of the alignment parsed as the transcript's pronunciations, or
 * grouped by word-position marks).  CTM lines "<utt> 1 <start> <dur>
 * <word>", times in seconds printed as nbest-to-ctm does (2 decimals, 3 if
 * --frame-shift < 0.01, 4 if < 0.001); silence (<eps>) only with
 * --print-silence.  An utterance whose transcript is missing or whose phones
 * do not spell it is warned about by key and reason and counted; the exit
 * status is 1 if no utterance was done. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "hmm/hmm-utils.h"
#include "hmm/transition.h"
#include "hmm/word-align.h"
#include "io/kaldi-io.h"
#include "io/table.h"

static const char *usage =
    "Write a word-level CTM from alignments and their transcripts (Kaldi's steps/get_train_ctm.sh:\n"
    "linear-to-nbest | lattice-align-words-lexicon | lattice-1best | nbest-to-ctm, in one tool).\n"
    "<word-info> is lang/phones/align_lexicon.int (\"word word phone ...\": the phones are parsed as\n"
    "the transcript's pronunciations with optional silence between words) or\n"
    "lang/phones/word_boundary.int (word-position marks; position-dependent phones only).\n"
    "Usage:  ali-to-word-ctm [options] <word-info> <model> <alignments-rspecifier> "
    "<transcriptions-rspecifier> <ctm-wxfilename>\n"
    "e.g.: \n"
    " ali-to-word-ctm --word-symbol-table=lang/words.txt lang/phones/align_lexicon.int final.mdl \\\n"
    "   'ark:gunzip -c ali.1.gz|' 'ark:utils/sym2int.pl --map-oov 2 -f 2- lang/words.txt data/text|' 1.ctm\n"
    "See also: ali-to-phones --ctm-output, ctm-to-textgrid\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  float frame_shift = 0.01f;
  int print_silence = 0, precision = 2;
  const char *word_syms_rx = "";
  gh_opts *po = gh_opts_new(usage);
  gh_opts_float(po, "frame-shift", &frame_shift, "Time in seconds between frames.");
  gh_opts_bool(po, "print-silence", &print_silence, "If true, print optional-silence (<eps>) segments");
  gh_opts_int(po, "precision", &precision,
              "Number of decimal places for start and duration times (raised to 3 if --frame-shift < 0.01, "
              "4 if < 0.001)");
  gh_opts_string(po, "word-symbol-table", &word_syms_rx,
                 "Symbol table (lang/words.txt): write words as text (else their integer ids)");
  if (gh_opts_parse(po, argc, argv) != 5) gh_opts_usage_exit(po);
  const char *info_rx = gh_opts_arg(po, 0), *model_rx = gh_opts_arg(po, 1), *ali_rspec = gh_opts_arg(po, 2),
             *text_rspec = gh_opts_arg(po, 3), *ctm_wx = gh_opts_arg(po, 4);
  if (!(frame_shift > 0.0f)) gh_die("--frame-shift must be > 0 (got %g)", frame_shift);
  if (precision < 0 || precision > 9) gh_die("--precision must be in 0 .. 9 (got %d)", precision);
  if (frame_shift < 0.01f && precision <= 2) precision = 3;
  if (frame_shift < 0.001f && precision <= 3) precision = 4;

  gh_transition_model *tm = gh_transition_read_file(model_rx);
  gh_word_info *wi = gh_word_info_read(info_rx);
  gh_word_info_check(wi, tm, info_rx, model_rx);
  char **wsyms = NULL;
  int32_t nwsyms = 0;
  if (word_syms_rx[0]) wsyms = gh_phone_names_read(word_syms_rx, &nwsyms);
  gh_seq_reader *ar = gh_seq_reader_open(ali_rspec, GH_OBJ_INT32_VECTOR);
  gh_rand_reader *tr = gh_rand_reader_open(text_rspec, GH_OBJ_INT32_VECTOR);
  gh_ostream *out = gh_ostream_open(ctm_wx);
  FILE *fp = gh_ostream_fp(out);
  gh_word_seg *segs = NULL;
  int32_t nseg = 0;
  int64_t n_done = 0, n_err = 0, n_words = 0;
  char err[512];
  for (; !gh_seq_reader_done(ar); gh_seq_reader_next(ar)) {
    const char *key = gh_seq_reader_key(ar);
    const gh_ivector *ali = gh_seq_reader_value(ar);
    const gh_ivector *tx = gh_rand_reader_value(tr, key);
    if (!tx) {
      gh_warn("%s: no transcript for utterance %s", text_rspec, key);
      n_err++;
      continue;
    }
    gh_transition_check_alignment(tm, ali->data, ali->dim, ali_rspec, key, model_rx);
    for (int32_t j = 0; j < tx->dim; ++j)
      if (tx->data[j] <= 0 || (wsyms && (tx->data[j] >= nwsyms || !wsyms[tx->data[j]])))
        gh_die("%s: utterance %s: word id %d (position %d) is not a word%s%s", text_rspec, key, tx->data[j], j + 1,
               wsyms ? " of " : "", wsyms ? word_syms_rx : "");
    if (!gh_word_align(wi, tm, ali->data, ali->dim, tx->data, tx->dim, &segs, &nseg, err, sizeof err)) {
      gh_warn("Word alignment failed for utterance %s: %s", key, err);
      n_err++;
      continue;
    }
    for (int32_t s = 0; s < nseg; ++s) {
      if (segs[s].word == 0 && !print_silence) continue;
      const float start = frame_shift * (float)segs[s].start, dur = frame_shift * (float)segs[s].len;
      fprintf(fp, "%s 1 %.*f %.*f ", key, precision, (double)start, precision, (double)dur);
      if (wsyms) {
        const int32_t w = segs[s].word;
        fputs(w < nwsyms && wsyms[w] ? wsyms[w] : "<eps>", fp);
      } else {
        fprintf(fp, "%d", segs[s].word);
      }
      fputc('\n', fp);
      n_words += segs[s].word != 0;
    }
    gh_ostream_check(out, key);
    n_done++;
  }
  gh_ostream_close(out);
  gh_seq_reader_close(ar);
  gh_rand_reader_close(tr);
  gh_log("Done %lld utterances (%lld words), failed for %lld", (long long)n_done, (long long)n_words,
         (long long)n_err);
  free(segs);
  for (int32_t i = 0; i < nwsyms; ++i) free(wsyms[i]);
  free(wsyms);
  gh_word_info_free(wi);
  gh_transition_free(tm);
  gh_opts_free(po);
  return n_done != 0 ? 0 : 1;
}
