/* event-map.h -- Kaldi's EventMap (tree/event-map.h): the decision tree that
 * maps an "event" (a set of key -> value pairs: phone context positions and
 * the pdf-class) to an answer (a pdf-id).
 *
 * Keys: 0 .. N-1 are phone positions in the context window (value = phone id,
 * 0 = no phone, at an utterance edge); key -1 (GH_KEY_PDF_CLASS, Kaldi
 * kPdfClass) is the pdf-class of the HMM state.
 *
 * Three node kinds, as in Kaldi:
 *   constant  answer                         "CE <answer>"
 *   table     key, table[value] -> child      "TE <key> <size> ( child... )"
 *             (a child may be absent: NULL)
 *   split     key, sorted yes-set, yes, no    "SE <key> [ v... ] { yes no }"
 * On disk (Kaldi EventMap::Write): tokens followed by a space, integers as
 * Kaldi basic types (binary: size byte 4 + int32 LE; the table size is a
 * uint32, size byte 0xFC), the yes-set as a Kaldi integer vector; an absent
 * table child is the token "NULL".  Text output puts a newline after ")" and
 * "}" exactly as Kaldi does, so text and binary round trips are byte-identical.
 */
#ifndef GH_EVENT_MAP_H
#define GH_EVENT_MAP_H
#include <stdint.h>
#include "io/kaldi-io.h"

#define GH_KEY_PDF_CLASS (-1)

typedef enum { GH_EM_CONST = 0, GH_EM_TABLE = 1, GH_EM_SPLIT = 2 } gh_em_kind;

typedef struct gh_event_map {
  gh_em_kind kind;
  int32_t key;                    /* table / split: the key looked up */
  int32_t answer;                 /* constant: the answer (pdf-id) */
  int32_t table_size;             /* table: number of slots */
  struct gh_event_map **table;    /* table: [table_size], entries may be NULL */
  int32_t num_yes;                /* split: size of the yes-set */
  int32_t *yes_set;               /* split: [num_yes], sorted, unique */
  struct gh_event_map *yes, *no;  /* split: both non-NULL */
} gh_event_map;

/* One (key, value) pair of an event; an event is an array sorted by key
 * with unique keys. */
typedef struct { int32_t key, value; } gh_event_pair;

/* Constructors (the node takes ownership of its children). */
gh_event_map *gh_event_map_const(int32_t answer);
gh_event_map *gh_event_map_table(int32_t key, int32_t size, gh_event_map **children /* [size], copied */);
gh_event_map *gh_event_map_split(int32_t key, int32_t num_yes, const int32_t *yes_set, gh_event_map *yes,
                                 gh_event_map *no);
void gh_event_map_free(gh_event_map *m);
gh_event_map *gh_event_map_copy(const gh_event_map *m);

/* Kaldi EventMap::Map: follows the event through the tree.  Returns 1 and sets
 * *answer, or 0 if a key the tree asks is missing from the event, or a table
 * has no child for the value.  ev[n] sorted by key. */
int gh_event_map_map(const gh_event_map *m, const gh_event_pair *ev, int32_t n, int32_t *answer);
/* Kaldi EventMap::MultiMap: every answer reachable when keys missing from the
 * event may take any value.  Appends to (*out)[*n] (realloc'd, *cap its
 * capacity); duplicates possible (callers sort and unique). */
void gh_event_map_multimap(const gh_event_map *m, const gh_event_pair *ev, int32_t n, int32_t **out, int32_t *num,
                           int32_t *cap);
/* Largest answer in the tree (-1 if none): Kaldi MaxResult. */
int32_t gh_event_map_max_answer(const gh_event_map *m);

/* Read one map (Kaldi EventMap::Read; "NULL" gives NULL).  Dies via
 * gh_istream_fail (file, offset, what was wrong) on malformed input or a
 * nesting deeper than 10000. */
gh_event_map *gh_event_map_read(gh_istream *in, int binary);
/* Kaldi EventMap::Write; m may be NULL (writes "NULL"). */
void gh_event_map_write(gh_ostream *out, int binary, const gh_event_map *m);

#endif
