/* transform-feats -- apply a linear (A) or affine ([A b]) transform to
 * features (Kaldi's featbin/transform-feats.cc): one global transform from
 * a file, or one per utterance / per speaker (--utt2spk) from a table, e.g.
 * fMLLR transforms from gmm-est-fmllr. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "adapt/fmllr.h"
#include "base/gh-base.h"
#include "io/kaldi-io.h"
#include "base/opts.h"
#include "io/table.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Apply a transform to features: y = A x (transform D' x D) or y = A x + b (transform [A b],\n"
      "D' x (D+1)); one transform from a file, or a table of transforms per utterance or, with\n"
      "--utt2spk, per speaker.  A feature utterance without a transform is an error.\n"
      "Usage: transform-feats [options] (<transform-rspecifier>|<transform-rxfilename>) <feats-rspecifier> <feats-wspecifier>\n"
      "e.g.:  transform-feats --utt2spk=ark:data/test/utt2spk ark:trans.ark scp:feats.scp ark:-\n";
  gh_opts *po = gh_opts_new(usage);
  const char *utt2spk_rspec = "";
  gh_opts_string(po, "utt2spk", &utt2spk_rspec, "rspecifier for utterance to speaker map (transforms are per speaker)");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *trans_in = gh_opts_arg(po, 0), *feats_spec = gh_opts_arg(po, 1), *out_spec = gh_opts_arg(po, 2);

  gh_rand_reader *trans = NULL, *utt2spk = NULL;
  gh_matrix global = {0, 0, NULL};
  if (gh_is_rspecifier(trans_in)) {
    trans = gh_rand_reader_open(trans_in, GH_OBJ_MATRIX);
    if (*utt2spk_rspec) utt2spk = gh_rand_reader_open(utt2spk_rspec, GH_OBJ_TOKEN_VECTOR);
  } else {
    if (*utt2spk_rspec) gh_die("--utt2spk needs a table of transforms, not the file %s (did you forget ark:?)", trans_in);
    gh_istream *is = gh_istream_open(trans_in);
    if (!is) gh_die("%s", gh_last_error());
    gh_read_matrix(is, gh_read_binary_marker(is), &global);
    gh_istream_close(is);
    gh_check_finite_matrix(&global, trans_in, "(global transform)");
  }
  gh_seq_reader *feats = gh_seq_reader_open(feats_spec, GH_OBJ_MATRIX);
  gh_writer *w = gh_writer_open(out_spec);
  gh_matrix out = {0, 0, NULL};
  int64_t num_done = 0, tot_frames = 0;
  double tot_logdet = 0;
  int logdet_ok = 1;
  for (; !gh_seq_reader_done(feats); gh_seq_reader_next(feats)) {
    const char *utt = gh_seq_reader_key(feats);
    const gh_matrix *m = gh_seq_reader_value(feats);
    gh_check_finite_matrix(m, feats_spec, utt);
    const gh_matrix *W = &global;
    const char *tkey = utt, *tname = trans_in;
    if (trans) {
      if (utt2spk) {
        tkey = gh_rand_reader_value(utt2spk, utt);
        if (!tkey) {
          char note[1200];
          snprintf(note, sizeof note, "an utterance of %s", feats_spec);
          gh_die_no_key(utt2spk_rspec, utt, "speaker", note);
        }
      }
      W = gh_rand_reader_value(trans, tkey);
      if (!W) {
        char note[1200] = "";
        if (strcmp(tkey, utt)) snprintf(note, sizeof note, "the speaker of utterance '%s'", utt);
        gh_die_no_key(trans_in, tkey, "transform", note);
      }
      gh_check_finite_matrix(W, trans_in, tkey);
    }
    if (gh_fmllr_apply(W, m, &out) != 0)
      gh_die("%s, key '%s' (features %s, key '%s'): %s", tname, tkey, feats_spec, utt, gh_last_error());
    if (W->rows == m->cols && logdet_ok) {
      double ld = gh_fmllr_logdet(W);
      if (isfinite(ld)) tot_logdet += ld * m->rows; else logdet_ok = 0;
    } else {
      logdet_ok = 0;
    }
    tot_frames += m->rows;
    gh_writer_write(w, utt, GH_OBJ_MATRIX, &out);
    num_done++;
  }
  gh_seq_reader_close(feats);
  gh_writer_close(w);
  if (logdet_ok && tot_frames > 0)
    gh_log("Overall average logdet is %g over %lld frames.", tot_logdet / tot_frames, (long long)tot_frames);
  gh_log("Applied transform to %lld utterances; 0 had errors.", (long long)num_done);
  if (trans) gh_rand_reader_close(trans);
  if (utt2spk) gh_rand_reader_close(utt2spk);
  gh_matrix_free(&global);
  gh_matrix_free(&out);
  gh_opts_free(po);
  return num_done ? 0 : 1;
}
