/* acc-tree-stats -- accumulate the statistics of phonetic-context tree
 * building (Kaldi bin/acc-tree-stats.cc, hmm/tree-accu.cc): for every
 * (phone window, pdf-class) event of the aligned frames, count, sum of x and
 * sum of x squared (Kaldi's GaussClusterable), written as Kaldi's treeacc
 * file.  Frames are added in archive order on the host
 * (lib/hmm/tree-accu.c), so the sums are Kaldi's bit for bit and the binary
 * file is byte-identical to Kaldi's. */
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "base/opts.h"
#include "hmm/transition.h"
#include "hmm/tree-accu.h"
#include "io/table.h"
#include "tree/tree-stats.h"

static const char *usage =
    "Accumulate statistics for phonetic-context tree building.\n"
    "Usage:  acc-tree-stats [options] <model-in> <features-rspecifier> <alignments-rspecifier> <tree-accs-out>\n"
    "e.g.: \n"
    " acc-tree-stats 1.mdl scp:train.scp ark:1.ali 1.tacc\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1;
  float var_floor = 0.01f;
  const char *ci_str = "";
  int32_t context_width = 3, central_position = 1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  gh_opts_float(po, "var-floor", &var_floor, "Variance floor for tree clustering.");
  gh_opts_string(po, "ci-phones", &ci_str,
                 "Colon-separated list of integer indices of context-independent phones.");
  gh_opts_int(po, "context-width", &context_width, "Context window size.");
  gh_opts_int(po, "central-position", &central_position, "Central context-window position (zero-based)");
  if (gh_opts_parse(po, argc, argv) != 4) gh_opts_usage_exit(po);
  const char *model_rx = gh_opts_arg(po, 0), *feats_rspec = gh_opts_arg(po, 1);
  const char *ali_rspec = gh_opts_arg(po, 2), *accs_wx = gh_opts_arg(po, 3);

  gh_tree_accu_opts o = {context_width, central_position, var_floor, NULL, 0};
  int32_t *ci = gh_parse_ci_phones(ci_str, &o.num_ci_phones);
  o.ci_phones = ci;
  gh_transition_model *tm = gh_transition_read_file(model_rx);
  for (int32_t i = 0; i < o.num_ci_phones; ++i)
    if (ci[i] >= tm->num_phone2idx || tm->phone2idx[ci[i]] < 0)
      gh_die("--ci-phones=%s: phone %d is not in the model %s", ci_str, ci[i], model_rx);

  gh_seq_reader *fr = gh_seq_reader_open(feats_rspec, GH_OBJ_MATRIX);
  gh_rand_reader *ar = gh_rand_reader_open(ali_rspec, GH_OBJ_INT32_VECTOR);
  gh_tree_accu *acc = NULL;
  int32_t dim = -1;
  int64_t num_done = 0, num_no_ali = 0, num_other = 0;
  for (; !gh_seq_reader_done(fr); gh_seq_reader_next(fr)) {
    const char *key = gh_seq_reader_key(fr);
    const gh_matrix *m = gh_seq_reader_value(fr);
    const gh_ivector *ali = gh_rand_reader_value(ar, key);
    if (!ali) {
      num_no_ali++;
      continue;
    }
    if (ali->dim != m->rows) {
      gh_warn("Alignments has wrong size %d vs. %d (utterance %s)", ali->dim, m->rows, key);
      num_other++;
      continue;
    }
    gh_check_finite_matrix(m, feats_rspec, key);
    if (!acc) {
      dim = m->cols;
      acc = gh_tree_accu_new(&o, dim);
    } else if (m->cols != dim) {
      gh_die("%s, key '%s': features of dimension %d, earlier utterances %d", feats_rspec, key, m->cols, dim);
    }
    gh_transition_check_alignment(tm, ali->data, ali->dim, ali_rspec, key, model_rx);
    if (!gh_tree_accu_utterance(acc, tm, ali->data, ali->dim, m->data, m->cols))
      gh_warn("AccumulateTreeStats: alignment appears to be bad, not using it (utterance %s)", key);
    num_done++;
    if (num_done % 1000 == 0) gh_log("Processed %lld utterances.", (long long)num_done);
  }
  gh_seq_reader_close(fr);
  gh_rand_reader_close(ar);

  gh_tree_stats stats;
  gh_tree_stats_init(&stats);
  if (acc) gh_tree_accu_take(acc, &stats);
  gh_log("Accumulated stats for %lld files, %lld failed due to no alignment, %lld failed for other reasons.",
         (long long)num_done, (long long)num_no_ali, (long long)num_other);
  gh_log("Number of separate stats (context-dependent states) is %d", stats.num);
  if (num_done == 0) gh_die("no utterance of %s had an alignment in %s", feats_rspec, ali_rspec);
  gh_tree_stats_write(accs_wx, binary, &stats);
  gh_tree_stats_free(&stats);
  gh_tree_accu_free(acc);
  gh_transition_free(tm);
  free(ci);
  gh_opts_free(po);
  return 0;
}
