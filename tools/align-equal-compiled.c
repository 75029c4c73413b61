/* align-equal-compiled -- equally spaced alignments to start training
 * (Kaldi's bin/align-equal-compiled.cc and fstext's EqualAlign): a random
 * path through each utterance's graph with as many transition-ids as the
 * utterance has frames.  Kaldi's random numbers are reproduced: srand() with
 * the key's StringHasher value, then rand() (glibc), so on the same graph
 * the same path is chosen (lib/decoder/training-graph.h). */
#include <stdlib.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "decoder/training-graph.h"
#include "io/fst.h"
#include "io/table.h"

static const char *usage =
    "Write an equally spaced alignment (for getting training started)\n"
    "Usage:  align-equal-compiled <graphs-rspecifier> <features-rspecifier> <alignments-wspecifier>\n"
    "e.g.: \n"
    " align-equal-compiled 1.fsts scp:train.scp ark:equal.ali\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *fst_rspec = gh_opts_arg(po, 0), *feat_rspec = gh_opts_arg(po, 1), *wspec = gh_opts_arg(po, 2);
  if (!gh_is_rspecifier(fst_rspec)) gh_die("'%s' is not an rspecifier (expected ark:... or scp:...)", fst_rspec);
  if (!gh_is_rspecifier(feat_rspec)) gh_die("'%s' is not an rspecifier (expected ark:... or scp:...)", feat_rspec);
  if (!gh_is_wspecifier(wspec)) gh_die("'%s' is not a wspecifier (expected ark:...)", wspec);
  gh_seq_reader *fr = gh_seq_reader_open(fst_rspec, GH_OBJ_FST);
  gh_rand_reader *feats = gh_rand_reader_open(feat_rspec, GH_OBJ_MATRIX);
  gh_writer *w = gh_writer_open(wspec);
  gh_ivector ali = {0, NULL};
  long done = 0, no_feat = 0, error = 0;
  char err[512];
  for (; !gh_seq_reader_done(fr); gh_seq_reader_next(fr)) {
    const char *key = gh_seq_reader_key(fr);
    const gh_fst *g = gh_seq_reader_value(fr);
    if (!gh_rand_reader_has_key(feats, key)) {
      gh_warn("No features for utterance %s", key);
      no_feat++;
      continue;
    }
    const gh_matrix *m = gh_rand_reader_value(feats, key);
    if (m->rows == 0) {
      gh_warn("Zero-length utterance: %s", key);
      error++;
      continue;
    }
    if (g->start < 0) {
      gh_warn("Empty decoding graph for %s", key);
      error++;
      continue;
    }
    gh_ivector_resize(&ali, m->rows);
    if (!gh_equal_align(g, m->rows, gh_kaldi_string_hash(key), ali.data, err, sizeof err)) {
      gh_warn("AlignEqual: did not align utterance %s (%s)", key, err);
      error++;
      continue;
    }
    gh_writer_write(w, key, GH_OBJ_INT32_VECTOR, &ali);
    done++;
  }
  gh_seq_reader_close(fr);
  gh_rand_reader_close(feats);
  gh_writer_close(w);
  if (done != 0 && no_feat == 0 && error == 0)
    gh_log("Success: done %ld utterances.", done);
  else
    gh_warn("Computed %ld alignments; %ld lacked features, %ld had other errors.", done, no_feat, error);
  gh_ivector_free(&ali);
  gh_opts_free(po);
  return done != 0 ? 0 : 1;
}
