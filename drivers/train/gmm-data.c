/* gmm-data.c -- training data in one frame block; see gmm-data.h. */
#include "train/gmm-data.h"
#include "gmm/numerics.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "io/table.h"

int gh_label_type_parse(const char *s, gh_label_type *t) {
  if (!s) return -1;
  if (!strcmp(s, "none")) *t = GH_LABELS_NONE;
  else if (!strcmp(s, "ali")) *t = GH_LABELS_ALI;
  else if (!strcmp(s, "utt")) *t = GH_LABELS_UTT;
  else if (!strcmp(s, "post")) *t = GH_LABELS_POST;
  else return -1;
  return 0;
}

/* Capacity of an array holding n elements that grows by doubling from min:
 * derived from n, so an append needs no stored capacity. */
static int64_t cap_for(int64_t n, int64_t min) {
  if (n <= 0) return 0;
  int64_t c = min;
  while (c < n) c *= 2;
  return c;
}

static void add_pair(gh_data *d, int32_t frame, int32_t pdf, float weight) {
  if (cap_for(d->num_pairs + 1, 4096) != cap_for(d->num_pairs, 4096))
    d->pairs = gh_realloc(d->pairs, sizeof(gh_frame_pdf) * (size_t)cap_for(d->num_pairs + 1, 4096));
  d->pairs[d->num_pairs].frame = frame;
  d->pairs[d->num_pairs].pdf = pdf;
  d->pairs[d->num_pairs].weight = weight;
  d->num_pairs++;
  d->total_weight += weight;
  if (pdf > d->max_pdf) d->max_pdf = pdf;
}

static void check_pdf(const gh_data_opts *o, const char *key, int32_t pdf, int32_t t) {
  if (pdf < 0 || (o->num_pdfs > 0 && pdf >= o->num_pdfs)) {
    if (o->num_pdfs > 0)
      gh_die("%s, key '%s': pdf id %d at frame %d is out of range [0, %d)%s%s", o->labels_rspec, key, pdf, t,
             o->num_pdfs, o->dim_source ? " of model " : "", o->dim_source ? o->dim_source : "");
    gh_die("%s, key '%s': negative pdf id %d at frame %d", o->labels_rspec, key, pdf, t);
  }
}

/* The checks and labels of one utterance of rows x cols features before its
 * frames are stored (both readers below): warns and returns 0 for an empty
 * matrix or (counting it) a key without labels; dies on a dimension or
 * label-length mismatch; else sets *lv to the labels (NULL for none) and
 * returns 1. */
static int take_utt(gh_data *d, const gh_data_opts *o, gh_rand_reader *lab, const char *key, int32_t rows,
                    int32_t cols, const void **lv) {
  *lv = NULL;
  if (rows == 0) { gh_warn("%s, key '%s': empty feature matrix, skipping", o->feats_rspec, key); return 0; }
  if (d->dim == 0) d->dim = cols;
  if (cols != d->dim) {
    if (o->dim > 0) {
      char model[600];
      snprintf(model, sizeof model, "the model%s%s", o->dim_source ? " " : "", o->dim_source ? o->dim_source : "");
      gh_die_dim(o->feats_rspec, key, "features", cols, o->dim, model);
    }
    gh_die_dim(o->feats_rspec, key, "features", cols, d->dim, "the earlier utterances");
  }
  if (!lab) return 1;
  *lv = gh_rand_reader_value(lab, key);
  if (!*lv) {
    gh_warn_no_key(o->labels_rspec, key, "labels", "utterance skipped");
    d->num_skipped++;
    return 0;
  }
  if (o->label_type == GH_LABELS_ALI && ((const gh_ivector *)*lv)->dim != rows)
    gh_die("%s, key '%s': alignment has %d frames but the features (%s) have %d%s", o->labels_rspec, key,
           ((const gh_ivector *)*lv)->dim, o->feats_rspec, rows,
           ((const gh_ivector *)*lv)->dim == 1 ? " (one label per utterance? use --label-type=utt)" : "");
  if (o->label_type == GH_LABELS_POST && ((const gh_posterior *)*lv)->num_frames != rows)
    gh_die("%s, key '%s': posteriors have %d frames but the features (%s) have %d", o->labels_rspec, key,
           ((const gh_posterior *)*lv)->num_frames, o->feats_rspec, rows);
  if ((int64_t)d->num_frames + rows > INT32_MAX)
    gh_die("%s, key '%s': more than %d frames in total; split the data", o->feats_rspec, key, INT32_MAX);
  return 1;
}

/* The frame-pdf pairs of a used utterance's frames base .. base+rows-1, and
 * the counts; lv from take_utt. */
static void add_utt(gh_data *d, const gh_data_opts *o, const char *key, const void *lv, int32_t base,
                    int32_t rows) {
  for (int32_t t = 0; t < rows; ++t) {
    int32_t f = base + t;
    switch (o->label_type) {
      case GH_LABELS_NONE: add_pair(d, f, 0, 1.0f); break;
      case GH_LABELS_ALI: {
        int32_t pdf = ((const gh_ivector *)lv)->data[t];
        check_pdf(o, key, pdf, t);
        add_pair(d, f, pdf, 1.0f);
        break;
      }
      case GH_LABELS_UTT: {
        int32_t pdf = *(const int32_t *)lv;
        check_pdf(o, key, pdf, t);
        add_pair(d, f, pdf, 1.0f);
        break;
      }
      case GH_LABELS_POST: {
        const gh_posterior *p = lv;
        for (int32_t k = p->offsets[t]; k < p->offsets[t + 1]; ++k) {
          if (p->weight[k] == 0.0f) continue;
          if (!gh_isfinite_f(p->weight[k]))
            gh_die("%s, key '%s': non-finite posterior at frame %d", o->labels_rspec, key, t);
          check_pdf(o, key, p->pdf[k], t);
          add_pair(d, f, p->pdf[k], p->weight[k]);
        }
        break;
      }
    }
  }
  d->num_frames += rows;
  d->num_utts++;
}

/* An scp table of plain binary matrices in regular files (gh_scp_index):
 * the headers first (one small read each), the labels and pairs, one
 * allocation of exactly the frames used, then the payloads read in
 * parallel straight into place, each checked finite in the same pass
 * (what one thread reading a job's shard took, ~0.33 us a frame on the
 * device machine, was most of an accumulation job: bench/RESULTS.md
 * D17).  Features of utterances without labels are not read. */
static void load_indexed(gh_data *d, const gh_data_opts *o, gh_rand_reader *lab, const gh_scp_index *x) {
  int64_t *base = gh_malloc(sizeof(int64_t) * (size_t)(x->n ? x->n : 1));
  for (int64_t i = 0; i < x->n; ++i)
    base[i] = gh_data_add_utt_labels(d, o, lab, x->e[i].key, x->e[i].rows, x->e[i].cols);
  if (d->num_frames > 0) d->feats = gh_malloc(sizeof(float) * (size_t)d->num_frames * d->dim);
  int *rc = gh_calloc((size_t)(x->n ? x->n : 1), sizeof(int)), *err = gh_calloc((size_t)(x->n ? x->n : 1), sizeof(int));
  const int nth = omp_get_max_threads() < 16 ? omp_get_max_threads() : 16;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nth) if (d->num_frames >= 4096)
  for (int64_t i = 0; i < x->n; ++i) {
    if (base[i] < 0) continue;
    const gh_scp_entry *e = &x->e[i];
    size_t bad; /* the bad value is named below, in table order */
    rc[i] = gh_pread_floats_finite(e->fd, e->offset, d->feats + base[i] * d->dim, (size_t)e->rows * e->cols, &bad);
    if (rc[i] < 0) err[i] = errno;
  }
  if (gh_verbose >= 1)
    gh_log("%s: %lld matrices read by index, %d threads", o->feats_rspec, (long long)x->n,
           d->num_frames >= 4096 ? nth : 1);
  for (int64_t i = 0; i < x->n; ++i) { /* the first failure in table order */
    if (rc[i] == 0) continue;
    const gh_scp_entry *e = &x->e[i];
    if (rc[i] < 0)
      gh_die("%s, key '%s': cannot read its %d x %d floats: %s", o->feats_rspec, e->key, e->rows, e->cols,
             err[i] ? strerror(err[i]) : "the file ended (changed since it was indexed?)");
    gh_matrix m = {e->rows, e->cols, d->feats + base[i] * d->dim}; /* names the bad value */
    gh_check_finite_matrix(&m, o->feats_rspec, e->key);
  }
  free(base);
  free(rc);
  free(err);
}

void gh_data_init(gh_data *d, int32_t dim) {
  memset(d, 0, sizeof *d);
  d->max_pdf = -1;
  d->dim = dim > 0 ? dim : 0;
}

int64_t gh_data_add_utt_labels(gh_data *d, const gh_data_opts *o, gh_rand_reader *lab, const char *key, int32_t rows,
                               int32_t cols) {
  const void *lv;
  if (!take_utt(d, o, lab, key, rows, cols, &lv)) return -1;
  const int64_t base = d->num_frames;
  add_utt(d, o, key, lv, (int32_t)base, rows);
  return base;
}

int gh_data_add_utt(gh_data *d, const gh_data_opts *o, gh_rand_reader *lab, const char *key,
                    const gh_matrix_view *m) {
  const void *lv;
  if (!take_utt(d, o, lab, key, m->rows, m->cols, &lv)) return 0;
  const int64_t base = d->num_frames;
  if (cap_for(base + m->rows, 65536) != cap_for(base, 65536))
    d->feats = gh_realloc(d->feats, sizeof(float) * (size_t)cap_for(base + m->rows, 65536) * d->dim);
  gh_matrix_view_copy_finite(m, d->feats + base * d->dim, o->feats_rspec, key);
  add_utt(d, o, key, lv, (int32_t)base, m->rows);
  return 1;
}

void gh_data_load(gh_data *d, const gh_data_opts *o) {
  gh_data_init(d, o->dim);
  gh_label_type lt = o->label_type;
  if (lt != GH_LABELS_NONE && (!o->labels_rspec || !*o->labels_rspec))
    gh_die("label type needs a label rspecifier");
  gh_objtype ltype = lt == GH_LABELS_ALI ? GH_OBJ_INT32_VECTOR
                   : lt == GH_LABELS_UTT ? GH_OBJ_INT32 : GH_OBJ_POSTERIOR;
  gh_rand_reader *lab = lt != GH_LABELS_NONE ? gh_rand_reader_open(o->labels_rspec, ltype) : NULL;
  gh_scp_index *x = gh_scp_index_open(o->feats_rspec);
  if (x) {
    load_indexed(d, o, lab, x);
    gh_scp_index_free(x);
  } else {
    /* anything else, one entry at a time: views (a binary archive's matrices
     * are read in place and copied once, straight into d->feats) */
    gh_seq_reader *fr = gh_seq_reader_open(o->feats_rspec, GH_OBJ_MATRIX_VIEW);
    for (; !gh_seq_reader_done(fr); gh_seq_reader_next(fr))
      gh_data_add_utt(d, o, lab, gh_seq_reader_key(fr), gh_seq_reader_value(fr));
    gh_seq_reader_close(fr);
  }
  if (lab) gh_rand_reader_close(lab);
  if (d->num_frames == 0 || d->num_pairs == 0) {
    if (d->num_skipped)
      gh_die("no frames to train on: all %d utterances of %s lack labels in %s", d->num_skipped, o->feats_rspec,
             o->labels_rspec);
    gh_die("no frames to train on in %s", o->feats_rspec);
  }
  if (d->num_skipped)
    gh_warn("%d utterances had no labels in %s and were skipped (%d used)", d->num_skipped, o->labels_rspec,
            d->num_utts);
}

void gh_data_free(gh_data *d) {
  free(d->feats);
  free(d->pairs);
  memset(d, 0, sizeof *d);
}

void gh_data_pdf_index(const gh_data *d, int32_t num_pdfs, int64_t **off, int64_t **idx) {
  int64_t *o = gh_calloc((size_t)num_pdfs + 2, sizeof(int64_t));
  for (int64_t i = 0; i < d->num_pairs; ++i) {
    const int32_t p = d->pairs[i].pdf;
    if (p >= 0 && p < num_pdfs) o[p + 2]++;
  }
  for (int32_t p = 0; p < num_pdfs; ++p) o[p + 2] += o[p + 1]; /* o[p + 1] = start of pdf p */
  int64_t *x = gh_malloc(sizeof(int64_t) * (size_t)(o[num_pdfs + 1] ? o[num_pdfs + 1] : 1));
  for (int64_t i = 0; i < d->num_pairs; ++i) {
    const int32_t p = d->pairs[i].pdf;
    if (p >= 0 && p < num_pdfs) x[o[p + 1]++] = i;
  }
  /* now o[p + 1] = end of pdf p = start of pdf p + 1, o[0] = 0 */
  *off = o;
  *idx = x;
}

void gh_data_pairs_frames(const gh_data *d, const int64_t *idx, int64_t n, float **X, float **w) {
  *X = gh_malloc(sizeof(float) * (size_t)(n ? n : 1) * d->dim);
  *w = gh_malloc(sizeof(float) * (size_t)(n ? n : 1));
  for (int64_t k = 0; k < n; ++k) {
    const gh_frame_pdf *q = &d->pairs[idx[k]];
    memcpy(*X + k * d->dim, d->feats + (int64_t)q->frame * d->dim, sizeof(float) * d->dim);
    (*w)[k] = q->weight;
  }
}

gh_dev_data *gh_data_upload(gh_backend *b, const gh_data *d) {
  return b->ops->gmm->data_upload(b, d->feats, d->num_frames, d->dim, d->pairs, d->num_pairs);
}

double gh_data_estep(gh_backend *b, const gh_gmm_set *model, const gh_data *d,
                     gh_accs_set *accs, double *seconds) {
  if (model->dim != d->dim)
    gh_die("model dimension %d does not match feature dimension %d", model->dim, d->dim);
  gh_dev_data *dd = gh_data_upload(b, d);
  const double t0 = gh_seconds();
  gh_dev_model *dm = b->ops->gmm->model_upload(b, model);
  b->ops->gmm->acc_zero(b, dm);
  const double t1 = gh_seconds();
  const double ll = b->ops->gmm->accumulate(b, dm, dd);
  const double t2 = gh_seconds();
  /* numerical contract (doc/reliability.md): a frame whose likelihood is
   * NaN, or -inf under every Gaussian of its pdf, gives no statistics; the
   * pdf would look as if it had no data */
  if (d->total_weight > 0 && !isfinite(ll))
    gh_die("E-step: total log-likelihood %g: some frame is %s under its pdf (outside the numerical contract, "
           "doc/reliability.md; gmm-score-gpu names the frame)", ll, isnan(ll) ? "NaN" : "-inf under every Gaussian");
  gh_accs_init(accs, model);
  b->ops->gmm->acc_fetch(b, dm, accs);
  accs->total_frames = d->total_weight;
  accs->total_loglike = ll;
  const double t3 = gh_seconds();
  if (seconds) *seconds = t3 - t0;
  gh_vlog(2, "E-step: model upload %.2f ms, accumulate %.2f ms, fetch %.2f ms", 1e3 * (t1 - t0), 1e3 * (t2 - t1),
          1e3 * (t3 - t2));
  b->ops->gmm->model_free(b, dm);
  b->ops->gmm->data_free(b, dd);
  return d->total_weight > 0 ? ll / d->total_weight : 0.0;
}

void gh_data_load_for_model(gh_data *d, const gh_gmm_set *model, const char *model_name,
                            const char *feats_rspec, const char *labels_rspec, const char *label_type) {
  gh_data_opts o = {feats_rspec, labels_rspec, GH_LABELS_NONE, model->num_pdfs, model->dim, model_name};
  if (labels_rspec) {
    if (gh_label_type_parse(label_type, &o.label_type) != 0 || o.label_type == GH_LABELS_NONE)
      gh_die("--label-type must be ali, utt or post (got '%s')", label_type);
  } else if (model->num_pdfs != 1) {
    gh_die("%s has %d pdfs: a labels argument is needed", model_name, model->num_pdfs);
  }
  gh_data_load(d, &o);
}
