/* copy-vector -- copy float vectors or archives of them, e.g. VAD decisions
 * or speaker vectors (Kaldi's bin/copy-vector.cc). */
#include "base/gh-base.h"
#include "base/opts.h"
#include "io/kaldi-io.h"
#include "io/table.h"

static const char *usage =
    "Copy vectors, or archives of vectors (e.g. transition-accs; speaker vectors; VAD decisions)\n"
    "\n"
    "Usage: copy-vector [options] (<vector-in-rspecifier>|<vector-in-rxfilename>) "
    "(<vector-out-wspecifier>|<vector-out-wxfilename>)\n"
    " e.g.: copy-vector --binary=false 1.vec -\n"
    "   copy-vector ark:vad.ark ark,t:-\n";

/* Kaldi's Vector::Resize(change_dim, kCopyData): truncate or zero-pad. */
static void change_dim(gh_vector *v, int32_t dim) {
  gh_vector out = {0, NULL};
  gh_vector_resize(&out, dim);
  for (int32_t i = 0; i < dim; ++i) out.data[i] = i < v->dim ? v->data[i] : 0.0f;
  gh_vector_free(v);
  *v = out;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1;
  int32_t new_dim = -1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write in binary mode (only relevant if output is a wxfilename)");
  gh_opts_int(po, "change-dim", &new_dim, "Use this option to truncate or zero-pad the vectors (-1: keep).");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  if (new_dim < -1) gh_die("--change-dim=%d must be >= 0 (or -1 to keep the dimension)", new_dim);
  const char *in_fn = gh_opts_arg(po, 0), *out_fn = gh_opts_arg(po, 1);
  int in_table = gh_is_rspecifier(in_fn), out_table = gh_is_wspecifier(out_fn);
  if (in_table != out_table) gh_die("cannot mix archives with regular files (copying vectors: %s, %s)", in_fn, out_fn);

  gh_vector v = {0, NULL};
  if (!in_table) {
    gh_istream *in = gh_istream_open(in_fn);
    if (!in) gh_die("%s", gh_last_error());
    gh_read_vector(in, gh_read_binary_marker(in), &v);
    gh_istream_close(in);
    if (new_dim >= 0) change_dim(&v, new_dim);
    gh_ostream *out = gh_ostream_open(out_fn);
    gh_write_binary_marker(out, binary);
    gh_write_vector(out, binary, &v);
    gh_ostream_close(out);
    gh_vector_free(&v);
    gh_log("Copied vector to %s", out_fn);
    gh_opts_free(po);
    return 0;
  }
  gh_seq_reader *reader = gh_seq_reader_open(in_fn, GH_OBJ_VECTOR);
  gh_writer *writer = gh_writer_open_binary(out_fn, binary);
  int64_t num_done = 0;
  for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader), num_done++) {
    const gh_vector *in = gh_seq_reader_value(reader);
    if (new_dim < 0) {
      gh_writer_write(writer, gh_seq_reader_key(reader), GH_OBJ_VECTOR, in);
      continue;
    }
    gh_vector_resize(&v, in->dim);
    for (int32_t i = 0; i < in->dim; ++i) v.data[i] = in->data[i];
    change_dim(&v, new_dim);
    gh_writer_write(writer, gh_seq_reader_key(reader), GH_OBJ_VECTOR, &v);
  }
  gh_seq_reader_close(reader);
  gh_writer_close(writer);
  gh_vector_free(&v);
  if (new_dim >= 0) gh_log("Copied %lld vectors, setting dim to %d", (long long)num_done, new_dim);
  else gh_log("Copied %lld vectors.", (long long)num_done);
  gh_opts_free(po);
  return num_done != 0 ? 0 : 1;
}
