/* frame-pdf.c -- the growable pair buffer; see frame-pdf.h. */
#include "gmm/frame-pdf.h"

#include <stdint.h>

#include "base/gh-base.h"

void gh_pair_buf_reserve(gh_pair_buf *p, int64_t more) {
  if (more < 0 || p->n > INT64_MAX / 2 - more) gh_die("pair buffer: %lld + %lld pairs: too many", (long long)p->n,
                                                       (long long)more);
  if (p->n + more <= p->cap) return;
  int64_t cap = p->cap ? p->cap : 65536;
  while (cap < p->n + more) cap *= 2;
  p->v = gh_realloc(p->v, (size_t)cap * sizeof(gh_frame_pdf));
  p->cap = cap;
}
