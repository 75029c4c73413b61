/* fgmm-global-gselect-to-post -- Kaldi's fgmmbin/fgmm-global-gselect-to-post
 * (and, built from this file without GH_FULL by gmm-global-gselect-to-post.c,
 * gmmbin/gmm-global-gselect-to-post):
 * per frame the posteriors of a full-covariance (diagonal) global GMM over the frame's
 * Gaussian-selection list (the backends' acc_gselect op), pruned below
 * --min-post and renormalised (the largest kept if all fall below), in the
 * list's order, as a Posterior archive. */
#include <math.h>
#include <stdlib.h>

#include "backend.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gselect.h"
#include "io/table.h"

#ifndef GH_DIAG
#define TOOL "fgmm-global-gselect-to-post"
#define KIND "full-covariance"
#define COV GH_COV_FULL
#else
#define TOOL "gmm-global-gselect-to-post"
#define KIND "diagonal-covariance"
#define COV GH_COV_DIAG
#endif

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Given features and Gaussian-selection (gselect) information for\n"
      "a " KIND " GMM, output per-frame posteriors for the selected\n"
      "indices.  Also supports pruning the posteriors if they are below\n"
      "a stated threshold, (and renormalizing the rest to sum to one)\n"
      "See also: gmm-gselect, fgmm-gselect, gmm-global-get-post,\n"
      " gmm-global-gselect-to-post\n"
      "\n"
      "Usage:  " TOOL " [options] <model-in> <feature-rspecifier> "
      "<gselect-rspecifier> <post-wspecifier>\n"
      "e.g.: " TOOL " 1.ubm ark:- 'ark:gunzip -c 1.gselect|' ark:-\n";
  gh_opts *po = gh_opts_new(usage);
  float min_post = 0.0f;
  const char *device = "auto";
  gh_opts_float(po, "min-post", &min_post,
                "If nonzero, posteriors below this threshold will be pruned away and the rest will be renormalized "
                "to sum to one.");
  gh_opts_string(po, "device", &device, "Compute device: auto, cpu, cpu-ref, cuda, cuda:N, opencl or opencl:P:D");
  if (gh_opts_parse(po, argc, argv) != 4) gh_opts_usage_exit(po);
  const char *model_in = gh_opts_arg(po, 0), *feats = gh_opts_arg(po, 1), *gs_spec = gh_opts_arg(po, 2),
             *out = gh_opts_arg(po, 3);
  gh_gmm_set model;
  gh_gmm_set_read(model_in, &model);
  gh_gmm *gmm = gh_global_gmm(&model, COV, model_in);
  gh_backend *b = gh_backend_create(device);
  gh_seq_reader *fr = gh_seq_reader_open(feats, GH_OBJ_MATRIX);
  gh_rand_reader *gs = gh_rand_reader_open(gs_spec, GH_OBJ_INT32_VECTOR_VECTOR);
  gh_writer *w = gh_writer_open(out);
  int32_t num_done = 0, num_err = 0;
  double tot_like = 0.0, tot_t = 0.0;
  gh_posterior p = {0};
  float *post = NULL;
  for (; !gh_seq_reader_done(fr); gh_seq_reader_next(fr)) {
    const char *key = gh_seq_reader_key(fr);
    const gh_matrix *m = gh_seq_reader_value(fr);
    const int32_t T = m->rows;
    if (T > 0 && m->cols != gmm->dim) {
      char against[600];
      snprintf(against, sizeof against, "the model %s", model_in);
      gh_die_dim(feats, key, "features", m->cols, gmm->dim, against);
    }
    gh_check_finite_matrix(m, feats, key);
    const gh_ivecvec *g = gh_rand_reader_value(gs, key);
    if (!g) { gh_warn_no_key(gs_spec, key, "gselect information", "utterance skipped"); num_err++; continue; }
    if (g->num_vecs != T) {
      gh_warn("gselect information for utterance %s has wrong size %d vs. %d", key, g->num_vecs, T);
      num_err++;
      continue;
    }
    for (int32_t t = 0; t < T; ++t) {
      if (g->offsets[t + 1] == g->offsets[t])
        gh_die("%s, key '%s': frame %d has an empty Gaussian-selection list", gs_spec, key, t);
      for (int32_t j = g->offsets[t]; j < g->offsets[t + 1]; ++j)
        if (g->data[j] < 0 || g->data[j] >= gmm->num_gauss)
          gh_die("%s, key '%s': frame %d selects Gaussian %d, the model has %d", gs_spec, key, t, g->data[j],
                 gmm->num_gauss);
    }
    const int32_t N = T > 0 ? g->offsets[T] : 0;
    post = gh_realloc(post, sizeof(float) * (size_t)(N > 0 ? N : 1));
    double like = gh_backend_acc_gselect(b, gmm, m->data, T, g->offsets, g->data, NULL, NULL, post, NULL);
    p.num_frames = T;
    p.offsets = gh_realloc(p.offsets, sizeof(int32_t) * ((size_t)T + 1));
    p.pdf = gh_realloc(p.pdf, sizeof(int32_t) * (size_t)(N > 0 ? N : 1));
    p.weight = gh_realloc(p.weight, sizeof(float) * (size_t)(N > 0 ? N : 1));
    p.offsets[0] = 0;
    int utt_ok = 1;
    for (int32_t t = 0; t < T && utt_ok; ++t) {
      const int32_t j0 = g->offsets[t], n = g->offsets[t + 1] - j0;
      float *q = post + j0;
      float sum = 0.0f;
      int32_t imax = 0;
      for (int32_t j = 0; j < n; ++j) {
        sum += q[j];
        if (q[j] > q[imax]) imax = j;
      }
      if (!(fabsf(sum - 1.0f) <= 0.01f)) { utt_ok = 0; break; }
      if (min_post != 0.0f) {
        float s = 0.0f;
        for (int32_t j = 0; j < n; ++j) {
          if (q[j] < min_post) q[j] = 0.0f;
          s += q[j];
        }
        if (s == 0.0f) q[imax] = 1.0f;
        else
          for (int32_t j = 0; j < n; ++j) q[j] *= 1.0f / s;
      }
      int32_t k = p.offsets[t];
      for (int32_t j = 0; j < n; ++j)
        if (q[j] != 0.0f) { p.pdf[k] = g->data[j0 + j]; p.weight[k] = q[j]; ++k; }
      p.offsets[t + 1] = k;
    }
    if (!utt_ok) {
      gh_warn("Skipping utterance %s because bad posterior-sum encountered (NaN?)", key);
      num_err++;
      continue;
    }
    gh_writer_write(w, key, GH_OBJ_POSTERIOR, &p);
    gh_vlog(1, "Processed utterance %s, average likelihood %.7g over %d frames", key, T ? like / T : 0.0, T);
    tot_like += like;
    tot_t += T;
    num_done++;
  }
  gh_writer_close(w);
  gh_rand_reader_close(gs);
  gh_seq_reader_close(fr);
  gh_log("Done %d files, %d with errors, average UBM log-likelihood is %.7g over %.0f frames.", num_done, num_err,
         tot_t > 0 ? tot_like / tot_t : 0.0, tot_t);
  gh_posterior_free(&p);
  free(post);
  gh_backend_free(b);
  gh_gmm_set_free(&model);
  gh_opts_free(po);
  return num_done != 0 ? 0 : 1;
}
