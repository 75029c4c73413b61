/* feat-to-dim -- print the feature dimension (Kaldi's featbin/feat-to-dim.cc). */
#include <stdio.h>
#include "base/gh-base.h"
#include "io/kaldi-io.h"
#include "base/opts.h"
#include "io/table.h"

static const char *usage =
    "Reads an archive of features.  If second argument is wxfilename, writes\n"
    "the feature dimension of the first feature file; if second argument is\n"
    "wspecifier, writes an archive of the feature dimension, indexed by utterance\n"
    "id.\n"
    "Usage: feat-to-dim [options] <feat-rspecifier> (<dim-wspecifier>|<dim-wxfilename>)\n"
    "e.g.: feat-to-dim scp:feats.scp -\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_opts *po = gh_opts_new(usage);
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *rspec = gh_opts_arg(po, 0), *wspec = gh_opts_arg(po, 1);

  gh_seq_reader *reader = gh_seq_reader_open(rspec, GH_OBJ_MATRIX);
  if (gh_is_wspecifier(wspec)) {
    gh_writer *writer = gh_writer_open(wspec);
    for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader)) {
      const gh_matrix *m = gh_seq_reader_value(reader);
      gh_writer_write(writer, gh_seq_reader_key(reader), GH_OBJ_INT32, &m->cols);
    }
    gh_writer_close(writer);
  } else {
    if (gh_seq_reader_done(reader)) gh_die("%s: could not read any features (empty archive?)", rspec);
    const gh_matrix *m = gh_seq_reader_value(reader);
    gh_ostream *out = gh_ostream_open(wspec);
    fprintf(gh_ostream_fp(out), "%d\n", m->cols);
    gh_ostream_close(out);
  }
  gh_seq_reader_close(reader);
  gh_opts_free(po);
  return 0;
}
