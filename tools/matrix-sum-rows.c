/* matrix-sum-rows -- sum the rows of each matrix into one vector per key
 * (Kaldi's matrix-sum-rows).  Used by recipes to turn per-frame per-pdf
 * log-likelihoods into per-utterance totals. */
#include "base/gh-base.h"
#include "base/opts.h"
#include "io/table.h"

#include <stdlib.h>

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Sum the rows of each input matrix, writing one vector per key\n"
      "(e.g. per-utterance total log-likelihood of every pdf from gmm-score-gpu output).\n"
      "Usage: matrix-sum-rows [options] <matrix-rspecifier> <vector-wspecifier>\n"
      " e.g.: gmm-score-gpu final.mdl ark:dev.ark ark:- | matrix-sum-rows ark:- ark,t:totals.txt";
  gh_opts *po = gh_opts_new(usage);
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);

  gh_seq_reader *r = gh_seq_reader_open(gh_opts_arg(po, 0), GH_OBJ_MATRIX);
  gh_writer *w = gh_writer_open(gh_opts_arg(po, 1));
  int64_t num_done = 0;
  gh_dvector sum = {0, NULL};
  gh_vector out = {0, NULL};
  for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {
    const char *key = gh_seq_reader_key(r);
    const gh_matrix *m = gh_seq_reader_value(r);
    gh_dvector_resize(&sum, m->cols);
    gh_vector_resize(&out, m->cols);
    for (int32_t j = 0; j < m->cols; ++j) sum.data[j] = 0.0;
    for (int32_t t = 0; t < m->rows; ++t) {
      const float *row = gh_row(m, t);
      for (int32_t j = 0; j < m->cols; ++j) sum.data[j] += row[j];
    }
    for (int32_t j = 0; j < m->cols; ++j) out.data[j] = (float)sum.data[j];
    gh_writer_write(w, key, GH_OBJ_VECTOR, &out);
    ++num_done;
  }
  gh_seq_reader_close(r);
  gh_writer_close(w);
  gh_dvector_free(&sum);
  gh_vector_free(&out);
  gh_log("summed rows of %lld matrices", (long long)num_done);
  gh_opts_free(po);
  return num_done ? 0 : 1;
}
