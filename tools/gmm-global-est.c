/* gmm-global-est -- Kaldi's gmmbin/gmm-global-est (and, built from the
 * same file with GH_FULL, fgmmbin/fgmm-global-est): one M-step of a global
 * GMM from its accumulators (lib/gmm/gmm-est.c gh_gmm_update, Kaldi's
 * MleDiagGmmUpdate / MleFullGmmUpdate), then optional mixing up
 * (gh_gmm_split, Kaldi DiagGmm::Split / FullGmm::Split). */
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm-est.h"
#include "gmm/gmm.h"
#include "gmm/gselect.h"
#include "io/kaldi-io.h"

#ifdef GH_FULL
#define TOOL "fgmm-global-est"
#define SUM_TOOL "fgmm-global-sum-accs"
#define KIND "full-covariance"
#define COV GH_COV_FULL
#else
#define TOOL "gmm-global-est"
#define SUM_TOOL "gmm-global-sum-accs"
#define KIND "diagonal-covariance"
#define COV GH_COV_DIAG
#endif

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Estimate a " KIND " GMM from the accumulated stats.\n"
      "Usage:  " TOOL " [options] <model-in> <stats-in> <model-out>\n"
      "e.g.: " TOOL " --min-gaussian-weight=0.0001 1.mdl \"" SUM_TOOL " - 1.*.acc |\" 2.mdl\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  int32_t mixup = 0;
  double perturb = 0.01;
  const char *update_flags = "mvw", *occs_out = "";
  gh_est_opts eo;
  gh_est_opts_default(&eo);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  gh_opts_string(po, "update-flags", &update_flags, "Which GMM parameters will be updated: subset of mvw.");
  gh_opts_int(po, "mix-up", &mixup, "Increase number of mixture components to this overall target.");
  gh_opts_double(po, "perturb-factor", &perturb, "While mixing up, perturb means by standard deviation times this factor.");
  gh_opts_string(po, "write-occs", &occs_out, "File to write the Gaussians' occupancies to (a float vector).");
  gh_est_opts_register(po, &eo);
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *model_in = gh_opts_arg(po, 0), *stats_in = gh_opts_arg(po, 1), *model_out = gh_opts_arg(po, 2);
  uint32_t flags = gh_gmm_flags_parse(update_flags, "update-flags");
  gh_gmm_set model;
  gh_gmm_set_read(model_in, &model);
  gh_gmm *gmm = gh_global_gmm(&model, COV, model_in);
  gh_accs_set accs;
  gh_accs_read(stats_in, &accs);
  if (accs.num_pdfs != 1 || accs.pdfs[0].type != COV || accs.pdfs[0].num_gauss != gmm->num_gauss ||
      accs.pdfs[0].dim != gmm->dim)
    gh_die("%s: the accumulators (%d pdf%s, %s, %d Gaussians, dim %d) do not match the model %s (%s, %d Gaussians, "
           "dim %d)", stats_in, accs.num_pdfs, accs.num_pdfs == 1 ? "" : "s",
           accs.pdfs[0].type == GH_COV_FULL ? "full covariance" : "diagonal", accs.pdfs[0].num_gauss, accs.pdfs[0].dim,
           model_in, COV == GH_COV_FULL ? "full covariance" : "diagonal", gmm->num_gauss, gmm->dim);
  if (flags & ~accs.pdfs[0].flags)
    gh_die("--update-flags=%s asks for statistics the accumulators in %s lack (their flags: %u)", update_flags,
           stats_in, (unsigned)accs.pdfs[0].flags);
  if (!flags) gh_die("--update-flags is empty: nothing to update");
  accs.pdfs[0].flags = flags;
  {
    gh_est_stats st = {0};
    /* Kaldi's MleDiagGmmUpdate / MleFullGmmUpdate update the weights only
     * with "w"; our M-step augments "m" with "w" (as Kaldi's accumulators
     * do), so the old weights are put back (when no Gaussian was removed). */
    float *old_w = gh_malloc(sizeof(float) * (size_t)gmm->num_gauss);
    memcpy(old_w, gmm->weights, sizeof(float) * (size_t)gmm->num_gauss);
    const int32_t old_g = gmm->num_gauss;
    gh_gmm_update(gmm, &accs.pdfs[0], &eo, &st, 0);
    if (!(flags & 4u) && gmm->num_gauss == old_g) {
      memcpy(gmm->weights, old_w, sizeof(float) * (size_t)old_g);
      gh_gmm_compute_gconsts(gmm);
    }
    free(old_w);
    gh_est_stats_finish(&st, 1, NULL);
    gh_log("Overall objective function improvement is %.7g per frame over %.7g frames.",
           st.count > 0 ? st.objf_change / st.count : 0.0, st.count);
  }
  if (*occs_out) {
    gh_vector v = {0};
    gh_vector_resize(&v, accs.pdfs[0].num_gauss);
    for (int32_t g = 0; g < v.dim; ++g) v.data[g] = (float)accs.pdfs[0].occupancy[g];
    gh_ostream *os = gh_ostream_open(occs_out);
    gh_write_binary_marker(os, binary);
    gh_write_vector(os, binary, &v);
    gh_ostream_close(os);
    gh_vector_free(&v);
  }
  if (mixup != 0) {
    gh_rng rng;
    gh_rng_seed(&rng, 0);
    gh_gmm_split(gmm, mixup, perturb, &rng);
  }
  model.form = GH_SET_GLOBAL;
  gh_gmm_set_write(model_out, binary, &model);
  gh_log("Written model to %s", model_out);
  gh_accs_free(&accs);
  gh_gmm_set_free(&model);
  gh_opts_free(po);
  return 0;
}
