/* copy-int-vector -- copy integer vectors or archives of them, e.g.
 * alignments (Kaldi's bin/copy-int-vector.cc). */
#include <stdlib.h>
#include "base/gh-base.h"
#include "io/kaldi-io.h"
#include "base/opts.h"
#include "io/table.h"

static const char *usage =
    "Copy vectors of integers, or archives of vectors of integers \n"
    "(e.g. alignments)\n"
    "\n"
    "Usage: copy-int-vector [options] (vector-in-rspecifier|vector-in-rxfilename) "
    "(vector-out-wspecifier|vector-out-wxfilename)\n"
    " e.g.: copy-int-vector --binary=false foo -\n"
    "   copy-int-vector ark:1.ali ark,t:-\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write in binary mode (for a table wspecifier without ',t'/',b')");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *rspec = gh_opts_arg(po, 0), *wspec = gh_opts_arg(po, 1);

  int in_table = gh_is_rspecifier(rspec), out_table = gh_is_wspecifier(wspec);
  if (in_table != out_table) gh_die("cannot mix archives and regular files (%s, %s)", rspec, wspec);
  if (!in_table) { /* one vector in Kaldi's WriteIntegerVector form */
    gh_istream *in = gh_istream_open(rspec);
    if (!in) gh_die("%s", gh_last_error());
    int32_t n;
    int32_t *v = gh_read_int32_vector_basic(in, gh_read_binary_marker(in), &n);
    gh_istream_close(in);
    gh_ostream *out = gh_ostream_open(wspec);
    gh_write_binary_marker(out, binary);
    gh_write_int32_vector_basic(out, binary, v, n);
    gh_ostream_close(out);
    free(v);
    gh_log("Copied vector to %s", wspec);
    gh_opts_free(po);
    return 0;
  }

  gh_seq_reader *reader = gh_seq_reader_open(rspec, GH_OBJ_INT32_VECTOR);
  gh_writer *writer = gh_writer_open_binary(wspec, binary);
  int64_t num_done = 0;
  for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader), num_done++)
    gh_writer_write(writer, gh_seq_reader_key(reader), GH_OBJ_INT32_VECTOR, gh_seq_reader_value(reader));
  gh_seq_reader_close(reader);
  gh_writer_close(writer);
  gh_log("Copied %lld vectors of int32.", (long long)num_done);
  gh_opts_free(po);
  return num_done != 0 ? 0 : 1;
}
