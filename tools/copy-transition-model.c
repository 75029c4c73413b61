/* copy-transition-model -- copy the TransitionModel of a .mdl (or a bare
 * transition model) to its own file, binary or text (Kaldi
 * bin/copy-transition-model.cc).  Byte-identical to Kaldi's output. */
#include "base/gh-base.h"
#include "base/opts.h"
#include "hmm/transition.h"
#include "io/kaldi-io.h"

static const char *usage =
    "Copies a transition model (this can be used to separate transition \n"
    " models from the acoustic models they are written with.\n"
    "Usage:  copy-transition-model [options] <transition-model or model file> <transition-model-out>\n"
    "e.g.: \n"
    " copy-transition-model --binary=false 1.mdl 1.txt\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode.");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  gh_transition_model *tm = gh_transition_read_file(gh_opts_arg(po, 0));
  gh_ostream *out = gh_ostream_open(gh_opts_arg(po, 1));
  gh_write_binary_marker(out, binary);
  gh_transition_write(out, binary, tm);
  gh_ostream_close(out);
  gh_log("Copied transition model.");
  gh_transition_free(tm);
  gh_opts_free(po);
  return 0;
}
