/* hmm-copy -- copy an HMM set, converting between binary and text, and
 * optionally keeping only some of its HMMs (the HMM-set counterpart of
 * gmm-copy; Kaldi's copy-transition-model for its own format).  The output is
 * written to a temp file and renamed, so a failure never leaves a truncated
 * set. */
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "base/opts.h"
#include "hmm/hmm.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Copy an HMM set, e.g. to convert it between binary and text (--binary=false), or keep\n"
      "only the HMMs named by --hmms (in that order).\n"
      "Usage:  hmm-copy [options] <hmm-in> <hmm-out>\n"
      "e.g.:   hmm-copy --binary=false final.hmm final.txt\n"
      "        hmm-copy --hmms=yes,no,sil final.hmm words.hmm\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  const char *keep = "";
  gh_opts_bool(po, "binary", &binary, "Write the HMM set in binary mode");
  gh_opts_string(po, "hmms", &keep, "Comma-separated names of the HMMs to copy (default: all)");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *rx = gh_opts_arg(po, 0), *wx = gh_opts_arg(po, 1);
  gh_hmm_set in;
  gh_hmm_set_read(rx, &in);
  if (*keep) {
    gh_hmm_set out;
    memset(&out, 0, sizeof out);
    char *buf = gh_strdup(keep), *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
      if (gh_hmm_set_find(&out, w) >= 0) gh_die("--hmms: '%s' listed twice", w);
      int32_t i = -1; /* entries already moved are zeroed (name NULL) */
      for (int32_t k = 0; k < in.num_hmms && i < 0; ++k)
        if (in.hmms[k].name && !strcmp(in.hmms[k].name, w)) i = k;
      if (i < 0) gh_die("%s: --hmms: no HMM '%s'", rx, w);
      gh_hmm_set_add(&out, &in.hmms[i]); /* moves it (in.hmms[i] zeroed) */
    }
    free(buf);
    gh_hmm_set_free(&in);
    in = out;
  }
  gh_hmm_set_write(wx, binary, &in);
  gh_log("copied %d HMMs (%d pdfs) from %s to %s", in.num_hmms, gh_hmm_set_num_pdfs(&in), rx, wx);
  gh_hmm_set_free(&in);
  gh_opts_free(po);
  return 0;
}
