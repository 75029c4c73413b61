/* gmm-acc-stats-ali -- accumulate GMM and transition statistics of a Kaldi
 * .mdl from alignments of transition-ids (Kaldi gmmbin/gmm-acc-stats-ali.cc).
 * The frames and their pdfs (through the TransitionModel) are gathered into
 * one block (lib/train/gmm-data.h) and accumulated by the backend's E-step,
 * the machinery of gmm-acc-stats-gpu (--device: the GPU when there is one,
 * else the CPU); transition-id counts on the host.  Output: Kaldi's
 * accumulator file (transition counts DV, then AccumAmDiagGmm), readable by
 * Kaldi's gmm-est and ours.  Log: Kaldi's "Overall avg like per frame
 * (Gaussian only) = X over N frames." line, which recipes parse. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm.h"
#include "hmm/transition.h"
#include "io/table.h"
#include "train/device-opts.h"
#include "train/gmm-data.h"

static const char *usage =
    "Accumulate stats for GMM training.\n"
    "Usage:  gmm-acc-stats-ali [options] <model-in> <feature-rspecifier> "
    "<alignments-rspecifier> <stats-out>\n"
    "e.g.:\n"
    " gmm-acc-stats-ali 1.mdl scp:train.scp ark:1.ali 1.acc\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPTS_BOTH);
  if (gh_opts_parse(po, argc, argv) != 4) gh_opts_usage_exit(po);
  const char *model_rx = gh_opts_arg(po, 0), *feats_rspec = gh_opts_arg(po, 1);
  const char *ali_rspec = gh_opts_arg(po, 2), *accs_wx = gh_opts_arg(po, 3);

  gh_gmm_set model;
  gh_gmm_set_read(model_rx, &model);
  if (!model.trans) gh_die("%s: not a Kaldi .mdl (no TransitionModel before the GMMs)", model_rx);
  const gh_transition_model *tm = model.trans;
  if (tm->num_pdfs > model.num_pdfs)
    gh_die("%s: the TransitionModel uses %d pdfs but the model has %d GMMs", model_rx, tm->num_pdfs, model.num_pdfs);
  gh_device_opts_begin(&dev); /* the device starts while we read */

  /* Frames + (frame, pdf) pairs; transition counts on the host. */
  double *tcounts = gh_calloc((size_t)tm->num_tids + 1, sizeof(double));
  gh_data data;
  gh_data_init(&data, model.dim);
  gh_data_opts o = {feats_rspec, NULL, GH_LABELS_NONE, model.num_pdfs, model.dim, model_rx};
  gh_seq_reader *fr = gh_seq_reader_open(feats_rspec, GH_OBJ_MATRIX_VIEW);
  gh_rand_reader *ar = gh_rand_reader_open(ali_rspec, GH_OBJ_INT32_VECTOR);
  int64_t num_done = 0, num_err = 0;
  for (; !gh_seq_reader_done(fr); gh_seq_reader_next(fr)) {
    const char *key = gh_seq_reader_key(fr);
    const gh_matrix_view *m = gh_seq_reader_value(fr);
    const gh_ivector *ali = gh_rand_reader_value(ar, key);
    if (!ali) {
      gh_warn("No alignment for utterance %s", key);
      num_err++;
      continue;
    }
    if (ali->dim != m->rows) {
      gh_warn("Alignments has wrong size %d vs. %d (utterance %s)", ali->dim, m->rows, key);
      num_err++;
      continue;
    }
    gh_transition_check_alignment(tm, ali->data, ali->dim, ali_rspec, key, model_rx);
    int64_t base = data.num_pairs;
    if (!gh_data_add_utt(&data, &o, NULL, key, m)) {
      num_err++;
      continue;
    }
    if (data.num_pairs - base != ali->dim) gh_die("internal: %s: frame pairs do not match the alignment", key);
    for (int32_t t = 0; t < ali->dim; ++t) {
      data.pairs[base + t].pdf = tm->id2pdf[ali->data[t]];
      tcounts[ali->data[t]] += 1.0;
    }
    num_done++;
  }
  gh_seq_reader_close(fr);
  gh_rand_reader_close(ar);
  gh_log("Done %lld files, %lld with errors.", (long long)num_done, (long long)num_err);
  if (data.num_frames == 0) gh_die("no frames with alignments in %s (alignments %s)", feats_rspec, ali_rspec);

  gh_backend *be = gh_device_opts_end(&dev);
  gh_accs_set accs;
  const double t_estep = gh_seconds();
  double avg = gh_data_estep(be, &model, &data, &accs, NULL);
  {
    char paths[256];
    gh_backend_paths_describe(be, paths, sizeof paths);
    gh_vlog(1, "E-step %.3f s over %lld frames; %s", gh_seconds() - t_estep, (long long)data.num_frames, paths);
  }
  if (accs.num_trans_accs != tm->num_tids + 1) {
    free(accs.trans_accs);
    accs.trans_accs = gh_calloc((size_t)tm->num_tids + 1, sizeof(double));
    accs.num_trans_accs = tm->num_tids + 1;
  }
  memcpy(accs.trans_accs, tcounts, ((size_t)tm->num_tids + 1) * sizeof(double));
  gh_log("Overall avg like per frame (Gaussian only) = %g over %lld frames.", avg, (long long)data.num_frames);
  gh_accs_write(accs_wx, binary, &accs);
  gh_log("Written accs.");
  gh_accs_free(&accs);
  gh_backend_free(be);
  gh_data_free(&data);
  free(tcounts);
  gh_gmm_set_free(&model);
  gh_opts_free(po);
  return num_done != 0 ? 0 : 1;
}
