/* dd.c -- double-double accumulators; see dd.h. */
#include "base/dd.h"

#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"

void gh_dd_acc_init(gh_dd_acc *a, size_t n) {
  a->n = n;
  a->hi = gh_calloc(n ? n : 1, sizeof(double));
  a->lo = gh_calloc(n ? n : 1, sizeof(double));
}

void gh_dd_acc_zero(gh_dd_acc *a) {
  memset(a->hi, 0, sizeof(double) * a->n);
  memset(a->lo, 0, sizeof(double) * a->n);
}

void gh_dd_acc_add(gh_dd_acc *a, const double *x) {
  double *hi = a->hi, *lo = a->lo;
  for (size_t i = 0; i < a->n; ++i) gh_dd_add(&hi[i], &lo[i], x[i]);
}

void gh_dd_acc_free(gh_dd_acc *a) {
  free(a->hi);
  free(a->lo);
  memset(a, 0, sizeof *a);
}
