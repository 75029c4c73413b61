/* emissions.c -- see emissions.h. */
#include "gmm/emissions.h"
#include "base/gh-base.h"
#include "base/opts.h"

#include <string.h>

void gh_gmm_emissions_register(struct gh_opts *po, const char **gmm_rx) {
  *gmm_rx = "";
  gh_opts_string(po, "gmm", gmm_rx,
                 "GMM set or Kaldi .mdl whose pdfs emit: the second argument is then a features rspecifier, "
                 "scored on this tool's device (one process for gmm-score-gpu MODEL | this tool; the same "
                 "log-likelihoods)");
}

void gh_gmm_emissions_init(gh_gmm_emissions *e, gh_backend *be, const gh_gmm_set *set, const char *gmm_rx,
                           int32_t hmm_pdfs, float acoustic_scale) {
  memset(e, 0, sizeof *e);
  if (set->num_pdfs < hmm_pdfs)
    gh_die("%s has %d pdfs but the HMMs use pdf ids up to %d: the model does not belong to these HMMs", gmm_rx,
           set->num_pdfs, hmm_pdfs - 1);
  e->be = be;
  e->D = set->dim;
  e->P = set->num_pdfs;
  e->acoustic_scale = acoustic_scale;
  e->m = be->ops->gmm->model_upload(be, set);
}

void gh_gmm_emissions_score(gh_gmm_emissions *e, const gh_hmm_batch *feats, gh_hmm_batch *out) {
  const int64_t T = feats->frame_off[feats->num_utts];
  if (feats->num_pdfs != e->D)
    gh_die("internal: gh_gmm_emissions_score: a batch of %d columns for a model of dimension %d", feats->num_pdfs,
           e->D);
  if (T > e->cap) {
    gh_backend_host_free(e->be, e->ll);
    e->cap = T + T / 4;
    e->ll = gh_backend_host_alloc(e->be, (size_t)e->cap * (size_t)e->P * sizeof(float));
  }
  /* the backend's loglikes calls take int32 frame counts */
  for (int64_t t0 = 0; t0 < T; t0 += 1 << 30) {
    const int32_t n = (int32_t)(T - t0 < (1 << 30) ? T - t0 : (1 << 30));
    e->be->ops->gmm->loglikes(e->be, e->m, feats->loglikes + t0 * e->D, n, e->ll + t0 * e->P);
  }
  if (e->acoustic_scale != 1.0f)
    for (int64_t i = 0; i < T * e->P; ++i) e->ll[i] *= e->acoustic_scale;
  *out = *feats;
  out->num_pdfs = e->P;
  out->loglikes = e->ll;
}

void gh_gmm_emissions_free(gh_gmm_emissions *e) {
  if (e->m) e->be->ops->gmm->model_free(e->be, e->m);
  gh_backend_host_free(e->be, e->ll);
  memset(e, 0, sizeof *e);
}
