/* prepare-lang -- the lang directory of Kaldi's utils/prepare_lang.sh (phones.txt,
 * words.txt, topo, oov.{txt,int}, phones/..., L.fst, L_disambig.fst) from a dict directory,
 * byte for byte; egs/utils/prepare_lang.sh calls it with the script's arguments. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "lang/lang.h"

static const char *usage =
    "Prepare a lang directory (phone and word symbol tables, phone sets, HMM topology,\n"
    "lexicon FSTs) from a dictionary directory, as Kaldi's utils/prepare_lang.sh does.\n"
    "<dict-dir> holds silence_phones.txt, nonsilence_phones.txt, optional_silence.txt,\n"
    "extra_questions.txt (may be absent) and lexicon.txt or lexiconp.txt.\n"
    "\n"
    "Usage: prepare-lang [options] <dict-dir> <oov-word> <tmp-dir> <lang-dir>\n"
    " e.g.: prepare-lang data/local/dict \"<UNK>\" data/local/lang_tmp data/lang\n";

static void make_dir(const char *d) { /* mkdir -p */
  char *p = gh_strdup(d);
  for (char *s = p + 1; *s; s++)
    if (*s == '/') {
      *s = '\0';
      if (mkdir(p, 0777) && errno != EEXIST) gh_die("cannot create directory '%s': %s", p, strerror(errno));
      *s = '/';
    }
  if (mkdir(p, 0777) && errno != EEXIST) gh_die("cannot create directory '%s': %s", p, strerror(errno));
  free(p);
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_lang_opts o;
  gh_lang_opts_default(&o);
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "position-dependent-phones", &o.position_dependent_phones,
               "Word-position-dependent phones (_B, _E, _I, _S variants of every phone)");
  gh_opts_int(po, "num-sil-states", &o.num_sil_states, "Number of states of the silence phones' HMMs");
  gh_opts_int(po, "num-nonsil-states", &o.num_nonsil_states, "Number of states of the non-silence phones' HMMs");
  gh_opts_bool(po, "share-silence-phones", &o.share_silence_phones,
               "Share one tree root (and so the pdfs) among all silence phones");
  gh_opts_double(po, "sil-prob", &o.sil_prob, "Probability of optional silence between words in L.fst (0: none)");
  const char *table = "";
  gh_opts_string(po, "phone-symbol-table", &table,
                 "An existing phones.txt whose phone ids to keep (e.g. a new dictionary for an existing setup)");
  if (gh_opts_parse(po, argc, argv) != 4) gh_opts_usage_exit(po);
  const char *dict = gh_opts_arg(po, 0), *oov = gh_opts_arg(po, 1), *tmp = gh_opts_arg(po, 2),
             *lang = gh_opts_arg(po, 3);
  if (*table) o.phone_symbol_table = table;
  make_dir(tmp);
  make_dir(lang);
  char *phones = gh_malloc(strlen(lang) + 8);
  sprintf(phones, "%s/phones", lang);
  make_dir(phones);
  free(phones);
  gh_prepare_lang(&o, dict, oov, tmp, lang);
  gh_opts_free(po);
  return 0;
}
