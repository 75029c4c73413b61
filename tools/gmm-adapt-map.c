/* gmm-adapt-map -- MAP adaptation of a diagonal-covariance GMM set (Kaldi's
 * gmm-adapt-map; Reynolds et al. 2000 eq. 14): one adapted model from all
 * the data (model file output), or one per speaker (--spk2utt) or per
 * utterance written to a table (wspecifier output).  E-step on the backend
 * (GPU when there is one), update on the host (drivers/adapt/map.h). */
#include <stdlib.h>
#include <string.h>

#include "registry/registry.h"
#include "adapt/fmllr.h"
#include "base/gh-base.h"
#include "train/gmm-data.h"
#include "gmm/gmm.h"
#include "adapt/map.h"
#include "base/opts.h"
#include "io/table.h"
#include "train/device-opts.h"

typedef struct {
  const gh_gmm_set *prior;
  gh_backend *be;
  const gh_map_opts *mo;
  gh_adapt_input in;  /* features, labels, utterance counts (drivers/adapt/fmllr.h) */
  gh_ostream *ark;   /* table output: archive stream */
  int binary;
  double tot_change, tot_count;
  int64_t num_models;
} ctx_t;

/* Adapts a copy of the prior on d; writes it to the table (key) or returns it in *out. */
static void adapt(ctx_t *c, const gh_data *d, const char *key, gh_gmm_set *out) {
  gh_gmm_set m;
  memset(&m, 0, sizeof m);
  gh_gmm_set_copy(&m, c->prior);
  double change = 0, count = 0;
  if (d->num_pairs > 0) {
    gh_accs_set accs;
    gh_data_estep(c->be, c->prior, d, &accs, NULL);
    change = gh_gmm_set_map_update(&m, &accs, c->mo, &count);
    gh_accs_free(&accs);
  } else {
    gh_warn("%s: no data, writing the prior model unchanged", key ? key : "all data");
  }
  if (key) gh_vlog(1, "%s: MAP objective change %g per frame over %g frames", key, count > 0 ? change / count : 0.0, count);
  c->tot_change += change;
  c->tot_count += count;
  c->num_models++;
  if (out) { *out = m; return; }
  FILE *fp = gh_ostream_fp(c->ark);
  fputs(key, fp);
  putc(' ', fp);
  gh_write_binary_marker(c->ark, c->binary);
  gh_gmm_set_write_stream(c->ark, c->binary, &m);
  if (ferror(fp)) gh_die("%s: write error", gh_ostream_name(c->ark));
  gh_gmm_set_free(&m);
}

/* "ark[,t|,b|,f|,nf|,p]:wxfilename" -> stream; dies on other forms. */
static gh_ostream *open_model_table(const char *wspec, int *binary) {
  const char *colon = strchr(wspec, ':');
  char opts[64];
  size_t n = (size_t)(colon - wspec);
  if (n >= sizeof opts) gh_die("%s: unsupported wspecifier for a table of models", wspec);
  memcpy(opts, wspec, n);
  opts[n] = '\0';
  int has_ark = 0;
  char *save = NULL;
  for (char *t = strtok_r(opts, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (!strcmp(t, "ark")) has_ark = 1;
    else if (!strcmp(t, "t")) *binary = 0;
    else if (!strcmp(t, "b")) *binary = 1;
    else if (strcmp(t, "f") && strcmp(t, "nf") && strcmp(t, "p"))
      gh_die("%s: only 'ark[,t|,b]:<wxfilename>' is supported for a table of models", wspec);
  }
  if (!has_ark) gh_die("%s: only 'ark[,t|,b]:<wxfilename>' is supported for a table of models", wspec);
  return gh_ostream_open(colon + 1);
}

/* gh_adapt_for_each_speaker's callback: one speaker's model */
static void adapt_speaker(void *ctx, gh_data *d, const char *spk) { adapt((ctx_t *)ctx, d, spk, NULL); }

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "MAP-adapt a diagonal-covariance GMM set (means; optionally variances and weights) with relevance\n"
      "factors tau (Reynolds et al. 2000 eq. 14; Kaldi's MapDiagGmmUpdate).  Labels as for\n"
      "gmm-acc-stats-gpu (--label-type=ali|utt|post; none for a one-pdf model).  If the output is a\n"
      "model file: one model adapted on all the data.  If it is a wspecifier (ark:...): one model per\n"
      "speaker (--spk2utt) or per utterance, keyed by speaker/utterance.\n"
      "Usage:  gmm-adapt-map [options] <model-in> <feats-rspecifier> [<post-or-ali-rspecifier>] <model-out-or-wspecifier>\n"
      "e.g.:   gmm-adapt-map --mean-tau=10 final.mdl ark:test.feats ark:test.pdf.ali adapted.mdl\n"
      "        gmm-adapt-map --spk2utt=ark:spk2utt ubm.gmm scp:feats.scp ark:spk-models.ark\n";
  gh_opts *po = gh_opts_new(usage);
  gh_map_opts mo;
  gh_map_opts_default(&mo);
  const char *label_type = "ali", *spk2utt_rspec = "", *flags_str = "m";
  int binary = 1;
  double tau = -1;
  gh_opts_double(po, "mean-tau", &mo.mean_tau, "Relevance factor (tau) for the means");
  gh_opts_double(po, "tau", &tau, "If >= 0: the same tau for means, variances and weights (Reynolds et al.)");
  gh_opts_double(po, "variance-tau", &mo.variance_tau, "Relevance factor for the variances");
  gh_opts_double(po, "weight-tau", &mo.weight_tau, "Relevance factor for the weights (per pdf)");
  gh_opts_string(po, "update-flags", &flags_str, "What to adapt: any of m (means), v (variances), w (weights)");
  gh_opts_string(po, "spk2utt", &spk2utt_rspec, "rspecifier for speaker to utterance-list map (table output)");
  gh_opts_string(po, "label-type", &label_type, "What the labels argument holds: ali, utt or post");
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPT);
  gh_opts_bool(po, "binary", &binary, "Write the models in binary mode");
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs != 3 && nargs != 4) gh_opts_usage_exit(po);
  const char *model_in = gh_opts_arg(po, 0), *feats_spec = gh_opts_arg(po, 1);
  const char *labels_spec = nargs == 4 ? gh_opts_arg(po, 2) : NULL, *out_name = gh_opts_arg(po, nargs - 1);
  if (gh_map_parse_flags(flags_str, &mo.flags) != 0)
    gh_die("--update-flags must be made of m, v and w (got '%s')", flags_str);
  if (tau >= 0) mo.mean_tau = mo.variance_tau = mo.weight_tau = tau;
  if (mo.mean_tau < 0 || mo.variance_tau < 0 || mo.weight_tau < 0) gh_die("tau values must be >= 0");
  int table_out = gh_is_wspecifier(out_name);
  if (*spk2utt_rspec && !table_out) gh_die("--spk2utt needs a wspecifier output (ark:...), got '%s'", out_name);

  gh_gmm_set prior;
  gh_gmm_set_read(model_in, &prior);
  for (int32_t p = 0; p < prior.num_pdfs; ++p)
    if (prior.pdfs[p].type != GH_COV_DIAG)
      gh_die("%s: pdf %d has full covariances; MAP adaptation here needs a diagonal-covariance model", model_in, p);
  ctx_t c;
  memset(&c, 0, sizeof c);
  c.prior = &prior;
  c.mo = &mo;
  c.binary = binary;
  gh_adapt_input_open(&c.in, &prior, model_in, feats_spec, labels_spec, label_type);
  gh_device_opts_auto_small(&dev, gh_cpu_rate_gmm(&prior, 2), "the E-step of this model");
  c.be = gh_device_opts_open(&dev);
  if (table_out) c.ark = open_model_table(out_name, &c.binary);

  if (*spk2utt_rspec) {
    gh_adapt_for_each_speaker(&c.in, spk2utt_rspec, feats_spec, adapt_speaker, &c);
  } else {
    gh_seq_reader *feats = gh_seq_reader_open(feats_spec, GH_OBJ_MATRIX);
    gh_data all;
    gh_adapt_data_init(&c.in, &all);
    for (; !gh_seq_reader_done(feats); gh_seq_reader_next(feats)) {
      const char *utt = gh_seq_reader_key(feats);
      if (!table_out) { gh_adapt_input_add(&c.in, &all, utt, gh_seq_reader_value(feats)); continue; }
      gh_data d;
      gh_adapt_data_init(&c.in, &d);
      if (gh_adapt_input_add(&c.in, &d, utt, gh_seq_reader_value(feats))) adapt(&c, &d, utt, NULL);
      gh_data_free(&d);
    }
    gh_seq_reader_close(feats);
    if (!table_out) {
      if (all.num_pairs == 0) gh_die("no frames to adapt on in %s", feats_spec);
      gh_gmm_set out;
      adapt(&c, &all, NULL, &out);
      gh_gmm_set_write(out_name, binary, &out);
      gh_gmm_set_free(&out);
    }
    gh_data_free(&all);
  }
  if (c.ark) gh_ostream_close(c.ark);
  gh_log("Done %lld utterances, %lld skipped (no labels); %lld adapted model%s on %s", (long long)c.in.num_done,
         (long long)c.in.num_skipped, (long long)c.num_models, c.num_models == 1 ? "" : "s", c.be->device_name);
  gh_log("Overall MAP auxf change per frame is %g over %g frames", c.tot_count > 0 ? c.tot_change / c.tot_count : 0.0,
         c.tot_count);
  gh_adapt_input_close(&c.in);
  gh_backend_free(c.be);
  gh_gmm_set_free(&prior);
  gh_opts_free(po);
  return c.in.num_done ? 0 : 1;
}
