/* apply-cmvn-sliding -- sliding-window cepstral mean (and variance)
 * normalization per utterance (Kaldi's featbin/apply-cmvn-sliding.cc;
 * lib/feat/feat-functions.c gh_sliding_cmn). */
#include "base/gh-base.h"
#include "base/opts.h"
#include "feat/feat-functions.h"
#include "io/table.h"

static const char *usage =
    "Apply sliding-window cepstral mean (and optionally variance)\n"
    "normalization per utterance.  If center == true, window is centered\n"
    "on frame being normalized; otherwise it precedes it in time.\n"
    "Useful for speaker-id; see also apply-cmvn.\n"
    "\n"
    "Usage: apply-cmvn-sliding [options] <feats-rspecifier> <feats-wspecifier>\n"
    "e.g.: apply-cmvn-sliding --norm-vars=false --center=true --cmn-window=300 ark:feats.ark ark:cmvn.ark\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_sliding_cmn_opts so;
  gh_sliding_cmn_opts_default(&so);
  gh_opts *po = gh_opts_new(usage);
  gh_sliding_cmn_opts_register(&so, po);
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  if (!gh_sliding_cmn_opts_check(&so)) gh_die("%s", gh_last_error());
  const char *rspec = gh_opts_arg(po, 0), *wspec = gh_opts_arg(po, 1);

  gh_seq_reader *reader = gh_seq_reader_open(rspec, GH_OBJ_MATRIX);
  gh_writer *writer = gh_writer_open(wspec);
  gh_matrix out = {0, 0, NULL};
  int64_t num_done = 0, num_err = 0, num_floored = 0;
  for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader)) {
    const char *key = gh_seq_reader_key(reader);
    const gh_matrix *feats = gh_seq_reader_value(reader);
    gh_check_finite_matrix(feats, rspec, key);
    if (feats->rows == 0) {
      gh_warn("%s, key '%s': empty feature matrix", rspec, key);
      num_err++;
      continue;
    }
    num_floored += gh_sliding_cmn(&so, feats, &out, key);
    gh_writer_write(writer, key, GH_OBJ_MATRIX, &out);
    num_done++;
  }
  gh_seq_reader_close(reader);
  gh_writer_close(writer);
  gh_matrix_free(&out);
  if (num_floored > 0) gh_warn("variances were floored (at 1e-10) in %lld frames", (long long)num_floored);
  gh_log("Applied sliding-window cepstral mean %snormalization to %lld utterances, %lld had errors.",
         so.norm_vars ? "and variance " : "", (long long)num_done, (long long)num_err);
  gh_opts_free(po);
  return num_done != 0 ? 0 : 1;
}
