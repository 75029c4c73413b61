/* gmm-gselect -- Kaldi's gmmbin/gmm-gselect: per frame, the indices of the
 * n Gaussians of a diagonal global GMM with the highest log-likelihoods,
 * best first (Kaldi DiagGmm::GaussianSelection), as an Int32VectorVector
 * archive; with --gselect, chosen among the given lists only
 * (GaussianSelectionPreselect).  The per-Gaussian log-likelihoods come
 * from the backend's loglikes kernel (drivers/gmm/gselect.h). */
#include <stdlib.h>

#include "registry/registry.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "train/global-acc.h"
#include "io/table.h"
#include "train/device-opts.h"

typedef struct {
  int32_t G, n;
  gh_writer *w;
  gh_rand_reader *pre;
  const char *pre_spec;
  gh_writer *likes;
  int32_t num_done, num_err;
  double tot_like, tot_t;
  gh_ivecvec out;
  int32_t cap;
} sel_ctx;

static void one_utt(void *vc, const char *key, int32_t T, const float *X, const float *ll) {
  sel_ctx *c = vc;
  const gh_ivecvec *pre = NULL;
  if (c->pre) {
    pre = gh_rand_reader_value(c->pre, key);
    if (!pre) { gh_warn_no_key(gh_rand_reader_spec(c->pre), key, "gselect information", "utterance skipped"); c->num_err++; return; }
    if (pre->num_vecs != T) {
      gh_warn("Input gselect for utterance %s has wrong size %d vs. %d", key, pre->num_vecs, T);
      c->num_err++;
      return;
    }
  }
  gh_ivecvec *o = &c->out;
  o->num_vecs = T;
  o->offsets = gh_realloc(o->offsets, sizeof(int32_t) * ((size_t)T + 1));
  if ((int64_t)T * c->n > c->cap) o->data = gh_realloc(o->data, sizeof(int32_t) * (size_t)(c->cap = T * c->n));
  o->offsets[0] = 0;
  double like = 0.0;
  for (int32_t t = 0; t < T; ++t) {
    double lse;
    const int32_t *allowed = NULL;
    int32_t na = 0;
    if (pre) {
      allowed = pre->data + pre->offsets[t];
      na = pre->offsets[t + 1] - pre->offsets[t];
      for (int32_t j = 0; j < na; ++j)
        if (allowed[j] < 0 || allowed[j] >= c->G)
          gh_die("%s, key '%s': frame %d selects Gaussian %d, the model has %d", c->pre_spec, key, t, allowed[j], c->G);
      if (na == 0) gh_die("%s, key '%s': frame %d has an empty Gaussian-selection list", c->pre_spec, key, t);
    }
    int32_t k = gh_gselect_frame(ll + (int64_t)t * c->G, c->G, c->n, allowed, na, o->data + o->offsets[t], &lse);
    o->offsets[t + 1] = o->offsets[t] + k;
    like += lse;
  }
  gh_writer_write(c->w, key, GH_OBJ_INT32_VECTOR_VECTOR, o);
  if (c->num_done % 10 == 0)
    gh_log("For %d'th file, average UBM likelihood over %d frames is %.7g", c->num_done, T, T ? like / T : 0.0);
  c->tot_t += T;
  c->tot_like += like;
  if (c->likes) {
    float f = (float)like;
    gh_writer_write(c->likes, key, GH_OBJ_FLOAT, &f);
  }
  c->num_done++;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Precompute Gaussian indices for pruning\n"
      " (e.g. in training UBMs, SGMMs, tied-mixture systems)\n"
      " For each frame, gives a list of the n best Gaussian indices,\n"
      " sorted from best to worst.\n"
      "See also: gmm-global-get-post, fgmm-global-gselect-to-post\n"
      "Usage: gmm-gselect [options] <model-in> <feature-rspecifier> <gselect-wspecifier>\n"
      "The --gselect option (which takes an rspecifier) limits selection to a subset\n"
      "of indices:\n"
      "e.g.: gmm-gselect \"--gselect=ark:gunzip -c bigger.gselect|\" --n=20 1.gmm \"ark:feature-command |\" "
      "\"ark,t:|gzip -c >gselect.1.gz\"\n";
  gh_opts *po = gh_opts_new(usage);
  int32_t n = 50;
  const char *gselect = "", *likes = "";
  gh_opts_int(po, "n", &n, "Number of Gaussians to keep per frame");
  gh_opts_string(po, "write-likes", &likes, "wspecifier for likelihoods per utterance");
  gh_opts_string(po, "gselect", &gselect, "rspecifier for gselect objects to limit the search to");
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPT);
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *model_in = gh_opts_arg(po, 0), *feats = gh_opts_arg(po, 1), *out = gh_opts_arg(po, 2);
  if (n <= 0) gh_die("--n must be positive (got %d)", n);
  gh_gmm_set model, ex;
  gh_gmm_set_read(model_in, &model);
  gh_gmm *gmm = gh_global_gmm(&model, GH_COV_DIAG, model_in);
  if (n > gmm->num_gauss) {
    gh_warn("You asked for %d Gaussians but GMM only has %d, returning this many. Note: this means the Gaussian "
            "selection is pointless.", n, gmm->num_gauss);
    n = gmm->num_gauss;
  }
  gh_gmm_explode(gmm, &ex);
  gh_backend *b = gh_device_opts_open(&dev);
  gh_dev_model *dm = b->ops->gmm->model_upload(b, &ex);
  sel_ctx c = {0};
  c.G = gmm->num_gauss;
  c.n = n;
  c.w = gh_writer_open(out);
  c.pre = *gselect ? gh_rand_reader_open(gselect, GH_OBJ_INT32_VECTOR_VECTOR) : NULL;
  c.pre_spec = gselect;
  c.likes = *likes ? gh_writer_open(likes) : NULL;
  gh_score_utts(b, dm, c.G, gmm->dim, feats, 1 << 16, one_utt, &c);
  gh_writer_close(c.w);
  if (c.likes) gh_writer_close(c.likes);
  if (c.pre) gh_rand_reader_close(c.pre);
  gh_log("Done %d files, %d with errors, average UBM log-likelihood is %.7g over %.0f frames.", c.num_done, c.num_err,
         c.tot_t > 0 ? c.tot_like / c.tot_t : 0.0, c.tot_t);
  gh_ivecvec_free(&c.out);
  b->ops->gmm->model_free(b, dm);
  gh_backend_free(b);
  gh_gmm_set_free(&ex);
  gh_gmm_set_free(&model);
  gh_opts_free(po);
  return c.num_done != 0 ? 0 : 1;
}
