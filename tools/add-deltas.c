/* add-deltas -- append delta and delta-delta features (Kaldi's
 * featbin/add-deltas.cc; the filter is lib/feat/feat.c gh_compute_deltas). */
#include "feat/feat.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "io/table.h"

static const char *usage =
    "Add deltas (typically to raw mfcc or plp features\n"
    "Usage: add-deltas [options] in-rspecifier out-wspecifier\n"
    "e.g.: add-deltas --delta-order=2 --delta-window=2 ark:mfcc.ark ark:mfcc-deltas.ark\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int32_t order = 2, window = 2, truncate = 0;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_int(po, "delta-order", &order, "Order of delta computation");
  gh_opts_int(po, "delta-window", &window, "Parameter controlling window for delta computation (actual window size for each delta order is 1 + 2*delta-window-size)");
  gh_opts_int(po, "truncate", &truncate, "If nonzero, first truncate features to this dimension.");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *rspec = gh_opts_arg(po, 0), *wspec = gh_opts_arg(po, 1);
  if (order < 0 || order >= 1000 || window <= 0 || window >= 1000)
    gh_die("bad delta options: --delta-order=%d --delta-window=%d (need 0 <= order < 1000, 0 < window < 1000)",
           order, window);
  if (truncate < 0) gh_die("--truncate=%d must be >= 0", truncate);

  gh_seq_reader *reader = gh_seq_reader_open(rspec, GH_OBJ_MATRIX);
  gh_writer *writer = gh_writer_open(wspec);
  gh_matrix in = {0, 0, NULL}, out = {0, 0, NULL};
  int64_t num_done = 0, num_err = 0;
  for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader)) {
    const char *key = gh_seq_reader_key(reader);
    const gh_matrix *feats = gh_seq_reader_value(reader);
    gh_check_finite_matrix(feats, rspec, key);
    if (feats->rows == 0) {
      gh_warn("%s, key '%s': empty feature matrix", rspec, key);
      num_err++;
      continue;
    }
    const gh_matrix *src = feats;
    if (truncate != 0) {
      if (truncate > feats->cols) gh_die("%s, key '%s': cannot truncate features of dimension %d to %d", rspec, key, feats->cols, truncate);
      gh_matrix_resize(&in, feats->rows, truncate);
      for (int32_t t = 0; t < feats->rows; ++t)
        for (int32_t d = 0; d < truncate; ++d) gh_row(&in, t)[d] = gh_row(feats, t)[d];
      src = &in;
    }
    if (!gh_compute_deltas(order, window, src, &out)) gh_die("%s, key '%s': %s", rspec, key, gh_last_error());
    gh_writer_write(writer, key, GH_OBJ_MATRIX, &out);
    num_done++;
  }
  gh_seq_reader_close(reader);
  gh_writer_close(writer);
  gh_matrix_free(&in);
  gh_matrix_free(&out);
  gh_log("Added deltas (order %d, window %d) to %lld feature matrices; %lld empty.", order, window,
         (long long)num_done, (long long)num_err);
  gh_opts_free(po);
  return num_done != 0 ? 0 : 1;
}
