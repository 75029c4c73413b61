/* cluster.h -- Kaldi's clustering algorithms over GaussClusterable
 * statistics (tree/cluster-utils.{h,cc}), with Kaldi's float arithmetic,
 * visiting order and tie-breaking, so that tree building and phone
 * clustering give Kaldi's answers:
 *   - bottom-up (agglomerative) clustering, plain and "compartmentalized"
 *     (no merges across compartments), with Kaldi's priority queues
 *     (libstdc++'s heap algorithms, so equal distances pop in Kaldi's order);
 *   - RefineClusters (moving points between clusters while the objective
 *     improves), k-means (ClusterKMeans: pseudo-random initial assignment
 *     from rand(), several tries) and top-down binary tree clustering
 *     (TreeCluster).
 * Points are arrays of gh_gclust pointers; NULL entries are allowed where
 * Kaldi allows them (sums, objectives).  Objectives are natural-log
 * likelihoods summed over frames (float, as Kaldi's BaseFloat).
 *
 * Random numbers: gh_cluster_kmeans and gh_tree_cluster draw with the C
 * library's rand(), as Kaldi's Rand() does; with glibc and srand(1) (the
 * state of a fresh process) the draws, and so the clusters, are Kaldi's.
 */
#ifndef GH_CLUSTER_H
#define GH_CLUSTER_H
#include <stdint.h>
#include "tree/clusterable.h"

/* Kaldi SumClusterableObjf / SumClusterableNormalizer (float sums in order,
 * NULL entries skipped). */
float gh_sum_objf(gh_gclust *const *v, int32_t n);
float gh_sum_count(gh_gclust *const *v, int32_t n);
/* Kaldi SumClusterable: a copy of the first non-NULL entry plus the others
 * in order; NULL if all are NULL. */
gh_gclust *gh_sum_clusterable(gh_gclust *const *v, int32_t n);

/* Kaldi AddToClusters: clusters[assignments[i]] += stats[i] (created as a
 * copy where NULL); clusters has room for max(assignments) + 1. */
void gh_add_to_clusters(gh_gclust *const *stats, int32_t n, const int32_t *assignments, gh_gclust **clusters);
/* Kaldi AddToClustersOptimized: as gh_add_to_clusters, but the cluster that
 * receives more than half of the non-NULL stats is computed as total minus
 * the others (Kaldi's rounding).  total = the sum of stats. */
void gh_add_to_clusters_optimized(gh_gclust *const *stats, int32_t n, const int32_t *assignments,
                                  const gh_gclust *total, gh_gclust **clusters);

/* Kaldi ClusterBottomUp: merges the closest pair (smallest Distance) while
 * it is <= thresh and more than min_clust clusters remain.  points[n] non-NULL
 * (n < 65535).  assignments[n] receives cluster indices 0.. (contiguous, in
 * order of first surviving cluster).  Returns the objective change (<= 0). */
float gh_cluster_bottom_up(gh_gclust *const *points, int32_t n, float thresh, int32_t min_clust,
                           int32_t *assignments);
/* Kaldi ClusterBottomUpCompartmentalized: points[c][npoints[c]] for
 * ncomp compartments, never merged across; merges while the total number of
 * clusters exceeds min_clust (>= the number of non-empty compartments) and
 * the distance is < thresh.  assignments[c][npoints[c]] as above per
 * compartment.  Returns the objective change. */
float gh_cluster_bottom_up_comp(gh_gclust *const *const *points, const int32_t *npoints, int32_t ncomp, float thresh,
                                int32_t min_clust, int32_t **assignments);

/* Kaldi RefineClusters: clusters[nclust] (non-NULL, the sums of the points
 * assigned to them) and assignments[n] are updated in place.  Returns the
 * objective improvement (>= 0).  top_n >= 2 (capped at nclust); the
 * candidate clusters of a point are its top_n - 1 closest, chosen and
 * ordered by a copy of libstdc++'s std::nth_element as in Kaldi
 * (test/order/: the same orders as libstdc++'s own). */
float gh_refine_clusters(gh_gclust *const *points, int32_t n, gh_gclust **clusters, int32_t nclust,
                         int32_t *assignments, int32_t num_iters, int32_t top_n);

typedef struct {
  int32_t refine_iters, refine_top_n;  /* Kaldi RefineClustersOptions: 100, 5 */
  int32_t num_iters, num_tries;        /* Kaldi ClusterKMeansOptions: 20, 2 */
} gh_kmeans_opts;
void gh_kmeans_opts_default(gh_kmeans_opts *o);

/* Kaldi ClusterKMeans: num_clust <= n clusters of points[n] (non-NULL).
 * clusters_out (may be NULL) receives [num_clust] new sums; assignments[n]
 * the cluster of each point.  Returns the improvement over one cluster. */
float gh_cluster_kmeans(gh_gclust *const *points, int32_t n, int32_t num_clust, gh_gclust **clusters_out,
                        int32_t *assignments, const gh_kmeans_opts *o);

/* Kaldi TreeCluster (branch factor 2, threshold 0): top-down binary
 * splitting by k-means, always splitting the leaf of largest improvement,
 * until max_clust leaves.  assignments[n]: leaf of each point;
 * *clust_assignments (malloc'd, [*num_nodes]): parent of each node (leaves
 * 0 .. *num_leaves-1 first, then the inner nodes with the root last, its
 * own parent).  Returns the improvement. */
float gh_tree_cluster(gh_gclust *const *points, int32_t n, int32_t max_clust, const gh_kmeans_opts *o,
                      int32_t *assignments, int32_t **clust_assignments, int32_t *num_nodes, int32_t *num_leaves);

#endif
