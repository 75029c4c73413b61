/* test_fmllr.c -- unit tests of drivers/adapt/fmllr.c (fMLLR statistics through the
 * CPU backend's full-covariance E-step vs a direct double computation from
 * the diagonal model's posteriors; the row update: monotone auxiliary
 * function, zero gradient at the result; applying transforms) and drivers/adapt/map.c
 * (MAP closed form on one Gaussian). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "adapt/fmllr.h"
#include "base/gh-base.h"
#include "gh-test.h"
#include "gmm/gmm-est.h"
#include "gmm/gmm.h"
#include "train/gmm-data.h"
#include "io/table.h"
#include "adapt/map.h"

enum { D = 3, G = 3, P = 2, N = 600 };

/* Two pdfs of G diagonal Gaussians with distinct means/variances. */
static void make_model(gh_gmm_set *s, gh_rng *r) {
  memset(s, 0, sizeof *s);
  s->dim = D;
  s->num_pdfs = P;
  s->pdfs = gh_calloc(P, sizeof(gh_gmm));
  for (int p = 0; p < P; ++p) {
    gh_gmm_init(&s->pdfs[p], GH_COV_DIAG, G, D);
    double w[G], mu[G * D], var[G * D];
    for (int g = 0; g < G; ++g) {
      w[g] = (g + 1.0) / (G * (G + 1) / 2.0);
      for (int d = 0; d < D; ++d) {
        mu[g * D + d] = 3.0 * gh_rng_gauss(r) + p;
        var[g * D + d] = 0.5 + gh_rng_uniform(r);
      }
    }
    gh_gmm_set_moments(&s->pdfs[p], w, mu, var);
    gh_gmm_compute_gconsts(&s->pdfs[p]);
  }
}

int main(void) {
  gh_rng r;
  gh_rng_seed(&r, 11);
  gh_gmm_set model, full;
  make_model(&model, &r);
  gh_fmllr_full_view(&full, &model, "test");

  /* data: pdf of frame t is t % 2; features distorted from the model's scale */
  gh_data d;
  gh_data_init(&d, D);
  gh_matrix m = {0, 0, NULL};
  gh_matrix_resize(&m, N, D);
  gh_ivector ali = {0, NULL};
  gh_ivector_resize(&ali, N);
  for (int t = 0; t < N; ++t) {
    ali.data[t] = t % P;
    for (int k = 0; k < D; ++k) m.data[t * D + k] = (float)(1.3 * (3.0 * gh_rng_gauss(&r)) + 0.7 + 0.2 * k);
  }
  /* the alignment as a table, as the tools read it */
  char ali_path[] = "/tmp/test_fmllr_ali.XXXXXX";
  int fd = mkstemp(ali_path);
  GH_TEST_OK(fd >= 0, "temporary alignment file");
  close(fd);
  char spec[64];
  snprintf(spec, sizeof spec, "ark,t:%s", ali_path);
  gh_writer *w = gh_writer_open(spec);
  gh_writer_write(w, "u", GH_OBJ_INT32_VECTOR, &ali);
  gh_writer_close(w);
  gh_rand_reader *lab = gh_rand_reader_open(spec, GH_OBJ_INT32_VECTOR);
  const gh_data_opts o = {.feats_rspec = "feats", .labels_rspec = spec, .label_type = GH_LABELS_ALI,
                          .num_pdfs = P, .dim = D};
  const gh_matrix_view mv = {m.rows, m.cols, m.data};
  GH_TEST_OK(gh_data_add_utt(&d, &o, lab, "u", &mv) == 1 && d.num_frames == N && d.num_pairs == N,
             "gh_data_add_utt: %d frames, %lld pairs", d.num_frames, (long long)d.num_pairs);
  gh_rand_reader_close(lab);
  remove(ali_path);

  gh_backend *be = gh_backend_cpu_new();
  gh_fmllr_stats st;
  gh_fmllr_stats_init(&st, D);
  gh_fmllr_accumulate(be, &model, &full, &d, &st);

  /* direct: posteriors of the diagonal model in double */
  gh_fmllr_stats ref;
  gh_fmllr_stats_init(&ref, D);
  const int D1 = D + 1;
  for (int t = 0; t < N; ++t) {
    const gh_gmm *g = &model.pdfs[ali.data[t]];
    double lg[G], tot = gh_gmm_loglike_ref(g, m.data + t * D, lg), xi[D + 1];
    for (int k = 0; k < D; ++k) xi[k] = m.data[t * D + k];
    xi[D] = 1;
    for (int c = 0; c < G; ++c) {
      double gam = exp(lg[c] - tot);
      ref.beta += gam;
      for (int i = 0; i < D; ++i) {
        for (int j = 0; j < D1; ++j) ref.K[i * D1 + j] += gam * g->means_invvars[c * D + i] * xi[j];
        for (int j = 0; j < D1; ++j)
          for (int k = 0; k < D1; ++k) ref.G[(i * D1 + j) * D1 + k] += gam * g->inv_vars[c * D + i] * xi[j] * xi[k];
      }
    }
  }
  double ek = 0, eg = 0, mk = 0, mg = 0;
  for (int e = 0; e < D * D1; ++e) { ek = fmax(ek, fabs(st.K[e] - ref.K[e])); mk = fmax(mk, fabs(ref.K[e])); }
  for (int e = 0; e < D * D1 * D1; ++e) { eg = fmax(eg, fabs(st.G[e] - ref.G[e])); mg = fmax(mg, fabs(ref.G[e])); }
  GH_TEST_NEAR(st.beta, ref.beta, 1e-6 * N, "beta from the backend's full-cov E-step = direct sum of posteriors");
  GH_TEST_OK(ek <= 1e-5 * mk && eg <= 1e-5 * mg, "K and G_i from the full-cov E-step = direct (rel. errors %.2g, %.2g)",
             ek / mk, eg / mg);

  /* row update: Q never decreases with more passes, gain = Q(new) - Q(I) */
  double W0[D * (D + 1)] = {0};
  for (int i = 0; i < D; ++i) W0[i * D1 + i] = 1;
  double q0 = gh_fmllr_auxf(W0, &st), prev = q0, W[D * (D + 1)];
  int mono = 1;
  for (int iters = 1; iters <= 32; iters *= 2) {
    memcpy(W, W0, sizeof W);
    double gain = gh_fmllr_update(&st, iters, 0.0, W, "test");
    double q = gh_fmllr_auxf(W, &st);
    if (q < prev - 1e-9 * fabs(prev) || fabs(gain - (q - q0)) > 1e-9 * fabs(q0)) mono = 0;
    prev = q;
  }
  GH_TEST_OK(mono && prev > q0, "Q(W) grows with passes (%.6f -> %.6f per frame), gain reported = Q(new) - Q(old)",
             q0 / st.beta, prev / st.beta);
  /* gradient beta A^-T + K - [G_i w_i] is ~0 at the maximum */
  double A[D * D];
  for (int i = 0; i < D; ++i)
    for (int j = 0; j < D; ++j) A[i * D + j] = W[i * D1 + j];
  /* inverse of 3x3 by cofactors */
  double det = A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) + A[2] * (A[3] * A[7] - A[4] * A[6]);
  double cof[9] = {A[4] * A[8] - A[5] * A[7], -(A[3] * A[8] - A[5] * A[6]), A[3] * A[7] - A[4] * A[6],
                   -(A[1] * A[8] - A[2] * A[7]), A[0] * A[8] - A[2] * A[6], -(A[0] * A[7] - A[1] * A[6]),
                   A[1] * A[5] - A[2] * A[4], -(A[0] * A[5] - A[2] * A[3]), A[0] * A[4] - A[1] * A[3]};
  double gmax = 0, kmax = 0;
  for (int i = 0; i < D; ++i)
    for (int j = 0; j < D1; ++j) {
      double gr = st.K[i * D1 + j] + (j < D ? st.beta * cof[i * D + j] / det : 0);
      for (int k = 0; k < D1; ++k) gr -= st.G[(i * D1 + j) * D1 + k] * W[i * D1 + k];
      gmax = fmax(gmax, fabs(gr));
      kmax = fmax(kmax, fabs(st.K[i * D1 + j]));
    }
  GH_TEST_OK(gmax <= 1e-6 * kmax, "gradient of Q at the estimate is ~0 (max %.3g, |K| %.3g)", gmax, kmax);
  /* min count: W unchanged, gain 0 */
  memcpy(W, W0, sizeof W);
  GH_TEST_OK(gh_fmllr_update(&st, 10, st.beta + 1, W, "test") == 0.0 && !memcmp(W, W0, sizeof W),
             "below --fmllr-min-count: identity kept, gain 0");

  /* apply: affine, linear, wrong size */
  gh_matrix X = {0, 0, NULL}, T = {0, 0, NULL}, Y = {0, 0, NULL};
  gh_matrix_resize(&X, 2, 2);
  X.data[0] = 1; X.data[1] = 2; X.data[2] = -1; X.data[3] = 0.5f;
  gh_matrix_resize(&T, 2, 3);
  float tv[6] = {2, 0, 1, 1, 1, -1};
  memcpy(T.data, tv, sizeof tv);
  int ok = gh_fmllr_apply(&T, &X, &Y) == 0 && Y.data[0] == 3 && Y.data[1] == 2 && Y.data[2] == -1 && Y.data[3] == -1.5f;
  T.cols = 2;
  ok = ok && gh_fmllr_apply(&T, &X, &Y) == 0 && Y.data[0] == 2 && Y.data[1] == 3;
  T.cols = 4;
  ok = ok && gh_fmllr_apply(&T, &X, &Y) == -1 && strstr(gh_last_error(), "4 columns");
  T.cols = 3;
  GH_TEST_OK(ok, "gh_fmllr_apply: [A b], A, and a wrong size (error: %s)", gh_last_error());

  /* MAP on pdf 0: tau = 0 gives the ML means; huge tau keeps the prior */
  gh_accs_set accs;
  gh_data_estep(be, &model, &d, &accs, NULL);
  gh_map_opts mo;
  gh_map_opts_default(&mo);
  gh_gmm g0;
  memset(&g0, 0, sizeof g0);
  gh_gmm_copy(&g0, &model.pdfs[0]);
  mo.mean_tau = 0;
  gh_gmm_map_update(&g0, &accs.pdfs[0], &mo, 0);
  double mu[G * D], emax = 0;
  gh_gmm_get_moments(&g0, NULL, mu, NULL);
  for (int c = 0; c < G; ++c)
    for (int k = 0; k < D; ++k)
      emax = fmax(emax, fabs(mu[c * D + k] - accs.pdfs[0].mean_accs[c * D + k] / accs.pdfs[0].occupancy[c]));
  GH_TEST_OK(emax < 1e-5, "MAP tau=0: means = ML means m_g/occ_g (max err %.2g)", emax);
  gh_gmm_copy(&g0, &model.pdfs[0]);
  mo.mean_tau = 1e12;
  double mu0[G * D];
  gh_gmm_get_moments(&model.pdfs[0], NULL, mu0, NULL);
  gh_gmm_map_update(&g0, &accs.pdfs[0], &mo, 0);
  gh_gmm_get_moments(&g0, NULL, mu, NULL);
  emax = 0;
  for (int e = 0; e < G * D; ++e) emax = fmax(emax, fabs(mu[e] - mu0[e]));
  GH_TEST_OK(emax < 1e-5, "MAP tau=1e12: means stay at the prior (max change %.2g)", emax);

  gh_gmm_free(&g0);
  gh_accs_free(&accs);
  gh_matrix_free(&X); gh_matrix_free(&T); gh_matrix_free(&Y); gh_matrix_free(&m);
  gh_ivector_free(&ali);
  gh_fmllr_stats_free(&st);
  gh_fmllr_stats_free(&ref);
  gh_data_free(&d);
  gh_backend_free(be);
  gh_gmm_set_free(&full);
  gh_gmm_set_free(&model);
  return gh_test_done();
}
