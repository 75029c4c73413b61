/* clusterable.h -- Kaldi's GaussClusterable (tree/clusterable-classes.h):
 * the sufficient statistics of one diagonal Gaussian (count, sum of x, sum
 * of x squared, all float64) that tree building clusters.
 *
 * Objective (Kaldi GaussClusterable::Objf): the total log-likelihood, natural
 * log, of the data under the ML Gaussian with each variance floored at
 * var_floor:  count * sum_d -0.5 (log(2 pi) + log fvar_d + var_d / fvar_d),
 * var_d = x2_d / count - (x_d / count)^2, fvar_d = max(var_d, var_floor).
 * It is 0 for count <= 0.  As in Kaldi the value is returned as a float
 * (Kaldi's BaseFloat), so comparisons and sums of objectives round alike.
 *
 * On disk (Kaldi GaussClusterable::Write):
 *   GCL <count double> <var_floor double> <2 x dim double matrix: Σx; Σx²>
 */
#ifndef GH_CLUSTERABLE_H
#define GH_CLUSTERABLE_H
#include <stdint.h>
#include "io/kaldi-io.h"

typedef struct {
  int32_t dim;       /* feature dimension */
  double count;      /* total weight (frames) */
  double var_floor;  /* variance floor of the objective (Kaldi default 0.01f) */
  double *x;         /* [dim] Σ w x */
  double *x2;        /* [dim] Σ w x^2 */
} gh_gclust;

/* A new, zero statistics object of dimension dim >= 0. */
gh_gclust *gh_gclust_new(int32_t dim, double var_floor);
gh_gclust *gh_gclust_copy(const gh_gclust *c);
void gh_gclust_free(gh_gclust *c);
void gh_gclust_set_zero(gh_gclust *c);
/* Kaldi AddStats: one frame x[dim] (float, as Kaldi's features) with weight.
 * Bit-compatible with Kaldi: for weight 1, Σx += (double)x and
 * Σx² += (double)(float)(x * x) (Kaldi's AddVec2 squares in float when the
 * weight is 1); otherwise both in double with the weight. */
void gh_gclust_add_stats(gh_gclust *c, const float *x, float weight);
/* c += o, c -= o (dimensions must match: dies otherwise, naming "what"). */
void gh_gclust_add(gh_gclust *c, const gh_gclust *o);
void gh_gclust_sub(gh_gclust *c, const gh_gclust *o);
void gh_gclust_scale(gh_gclust *c, double f);
/* Objective as above (float, total over the count; natural log). */
float gh_gclust_objf(const gh_gclust *c);
/* Objf(c + o) without changing c (Kaldi ObjfPlus); Objf(c - o) (ObjfMinus). */
float gh_gclust_objf_plus(const gh_gclust *c, const gh_gclust *o);
float gh_gclust_objf_minus(const gh_gclust *c, const gh_gclust *o);
/* Kaldi Distance: Objf(c) + Objf(o) - Objf(c + o), clamped at 0 (>= 0: the
 * objective lost by merging the two). */
float gh_gclust_distance(const gh_gclust *c, const gh_gclust *o);

/* Read "GCL ..." (the token included); dies via gh_istream_fail on a wrong
 * token, a matrix that is not 2 rows, or a premature end. */
gh_gclust *gh_gclust_read(gh_istream *in, int binary);
void gh_gclust_write(gh_ostream *out, int binary, const gh_gclust *c);

#endif
