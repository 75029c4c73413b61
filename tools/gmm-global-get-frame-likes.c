/* gmm-global-get-frame-likes -- Kaldi's gmmbin/gmm-global-get-frame-likes
 * (and, built from this file with GH_FULL, fgmmbin/fgmm-global-get-frame-likes):
 * per-frame log-likelihoods of a global GMM as one float vector per
 * utterance, or with --average=true the utterance's average as one float;
 * with --gselect, the log-sum over each frame's selected Gaussians only
 * (the backends' acc_gselect op), else over all (the loglikes kernel). */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "io/table.h"
#include "train/global-acc.h"

#ifdef GH_FULL
#define TOOL "fgmm-global-get-frame-likes"
#define KIND "full-covariance"
#define COV GH_COV_FULL
#else
#define TOOL "gmm-global-get-frame-likes"
#define KIND "diagonal-covariance"
#define COV GH_COV_DIAG
#endif

typedef struct {
  gh_backend *b;
  const gh_gmm *gmm;
  int average;
  gh_writer *w;
  gh_rand_reader *gs;
  const char *gs_spec;
  int32_t num_done, num_err;
  double tot_like, tot_t;
  gh_vector v;
  double *fll;
} like_ctx;

static void one_utt(void *vc, const char *key, int32_t T, const float *X, const float *ll) {
  like_ctx *c = vc;
  gh_vector_resize(&c->v, T);
  if (c->gs) {
    const gh_ivecvec *g = gh_rand_reader_value(c->gs, key);
    if (!g) { gh_warn_no_key(gh_rand_reader_spec(c->gs), key, "gselect information", "utterance skipped"); c->num_err++; return; }
    if (g->num_vecs != T) {
      gh_warn("gselect information for utterance %s has wrong size %d vs. %d", key, g->num_vecs, T);
      c->num_err++;
      return;
    }
    for (int32_t t = 0; t < T; ++t) {
      if (g->offsets[t + 1] == g->offsets[t])
        gh_die("%s, key '%s': frame %d has an empty Gaussian-selection list", c->gs_spec, key, t);
      for (int32_t j = g->offsets[t]; j < g->offsets[t + 1]; ++j)
        if (g->data[j] < 0 || g->data[j] >= c->gmm->num_gauss)
          gh_die("%s, key '%s': frame %d selects Gaussian %d, the model has %d", c->gs_spec, key, t, g->data[j],
                 c->gmm->num_gauss);
    }
    c->fll = gh_realloc(c->fll, sizeof(double) * (size_t)(T > 0 ? T : 1));
    gh_backend_acc_gselect(c->b, c->gmm, X, T, g->offsets, g->data, NULL, NULL, NULL, c->fll);
    for (int32_t t = 0; t < T; ++t) c->v.data[t] = (float)c->fll[t];
  } else {
    if (T > 0) memcpy(c->v.data, ll, sizeof(float) * (size_t)T);
  }
  double sum = 0.0;
  for (int32_t t = 0; t < T; ++t) sum += c->v.data[t];
  c->tot_like += sum;
  c->tot_t += T;
  if (c->average) {
    float a = (float)(sum / T);
    gh_writer_write(c->w, key, GH_OBJ_FLOAT, &a);
  } else {
    gh_writer_write(c->w, key, GH_OBJ_VECTOR, &c->v);
  }
  c->num_done++;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Print out per-frame log-likelihoods for each utterance, as an archive\n"
      "of vectors of floats.  If --average=true, prints out the average per-frame\n"
      "log-likelihood for each utterance, as a single float.\n"
      "(" KIND " GMM)\n"
      "Usage:  " TOOL " [options] <model-in> <feature-rspecifier> <likes-out-wspecifier>\n"
      "e.g.: " TOOL " 1.mdl scp:train.scp ark:1.likes\n";
  gh_opts *po = gh_opts_new(usage);
  int average = 0;
  const char *gselect = "", *device = "auto";
  gh_opts_bool(po, "average", &average,
               "If true, print out the average per-frame log-likelihood as a single float per utterance.");
  gh_opts_string(po, "gselect", &gselect, "rspecifier for gselect objects to limit the #Gaussians accessed on each frame.");
  gh_opts_string(po, "device", &device, "Compute device: auto, cpu, cpu-ref, cuda, cuda:N, opencl or opencl:P:D");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *model_in = gh_opts_arg(po, 0), *feats = gh_opts_arg(po, 1), *out = gh_opts_arg(po, 2);
  gh_gmm_set model;
  gh_gmm_set_read(model_in, &model);
  gh_gmm *gmm = gh_global_gmm(&model, COV, model_in);
  gh_backend *b = gh_backend_create(device);
  gh_dev_model *dm = b->ops->model_upload(b, &model);
  like_ctx c = {0};
  c.b = b;
  c.gmm = gmm;
  c.average = average;
  c.w = gh_writer_open(out);
  c.gs = *gselect ? gh_rand_reader_open(gselect, GH_OBJ_INT32_VECTOR_VECTOR) : NULL;
  c.gs_spec = gselect;
  gh_score_utts(b, dm, 1, gmm->dim, feats, 1 << 16, one_utt, &c);
  gh_writer_close(c.w);
  if (c.gs) gh_rand_reader_close(c.gs);
  gh_log("Done %d files; %d with errors.", c.num_done, c.num_err);
  gh_log("Overall likelihood per frame = %.7g over %.0f frames.", c.tot_t > 0 ? c.tot_like / c.tot_t : 0.0, c.tot_t);
  gh_vector_free(&c.v);
  free(c.fll);
  b->ops->model_free(b, dm);
  gh_backend_free(b);
  gh_gmm_set_free(&model);
  gh_opts_free(po);
  return c.num_done != 0 ? 0 : 1;
}
