/* select-voiced-frames -- keep the frames a VAD vector marks voiced (Kaldi's
 * ivectorbin/select-voiced-frames.cc; lib/feat/feat-functions.c
 * gh_select_voiced_frames). */
#include "base/gh-base.h"
#include "base/opts.h"
#include "feat/feat-functions.h"
#include "io/table.h"

static const char *usage =
    "Select a subset of frames of the input files, based on the output of\n"
    "compute-vad or a similar program (a vector of length num-frames,\n"
    "containing 1.0 for voiced, 0.0 for unvoiced).  Caution: this is\n"
    "mostly useful only in speaker identification applications.\n"
    "Usage: select-voiced-frames [options] <feats-rspecifier> <vad-rspecifier> <feats-wspecifier>\n"
    "E.g.: select-voiced-frames scp:feats.scp scp:vad.scp ark:-\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_opts *po = gh_opts_new(usage);
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *feat_rspec = gh_opts_arg(po, 0), *vad_rspec = gh_opts_arg(po, 1), *wspec = gh_opts_arg(po, 2);

  gh_seq_reader *reader = gh_seq_reader_open(feat_rspec, GH_OBJ_MATRIX);
  gh_rand_reader *vad_reader = gh_rand_reader_open(vad_rspec, GH_OBJ_VECTOR);
  gh_writer *writer = gh_writer_open(wspec);
  gh_matrix out = {0, 0, NULL};
  int64_t num_done = 0, num_err = 0, frames_in = 0, frames_out = 0;
  char first_err[1024] = ""; /* the first utterance's failure: the cause when none was written */
  for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader)) {
    const char *key = gh_seq_reader_key(reader);
    const gh_matrix *feats = gh_seq_reader_value(reader);
    gh_check_finite_matrix(feats, feat_rspec, key);
    if (feats->rows == 0) {
      gh_warn("%s, key '%s': empty feature matrix", feat_rspec, key);
      if (!num_err++) snprintf(first_err, sizeof first_err, "%s, key '%s': empty feature matrix", feat_rspec, key);
      continue;
    }
    const gh_vector *voiced = gh_rand_reader_value(vad_reader, key);
    if (!voiced) {
      gh_warn_no_key(vad_rspec, key, "VAD vector", "utterance skipped");
      if (!num_err++) snprintf(first_err, sizeof first_err, "key '%s': no VAD entry in %s", key, vad_rspec);
      continue;
    }
    if (voiced->dim != feats->rows) {
      gh_warn("key '%s': mismatch in number of frames: %d for features (%s) and %d for VAD (%s)", key, feats->rows,
              feat_rspec, voiced->dim, vad_rspec);
      if (!num_err++)
        snprintf(first_err, sizeof first_err, "key '%s': %d frames in %s but %d in the VAD of %s", key, feats->rows,
                 feat_rspec, voiced->dim, vad_rspec);
      continue;
    }
    if (!gh_select_voiced_frames(feats, voiced, &out)) gh_die("%s, key '%s': %s", vad_rspec, key, gh_last_error());
    if (out.rows == 0) {
      gh_warn("key '%s': no features were judged as voiced", key);
      if (!num_err++)
        snprintf(first_err, sizeof first_err, "key '%s': no frame is voiced in %s (all %d VAD values are 0)", key,
                 vad_rspec, voiced->dim);
      continue;
    }
    gh_writer_write(writer, key, GH_OBJ_MATRIX, &out);
    frames_in += feats->rows;
    frames_out += out.rows;
    num_done++;
  }
  gh_seq_reader_close(reader);
  gh_rand_reader_close(vad_reader);
  gh_writer_close(writer);
  gh_matrix_free(&out);
  gh_log("Done selecting voiced frames; processed %lld utterances, %lld had errors (%lld of %lld frames kept).",
         (long long)num_done, (long long)num_err, (long long)frames_out, (long long)frames_in);
  /* Kaldi's exit status 1 when nothing was written, with its cause */
  if (!num_done && num_err)
    gh_die("no utterance written: all %lld failed, the first: %s", (long long)num_err, first_err);
  if (!num_done) gh_die("%s: no utterances", feat_rspec);
  gh_opts_free(po);
  return 0;
}
