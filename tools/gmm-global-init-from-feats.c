/* gmm-global-init-from-feats -- Kaldi's gmmbin/gmm-global-init-from-feats:
 * initialise a diagonal global GMM in memory.  Kaldi's algorithm: keep a
 * uniformly random subset of at most --num-frames frames (reservoir
 * sampling while reading), set --num-gauss-init Gaussians to distinct
 * random frames as means, the global variance as variances and equal
 * weights (InitGmmFromRandomFrames; it needs >= 10 frames per Gaussian),
 * then --num-iters EM iterations on the subset, splitting after each
 * (DiagGmm::Split, perturbation 0.1) by (num_gauss - num_gauss_init) /
 * (num_iters / 2) Gaussians until --num-gauss.  The random draws come from
 * our RNG (gh_rng, seed --srand), not Kaldi's rand().  EM runs on the
 * backend with the subset resident, through the trainers' EM engine as
 * one rank (drivers/train/dist-em.h gh_dist_em; the subset is one block). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "registry/registry.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm-est.h"
#include "gmm/gmm.h"
#include "io/table.h"
#include "train/gmm-data.h"
#include "train/device-opts.h"
#include "train/comm.h"
#include "train/dist-em.h"
#include "train/shard.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "This program initializes a single diagonal GMM and does multiple iterations of\n"
      "training from features stored in memory.\n"
      "Usage:  gmm-global-init-from-feats [options] <feature-rspecifier> <model-out>\n"
      "e.g.: gmm-global-init-from-feats scp:train.scp 1.dubm\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  int32_t num_gauss = 100, num_gauss_init = 0, num_iters = 50, num_frames = 200000, srand_seed = 0,
          num_threads = 4;
  gh_est_opts eo;
  gh_est_opts_default(&eo);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  gh_opts_int(po, "num-gauss", &num_gauss, "Number of Gaussians in the model");
  gh_opts_int(po, "num-gauss-init", &num_gauss_init,
              "Number of Gaussians in the model initially (if nonzero and less than num_gauss, we'll do mixture "
              "splitting)");
  gh_opts_int(po, "num-iters", &num_iters, "Number of iterations of training");
  gh_opts_int(po, "num-frames", &num_frames,
              "Number of feature vectors to store in memory and train on (randomly chosen from the input features)");
  gh_opts_int(po, "srand", &srand_seed, "Seed for random number generator ");
  gh_opts_int(po, "num-threads", &num_threads,
              "Number of threads used for statistics accumulation (accepted for Kaldi compatibility; the backend "
              "uses its own threads)");
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPT);
  gh_est_opts_register_cov(po, &eo, GH_COV_DIAG);
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *feats = gh_opts_arg(po, 0), *model_out = gh_opts_arg(po, 1);
  if (num_frames <= 0) gh_die("--num-frames must be positive (got %d)", num_frames);
  if (num_gauss <= 0) gh_die("--num-gauss must be positive (got %d)", num_gauss);
  if (num_iters < 0) gh_die("--num-iters must be >= 0 (got %d)", num_iters);
  gh_rng rng;
  gh_rng_seed(&rng, (uint64_t)(uint32_t)srand_seed);
  gh_device_opts_begin(&dev);

  /* the random subset (Kaldi: reservoir sampling, WithProb + RandInt) */
  gh_log("Reading features (will keep %d frames.)", num_frames);
  int64_t num_read = 0, rows = 0, cap = 0;
  int32_t dim = 0;
  float *keep = NULL;
  gh_seq_reader *r = gh_seq_reader_open(feats, GH_OBJ_MATRIX_VIEW);
  float *row = NULL;
  for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {
    const char *key = gh_seq_reader_key(r);
    const gh_matrix_view *v = gh_seq_reader_value(r);
    if (v->rows == 0) continue;
    if (dim == 0) {
      dim = v->cols;
      row = gh_malloc(sizeof(float) * (size_t)dim);
    } else if (v->cols != dim) {
      gh_die_dim(feats, key, "features", v->cols, dim, "the earlier utterances");
    }
    for (int32_t t = 0; t < v->rows; ++t) {
      memcpy(row, (const char *)v->bytes + (size_t)t * dim * 4, sizeof(float) * (size_t)dim);
      for (int32_t i = 0; i < dim; ++i)
        if (!gh_isfinite_f(row[i])) gh_die("%s, key '%s': NaN or infinity at row %d, col %d", feats, key, t, i);
      ++num_read;
      float *dst = NULL;
      if (num_read <= num_frames) {
        if (rows == cap) {
          cap = cap ? 2 * cap : 4096;
          if (cap > num_frames) cap = num_frames;
          keep = gh_realloc(keep, sizeof(float) * (size_t)cap * dim);
        }
        dst = keep + rows++ * dim;
      } else {
        double keep_prob = (double)num_frames / (double)num_read;
        if (gh_rng_uniform(&rng) < keep_prob) dst = keep + (int64_t)(gh_rng_u64(&rng) % (uint64_t)num_frames) * dim;
      }
      if (dst) memcpy(dst, row, sizeof(float) * (size_t)dim);
    }
  }
  gh_seq_reader_close(r);
  free(row);
  if (num_read == 0) gh_die("%s: no feature frames read", feats);
  if (num_read < num_frames)
    gh_warn("Number of frames read %lld was less than target number %d, using all we read.", (long long)num_read,
            num_frames);
  else
    gh_log("Kept %d out of %lld input frames = %.4g%%.", num_frames, (long long)num_read,
           num_frames * 100.0 / (double)num_read);
  if (num_gauss_init <= 0 || num_gauss_init > num_gauss) num_gauss_init = num_gauss;
  if (rows < 10 * (int64_t)num_gauss_init)
    gh_die("too few frames to train on: %lld frames for %d initial Gaussians (at least 10 per Gaussian, as Kaldi's "
           "InitGmmFromRandomFrames asks)", (long long)rows, num_gauss_init);

  /* InitGmmFromRandomFrames: global mean and variance (double), random distinct frames as means */
  double *mean = gh_calloc((size_t)dim, sizeof(double)), *var = gh_calloc((size_t)dim, sizeof(double));
  for (int64_t t = 0; t < rows; ++t)
    for (int32_t i = 0; i < dim; ++i) {
      double x = keep[t * dim + i];
      mean[i] += x / rows;
      var[i] += x * x / rows;
    }
  double vmax = -INFINITY;
  for (int32_t i = 0; i < dim; ++i) {
    var[i] -= mean[i] * mean[i];
    if (var[i] > vmax) vmax = var[i];
  }
  if (!(vmax > 0.0)) gh_die("%s: features do not have positive variance", feats);
  gh_log("Initializing GMM means from random frames to %d Gaussians.", num_gauss_init);
  double *w = gh_malloc(sizeof(double) * (size_t)num_gauss_init);
  double *mu = gh_malloc(sizeof(double) * (size_t)num_gauss_init * dim);
  double *cv = gh_malloc(sizeof(double) * (size_t)num_gauss_init * dim);
  unsigned char *used = gh_calloc((size_t)rows, 1);
  for (int32_t g = 0; g < num_gauss_init; ++g) {
    int64_t f;
    do f = (int64_t)(gh_rng_u64(&rng) % (uint64_t)rows); while (used[f]);
    used[f] = 1;
    w[g] = 1.0 / num_gauss_init;
    for (int32_t i = 0; i < dim; ++i) {
      mu[(int64_t)g * dim + i] = keep[f * dim + i];
      cv[(int64_t)g * dim + i] = var[i];
    }
  }
  gh_gmm_set model = {0};
  model.dim = dim;
  model.num_pdfs = 1;
  model.form = GH_SET_GLOBAL;
  model.pdfs = gh_calloc(1, sizeof(gh_gmm));
  gh_gmm_init(&model.pdfs[0], GH_COV_DIAG, num_gauss_init, dim);
  if (gh_gmm_set_moments(&model.pdfs[0], w, mu, cv) != 0) gh_die("initial GMM: %s", gh_last_error());
  free(w); free(mu); free(cv); free(used); free(mean); free(var);

  /* the subset as resident training data of one global GMM */
  gh_data d;
  gh_data_init(&d, dim);
  gh_data_opts o = {0};
  o.feats_rspec = feats;
  o.label_type = GH_LABELS_NONE;
  o.num_pdfs = 1;
  o.dim = dim;
  gh_matrix_view kv = {(int32_t)rows, dim, keep};
  gh_data_add_utt(&d, &o, NULL, "subset", &kv);
  free(keep);
  d.total_weight = (double)d.num_frames;
  gh_shard_data sd;
  gh_shard_data_from_data(&sd, &d, "subset");
  gh_backend *b = gh_device_opts_end(&dev);
  gh_comm *comm = gh_comm_single();
  gh_dist_em em;
  gh_dist_em_init(&em, comm, b, &model, &sd, 0);
  int32_t cur = num_gauss_init, half = num_iters / 2 > 0 ? num_iters / 2 : 1;
  const int32_t inc = (num_gauss - num_gauss_init) / half;
  for (int32_t iter = 0; iter < num_iters; ++iter) {
    double avg = gh_dist_em_estep(&em, NULL);
    gh_log("Likelihood per frame on iteration %d was %.6g over %d frames.", iter, avg, sd.blocks[0].num_frames);
    gh_est_stats st = {0};
    gh_dist_em_mstep(&em, &eo, NULL, &st);
    gh_log("Objective-function change on iteration %d was %.6g over %.6g frames.", iter,
           st.count > 0 ? st.objf_change / st.count : 0.0, st.count);
    int32_t next = cur + inc < num_gauss ? cur + inc : num_gauss;
    gh_dist_em_sync(&em);
    if (next > model.pdfs[0].num_gauss) {
      gh_log("Splitting to %d Gaussians.", next);
      gh_gmm_split(&model.pdfs[0], next, 0.1, &rng);
      gh_dist_em_model_changed(&em);
      cur = next;
    }
  }
  gh_dist_em_sync(&em);
  gh_dist_em_free(&em);
  gh_comm_finalize(comm);
  gh_gmm_set_write(model_out, binary, &model);
  gh_log("Wrote model to %s", model_out);
  gh_shard_data_free(&sd);
  gh_backend_free(b);
  gh_gmm_set_free(&model);
  gh_opts_free(po);
  return 0;
}
