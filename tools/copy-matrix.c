/* copy-matrix -- copy matrices or archives of matrices, optionally scaled or
 * with an element-wise function applied (Kaldi's bin/copy-matrix.cc; the
 * functions are lib/feat/feat-functions.c gh_matrix_apply). */
#include "base/gh-base.h"
#include "base/opts.h"
#include "feat/feat-functions.h"
#include "io/kaldi-io.h"
#include "io/table.h"

static const char *usage =
    "Copy matrices, or archives of matrices (e.g. features or transforms)\n"
    "Also see copy-feats which has other format options\n"
    "\n"
    "Usage: copy-matrix [options] <matrix-in-rspecifier> <matrix-out-wspecifier>\n"
    "  or: copy-matrix [options] <matrix-in-rxfilename> <matrix-out-wxfilename>\n"
    " e.g.: copy-matrix --binary=false 1.mat -\n"
    "   copy-matrix ark:2.trans ark,t:-\n"
    "See also: copy-feats\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1;
  gh_matrix_apply_opts ao;
  gh_matrix_apply_opts_default(&ao);
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write in binary mode (only relevant if output is a wxfilename)");
  gh_opts_float(po, "scale", &ao.scale, "This option can be used to scale the matrices being copied.");
  gh_opts_bool(po, "apply-log", &ao.apply_log,
               "This option can be used to apply log on the matrices (values floored at 1e-20 first).");
  gh_opts_bool(po, "apply-exp", &ao.apply_exp, "This option can be used to apply exp on the matrices");
  gh_opts_float(po, "apply-power", &ao.apply_power, "This option can be used to apply a power on the matrices");
  gh_opts_bool(po, "apply-softmax-per-row", &ao.apply_softmax_per_row,
               "This option can be used to apply softmax per row of the matrices");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  if (ao.apply_log + ao.apply_exp + ao.apply_softmax_per_row > 1)
    gh_die("only one of --apply-log, --apply-exp and --apply-softmax-per-row can be given");
  const char *in_fn = gh_opts_arg(po, 0), *out_fn = gh_opts_arg(po, 1);
  int in_table = gh_is_rspecifier(in_fn), out_table = gh_is_wspecifier(out_fn);
  if (in_table != out_table) gh_die("cannot mix archives with regular files (copying matrices: %s, %s)", in_fn, out_fn);

  if (!in_table) {
    gh_istream *in = gh_istream_open(in_fn);
    if (!in) gh_die("%s", gh_last_error());
    gh_matrix m = {0, 0, NULL};
    gh_read_matrix(in, gh_read_binary_marker(in), &m);
    gh_istream_close(in);
    gh_check_finite_matrix(&m, in_fn, "");
    if (!gh_matrix_apply(&ao, &m)) gh_die("%s: %s", in_fn, gh_last_error());
    gh_ostream *out = gh_ostream_open(out_fn);
    gh_write_binary_marker(out, binary);
    gh_write_matrix(out, binary, &m);
    gh_ostream_close(out);
    gh_matrix_free(&m);
    gh_log("Copied matrix to %s", out_fn);
    gh_opts_free(po);
    return 0;
  }
  gh_seq_reader *reader = gh_seq_reader_open(in_fn, GH_OBJ_MATRIX);
  gh_writer *writer = gh_writer_open_binary(out_fn, binary);
  int64_t num_done = 0;
  for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader), num_done++) {
    const char *key = gh_seq_reader_key(reader);
    gh_matrix *m = gh_seq_reader_value(reader);
    gh_check_finite_matrix(m, in_fn, key);
    if (!gh_matrix_apply(&ao, m)) gh_die("%s, key '%s': %s", in_fn, key, gh_last_error());
    gh_writer_write(writer, key, GH_OBJ_MATRIX, m);
  }
  gh_seq_reader_close(reader);
  gh_writer_close(writer);
  gh_log("Copied %lld matrices.", (long long)num_done);
  gh_opts_free(po);
  return num_done != 0 ? 0 : 1;
}
