/* emissions.h -- GMM emissions inside the HMM tools (hmm-forward --gmm,
 * hmm-viterbi --gmm): the features of each batch scored under a GMM set on
 * the tool's own backend, so that scoring and the HMM pass are one process
 * with one device context instead of `gmm-score-gpu MODEL | hmm-forward`
 * (two processes, two contexts, the log-likelihoods through a pipe).
 *
 * The batch the HMM tool reads holds features [frames x D] in place of
 * log-likelihoods (gh_hmm_input_open with D columns and acoustic scale 1);
 * gh_gmm_emissions_score turns it into the batch of log-likelihoods [frames
 * x P] (natural log, per frame; Kaldi's gmm-compute-likes numbers, then
 * times the acoustic scale) that the HMM kernels take.
 */
#ifndef GH_GMM_EMISSIONS_H
#define GH_GMM_EMISSIONS_H
#include "backend.h"
#include "gmm/gmm.h"
#include "hmm/graph.h"

struct gh_opts;

typedef struct {
  gh_backend *be;
  gh_dev_model *m;       /* the GMM set on be */
  int32_t D, P;          /* feature dimension, pdfs (log-likelihood columns) */
  float acoustic_scale;  /* applied to the log-likelihoods (Kaldi's --acoustic-scale) */
  float *ll;             /* [cap x P] (gh_backend_host_alloc) */
  int64_t cap;
} gh_gmm_emissions;

/* Registers --gmm (rxfilename of a GMM set or Kaldi .mdl; "" = read
 * log-likelihoods) on po into *gmm_rx (default ""). */
void gh_gmm_emissions_register(struct gh_opts *po, const char **gmm_rx);

/* Uploads set to be (set->num_pdfs >= hmm_pdfs, the HMMs' pdf columns; else
 * dies naming gmm_rx).  acoustic_scale multiplies the log-likelihoods. */
void gh_gmm_emissions_init(gh_gmm_emissions *e, gh_backend *be, const gh_gmm_set *set, const char *gmm_rx,
                           int32_t hmm_pdfs, float acoustic_scale);

/* feats: a batch whose loglikes field holds features [frame_off[B] x D]
 * (num_pdfs == D).  *out := the same batch (utterances, offsets, graphs)
 * with loglikes [frame_off[B] x P] of the GMM set, valid until the next
 * call or _free. */
void gh_gmm_emissions_score(gh_gmm_emissions *e, const gh_hmm_batch *feats, gh_hmm_batch *out);

void gh_gmm_emissions_free(gh_gmm_emissions *e);

#endif
