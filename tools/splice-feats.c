/* splice-feats -- stack each frame with its left and right neighbours
 * (Kaldi's featbin/splice-feats.cc; lib/feat/feat-functions.c
 * gh_splice_frames). */
#include "base/gh-base.h"
#include "base/opts.h"
#include "feat/feat-functions.h"
#include "io/table.h"

static const char *usage =
    "Splice features with left and right context (e.g. prior to LDA)\n"
    "Usage: splice-feats [options] <in-rspecifier> <out-wspecifier>\n"
    "e.g.: splice-feats --left-context=4 --right-context=4 ark:feats.ark ark:spliced.ark\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int32_t left = 4, right = 4;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_int(po, "left-context", &left, "Number of frames of left context");
  gh_opts_int(po, "right-context", &right, "Number of frames of right context");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  if (left < 0 || right < 0) gh_die("--left-context=%d and --right-context=%d must be >= 0", left, right);
  const char *rspec = gh_opts_arg(po, 0), *wspec = gh_opts_arg(po, 1);
  gh_seq_reader *reader = gh_seq_reader_open(rspec, GH_OBJ_MATRIX);
  gh_writer *writer = gh_writer_open(wspec);
  gh_matrix out = {0, 0, NULL};
  int64_t num_done = 0;
  for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader), num_done++) {
    const char *key = gh_seq_reader_key(reader);
    if (!gh_splice_frames(left, right, gh_seq_reader_value(reader), &out))
      gh_die("%s, key '%s': %s", rspec, key, gh_last_error());
    gh_writer_write(writer, key, GH_OBJ_MATRIX, &out);
  }
  gh_seq_reader_close(reader);
  gh_writer_close(writer);
  gh_matrix_free(&out);
  gh_log("Spliced %lld feature matrices with context -%d..+%d.", (long long)num_done, left, right);
  gh_opts_free(po);
  return 0;
}
