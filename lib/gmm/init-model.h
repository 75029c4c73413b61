/* init-model.h -- acoustic models from a decision tree and its statistics,
 * and Kaldi-exact mixing up (Kaldi gmmbin/gmm-init-model.cc InitAmGmm,
 * InitAmGmmFromOld, GetOccs; gmm/am-diag-gmm.cc SplitByCount with
 * DiagGmm::Split, MergeByCount with DiagGmm::Merge, and model-common.cc
 * GetSplitTargets).
 *
 * Arithmetic follows Kaldi's: statistics summed in float64 in the order of
 * the treeacc file, the Gaussian formed in float (Kaldi's BaseFloat), gconsts
 * as lib/gmm/kaldi-gconst.c; on Kaldi's inputs the models are byte-identical
 * to Kaldi's.
 */
#ifndef GH_INIT_MODEL_H
#define GH_INIT_MODEL_H
#include <stdint.h>
#include "gmm/gmm.h"
#include "hmm/transition.h"
#include "tree/context-dep.h"
#include "tree/tree-stats.h"

/* Kaldi DiagGmm(GaussClusterable, var_floor): one diagonal Gaussian, weight
 * 1, mean Σx / count, variance Σx² / count - mean², floored at var_floor,
 * in float.  g is overwritten.  Dies (naming "what") if count <= 0. */
void gh_gmm_from_gclust(gh_gmm *g, const gh_gclust *c, float var_floor, const char *what);

/* Kaldi InitAmGmm: one Gaussian per pdf of ctx (tm: the transition model
 * built from ctx and the topology, for the phone lists of the warnings) from
 * the sum of the statistics that the tree maps to the pdf; a pdf without
 * statistics gets the sum of all statistics (with Kaldi's warning "Tree has
 * pdf-id P with no stats; corresponding phone list: ..."), and a pdf with a
 * count below 100 is warned about.  Fills set (dim from the stats, form AM,
 * trans NULL: the caller attaches tm).  Dies (naming stats_name) if an event
 * of the statistics has no pdf in the tree (statistics of another tree's
 * context width or lang) or there are no statistics. */
void gh_init_am_from_tree_stats(const gh_tree_stats *st, const gh_ctx_dep *ctx, const gh_transition_model *tm,
                                float var_floor, const char *stats_name, gh_gmm_set *set);

/* Kaldi InitAmGmmFromOld: each pdf of ctx copies the pdf of the old model
 * (old_ctx, old_set) that shares the largest count of the statistics (events
 * narrowed to the old tree's context window; ties: the lowest old pdf), or
 * a Gaussian of all the statistics if none.  Dies if the old tree has a
 * wider context than ctx, or an event has no pdf in either tree. */
void gh_init_am_from_old(const gh_tree_stats *st, const gh_ctx_dep *ctx, const gh_ctx_dep *old_ctx,
                         const gh_gmm_set *old_set, float var_floor, const char *stats_name, gh_gmm_set *set);

/* Kaldi GetOccs: per pdf of ctx the total count of its statistics
 * (summed in float, as Kaldi), into occs[gh_ctx_dep_num_pdfs(ctx)]. */
void gh_tree_stats_pdf_occs(const gh_tree_stats *st, const gh_ctx_dep *ctx, const char *stats_name, float *occs);

/* Kaldi AmDiagGmm::SplitByCount with Kaldi's random numbers: per-pdf
 * targets as GetSplitTargets (occs[num_pdfs] in float, priority
 * occ^power / n, min_count), then DiagGmm::Split of every pdf below its
 * target (the heaviest Gaussian first, the lowest index among equals; means
 * moved by -/+ perturb_factor * N(0,1) * inv_var^(1/2) in means_invvars
 * space) with Kaldi's RandGauss on the C library's rand() (the caller seeds
 * it: Kaldi's programs never do, so srand(1) reproduces them).  Diagonal
 * models only (dies otherwise).  Returns the new total number of
 * Gaussians. */
int64_t gh_gmm_set_split_by_count_kaldi(gh_gmm_set *s, const float *occs, int32_t target, float perturb_factor,
                                        float power, float min_count);

/* Kaldi AmDiagGmm::MergeByCount: per-pdf targets as for mixing up
 * (GetSplitTargets: occs[num_pdfs] in float, occ^power, min_count; at
 * least 1), then DiagGmm::Merge of every pdf above its target: Kaldi's
 * greedy pairwise merging, each step the pair (i, j) whose merge loses the
 * least likelihood, delta = (w_i + w_j) * 0.5 log det(merged inverse
 * covariance) - w_i * 0.5 log det(inv cov_i) - w_j * 0.5 log det(inv cov_j)
 * (natural log, per unit of the pdf's weight; pairs scanned with i
 * ascending, j < i ascending, the first of equal deltas wins); the merged
 * Gaussian's weight, mean and second moment are the weighted sums, kept at
 * index i, and the survivors keep their order; a target of 1 gives the
 * weighted global moments.  Float
 * arithmetic as Kaldi's (BLAS saxpy as split_diag_kaldi), gconsts as
 * lib/gmm/kaldi-gconst.c.  Diagonal models only (dies otherwise); dies
 * (naming the pdf) if no pair has a finite delta.  Returns the new total
 * number of Gaussians. */
int64_t gh_gmm_set_merge_by_count_kaldi(gh_gmm_set *s, const float *occs, int32_t target, float power,
                                        float min_count);

#endif
