/* fmllr.h -- feature-space MLLR (constrained MLLR) for diagonal-covariance
 * GMM sets: statistics, the row-by-row update and applying transforms.
 *
 * Model (Gales 1998, "Maximum likelihood linear transformations for
 * HMM-based speech recognition", Computer Speech and Language 12, sec. 2.2):
 * a speaker's features x (D) are mapped to y = A x + b = W xi with
 * xi = [x; 1] and W = [A b] (D x (D+1)).  The auxiliary function (natural
 * log, total over the speaker's frames, up to a constant) is
 *   Q(W) = beta log|det A| + tr(W K') - 1/2 sum_i w_i G_i w_i'
 * with w_i the i-th row of W, gamma_tg the Gaussian posteriors (within the
 * pdf of the frame's label, times the label weight) and
 *   beta = sum_tg gamma_tg
 *   K    = sum_tg gamma_tg (mu_g / var_g) xi_t'                [D x (D+1)]
 *   G_i  = sum_tg gamma_tg / var_gi  xi_t xi_t'                [(D+1) x (D+1)], i = 0..D-1
 * (Povey & Saon 2006, "Feature and model space speaker adaptation with full
 * covariance Gaussians", Interspeech, eqs. 4-7; Kaldi's FmllrDiagGmmAccs /
 * FmllrAuxFuncDiagGmm in transform/fmllr-diag-gmm.cc).
 *
 * Statistics on the GPU: with the diagonal set viewed as a full-covariance
 * set whose inverse covariances are diagonal (gh_gmm_diag_to_full; same
 * Gaussians, same posteriors), the existing full-covariance E-step of the
 * backend (drivers/train/gmm-data.h gh_data_estep) gives per Gaussian occ_g,
 * m_g = sum_t gamma x_t and S_g = sum_t gamma x_t x_t', from which
 *   K  += (mu_g / var_g) [m_g; occ_g]'      G_i += (1/var_gi) [S_g m_g; m_g' occ_g]
 * exactly (what Kaldi's gmm-global-est-fmllr does with AccumFullGmm).
 */
#ifndef GH_FMLLR_H
#define GH_FMLLR_H
#include <stdint.h>
#include "gmm/gmm.h"
#include "train/gmm-data.h"
#include "base/matrix.h"
#include "io/table.h"
#include "backend.h"

typedef struct {
  int32_t dim;   /* D */
  double beta;   /* total occupancy (weighted frames) */
  double *K;     /* [D x (D+1)] row-major */
  double *G;     /* [D x (D+1) x (D+1)]: G_i at G + i (D+1)^2, full symmetric, row-major */
} gh_fmllr_stats;

/* Zeroed statistics of dimension D (>= 1); s is overwritten. */
void gh_fmllr_stats_init(gh_fmllr_stats *s, int32_t dim);
void gh_fmllr_stats_zero(gh_fmllr_stats *s);
void gh_fmllr_stats_free(gh_fmllr_stats *s);

/* *full := the diagonal set `diag` with every pdf converted to a
 * full-covariance GMM (gh_gmm_diag_to_full), for the E-step.  Dies naming
 * `name` if a pdf is not diagonal (fMLLR here is for diagonal models). */
void gh_fmllr_full_view(gh_gmm_set *full, const gh_gmm_set *diag, const char *name);

/* s += the fMLLR statistics of full-covariance accumulators `accs`
 * (uncentred, as gh_data_estep returns them; one pdf per pdf of diag)
 * gathered with the full view of the diagonal set `diag` (formulas at the
 * top).  Dies if the shapes differ. */
void gh_fmllr_stats_add_accs(gh_fmllr_stats *s, const gh_gmm_set *diag, const gh_accs_set *accs);

/* One E-step of data d on backend b with full_view (from gh_fmllr_full_view
 * of diag) and s += its statistics.  Returns the total log-likelihood
 * sum_t weight_t log p(x_t | pdf_t) (natural log, total). */
double gh_fmllr_accumulate(gh_backend *b, const gh_gmm_set *diag, const gh_gmm_set *full_view,
                           const gh_data *d, gh_fmllr_stats *s);

/* Q(W) above for W [D x (D+1)] row-major in double (natural log, total;
 * Kaldi FmllrAuxFuncDiagGmm).  Returns -inf if A is singular. */
double gh_fmllr_auxf(const double *W, const gh_fmllr_stats *s);

/* Row-by-row update (Gales 1998 eqs. 26-30; Povey & Saon 2006 sec. 2;
 * Kaldi ComputeFmllrMatrixDiagGmmFull / FmllrInnerUpdate): num_iters
 * passes over the rows; each row i is set to the exact maximiser of Q over
 * w_i with the other rows fixed,
 *   w_i = (alpha c_i + k_i) G_i^-1,  c_i = [cofactor row i of A, 0],
 * alpha the root of  alpha^2 e1 + alpha e2 - beta = 0  (e1 = c_i G_i^-1 c_i',
 * e2 = c_i G_i^-1 k_i') with the larger Q.  W (in: start, usually [I 0];
 * out: the estimate) is D x (D+1) row-major double.  Returns the gain
 * Q(new) - Q(old) (natural log, total; divide by beta for per frame).  As
 * Kaldi, if Q would decrease (beyond rounding) W is left unchanged and 0
 * is returned.  Returns 0 and leaves W unchanged if s->beta <= min_count.
 * Dies if a G_i is not positive definite (e.g. fewer frames than D + 1)
 * naming `what` (the speaker or utterance). */
double gh_fmllr_update(const gh_fmllr_stats *s, int32_t num_iters, double min_count, double *W,
                       const char *what);

/* out := features transformed by W (Kaldi transform-feats): W of
 * in->cols + 1 columns is affine ([A b]: y = A x + b), of in->cols columns
 * linear (y = A x); out has W->rows columns and in->rows rows (resized).
 * Computed in double, stored as float.  Returns 0, or -1 with the message
 * in gh_last_error() if the sizes do not fit. */
int gh_fmllr_apply(const gh_matrix *W, const gh_matrix *in, gh_matrix *out);

/* log|det A| of the square part of W (rows x rows) -- the Jacobian term that
 * transform-feats logs; -inf if singular. */
double gh_fmllr_logdet(const gh_matrix *W);

/* ---- training data of one speaker or utterance, for the adaptation tools ---- */

/* The inputs of the adaptation tools (gmm-est-fmllr, gmm-adapt-map): the
 * features rspecifier, an optional label table (random access; label_type
 * "ali", "utt" or "post" as gh_data_load reads them) and the model's number
 * of pdfs and dimension, with counts of utterances used and skipped. */
typedef struct {
  gh_rand_reader *labels;        /* NULL without a labels argument */
  gh_data_opts opts;             /* tables, label type, pdf bound, dimension (model) */
  int64_t num_done;     /* utterances added */
  int64_t num_skipped;  /* utterances without labels (warned) */
} gh_adapt_input;

/* Opens the label table if labels_spec is non-NULL.  Dies on a bad
 * label_type, or without labels when the model (model_name) has more than
 * one pdf. */
void gh_adapt_input_open(gh_adapt_input *in, const gh_gmm_set *model, const char *model_name,
                         const char *feats_spec, const char *labels_spec, const char *label_type);
void gh_adapt_input_close(gh_adapt_input *in);
/* A zeroed gh_data block of the model's dimension, ready for
 * gh_adapt_input_add; free with gh_data_free. */
void gh_adapt_data_init(const gh_adapt_input *in, gh_data *d);
/* Appends utterance utt (features m) with its labels to d through
 * gmm-data.h gh_data_add_utt (gh_data_load's checks: finite features,
 * dimension, label length, pdf ids; dies naming the table and the key).
 * Returns 0 and warns, counting it as skipped, if the label table has no
 * entry for utt; 1 otherwise (an empty matrix is warned of and adds
 * nothing). */
int gh_adapt_input_add(gh_adapt_input *in, gh_data *d, const char *utt, const gh_matrix *m);

/* The per-speaker loop of the adaptation tools' --spk2utt: for every
 * speaker of spk2utt_rspec (token vectors, read in order), the speaker's
 * utterances read from feats_spec by random access and appended with
 * gh_adapt_input_add to a fresh block d, then fn(ctx, d, speaker) (d is
 * freed after fn returns).  Dies naming the tables, speaker and utterance
 * when an utterance has no features or a speaker no utterances.  Returns
 * the number of speakers. */
typedef void (*gh_adapt_speaker_fn)(void *ctx, gh_data *d, const char *spk);
int64_t gh_adapt_for_each_speaker(gh_adapt_input *in, const char *spk2utt_rspec, const char *feats_spec,
                                  gh_adapt_speaker_fn fn, void *ctx);

#endif
