/* strmap.h -- a string -> int32 hash map (open addressing, linear probing,
 * at most half full; FNV-1a of the key, kept beside it, so that a probe
 * compares strings only on equal hashes and growing never hashes again):
 * the table readers' key index (lib/io/table.c) and hmm-train's distinct
 * transcripts.  Keys are copied.
 * Zero-initialise a gh_strmap before use ({0}); errors: dies (out of memory). */
#ifndef GH_STRMAP_H
#define GH_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  char **k;
  uint64_t *h; /* the keys' hashes */
  int32_t *v;
  size_t cap, n;
} gh_strmap;

/* The value of key k, or -1 if k is absent. */
int32_t gh_strmap_get(const gh_strmap *h, const char *k);
/* Inserts k -> v (k copied); returns 0, changing nothing, if k was already there. */
int gh_strmap_put(gh_strmap *h, const char *k, int32_t v);
/* Frees the keys and the table; h is empty (zeroed) after. */
void gh_strmap_free(gh_strmap *h);

#endif
