/* questions.h -- the phone-set text files of tree building and Kaldi's
 * compiled questions (tree/build-tree-questions.{h,cc}, the .qst file).
 *
 * Phone-set lists (sets.int, questions.int; Kaldi
 * ReadIntegerVectorVectorSimple / WriteIntegerVectorVectorSimple): one list
 * per line, integers separated by spaces; written as "1 2 3\n".
 *
 * Roots file (roots.int; Kaldi ReadRootsFile): per line
 * "shared|not-shared split|not-split <phones...>".
 *
 * Compiled questions (Kaldi Questions::Write), keys in increasing order:
 *   <Questions> { <Key> <int32 key> <QuestionsForKey> <int32 n> n x <int32
 *   vector: a sorted phone (or pdf-class) set> <RefineClustersOptions>
 *   <int32 num_iters> <int32 top_n> </RefineClustersOptions>
 *   </QuestionsForKey> } </Questions>
 * Binary files start with "\0B"; round trips are byte-identical.
 */
#ifndef GH_QUESTIONS_H
#define GH_QUESTIONS_H
#include <stdint.h>
#include "io/kaldi-io.h"

typedef struct {
  int32_t len;
  int32_t *v;  /* [len] */
} gh_intlist;

typedef struct {
  int32_t n;
  gh_intlist *lists;  /* [n] */
} gh_intlists;

/* Read a text file of integer lists (rxfilename: file, "-", "cmd |").  An
 * empty line gives an empty list.  Dies naming the file and line on a token
 * that is not an integer. */
void gh_intlists_read(const char *rxfilename, gh_intlists *out);
/* Write "a b c\n" per list (atomically; "-" = stdout). */
void gh_intlists_write(const char *wxfilename, const gh_intlists *l);
void gh_intlists_free(gh_intlists *l);
void gh_intlists_push(gh_intlists *l, const int32_t *v, int32_t len);

/* Kaldi's roots file: sets[i] sorted; shared[i], split[i] 0/1.  Dies naming
 * the file and line on a bad line (not "shared"/"not-shared", empty, a
 * non-positive or repeated phone) or an empty file. */
typedef struct {
  gh_intlists sets;
  int32_t *shared;  /* [sets.n] */
  int32_t *split;   /* [sets.n] */
} gh_roots;
void gh_roots_read(const char *rxfilename, gh_roots *r);
void gh_roots_free(gh_roots *r);

/* Questions of one key: the initial question sets and Kaldi's refinement
 * options (num_iters 0: questions are used as they are). */
typedef struct {
  int32_t key;
  gh_intlists q;
  int32_t refine_iters, refine_top_n;
} gh_key_questions;

typedef struct {
  int32_t num_keys;
  gh_key_questions *keys;  /* [num_keys], sorted by key, unique */
} gh_questions;

/* NULL if the key has no questions. */
const gh_key_questions *gh_questions_for_key(const gh_questions *q, int32_t key);
/* Sets (replaces) the questions of a key; q is copied. */
void gh_questions_set(gh_questions *qs, int32_t key, const gh_intlists *q, int32_t refine_iters,
                      int32_t refine_top_n);
/* Read a .qst file; dies naming the file and offset on a bad token or an
 * unsorted question. */
void gh_questions_read(const char *rxfilename, gh_questions *q);
void gh_questions_write(const char *wxfilename, int binary, const gh_questions *q);
void gh_questions_free(gh_questions *q);

/* Sort each list, then sort the lists lexicographically (std::vector order)
 * and drop duplicates: Kaldi's SortAndUniq on questions.  Returns the
 * number of duplicate lists removed; *dup_phone_list is set to the index of
 * a list that holds a phone twice (-1 if none). */
int32_t gh_intlists_sort_uniq(gh_intlists *l, int32_t *dup_phone_list);

#endif
