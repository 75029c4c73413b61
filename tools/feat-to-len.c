/* feat-to-len -- utterance lengths in frames (Kaldi's featbin/feat-to-len.cc). */
#include <stdio.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "io/table.h"

static const char *usage =
    "Reads an archive of features and writes a corresponding archive\n"
    "that maps utterance-id to utterance length in frames, or (with\n"
    "one argument) print to stdout the total number of frames in the\n"
    "input archive.\n"
    "Usage: feat-to-len [options] <in-rspecifier> [<out-wspecifier>]\n"
    "e.g.: feat-to-len scp:feats.scp ark,t:feats.lengths\n"
    "or: feat-to-len scp:feats.scp\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_opts *po = gh_opts_new(usage);
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs != 1 && nargs != 2) gh_opts_usage_exit(po);
  const char *rspec = gh_opts_arg(po, 0);

  gh_seq_reader *reader = gh_seq_reader_open(rspec, GH_OBJ_MATRIX);
  if (nargs == 2) {
    gh_writer *writer = gh_writer_open(gh_opts_arg(po, 1));
    for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader)) {
      const gh_matrix *m = gh_seq_reader_value(reader);
      gh_writer_write(writer, gh_seq_reader_key(reader), GH_OBJ_INT32, &m->rows);
    }
    gh_writer_close(writer);
  } else {
    int64_t tot = 0;
    for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader))
      tot += ((const gh_matrix *)gh_seq_reader_value(reader))->rows;
    printf("%lld\n", (long long)tot);
  }
  gh_seq_reader_close(reader);
  gh_opts_free(po);
  return 0;
}
