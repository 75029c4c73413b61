/* bench-read.c -- the archive reader alone (issue 8 item 6): what
 * gmm-score-gpu's reader thread does, without the scoring and writing
 * threads: read a feature rspecifier sequentially and copy every matrix,
 * checked finite, into a batch buffer of --batch-frames rows (reused round
 * robin, as the tool's batches are).
 *   build/bench/bench-read [--obj=view|matrix] [--reps=5] [--batch-frames=16384] RSPECIFIER
 * --obj=view: GH_OBJ_MATRIX_VIEW + gh_matrix_view_copy_finite (the tool's
 * path); --obj=matrix: GH_OBJ_MATRIX (a malloc'd matrix per utterance) + the
 * same copy.  Prints one line per repetition:
 *   read <obj>: <s> s, <M> M frames/s, <GB/s> GB/s of matrix data
 */
#include "bench-args.h"
#include "gh-base.h"
#include "table.h"

#include <stdio.h>

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *obj = sarg(argc, argv, "--obj", "view"), *rspec = argc > 1 ? argv[argc - 1] : "";
  const int reps = (int)arg(argc, argv, "--reps", 5);
  const int64_t batch_frames = arg(argc, argv, "--batch-frames", 16384);
  const int view = strcmp(obj, "view") == 0;
  if (!gh_is_rspecifier(rspec) || (!view && strcmp(obj, "matrix") != 0) || batch_frames < 1)
    gh_die("usage: bench-read [--obj=view|matrix] [--reps=N] [--batch-frames=N] RSPECIFIER");
  float *X = NULL;
  int64_t capX = 0;
  for (int rep = 0; rep < reps; ++rep) {
    double t0 = gh_seconds();
    gh_seq_reader *r = gh_seq_reader_open(rspec, view ? GH_OBJ_MATRIX_VIEW : GH_OBJ_MATRIX);
    int64_t frames = 0, bytes = 0, off = 0; /* off: floats used in X */
    for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {
      gh_matrix_view v;
      if (view) v = *(const gh_matrix_view *)gh_seq_reader_value(r);
      else {
        const gh_matrix *m = gh_seq_reader_value(r);
        v = (gh_matrix_view){m->rows, m->cols, m->data};
      }
      int64_t n = (int64_t)v.rows * v.cols;
      if (!X || n > capX) { /* sized once for a batch, as the tool's page-locked batches */
        capX = n > 2 * batch_frames * v.cols ? n : 2 * batch_frames * v.cols;
        free(X);
        X = gh_malloc((size_t)capX * sizeof(float) + 1);
        off = 0;
      }
      if (off + n > capX) off = 0;
      gh_matrix_view_copy_finite(&v, X + off, rspec, gh_seq_reader_key(r));
      off += n;
      frames += v.rows;
      bytes += n * (int64_t)sizeof(float);
    }
    gh_seq_reader_close(r);
    double t = gh_seconds() - t0;
    printf("read %s: %.3f s, %.2f M frames/s, %.2f GB/s of matrix data\n", obj, t, frames / t / 1e6,
           bytes / t / 1e9);
  }
  free(X);
  return 0;
}
