/* gmm.h -- GMM sets (one GMM per pdf) in Kaldi's on-disk layout, and their
 * accumulators (sufficient statistics) for EM.
 *
 * A gh_gmm holds parameters in Kaldi's "natural-to-evaluate" form (diag-gmm.h,
 * full-gmm.h), exactly as stored on disk, so reading a model is a copy:
 *   diag:  loglike_g(x) = gconst_g + x . means_invvars_g - 0.5 * (x*x) . inv_vars_g
 *   full:  loglike_g(x) = gconst_g + x . means_invcovars_g - 0.5 * x' InvCov_g x
 * with gconst_g = log w_g - 0.5*(D log 2pi + log det Cov_g + mu' InvCov_g mu)
 * (natural log), and the per-pdf log-likelihood log sum_g exp(loglike_g(x)).
 * Full inverse covariances are Kaldi SpMatrix packed lower triangles
 * (matrix.h gh_packed_index), D(D+1)/2 floats per Gaussian.
 *
 * On-disk set layout (Kaldi AmDiagGmm, extended to allow <FullGMM> entries):
 *   <DIMENSION> D <NUMPDFS> P, then P x (<DiagGMM> ... </DiagGMM> |
 *   <FullGMM> ... </FullGMM>).
 * One GMM (Kaldi DiagGmm::Write / FullGmm::Write):
 *   <DiagGMM> <GCONSTS> FV <WEIGHTS> FV <MEANS_INVVARS> FM <INV_VARS> FM </DiagGMM>
 *   <FullGMM> <GCONSTS> FV <WEIGHTS> FV <MEANS_INVCOVARS> FM <INV_COVARS> G x FP </FullGMM>
 *   (text: newline after <DiagGMM>/<FullGMM> and after the closing token).
 *   On read <GCONSTS> is optional (as in Kaldi) and <DiagGMMBegin>/<DiagGMMEnd>,
 *   <FullGMMBegin>/<FullGMMEnd> are accepted.  Stored gconsts are kept
 *   (so a read-write round trip is byte-identical) unless they disagree with
 *   the recomputed value by more than 1e-3 (relative, min 1e-3 absolute),
 *   in which case they are recomputed with a warning.
 * gh_gmm_set_read also accepts: a Kaldi .mdl (TransitionModel, kept verbatim
 * as parsed structure and written back before the set), and a Kaldi global
 * <DiagGMM> or <FullGMM> (read as a set of one pdf; written back in the same
 * global form when the set was read from one and still has one pdf).
 * TransitionModel access: lib/hmm/transition.h.  See doc/format.md, "Models and
 * accumulators".
 */
#ifndef GH_GMM_H
#define GH_GMM_H
#include <stdint.h>
#include "io/kaldi-io.h"
#include "io/model-write.h"

typedef enum { GH_COV_DIAG = 0, GH_COV_FULL = 1 } gh_covtype;

typedef struct {
  gh_covtype type;
  int32_t num_gauss, dim;
  float *gconsts;        /* [G] */
  float *weights;        /* [G], sum to 1 */
  float *means_invvars;  /* [G x D]: mean_g * InvCov_g (Kaldi MEANS_INVVARS / MEANS_INVCOVARS) */
  float *inv_vars;       /* diag: [G x D] 1/var; full: [G x D(D+1)/2] packed InvCov_g */
} gh_gmm;

/* Kaldi TransitionModel, parsed so it can be written back in binary or
 * text (opaque here; lib/hmm/transition.c owns it). */
typedef struct gh_transition_model gh_transition_model;

typedef enum {
  GH_SET_AM = 0,      /* <DIMENSION> <NUMPDFS> + GMMs (our native form) */
  GH_SET_GLOBAL = 1,  /* a single bare <DiagGMM>/<FullGMM> (Kaldi global GMM) */
} gh_set_form;

typedef struct {
  int32_t dim, num_pdfs;
  gh_gmm *pdfs;                  /* [num_pdfs] */
  gh_set_form form;              /* how it was read; decides how it is written */
  gh_transition_model *trans;    /* non-NULL if read from a Kaldi .mdl */
} gh_gmm_set;

/* Allocate a GMM with G Gaussians of dimension D, all parameters zero
 * (g is overwritten, not freed).  Dies on negative sizes or out of memory. */
void gh_gmm_init(gh_gmm *g, gh_covtype type, int32_t num_gauss, int32_t dim);
/* Free the arrays and zero the struct (safe on a zeroed struct). */
void gh_gmm_free(gh_gmm *g);
/* Deep copy; dst must be zeroed or a valid GMM (it is freed first). */
void gh_gmm_copy(gh_gmm *dst, const gh_gmm *src);
/* Max over every float parameter (weights, gconsts, means_invvars, inv_vars)
 * of |a - r| / (1 + |r|); INFINITY when the shapes differ, NaN propagates.
 * For tests and benchmarks comparing two estimates of one model. */
double gh_gmm_set_max_diff(const gh_gmm_set *a, const gh_gmm_set *r);
/* Free every pdf and the TransitionModel; zero the struct. */
void gh_gmm_set_free(gh_gmm_set *s);
/* Deep copy of a set (including its TransitionModel); dst must be zeroed or
 * a valid set (it is freed first). */
void gh_gmm_set_copy(gh_gmm_set *dst, const gh_gmm_set *src);
/* dst := full-covariance GMM with the same Gaussians as diagonal src
 * (Kaldi FullGmm::CopyFromDiagGmm, used by gmm-global-to-fgmm): inverse
 * covariances diagonal, gconsts recomputed.  dst must not alias src. */
void gh_gmm_diag_to_full(gh_gmm *dst, const gh_gmm *src);
/* Number of floats in one Gaussian's inv_vars row: D (diag) or D(D+1)/2. */
int64_t gh_gmm_cov_size(const gh_gmm *g);

/* Natural parameters <-> moments, in double.
 * gh_gmm_get_moments: means [G x D]; covs: diag [G x D] variances, full
 *   [G x D(D+1)/2] packed covariances.  Inverts full matrices (Cholesky,
 *   LAPACK); dies if one is not positive definite.
 * gh_gmm_set_moments: sets weights/means/covariances and computes
 *   inv_vars, means_invvars and gconsts (ComputeGconsts, Kaldi diag-gmm.cc /
 *   full-gmm.cc).  Returns 0, or -1 (message in gh_last_error) if a
 *   covariance is not positive definite. */
void gh_gmm_get_moments(const gh_gmm *g, double *weights, double *means, double *covs);
int gh_gmm_set_moments(gh_gmm *g, const double *weights, const double *means, const double *covs);
/* Recompute gconsts (natural log) in double from weights/means_invvars/
 * inv_vars, stored as float (Kaldi DiagGmm/FullGmm::ComputeGconsts):
 *   diag: log w - 0.5 D log 2pi + sum_d (0.5 log iv_d - 0.5 mi_d^2 / iv_d)
 *   full: log w - 0.5 D log 2pi - 0.5 (log det Cov + mi' Cov mi), with
 *         InvCov = L L' (LAPACK dpotrf), log det Cov = -2 sum log L_ii.
 * Returns the number of Gaussians whose gconst is not finite (zero weight,
 * or a non-positive-definite covariance); those get -inf (as Kaldi turns
 * +inf into -inf), so they never win a log-sum. */
int gh_gmm_compute_gconsts(gh_gmm *g);

/* Reference log-likelihoods in double (used by tests and the CPU path's
 * checks): for one frame x[D], per_gauss[G] (if non-NULL) receives
 * log(w_g N(x; mu_g, Cov_g)) = gconst_g + x.mi_g - 0.5 x' InvCov_g x, and the
 * return value is log sum_g exp(per_gauss[g]) (natural log; -inf if every
 * Gaussian is -inf). Kaldi DiagGmm/FullGmm::LogLikelihood. */
double gh_gmm_loglike_ref(const gh_gmm *g, const float *x, double *per_gauss /* [G] or NULL */);

/* Read any supported model file (see top) into s (overwritten); runs
 * gh_gmm_set_check; warns about trailing data.  Dies with one line naming
 * the file, the byte offset and what was wrong (cannot open, unexpected end
 * of file, wrong token, bad shape or value).  rxfilename as in
 * gh_istream_open ("-" = stdin, "cmd |", gzip'd files). */
void gh_gmm_set_read(const char *rxfilename, gh_gmm_set *s);
/* Read from an open stream (after the binary marker); s is overwritten.
 * Kaldi AmDiagGmm::Read (+ TransitionModel::Read before it for a .mdl). */
void gh_gmm_set_read_stream(gh_istream *in, int binary, gh_gmm_set *s);
/* Reads every model of a table of GMM sets, as gmm-adapt-map writes one per
 * speaker (--spk2utt) or per utterance: rspecifier "ark[,opts]:rxfilename"
 * (Kaldi's read options s, cs, o, no, p, bg, t, b are accepted and mean
 * nothing here; "scp:" is not supported).  *keys gets [n] keys and *sets [n]
 * models in archive order (each passed through gh_gmm_set_check); the
 * caller frees them (free, gh_gmm_set_free).  Returns n (0 for an empty
 * archive).  Dies with one line naming the rspecifier, the key and what was
 * wrong: an unreadable file, a key without its space, a bad model, a key
 * that appears twice. */
int32_t gh_gmm_set_table_read(const char *rspecifier, char ***keys, gh_gmm_set **sets);
/* Write "\0B" (if binary) and the set, atomically (gh_ostream_open: temp
 * file + rename; "-" = stdout).  Kaldi AmDiagGmm::Write (after
 * TransitionModel::Write when s->trans), or DiagGmm/FullGmm::Write for a
 * global set of one pdf.  Dies on write errors. */
void gh_gmm_set_write(const char *wxfilename, int binary, const gh_gmm_set *s);
void gh_gmm_set_write_stream(gh_ostream *out, int binary, const gh_gmm_set *s);
/* Single GMM object <DiagGMM>/<FullGMM> (Kaldi DiagGmm::Read/Write,
 * FullGmm::Read/Write); g is overwritten.  Read dies via gh_istream_fail. */
void gh_gmm_read(gh_istream *in, int binary, gh_gmm *g);
void gh_gmm_write(gh_ostream *out, int binary, const gh_gmm *g);
/* Writers used for model and accumulator files: io/model-write.h. */
/* Sanity checks after reading: at least one pdf, every pdf of dimension
 * s->dim with >= 1 Gaussian, finite values, weights >= 0 summing to 1
 * within 0.01 (warns beyond 1e-4; for a Kaldi .mdl only a positive sum,
 * as gmm-boost-silence scales the weights of silence pdfs), positive (diagonal) inverse variances,
 * no NaN / +inf gconst.  Dies naming "name", the pdf and Gaussian index. */
void gh_gmm_set_check(const gh_gmm_set *s, const char *name);
/* Total number of Gaussians over all pdfs. */
int64_t gh_gmm_set_total_gauss(const gh_gmm_set *s);

/* ---------------- accumulators ----------------
 * On disk (Kaldi AccumDiagGmm::Write / AccumFullGmm::Write; both use the
 * <GMMACCS> token, the variance token tells them apart):
 *   <GMMACCS> <VECSIZE> D <NUMCOMPONENTS> G <FLAGS> uint16 (binary: size byte
 *   0xFE = -2, i.e. unsigned 2 bytes, then LE value; text: "7 ")
 *   <OCCUPANCY> DV <MEANACCS> DM (0x0 if no kGmmMeans)
 *   diag: <DIAGVARACCS> DM (0x0 if no kGmmVariances)
 *   full: [<FULLVARACCS> G x DP, centred]  (only if kGmmVariances)
 *   </GMMACCS>
 * Values are written as double (Kaldi converts to float before writing,
 * which loses the variances E[x^2] - mu^2 of features offset by 1e3
 * sigma); read as float (Kaldi's files) or double, as Kaldi's readers do.
 *
 * Statistics for the EM M-step, in double (Kaldi AccumDiagGmm /
 * AccumFullGmm with flags = kGmmAll):
 *   occupancy[g]  = sum_t gamma_tg
 *   mean_accs[g]  = sum_t gamma_tg x_t                       [G x D]
 *   var_accs[g]   = diag: sum_t gamma_tg x_t^2               [G x D]
 *                   full: sum_t gamma_tg x_t x_t' (packed)   [G x D(D+1)/2]
 * In memory the full statistics are NOT centred; Kaldi's file form is
 * centred (x x' - mean_acc mean_acc'/occ), converted on read/write. */
typedef struct {
  gh_covtype type;
  int32_t num_gauss, dim;
  uint32_t flags;     /* Kaldi GmmFlags (kGmmMeans=1, kGmmVariances=2, kGmmWeights=4) */
  double *occupancy;  /* [G] */
  double *mean_accs;  /* [G x D] */
  double *var_accs;   /* see above */
  /* Optional shrinkage statistics (lib/gmm/shrink.h; NULL when absent): moments
   * up to fourth order of each Gaussian's frames about a fixed centre. */
  double *shrink_centre; /* [G x D] centre c_g (the E-step model's mean) */
  double *shrink;        /* [G x gh_shrink_stats_size(D)], layout in shrink.h */
} gh_gmm_accs;

typedef struct {
  int32_t num_pdfs;
  gh_gmm_accs *pdfs;
  double total_frames;   /* sum of frame weights */
  double total_loglike;  /* sum of weight * log p(x|pdf), natural log */
  int global_form;       /* 1: a single bare <GMMACCS> on disk (Kaldi gmm-global-acc-stats /
                            fgmm-global-acc-stats); total_frames = occupancy sum, total_loglike 0 */
  /* Kaldi transition-id counts (gmm-acc-stats-ali writes them as a DV before
   * the GMM accs), indexed by transition-id, [0] unused; NULL / 0 if none. */
  double *trans_accs;
  int32_t num_trans_accs;
} gh_accs_set;

/* Zeroed accumulators shaped like the model (flags = 7, kGmmAll); with
 * trans_accs zeroed (num_transition_ids + 1) when the model has a
 * TransitionModel; global_form when the model is a bare global GMM. */
void gh_accs_init(gh_accs_set *a, const gh_gmm_set *model);
/* Free everything and zero the struct (safe on a zeroed struct). */
void gh_accs_free(gh_accs_set *a);
/* One pdf's accumulators: zeroed, shaped G x D of the given type (var_accs
 * G x D or G x D(D+1)/2), flags as in Kaldi GmmFlags; a is overwritten. */
void gh_gmm_accs_init(gh_gmm_accs *a, gh_covtype type, int32_t num_gauss, int32_t dim, uint32_t flags);
void gh_gmm_accs_free(gh_gmm_accs *a);
/* a += b (statistics, transition accs, totals; Kaldi AccumAmDiagGmm::Add);
 * dies if the number of pdfs, a pdf's type / Gaussians / dimension / flags,
 * or the number of transition accs differ, naming "what" (b's source, e.g.
 * its file name) and the pdf.  a keeps global_form only if both have it. */
void gh_accs_add(gh_accs_set *a, const gh_accs_set *b, const char *what);
/* File I/O.  Set layout = Kaldi gmm-acc-stats-ali output:
 *   [transition accs DV]  <NUMPDFS> int32 P, P x <GMMACCS>...</GMMACCS>,
 *   <total_like> double, <total_frames> double
 * (Kaldi AccumAmDiagGmm::Read/Write, mle-am-diag-gmm.cc; the two totals are
 * optional on read), extended to allow full-covariance per-pdf accs; or a
 * bare Kaldi global acc (first token <GMMACCS>).  Read dies naming the file
 * and what was wrong.  Write is atomic (gh_ostream_open: temp + rename). */
void gh_accs_read(const char *rxfilename, gh_accs_set *a);
void gh_accs_write(const char *wxfilename, int binary, const gh_accs_set *a);
/* Stream forms (after the binary marker; a is overwritten).  Single-GMM
 * forms: Kaldi AccumDiagGmm / AccumFullGmm ::Read / ::Write (the reader
 * un-centres full statistics, the writer re-centres them, in double). */
void gh_accs_read_stream(gh_istream *in, int binary, gh_accs_set *a);
void gh_accs_write_stream(gh_ostream *out, int binary, const gh_accs_set *a);
void gh_gmm_accs_read(gh_istream *in, int binary, gh_gmm_accs *a);
void gh_gmm_accs_write(gh_ostream *out, int binary, const gh_gmm_accs *a);
/* Sum of occupancies over all pdfs and Gaussians (frames, for weight-1
 * frames). */
double gh_accs_total_occupancy(const gh_accs_set *a);

#endif
