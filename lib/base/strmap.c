/* strmap.c -- string -> int32 hash map (strmap.h). */
#include "base/strmap.h"
#include "base/gh-base.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(const char *s) { return gh_hash64(s, strlen(s), GH_HASH64_INIT); }

/* Slot of key k of hash hk (occupied by k, or the empty slot where it would go). */
static size_t slot_of(const gh_strmap *h, const char *k, uint64_t hk) {
  size_t i = hk & (h->cap - 1);
  while (h->k[i] && (h->h[i] != hk || strcmp(h->k[i], k))) i = (i + 1) & (h->cap - 1);
  return i;
}

int32_t gh_strmap_get(const gh_strmap *h, const char *k) {
  if (!h->cap) return -1;
  size_t i = slot_of(h, k, hash_str(k));
  return h->k[i] ? h->v[i] : -1;
}

int gh_strmap_put(gh_strmap *h, const char *k, int32_t v) {
  if (2 * (h->n + 1) > h->cap) {
    gh_strmap old = *h;
    h->cap = old.cap ? 2 * old.cap : 64;
    h->k = gh_calloc(h->cap, sizeof *h->k);
    h->h = gh_calloc(h->cap, sizeof *h->h);
    h->v = gh_calloc(h->cap, sizeof *h->v);
    for (size_t i = 0; i < old.cap; i++)
      if (old.k[i]) { /* distinct keys: the first empty slot from the hash's */
        size_t j = old.h[i] & (h->cap - 1);
        while (h->k[j]) j = (j + 1) & (h->cap - 1);
        h->k[j] = old.k[i];
        h->h[j] = old.h[i];
        h->v[j] = old.v[i];
      }
    free(old.k);
    free(old.h);
    free(old.v);
  }
  const uint64_t hk = hash_str(k);
  size_t i = slot_of(h, k, hk);
  if (h->k[i]) return 0;
  h->k[i] = gh_strdup(k);
  h->h[i] = hk;
  h->v[i] = v;
  h->n++;
  return 1;
}

void gh_strmap_free(gh_strmap *h) {
  for (size_t i = 0; i < h->cap; i++) free(h->k[i]);
  free(h->k);
  free(h->h);
  free(h->v);
  memset(h, 0, sizeof *h);
}
