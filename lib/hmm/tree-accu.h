/* tree-accu.h -- tree-building statistics from alignments (Kaldi
 * hmm/tree-accu.cc AccumulateTreeStats, acc-tree-stats): for every frame
 * the event (phone window of N = context_width phones around the central
 * position P, and the frame's pdf-class) and one GaussClusterable per
 * distinct event, accumulated in frame order so that the sums are Kaldi's
 * bit for bit.
 *
 * Event of a frame (Kaldi's rules): the alignment is split into phone
 * instances (gh_split_to_phones); for the instance at position i the window
 * holds the phones of instances i-P .. i-P+N-1 (0 beyond the utterance
 * edges); a central phone listed in ci_phones keeps only its own key P
 * (context-independent: no question can be asked about its neighbours);
 * key -1 holds the pdf-class (the self-loop pdf-class on a self-loop
 * transition, else the forward one).  Pairs sorted by key.
 */
#ifndef GH_TREE_ACCU_H
#define GH_TREE_ACCU_H
#include <stdint.h>
#include "hmm/transition.h"
#include "tree/tree-stats.h"

typedef struct {
  int32_t context_width;     /* N >= 1 (Kaldi default 3) */
  int32_t central_position;  /* 0 <= P < N (default 1) */
  float var_floor;           /* stored in each statistic (default 0.01) */
  const int32_t *ci_phones;  /* sorted, unique, > 0; may be NULL */
  int32_t num_ci_phones;
} gh_tree_accu_opts;

/* Parse Kaldi's colon-separated --ci-phones list ("1:2:3") into a sorted
 * array (*n entries, malloc'd; NULL and 0 for ""). Dies naming the option on
 * a non-integer, a repeated or a non-positive phone. */
int32_t *gh_parse_ci_phones(const char *s, int32_t *n);

/* The statistics being accumulated: events in order of first appearance,
 * found through a hash table. */
typedef struct gh_tree_accu gh_tree_accu;

/* Dies if P or N is out of range (N in [1, 100], 0 <= P < N). */
gh_tree_accu *gh_tree_accu_new(const gh_tree_accu_opts *opts, int32_t dim);
void gh_tree_accu_free(gh_tree_accu *a);

/* The events of one utterance: ev_index[n] receives, per frame, the index
 * of its event in the accumulator (new events are added with zero
 * statistics).  ali[n] must be valid transition-ids of tm
 * (gh_transition_check_alignment).  Returns 1, or 0 (nothing added) when
 * the alignment does not split into phones (Kaldi's "alignment appears to
 * be bad" case). */
int gh_tree_accu_events(gh_tree_accu *a, const gh_transition_model *tm, const int32_t *ali, int32_t n,
                        int32_t *ev_index);
/* Kaldi AccumulateTreeStats: the events of one utterance and its frames
 * feats[n x dim] (row-major float) added with weight 1, in frame order.
 * Returns as gh_tree_accu_events (0: warned, nothing added). */
int gh_tree_accu_utterance(gh_tree_accu *a, const gh_transition_model *tm, const int32_t *ali, int32_t n,
                           const float *feats, int32_t dim);
/* Number of distinct events so far. */
int32_t gh_tree_accu_num_events(const gh_tree_accu *a);
/* The statistic of event index i (to add frames to directly). */
gh_gclust *gh_tree_accu_stats(gh_tree_accu *a, int32_t i);

/* Moves the statistics into *out, sorted by event (Kaldi's std::map order),
 * and empties the accumulator. */
void gh_tree_accu_take(gh_tree_accu *a, gh_tree_stats *out);

#endif
