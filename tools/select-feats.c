/* select-feats -- keep some columns (dimensions) of every feature matrix,
 * like cut -f (Kaldi's featbin/select-feats.cc; the list is parsed by
 * lib/feat/feat-functions.c gh_parse_column_ranges). */
#include <stdlib.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "feat/feat-functions.h"
#include "io/table.h"

static const char *usage =
    "Select certain dimensions of the feature file;  think of it as the unix\n"
    "command cut -f ...\n"
    "Usage: select-feats <selection> <in-rspecifier> <out-wspecifier>\n"
    "  e.g. select-feats 0,24-22,3-12 scp:feats.scp ark,scp:feat-red.ark,feat-red.scp\n"
    "(indices are 0-based; a range a-b with a > b selects a, a-1, ..., b)\n"
    "See also copy-feats, subset-feats, subsample-feats\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_opts *po = gh_opts_new(usage);
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *selection = gh_opts_arg(po, 0), *rspec = gh_opts_arg(po, 1), *wspec = gh_opts_arg(po, 2);

  gh_seq_reader *reader = gh_seq_reader_open(rspec, GH_OBJ_MATRIX);
  if (gh_seq_reader_done(reader)) {
    gh_warn("%s: empty archive provided", rspec);
    gh_seq_reader_close(reader);
    gh_opts_free(po);
    return 0;
  }
  int32_t dim_in = ((const gh_matrix *)gh_seq_reader_value(reader))->cols, *cols = NULL, n = 0;
  if (!gh_parse_column_ranges(selection, dim_in, &cols, &n)) gh_die("%s", gh_last_error());
  gh_writer *writer = gh_writer_open(wspec);
  gh_matrix out = {0, 0, NULL};
  int64_t num_done = 0;
  for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader), num_done++) {
    const char *key = gh_seq_reader_key(reader);
    const gh_matrix *m = gh_seq_reader_value(reader);
    if (m->cols != dim_in)
      gh_die_dim(rspec, key, "features", m->cols, dim_in, "the earlier utterances");
    gh_select_columns(m, cols, n, &out);
    gh_writer_write(writer, key, GH_OBJ_MATRIX, &out);
  }
  gh_seq_reader_close(reader);
  gh_writer_close(writer);
  gh_matrix_free(&out);
  free(cols);
  gh_log("Selected %d of %d dimensions of %lld feature matrices.", n, dim_in, (long long)num_done);
  gh_opts_free(po);
  return 0;
}
