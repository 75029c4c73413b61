/* global-acc.c -- see global-acc.h. */
#include "train/global-acc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "io/table.h"
#include "train/device-opts.h"
#include "train/gmm-data.h"

typedef struct { char *key; int32_t T; int64_t off; } utt_t;

void gh_score_utts(gh_backend *b, gh_dev_model *m, int32_t P, int32_t dim, const char *feats_rspec,
                   int64_t block_frames, gh_utt_fn fn, void *ctx) {
  if (block_frames < 1) block_frames = 1;
  if (P > 0 && block_frames > (1 << 24) / P) block_frames = (1 << 24) / P > 0 ? (1 << 24) / P : 1; /* <= 64 MB of loglikes */
  gh_seq_reader *r = gh_seq_reader_open(feats_rspec, GH_OBJ_MATRIX_VIEW);
  int64_t cap = 0, nfr = 0;
  float *X = NULL, *ll = NULL;
  int64_t llcap = 0;
  utt_t *u = NULL;
  int32_t nu = 0, ucap = 0;
  for (int done = gh_seq_reader_done(r);; done = gh_seq_reader_done(r)) {
    const gh_matrix_view *v = done ? NULL : gh_seq_reader_value(r);
    const int flush = done || (nfr > 0 && nfr + v->rows > block_frames);
    if (flush && nu > 0) {
      if (nfr * P > llcap) {
        llcap = nfr * P;
        gh_backend_host_free(b, ll);
        ll = gh_backend_host_alloc(b, sizeof(float) * (size_t)llcap);
      }
      if (nfr > 0) b->ops->gmm->loglikes(b, m, X, (int32_t)nfr, ll);
      for (int32_t i = 0; i < nu; ++i) {
        fn(ctx, u[i].key, u[i].T, X + u[i].off * dim, ll + u[i].off * P);
        free(u[i].key);
      }
      nu = 0;
      nfr = 0;
    }
    if (done) break;
    const char *key = gh_seq_reader_key(r);
    if (v->rows > 0 && v->cols != dim)
      gh_die_dim(feats_rspec, key, "features", v->cols, dim, "the model");
    if (nfr + v->rows > cap) {
      int64_t nc = cap ? cap : 4096;
      while (nc < nfr + v->rows) nc *= 2;
      float *nx = gh_backend_host_alloc(b, sizeof(float) * (size_t)(nc * dim));
      if (nfr) memcpy(nx, X, sizeof(float) * (size_t)(nfr * dim));
      gh_backend_host_free(b, X);
      X = nx;
      cap = nc;
    }
    if (v->rows > 0) gh_matrix_view_copy_finite(v, X + nfr * dim, feats_rspec, key);
    if (nu == ucap) u = gh_realloc(u, sizeof(utt_t) * (size_t)(ucap = ucap ? 2 * ucap : 64));
    u[nu].key = gh_strdup(key);
    u[nu].T = v->rows;
    u[nu].off = nfr;
    ++nu;
    nfr += v->rows;
    gh_seq_reader_next(r);
  }
  gh_seq_reader_close(r);
  gh_backend_host_free(b, X);
  gh_backend_host_free(b, ll);
  free(u);
}

void gh_global_acc(gh_device_opts *dev, gh_backend **bp, const gh_gmm *gmm, const char *feats_rspec,
                   const char *gselect_rspec, const char *weights_rspec, uint32_t flags, gh_gmm_accs *accs, int32_t *num_done,
                   int32_t *num_err, double *tot_like, double *tot_t) {
  const int have_gs = gselect_rspec && *gselect_rspec, have_w = weights_rspec && *weights_rspec;
  gh_rand_reader *gs = have_gs ? gh_rand_reader_open(gselect_rspec, GH_OBJ_INT32_VECTOR_VECTOR) : NULL;
  gh_rand_reader *wr = have_w ? gh_rand_reader_open(weights_rspec, GH_OBJ_VECTOR) : NULL;
  gh_data d;
  gh_data_init(&d, gmm->dim);
  gh_data_opts o = {0};
  o.feats_rspec = feats_rspec;
  o.label_type = GH_LABELS_NONE;
  o.num_pdfs = 1;
  o.dim = gmm->dim;
  o.dim_source = NULL; /* the messages say "the model" */
  int32_t *sel_off = NULL, *sel = NULL;
  int64_t off_cap = 0, sel_cap = 0, nsel = 0;
  float *w = NULL;
  int64_t w_cap = 0;
  if (have_gs) { sel_off = gh_malloc(sizeof(int32_t)); sel_off[0] = 0; }
  *num_done = *num_err = 0;
  gh_seq_reader *fr = gh_seq_reader_open(feats_rspec, GH_OBJ_MATRIX_VIEW);
  for (; !gh_seq_reader_done(fr); gh_seq_reader_next(fr)) {
    const char *key = gh_seq_reader_key(fr);
    const gh_matrix_view *v = gh_seq_reader_value(fr);
    const int32_t T = v->rows;
    const gh_vector *wv = NULL;
    const gh_ivecvec *g = NULL;
    if (have_w) {
      wv = gh_rand_reader_value(wr, key);
      if (!wv) { gh_warn_no_key(weights_rspec, key, "weights", "utterance skipped"); ++*num_err; continue; }
      if (wv->dim != T) {
        gh_warn("weights for utterance %s have wrong size %d vs. %d", key, wv->dim, T);
        ++*num_err; continue;
      }
    }
    if (have_gs) {
      g = gh_rand_reader_value(gs, key);
      if (!g) { gh_warn_no_key(gselect_rspec, key, "gselect information", "utterance skipped"); ++*num_err; continue; }
      if (g->num_vecs != T) {
        gh_warn("gselect information for utterance %s has wrong size %d vs. %d", key, g->num_vecs, T);
        ++*num_err; continue;
      }
      for (int32_t t = 0; t < T; ++t) {
        if (g->offsets[t + 1] == g->offsets[t])
          gh_die("%s, key '%s': frame %d has an empty Gaussian-selection list", gselect_rspec, key, t);
        for (int32_t j = g->offsets[t]; j < g->offsets[t + 1]; ++j)
          if (g->data[j] < 0 || g->data[j] >= gmm->num_gauss)
            gh_die("%s, key '%s': frame %d selects Gaussian %d, the model has %d", gselect_rspec, key, t, g->data[j],
                   gmm->num_gauss);
      }
    }
    const int32_t base = d.num_frames;
    if (T == 0) { gh_warn("empty features for utterance %s", key); ++*num_err; continue; }
    if (!gh_data_add_utt(&d, &o, NULL, key, v)) { ++*num_err; continue; }
    if (have_w) {
      if (d.num_frames > w_cap) w = gh_realloc(w, sizeof(float) * (size_t)(w_cap = 2 * (int64_t)d.num_frames));
      memcpy(w + base, wv->data, sizeof(float) * (size_t)T);
      for (int64_t k = d.num_pairs - T; k < d.num_pairs; ++k) d.pairs[k].weight = wv->data[d.pairs[k].frame - base];
    }
    if (have_gs) {
      if (d.num_frames + 1 > off_cap)
        sel_off = gh_realloc(sel_off, sizeof(int32_t) * (size_t)(off_cap = 2 * ((int64_t)d.num_frames + 1)));
      int64_t n = g->offsets[T];
      if (nsel + n > INT32_MAX) gh_die("%s: more than %d Gaussian-selection entries in one pass", gselect_rspec, INT32_MAX);
      if (nsel + n > sel_cap) {
        sel_cap = sel_cap ? sel_cap : 65536;
        while (sel_cap < nsel + n) sel_cap *= 2;
        sel = gh_realloc(sel, sizeof(int32_t) * (size_t)sel_cap);
      }
      memcpy(sel + nsel, g->data, sizeof(int32_t) * (size_t)n);
      for (int32_t t = 0; t < T; ++t) sel_off[base + t + 1] = (int32_t)nsel + g->offsets[t + 1];
      nsel += n;
    }
    ++*num_done;
  }
  gh_seq_reader_close(fr);
  if (gs) gh_rand_reader_close(gs);
  if (wr) gh_rand_reader_close(wr);
  if (d.num_frames == 0) gh_die("no frames to accumulate on in %s", feats_rspec);
  gh_backend *b = *bp = gh_device_opts_end(dev);
  d.total_weight = 0.0;
  for (int64_t k = 0; k < d.num_pairs; ++k) d.total_weight += d.pairs[k].weight;
  *tot_t = d.total_weight;
  gh_gmm_accs_free(accs);
  if (have_gs) {
    gh_gmm_accs_init(accs, gmm->type, gmm->num_gauss, gmm->dim, 7);
    *tot_like = gh_backend_acc_gselect(b, gmm, d.feats, d.num_frames, sel_off, sel, w, accs, NULL, NULL);
  } else {
    gh_gmm_set one = {0};
    one.dim = gmm->dim;
    one.num_pdfs = 1;
    one.pdfs = (gh_gmm *)gmm;
    one.form = GH_SET_GLOBAL;
    gh_accs_set as;
    double avg = gh_data_estep(b, &one, &d, &as, NULL);
    *tot_like = avg * d.total_weight;
    *accs = as.pdfs[0];
    memset(&as.pdfs[0], 0, sizeof as.pdfs[0]);
    gh_accs_free(&as);
  }
  accs->flags = gh_gmm_flags_augment(flags);
  if (!(accs->flags & 1u)) memset(accs->mean_accs, 0, sizeof(double) * (size_t)gmm->num_gauss * gmm->dim);
  if (!(accs->flags & 2u)) memset(accs->var_accs, 0, sizeof(double) * (size_t)gmm->num_gauss * gh_gmm_cov_size(gmm));
  free(sel_off); free(sel); free(w);
  gh_data_free(&d);
}
