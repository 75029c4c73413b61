/* apply-cmvn -- apply cepstral mean (and optionally variance) normalization
 * (Kaldi's featbin/apply-cmvn.cc; transform/cmvn.cc ApplyCmvn).  Stats come
 * from a table (per utterance, or per speaker through --utt2spk) or from one
 * global stats file (an rxfilename, as written by compute-cmvn-stats). */
#include "feat/feat.h"
#include "base/gh-base.h"
#include "io/kaldi-io.h"
#include "base/opts.h"
#include "io/table.h"

#include <stdlib.h>
#include <string.h>

static const char *usage =
    "Apply cepstral mean and (optionally) variance normalization\n"
    "Per-utterance by default, or per-speaker if utt2spk option provided\n"
    "Usage: apply-cmvn [options] (<cmvn-stats-rspecifier>|<cmvn-stats-rxfilename>) <feats-rspecifier> <feats-wspecifier>\n"
    "e.g.: apply-cmvn --utt2spk=ark:data/train/utt2spk scp:data/train/cmvn.scp scp:data/train/feats.scp ark:-\n"
    "See also: compute-cmvn-stats\n";

/* "13:14:15" -> dims; dies on junk. */
static int32_t parse_dims(const char *s, int32_t **dims) {
  int32_t n = 0;
  *dims = NULL;
  if (!*s) return 0;
  char *copy = gh_strdup(s), *save = NULL;
  for (char *tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
    char *end;
    long v = strtol(tok, &end, 10);
    if (*end || v < 0) gh_die("bad --skip-dims option '%s' (expected e.g. 13:14:15)", s);
    *dims = gh_realloc(*dims, (size_t)(n + 1) * sizeof **dims);
    (*dims)[n++] = (int32_t)v;
  }
  free(copy);
  return n;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *utt2spk_rspecifier = "", *skip_dims_str = "";
  int norm_vars = 0, norm_means = 1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_string(po, "utt2spk", &utt2spk_rspecifier, "rspecifier for utterance to speaker map");
  gh_opts_bool(po, "norm-vars", &norm_vars, "If true, normalize variances.");
  gh_opts_bool(po, "norm-means", &norm_means, "You can set this to false to turn off mean normalization.  Note, the same can be achieved by using 'fake' CMVN stats; see the --fake option to compute_cmvn_stats.sh");
  gh_opts_string(po, "skip-dims", &skip_dims_str, "Dimensions for which to skip normalization: colon-separated list of integers, e.g. 13:14:15)");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  if (norm_vars && !norm_means) gh_die("You cannot normalize the variance but not the mean.");
  const char *cmvn_in = gh_opts_arg(po, 0), *rspec = gh_opts_arg(po, 1), *wspec = gh_opts_arg(po, 2);
  int32_t *skip_dims, num_skip = parse_dims(skip_dims_str, &skip_dims);

  gh_rand_reader *cmvn_reader = NULL, *utt2spk = NULL;
  gh_dmatrix global = {0, 0, NULL}, stats = {0, 0, NULL};
  if (gh_is_rspecifier(cmvn_in)) {
    cmvn_reader = gh_rand_reader_open(cmvn_in, GH_OBJ_DMATRIX);
    if (*utt2spk_rspecifier) utt2spk = gh_rand_reader_open(utt2spk_rspecifier, GH_OBJ_TOKEN_VECTOR);
  } else {
    if (*utt2spk_rspecifier) gh_die("--utt2spk option not compatible with rxfilename as input (did you forget ark:?)");
    gh_istream *is = gh_istream_open(cmvn_in);
    if (!is) gh_die("%s", gh_last_error());
    gh_read_dmatrix(is, gh_read_binary_marker(is), &global);
    gh_istream_close(is);
  }

  gh_seq_reader *feat_reader = gh_seq_reader_open(rspec, GH_OBJ_MATRIX);
  gh_writer *writer = gh_writer_open(wspec);
  gh_matrix feat = {0, 0, NULL};
  int64_t num_done = 0, num_err = 0;
  for (; !gh_seq_reader_done(feat_reader); gh_seq_reader_next(feat_reader)) {
    const char *utt = gh_seq_reader_key(feat_reader);
    const gh_matrix *in = gh_seq_reader_value(feat_reader);
    gh_check_finite_matrix(in, rspec, utt);
    gh_matrix_resize(&feat, in->rows, in->cols);
    if (in->rows) memcpy(feat.data, in->data, (size_t)in->rows * in->cols * sizeof *feat.data);
    if (norm_means) {
      const char *stats_key = utt, *stats_name = cmvn_in;
      const gh_dmatrix *st = &global;
      if (cmvn_reader) {
        if (utt2spk) {
          const char *spk = gh_rand_reader_value(utt2spk, utt);
          if (!spk) {
            gh_warn_no_key(utt2spk_rspecifier, utt, "speaker", "no output for this utterance");
            num_err++;
            continue;
          }
          stats_key = spk;
        }
        st = gh_rand_reader_value(cmvn_reader, stats_key);
        if (!st) {
          gh_warn_no_key(cmvn_in, stats_key, "normalization statistics", "no output for this utterance");
          num_err++;
          continue;
        }
      }
      if (num_skip) {
        gh_dmatrix_resize(&stats, st->rows, st->cols);
        memcpy(stats.data, st->data, (size_t)st->rows * st->cols * sizeof *stats.data);
        gh_cmvn_fake_stats_for_dims(&stats, skip_dims, num_skip);
        st = &stats;
      }
      if (!gh_cmvn_apply(st, norm_vars, &feat))
        gh_die("%s, key '%s' (features %s, key '%s'): %s", stats_name, stats_key, rspec, utt, gh_last_error());
    }
    gh_writer_write(writer, utt, GH_OBJ_MATRIX, &feat);
    num_done++;
  }
  gh_seq_reader_close(feat_reader);
  gh_writer_close(writer);
  if (cmvn_reader) gh_rand_reader_close(cmvn_reader);
  if (utt2spk) gh_rand_reader_close(utt2spk);
  gh_matrix_free(&feat);
  gh_dmatrix_free(&global);
  gh_dmatrix_free(&stats);
  free(skip_dims);
  gh_log("Applied cepstral mean%s normalization to %lld utterances, errors on %lld",
         norm_vars ? " and variance" : "", (long long)num_done, (long long)num_err);
  gh_opts_free(po);
  return num_done != 0 ? 0 : 1;
}
