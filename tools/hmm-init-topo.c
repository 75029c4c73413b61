/* hmm-init-topo -- build an HMM set with common topologies: one
 * left-to-right HMM per word (self-loop + next, optional skip), an optional
 * silence HMM, and optionally a word-loop HMM for connected words. */
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "hmm/hmm.h"
#include "io/kaldi-io.h"
#include "base/opts.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Build an HMM set: one left-to-right HMM per word of <words-rxfilename> (lines 'word', or\n"
      "'word pdf pdf ...' to give each state's pdf id: a pdf map; without one, pdf ids are\n"
      "consecutive in file order, --num-states per word).  State k: self-loop --self-loop-prob,\n"
      "next state, and with --skip-prob > 0 a skip to k+2; the last state exits.  --silence=NAME\n"
      "adds a silence HMM (--silence-states; unless NAME is in the word list); --word-loop=NAME\n"
      "adds an HMM for connected words: silence and all words in a loop, word labels on the\n"
      "words' first states (hmm-viterbi --words-wspecifier reads the word sequence off a path).\n"
      "--topology=ergodic makes every word HMM fully connected instead (hmmlearn's default: every\n"
      "state initial with 1/N, every transition 1/N, the sequence may end in any state).\n"
      "Usage:  hmm-init-topo [options] <words-rxfilename> <hmm-out>\n"
      "e.g.:   hmm-init-topo --num-states=5 --silence=sil --word-loop=loop words.txt words.hmm\n"
      "        echo m > m.txt; hmm-init-topo --topology=ergodic --num-states=3 m.txt ergodic.hmm\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  int32_t num_states = 3, sil_states = 3;
  double self_loop = 0.5, skip = 0.0;
  const char *silence = "", *loop = "", *sil_topo = "ltr", *topo = "ltr";
  gh_opts_bool(po, "binary", &binary, "Write the HMM set in binary mode");
  gh_opts_int(po, "num-states", &num_states, "States per word HMM (without a pdf map)");
  gh_opts_int(po, "silence-states", &sil_states, "States of the silence HMM (when not in the word list)");
  gh_opts_double(po, "self-loop-prob", &self_loop, "Self-loop probability of every state");
  gh_opts_double(po, "skip-prob", &skip, "Share of the leaving probability that skips a state (0: no skip arcs)");
  gh_opts_string(po, "silence", &silence, "Name of a silence HMM to add (and use in --word-loop)");
  gh_opts_string(po, "word-loop", &loop, "Also add a word-loop HMM with this name");
  gh_opts_string(po, "topology", &topo,
                 "Topology of the word HMMs: ltr (left-to-right) or ergodic (fully connected, uniform; "
                 "--self-loop-prob and --skip-prob do not apply)");
  gh_opts_string(po, "silence-topology", &sil_topo,
                 "Topology of the silence HMM: ltr (as the words) or ergodic (Kaldi's: inner states "
                 "connected to each other, last state self-loop 0.75)");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *words_rx = gh_opts_arg(po, 0), *hmm_wx = gh_opts_arg(po, 1);
  if (num_states < 1 || sil_states < 1) gh_die("--num-states and --silence-states must be >= 1");
  int ergodic = !strcmp(topo, "ergodic");
  if (!ergodic && strcmp(topo, "ltr")) gh_die("--topology must be ltr or ergodic (got '%s')", topo);

  gh_istream *in = gh_istream_open(words_rx);
  if (!in) gh_die("cannot open %s: %s", words_rx, gh_last_error());
  gh_hmm_set set;
  memset(&set, 0, sizeof set);
  int32_t next_pdf = 0, line_no = 0, *pdfs = NULL, cap = 0;
  while (gh_istream_peek(in) >= 0) {
    char *line = gh_read_line(in), *save = NULL;
    ++line_no;
    char *name = strtok_r(line, " \t", &save);
    if (!name) continue;
    if (gh_hmm_set_find(&set, name) >= 0) gh_die("%s, line %d: word '%s' listed twice", words_rx, line_no, name);
    int32_t n = 0;
    for (char *tok = strtok_r(NULL, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
      char *end;
      long v = strtol(tok, &end, 10);
      if (*end || v < 0 || v > 100000000) gh_die("%s, line %d: bad pdf id '%s'", words_rx, line_no, tok);
      if (n == cap) pdfs = gh_realloc(pdfs, (cap = cap ? 2 * cap : 16) * sizeof(int32_t));
      pdfs[n++] = (int32_t)v;
    }
    if (n == 0) {
      n = (*silence && !strcmp(name, silence)) ? sil_states : num_states;
      if (n > cap) pdfs = gh_realloc(pdfs, (cap = n) * sizeof(int32_t));
      for (int32_t k = 0; k < n; ++k) pdfs[k] = next_pdf++;
    } else {
      for (int32_t k = 0; k < n; ++k) if (pdfs[k] >= next_pdf) next_pdf = pdfs[k] + 1;
    }
    gh_hmm h;
    if (ergodic && !(*silence && !strcmp(name, silence))) gh_hmm_ergodic(&h, name, n, pdfs);
    else gh_hmm_left_to_right(&h, name, n, pdfs, self_loop, skip);
    gh_hmm_set_add(&set, &h);
  }
  gh_istream_close(in);
  int32_t sil = -1;
  if (*silence) {
    sil = gh_hmm_set_find(&set, silence);
    if (sil < 0) {
      if (sil_states > cap) pdfs = gh_realloc(pdfs, (cap = sil_states) * sizeof(int32_t));
      for (int32_t k = 0; k < sil_states; ++k) pdfs[k] = next_pdf++;
      gh_hmm h;
      if (!strcmp(sil_topo, "ergodic")) gh_hmm_silence(&h, silence, sil_states, pdfs, 0.75);
      else if (!strcmp(sil_topo, "ltr")) gh_hmm_left_to_right(&h, silence, sil_states, pdfs, self_loop, skip);
      else gh_die("--silence-topology must be ltr or ergodic (got '%s')", sil_topo);
      gh_hmm_set_add(&set, &h);
      sil = set.num_hmms - 1;
    }
  }
  if (set.num_hmms == 0) gh_die("%s: no words", words_rx);
  if (*loop) {
    if (gh_hmm_set_find(&set, loop) >= 0) gh_die("--word-loop=%s: name already used by a word", loop);
    int32_t n = 0, *ids = gh_malloc(set.num_hmms * sizeof(int32_t));
    for (int32_t i = 0; i < set.num_hmms; ++i) if (i != sil) ids[n++] = i;
    gh_hmm h;
    gh_hmm_word_loop(&h, loop, &set, ids, n, sil);
    gh_hmm_set_add(&set, &h);
    free(ids);
  }
  gh_hmm_set_write(hmm_wx, binary, &set);
  gh_log("wrote %d HMMs using %d pdfs to %s", set.num_hmms, gh_hmm_set_num_pdfs(&set), hmm_wx);
  free(pdfs);
  gh_hmm_set_free(&set);
  gh_opts_free(po);
  return 0;
}
