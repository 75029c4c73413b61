/* hmm-make-loop -- (re)build the word-loop HMM of an HMM set from its word
 * and silence HMMs, e.g. after training the words with hmm-bw
 * --transcripts, whose counts go to the word HMMs and not to the loop's own
 * copies of them (doc/hmm.md, "Limits"). */
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "hmm/hmm.h"
#include "base/opts.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Build the word-loop HMM --word-loop (connected words: any sequence of the words, with\n"
      "optional --silence between them and at both ends; word labels on the words' first states)\n"
      "from the current word and silence HMMs of a set, and write the set with it: an HMM of\n"
      "that name already in the set (e.g. the loop hmm-init-topo wrote, whose copies of the\n"
      "words were not trained) is replaced.  The words are --words, or every other HMM of the\n"
      "set.  Same construction as hmm-init-topo --word-loop, plus a word insertion penalty:\n"
      "--word-penalty=P multiplies every entry into a word (first or after a word or silence)\n"
      "by exp(-P), which trades insertions against deletions when decoding; --silence-prob=S\n"
      "sends a word's exit to the silence with probability S (a word directly after a word,\n"
      "the usual way of inserting one, then costs log((1 - S) / (words + 1))).\n"
      "Usage:  hmm-make-loop [options] <hmm-in> <hmm-out>\n"
      "e.g.:   hmm-make-loop --silence=sil --word-loop=loop final.hmm final-loop.hmm\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  const char *silence = "", *loop = "loop", *word_list = "";
  double penalty = 0.0;
  gh_opts_bool(po, "binary", &binary, "Write the HMM set in binary mode");
  gh_opts_string(po, "silence", &silence, "Name of the silence HMM of the loop (empty: no silence)");
  gh_opts_string(po, "word-loop", &loop, "Name of the word-loop HMM to build (replaced if present)");
  gh_opts_string(po, "words", &word_list, "Comma-separated HMM names of the words (default: all HMMs but "
                                          "the silence and the loop)");
  gh_opts_double(po, "word-penalty", &penalty, "Word insertion penalty: log-probability -P on entering a word (P >= 0)");
  double sil_prob = -1.0;
  gh_opts_double(po, "silence-prob", &sil_prob,
                 "Leaving a word, go to the silence with this probability, to each word and the end with "
                 "(1 - P) / (words + 1) (1: silence between any two words; < 0: equal shares for all)");
  int edge_sil = 0;
  gh_opts_bool(po, "edge-silence", &edge_sil,
               "Paths must start and end in the silence (as training with hmm-viterbi/hmm-bw "
               "--edge-silence-prob=1)");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *hmm_rx = gh_opts_arg(po, 0), *hmm_wx = gh_opts_arg(po, 1);
  if (!*loop) gh_die("--word-loop must not be empty");
  if (!(penalty >= 0.0 && penalty < 1e30)) gh_die("--word-penalty must be >= 0, got %g", penalty);

  gh_hmm_set in, set;
  gh_hmm_set_read(hmm_rx, &in);
  memset(&set, 0, sizeof set);
  /* Move every HMM but the old loop into the output set. */
  for (int32_t i = 0; i < in.num_hmms; ++i) {
    if (!strcmp(in.hmms[i].name, loop)) gh_hmm_free(&in.hmms[i]);
    else gh_hmm_set_add(&set, &in.hmms[i]);
  }
  int32_t replaced = set.num_hmms < in.num_hmms;
  gh_hmm_set_free(&in);

  int32_t sil = -1;
  if (*silence && (sil = gh_hmm_set_find(&set, silence)) < 0)
    gh_die("%s: no silence HMM '%s'", hmm_rx, silence);
  if (edge_sil && sil < 0) gh_die("--edge-silence needs --silence");
  int32_t n = 0, *ids = gh_malloc((set.num_hmms + 1) * sizeof(int32_t));
  if (*word_list) {
    char *buf = gh_strdup(word_list), *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
      int32_t id = gh_hmm_set_find(&set, w);
      if (id < 0) gh_die("%s: --words: no HMM '%s'%s", hmm_rx, w, !strcmp(w, loop) ? " (the loop itself)" : "");
      if (id == sil) gh_die("--words: '%s' is the silence", w);
      for (int32_t k = 0; k < n; ++k) if (ids[k] == id) gh_die("--words: '%s' listed twice", w);
      ids[n++] = id;
    }
    free(buf);
  } else {
    for (int32_t i = 0; i < set.num_hmms; ++i) if (i != sil) ids[n++] = i;
  }
  if (n == 0) gh_die("%s: no word HMMs for the loop", hmm_rx);
  /* Every entry into word w in the loop is (share) + w.init[j]: lowering
   * the words' init by P during the construction is the penalty.  The set
   * itself is written with its own init probabilities. */
  float **saved = gh_malloc(n * sizeof(float *));
  for (int32_t k = 0; k < n; ++k) {
    gh_hmm *w = &set.hmms[ids[k]];
    saved[k] = gh_malloc(w->num_states * sizeof(float));
    memcpy(saved[k], w->init, w->num_states * sizeof(float));
    for (int32_t j = 0; j < w->num_states; ++j) w->init[j] = (float)(w->init[j] - penalty);
  }
  gh_hmm h;
  if (sil_prob >= 0 && sil < 0) gh_die("--silence-prob needs --silence");
  if (!(sil_prob <= 1)) gh_die("--silence-prob must be at most 1, got %g", sil_prob);
  gh_hmm_word_loop_sil(&h, loop, &set, ids, n, sil, sil_prob);
  if (edge_sil) gh_hmm_loop_edge_silence(&h, set.hmms[sil].num_states);
  for (int32_t k = 0; k < n; ++k) {
    memcpy(set.hmms[ids[k]].init, saved[k], set.hmms[ids[k]].num_states * sizeof(float));
    free(saved[k]);
  }
  free(saved);
  int32_t S = h.num_states;
  gh_hmm_set_add(&set, &h);
  free(ids);
  gh_hmm_set_write(hmm_wx, binary, &set);
  gh_log("%s word loop '%s' of %d words%s (%d states, word penalty %g); wrote %d HMMs to %s",
         replaced ? "rebuilt" : "added", loop, n, sil >= 0 ? " and silence" : "", S, penalty, set.num_hmms, hmm_wx);
  gh_hmm_set_free(&set);
  gh_opts_free(po);
  return 0;
}
