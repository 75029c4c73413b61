/* build-tree.h -- Kaldi's decision-tree building (tree/build-tree.cc,
 * tree/build-tree-utils.cc): from tree statistics (tree-stats.h), the
 * roots file and the compiled questions (questions.h) to the EventMap of a
 * ContextDependency, and the automatic phone questions of cluster-phones.
 *
 * What is Kaldi's: the initial tree over the roots (build-tree-utils.cc), greedy
 * splitting that always splits the leaf of largest likelihood gain (ties:
 * the higher-numbered root; within a root the "yes" side on equal gains),
 * questions tried in file order and keys in increasing order (the first of
 * equal gains wins), the gains computed in float as Kaldi computes them
 * (AddToClustersOptimized's "total minus the rest"), the bottom-up
 * clustering of leaves within each root and the rounding of the leaf count
 * to a multiple of 8, leaf numbering (RenumberEventMap), and Kaldi's log
 * and warning lines.  On the fixture's statistics the trees are Kaldi's
 * byte for byte (test/bats/tree.bats).
 */
#ifndef GH_BUILD_TREE_H
#define GH_BUILD_TREE_H
#include <stdint.h>
#include "tree/event-map.h"
#include "tree/questions.h"
#include "tree/tree-stats.h"

typedef struct {
  float thresh;          /* split threshold on the likelihood gain (Kaldi 300) */
  int32_t max_leaves;    /* <= 0: no maximum */
  float cluster_thresh;  /* < 0: the smallest split gain; 0: no clustering */
  int32_t P;             /* central position */
  int round_num_leaves;  /* round the leaf count down to a multiple of 8 */
} gh_build_tree_opts;

/* Results for the tool's log (Kaldi's VLOG lines). */
typedef struct {
  int32_t root_leaves, split_leaves, num_leaves;
  float impr;                 /* total gain of the splits (natural log) */
  float normalizer, normalizer_split;  /* frames: all, split phones only */
  float objf_change_cluster;  /* objective change of clustering (<= 0) */
} gh_build_tree_info;

/* Kaldi BuildTree.  roots: the roots file; phone2num_pdf_classes indexed by
 * phone (size num_phone_slots; 0 for a phone not in the topology).  Dies
 * (one line naming "what") on a root phone not in the topology, an event
 * without the central-phone key, or an event no root covers.  Returns the
 * new EventMap (leaves 0 .. info->num_leaves-1). */
gh_event_map *gh_build_tree(const gh_questions *q, const gh_roots *roots, const int32_t *phone2num_pdf_classes,
                            int32_t num_phone_slots, const gh_tree_stats *stats, const gh_build_tree_opts *o,
                            gh_build_tree_info *info, const char *what);

/* Kaldi AutomaticallyObtainQuestions (cluster-phones --mode=questions):
 * statistics of the pdf-classes in pdf_classes[] summed per phone set, then
 * top-down binary clustering of the sets (TreeCluster, k-means with 10
 * tries); the questions are every node's phone set, root first, then the
 * input sets, duplicates and empty sets removed.  Draws with rand(). */
void gh_obtain_questions(const gh_tree_stats *stats, const gh_intlists *phone_sets, const int32_t *pdf_classes,
                         int32_t num_pdf_classes, int32_t P, gh_intlists *questions_out);
/* Kaldi KMeansClusterPhones (cluster-phones --mode=k-means): num_classes
 * sets by k-means; logs the objective change. */
void gh_kmeans_cluster_phones(const gh_tree_stats *stats, const gh_intlists *phone_sets, const int32_t *pdf_classes,
                              int32_t num_pdf_classes, int32_t P, int32_t num_classes, gh_intlists *sets_out);

/* Kaldi SplitStatsByMap + SumStatsVec (gmm-init-model's per-pdf
 * statistics): sums[a] is the sum, in list order, of the statistics whose
 * event the map sends to answer a (NULL where none does), for a in
 * [0, *n), *n = 1 + the largest answer reached.  Dies naming the event if
 * one does not map.  Free with gh_tree_stats_sums_free. */
gh_gclust **gh_tree_stats_sum_by_map(const gh_tree_stats *stats, const gh_event_map *map, int32_t *n);
void gh_tree_stats_sums_free(gh_gclust **sums, int32_t n);

/* Kaldi ObjfGivenMap: the total objective of the statistics summed per leaf
 * of map (float).  Dies if an event does not map. */
float gh_objf_given_map(const gh_tree_stats *stats, const gh_event_map *map);

#endif
