/* accs.c -- GMM accumulators (sufficient statistics) and their Kaldi file
 * forms: AccumDiagGmm (gmm/mle-diag-gmm.cc), AccumFullGmm
 * (gmm/mle-full-gmm.cc), AccumAmDiagGmm (gmm/mle-am-diag-gmm.cc) preceded by
 * transition accs as gmm-acc-stats-ali writes them.  See gmm.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gmm/gmm.h"
#include "gmm/shrink.h"
#include "hmm/transition.h"

static int64_t acc_var_size(gh_covtype type, int32_t dim) {
  return type == GH_COV_FULL ? gh_packed_size(dim) : dim;
}

void gh_gmm_accs_init(gh_gmm_accs *a, gh_covtype type, int32_t num_gauss, int32_t dim, uint32_t flags) {
  memset(a, 0, sizeof(*a));
  a->type = type;
  a->num_gauss = num_gauss;
  a->dim = dim;
  a->flags = flags;
  size_t G = (size_t)(num_gauss > 0 ? num_gauss : 1);
  a->occupancy = gh_calloc(G, sizeof(double));
  a->mean_accs = gh_calloc(G * (size_t)(dim > 0 ? dim : 1), sizeof(double));
  int64_t V = acc_var_size(type, dim);
  a->var_accs = gh_calloc(G * (size_t)(V > 0 ? V : 1), sizeof(double));
}

void gh_gmm_accs_free(gh_gmm_accs *a) {
  if (!a) return;
  free(a->occupancy);
  free(a->mean_accs);
  free(a->var_accs);
  free(a->shrink);
  free(a->shrink_centre);
  memset(a, 0, sizeof(*a));
}

void gh_accs_init(gh_accs_set *a, const gh_gmm_set *model) {
  memset(a, 0, sizeof(*a));
  a->num_pdfs = model->num_pdfs;
  a->pdfs = gh_calloc((size_t)(model->num_pdfs > 0 ? model->num_pdfs : 1), sizeof(gh_gmm_accs));
  for (int32_t p = 0; p < model->num_pdfs; ++p) {
    const gh_gmm *g = &model->pdfs[p];
    gh_gmm_accs_init(&a->pdfs[p], g->type, g->num_gauss, g->dim, 7u);
  }
  a->global_form = model->form == GH_SET_GLOBAL && model->num_pdfs == 1 && !model->trans;
  if (model->trans) {
    a->num_trans_accs = model->trans->num_tids + 1;
    a->trans_accs = gh_calloc((size_t)a->num_trans_accs, sizeof(double));
  }
}

void gh_accs_free(gh_accs_set *a) {
  if (!a) return;
  for (int32_t p = 0; p < a->num_pdfs; ++p) gh_gmm_accs_free(&a->pdfs[p]);
  free(a->pdfs);
  free(a->trans_accs);
  memset(a, 0, sizeof(*a));
}

double gh_accs_total_occupancy(const gh_accs_set *a) {
  double s = 0;
  for (int32_t p = 0; p < a->num_pdfs; ++p)
    for (int32_t k = 0; k < a->pdfs[p].num_gauss; ++k) s += a->pdfs[p].occupancy[k];
  return s;
}

void gh_accs_add(gh_accs_set *a, const gh_accs_set *b, const char *what) {
  const char *w = what ? what : "accumulators";
  if (a->num_pdfs != b->num_pdfs)
    gh_die("%s: cannot add accumulators with %d pdfs to accumulators with %d pdfs", w, b->num_pdfs, a->num_pdfs);
  for (int32_t p = 0; p < a->num_pdfs; ++p) {
    gh_gmm_accs *x = &a->pdfs[p];
    const gh_gmm_accs *y = &b->pdfs[p];
    if (x->type != y->type || x->num_gauss != y->num_gauss || x->dim != y->dim)
      gh_die("%s: pdf %d has %d %s Gaussians of dimension %d, expected %d %s Gaussians of dimension %d", w, p,
             y->num_gauss, y->type == GH_COV_FULL ? "full" : "diagonal", y->dim, x->num_gauss,
             x->type == GH_COV_FULL ? "full" : "diagonal", x->dim);
    if (x->flags != y->flags)
      gh_die("%s: pdf %d has accumulator flags %u, expected %u", w, p, (unsigned)y->flags, (unsigned)x->flags);
    int64_t G = x->num_gauss, D = x->dim, V = acc_var_size(x->type, x->dim);
    for (int64_t i = 0; i < G; ++i) x->occupancy[i] += y->occupancy[i];
    for (int64_t i = 0; i < G * D; ++i) x->mean_accs[i] += y->mean_accs[i];
    for (int64_t i = 0; i < G * V; ++i) x->var_accs[i] += y->var_accs[i];
    if (!x->shrink != !y->shrink)
      gh_die("%s: pdf %d %s shrinkage statistics but the accumulators it is added to %s (accumulate all jobs with "
             "the same --shrinkage-stats)", w, p, y->shrink ? "has" : "has no", x->shrink ? "have" : "have none");
    if (x->shrink) {
      /* Moments about the E-step model's means: only jobs of the same model add up. */
      if (memcmp(x->shrink_centre, y->shrink_centre, sizeof(double) * (size_t)(G * D)))
        gh_die("%s: pdf %d: shrinkage statistics were accumulated about different centres (a different "
               "model); only accumulators of the same model can be summed", w, p);
      int64_t K = gh_shrink_stats_size(x->dim);
      for (int64_t i = 0; i < G * K; ++i) x->shrink[i] += y->shrink[i];
    }
  }
  a->total_frames += b->total_frames;
  a->total_loglike += b->total_loglike;
  if (b->num_trans_accs) {
    if (!a->num_trans_accs) {
      a->num_trans_accs = b->num_trans_accs;
      a->trans_accs = gh_calloc((size_t)b->num_trans_accs, sizeof(double));
    } else if (a->num_trans_accs != b->num_trans_accs) {
      gh_die("%s: has %d transition accumulators, expected %d", w, b->num_trans_accs, a->num_trans_accs);
    }
    for (int32_t i = 0; i < b->num_trans_accs; ++i) a->trans_accs[i] += b->trans_accs[i];
  }
  a->global_form = a->global_form && b->global_form;
}

/* ---------------- single-GMM accs I/O ---------------- */

/* Kaldi GmmFlagsType is uint16: binary WriteBasicType writes the size byte
 * -2 (0xFE: unsigned, 2 bytes) then the little-endian value. */
static uint32_t read_flags(gh_istream *in, int binary) {
  if (!binary) {
    int32_t v = gh_read_int32(in, 0);
    if (v < 0 || v > 0xFFFF) gh_istream_fail(in, "<FLAGS> value %d out of range", v);
    return (uint32_t)v;
  }
  int c = gh_istream_getc(in);
  if (c == -1) gh_istream_fail(in, "unexpected end of file reading <FLAGS>");
  signed char sz = (signed char)c;
  if (sz == -2 || sz == 2) {
    unsigned char b[2];
    gh_istream_read(in, b, 2);
    return (uint32_t)b[0] | ((uint32_t)b[1] << 8);
  }
  if (sz == -4 || sz == 4) {
    unsigned char b[4];
    gh_istream_read(in, b, 4);
    return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
  }
  gh_istream_fail(in, "<FLAGS>: unexpected size byte %d (expected -2 for uint16)", (int)sz);
}

static void write_flags(gh_ostream *out, int binary, uint32_t flags) {
  if (!binary) {
    gh_write_int32(out, 0, (int32_t)flags);
    return;
  }
  FILE *fp = gh_ostream_fp(out);
  unsigned char b[3] = {0xFE, (unsigned char)(flags & 0xFF), (unsigned char)((flags >> 8) & 0xFF)};
  fwrite(b, 1, 3, fp);
}

void gh_gmm_accs_read(gh_istream *in, int binary, gh_gmm_accs *a) {
  gh_expect_token(in, binary, "<GMMACCS>");
  gh_expect_token(in, binary, "<VECSIZE>");
  int32_t D = gh_read_int32(in, binary);
  gh_expect_token(in, binary, "<NUMCOMPONENTS>");
  int32_t G = gh_read_int32(in, binary);
  gh_expect_token(in, binary, "<FLAGS>");
  uint32_t flags = read_flags(in, binary);
  if (D <= 0 || D > 1000000) gh_istream_fail(in, "accumulators: bad <VECSIZE> %d", D);
  if (G <= 0 || G > 100000000) gh_istream_fail(in, "accumulators: bad <NUMCOMPONENTS> %d", G);
  if (flags & ~7u) gh_istream_fail(in, "accumulators: bad <FLAGS> %u", (unsigned)flags);
  gh_istream_need(in, (uint64_t)G * (uint64_t)((flags & 3u) ? D : 1), binary ? 4 : 2, "accumulator statistics");
  /* Without mean or variance statistics nothing in the file backs <VECSIZE>,
   * yet the accumulators are G x D in memory: bound that product (2^24
   * values; weight-only accumulators of real models are far below). */
  if (!(flags & 3u) && (uint64_t)G * (uint64_t)D > (1u << 24))
    gh_istream_fail(in, "accumulators: <NUMCOMPONENTS> %d x <VECSIZE> %d without mean or variance statistics "
                        "is larger than 2^24 values", G, D);
  /* Kaldi AugmentFlags: variances imply means imply weights. */
  if (flags & 2u) flags |= 1u;
  if (flags & 1u) flags |= 4u;
  gh_dvector occ = {0, NULL};
  gh_dmatrix means = {0, 0, NULL}, dvars = {0, 0, NULL};
  double *fullvars = NULL;
  int have_occ = 0, have_means = 0, have_diag = 0;
  for (;;) {
    const char *tok = gh_read_token(in, binary);
    if (!strcmp(tok, "</GMMACCS>")) break;
    if (!strcmp(tok, "<OCCUPANCY>")) {
      gh_read_dvector(in, binary, &occ);
      if (occ.dim != G) gh_istream_fail(in, "accumulators: <OCCUPANCY> has %d values, expected %d", occ.dim, G);
      have_occ = 1;
    } else if (!strcmp(tok, "<MEANACCS>")) {
      gh_read_dmatrix(in, binary, &means);
      if (means.rows * (int64_t)means.cols != 0 && (means.rows != G || means.cols != D))
        gh_istream_fail(in, "accumulators: <MEANACCS> is %d x %d, expected %d x %d", means.rows, means.cols, G, D);
      have_means = means.rows != 0;
    } else if (!strcmp(tok, "<DIAGVARACCS>")) {
      gh_read_dmatrix(in, binary, &dvars);
      if (dvars.rows * (int64_t)dvars.cols != 0 && (dvars.rows != G || dvars.cols != D))
        gh_istream_fail(in, "accumulators: <DIAGVARACCS> is %d x %d, expected %d x %d", dvars.rows, dvars.cols, G,
                        D);
      have_diag = dvars.rows != 0;
    } else if (!strcmp(tok, "<FULLVARACCS>")) {
      int64_t P = gh_packed_size(D);
      gh_istream_need(in, (uint64_t)G, (uint64_t)P * (binary ? 4 : 2), "<FULLVARACCS>");
      fullvars = gh_malloc((size_t)(G * P) * sizeof(double));
      for (int32_t k = 0; k < G; ++k) {
        int32_t n = 0;
        double *pk = NULL;
        gh_read_dpacked(in, binary, &n, &pk);
        if (n != D) gh_istream_fail(in, "accumulators: <FULLVARACCS> matrix %d is %d x %d, expected %d", k, n, n, D);
        memcpy(fullvars + k * P, pk, (size_t)P * sizeof(double));
        free(pk);
      }
    } else {
      gh_istream_fail(in, "accumulators: unexpected token '%s' (expected <OCCUPANCY>, <MEANACCS>, <DIAGVARACCS>, "
                          "<FULLVARACCS> or </GMMACCS>)", gh_printable_token(tok));
    }
  }
  if (!have_occ) gh_istream_fail(in, "accumulators: no <OCCUPANCY>");
  if ((flags & 1u) && !have_means) gh_istream_fail(in, "accumulators: <FLAGS> %u but no <MEANACCS>", (unsigned)flags);
  if ((flags & 2u) && !have_diag && !fullvars)
    gh_istream_fail(in, "accumulators: <FLAGS> %u but no variance accumulators", (unsigned)flags);
  gh_covtype type = fullvars ? GH_COV_FULL : GH_COV_DIAG;
  gh_gmm_accs_init(a, type, G, D, flags);
  memcpy(a->occupancy, occ.data, (size_t)G * sizeof(double));
  if (have_means) memcpy(a->mean_accs, means.data, (size_t)G * D * sizeof(double));
  if (have_diag) memcpy(a->var_accs, dvars.data, (size_t)G * D * sizeof(double));
  if (fullvars) {
    /* Kaldi stores centred statistics sum x x' - m m'/occ; un-centre. */
    int64_t P = gh_packed_size(D);
    for (int32_t k = 0; k < G; ++k) {
      double o = a->occupancy[k];
      const double *m = a->mean_accs + (size_t)k * D;
      double *v = a->var_accs + k * P;
      for (int32_t i = 0; i < D; ++i)
        for (int32_t j = 0; j <= i; ++j) {
          double c = fullvars[k * P + gh_packed_index(i, j)];
          if (o != 0.0) c += m[i] * m[j] / o;
          v[gh_packed_index(i, j)] = c;
        }
    }
  }
  gh_dvector_free(&occ);
  gh_dmatrix_free(&means);
  gh_dmatrix_free(&dvars);
  free(fullvars);
}

/* A double matrix (binary "DM", text Kaldi's layout with round-trip
 * digits) and a double packed matrix ("DP"). */
static void write_dmatrix(gh_ostream *out, int binary, int32_t rows, int32_t cols, const double *m) {
  if (binary) {
    gh_dmatrix t = {rows, cols, (double *)m};
    gh_write_dmatrix(out, 1, &t);
    return;
  }
  FILE *fp = gh_ostream_fp(out);
  if (rows == 0 || cols == 0) {
    fputs(" [ ]\n", fp);
    return;
  }
  fputs(" [", fp);
  for (int64_t r = 0; r < rows; ++r) {
    fputs("\n  ", fp);
    for (int64_t c = 0; c < cols; ++c) gh_model_write_double(out, 0, m[r * cols + c]);
  }
  fputs("]\n", fp);
}

static void write_dpacked(gh_ostream *out, int binary, int32_t n, const double *p) {
  if (binary) {
    gh_write_dpacked(out, 1, n, p);
    return;
  }
  FILE *fp = gh_ostream_fp(out);
  if (n == 0) {
    fputs("[ ]\n", fp);
    return;
  }
  fputs("[\n", fp);
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t j = 0; j <= i; ++j) gh_model_write_double(out, 0, p[gh_packed_index(i, j)]);
    fputs(i + 1 < n ? "\n" : "]\n", fp);
  }
}

void gh_gmm_accs_write(gh_ostream *out, int binary, const gh_gmm_accs *a) {
  int32_t G = a->num_gauss, D = a->dim;
  gh_write_token(out, binary, "<GMMACCS>");
  gh_write_token(out, binary, "<VECSIZE>");
  gh_write_int32(out, binary, D);
  gh_write_token(out, binary, "<NUMCOMPONENTS>");
  gh_write_int32(out, binary, G);
  gh_write_token(out, binary, "<FLAGS>");
  write_flags(out, binary, a->flags);
  /* In double ("DV"/"DM"/"DP"), unlike Kaldi, which rounds to float before
   * writing: the variance is E[x^2] - mu^2 of these sums, and float sums of
   * x^2 lost 20-49% of the variances at feature offsets of 1e3 standard
   * deviations (7x at 1e4) through gmm-global-acc-stats | gmm-global-est.
   * Kaldi's readers (Vector<double>/Matrix<double>/SpMatrix<double>::Read)
   * take either type, as ours do. */
  const int have_means = (a->flags & 1u) != 0, have_vars = (a->flags & 2u) != 0;
  gh_write_token(out, binary, "<OCCUPANCY>");
  gh_model_write_dvector(out, binary, G, a->occupancy);
  gh_write_token(out, binary, "<MEANACCS>");
  write_dmatrix(out, binary, have_means ? G : 0, have_means ? D : 0, a->mean_accs);
  if (a->type == GH_COV_DIAG) {
    gh_write_token(out, binary, "<DIAGVARACCS>");
    write_dmatrix(out, binary, have_vars ? G : 0, have_vars ? D : 0, a->var_accs);
  } else if (have_vars) {
    /* Kaldi's form: centred, sum x x' - m m' / occ (in double) */
    gh_write_token(out, binary, "<FULLVARACCS>");
    int64_t P = gh_packed_size(D);
    double *buf = gh_malloc(sizeof(double) * (size_t)P);
    for (int32_t k = 0; k < G; ++k) {
      double o = a->occupancy[k];
      const double *mm = a->mean_accs + (size_t)k * D;
      const double *v = a->var_accs + k * P;
      for (int32_t i = 0; i < D; ++i)
        for (int32_t j = 0; j <= i; ++j) {
          double c = v[gh_packed_index(i, j)];
          if (o != 0.0) c -= mm[i] * mm[j] / o;
          buf[gh_packed_index(i, j)] = c;
        }
      write_dpacked(out, binary, D, buf);
    }
    free(buf);
  }
  gh_write_token(out, binary, "</GMMACCS>");
}

/* ---------------- shrinkage statistics block ----------------
 * After the standard accumulators (so Kaldi's readers, which stop after
 * <total_frames> or </GMMACCS>, never see it); doc/format.md:
 *   <SHRINKSTATS> <NUMPDFS> int32 P, P x (<NUMCOMPONENTS> int32 G <VECSIZE> int32 D
 *   <CENTRES> DV(G*D) <MOMENTS> DV(G*K)), </SHRINKSTATS>
 * in double (K = gh_shrink_stats_size(D), layout in lib/gmm/shrink.h). */
static void shrink_block_read(gh_istream *in, int binary, gh_accs_set *a) {
  gh_expect_token(in, binary, "<SHRINKSTATS>");
  gh_expect_token(in, binary, "<NUMPDFS>");
  int32_t P = gh_read_int32(in, binary);
  if (P != a->num_pdfs)
    gh_istream_fail(in, "shrinkage statistics: <NUMPDFS> %d, but the accumulators have %d pdfs", P, a->num_pdfs);
  for (int32_t p = 0; p < P; ++p) {
    gh_gmm_accs *ap = &a->pdfs[p];
    gh_expect_token(in, binary, "<NUMCOMPONENTS>");
    int32_t G = gh_read_int32(in, binary);
    gh_expect_token(in, binary, "<VECSIZE>");
    int32_t D = gh_read_int32(in, binary);
    if (G != ap->num_gauss || D != ap->dim)
      gh_istream_fail(in, "shrinkage statistics of pdf %d: %d Gaussians of dimension %d, the accumulators have %d "
                          "of dimension %d", p, G, D, ap->num_gauss, ap->dim);
    if (ap->type != GH_COV_FULL)
      gh_istream_fail(in, "shrinkage statistics of pdf %d: its accumulators are diagonal", p);
    int64_t K = gh_shrink_stats_size(D);
    gh_dvector c = {0, NULL}, m = {0, NULL};
    gh_expect_token(in, binary, "<CENTRES>");
    gh_read_dvector(in, binary, &c);
    if ((int64_t)c.dim != (int64_t)G * D)
      gh_istream_fail(in, "shrinkage statistics of pdf %d: <CENTRES> has %d values, expected %lld", p, c.dim,
                      (long long)G * D);
    gh_expect_token(in, binary, "<MOMENTS>");
    gh_read_dvector(in, binary, &m);
    if ((int64_t)m.dim != (int64_t)G * K)
      gh_istream_fail(in, "shrinkage statistics of pdf %d: <MOMENTS> has %d values, expected %lld", p, m.dim,
                      (long long)G * K);
    for (int64_t i = 0; i < (int64_t)m.dim; ++i)
      if (!isfinite(m.data[i]) || (i < c.dim && !isfinite(c.data[i])))
        gh_istream_fail(in, "shrinkage statistics of pdf %d: value %lld is not finite", p, (long long)i);
    free(ap->shrink_centre);
    free(ap->shrink);
    ap->shrink_centre = c.data;
    ap->shrink = m.data;
  }
  gh_expect_token(in, binary, "</SHRINKSTATS>");
}

static void shrink_block_write(gh_ostream *out, int binary, const gh_accs_set *a) {
  if (!gh_accs_have_shrink(a)) return;
  gh_write_token(out, binary, "<SHRINKSTATS>");
  gh_write_token(out, binary, "<NUMPDFS>");
  gh_write_int32(out, binary, a->num_pdfs);
  for (int32_t p = 0; p < a->num_pdfs; ++p) {
    const gh_gmm_accs *ap = &a->pdfs[p];
    gh_write_token(out, binary, "<NUMCOMPONENTS>");
    gh_write_int32(out, binary, ap->num_gauss);
    gh_write_token(out, binary, "<VECSIZE>");
    gh_write_int32(out, binary, ap->dim);
    gh_write_token(out, binary, "<CENTRES>");
    gh_model_write_dvector(out, binary, ap->num_gauss * ap->dim, ap->shrink_centre);
    gh_write_token(out, binary, "<MOMENTS>");
    gh_model_write_dvector(out, binary, (int32_t)(ap->num_gauss * gh_shrink_stats_size(ap->dim)), ap->shrink);
  }
  gh_write_token(out, binary, "</SHRINKSTATS>");
}

/* Read the optional block if it comes next. */
static void shrink_block_maybe_read(gh_istream *in, int binary, gh_accs_set *a) {
  if (!binary) gh_skip_ws(in);
  if (gh_istream_peek(in) == -1) return;
  if (!strcmp(gh_peek_token(in, binary), "<SHRINKSTATS>")) shrink_block_read(in, binary, a);
}

/* ---------------- set I/O ---------------- */

void gh_accs_read_stream(gh_istream *in, int binary, gh_accs_set *a) {
  memset(a, 0, sizeof(*a));
  const char *tok = gh_peek_token(in, binary);
  if (!strcmp(tok, "<GMMACCS>")) {
    a->global_form = 1;
    a->num_pdfs = 1;
    a->pdfs = gh_calloc(1, sizeof(gh_gmm_accs));
    gh_gmm_accs_read(in, binary, &a->pdfs[0]);
    a->total_frames = gh_accs_total_occupancy(a);
    shrink_block_maybe_read(in, binary, a);
    return;
  }
  if (!*tok) gh_istream_fail(in, "unexpected end of file (expected GMM accumulators)");
  if (strcmp(tok, "<NUMPDFS>")) {
    /* Transition accs (Vector<double>) as gmm-acc-stats-ali writes them. */
    if (binary ? (strcmp(tok, "DV") && strcmp(tok, "FV")) : strcmp(tok, "["))
      gh_istream_fail_type(in, "GMM accumulators", "<GMMACCS>, <NUMPDFS> or a transition-accs vector", tok, NULL);
    gh_dvector t = {0, NULL};
    gh_read_dvector(in, binary, &t);
    a->num_trans_accs = t.dim;
    a->trans_accs = t.data;
  }
  gh_expect_token(in, binary, "<NUMPDFS>");
  int32_t P = gh_read_int32(in, binary);
  if (P <= 0 || P > 100000000) gh_istream_fail(in, "accumulators: bad <NUMPDFS> %d", P);
  gh_istream_need(in, (uint64_t)P, 10, "<NUMPDFS> accumulators"); /* each at least "<GMMACCS>" */
  a->pdfs = gh_calloc((size_t)P, sizeof(gh_gmm_accs));
  for (int32_t p = 0; p < P; ++p) {
    gh_gmm_accs_read(in, binary, &a->pdfs[p]);
    a->num_pdfs = p + 1;
  }
  /* Optional totals (older Kaldi accs end here). */
  if (!binary) gh_skip_ws(in);
  if (gh_istream_peek(in) == -1) {
    a->total_frames = gh_accs_total_occupancy(a);
    a->total_loglike = 0;
    return;
  }
  gh_expect_token(in, binary, "<total_like>");
  a->total_loglike = gh_read_double(in, binary);
  gh_expect_token(in, binary, "<total_frames>");
  a->total_frames = gh_read_double(in, binary);
  shrink_block_maybe_read(in, binary, a);
}

void gh_accs_read(const char *rxfilename, gh_accs_set *a) {
  gh_istream *in = gh_istream_open(rxfilename);
  if (!in) gh_die("reading accumulators: %s", gh_last_error());
  int binary = gh_read_binary_marker(in);
  gh_accs_read_stream(in, binary, a);
  if (!binary) gh_skip_ws(in);
  if (gh_istream_peek(in) != -1)
    gh_warn("%s: unexpected data after the accumulators at offset %lld (ignored)", gh_istream_name(in),
            (long long)gh_istream_tell(in));
  gh_istream_close(in);
  for (int32_t p = 0; p < a->num_pdfs; ++p)
    for (int32_t k = 0; k < a->pdfs[p].num_gauss; ++k)
      if (!isfinite(a->pdfs[p].occupancy[k]))
        gh_die("%s: pdf %d, Gaussian %d: occupancy is not finite", rxfilename, p, k);
}

void gh_accs_write_stream(gh_ostream *out, int binary, const gh_accs_set *a) {
  if (a->global_form && a->num_pdfs == 1 && !a->num_trans_accs) {
    gh_gmm_accs_write(out, binary, &a->pdfs[0]);
    shrink_block_write(out, binary, a);
    return;
  }
  if (a->num_trans_accs) {
    gh_model_write_dvector(out, binary, a->num_trans_accs, a->trans_accs);
  }
  gh_write_token(out, binary, "<NUMPDFS>");
  gh_write_int32(out, binary, a->num_pdfs);
  for (int32_t p = 0; p < a->num_pdfs; ++p) gh_gmm_accs_write(out, binary, &a->pdfs[p]);
  gh_write_token(out, binary, "<total_like>");
  gh_model_write_double(out, binary, a->total_loglike);
  gh_write_token(out, binary, "<total_frames>");
  gh_model_write_double(out, binary, a->total_frames);
  shrink_block_write(out, binary, a);
}

void gh_accs_write(const char *wxfilename, int binary, const gh_accs_set *a) {
  gh_ostream *out = gh_ostream_open(wxfilename);
  gh_write_binary_marker(out, binary);
  gh_accs_write_stream(out, binary, a);
  gh_ostream_close(out);
}
