/* fmllr.c -- fMLLR statistics, row-by-row update, transform application;
 * see fmllr.h. */
#include "adapt/fmllr.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "io/table.h"

void gh_fmllr_stats_init(gh_fmllr_stats *s, int32_t dim) {
  if (dim < 1) gh_die("fMLLR statistics: bad dimension %d", dim);
  memset(s, 0, sizeof *s);
  s->dim = dim;
  size_t D = (size_t)dim;
  s->K = gh_calloc(D * (D + 1), sizeof(double));
  s->G = gh_calloc(D * (D + 1) * (D + 1), sizeof(double));
}

void gh_fmllr_stats_zero(gh_fmllr_stats *s) {
  size_t D = (size_t)s->dim;
  s->beta = 0;
  memset(s->K, 0, sizeof(double) * D * (D + 1));
  memset(s->G, 0, sizeof(double) * D * (D + 1) * (D + 1));
}

void gh_fmllr_stats_free(gh_fmllr_stats *s) {
  free(s->K);
  free(s->G);
  memset(s, 0, sizeof *s);
}

void gh_fmllr_full_view(gh_gmm_set *full, const gh_gmm_set *diag, const char *name) {
  memset(full, 0, sizeof *full);
  full->dim = diag->dim;
  full->num_pdfs = diag->num_pdfs;
  full->form = GH_SET_AM;
  full->pdfs = gh_calloc((size_t)(diag->num_pdfs > 0 ? diag->num_pdfs : 1), sizeof(gh_gmm));
  for (int32_t p = 0; p < diag->num_pdfs; ++p) {
    if (diag->pdfs[p].type != GH_COV_DIAG)
      gh_die("%s: pdf %d has full covariances; fMLLR here needs a diagonal-covariance model", name, p);
    gh_gmm_diag_to_full(&full->pdfs[p], &diag->pdfs[p]);
  }
}

void gh_fmllr_stats_add_accs(gh_fmllr_stats *s, const gh_gmm_set *diag, const gh_accs_set *accs) {
  const int32_t D = s->dim, D1 = D + 1;
  if (diag->dim != D) gh_die_dim(NULL, NULL, "fMLLR statistics", D, diag->dim, "the model");
  if (accs->num_pdfs != diag->num_pdfs)
    gh_die("fMLLR: accumulators have %d pdfs, the model %d", accs->num_pdfs, diag->num_pdfs);
  double *E = gh_malloc(sizeof(double) * (size_t)D1 * D1);
  for (int32_t p = 0; p < diag->num_pdfs; ++p) {
    const gh_gmm *g = &diag->pdfs[p];
    const gh_gmm_accs *a = &accs->pdfs[p];
    if (a->type != GH_COV_FULL || a->num_gauss != g->num_gauss || a->dim != D)
      gh_die("fMLLR: accumulators of pdf %d do not match the model (need full-covariance statistics)", p);
    for (int32_t k = 0; k < g->num_gauss; ++k) {
      double occ = a->occupancy[k];
      if (occ == 0.0) continue;
      const double *m = a->mean_accs + (int64_t)k * D;
      const double *S = a->var_accs + (int64_t)k * gh_packed_size(D);
      /* E = sum_t gamma xi xi' with xi = [x; 1] */
      for (int32_t r = 0; r < D; ++r) {
        for (int32_t c = 0; c <= r; ++c) E[r * D1 + c] = E[c * D1 + r] = S[gh_packed_index(r, c)];
        E[r * D1 + D] = E[D * D1 + r] = m[r];
      }
      E[D * D1 + D] = occ;
      const float *mi = g->means_invvars + (int64_t)k * D, *iv = g->inv_vars + (int64_t)k * D;
      s->beta += occ;
      for (int32_t i = 0; i < D; ++i) {
        double *K = s->K + (int64_t)i * D1;
        for (int32_t j = 0; j < D; ++j) K[j] += mi[i] * m[j];
        K[D] += mi[i] * occ;
        double *Gi = s->G + (int64_t)i * D1 * D1, w = iv[i];
        for (int64_t e = 0; e < (int64_t)D1 * D1; ++e) Gi[e] += w * E[e];
      }
    }
  }
  free(E);
}

double gh_fmllr_accumulate(gh_backend *b, const gh_gmm_set *diag, const gh_gmm_set *full_view,
                           const gh_data *d, gh_fmllr_stats *s) {
  gh_accs_set accs;
  gh_data_estep(b, full_view, d, &accs, NULL);
  double ll = accs.total_loglike;
  gh_fmllr_stats_add_accs(s, diag, &accs);
  gh_accs_free(&accs);
  return ll;
}

/* log|det M| of a D x D row-major matrix (copied), by LU; -inf if singular. */
static double logdet_abs(const double *M, int32_t D) {
  double *A = gh_malloc(sizeof(double) * (size_t)D * D);
  lapack_int *ipiv = gh_malloc(sizeof(lapack_int) * (size_t)D);
  memcpy(A, M, sizeof(double) * (size_t)D * D);
  double ld = 0;
  if (LAPACKE_dgetrf(LAPACK_ROW_MAJOR, D, D, A, D, ipiv) != 0) ld = -INFINITY;
  else
    for (int32_t i = 0; i < D; ++i) ld += log(fabs(A[(int64_t)i * D + i]));
  free(A);
  free(ipiv);
  return ld;
}

double gh_fmllr_auxf(const double *W, const gh_fmllr_stats *s) {
  const int32_t D = s->dim, D1 = D + 1;
  double *A = gh_malloc(sizeof(double) * (size_t)D * D);
  for (int32_t i = 0; i < D; ++i) memcpy(A + (int64_t)i * D, W + (int64_t)i * D1, sizeof(double) * D);
  double obj = s->beta * logdet_abs(A, D);
  free(A);
  for (int32_t i = 0; i < D; ++i) {
    const double *w = W + (int64_t)i * D1, *K = s->K + (int64_t)i * D1, *Gi = s->G + (int64_t)i * D1 * D1;
    for (int32_t j = 0; j < D1; ++j) {
      obj += w[j] * K[j];
      double gw = 0;
      for (int32_t k = 0; k < D1; ++k) gw += Gi[(int64_t)j * D1 + k] * w[k];
      obj -= 0.5 * w[j] * gw;
    }
  }
  return obj;
}

double gh_fmllr_update(const gh_fmllr_stats *s, int32_t num_iters, double min_count, double *W,
                       const char *what) {
  const int32_t D = s->dim, D1 = D + 1;
  if (s->beta <= min_count) return 0.0;
  /* inverses of G_i (Cholesky) */
  double *invG = gh_malloc(sizeof(double) * (size_t)D * D1 * D1);
  for (int32_t i = 0; i < D; ++i) {
    double *P = invG + (int64_t)i * D1 * D1;
    memcpy(P, s->G + (int64_t)i * D1 * D1, sizeof(double) * (size_t)D1 * D1);
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', D1, P, D1) != 0 || LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'L', D1, P, D1) != 0)
      gh_die("%s: fMLLR statistics G_%d are not positive definite (%.1f frames for %d parameters per row; "
             "too little data?)", what, i, s->beta, D1);
    for (int32_t r = 0; r < D1; ++r)
      for (int32_t c = r + 1; c < D1; ++c) P[(int64_t)r * D1 + c] = P[(int64_t)c * D1 + r];
  }
  double *Wn = gh_malloc(sizeof(double) * (size_t)D * D1);
  memcpy(Wn, W, sizeof(double) * (size_t)D * D1);
  double old_obj = gh_fmllr_auxf(W, s);
  if (!isfinite(old_obj)) gh_die("%s: the starting fMLLR transform is singular", what);
  double *C = gh_malloc(sizeof(double) * (size_t)D * D);
  lapack_int *ipiv = gh_malloc(sizeof(lapack_int) * (size_t)D);
  double *c = gh_malloc(sizeof(double) * D1), *cg = gh_malloc(sizeof(double) * D1);
  for (int32_t it = 0; it < num_iters; ++it) {
    for (int32_t i = 0; i < D; ++i) {
      /* C = (A')^-1: row i is the cofactor row of A divided by det A */
      for (int32_t r = 0; r < D; ++r)
        for (int32_t q = 0; q < D; ++q) C[(int64_t)r * D + q] = Wn[(int64_t)q * D1 + r];
      if (LAPACKE_dgetrf(LAPACK_ROW_MAJOR, D, D, C, D, ipiv) != 0 ||
          LAPACKE_dgetri(LAPACK_ROW_MAJOR, D, C, D, ipiv) != 0)
        gh_die("%s: fMLLR transform became singular in the row update", what);
      memcpy(c, C + (int64_t)i * D, sizeof(double) * D);
      c[D] = 0;
      const double *P = invG + (int64_t)i * D1 * D1, *k = s->K + (int64_t)i * D1;
      for (int32_t r = 0; r < D1; ++r) {
        double acc = 0;
        for (int32_t q = 0; q < D1; ++q) acc += P[(int64_t)r * D1 + q] * c[q];
        cg[r] = acc;
      }
      double e1 = 0, e2 = 0;
      for (int32_t r = 0; r < D1; ++r) { e1 += cg[r] * c[r]; e2 += cg[r] * k[r]; }
      double disc = sqrt(e2 * e2 + 4 * e1 * s->beta);
      double a1 = (-e2 + disc) / (2 * e1), a2 = (-e2 - disc) / (2 * e1);
      double q1 = s->beta * log(fabs(a1 * e1 + e2)) - 0.5 * a1 * a1 * e1;
      double q2 = s->beta * log(fabs(a2 * e1 + e2)) - 0.5 * a2 * a2 * e1;
      double alpha = q1 > q2 ? a1 : a2;
      for (int32_t r = 0; r < D1; ++r) c[r] = alpha * c[r] + k[r];
      double *w = Wn + (int64_t)i * D1;
      for (int32_t r = 0; r < D1; ++r) {
        double acc = 0;
        for (int32_t q = 0; q < D1; ++q) acc += P[(int64_t)r * D1 + q] * c[q];
        w[r] = acc;
      }
    }
  }
  double new_obj = gh_fmllr_auxf(Wn, s), gain = new_obj - old_obj;
  if (gain < 0 && fabs(gain) > 1e-6 * fabs(old_obj)) {
    gh_warn("%s: not applying the fMLLR change because the auxiliary function did not increase (%g)", what, gain);
    gain = 0;
  } else {
    memcpy(W, Wn, sizeof(double) * (size_t)D * D1);
  }
  free(invG); free(Wn); free(C); free(ipiv); free(c); free(cg);
  return gain;
}

int gh_fmllr_apply(const gh_matrix *W, const gh_matrix *in, gh_matrix *out) {
  const int32_t Din = in->cols, R = W->rows;
  int affine;
  if (W->cols == Din + 1) affine = 1;
  else if (W->cols == Din) affine = 0;
  else {
    gh_set_error("transform has %d columns but the features have dimension %d (need %d for [A b] or %d for A)",
                 W->cols, Din, Din + 1, Din);
    return -1;
  }
  if (R < 1) { gh_set_error("transform has no rows"); return -1; }
  gh_matrix_resize(out, in->rows, R);
  for (int32_t t = 0; t < in->rows; ++t) {
    const float *x = gh_row(in, t);
    float *y = gh_row(out, t);
    for (int32_t i = 0; i < R; ++i) {
      const float *w = gh_row(W, i);
      double acc = affine ? (double)w[Din] : 0.0;
      for (int32_t j = 0; j < Din; ++j) acc += (double)w[j] * x[j];
      y[i] = (float)acc;
    }
  }
  return 0;
}

double gh_fmllr_logdet(const gh_matrix *W) {
  int32_t D = W->rows;
  if (W->cols < D) return -INFINITY;
  double *A = gh_malloc(sizeof(double) * (size_t)D * D);
  for (int32_t i = 0; i < D; ++i)
    for (int32_t j = 0; j < D; ++j) A[(int64_t)i * D + j] = gh_row(W, i)[j];
  double ld = logdet_abs(A, D);
  free(A);
  return ld;
}

/* ---- inputs of the adaptation tools ---- */

void gh_adapt_input_open(gh_adapt_input *in, const gh_gmm_set *model, const char *model_name,
                         const char *feats_spec, const char *labels_spec, const char *label_type) {
  memset(in, 0, sizeof *in);
  gh_data_opts *o = &in->opts;
  o->feats_rspec = feats_spec;
  o->labels_rspec = labels_spec ? labels_spec : "";
  o->num_pdfs = model->num_pdfs;
  o->dim = model->dim;
  o->dim_source = model_name;
  o->label_type = GH_LABELS_NONE;
  if (labels_spec) {
    if (gh_label_type_parse(label_type, &o->label_type) != 0 || o->label_type == GH_LABELS_NONE)
      gh_die("--label-type must be ali, utt or post (got '%s')", label_type);
    in->labels = gh_rand_reader_open(labels_spec, o->label_type == GH_LABELS_ALI ? GH_OBJ_INT32_VECTOR
                                                  : o->label_type == GH_LABELS_UTT ? GH_OBJ_INT32 : GH_OBJ_POSTERIOR);
  } else if (model->num_pdfs != 1) {
    gh_die("%s has %d pdfs: a labels argument is needed", model_name, model->num_pdfs);
  }
}

void gh_adapt_input_close(gh_adapt_input *in) {
  if (in->labels) gh_rand_reader_close(in->labels);
  in->labels = NULL;
}

void gh_adapt_data_init(const gh_adapt_input *in, gh_data *d) { gh_data_init(d, in->opts.dim); }

int gh_adapt_input_add(gh_adapt_input *in, gh_data *d, const char *utt, const gh_matrix *m) {
  const int32_t skipped = d->num_skipped;
  const gh_matrix_view v = {m->rows, m->cols, m->data};
  gh_data_add_utt(d, &in->opts, in->labels, utt, &v);
  if (d->num_skipped != skipped) { /* no labels (an empty matrix is warned of and counted as done) */
    in->num_skipped++;
    return 0;
  }
  in->num_done++;
  return 1;
}

int64_t gh_adapt_for_each_speaker(gh_adapt_input *in, const char *spk2utt_rspec, const char *feats_spec,
                                  gh_adapt_speaker_fn fn, void *ctx) {
  int64_t num = 0;
  gh_seq_reader *spk2utt = gh_seq_reader_open(spk2utt_rspec, GH_OBJ_TOKEN_VECTOR);
  gh_rand_reader *feats = gh_rand_reader_open(feats_spec, GH_OBJ_MATRIX);
  for (; !gh_seq_reader_done(spk2utt); gh_seq_reader_next(spk2utt)) {
    const char *spk = gh_seq_reader_key(spk2utt);
    char *list = gh_strdup(gh_seq_reader_value(spk2utt)), *save = NULL;
    gh_data d;
    gh_adapt_data_init(in, &d);
    int n = 0;
    for (char *utt = strtok_r(list, " \t", &save); utt; utt = strtok_r(NULL, " \t", &save), ++n) {
      const gh_matrix *m = gh_rand_reader_value(feats, utt);
      if (!m) {
        char note[1200];
        snprintf(note, sizeof note, "an utterance of speaker '%s' in %s", spk, spk2utt_rspec);
        gh_die_no_key(feats_spec, utt, "features", note);
      }
      gh_adapt_input_add(in, &d, utt, m);
    }
    free(list);
    if (n == 0) gh_die("%s: speaker '%s' has no utterances", spk2utt_rspec, spk);
    fn(ctx, &d, spk);
    gh_data_free(&d);
    num++;
  }
  gh_seq_reader_close(spk2utt);
  gh_rand_reader_close(feats);
  return num;
}
