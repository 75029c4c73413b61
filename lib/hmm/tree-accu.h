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
 * transition, else the forward one).  Pairs sorted by key.  With a phone map
 * (Kaldi's --phone-map) every phone of the window is mapped first (0, the
 * utterance edge, stays 0), and ci_phones are phones after the mapping.
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
  const int32_t *phone_map;  /* [phone_map_size] new phone or -1 (gh_read_phone_map); NULL: none */
  int32_t phone_map_size;
  const char *phone_map_name; /* for messages */
} gh_tree_accu_opts;

/* Kaldi ReadPhoneMap (hmm/tree-accu.cc): a text file of lines "old new"
 * (two positive integers each, every old phone once) as map[old] = new,
 * -1 for phones not listed; *size = 1 + the largest old phone.  Dies with
 * one line naming the file and the line (1-based) of a malformed line (not
 * two positive integers) or of an old phone listed twice, or if the file
 * cannot be read or has no line. */
int32_t *gh_read_phone_map(const char *rx, int32_t *size);

/* The mapped phone (Kaldi MapPhone): phone 0 and a NULL map give the phone
 * itself; -1 if the map has no entry for it. */
int32_t gh_map_phone(const int32_t *map, int32_t size, int32_t phone);

/* Parse Kaldi's colon-separated --ci-phones list ("1:2:3") into a sorted
 * array (*n entries, malloc'd; NULL and 0 for ""). Dies naming the option on
 * a non-integer, a repeated or a non-positive phone. */
int32_t *gh_parse_ci_phones(const char *s, int32_t *n);

/* The statistics being accumulated: events in order of first appearance,
 * found through a hash table. */
typedef struct gh_tree_accu gh_tree_accu;

/* Dies if P or N is out of range (N in [1, 100], 0 <= P < N).  The options'
 * arrays are copied (the phone map is not: it must outlive the accumulator). */
gh_tree_accu *gh_tree_accu_new(const gh_tree_accu_opts *opts, int32_t dim);
void gh_tree_accu_free(gh_tree_accu *a);

/* The events of one utterance: ev_index[n] receives, per frame, the index
 * of its event in the accumulator (new events are added with zero
 * statistics).  ali[n] must be valid transition-ids of tm
 * (gh_transition_check_alignment).  Returns 1, or 0 (nothing added) when
 * the alignment does not split into phones (Kaldi's "alignment appears to
 * be bad" case).  Dies (naming the map) if a phone has no entry in the
 * phone map (callers check first with gh_tree_accu_unmapped_phone). */
int gh_tree_accu_events(gh_tree_accu *a, const gh_transition_model *tm, const int32_t *ali, int32_t n,
                        int32_t *ev_index);
/* The first phone of alignment ali[n] that the options' phone map has no
 * entry for, or 0 if all have one (or there is no map). */
int32_t gh_tree_accu_unmapped_phone(const gh_tree_accu *a, const gh_transition_model *tm, const int32_t *ali,
                                    int32_t n);
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
