/* gmm-global-get-post -- Kaldi's gmmbin/gmm-global-get-post: per frame the
 * top-n Gaussian posteriors of a diagonal global GMM (over all Gaussians,
 * then pruned below --min-post and renormalised: Kaldi
 * VectorToPosteriorEntry, drivers/gmm/gselect.c gh_post_topn), as a Posterior
 * archive (what i-vector extraction consumes); per-Gaussian
 * log-likelihoods from the backend's loglikes kernel. */
#include <stdlib.h>

#include "registry/registry.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "io/table.h"
#include "train/global-acc.h"
#include "train/device-opts.h"

typedef struct {
  int32_t G, n;
  float min_post;
  gh_writer *w, *ll_w;
  int32_t num_done, num_err;
  double tot_like, tot_t;
  gh_posterior p;
  gh_vector fl;
} post_ctx;

static void one_utt(void *vc, const char *key, int32_t T, const float *X, const float *ll) {
  post_ctx *c = vc;
  if (T == 0) { gh_warn("Empty features for utterance %s", key); c->num_err++; return; }
  gh_posterior *p = &c->p;
  p->num_frames = T;
  p->offsets = gh_realloc(p->offsets, sizeof(int32_t) * ((size_t)T + 1));
  p->pdf = gh_realloc(p->pdf, sizeof(int32_t) * (size_t)T * c->n);
  p->weight = gh_realloc(p->weight, sizeof(float) * (size_t)T * c->n);
  p->offsets[0] = 0;
  if (c->ll_w) gh_vector_resize(&c->fl, T);
  double like = 0.0;
  for (int32_t t = 0; t < T; ++t) {
    int32_t k;
    double l = gh_post_topn(ll + (int64_t)t * c->G, c->G, c->n, c->min_post, p->pdf + p->offsets[t],
                            p->weight + p->offsets[t], &k);
    p->offsets[t + 1] = p->offsets[t] + k;
    like += l;
    if (c->ll_w) c->fl.data[t] = (float)l;
  }
  gh_vlog(1, "Processed utterance %s, average likelihood %.7g over %d frames", key, like / T, T);
  c->tot_like += like;
  c->tot_t += T;
  gh_writer_write(c->w, key, GH_OBJ_POSTERIOR, p);
  if (c->ll_w) gh_writer_write(c->ll_w, key, GH_OBJ_VECTOR, &c->fl);
  c->num_done++;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Precompute Gaussian indices and convert immediately to top-n\n"
      "posteriors (useful in iVector extraction with diagonal UBMs)\n"
      "See also: gmm-gselect, fgmm-gselect, fgmm-global-gselect-to-post\n"
      " (e.g. in training UBMs, SGMMs, tied-mixture systems)\n"
      " For each frame, gives a list of the n best Gaussian indices,\n"
      " sorted from best to worst.\n"
      "Usage: gmm-global-get-post [options] <model-in> <feature-rspecifier> <post-wspecifier> "
      "[<frame-loglikes-wspecifier>]\n"
      "e.g.: gmm-global-get-post --n=20 1.gmm \"ark:feature-command |\" \"ark,t:|gzip -c >post.1.gz\"\n";
  gh_opts *po = gh_opts_new(usage);
  int32_t n = 50;
  float min_post = 0.0f;
  gh_opts_int(po, "n", &n, "Number of Gaussians to keep per frame");
  gh_opts_float(po, "min-post", &min_post,
                "Minimum posterior we will output before pruning and renormalizing (e.g. 0.01)");
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPT);
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs != 3 && nargs != 4) gh_opts_usage_exit(po);
  const char *model_in = gh_opts_arg(po, 0), *feats = gh_opts_arg(po, 1), *out = gh_opts_arg(po, 2);
  if (n <= 0) gh_die("--n must be positive (got %d)", n);
  if (!(min_post >= 0.0f && min_post < 1.0f)) gh_die("--min-post must be in [0, 1) (got %g)", min_post);
  gh_gmm_set model, ex;
  gh_gmm_set_read(model_in, &model);
  gh_gmm *gmm = gh_global_gmm(&model, GH_COV_DIAG, model_in);
  if (n > gmm->num_gauss) n = gmm->num_gauss;
  gh_gmm_explode(gmm, &ex);
  gh_backend *b = gh_device_opts_open(&dev);
  gh_dev_model *dm = b->ops->gmm->model_upload(b, &ex);
  post_ctx c = {0};
  c.G = gmm->num_gauss;
  c.n = n;
  c.min_post = min_post;
  c.w = gh_writer_open(out);
  c.ll_w = nargs == 4 ? gh_writer_open(gh_opts_arg(po, 3)) : NULL;
  gh_score_utts(b, dm, c.G, gmm->dim, feats, 1 << 16, one_utt, &c);
  gh_writer_close(c.w);
  if (c.ll_w) gh_writer_close(c.ll_w);
  gh_log("Done %d files, %d with errors, average UBM log-likelihood is %.7g over %.0f frames.", c.num_done, c.num_err,
         c.tot_t > 0 ? c.tot_like / c.tot_t : 0.0, c.tot_t);
  gh_posterior_free(&c.p);
  gh_vector_free(&c.fl);
  b->ops->gmm->model_free(b, dm);
  gh_backend_free(b);
  gh_gmm_set_free(&ex);
  gh_gmm_set_free(&model);
  gh_opts_free(po);
  return c.num_done != 0 ? 0 : 1;
}
