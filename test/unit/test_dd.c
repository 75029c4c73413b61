/* test_dd.c -- lib/base/dd.h: the double-double block sums of the
 * distributed trainers.  Reference: the exact sum of the terms, computed
 * in 128-bit integers (every term is an integer multiple of 2^-40 below
 * 2^80, so the sum of up to 2^20 terms is exact) and rounded to double
 * once (libgcc's __int128 -> double conversion rounds to nearest even).
 * Checked: the rounded double-double sum equals that correctly rounded
 * exact sum, bit for bit, for every order of the terms (permutations) and
 * every grouping of the blocks into R "ranks" (each group summed in
 * double-double, the groups' pairs added in rank order: gh_dd_add_dd), on
 * data with huge cancellation (sum |x| / |sum| up to ~2^49), where the
 * plain double sum differs between orders; sets past dd.h's bound
 * (k sum |x| / |sum| > 2^50) are counted, not checked.  The comm.h reduction of the pairs
 * over real MPI ranks is tested in test_comm.c. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gh-test.h"
#include "train/comm.h"
#include "base/dd.h"

static uint64_t rng_state = 0x243f6a8885a308d3ULL;
static uint64_t next_u64(void) {
  uint64_t s = rng_state;
  s ^= s << 13; s ^= s >> 7; s ^= s << 17;
  return rng_state = s;
}

/* k random terms m 2^(e - 40), m an integer of up to 53 bits, e in
 * [0, 66]: magnitudes 2^-40 .. 2^79, sums below 2^100; every big term is
 * followed by its near-negative (-m + a little, same e), so the sum is
 * tiny next to sum |x| (cancel: all big terms are paired; sum |x| / |sum|
 * up to ~2^50). */
static void make_terms(double *x, __int128 *exact, int k, int cancel) {
  __int128 s = 0;
  int64_t pm = 0;
  int pe = 0;
  for (int i = 0; i < k; ++i) {
    int64_t m;
    int e;
    if (i % 4 == 1) { /* the partner of the previous term */
      m = -pm + (int64_t)(next_u64() % 1024) - 512;
      e = pe;
    } else {
      m = (int64_t)(next_u64() >> 11) * ((next_u64() & 1) ? 1 : -1);
      e = (int)(next_u64() % 67);
      if (i % 4 == 2 || (cancel && i % 4 == 3)) e = (int)(next_u64() % 8); /* small ones */
    }
    x[i] = ldexp((double)m, e - 40);
    s += (__int128)m * ((__int128)1 << e);
    pm = m;
    pe = e;
  }
  *exact = s;
}

static double round_exact(__int128 s) { return ldexp((double)s, -40); }

/* Sum of x[order[i]] over blocks of the permuted sequence grouped into R
 * contiguous groups (cut points at i R / n): each group in double-double,
 * then the groups' pairs in rank order, rounded once. */
static double grouped(const double *x, const int *order, int n, int R) {
  double hi = 0, lo = 0;
  for (int r = 0; r < R; ++r) {
    double h = 0, l = 0;
    for (int i = (int)((int64_t)n * r / R); i < (int)((int64_t)n * (r + 1) / R); ++i) gh_dd_add(&h, &l, x[order[i]]);
    if (r == 0) { hi = h; lo = l; }
    else gh_dd_add_dd(&hi, &lo, h, l);
  }
  return hi + lo;
}

static void shuffle(int *o, int n) {
  for (int i = n - 1; i > 0; --i) {
    int j = (int)(next_u64() % (uint64_t)(i + 1)), t = o[i];
    o[i] = o[j]; o[j] = t;
  }
}

int main(void) {
  /* TwoSum is exact */
  {
    double s, e;
    gh_two_sum(1.0, 0x1p-60, &s, &e);
    GH_TEST_OK(s == 1.0 && e == 0x1p-60, "TwoSum(1, 2^-60) = (1, 2^-60)");
    gh_two_sum(0x1p60, -0x1p60 + 0x1p8, &s, &e);
    GH_TEST_OK(s == 0x1p8 && e == 0.0, "TwoSum of nearly cancelling terms is exact");
  }
  const int sizes[] = {1, 2, 3, 7, 64, 1000, 20000};
  int all_exact = 1, all_same = 1, plain_differs = 0;
  double worst = 0; /* the largest cancellation sum |x| / |sum x| tested */
  int beyond = 0;    /* sets past dd.h's bound (not checked) */
  for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; ++t) {
    const int n = sizes[t];
    for (int trial = 0; trial < 20; ++trial) {
      double *x = malloc(sizeof(double) * (size_t)n);
      int *order = malloc(sizeof(int) * (size_t)n);
      __int128 ex;
      make_terms(x, &ex, n, trial % 2);
      const double want = round_exact(ex);
      for (int i = 0; i < n; ++i) order[i] = i;
      double plain0 = 0, mag = 0;
      for (int i = 0; i < n; ++i) mag += fabs(x[i]);
      /* dd.h's bound: exact rounding guaranteed while k sum|x| / |sum| < ~2^50 */
      if (want == 0 || n * (mag / fabs(want)) > 0x1p50) {
        ++beyond;
        free(x); free(order);
        continue;
      }
      if (mag / fabs(want) > worst) worst = mag / fabs(want);
      for (int i = 0; i < n; ++i) plain0 += x[i];
      for (int p = 0; p < 6; ++p) {
        if (p) shuffle(order, n);
        double plain = 0;
        for (int i = 0; i < n; ++i) plain += x[order[i]];
        if (plain != plain0) plain_differs = 1;
        for (int R = 1; R <= 7; ++R) {
          const double got = grouped(x, order, n, R);
          if (memcmp(&got, &want, sizeof got)) {
            if (all_exact)
              printf("# n %d trial %d perm %d R %d: got %a, exact sum rounds to %a\n", n, trial, p, R, got, want);
            all_exact = 0;
          }
          const double first = grouped(x, order, n, 1);
          if (memcmp(&got, &first, sizeof got)) all_same = 0;
        }
      }
      free(x); free(order);
    }
  }
  GH_TEST_OK(all_exact, "rounded double-double sums equal the correctly rounded exact sum (7 sizes x 20 sets x 6 orders x R = 1..7)");
  GH_TEST_OK(worst > 0x1p36 && beyond < 40, "the data cancel hugely: sum |x| / |sum x| up to %.3g (%d of 140 sets past the bound)",
             worst, beyond);
  GH_TEST_OK(all_same, "every order and every grouping into R = 1..7 ranks gives the same bits");
  GH_TEST_OK(plain_differs, "the plain double sum of the same data does depend on the order (the test can fail)");

  /* gh_dd_acc: blocks of vectors, host accumulator, reduce without MPI */
  {
    const int nb = 37, len = 513;
    double *blk = malloc(sizeof(double) * (size_t)nb * len), *out = malloc(sizeof(double) * len);
    __int128 *ex = calloc((size_t)len, sizeof(__int128));
    double *col = malloc(sizeof(double) * nb);
    for (int j = 0; j < len; ++j) {
      make_terms(col, &ex[j], nb, j % 2);
      for (int k = 0; k < nb; ++k) blk[(size_t)k * len + j] = col[k];
    }
    gh_dd_acc a;
    gh_dd_acc_init(&a, (size_t)len);
    for (int k = 0; k < nb; ++k) gh_dd_acc_add(&a, blk + (size_t)k * len);
    gh_dd_acc_reduce(&a, NULL, out);
    int ok = 1;
    for (int j = 0; j < len; ++j) {
      const double w = round_exact(ex[j]);
      ok &= !memcmp(&out[j], &w, sizeof w);
    }
    GH_TEST_OK(ok, "gh_dd_acc: %d blocks of %d values, each value the correctly rounded exact sum", nb, len);
    gh_dd_acc_zero(&a);
    gh_dd_acc_reduce(&a, NULL, out);
    ok = 1;
    for (int j = 0; j < len; ++j) ok &= out[j] == 0.0;
    GH_TEST_OK(ok, "gh_dd_acc_zero: all values 0");
    gh_dd_acc_free(&a);
    free(blk); free(out); free(ex); free(col);
  }
  return gh_test_done();
}
