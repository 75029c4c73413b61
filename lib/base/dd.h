/* dd.h -- double-double sums whose rounded result does not depend on how
 * the terms are grouped (the trainers' results must not depend on the
 * number of ranks R).
 *
 * A value is an unevaluated pair hi + lo of doubles (|lo| <= ulp(hi)/2
 * after each step: ~106 significant bits).  Terms are added with Knuth's
 * TwoSum, which gives the exact rounding error of a double addition
 * (Knuth, TAOCP vol. 2, 4.2.2, Theorem B; Shewchuk 1997, "Adaptive
 * precision floating-point arithmetic", Two-Sum; the pair addition is the
 * accurate "IEEE" double-double add of Hida, Li and Bailey's QD library):
 *   s = a + b;  bb = s - a;  err = (a - (s - bb)) + (b - bb);  a + b = s + err exactly.
 * A trainer adds each fixed frame block's double contribution into a pair
 * (gh_dd_add), each rank's pairs are added over the ranks in rank order
 * (gh_comm_sum_dd), and the sum is rounded to double once, at the end
 * (hi + lo).  The error of the pair before that rounding is below about
 * k 2^-104 sum_i |x_i| for k terms, so the rounded result is the correctly
 * rounded exact sum of the terms -- the same bits however the blocks were
 * grouped into ranks and in whatever order they were added -- unless the
 * exact sum lies within that bound of a rounding boundary of double: a
 * near-tie (probability ~ k 2^-50 per value), or a cancellation with
 * k sum_i |x_i| / |sum_i x_i| beyond ~2^50, neither of which occupancies
 * and moments come near (test/unit/test_dd.c checks exactness against an
 * exact integer sum up to sum |x| / |sum| ~ 2^49).
 * Compile without -ffast-math / reassociation (the Makefile does). */
#ifndef GH_DD_H
#define GH_DD_H
#include <stddef.h>

/* s + e = a + b exactly, s = fl(a + b) (Knuth's TwoSum, no branch). */
static inline void gh_two_sum(double a, double b, double *s, double *e) {
  const double t = a + b, bb = t - a;
  *e = (a - (t - bb)) + (b - bb);
  *s = t;
}

/* (hi, lo) += x, renormalised. */
static inline void gh_dd_add(double *hi, double *lo, double x) {
  double s, e;
  gh_two_sum(*hi, x, &s, &e);
  e += *lo;
  gh_two_sum(s, e, hi, lo);
}

/* (hi, lo) += (bhi, blo): the accurate double-double addition (QD's
 * ieee_add: both parts' errors kept), renormalised. */
static inline void gh_dd_add_dd(double *hi, double *lo, double bhi, double blo) {
  double s1, s2, t1, t2;
  gh_two_sum(*hi, bhi, &s1, &s2);
  gh_two_sum(*lo, blo, &t1, &t2);
  s2 += t1;
  gh_two_sum(s1, s2, &s1, &s2);
  s2 += t2;
  gh_two_sum(s1, s2, hi, lo);
}

/* A host accumulator of n double-double values (hi[n], lo[n]). */
typedef struct {
  double *hi, *lo;
  size_t n;
} gh_dd_acc;

/* Allocates n zeroed values (n = 0 is fine). */
void gh_dd_acc_init(gh_dd_acc *a, size_t n);
/* Every value back to 0. */
void gh_dd_acc_zero(gh_dd_acc *a);
/* a[i] += x[i] (gh_dd_add), i < a->n: one block's contribution. */
void gh_dd_acc_add(gh_dd_acc *a, const double *x);
/* The sum over the ranks: gh_dd_acc_reduce (drivers/train/comm.h). */
void gh_dd_acc_free(gh_dd_acc *a);

#endif
