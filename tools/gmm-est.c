/* gmm-est -- M-step of a GMM set from (summed) accumulators, with Kaldi's
 * estimation options and optional mix-down and mix-up (the "estimate" part of
 * gmm-acc-stats-gpu -> gmm-sum-accs -> gmm-est).  On a Kaldi .mdl with
 * accumulators from gmm-acc-stats-ali it also updates the TransitionModel
 * (Kaldi gmmbin/gmm-est.cc, TransitionModel::MleUpdate), logs Kaldi's lines
 * and writes --write-occs as Kaldi does (text). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "gmm/gmm-est.h"
#include "gmm/gmm.h"
#include "gmm/init-model.h"
#include "gmm/kaldi-gconst.h"
#include "base/opts.h"
#include "gmm/shrink.h"
#include "hmm/transition.h"
#include "io/kaldi-io.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Re-estimate a GMM set (diagonal or full covariance) from accumulated statistics\n"
      "(maximum likelihood, Kaldi's MleDiagGmmUpdate / MleFullGmmUpdate), optionally mixing down and up.\n"
      "Usage:  gmm-est [options] <model-in> <stats-in> <model-out>\n"
      "e.g.:   gmm-est --mix-up=2000 1.mdl 1.acc 2.mdl\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  int32_t seed = 0;
  int64_t mix_up = 0;
  int32_t mix_down = 0;
  double power = 0.2, min_count = 20.0, perturb = 0.01;
  gh_est_opts eo;
  gh_est_opts_default(&eo);
  gh_opts_bool(po, "binary", &binary, "Write the output model in binary mode");
  gh_opts_int64(po, "mix-up", &mix_up, "Increase the total number of Gaussians to this (0 = no mix-up)");
  gh_opts_int(po, "mix-down", &mix_down,
              "If nonzero, merge mixture components to this target (Kaldi's MergeByCount, before any mix-up; "
              "diagonal models)");
  gh_opts_double(po, "power", &power, "Mix-up: Gaussians per pdf proportional to occupancy^power");
  gh_opts_double(po, "min-count", &min_count, "Mix-up: minimum occupancy per Gaussian");
  gh_opts_double(po, "perturb-factor", &perturb, "Mix-up: mean perturbation in standard deviations");
  gh_opts_int(po, "seed", &seed, "Random seed for mix-up perturbations");
  gh_est_opts_register(po, &eo);
  float trans_floor = 0.01f, trans_min_count = 5.0f;
  const char *update_flags = "mvwt";
  gh_opts_float(po, "transition-floor", &trans_floor, "Floor for transition probabilities");
  gh_opts_float(po, "transition-min-count", &trans_min_count,
                "Minimum count required to update transitions from a state");
  gh_opts_string(po, "update-flags", &update_flags,
                 "Which parameters to update: subset of mvwt (GMM means, variances, weights must all be "
                 "updated; t = transitions of a .mdl)");
  const char *occs_wx = "";
  gh_opts_string(po, "write-occs", &occs_wx,
                 "Write the per-pdf occupancies (before mix-up) as a Kaldi float vector (Kaldi's gmm-est "
                 "--write-occs; gmm-info --occs reads them)");
  const char *shrink = "none";
  gh_opts_string(po, "shrink", &shrink,
                 "Shrink full covariances at the M-step (fc-shrink's methods): none, fixed:LAMBDA, occupancy:TAU, "
                 "oas, lw, ss (lw, ss need accs from --shrinkage-stats=true)");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *model_in = gh_opts_arg(po, 0), *accs_in = gh_opts_arg(po, 1), *model_out = gh_opts_arg(po, 2);

  gh_gmm_set model;
  gh_gmm_set_read(model_in, &model);
  gh_accs_set accs;
  gh_accs_read(accs_in, &accs);
  if (accs.num_pdfs != model.num_pdfs)
    gh_die("%s has %d pdfs but %s has %d", accs_in, accs.num_pdfs, model_in, model.num_pdfs);
  int update_trans = 0;
  {
    int m = 0, v = 0, w = 0;
    for (const char *c = update_flags; *c; ++c) {
      if (*c == 'm') m = 1;
      else if (*c == 'v') v = 1;
      else if (*c == 'w') w = 1;
      else if (*c == 't') update_trans = 1;
      else gh_die("--update-flags=%s: unknown flag '%c' (expected a subset of mvwt)", update_flags, *c);
    }
    if (!(m && v && w)) gh_die("--update-flags=%s: only updates of all of m, v and w are supported", update_flags);
  }
  if (update_trans && model.trans) {
    if (!accs.trans_accs)
      gh_die("%s has no transition statistics (accumulate with gmm-acc-stats-ali) but %s is a .mdl; use "
             "--update-flags=mvw to update the GMMs only", accs_in, model_in);
    if (accs.num_trans_accs != model.trans->num_tids + 1)
      gh_die("%s has %d transition statistics but %s has %d transition-ids (accs of another model?)", accs_in,
             accs.num_trans_accs - 1, model_in, model.trans->num_tids);
    double impr = 0, count = 0;
    int32_t nfl = 0, nsk = 0;
    gh_transition_mle_update(model.trans, accs.trans_accs, accs.num_trans_accs, trans_floor, trans_min_count, &impr,
                             &count, &nfl, &nsk);
    gh_log("TransitionModel::Update, objf change is %g per frame over %g frames. ", count > 0 ? impr / count : 0.0,
           count);
    gh_log("%d probabilities floored, %d out of %d transition-states skipped due to insuffient data (it is normal "
           "to have some skipped.)", nfl, nsk, model.trans->num_tuples);
    gh_log("Transition model update: Overall %g log-like improvement per frame over %g frames.",
           count > 0 ? impr / count : 0.0, count);
  }
  gh_shrink_opts so;
  gh_shrink_stats sst;
  if (gh_shrink_parse(shrink, &so) != 0) gh_die("--shrink=%s: %s", shrink, gh_last_error());
  if (so.method == GH_SHRINK_DIAG) gh_die("--shrink=diag is not an M-step option: use fc-shrink --method=diag");
  if (so.method != GH_SHRINK_NONE) {
    for (int32_t p = 0; p < model.num_pdfs; ++p)
      if (model.pdfs[p].type != GH_COV_FULL)
        gh_die("%s, pdf %d: diagonal covariances; --shrink needs a full-covariance model", model_in, p);
    if (gh_shrink_needs_stats(so.method) && !gh_accs_have_shrink(&accs))
      gh_die("%s has no shrinkage statistics, which --shrink=%s needs (accumulate with --shrinkage-stats=true)",
             accs_in, shrink);
    gh_shrink_stats_init(&sst);
    eo.shrink = &so;
    eo.shrink_stats = &sst;
  }
  gh_est_stats st;
  memset(&st, 0, sizeof st);
  gh_gmm_set_update(&model, &accs, &eo, &st);
  if (model.trans && eo.remove_low_count_gaussians) {
    /* Kaldi's MleDiagGmmUpdate on a pdf without data removes every Gaussian
     * but the last (all are below the occupancy minimum), which keeps its
     * parameters with weight 1; the host M-step leaves such pdfs as they were. */
    int32_t reduced = 0;
    for (int32_t p = 0; p < model.num_pdfs; ++p) {
      gh_gmm *g = &model.pdfs[p];
      double occ = 0;
      for (int32_t k = 0; k < accs.pdfs[p].num_gauss; ++k) occ += accs.pdfs[p].occupancy[k];
      if (occ != 0.0 || g->num_gauss <= 1 || g->type != GH_COV_DIAG) continue;
      gh_gmm one = {0};
      gh_gmm_init(&one, GH_COV_DIAG, 1, g->dim);
      int32_t last = g->num_gauss - 1;
      memcpy(one.means_invvars, g->means_invvars + (int64_t)last * g->dim, sizeof(float) * (size_t)g->dim);
      memcpy(one.inv_vars, g->inv_vars + (int64_t)last * g->dim, sizeof(float) * (size_t)g->dim);
      one.weights[0] = 1.0f;
      gh_gmm_kaldi_gconsts(&one, model_in);
      gh_gmm_free(g);
      *g = one;
      reduced++;
    }
    if (reduced)
      gh_log("%d pdfs without data reduced to their last Gaussian (Kaldi removes the others)", reduced);
  }
  if (so.method != GH_SHRINK_NONE) gh_shrink_stats_log(&so, &sst);
  if (model.trans) {
    gh_log("GMM update: Overall %g objective function improvement per frame over %g frames",
           st.count > 0 ? st.objf_change / st.count : 0.0, st.count);
    gh_log("GMM update: Overall avg like per frame = %g over %g frames.",
           accs.total_frames > 0 ? accs.total_loglike / accs.total_frames : 0.0, accs.total_frames);
  }
  gh_log("avg loglike per frame %.6f over %.0f frames (from %s); auxiliary function change per frame %.6f",
         accs.total_frames > 0 ? accs.total_loglike / accs.total_frames : 0.0, accs.total_frames, accs_in,
         st.count > 0 ? st.objf_change / st.count : 0.0);
  if (*occs_wx) {
    double *occs = gh_malloc(sizeof(double) * model.num_pdfs);
    gh_accs_pdf_occs(&accs, occs);
    gh_vector v = {0};
    gh_vector_resize(&v, model.num_pdfs);
    for (int32_t p = 0; p < model.num_pdfs; ++p) v.data[p] = (float)occs[p];
    gh_ostream *o = gh_ostream_open(occs_wx);
    int occs_binary = model.trans ? 0 : binary; /* Kaldi's gmm-est writes them as text */
    gh_write_binary_marker(o, occs_binary);
    gh_write_vector(o, occs_binary, &v);
    gh_ostream_close(o);
    gh_vector_free(&v);
    free(occs);
  }
  if (mix_down < 0) gh_die("--mix-down=%d: must not be negative", mix_down);
  if (mix_down != 0) {
    /* Kaldi's gmm-est: MergeByCount with the occupancies of the statistics, before the mix-up */
    int64_t before = gh_gmm_set_total_gauss(&model);
    for (int32_t p = 0; p < model.num_pdfs; ++p)
      if (model.pdfs[p].type != GH_COV_DIAG)
        gh_die("--mix-down=%d: %s, pdf %d has full covariances (only diagonal models are merged)", mix_down,
               model_in, p);
    double *occs = gh_malloc(sizeof(double) * (size_t)(model.num_pdfs > 0 ? model.num_pdfs : 1));
    float *focc = gh_malloc(sizeof(float) * (size_t)(model.num_pdfs > 0 ? model.num_pdfs : 1));
    gh_accs_pdf_occs(&accs, occs);
    for (int32_t p = 0; p < model.num_pdfs; ++p) focc[p] = (float)occs[p];
    int64_t after = gh_gmm_set_merge_by_count_kaldi(&model, focc, mix_down, (float)power, (float)min_count);
    gh_log("Merged %d states with target = %d, power = %g and min_count = %g, merged from %lld to %lld",
           model.num_pdfs, mix_down, power, min_count, (long long)before, (long long)after);
    free(occs), free(focc);
  }
  if (mix_up > 0) {
    int64_t before = gh_gmm_set_total_gauss(&model);
    int diag = 1;
    for (int32_t p = 0; p < model.num_pdfs; ++p) diag &= model.pdfs[p].type == GH_COV_DIAG;
    double *occs = gh_malloc(sizeof(double) * (size_t)(model.num_pdfs > 0 ? model.num_pdfs : 1));
    gh_accs_pdf_occs(&accs, occs);
    if (model.trans && diag && mix_up <= INT32_MAX) {
      /* a Kaldi .mdl: Kaldi's SplitByCount, its random numbers (rand() from 1 + --seed) and
       * its targets, which split pdfs below their share even when the total is reached */
      float *focc = gh_malloc(sizeof(float) * (size_t)(model.num_pdfs > 0 ? model.num_pdfs : 1));
      for (int32_t p = 0; p < model.num_pdfs; ++p) focc[p] = (float)occs[p];
      srand((unsigned)(1 + seed));
      int64_t after = gh_gmm_set_split_by_count_kaldi(&model, focc, (int32_t)mix_up, (float)perturb, (float)power,
                                                      (float)min_count);
      gh_log("Split %d states with target = %lld, power = %g, perturb_factor = %g and min_count = %g, split #Gauss "
             "from %lld to %lld",
             model.num_pdfs, (long long)mix_up, power, perturb, min_count, (long long)before, (long long)after);
      free(focc);
    } else if (mix_up <= before) {
      gh_warn("--mix-up=%lld is not more than the current %lld Gaussians: not mixing up", (long long)mix_up,
              (long long)before);
    } else {
      gh_rng rng;
      gh_rng_seed(&rng, (uint64_t)seed);
      int64_t after = gh_gmm_set_mixup(&model, mix_up, occs, power, min_count, perturb, &rng);
      gh_log("mixed up from %lld to %lld Gaussians", (long long)before, (long long)after);
    }
    free(occs);
  }
  gh_gmm_set_write(model_out, binary, &model);
  gh_log("wrote %s: %d pdfs, %lld Gaussians", model_out, model.num_pdfs, (long long)gh_gmm_set_total_gauss(&model));
  gh_accs_free(&accs);
  gh_gmm_set_free(&model);
  gh_opts_free(po);
  return 0;
}
