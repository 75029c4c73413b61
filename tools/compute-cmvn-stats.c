/* compute-cmvn-stats -- cepstral mean and variance normalization statistics
 * (Kaldi's featbin/compute-cmvn-stats.cc; transform/cmvn.cc).  Each output is
 * a 2 x (dim+1) double matrix: row 0 the sums with the frame count last,
 * row 1 the sums of squares and 0.  Per utterance by default, per speaker with
 * --spk2utt, or one global matrix when the output is a wxfilename. */
#include "feat/feat.h"
#include "base/gh-base.h"
#include "io/kaldi-io.h"
#include "base/opts.h"
#include "io/table.h"

#include <stdlib.h>
#include <string.h>

static const char *usage =
    "Compute cepstral mean and variance normalization statistics\n"
    "If wspecifier provided: per-utterance by default, or per-speaker if\n"
    "spk2utt option provided; if wxfilename: global\n"
    "Usage: compute-cmvn-stats  [options] <feats-rspecifier> (<stats-wspecifier>|<stats-wxfilename>)\n"
    "e.g.: compute-cmvn-stats --spk2utt=ark:data/train/spk2utt scp:data/train/feats.scp ark,scp:cmvn.ark,cmvn.scp\n"
    "See also: apply-cmvn\n";

/* Accumulate one utterance; counts dimension mismatches as errors. */
static int acc(gh_dmatrix *stats, int *is_init, const gh_matrix *feats, const char *spec, const char *key) {
  gh_check_finite_matrix(feats, spec, key);
  if (!*is_init) { gh_cmvn_init(stats, feats->cols); *is_init = 1; }
  if (gh_cmvn_acc(stats, feats)) return 1;
  gh_warn("%s, key '%s': %s", spec, key, gh_last_error());
  return 0;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *spk2utt_rspecifier = "";
  int binary = 1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_string(po, "spk2utt", &spk2utt_rspecifier, "rspecifier for speaker to utterance-list map");
  gh_opts_bool(po, "binary", &binary, "write in binary mode (applies only to global CMN/CVN)");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *rspec = gh_opts_arg(po, 0), *out = gh_opts_arg(po, 1);

  int64_t num_done = 0, num_err = 0;
  gh_dmatrix stats = {0, 0, NULL};
  if (gh_is_wspecifier(out)) {
    gh_writer *writer = gh_writer_open(out);
    if (*spk2utt_rspecifier) {
      gh_seq_reader *spk2utt = gh_seq_reader_open(spk2utt_rspecifier, GH_OBJ_TOKEN_VECTOR);
      gh_rand_reader *feat_reader = gh_rand_reader_open(rspec, GH_OBJ_MATRIX);
      for (; !gh_seq_reader_done(spk2utt); gh_seq_reader_next(spk2utt)) {
        const char *spk = gh_seq_reader_key(spk2utt);
        char *list = gh_strdup(gh_seq_reader_value(spk2utt)), *save = NULL;
        int is_init = 0;
        for (char *utt = strtok_r(list, " \t", &save); utt; utt = strtok_r(NULL, " \t", &save)) {
          const gh_matrix *feats = gh_rand_reader_value(feat_reader, utt);
          if (!feats) {
            gh_warn("%s: did not find features for utterance '%s' (speaker '%s')", rspec, utt, spk);
            num_err++;
            continue;
          }
          if (acc(&stats, &is_init, feats, rspec, utt)) num_done++; else num_err++;
        }
        free(list);
        if (!is_init) gh_warn("no stats accumulated for speaker '%s'", spk);
        else gh_writer_write(writer, spk, GH_OBJ_DMATRIX, &stats);
      }
      gh_seq_reader_close(spk2utt);
      gh_rand_reader_close(feat_reader);
    } else {
      gh_seq_reader *feat_reader = gh_seq_reader_open(rspec, GH_OBJ_MATRIX);
      for (; !gh_seq_reader_done(feat_reader); gh_seq_reader_next(feat_reader)) {
        const char *key = gh_seq_reader_key(feat_reader);
        int is_init = 0;
        if (acc(&stats, &is_init, gh_seq_reader_value(feat_reader), rspec, key)) num_done++; else num_err++;
        gh_writer_write(writer, key, GH_OBJ_DMATRIX, &stats);
      }
      gh_seq_reader_close(feat_reader);
    }
    gh_writer_close(writer);
  } else {
    if (*spk2utt_rspecifier) gh_die("--spk2utt option not compatible with wxfilename as output (did you forget ark:?)");
    gh_seq_reader *feat_reader = gh_seq_reader_open(rspec, GH_OBJ_MATRIX);
    int is_init = 0;
    for (; !gh_seq_reader_done(feat_reader); gh_seq_reader_next(feat_reader)) {
      if (acc(&stats, &is_init, gh_seq_reader_value(feat_reader), rspec, gh_seq_reader_key(feat_reader))) num_done++;
      else num_err++;
    }
    gh_seq_reader_close(feat_reader);
    if (num_done == 0) gh_die("%s: no features read, not writing global CMVN stats to %s", rspec, out);
    gh_ostream *os = gh_ostream_open(out);
    gh_write_binary_marker(os, binary);
    gh_write_dmatrix(os, binary, &stats);
    gh_ostream_close(os);
    gh_log("Wrote global CMVN stats to %s", out);
  }
  gh_dmatrix_free(&stats);
  gh_log("Done accumulating CMVN stats for %lld utterances; %lld had errors.", (long long)num_done, (long long)num_err);
  gh_opts_free(po);
  return num_done != 0 ? 0 : 1;
}
