/* global-tools.c -- the shared bodies of the diagonal / full twins of
 * Kaldi's global-GMM tools (global-tools.h). */
#include "train/global-tools.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "registry/registry.h"
#include "base/gh-base.h"
#include "gmm/gselect.h"
#include "io/kaldi-io.h"
#include "io/table.h"
#include "train/global-acc.h"

static const char *type_name(gh_covtype type) { return type == GH_COV_FULL ? "full-covariance" : "diagonal-covariance"; }

int gh_global_acc_stats(gh_covtype type, gh_global_acc_args *a, const char *model_in, const char *feats,
                        const char *stats_out) {
  uint32_t flags = gh_gmm_flags_parse(a->update_flags, "update-flags");
  gh_gmm_set model;
  gh_gmm_set_read(model_in, &model);
  gh_gmm *gmm = gh_global_gmm(&model, type, model_in);
  gh_device_opts_begin(&a->dev); /* the device starts while we read */
  gh_backend *b = NULL;
  gh_accs_set accs = {0};
  accs.num_pdfs = 1;
  accs.global_form = 1;
  accs.pdfs = gh_calloc(1, sizeof(gh_gmm_accs));
  int32_t num_done, num_err;
  double tot_like, tot_t;
  gh_global_acc(&a->dev, &b, gmm, feats, a->gselect, a->weights, flags, &accs.pdfs[0], &num_done, &num_err, &tot_like,
                &tot_t);
  gh_log("Done %d files; %d with errors.", num_done, num_err);
  gh_log("Overall likelihood per frame = %.7g over %.7g (weighted) frames.", tot_like / tot_t, tot_t);
  accs.total_frames = tot_t;
  gh_accs_write(stats_out, a->binary, &accs);
  gh_log("Written accs to %s", stats_out);
  gh_accs_free(&accs);
  gh_backend_free(b);
  gh_gmm_set_free(&model);
  return 0;
}

int gh_sum_accs(int global_type, int binary, const char *out, int num_in, const char *const *in) {
  gh_accs_set sum;
  gh_accs_read(in[0], &sum);
  if (global_type >= 0 && (!sum.global_form || sum.pdfs[0].type != (gh_covtype)global_type))
  {
    char want[64], got[96];
    snprintf(want, sizeof want, "%s global-GMM accumulators", type_name((gh_covtype)global_type));
    if (!sum.global_form) snprintf(got, sizeof got, "<NUMPDFS> (that is the accumulators of a GMM set)");
    else snprintf(got, sizeof got, "<GMMACCS> (that is accumulators of %s Gaussians)", type_name(sum.pdfs[0].type));
    gh_die_type(in[0], want, "<GMMACCS>", got);
  }
  for (int i = 1; i < num_in; ++i) {
    gh_accs_set a;
    gh_accs_read(in[i], &a);
    gh_accs_add(&sum, &a, in[i]);
    gh_accs_free(&a);
  }
  const double frames = sum.total_frames;
  if (sum.global_form)
    gh_log("Summed %d stats, total count %.7g", num_in, gh_accs_total_occupancy(&sum));
  else
    gh_log("Summed %d stats, total count %.7g, avg like/frame %.7g", num_in, frames,
           frames > 0 ? sum.total_loglike / frames : 0.0);
  gh_accs_write(out, binary, &sum);
  gh_log("Written stats to %s", out);
  gh_accs_free(&sum);
  return 0;
}

int gh_global_convert(gh_covtype from, gh_covtype to, int binary, const char *in, const char *out) {
  gh_gmm_set s;
  gh_gmm_set_read(in, &s);
  gh_gmm *g = gh_global_gmm(&s, from, in);
  if (to != from) {
    gh_gmm conv = {0};
    if (to == GH_COV_FULL) gh_gmm_diag_to_full(&conv, g);
    else gh_gmm_full_to_diag(&conv, g);
    gh_gmm_free(g);
    *g = conv;
  }
  s.form = GH_SET_GLOBAL;
  gh_gmm_set_write(out, binary, &s);
  gh_log("Written %s to %s", to == from ? "model" : to == GH_COV_FULL ? "full GMM" : "diagonal GMM", out);
  gh_gmm_set_free(&s);
  return 0;
}

int gh_global_est(gh_covtype type, const gh_global_est_args *a, const char *model_in, const char *stats_in,
                  const char *model_out) {
  uint32_t flags = gh_gmm_flags_parse(a->update_flags, "update-flags");
  gh_gmm_set model;
  gh_gmm_set_read(model_in, &model);
  gh_gmm *gmm = gh_global_gmm(&model, type, model_in);
  gh_accs_set accs;
  gh_accs_read(stats_in, &accs);
  if (accs.num_pdfs != 1 || accs.pdfs[0].type != type || accs.pdfs[0].num_gauss != gmm->num_gauss ||
      accs.pdfs[0].dim != gmm->dim)
    gh_die("%s: the accumulators (%d pdf%s, %s, %d Gaussians, dim %d) do not match the model %s (%s, %d Gaussians, "
           "dim %d)", stats_in, accs.num_pdfs, accs.num_pdfs == 1 ? "" : "s",
           accs.pdfs[0].type == GH_COV_FULL ? "full covariance" : "diagonal", accs.pdfs[0].num_gauss, accs.pdfs[0].dim,
           model_in, type == GH_COV_FULL ? "full covariance" : "diagonal", gmm->num_gauss, gmm->dim);
  if (flags & ~accs.pdfs[0].flags)
    gh_die("--update-flags=%s asks for statistics the accumulators in %s lack (their flags: %u)", a->update_flags,
           stats_in, (unsigned)accs.pdfs[0].flags);
  if (!flags) gh_die("--update-flags is empty: nothing to update");
  accs.pdfs[0].flags = flags;
  {
    gh_est_stats st = {0};
    /* Kaldi's MleDiagGmmUpdate / MleFullGmmUpdate update the weights only
     * with "w"; our M-step augments "m" with "w" (as Kaldi's accumulators
     * do), so the old weights are put back (when no Gaussian was removed). */
    float *old_w = gh_malloc(sizeof(float) * (size_t)gmm->num_gauss);
    memcpy(old_w, gmm->weights, sizeof(float) * (size_t)gmm->num_gauss);
    const int32_t old_g = gmm->num_gauss;
    gh_gmm_update(gmm, &accs.pdfs[0], &a->eo, &st, 0);
    if (!(flags & 4u) && gmm->num_gauss == old_g) {
      memcpy(gmm->weights, old_w, sizeof(float) * (size_t)old_g);
      gh_gmm_compute_gconsts(gmm);
    }
    free(old_w);
    gh_est_stats_finish(&st, 1, NULL);
    gh_log("Overall objective function improvement is %.7g per frame over %.7g frames.",
           st.count > 0 ? st.objf_change / st.count : 0.0, st.count);
  }
  if (*a->write_occs) {
    gh_vector v = {0};
    gh_vector_resize(&v, accs.pdfs[0].num_gauss);
    for (int32_t g = 0; g < v.dim; ++g) v.data[g] = (float)accs.pdfs[0].occupancy[g];
    gh_ostream *os = gh_ostream_open(a->write_occs);
    gh_write_binary_marker(os, a->binary);
    gh_write_vector(os, a->binary, &v);
    gh_ostream_close(os);
    gh_vector_free(&v);
  }
  if (a->mix_up != 0) {
    gh_rng rng;
    gh_rng_seed(&rng, 0);
    gh_gmm_split(gmm, a->mix_up, a->perturb, &rng);
  }
  model.form = GH_SET_GLOBAL;
  gh_gmm_set_write(model_out, a->binary, &model);
  gh_log("Written model to %s", model_out);
  gh_accs_free(&accs);
  gh_gmm_set_free(&model);
  return 0;
}

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

int gh_global_get_frame_likes(gh_covtype type, gh_global_likes_args *a, const char *model_in, const char *feats,
                              const char *likes_out) {
  gh_gmm_set model;
  gh_gmm_set_read(model_in, &model);
  gh_gmm *gmm = gh_global_gmm(&model, type, model_in);
  gh_backend *b = gh_device_opts_open(&a->dev);
  gh_dev_model *dm = b->ops->gmm->model_upload(b, &model);
  like_ctx c = {0};
  c.b = b;
  c.gmm = gmm;
  c.average = a->average;
  c.w = gh_writer_open(likes_out);
  c.gs = *a->gselect ? gh_rand_reader_open(a->gselect, GH_OBJ_INT32_VECTOR_VECTOR) : NULL;
  c.gs_spec = a->gselect;
  gh_score_utts(b, dm, 1, gmm->dim, feats, 1 << 16, one_utt, &c);
  gh_writer_close(c.w);
  if (c.gs) gh_rand_reader_close(c.gs);
  gh_log("Done %d files; %d with errors.", c.num_done, c.num_err);
  gh_log("Overall likelihood per frame = %.7g over %.0f frames.", c.tot_t > 0 ? c.tot_like / c.tot_t : 0.0, c.tot_t);
  gh_vector_free(&c.v);
  free(c.fll);
  b->ops->gmm->model_free(b, dm);
  gh_backend_free(b);
  gh_gmm_set_free(&model);
  return c.num_done != 0 ? 0 : 1;
}

int gh_global_gselect_to_post(gh_covtype type, gh_global_post_args *a, const char *model_in, const char *feats,
                              const char *gselect, const char *post_out) {
  gh_gmm_set model;
  gh_gmm_set_read(model_in, &model);
  gh_gmm *gmm = gh_global_gmm(&model, type, model_in);
  gh_backend *b = gh_device_opts_open(&a->dev);
  gh_seq_reader *fr = gh_seq_reader_open(feats, GH_OBJ_MATRIX);
  gh_rand_reader *gs = gh_rand_reader_open(gselect, GH_OBJ_INT32_VECTOR_VECTOR);
  gh_writer *w = gh_writer_open(post_out);
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
    if (!g) { gh_warn_no_key(gselect, key, "gselect information", "utterance skipped"); num_err++; continue; }
    if (g->num_vecs != T) {
      gh_warn("gselect information for utterance %s has wrong size %d vs. %d", key, g->num_vecs, T);
      num_err++;
      continue;
    }
    for (int32_t t = 0; t < T; ++t) {
      if (g->offsets[t + 1] == g->offsets[t])
        gh_die("%s, key '%s': frame %d has an empty Gaussian-selection list", gselect, key, t);
      for (int32_t j = g->offsets[t]; j < g->offsets[t + 1]; ++j)
        if (g->data[j] < 0 || g->data[j] >= gmm->num_gauss)
          gh_die("%s, key '%s': frame %d selects Gaussian %d, the model has %d", gselect, key, t, g->data[j],
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
      if (a->min_post != 0.0f) {
        float s = 0.0f;
        for (int32_t j = 0; j < n; ++j) {
          if (q[j] < a->min_post) q[j] = 0.0f;
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
  return num_done != 0 ? 0 : 1;
}
