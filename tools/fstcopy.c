/* fstcopy -- copy tables of FSTs (Kaldi's fstbin/fstcopy.cc), e.g. training graphs
 * between binary and text archives. */
#include "base/gh-base.h"
#include "base/opts.h"
#include "io/fst.h"
#include "io/table.h"

static const char *usage =
    "Copy tables/archives of FSTs, indexed by a string (e.g. utterance-id)\n"
    "\n"
    "Usage: fstcopy <fst-rspecifier> <fst-wspecifier>\n"
    " e.g.: fstcopy \"ark:gunzip -c exp/mono/fsts.1.gz |\" ark,t:-\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_opts *po = gh_opts_new(usage);
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *rspec = gh_opts_arg(po, 0), *wspec = gh_opts_arg(po, 1);
  if (!gh_is_rspecifier(rspec)) gh_die("'%s' is not an rspecifier (expected ark:... or scp:...)", rspec);
  if (!gh_is_wspecifier(wspec)) gh_die("'%s' is not a wspecifier (expected ark:...)", wspec);
  gh_seq_reader *r = gh_seq_reader_open(rspec, GH_OBJ_FST);
  gh_writer *w = gh_writer_open(wspec);
  long n = 0;
  for (; !gh_seq_reader_done(r); gh_seq_reader_next(r), n++)
    gh_writer_write(w, gh_seq_reader_key(r), GH_OBJ_FST, gh_seq_reader_value(r));
  gh_seq_reader_close(r);
  gh_writer_close(w);
  gh_log("Copied %ld FSTs.", n);
  gh_opts_free(po);
  return n ? 0 : 1;
}
