/* tree-stats.h -- Kaldi's tree-building statistics (BuildTreeStatsType,
 * tree/build-tree-utils.cc): a list of (event, GaussClusterable) pairs, one
 * per seen (phone context, pdf-class), as written by acc-tree-stats and
 * sum-tree-stats ("treeacc" files).
 *
 * An event (Kaldi EventType) is a list of (key, value) pairs sorted by key:
 * key -1 = pdf-class, keys 0 .. N-1 = phone at that context position (0 =
 * no phone: an utterance edge).  Lists are ordered as Kaldi's
 * std::map<EventType, ...> orders them (lexicographic over the pairs).
 *
 * On disk (Kaldi WriteBuildTreeStats; binary files start with "\0B"):
 *   BTS <uint32 n>  n x { EV <uint32 len> len x (<int32 key> <int32 value>)
 *                         <bool: T | F> [GCL ... if T] }
 * uint32 with size byte 0xFC in binary; bool as the single byte 'T'/'F'
 * (text: "T "); text puts a newline after each event and at the end, as
 * Kaldi does.  Binary round trips are byte-identical.
 *
 * Typical use (gmm-init-model, build-tree):
 *   gh_tree_stats s;
 *   gh_tree_stats_read("exp/tri1/treeacc", &s);
 *   for (i < s.num) ... s.items[i].ev[0 .. len), s.items[i].stats
 *   gh_tree_stats_free(&s);
 */
#ifndef GH_TREE_STATS_H
#define GH_TREE_STATS_H
#include <stdint.h>
#include "tree/clusterable.h"
#include "tree/event-map.h"

typedef struct {
  int32_t len;          /* number of (key, value) pairs */
  gh_event_pair *ev;    /* [len], sorted by key */
  gh_gclust *stats;     /* may be NULL (Kaldi allows it on disk) */
} gh_tree_stat;

typedef struct {
  int32_t num, cap;
  gh_tree_stat *items;  /* [num] */
  int32_t dim;          /* feature dimension of the statistics; -1 if none */
} gh_tree_stats;

/* Kaldi's EventType order (std::vector<pair<int,int>> operator<):
 * negative, 0, positive. */
int gh_event_compare(const gh_event_pair *a, int32_t na, const gh_event_pair *b, int32_t nb);

void gh_tree_stats_init(gh_tree_stats *s);
void gh_tree_stats_free(gh_tree_stats *s);
/* Append (a copy of ev[len]; stats is taken over, may be NULL).  Dies if
 * the statistics' dimension differs from earlier ones ("what" names the
 * source in the message: a file name). */
void gh_tree_stats_push(gh_tree_stats *s, const gh_event_pair *ev, int32_t len, gh_gclust *stats, const char *what);

/* Read a treeacc file (rxfilename: file, "-", "cmd |", .gz; binary or
 * text).  Dies with one line naming the file and byte offset on a bad
 * token, an unsorted event, or statistics of differing dimension. */
void gh_tree_stats_read(const char *rxfilename, gh_tree_stats *s);
void gh_tree_stats_read_stream(gh_istream *in, int binary, gh_tree_stats *s);
/* Write as Kaldi does (atomically; "-" = stdout). */
void gh_tree_stats_write(const char *wxfilename, int binary, const gh_tree_stats *s);
void gh_tree_stats_write_stream(gh_ostream *out, int binary, const gh_tree_stats *s);

/* Sum in Kaldi's order (sum-tree-stats, acc-tree-stats' map): sorts the
 * items by event (stable) and merges equal events, adding later statistics
 * to the first one in list order.  A NULL statistic merges as nothing. */
void gh_tree_stats_sort_merge(gh_tree_stats *s);

/* Total count over all items. */
double gh_tree_stats_total_count(const gh_tree_stats *s);

#endif
