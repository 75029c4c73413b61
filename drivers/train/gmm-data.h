/* gmm-data.h -- gathering training data for the EM tools: all features of
 * an archive in ONE host frame block, and the weighted (frame, pdf) pairs
 * that the backends' E-step consumes (kernels/backend.h gh_frame_pdf),
 * built once and reused every iteration.
 *
 * Label sources (the --label-type option of the tools):
 *   none  every frame belongs to pdf 0 with weight 1 (a global GMM);
 *   ali   per-frame pdf ids, GH_OBJ_INT32_VECTOR table (e.g. the output of
 *         Kaldi's ali-to-pdf; NOT transition ids), weight 1;
 *   utt   one pdf id per utterance, GH_OBJ_INT32 table, weight 1;
 *   post  posteriors, GH_OBJ_POSTERIOR table: (pdf, weight) per frame, the
 *         weights used as frame weights (zero weights dropped).
 * Checks (each dies with one line naming the rspecifier and the key):
 * features finite (gh_check_finite_matrix), feature dimension the same for
 * every utterance and equal to the expected dim, label length equal to the
 * number of frames, pdf ids in [0, num_pdfs).  An utterance whose key is
 * missing from the label table is skipped with a warning and counted (as
 * Kaldi's gmm-acc-stats-ali does; its features are not checked); loading
 * dies if no frame is left.
 * Reading: an "scp:" list of binary float matrices in regular files (what
 * utils/split_data.sh gives each job) is read by index (table.h
 * gh_scp_index: headers first, one allocation, the payloads pread in
 * parallel); anything else one utterance at a time (gh_seq_reader views).
 * Both give the same frames and pairs, and the same message for each
 * fault (the indexed reader checks every label before any feature, so of
 * two faults in different utterances another may be reported first).
 */
#ifndef GH_GMM_DATA_H
#define GH_GMM_DATA_H
#include <stdint.h>
#include "gmm/gmm.h"
#include "backend.h"
#include "io/table.h"

typedef enum { GH_LABELS_NONE = 0, GH_LABELS_ALI, GH_LABELS_UTT, GH_LABELS_POST } gh_label_type;

/* "none" | "ali" | "utt" | "post" -> *t; returns 0, or -1 if unknown. */
int gh_label_type_parse(const char *s, gh_label_type *t);

typedef struct {
  const char *feats_rspec;   /* features (any matrix rspecifier) */
  const char *labels_rspec;  /* label table, NULL/"" for GH_LABELS_NONE */
  gh_label_type label_type;
  int32_t num_pdfs;          /* pdf ids must be < this; <= 0: no upper bound */
  int32_t dim;               /* expected feature dimension; <= 0: taken from the first utterance */
  const char *dim_source;    /* where dim comes from, for messages (e.g. the model file) */
} gh_data_opts;

typedef struct {
  int32_t dim;
  int32_t num_frames;     /* rows of feats (frames of utterances that were used) */
  float *feats;           /* [num_frames x dim] row-major */
  int64_t num_pairs;
  gh_frame_pdf *pairs;    /* [num_pairs], ordered by frame */
  int32_t num_utts;       /* utterances used */
  int32_t num_skipped;    /* utterances skipped: key not in the label table */
  int32_t max_pdf;        /* largest pdf id seen, -1 if none */
  double total_weight;    /* sum of pair weights (= frames for ali/utt/none) */
} gh_data;

/* Read everything (see top).  Dies on the errors listed there. */
void gh_data_load(gh_data *d, const gh_data_opts *o);
/* An empty block of dimension dim (<= 0: taken from the first utterance),
 * max_pdf -1, for gh_data_add_utt; free with gh_data_free. */
void gh_data_init(gh_data *d, int32_t dim);
/* Appends utterance `key` (features m, any gh_matrix_view) with its labels
 * from table lab (NULL for o->label_type none) to d, with gh_data_load's
 * checks and messages (o names the tables and bounds; see top): returns 1
 * if it was added; 0, with a warning, for an empty matrix or a key missing
 * from lab (counted in d->num_skipped).  Frames and pairs grow by doubling.
 * gh_data_load's sequential reader and the adaptation tools' per-speaker
 * blocks (fmllr.h gh_adapt_input_add) go through it. */
int gh_data_add_utt(gh_data *d, const gh_data_opts *o, gh_rand_reader *lab, const char *key,
                    const gh_matrix_view *m);
/* gh_data_add_utt without the features: the checks, labels and frame-pdf
 * pairs of utterance `key` (rows x cols floats) are added and its first
 * frame's row in d->feats returned; the caller allocates d->feats (exactly
 * d->num_frames x d->dim floats, once every utterance is added) and fills
 * those rows itself (the parallel readers of an indexed scp: gmm-data.c
 * load_indexed, shard.c gh_shard_data_load).  -1, with gh_data_add_utt's
 * warning, for an utterance it skips. */
int64_t gh_data_add_utt_labels(gh_data *d, const gh_data_opts *o, gh_rand_reader *lab, const char *key, int32_t rows,
                               int32_t cols);
/* The E-step tools' form (gmm-est-gpu, gmm-acc-stats-gpu): the data for
 * training `model` (read from model_name): pdf ids < model->num_pdfs,
 * dimension model->dim; labels_rspec NULL means every frame trains pdf 0,
 * which needs a one-pdf model; label_type is "ali", "utt" or "post".
 * Dies on a bad label type or a missing labels argument. */
void gh_data_load_for_model(gh_data *d, const gh_gmm_set *model, const char *model_name,
                            const char *feats_rspec, const char *labels_rspec, const char *label_type);
void gh_data_free(gh_data *d);

/* The pairs of d by pdf: a stable counting sort of the pair indices,
 * O(pairs + num_pdfs) (one scan of every pair per pdf took ~2 minutes for
 * 5,000 pdfs over 8 M frames; bench/RESULTS.md D38).  Pdf
 * p's pairs are idx[off[p] .. off[p + 1]), in pair order; pairs whose pdf
 * is outside [0, num_pdfs) are left out.  *off [num_pdfs + 1] and *idx
 * (malloc'd; caller frees). */
void gh_data_pdf_index(const gh_data *d, int32_t num_pdfs, int64_t **off, int64_t **idx);

/* The frames of pairs idx[0 .. n) (gh_data_pdf_index: one pdf's): *X [n x
 * dim] copies of their rows and *w [n] their weights (malloc'd; caller
 * frees). */
void gh_data_pairs_frames(const gh_data *d, const int64_t *idx, int64_t n, float **X, float **w);

/* One E-step of the whole data set on backend b (gmm-acc-stats-gpu,
 * gmm-init, the adaptation tools; EM over iterations is gh_dist_em,
 * drivers/train/dist-em.h): uploads d and the model, zeroes and fills the
 * device accumulators with one accumulate() call over the data, fetches
 * them into *accs (initialised here with gh_accs_init; caller frees with
 * gh_accs_free) and frees the device copies.  Sets accs->total_frames =
 * d->total_weight and accs->total_loglike = sum of weight * log p(x|pdf)
 * (natural log, total).  Dies if the model's dimension differs from the
 * data's, or if the total log-likelihood is not finite (a frame outside
 * the numerical contract).  *seconds (if non-NULL) gets the wall time
 * (model upload, accumulate, fetch; not the data upload).  Returns the
 * average log-likelihood per (weighted) frame. */
double gh_data_estep(gh_backend *b, const gh_gmm_set *model, const gh_data *d,
                     gh_accs_set *accs, double *seconds);
/* d's frames and pairs on backend b (backend.h data_upload): d must stay
 * unchanged until the handle is freed with b->ops->gmm->data_free(b, dd). */
gh_dev_data *gh_data_upload(gh_backend *b, const gh_data *d);

#endif
