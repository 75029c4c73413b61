/* gmm-est-fmllr -- estimate fMLLR transforms per speaker (--spk2utt) or per
 * utterance for a diagonal-covariance GMM set (Kaldi's gmm-est-fmllr, and
 * with a one-pdf model and no labels Kaldi's gmm-global-est-fmllr).
 * Statistics by the backend's E-step (GPU when there is one), the row-by-row
 * update on the host (drivers/adapt/fmllr.h). */
#include <stdlib.h>
#include <string.h>

#include "registry/registry.h"
#include "adapt/fmllr.h"
#include "base/gh-base.h"
#include "train/gmm-data.h"
#include "gmm/gmm.h"
#include "base/opts.h"
#include "io/table.h"
#include "train/device-opts.h"

typedef struct {
  const gh_gmm_set *model, *full;
  gh_backend *be;
  gh_adapt_input in;  /* features, labels, utterance counts (drivers/adapt/fmllr.h) */
  int32_t iters;
  double min_count;
  gh_writer *out;
  double tot_impr, tot_t, tot_ll;
} ctx_t;

/* Estimates, logs and writes the transform of one speaker/utterance. */
static void estimate(ctx_t *c, gh_data *d, const char *key, const char *kind) {
  const int32_t D = c->model->dim, D1 = D + 1;
  gh_fmllr_stats st;
  gh_fmllr_stats_init(&st, D);
  if (d->num_pairs > 0) c->tot_ll += gh_fmllr_accumulate(c->be, c->model, c->full, d, &st);
  double *W = gh_calloc((size_t)D * D1, sizeof(double));
  for (int32_t i = 0; i < D; ++i) W[(int64_t)i * D1 + i] = 1.0;
  char what[512];
  snprintf(what, sizeof what, "%s '%s'", kind, key);
  double impr = 0;
  if (st.beta <= c->min_count)
    gh_warn("%s: not updating fMLLR since below min-count: count is %g (identity transform written)", what, st.beta);
  else
    impr = gh_fmllr_update(&st, c->iters, c->min_count, W, what);
  gh_log("For %s, auxf-impr from fMLLR is %g per frame, over %g frames.", what, st.beta > 0 ? impr / st.beta : 0.0,
         st.beta);
  c->tot_impr += impr;
  c->tot_t += st.beta;
  gh_matrix out = {0, 0, NULL};
  gh_matrix_resize(&out, D, D1);
  for (int64_t e = 0; e < (int64_t)D * D1; ++e) out.data[e] = (float)W[e];
  gh_writer_write(c->out, key, GH_OBJ_MATRIX, &out);
  gh_matrix_free(&out);
  free(W);
  gh_fmllr_stats_free(&st);
}

/* gh_adapt_for_each_speaker's callback: one speaker's transform */
static void estimate_speaker(void *ctx, gh_data *d, const char *spk) { estimate((ctx_t *)ctx, d, spk, "speaker"); }

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Estimate fMLLR (constrained MLLR) transforms [A b] (D x (D+1)) for a diagonal-covariance GMM set,\n"
      "per speaker (--spk2utt) or per utterance, by the row-by-row method (Gales 1998; Povey & Saon\n"
      "2006).  Labels as for gmm-acc-stats-gpu (--label-type=ali|utt|post); without labels the model\n"
      "must have one pdf (a global GMM; what Kaldi's gmm-global-est-fmllr does).  Statistics are\n"
      "accumulated on the GPU when there is one (--device).  Apply with transform-feats.\n"
      "Usage:  gmm-est-fmllr [options] <model-in> <feats-rspecifier> [<post-or-ali-rspecifier>] <transforms-wspecifier>\n"
      "e.g.:   gmm-est-fmllr --spk2utt=ark:spk2utt final.mdl scp:feats.scp ark:1.pdf.ali ark:trans.ark\n";
  gh_opts *po = gh_opts_new(usage);
  const char *label_type = "ali", *spk2utt_rspec = "";
  int32_t iters = 40;
  double min_count = 500.0;
  int binary = 1;
  gh_opts_string(po, "spk2utt", &spk2utt_rspec, "rspecifier for speaker to utterance-list map (else per utterance)");
  gh_opts_int(po, "fmllr-iters", &iters, "Number of passes of the row-by-row update");
  gh_opts_double(po, "fmllr-min-count", &min_count,
                 "Minimum count (weighted frames) to estimate a transform; below it the identity is written");
  gh_opts_string(po, "label-type", &label_type, "What the labels argument holds: ali, utt or post");
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPT);
  gh_opts_bool(po, "binary", &binary, "Write the transforms in binary mode");
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs != 3 && nargs != 4) gh_opts_usage_exit(po);
  const char *model_in = gh_opts_arg(po, 0), *feats_spec = gh_opts_arg(po, 1);
  const char *labels_spec = nargs == 4 ? gh_opts_arg(po, 2) : NULL, *out_spec = gh_opts_arg(po, nargs - 1);
  if (iters < 0) gh_die("--fmllr-iters must be >= 0 (got %d)", iters);

  gh_gmm_set model, full;
  gh_gmm_set_read(model_in, &model);
  gh_fmllr_full_view(&full, &model, model_in);
  ctx_t c;
  memset(&c, 0, sizeof c);
  c.model = &model;
  c.full = &full;
  c.iters = iters;
  c.min_count = min_count;
  gh_adapt_input_open(&c.in, &model, model_in, feats_spec, labels_spec, label_type);
  c.be = gh_device_opts_open(&dev);
  c.out = gh_writer_open_binary(out_spec, binary);
  int64_t num_groups = 0;
  if (*spk2utt_rspec) {
    num_groups = gh_adapt_for_each_speaker(&c.in, spk2utt_rspec, feats_spec, estimate_speaker, &c);
  } else {
    gh_seq_reader *feats = gh_seq_reader_open(feats_spec, GH_OBJ_MATRIX);
    for (; !gh_seq_reader_done(feats); gh_seq_reader_next(feats)) {
      const char *utt = gh_seq_reader_key(feats);
      gh_data d;
      gh_adapt_data_init(&c.in, &d);
      if (!gh_adapt_input_add(&c.in, &d, utt, gh_seq_reader_value(feats))) { gh_data_free(&d); continue; }
      estimate(&c, &d, utt, "utterance");
      gh_data_free(&d);
      num_groups++;
    }
    gh_seq_reader_close(feats);
  }
  if (num_groups == 0) gh_die("no transforms estimated (no %s in %s)", *spk2utt_rspec ? "speakers" : "utterances",
                              *spk2utt_rspec ? spk2utt_rspec : feats_spec);
  gh_writer_close(c.out);
  gh_log("Done %lld utterances, %lld skipped (no labels); %lld transforms on %s", (long long)c.in.num_done,
         (long long)c.in.num_skipped, (long long)num_groups, c.be->device_name);
  gh_log("Overall fMLLR auxf impr per frame is %g over %g frames; avg loglike per frame before adaptation %.6f",
         c.tot_t > 0 ? c.tot_impr / c.tot_t : 0.0, c.tot_t, c.tot_t > 0 ? c.tot_ll / c.tot_t : 0.0);
  gh_adapt_input_close(&c.in);
  gh_backend_free(c.be);
  gh_gmm_set_free(&full);
  gh_gmm_set_free(&model);
  gh_opts_free(po);
  return c.in.num_done ? 0 : 1;
}
