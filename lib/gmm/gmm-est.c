/* gmm-est.c -- M-step, splitting and mix-up; see gmm-est.h.
 * Sources: Kaldi src/gmm/mle-diag-gmm.cc (MleDiagGmmUpdate, MlObjective),
 * src/gmm/mle-full-gmm.cc (MleFullGmmUpdate), src/gmm/diag-gmm.cc and
 * full-gmm.cc (Split), src/gmm/am-diag-gmm.cc (SplitByCount),
 * src/gmm/model-common.cc (GetSplitTargets), src/matrix/sp-matrix.cc
 * (ApplyFloor, MaxAbsEig). */
#include "gmm/gmm-est.h"

#include <lapacke.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <string.h>

#include "base/gh-base.h"
#include "base/matrix.h"
#include "base/opts.h"
#include "gmm/shrink.h"
#include "gmm/numerics.h"

void gh_est_opts_default(gh_est_opts *o) {
  o->min_gaussian_weight = 1e-5;
  o->min_gaussian_occupancy = -1.0;
  o->min_variance = 1e-3;
  o->rel_variance_floor = 0.0;
  o->max_condition = 1e4;
  o->remove_low_count_gaussians = 1;
  o->variance_floor = -1.0;
  o->shrink = NULL;
  o->shrink_stats = NULL;
}

void gh_est_opts_register_cov(gh_opts *po, gh_est_opts *o, int cov) {
  const int diag = cov != GH_COV_FULL, full = cov != GH_COV_DIAG;
  gh_opts_double(po, "min-gaussian-weight", &o->min_gaussian_weight,
                 "Minimum weight of a Gaussian (occ/total); below it the Gaussian is not updated, and removed");
  gh_opts_double(po, "min-gaussian-occupancy", &o->min_gaussian_occupancy,
                 cov == GH_COV_DIAG   ? "Minimum occupancy of a Gaussian to update it (and to keep it); -1 = Kaldi's default: 10"
                 : cov == GH_COV_FULL ? "Minimum occupancy of a Gaussian to update it (and to keep it); -1 = Kaldi's default: 100"
                                      : "Minimum occupancy of a Gaussian to update it (and to keep it); -1 = Kaldi's default: 10 diag, 100 full");
  gh_opts_double(po, "min-variance", &o->min_variance,
                 cov == GH_COV_DIAG   ? "Absolute variance floor"
                 : cov == GH_COV_FULL ? "Floor on covariance eigenvalues"
                                      : "Absolute variance floor (diag); floor on covariance eigenvalues (full)");
  if (full)
    gh_opts_double(po, "variance-floor", &o->variance_floor,
                   "Same as --min-variance (Kaldi's name in the fgmm tools); -1 = unset");
  if (diag)
    gh_opts_double(po, "rel-variance-floor", &o->rel_variance_floor,
                   cov == GH_COV_DIAG
                       ? "Also floor variances at this fraction of the pdf's data variance per dimension (0 = off)"
                       : "Diag: also floor variances at this fraction of the pdf's data variance per dimension (0 = off)");
  if (full)
    gh_opts_double(po, "max-condition", &o->max_condition,
                   cov == GH_COV_FULL ? "Floor covariance eigenvalues at max-eigenvalue / max-condition"
                                      : "Full: floor covariance eigenvalues at max-eigenvalue / max-condition");
  gh_opts_bool(po, "remove-low-count-gaussians", &o->remove_low_count_gaussians,
               "Remove Gaussians whose occupancy or weight is below the minimum");
}

void gh_est_opts_register(gh_opts *po, gh_est_opts *o) { gh_est_opts_register_cov(po, o, -1); }

/* ---------------- random numbers ---------------- */
void gh_rng_seed(gh_rng *r, uint64_t seed) {
  r->s = seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
  r->has_spare = 0;
  r->spare = 0;
}
uint64_t gh_rng_u64(gh_rng *r) { /* splitmix64 */
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
double gh_rng_uniform(gh_rng *r) { return (double)(gh_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0); }
double gh_rng_gauss(gh_rng *r) {
  if (r->has_spare) { r->has_spare = 0; return r->spare; }
  double u1, u2;
  do { u1 = gh_rng_uniform(r); } while (u1 <= 0.0);
  u2 = gh_rng_uniform(r);
  double rad = sqrt(-2.0 * log(u1)), th = 2.0 * M_PI * u2;
  r->spare = rad * sin(th);
  r->has_spare = 1;
  return rad * cos(th);
}

/* ---------------- helpers ---------------- */
static void packed_to_full(const double *p, int32_t D, double *A) {
  for (int32_t i = 0; i < D; ++i)
    for (int32_t j = 0; j <= i; ++j) A[i * D + j] = A[j * D + i] = p[gh_packed_index(i, j)];
}

/* Kaldi SpMatrix::ApplyFloor after computing the floor as
 * max(abs_floor, MaxAbsEig / max_condition): eigenvalues below the floor are
 * set to it and the matrix rebuilt.  A: packed [D(D+1)/2], modified in place.
 * Returns the number of eigenvalues floored. */
static int floor_eigenvalues(double *Ap, int32_t D, double abs_floor, double max_condition,
                             double *A /* D*D work */, double *w /* D */, int pdf, int gi, double *cond) {
  /* Fast exact path: Kaldi's floor is max(abs_floor, max|eig| / max_condition)
   * <= f = max(abs_floor, g / max_condition) with g >= max|eig| the largest
   * Gershgorin row sum.  If A - f I has a Cholesky factor, every eigenvalue
   * exceeds f, so none would be floored and A stays as it is: skip the
   * eigendecomposition (the M-step's dominant cost, O(9 D^3) per Gaussian). */
  double gmax = 0;
  for (int32_t i = 0; i < D; ++i) {
    double r = 0;
    for (int32_t j = 0; j < D; ++j) r += fabs(Ap[i >= j ? gh_packed_index(i, j) : gh_packed_index(j, i)]);
    if (r > gmax) gmax = r;
  }
  double f = abs_floor;
  if (max_condition > 0 && gmax / max_condition > f) f = gmax / max_condition;
  int pd = 1;
  for (int32_t i = 0; i < D && pd; ++i)
    for (int32_t j = 0; j <= i; ++j) {
      double s = Ap[gh_packed_index(i, j)] - (i == j ? f : 0.0);
      for (int32_t k = 0; k < j; ++k) s -= A[i * D + k] * A[j * D + k];
      if (i == j) {
        if (!(s > 0)) { pd = 0; break; }
        A[i * D + i] = sqrt(s);
      } else {
        A[i * D + j] = s / A[j * D + j];
      }
    }
  if (pd) return 0;
  packed_to_full(Ap, D, A);
  lapack_int info = LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'V', 'L', D, A, D, w);
  if (info != 0) gh_die("pdf %d, Gaussian %d: eigenvalue decomposition of covariance failed (dsyev info %d)",
                        pdf, gi, (int)info);
  double maxabs = fmax(fabs(w[0]), fabs(w[D - 1]));
  if (cond) *cond = w[0] > 0 ? maxabs / w[0] : INFINITY; /* dsyev: ascending */
  double floor = abs_floor;
  if (max_condition > 0 && maxabs / max_condition > floor) floor = maxabs / max_condition;
  int n = 0;
  for (int32_t k = 0; k < D; ++k)
    if (w[k] < floor) { w[k] = floor; ++n; }
  if (n == 0) return 0;
  for (int32_t i = 0; i < D; ++i)
    for (int32_t j = 0; j <= i; ++j) {
      double s = 0;
      for (int32_t k = 0; k < D; ++k) s += A[i * D + k] * w[k] * A[j * D + k];
      Ap[gh_packed_index(i, j)] = s;
    }
  return n;
}

int gh_cov_floor(double *cov, int32_t D, double abs_floor, double max_condition) {
  double *A = gh_malloc(sizeof(double) * D * D), *w = gh_malloc(sizeof(double) * D);
  int n = floor_eigenvalues(cov, D, abs_floor, max_condition, A, w, -1, -1, NULL);
  free(A);
  free(w);
  return n;
}

double gh_gmm_ml_objective(const gh_gmm *g, const gh_gmm_accs *a) {
  int32_t G = g->num_gauss, D = g->dim;
  int full = g->type == GH_COV_FULL;
  int64_t S = full ? gh_packed_size(D) : D;
  double obj = 0;
  for (int32_t i = 0; i < G; ++i) {
    double occ = a->occupancy[i];
    if (occ == 0) continue; /* avoid 0 * -inf for zero-weight Gaussians */
    double o = occ * (double)g->gconsts[i];
    const double *m = a->mean_accs + (int64_t)i * D;
    const float *mi = g->means_invvars + (int64_t)i * D;
    for (int32_t d = 0; d < D; ++d) o += m[d] * (double)mi[d];
    const double *v = a->var_accs + (int64_t)i * S;
    const float *iv = g->inv_vars + (int64_t)i * S;
    double tr = 0;
    if (!full) {
      for (int32_t d = 0; d < D; ++d) tr += v[d] * (double)iv[d];
    } else {
      for (int32_t r = 0; r < D; ++r)
        for (int32_t c = 0; c <= r; ++c) {
          int64_t k = gh_packed_index(r, c);
          tr += (r == c ? 1.0 : 2.0) * v[k] * (double)iv[k];
        }
    }
    obj += o - 0.5 * tr;
  }
  return obj;
}

/* ---------------- M-step ---------------- */
void gh_gmm_update(gh_gmm *g, const gh_gmm_accs *a, const gh_est_opts *o,
                   gh_est_stats *st, int pdf) {
  if (a->type != g->type || a->num_gauss != g->num_gauss || a->dim != g->dim)
    gh_die("pdf %d: accumulators (%s, %d Gaussians, dim %d) do not match the model (%s, %d Gaussians, dim %d)",
           pdf, a->type == GH_COV_FULL ? "full" : "diag", a->num_gauss, a->dim,
           g->type == GH_COV_FULL ? "full" : "diag", g->num_gauss, g->dim);
  const int32_t G = g->num_gauss, D = g->dim;
  const int full = g->type == GH_COV_FULL;
  const int64_t S = full ? gh_packed_size(D) : D;
  gh_est_stats dummy;
  if (!st) { memset(&dummy, 0, sizeof dummy); st = &dummy; }

  double occ_sum = 0;
  for (int32_t i = 0; i < G; ++i) occ_sum += a->occupancy[i];
  if (!(occ_sum > 0)) { st->num_pdfs_no_data++; return; }

  uint32_t flags = a->flags ? a->flags : 7u;
  /* Kaldi AugmentFlags: variances imply means imply weights. */
  if (flags & 2u) flags |= 1u;
  if (flags & 1u) flags |= 4u;
  const int upd_w = (flags & 4u) != 0, upd_m = (flags & 1u) != 0, upd_v = (flags & 2u) != 0;
  const double min_occ = o->min_gaussian_occupancy >= 0 ? o->min_gaussian_occupancy : (full ? 100.0 : 10.0);
  const double min_var = o->variance_floor >= 0 ? o->variance_floor : o->min_variance;

  double obj_old = gh_gmm_ml_objective(g, a);

  double *w = gh_malloc(sizeof(double) * G);
  double *mu = gh_malloc(sizeof(double) * G * D);
  double *cov = gh_malloc(sizeof(double) * G * S);
  gh_gmm_get_moments(g, w, mu, cov);

  /* Diagonal floor vector (Kaldi variance_floor_vector analogue). */
  double *vfloor = gh_malloc(sizeof(double) * D);
  for (int32_t d = 0; d < D; ++d) vfloor[d] = min_var;
  if (!full && o->rel_variance_floor > 0) {
    for (int32_t d = 0; d < D; ++d) {
      double m1 = 0, m2 = 0;
      for (int32_t i = 0; i < G; ++i) {
        m1 += a->mean_accs[(int64_t)i * D + d];
        m2 += a->var_accs[(int64_t)i * D + d];
      }
      m1 /= occ_sum; m2 /= occ_sum;
      double f = o->rel_variance_floor * (m2 - m1 * m1);
      if (f > vfloor[d]) vfloor[d] = f;
    }
  }

  /* Two passes: the Gaussians' updates, independent of each other (in
   * parallel for large full-covariance pdfs: the eigenvalue floors' dsyev
   * dominate the host M-step; each Gaussian's arithmetic is the same on any
   * thread), then in Gaussian order the decisions that depend on order
   * (which Gaussians are removed), the counts and the log lines. */
  char *upd = gh_calloc(G, 1);
  int *nfl = gh_calloc(G, sizeof(int));
  double *conds = gh_calloc(G, sizeof(double));
  const int shrinking = full && o->shrink && o->shrink->method != GH_SHRINK_NONE; /* o->shrink_stats: shared */
#pragma omp parallel if (full && !shrinking && G >= 32 && D >= 16)
  {
    double *A = full ? gh_malloc(sizeof(double) * D * D) : NULL;
    double *ev = gh_malloc(sizeof(double) * D);
    double *mnew = gh_malloc(sizeof(double) * D);
    double *vnew = gh_malloc(sizeof(double) * S);
#pragma omp for schedule(dynamic, 4)
    for (int32_t i = 0; i < G; ++i) {
      const double occ = a->occupancy[i];
      const double prob = occ_sum != 0 ? occ / occ_sum : 1.0 / G;
      if (!(occ > min_occ && prob > o->min_gaussian_weight)) continue;
      upd[i] = 1;
      if (upd_w) w[i] = prob;
      const double *macc = a->mean_accs + (int64_t)i * D;
      const double *vacc = a->var_accs + (int64_t)i * S;
      double *mi = mu + (int64_t)i * D, *ci = cov + (int64_t)i * S;
      for (int32_t d = 0; d < D; ++d) mnew[d] = macc[d] / occ;
      if (upd_v) {
        for (int64_t k = 0; k < S; ++k) vnew[k] = vacc[k] / occ;
        /* subtract squared (new) means */
        if (!full) {
          for (int32_t d = 0; d < D; ++d) vnew[d] -= mnew[d] * mnew[d];
        } else {
          for (int32_t r = 0; r < D; ++r)
            for (int32_t c = 0; c <= r; ++c) vnew[gh_packed_index(r, c)] -= mnew[r] * mnew[c];
        }
        if (!upd_m) { /* variances only: add (old - new) mean difference */
          if (!full) {
            for (int32_t d = 0; d < D; ++d) vnew[d] += (mi[d] - mnew[d]) * (mi[d] - mnew[d]);
          } else {
            for (int32_t r = 0; r < D; ++r)
              for (int32_t c = 0; c <= r; ++c)
                vnew[gh_packed_index(r, c)] += (mi[r] - mnew[r]) * (mi[c] - mnew[c]);
          }
        }
        int floored = 0;
        if (!full) {
          for (int32_t d = 0; d < D; ++d)
            if (vnew[d] < vfloor[d]) { vnew[d] = vfloor[d]; ++floored; }
        } else {
          if (shrinking) { /* lib/gmm/shrink.h */
            gh_shrink_stats dummy_sh;
            if (!o->shrink_stats) gh_shrink_stats_init(&dummy_sh);
            gh_shrink_gaussian(o->shrink, a, i, mnew, vnew, o->shrink_stats ? o->shrink_stats : &dummy_sh);
          }
          floored = floor_eigenvalues(vnew, D, min_var, o->max_condition, A, ev, pdf, i, &conds[i]);
        }
        nfl[i] = floored;
        memcpy(ci, vnew, sizeof(double) * S);
      }
      if (upd_m) memcpy(mi, mnew, sizeof(double) * D);
    }
    free(A); free(ev); free(mnew); free(vnew);
  }
  char *removed = gh_calloc(G, 1);
  int num_removed = 0, tot_floored = 0, gauss_floored = 0;
  for (int32_t i = 0; i < G; ++i) {
    if (upd[i]) {
      if (nfl[i] && full) {
        st->num_eig_floored += nfl[i];
        if (!(conds[i] <= st->worst_condition)) st->worst_condition = conds[i];
      }
      if (nfl[i]) { tot_floored += nfl[i]; ++gauss_floored; }
      continue;
    }
    /* insufficient occupancy */
    const double occ = a->occupancy[i];
    const double prob = occ_sum != 0 ? occ / occ_sum : 1.0 / G;
    st->num_not_updated++;
    if (o->remove_low_count_gaussians && num_removed < G - 1) {
      gh_vlog(1, "pdf %d: too little data - removing Gaussian %d (weight %f, occupation count %f, vector size %d)",
              pdf, i, prob, occ, D);
      removed[i] = 1;
      ++num_removed;
    } else {
      gh_vlog(1, "pdf %d: Gaussian %d has too little data but is not removed (%s): occ = %g, weight = %g",
              pdf, i, o->remove_low_count_gaussians ? "it is the last Gaussian" : "remove-low-count-gaussians=false",
              occ, prob);
      if (upd_w) w[i] = fmax(prob, o->min_gaussian_weight);
    }
  }
  free(upd); free(nfl); free(conds);

  if (gh_gmm_set_moments(g, w, mu, cov) != 0)
    gh_die("pdf %d: re-estimated covariance is not usable: %s (raise --min-variance)", pdf, gh_last_error());
  double obj_new = gh_gmm_ml_objective(g, a);
  st->objf_change += obj_new - obj_old;
  st->count += occ_sum;

  if (num_removed > 0) {
    int32_t K = G - num_removed, k = 0;
    double wsum = 0;
    for (int32_t i = 0; i < G; ++i) {
      if (removed[i]) continue;
      w[k] = w[i];
      memmove(mu + (int64_t)k * D, mu + (int64_t)i * D, sizeof(double) * D);
      memmove(cov + (int64_t)k * S, cov + (int64_t)i * S, sizeof(double) * S);
      wsum += w[k];
      ++k;
    }
    for (int32_t i = 0; i < K; ++i) w[i] /= wsum;
    gh_covtype type = g->type;
    gh_gmm_free(g);
    gh_gmm_init(g, type, K, D);
    if (gh_gmm_set_moments(g, w, mu, cov) != 0)
      gh_die("pdf %d: covariance not usable after removing Gaussians: %s", pdf, gh_last_error());
    st->num_removed += num_removed;
  }
  st->num_floored += tot_floored;
  st->num_gauss_floored += gauss_floored;
  st->max_condition = o->max_condition;
  if (tot_floored) gh_vlog(1, "pdf %d: %d variances floored in %d Gaussians", pdf, tot_floored, gauss_floored);

  free(w); free(mu); free(cov); free(vfloor); free(removed);
}

/* *dst += src: counts and sums added, the worst condition the larger, the
 * max_condition in force src's when set. */
static void est_stats_add(gh_est_stats *dst, const gh_est_stats *src) {
  dst->objf_change += src->objf_change;
  dst->count += src->count;
  dst->num_removed += src->num_removed;
  dst->num_floored += src->num_floored;
  dst->num_gauss_floored += src->num_gauss_floored;
  dst->num_eig_floored += src->num_eig_floored;
  if (src->worst_condition > dst->worst_condition) dst->worst_condition = src->worst_condition;
  if (src->max_condition != 0) dst->max_condition = src->max_condition;
  dst->num_not_updated += src->num_not_updated;
  dst->num_pdfs_no_data += src->num_pdfs_no_data;
}

void gh_gmm_set_update(gh_gmm_set *model, const gh_accs_set *accs,
                       const gh_est_opts *o, gh_est_stats *st) {
  if (accs->num_pdfs != model->num_pdfs)
    gh_die("accumulators have %d pdfs but the model has %d", accs->num_pdfs, model->num_pdfs);
  for (int32_t p = 0; p < model->num_pdfs; ++p)
    if (model->pdfs[p].type == GH_COV_FULL) { gh_max_condition_check(o->max_condition, "--max-condition"); break; }
  /* The pdfs are independent: with many of them (HMM-GMMs) they are
   * updated in parallel, each into its own counts, which are then added in
   * pdf order -- the same bytes as the serial loop.  A pdf of many Gaussians
   * (a UBM) parallelises inside gh_gmm_update instead; shrinkage statistics
   * (o->shrink_stats) are shared, so that case stays serial. */
  const int32_t P = model->num_pdfs;
  int32_t maxG = 0;
  for (int32_t p = 0; p < P; ++p)
    if (model->pdfs[p].num_gauss > maxG) maxG = model->pdfs[p].num_gauss;
  const int shrinking = o->shrink && o->shrink->method != GH_SHRINK_NONE;
#ifdef _OPENMP
  const int nth = omp_get_max_threads();
#else
  const int nth = 1;
#endif
  const int by_pdf = !shrinking && P > 1 && nth > 1 && (P >= 2 * nth || maxG < 32);
  gh_est_stats *ps = gh_calloc((size_t)(P ? P : 1), sizeof *ps);
#pragma omp parallel for schedule(dynamic, 1) if (by_pdf)
  for (int32_t p = 0; p < P; ++p) gh_gmm_update(&model->pdfs[p], &accs->pdfs[p], o, &ps[p], p);
  gh_est_stats local;
  memset(&local, 0, sizeof local);
  for (int32_t p = 0; p < P; ++p) est_stats_add(&local, &ps[p]);
  free(ps);
  gh_est_stats_finish(&local, P, st);
}

void gh_est_stats_finish(const gh_est_stats *local, int32_t num_pdfs, gh_est_stats *st) {
  if (local->num_pdfs_no_data)
    gh_warn("%d of %d pdfs had no data: their parameters were not changed", local->num_pdfs_no_data, num_pdfs);
  if (local->num_removed)
    gh_warn("removed %d Gaussians with too little data (occupancy or weight below the minimum)", local->num_removed);
  if (local->num_not_updated > local->num_removed)
    gh_warn("%d Gaussians had too little data and were not updated", local->num_not_updated - local->num_removed);
  if (local->num_floored) {
    /* How many Gaussians, how ill-conditioned, and which option: a LOG line,
     * not a warning.  The floors are part of Kaldi's estimation (its
     * MleDiagGmmUpdate / MleFullGmmUpdate floor at these same defaults, and
     * Kaldi's sid recipes floor in every pass); the model they give is inside
     * the numerical contract (doc/reliability.md: condition number <= 1e4).
     * Settings outside it are warned about where they are given
     * (gh_max_condition_check: --max-condition above 1e4).  Matching
     * scikit-learn's regularisation (reg_covar=1e-6): doc/gmm-init.md. */
    char in_gauss[64] = "";
    if (local->num_gauss_floored) snprintf(in_gauss, sizeof in_gauss, " in %d Gaussians", local->num_gauss_floored);
    int n_eig = local->num_eig_floored, n_var = local->num_floored - n_eig;
    if (n_eig > 0)
      gh_log("%d covariance eigenvalues floored%s: worst condition number %.3g before the floor "
             "(--max-condition=%g floors eigenvalues below the largest / max-condition, and below "
             "--min-variance)", n_eig, in_gauss, local->worst_condition, local->max_condition);
    if (n_var > 0 && local->num_gauss_floored == 0) /* a device M-step: counts only */
      gh_log("%d variances (or eigenvalues) floored (--min-variance, --variance-floor; full covariances: "
             "--max-condition)", n_var);
    else if (n_var > 0)
      gh_log("%d variances floored%s (--min-variance, --variance-floor, --rel-variance-floor)", n_var, in_gauss);
  }
  if (st) est_stats_add(st, local);
}

/* ---------------- splitting / mix-up ---------------- */
/* Max-heap of Gaussian indices by weight w[], ties to the lower index. */
static int split_before(const double *w, int32_t a, int32_t b) { return w[a] > w[b] || (w[a] == w[b] && a < b); }
static void split_heap_push(int32_t *h, int32_t *n, const double *w, int32_t v) {
  int32_t i = (*n)++;
  h[i] = v;
  while (i > 0 && split_before(w, h[i], h[(i - 1) / 2])) {
    int32_t p = (i - 1) / 2, t = h[p]; h[p] = h[i]; h[i] = t; i = p;
  }
}
static int32_t split_heap_pop(int32_t *h, int32_t *n, const double *w) {
  int32_t top = h[0], i = 0;
  h[0] = h[--(*n)];
  for (;;) {
    int32_t l = 2 * i + 1, r = l + 1, b = i;
    if (l < *n && split_before(w, h[l], h[b])) b = l;
    if (r < *n && split_before(w, h[r], h[b])) b = r;
    if (b == i) break;
    int32_t t = h[b]; h[b] = h[i]; h[i] = t; i = b;
  }
  return top;
}

void gh_gmm_split(gh_gmm *g, int32_t target, double perturb_factor, gh_rng *rng) {
  int32_t G = g->num_gauss, D = g->dim;
  if (target < G || G == 0) gh_die("cannot split a GMM from %d to %d Gaussians", G, target);
  if (target == G) return;
  const int full = g->type == GH_COV_FULL;
  const int64_t S = full ? gh_packed_size(D) : D;
  double *w = gh_malloc(sizeof(double) * target);
  double *mu = gh_malloc(sizeof(double) * target * D);
  double *cov = gh_malloc(sizeof(double) * target * S);
  gh_gmm_get_moments(g, w, mu, cov);
  double *r = gh_malloc(sizeof(double) * D), *shift = gh_malloc(sizeof(double) * D);
  double *L = full ? gh_malloc(sizeof(double) * D * D) : NULL;
  /* The heaviest Gaussian (lowest index among equals) is split next: a
   * max-heap of indices makes this O(target log target), not quadratic. */
  int32_t *heap = gh_malloc(sizeof(int32_t) * target), hn = 0;
  for (int32_t i = 0; i < G; ++i) split_heap_push(heap, &hn, w, i);
  for (int32_t cur = G; cur < target; ++cur) {
    int32_t mx = split_heap_pop(heap, &hn, w);
    w[mx] /= 2;
    w[cur] = w[mx];
    split_heap_push(heap, &hn, w, mx);
    split_heap_push(heap, &hn, w, cur);
    for (int32_t d = 0; d < D; ++d) r[d] = gh_rng_gauss(rng);
    const double *c = cov + (int64_t)mx * S;
    if (!full) {
      for (int32_t d = 0; d < D; ++d) shift[d] = perturb_factor * r[d] * sqrt(c[d]);
    } else {
      memset(L, 0, sizeof(double) * D * D);
      for (int32_t i = 0; i < D; ++i)
        for (int32_t j = 0; j <= i; ++j) L[i * D + j] = c[gh_packed_index(i, j)];
      if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', D, L, D) != 0)
        gh_die("split: covariance of Gaussian %d is not positive definite", mx);
      for (int32_t i = 0; i < D; ++i) {
        double s = 0;
        for (int32_t j = 0; j <= i; ++j) s += L[i * D + j] * r[j];
        shift[i] = perturb_factor * s;
      }
    }
    memcpy(cov + (int64_t)cur * S, c, sizeof(double) * S);
    double *mn = mu + (int64_t)cur * D, *mo = mu + (int64_t)mx * D;
    for (int32_t d = 0; d < D; ++d) { mn[d] = mo[d] + shift[d]; mo[d] -= shift[d]; }
  }
  gh_covtype type = g->type;
  gh_gmm_free(g);
  gh_gmm_init(g, type, target, D);
  if (gh_gmm_set_moments(g, w, mu, cov) != 0) gh_die("split: %s", gh_last_error());
  free(w); free(mu); free(cov); free(r); free(shift); free(L); free(heap);
}

/* Max-heap of (priority, pdf) with ties to the lower pdf index. */
typedef struct { double occ; int32_t pdf, n; } split_item;
static int item_before(const split_item *a, const split_item *b) {
  return a->occ > b->occ || (a->occ == b->occ && a->pdf < b->pdf);
}
static void heap_down(split_item *h, int32_t n, int32_t i) {
  for (;;) {
    int32_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && item_before(&h[l], &h[m])) m = l;
    if (r < n && item_before(&h[r], &h[m])) m = r;
    if (m == i) return;
    split_item t = h[i]; h[i] = h[m]; h[m] = t;
    i = m;
  }
}

int64_t gh_split_targets(const double *occs, int32_t P, int64_t target_total,
                         double power, double min_count, int32_t *targets) {
  split_item *h = gh_malloc(sizeof(split_item) * (P > 0 ? P : 1));
  for (int32_t p = 0; p < P; ++p) {
    double o = occs ? occs[p] : 1.0;
    h[p].occ = pow(o > 0 ? o : 0.0, power);
    if (!(o > 0)) h[p].occ = 0;
    h[p].pdf = p;
    h[p].n = 1;
  }
  for (int32_t i = P / 2 - 1; i >= 0; --i) heap_down(h, P, i);
  for (int64_t num = P; num < target_total && P > 0; ++num) {
    if (h[0].occ == 0) {
      gh_warn("could not split up to %lld Gaussians due to min-count = %g (or no counts at all)",
              (long long)target_total, min_count);
      break;
    }
    double orig = occs ? occs[h[0].pdf] : 1.0;
    if (occs && (h[0].n + 1) * min_count >= orig) {
      h[0].occ = 0; /* min-count active: no more splitting of this pdf */
    } else {
      h[0].n++;
      h[0].occ = pow(orig, power) / h[0].n;
    }
    heap_down(h, P, 0);
  }
  int64_t total = 0;
  for (int32_t i = 0; i < P; ++i) { targets[h[i].pdf] = h[i].n; total += h[i].n; }
  free(h);
  return total;
}

int64_t gh_gmm_set_mixup(gh_gmm_set *s, int64_t target_total, const double *occs,
                         double power, double min_count, double perturb_factor, gh_rng *rng) {
  int32_t *targets = gh_malloc(sizeof(int32_t) * (s->num_pdfs > 0 ? s->num_pdfs : 1));
  gh_split_targets(occs, s->num_pdfs, target_total, power, min_count, targets);
  int64_t total = 0;
  for (int32_t p = 0; p < s->num_pdfs; ++p) {
    if (s->pdfs[p].num_gauss < targets[p]) gh_gmm_split(&s->pdfs[p], targets[p], perturb_factor, rng);
    total += s->pdfs[p].num_gauss;
  }
  free(targets);
  return total;
}

void gh_accs_pdf_occs(const gh_accs_set *a, double *occs) {
  for (int32_t p = 0; p < a->num_pdfs; ++p) {
    double s = 0;
    for (int32_t i = 0; i < a->pdfs[p].num_gauss; ++i) s += a->pdfs[p].occupancy[i];
    occs[p] = s;
  }
}
