/* paste-feats -- join feature matrices of the same utterance column-wise,
 * like paste a b (Kaldi's featbin/paste-feats.cc). */
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "io/kaldi-io.h"
#include "io/table.h"

static const char *usage =
    "Paste feature files (assuming they have the same lengths);  think of the\n"
    "unix command paste a b.\n"
    "Usage: paste-feats <in-rspecifier1> <in-rspecifier2> [<in-rspecifier3> ...] <out-wspecifier>\n"
    " or: paste-feats <in-rxfilename1> <in-rxfilename2> [<in-rxfilename3> ...] <out-wxfilename>\n"
    " e.g. paste-feats ark:feats1.ark \"ark:select-feats 0-3 ark:feats2.ark ark:- |\" ark:feats-out.ark\n"
    "  or: paste-feats foo.mat bar.mat baz.mat\n";

/* Kaldi's AppendFeats: out = [in[0] in[1] ...] over the first min length
 * rows; 0 (a warning naming utt) if the lengths differ by more than
 * tolerance or one is empty. */
static int append_feats(const gh_matrix *const *in, int n, const char *utt, int32_t tolerance, gh_matrix *out) {
  int32_t min_len = in[0]->rows, max_len = in[0]->rows;
  int64_t tot_dim = 0;
  for (int i = 0; i < n; ++i) {
    if (in[i]->rows < min_len) min_len = in[i]->rows;
    if (in[i]->rows > max_len) max_len = in[i]->rows;
    tot_dim += in[i]->cols;
  }
  if ((int64_t)max_len - min_len > tolerance || min_len == 0) {
    gh_warn("length mismatch %d vs. %d%s%s exceeds tolerance %d", max_len, min_len, *utt ? " for utt " : "", utt,
            tolerance);
    return 0;
  }
  if (tot_dim > INT32_MAX) gh_die("pasted dimension %lld is too large", (long long)tot_dim);
  if (max_len > min_len)
    gh_log("length mismatch %d vs. %d%s%s within tolerance %d", max_len, min_len, *utt ? " for utt " : "", utt,
           tolerance);
  gh_matrix_resize(out, min_len, (int32_t)tot_dim);
  for (int32_t t = 0; t < min_len; ++t) {
    float *dst = gh_row(out, t);
    for (int i = 0; i < n; ++i) {
      memcpy(dst, gh_row(in[i], t), (size_t)in[i]->cols * sizeof(float));
      dst += in[i]->cols;
    }
  }
  return 1;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int32_t tolerance = 0;
  int binary = 1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_int(po, "length-tolerance", &tolerance, "Tolerate small length differences of feats (warn and trim at end)");
  gh_opts_bool(po, "binary", &binary, "If true, output files in binary (only relevant for single-file operation, i.e. no tables)");
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs < 3) gh_opts_usage_exit(po);
  if (tolerance < 0) gh_die("--length-tolerance=%d must be >= 0", tolerance);
  int nin = nargs - 1;
  const char *out_fn = gh_opts_arg(po, nargs - 1);
  const gh_matrix **in = gh_calloc((size_t)nin, sizeof *in);
  gh_matrix out = {0, 0, NULL};

  if (!gh_is_rspecifier(gh_opts_arg(po, 0))) { /* single files */
    gh_matrix *mats = gh_calloc((size_t)nin, sizeof *mats);
    for (int i = 0; i < nin; ++i) {
      const char *fn = gh_opts_arg(po, i);
      gh_istream *s = gh_istream_open(fn);
      if (!s) gh_die("%s", gh_last_error());
      gh_read_matrix(s, gh_read_binary_marker(s), &mats[i]);
      gh_istream_close(s);
      gh_check_finite_matrix(&mats[i], fn, "");
      in[i] = &mats[i];
    }
    if (!append_feats(in, nin, "", tolerance, &out)) return 1;
    gh_ostream *os = gh_ostream_open(out_fn);
    gh_write_binary_marker(os, binary);
    gh_write_matrix(os, binary, &out);
    gh_ostream_close(os);
    gh_log("Wrote appended features to %s", out_fn);
    for (int i = 0; i < nin; ++i) gh_matrix_free(&mats[i]);
    free(mats);
    free(in);
    gh_matrix_free(&out);
    gh_opts_free(po);
    return 0;
  }

  const char *rspec1 = gh_opts_arg(po, 0);
  gh_seq_reader *first = gh_seq_reader_open(rspec1, GH_OBJ_MATRIX);
  gh_rand_reader **others = gh_calloc((size_t)nin, sizeof *others);
  for (int i = 1; i < nin; ++i) others[i] = gh_rand_reader_open(gh_opts_arg(po, i), GH_OBJ_MATRIX);
  gh_writer *writer = gh_writer_open(out_fn);
  int64_t num_done = 0, num_err = 0;
  for (; !gh_seq_reader_done(first); gh_seq_reader_next(first)) {
    const char *utt = gh_seq_reader_key(first);
    in[0] = gh_seq_reader_value(first);
    int i;
    for (i = 1; i < nin; ++i) {
      in[i] = gh_rand_reader_value(others[i], utt);
      if (!in[i]) {
        gh_warn_no_key(gh_opts_arg(po, i), utt, "features", "utterance skipped");
        break;
      }
    }
    if (i < nin || !append_feats(in, nin, utt, tolerance, &out)) {
      num_err++;
      continue;
    }
    gh_writer_write(writer, utt, GH_OBJ_MATRIX, &out);
    num_done++;
  }
  gh_seq_reader_close(first);
  for (int i = 1; i < nin; ++i) gh_rand_reader_close(others[i]);
  gh_writer_close(writer);
  free(others);
  free(in);
  gh_matrix_free(&out);
  gh_log("Done %lld utts, errors on %lld", (long long)num_done, (long long)num_err);
  gh_opts_free(po);
  return num_done == 0 ? 1 : 0;
}
