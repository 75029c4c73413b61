/* subsample-feats -- keep every n'th frame, or repeat each frame -n times
 * (Kaldi's featbin/subsample-feats.cc; lib/feat/feat-functions.c
 * gh_subsample_frames). */
#include "base/gh-base.h"
#include "base/opts.h"
#include "feat/feat-functions.h"
#include "io/table.h"

static const char *usage =
    "Sub-samples features by taking every n'th frame; with a negative n,\n"
    "repeats each frame -n times (up-sampling).\n"
    "Usage: subsample-feats [options] <in-rspecifier> <out-wspecifier>\n"
    "  e.g. subsample-feats --n=2 ark:- ark:-\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int32_t n = 1, offset = 0;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_int(po, "n", &n, "Take every n'th feature, for this value of n (with negative value, repeats each feature n times)");
  gh_opts_int(po, "offset", &offset, "Start with the feature with this offset, then take every n'th feature.");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  if (n == 0) gh_die("--n=0 is not allowed (use n > 0 to sub-sample, n < 0 to repeat frames)");
  if (offset < 0) gh_die("--offset=%d must be >= 0", offset);
  if (n < 0 && offset != 0) gh_die("--offset cannot be used with a negative --n (--n=%d, --offset=%d)", n, offset);
  const char *rspec = gh_opts_arg(po, 0), *wspec = gh_opts_arg(po, 1);

  gh_seq_reader *reader = gh_seq_reader_open(rspec, GH_OBJ_MATRIX);
  gh_writer *writer = gh_writer_open(wspec);
  gh_matrix out = {0, 0, NULL};
  int64_t num_done = 0, num_err = 0, frames_in = 0, frames_out = 0;
  for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader)) {
    const char *key = gh_seq_reader_key(reader);
    const gh_matrix *feats = gh_seq_reader_value(reader);
    if (!gh_subsample_frames(n, offset, feats, &out)) gh_die("%s, key '%s': %s", rspec, key, gh_last_error());
    frames_in += feats->rows;
    frames_out += out.rows;
    if (n > 0 && out.rows == 0) {
      gh_warn("%s, key '%s': output would have no rows (%d frames, --offset=%d), producing no output", rspec, key,
              feats->rows, offset);
      num_err++;
      continue;
    }
    gh_writer_write(writer, key, GH_OBJ_MATRIX, &out);
    num_done++;
  }
  gh_seq_reader_close(reader);
  gh_writer_close(writer);
  gh_matrix_free(&out);
  gh_log("Processed %lld feature matrices; %lld with errors.", (long long)num_done, (long long)num_err);
  gh_log("Processed %lld input frames and %lld output frames.", (long long)frames_in, (long long)frames_out);
  gh_opts_free(po);
  return num_done != 0 ? 0 : 1;
}
