/* test_gmm.c -- GMM sets, Kaldi model files and accumulators against files
 * written by real Kaldi (see <shared>/data/kaldi-fixtures/README.md and
 * <shared>/data/kaldi-yesno-mono-model/README.md):
 *  - 0.mdl (TransitionModel + AmDiagGmm), ami-diag16.gmm, ami-full16.fgmm:
 *    shapes, byte-identical binary writes, text <-> binary round trips,
 *    Kaldi's text files read equal to the binary ones (7 digits);
 *  - stored GCONSTS vs gh_gmm_compute_gconsts (1e-4 relative);
 *  - gh_gmm_loglike_ref on feats.ark vs Kaldi's *.frame-likes.txt (1e-3);
 *  - Kaldi's accs vs a float64 E-step done here (1e-3 relative), acc
 *    round trips, gh_accs_add;
 *  - moments <-> natural parameters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gh-test.h"
#include "gmm/gmm.h"
#include "io/table.h"
#include "hmm/transition.h"

static char tmpdir[256];

static const char *sh(const char *rel) {
  static char buf[8][1024];
  static int i = 0;
  i = (i + 1) % 8;
  snprintf(buf[i], sizeof buf[i], "%s/data/%s", gh_test_shared(), rel);
  return buf[i];
}

static const char *tmp(const char *name) {
  static char buf[8][512];
  static int i = 0;
  i = (i + 1) % 8;
  snprintf(buf[i], sizeof buf[i], "%s/%s", tmpdir, name);
  return buf[i];
}

static unsigned char *slurp(const char *path, long *len) {
  FILE *f = fopen(path, "rb");
  if (!f) { *len = -1; return NULL; }
  fseek(f, 0, SEEK_END);
  *len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)*len + 1);
  if (fread(b, 1, (size_t)*len, f) != (size_t)*len) *len = -1;
  fclose(f);
  return b;
}

static int same_bytes(const char *a, const char *b) {
  long la, lb;
  unsigned char *x = slurp(a, &la), *y = slurp(b, &lb);
  int ok = la >= 0 && la == lb && memcmp(x, y, (size_t)la) == 0;
  if (!ok) printf("#   %s (%ld bytes) != %s (%ld bytes)\n", a, la, b, lb);
  free(x);
  free(y);
  return ok;
}

/* 1 if file a contains the bytes of s (binary tokens: "<MEANACCS> DM"). */
static int file_has(const char *a, const char *s) {
  long n;
  unsigned char *x = slurp(a, &n);
  const size_t m = strlen(s);
  int found = 0;
  for (long i = 0; !found && i + (long)m <= n; ++i) found = !memcmp(x + i, s, m);
  free(x);
  return found;
}

/* Relative difference of two floats, with a floor for values near zero. */
static double reldiff(double a, double b, double floor) {
  if (a == b) return 0;
  return fabs(a - b) / fmax(fmax(fabs(a), fabs(b)), floor);
}

/* Largest relative difference between all parameters of two sets. */
static double set_maxdiff(const gh_gmm_set *a, const gh_gmm_set *b, int with_gconsts) {
  if (a->num_pdfs != b->num_pdfs || a->dim != b->dim) return INFINITY;
  double m = 0;
  for (int32_t p = 0; p < a->num_pdfs; ++p) {
    const gh_gmm *x = &a->pdfs[p], *y = &b->pdfs[p];
    if (x->type != y->type || x->num_gauss != y->num_gauss) return INFINITY;
    int64_t G = x->num_gauss, D = x->dim, C = gh_gmm_cov_size(x);
    for (int64_t i = 0; i < G; ++i) {
      m = fmax(m, reldiff(x->weights[i], y->weights[i], 1e-30));
      if (with_gconsts) m = fmax(m, reldiff(x->gconsts[i], y->gconsts[i], 1e-30));
    }
    for (int64_t i = 0; i < G * D; ++i) m = fmax(m, reldiff(x->means_invvars[i], y->means_invvars[i], 1e-30));
    for (int64_t i = 0; i < G * C; ++i) m = fmax(m, reldiff(x->inv_vars[i], y->inv_vars[i], 1e-30));
  }
  return m;
}

static void test_mdl(void) {
  gh_gmm_set s;
  gh_gmm_set_read(sh("kaldi-yesno-mono-model/0.mdl"), &s);
  GH_TEST_OK(s.num_pdfs == 22 && s.dim == 39, "0.mdl: 22 pdfs, dim 39 (got %d, %d)", s.num_pdfs, s.dim);
  GH_TEST_OK(s.trans != NULL && s.form == GH_SET_AM, "0.mdl: has a TransitionModel");
  GH_TEST_OK(gh_gmm_set_total_gauss(&s) == 22, "0.mdl: 22 Gaussians");
  const gh_transition_model *tm = s.trans;
  GH_TEST_OK(tm->num_phones == 26 && tm->num_tuples == 98 && tm->num_tids == 276 && tm->num_log_probs == 277 &&
                 tm->num_entries == 2 && tm->num_pdfs == 22,
             "0.mdl: 26 phones, 98 triples, 276 transition-ids, 2 topology entries");
  GH_TEST_OK(gh_transition_is_hmm(tm), "0.mdl: plain HMM topology (Triples)");
  /* Phone 1 (sil, 5 emitting states, state 0 has 4 transitions): tids 1..4
   * belong to (phone 1, state 0, pdf 0); tid 1 is its self-loop. */
  GH_TEST_OK(gh_transition_tid2pdf(tm, 1) == 0 && gh_transition_tid2phone(tm, 1) == 1 &&
                 gh_transition_is_self_loop(tm, 1) && !gh_transition_is_self_loop(tm, 2) &&
                 gh_transition_tid2hmm_state(tm, 5) == 1,
             "0.mdl: transition-id queries");
  GH_TEST_NEAR(gh_transition_log_prob(tm, 1), log(0.25), 1e-6, "0.mdl: log prob of tid 1 = log 0.25");
  int pdf_ok = 1;
  for (int32_t t = 1; t <= tm->num_tids; ++t) {
    int32_t pdf = gh_transition_tid2pdf(tm, t);
    if (pdf < 0 || pdf >= 22) pdf_ok = 0;
  }
  GH_TEST_OK(pdf_ok, "0.mdl: every transition-id maps to a pdf in [0, 22)");

  gh_gmm_set_write(tmp("0.mdl"), 1, &s);
  GH_TEST_OK(same_bytes(tmp("0.mdl"), sh("kaldi-yesno-mono-model/0.mdl")), "0.mdl: binary write is byte-identical");
  gh_gmm_set_write(tmp("0.mdl.txt"), 0, &s);
  gh_gmm_set t;
  gh_gmm_set_read(tmp("0.mdl.txt"), &t);
  GH_TEST_OK(t.trans && t.num_pdfs == 22 && set_maxdiff(&s, &t, 1) == 0, "0.mdl: text read equals binary read");
  gh_gmm_set_write(tmp("0.mdl.bin"), 1, &t);
  GH_TEST_OK(same_bytes(tmp("0.mdl.bin"), sh("kaldi-yesno-mono-model/0.mdl")),
             "0.mdl: binary -> text -> binary is byte-identical");
  /* Copy (deep) and write again. */
  gh_gmm_set c;
  memset(&c, 0, sizeof c);
  gh_gmm_set_copy(&c, &s);
  gh_gmm_set_write(tmp("0.copy.mdl"), 1, &c);
  GH_TEST_OK(same_bytes(tmp("0.copy.mdl"), sh("kaldi-yesno-mono-model/0.mdl")), "0.mdl: gh_gmm_set_copy writes the same");

  /* Stored gconsts vs recomputed. */
  double worst = 0;
  for (int32_t p = 0; p < s.num_pdfs; ++p) {
    gh_gmm g;
    memset(&g, 0, sizeof g);
    gh_gmm_copy(&g, &s.pdfs[p]);
    gh_gmm_compute_gconsts(&g);
    for (int32_t k = 0; k < g.num_gauss; ++k) worst = fmax(worst, reldiff(g.gconsts[k], s.pdfs[p].gconsts[k], 1));
    gh_gmm_free(&g);
  }
  GH_TEST_OK(worst < 1e-4, "0.mdl: stored GCONSTS agree with gh_gmm_compute_gconsts (max rel diff %.3g)", worst);
  gh_gmm_set_free(&c);
  gh_gmm_set_free(&t);
  gh_gmm_set_free(&s);
}

static void test_global(const char *bin, const char *txt, gh_covtype type) {
  gh_gmm_set s, t;
  gh_gmm_set_read(sh(bin), &s);
  GH_TEST_OK(s.form == GH_SET_GLOBAL && s.num_pdfs == 1 && s.dim == 13 && s.pdfs[0].num_gauss == 16 &&
                 s.pdfs[0].type == type && !s.trans,
             "%s: global %s GMM, 16 Gaussians, dim 13", bin, type == GH_COV_FULL ? "full" : "diag");
  gh_gmm_set_write(tmp("g.bin"), 1, &s);
  GH_TEST_OK(same_bytes(tmp("g.bin"), sh(bin)), "%s: binary write is byte-identical", bin);
  gh_gmm_set_read(sh(txt), &t);
  double d = set_maxdiff(&s, &t, 1);
  GH_TEST_OK(d < 6e-7, "%s: Kaldi's text form reads equal to the binary form within 7 digits (max rel diff %.3g)", txt,
             d);
  gh_gmm_set_free(&t);
  gh_gmm_set_write(tmp("g.txt"), 0, &s);
  gh_gmm_set_read(tmp("g.txt"), &t);
  gh_gmm_set_write(tmp("g.bin2"), 1, &t);
  GH_TEST_OK(same_bytes(tmp("g.bin2"), sh(bin)), "%s: binary -> text -> binary is byte-identical", bin);
  gh_gmm_set_free(&t);

  gh_gmm g;
  memset(&g, 0, sizeof g);
  gh_gmm_copy(&g, &s.pdfs[0]);
  int bad = gh_gmm_compute_gconsts(&g);
  double worst = 0;
  for (int32_t k = 0; k < g.num_gauss; ++k) worst = fmax(worst, reldiff(g.gconsts[k], s.pdfs[0].gconsts[k], 1));
  GH_TEST_OK(bad == 0 && worst < 1e-4, "%s: stored GCONSTS agree with gh_gmm_compute_gconsts (max rel diff %.3g)",
             bin, worst);

  /* Moments round trip: natural -> moments -> natural. */
  int32_t G = g.num_gauss, D = g.dim;
  int64_t C = gh_gmm_cov_size(&g);
  double *w = malloc(sizeof(double) * G), *mu = malloc(sizeof(double) * G * D), *cov = malloc(sizeof(double) * G * C);
  gh_gmm_get_moments(&g, w, mu, cov);
  gh_gmm h;
  gh_gmm_init(&h, type, G, D);
  int rc = gh_gmm_set_moments(&h, w, mu, cov);
  gh_gmm_set hs = {D, 1, &h, GH_SET_GLOBAL, NULL};
  d = set_maxdiff(&s, &hs, 0);
  double gd = 0;
  for (int32_t k = 0; k < G; ++k) gd = fmax(gd, reldiff(h.gconsts[k], s.pdfs[0].gconsts[k], 1));
  GH_TEST_OK(rc == 0 && d < 1e-4 && gd < 1e-4,
             "%s: get_moments -> set_moments reproduces the parameters (max rel diff %.3g, gconsts %.3g)", bin, d, gd);
  if (type == GH_COV_DIAG) {
    /* A diagonal mean/variance check by hand for Gaussian 0, dim 0. */
    double var = 1.0 / g.inv_vars[0], mean = g.means_invvars[0] * var;
    GH_TEST_OK(reldiff(cov[0], var, 1e-30) < 1e-12 && reldiff(mu[0], mean, 1e-30) < 1e-12,
               "%s: moments are var = 1/inv_var, mean = means_invvars * var", bin);
  } else {
    /* Covariance times inverse covariance is the identity. */
    double maxe = 0;
    for (int32_t k = 0; k < G; ++k)
      for (int32_t i = 0; i < D; ++i)
        for (int32_t j = 0; j < D; ++j) {
          double sum = 0;
          for (int32_t l = 0; l < D; ++l)
            sum += cov[k * C + gh_packed_index(i, l)] * g.inv_vars[k * C + gh_packed_index(l, j)];
          maxe = fmax(maxe, fabs(sum - (i == j)));
        }
    GH_TEST_OK(maxe < 1e-4, "%s: Cov * InvCov = I (max err %.3g)", bin, maxe);
  }
  /* Non-positive-definite covariance is reported, not fatal. */
  for (int64_t i = 0; i < C; ++i) cov[i] = 0;
  rc = gh_gmm_set_moments(&h, w, mu, cov);
  GH_TEST_OK(rc == -1 && strlen(gh_last_error()) > 0, "%s: set_moments rejects a zero covariance (%s)", bin,
             gh_last_error());
  free(w);
  free(mu);
  free(cov);
  gh_gmm_free(&h);
  gh_gmm_free(&g);
  gh_gmm_set_free(&s);
}

/* Per-frame log-likelihoods vs Kaldi's gmm-global-get-frame-likes. */
static void test_frame_likes(const char *model, const char *likes) {
  gh_gmm_set s;
  gh_gmm_set_read(sh(model), &s);
  char spec[1024], lspec[1024];
  snprintf(spec, sizeof spec, "ark:%s", sh("kaldi-ami-feats/feats.ark"));
  snprintf(lspec, sizeof lspec, "ark:%s", sh(likes));
  gh_seq_reader *r = gh_seq_reader_open(spec, GH_OBJ_MATRIX);
  gh_rand_reader *lr = gh_rand_reader_open(lspec, GH_OBJ_VECTOR);
  int nutt = 0, nframes = 0, missing = 0;
  double worst = 0;
  for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {
    const gh_matrix *m = gh_seq_reader_value(r);
    const gh_vector *v = gh_rand_reader_value(lr, gh_seq_reader_key(r));
    if (!v || v->dim != m->rows) { ++missing; continue; }
    for (int32_t t = 0; t < m->rows; ++t) {
      double ll = gh_gmm_loglike_ref(&s.pdfs[0], gh_row(m, t), NULL);
      worst = fmax(worst, fabs(ll - v->data[t]));
    }
    ++nutt;
    nframes += m->rows;
  }
  gh_seq_reader_close(r);
  gh_rand_reader_close(lr);
  GH_TEST_OK(nutt > 0 && missing == 0 && worst < 1e-3,
             "%s: gh_gmm_loglike_ref matches Kaldi's frame-likes on %d utts / %d frames (max abs diff %.3g)", model,
             nutt, nframes, worst);
  gh_gmm_set_free(&s);
}

/* Float64 E-step over feats.ark with gmm g; accumulates into a (uncentred). */
static void estep(const gh_gmm *g, gh_gmm_accs *a, double *tot_like, double *frames) {
  char spec[1024];
  snprintf(spec, sizeof spec, "ark:%s", sh("kaldi-ami-feats/feats.ark"));
  gh_seq_reader *r = gh_seq_reader_open(spec, GH_OBJ_MATRIX);
  int32_t G = g->num_gauss, D = g->dim;
  double *post = malloc(sizeof(double) * G);
  *tot_like = 0;
  *frames = 0;
  for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {
    const gh_matrix *m = gh_seq_reader_value(r);
    for (int32_t t = 0; t < m->rows; ++t) {
      const float *x = gh_row(m, t);
      double ll = gh_gmm_loglike_ref(g, x, post);
      *tot_like += ll;
      *frames += 1;
      for (int32_t k = 0; k < G; ++k) {
        double p = exp(post[k] - ll);
        a->occupancy[k] += p;
        for (int32_t i = 0; i < D; ++i) {
          a->mean_accs[(size_t)k * D + i] += p * x[i];
          if (a->type == GH_COV_DIAG)
            a->var_accs[(size_t)k * D + i] += p * (double)x[i] * x[i];
          else
            for (int32_t j = 0; j <= i; ++j)
              a->var_accs[k * gh_packed_size(D) + gh_packed_index(i, j)] += p * (double)x[i] * x[j];
        }
      }
    }
  }
  gh_seq_reader_close(r);
  free(post);
}

/* Max relative difference of two accs, each element relative to the
 * largest magnitude in its Gaussian's block (so near-zero entries of a
 * row do not dominate). */
static double accs_maxdiff(const gh_gmm_accs *x, const gh_gmm_accs *y) {
  if (x->type != y->type || x->num_gauss != y->num_gauss || x->dim != y->dim) return INFINITY;
  int64_t G = x->num_gauss, D = x->dim, V = x->type == GH_COV_FULL ? gh_packed_size(x->dim) : x->dim;
  double m = 0;
  for (int64_t k = 0; k < G; ++k) {
    m = fmax(m, reldiff(x->occupancy[k], y->occupancy[k], 1e-10));
    double sm = 0, sv = 0;
    for (int64_t i = 0; i < D; ++i) sm = fmax(sm, fabs(y->mean_accs[k * D + i]));
    for (int64_t i = 0; i < V; ++i) sv = fmax(sv, fabs(y->var_accs[k * V + i]));
    for (int64_t i = 0; i < D; ++i) m = fmax(m, fabs(x->mean_accs[k * D + i] - y->mean_accs[k * D + i]) / fmax(sm, 1e-10));
    for (int64_t i = 0; i < V; ++i) m = fmax(m, fabs(x->var_accs[k * V + i] - y->var_accs[k * V + i]) / fmax(sv, 1e-10));
  }
  return m;
}

/* Max element-wise relative difference (floor 1e-10). */
static double accs_maxdiff_elem(const gh_gmm_accs *x, const gh_gmm_accs *y) {
  if (x->type != y->type || x->num_gauss != y->num_gauss || x->dim != y->dim) return INFINITY;
  int64_t G = x->num_gauss, D = x->dim, V = x->type == GH_COV_FULL ? gh_packed_size(x->dim) : x->dim;
  double m = 0;
  for (int64_t k = 0; k < G; ++k) m = fmax(m, reldiff(x->occupancy[k], y->occupancy[k], 1e-10));
  for (int64_t i = 0; i < G * D; ++i) m = fmax(m, reldiff(x->mean_accs[i], y->mean_accs[i], 1e-10));
  for (int64_t i = 0; i < G * V; ++i) m = fmax(m, reldiff(x->var_accs[i], y->var_accs[i], 1e-10));
  return m;
}

static void test_accs(void) {
  gh_gmm_set model;
  gh_gmm_set_read(sh("kaldi-fixtures/ami-diag16.gmm"), &model);

  /* Diagonal accs. */
  gh_accs_set kd;
  gh_accs_read(sh("kaldi-fixtures/ami-diag16.acc"), &kd);
  GH_TEST_OK(kd.global_form && kd.num_pdfs == 1 && kd.pdfs[0].type == GH_COV_DIAG && kd.pdfs[0].num_gauss == 16 &&
                 kd.pdfs[0].dim == 13 && kd.pdfs[0].flags == 7,
             "ami-diag16.acc: bare global diagonal acc, 16 x 13, flags 7");
  gh_gmm_accs ref;
  double tl, nf;
  gh_gmm_accs_init(&ref, GH_COV_DIAG, 16, 13, 7);
  estep(&model.pdfs[0], &ref, &tl, &nf);
  double d = accs_maxdiff(&kd.pdfs[0], &ref), de = accs_maxdiff_elem(&kd.pdfs[0], &ref);
  GH_TEST_OK(d < 1e-3, "ami-diag16.acc: occupancy/mean/var stats match a float64 E-step (max rel diff %.3g, "
             "element-wise %.3g)", d, de);
  GH_TEST_NEAR(kd.total_frames, nf, 1e-2 * nf * 1e-3 + 1e-3, "ami-diag16.acc: total count = %g frames", nf);
  /* Kaldi's float file read, written back in double ("DV"/"DM"), read
   * again: the same values exactly, through binary and text */
  gh_accs_write(tmp("d.acc"), 1, &kd);
  gh_accs_set rt;
  gh_accs_read(tmp("d.acc"), &rt);
  d = accs_maxdiff_elem(&rt.pdfs[0], &kd.pdfs[0]);
  GH_TEST_OK(rt.global_form && d == 0 && file_has(tmp("d.acc"), "<OCCUPANCY> DV") &&
                 file_has(tmp("d.acc"), "<MEANACCS> DM") && file_has(tmp("d.acc"), "<DIAGVARACCS> DM"),
             "ami-diag16.acc: binary write in double (DV, DM), read back exactly (max rel diff %.3g)", d);
  gh_accs_free(&rt);
  gh_accs_write(tmp("d.acc.txt"), 0, &kd);
  gh_accs_read(tmp("d.acc.txt"), &rt);
  d = accs_maxdiff_elem(&rt.pdfs[0], &kd.pdfs[0]);
  GH_TEST_OK(rt.global_form && d == 0, "ami-diag16.acc: text write/read round trip exact (max rel diff %.3g)", d);
  gh_accs_write(tmp("d.acc.bin"), 1, &rt);
  GH_TEST_OK(same_bytes(tmp("d.acc.bin"), tmp("d.acc")), "ami-diag16.acc: binary -> text -> binary is byte-identical");
  gh_accs_free(&rt);

  /* gh_accs_add: a + a = 2a. */
  gh_accs_set two;
  gh_accs_read(sh("kaldi-fixtures/ami-diag16.acc"), &two);
  gh_accs_add(&two, &kd, "ami-diag16.acc");
  int ok = two.total_frames == 2 * kd.total_frames;
  for (int32_t k = 0; k < 16; ++k) ok = ok && two.pdfs[0].occupancy[k] == 2 * kd.pdfs[0].occupancy[k];
  for (int32_t i = 0; i < 16 * 13; ++i)
    ok = ok && two.pdfs[0].mean_accs[i] == 2 * kd.pdfs[0].mean_accs[i] &&
         two.pdfs[0].var_accs[i] == 2 * kd.pdfs[0].var_accs[i];
  GH_TEST_OK(ok && two.global_form, "gh_accs_add: acc + acc = 2 acc");
  gh_accs_free(&two);

  /* Full accs: model = diag model converted to full (gmm-global-to-fgmm). */
  gh_gmm full;
  memset(&full, 0, sizeof full);
  gh_gmm_diag_to_full(&full, &model.pdfs[0]);
  double gd = 0;
  for (int32_t k = 0; k < 16; ++k) gd = fmax(gd, reldiff(full.gconsts[k], model.pdfs[0].gconsts[k], 1));
  GH_TEST_OK(full.type == GH_COV_FULL && gd < 1e-5, "gh_gmm_diag_to_full keeps the gconsts (max rel diff %.3g)", gd);
  gh_accs_set kf;
  gh_accs_read(sh("kaldi-fixtures/ami-full16.acc"), &kf);
  GH_TEST_OK(kf.global_form && kf.num_pdfs == 1 && kf.pdfs[0].type == GH_COV_FULL && kf.pdfs[0].num_gauss == 16 &&
                 kf.pdfs[0].dim == 13,
             "ami-full16.acc: bare global full-covariance acc, 16 x 13");
  gh_gmm_accs fref;
  gh_gmm_accs_init(&fref, GH_COV_FULL, 16, 13, 7);
  estep(&full, &fref, &tl, &nf);
  d = accs_maxdiff(&kf.pdfs[0], &fref);
  de = accs_maxdiff_elem(&kf.pdfs[0], &fref);
  GH_TEST_OK(d < 1e-3, "ami-full16.acc: occupancy/mean/uncentred covariance stats match a float64 E-step (max rel "
             "diff %.3g, element-wise %.3g)", d, de);
  gh_accs_write(tmp("f.acc"), 1, &kf);
  gh_accs_read(tmp("f.acc"), &rt);
  d = accs_maxdiff(&rt.pdfs[0], &kf.pdfs[0]);
  GH_TEST_OK(rt.pdfs[0].type == GH_COV_FULL && d < 1e-6, "ami-full16.acc: binary write/read round trip (max rel diff "
             "%.3g)", d);
  gh_accs_free(&rt);
  GH_TEST_OK(file_has(tmp("f.acc"), "<FULLVARACCS> DP"), "ami-full16.acc: written in double (DP, centred)");

  /* Set form with transition accs, from 0.mdl: write binary and text, read back. */
  gh_gmm_set mdl;
  gh_gmm_set_read(sh("kaldi-yesno-mono-model/0.mdl"), &mdl);
  gh_accs_set am;
  gh_accs_init(&am, &mdl);
  GH_TEST_OK(!am.global_form && am.num_pdfs == 22 && am.num_trans_accs == 277, "gh_accs_init from 0.mdl: 22 pdfs, "
             "277 transition accs");
  for (int32_t p = 0; p < am.num_pdfs; ++p) {
    gh_gmm_accs *a = &am.pdfs[p];
    a->occupancy[0] = 10.0 + p / 3.0;
    for (int32_t i = 0; i < 39; ++i) {
      a->mean_accs[i] = (p - 11) * 0.37 + i / 7.0;
      a->var_accs[i] = 5.0 + p + i * 0.01;
    }
  }
  for (int32_t t = 0; t < am.num_trans_accs; ++t) am.trans_accs[t] = t * 1.5;
  am.total_frames = 234.5;
  am.total_loglike = -12345.678;
  for (int binary = 0; binary <= 1; ++binary) {
    const char *f = tmp(binary ? "am.acc" : "am.acc.txt");
    gh_accs_write(f, binary, &am);
    gh_accs_read(f, &rt);
    double md = 0;
    for (int32_t p = 0; p < 22; ++p) md = fmax(md, accs_maxdiff_elem(&rt.pdfs[p], &am.pdfs[p]));
    /* values are stored as double on disk (Kaldi's readers take float or double) */
    int tok = rt.num_trans_accs == 277 && rt.trans_accs[276] == 276 * 1.5 && rt.total_frames == 234.5 &&
              rt.total_loglike == -12345.678 && !rt.global_form;
    GH_TEST_OK(tok && md == 0, "AM accs with transition accs: %s write/read round trip exact (max rel diff %.3g)",
               binary ? "binary" : "text", md);
    gh_accs_free(&rt);
  }
  gh_accs_set am2;
  gh_accs_read(tmp("am.acc"), &am2);
  gh_accs_add(&am2, &am, "am");
  GH_TEST_OK(am2.total_frames == 469.0 && am2.trans_accs[2] == 6.0 &&
                 reldiff(am2.pdfs[3].var_accs[5], 2 * am.pdfs[3].var_accs[5], 1) < 1e-6,
             "gh_accs_add on AM accs adds stats, transition accs and totals");
  gh_accs_free(&am2);
  gh_accs_free(&am);
  gh_gmm_set_free(&mdl);

  gh_gmm_accs_free(&fref);
  gh_gmm_accs_free(&ref);
  gh_gmm_free(&full);
  gh_accs_free(&kf);
  gh_accs_free(&kd);
  gh_gmm_set_free(&model);
}

/* Loglike of a hand-made 1-D, 2-Gaussian GMM against the closed form. */
static void test_small(void) {
  gh_gmm g;
  gh_gmm_init(&g, GH_COV_DIAG, 2, 1);
  double w[2] = {0.3, 0.7}, mu[2] = {-1.0, 2.0}, var[2] = {0.5, 2.0};
  GH_TEST_OK(gh_gmm_set_moments(&g, w, mu, var) == 0, "set_moments on a 1-D GMM");
  float x = 0.4f;
  double ref = 0;
  for (int k = 0; k < 2; ++k)
    ref += w[k] / sqrt(2 * M_PI * var[k]) * exp(-0.5 * (x - mu[k]) * (x - mu[k]) / var[k]);
  GH_TEST_NEAR(gh_gmm_loglike_ref(&g, &x, NULL), log(ref), 1e-6, "1-D GMM log-likelihood = closed form");
  /* Same as a full GMM. */
  gh_gmm f;
  memset(&f, 0, sizeof f);
  gh_gmm_diag_to_full(&f, &g);
  GH_TEST_NEAR(gh_gmm_loglike_ref(&f, &x, NULL), log(ref), 1e-6, "1-D full GMM log-likelihood = closed form");
  /* zero weight: gconst -inf, counted; likelihood still finite */
  g.weights[0] = 0;
  int bad = gh_gmm_compute_gconsts(&g);
  GH_TEST_OK(bad == 1 && isinf(g.gconsts[0]) && g.gconsts[0] < 0 && isfinite(gh_gmm_loglike_ref(&g, &x, NULL)),
             "zero weight: gconst -inf, reported by compute_gconsts");
  gh_gmm_free(&f);
  gh_gmm_free(&g);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/test_gmm.XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_small();
  test_mdl();
  test_global("kaldi-fixtures/ami-diag16.gmm", "kaldi-fixtures/ami-diag16.gmm.txt", GH_COV_DIAG);
  test_global("kaldi-fixtures/ami-full16.fgmm", "kaldi-fixtures/ami-full16.fgmm.txt", GH_COV_FULL);
  test_frame_likes("kaldi-fixtures/ami-diag16.gmm", "kaldi-fixtures/ami-diag16.frame-likes.txt");
  test_frame_likes("kaldi-fixtures/ami-full16.fgmm", "kaldi-fixtures/ami-full16.frame-likes.txt");
  test_accs();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) printf("# could not remove %s\n", tmpdir);
  return gh_test_done();
}
