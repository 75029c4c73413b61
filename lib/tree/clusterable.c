/* clusterable.c -- Kaldi's GaussClusterable (see clusterable.h; Kaldi
 * tree/clusterable-classes.cc). */
#include "tree/clusterable.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"
#include "io/model-write.h"

gh_gclust *gh_gclust_new(int32_t dim, double var_floor) {
  if (dim < 0) gh_die("GaussClusterable: negative dimension %d", dim);
  gh_gclust *c = gh_calloc(1, sizeof(*c));
  c->dim = dim;
  c->var_floor = var_floor;
  c->x = gh_calloc((size_t)(dim > 0 ? 2 * dim : 2), sizeof(double));
  c->x2 = c->x + dim;
  return c;
}

gh_gclust *gh_gclust_copy(const gh_gclust *c) {
  gh_gclust *d = gh_gclust_new(c->dim, c->var_floor);
  d->count = c->count;
  memcpy(d->x, c->x, (size_t)c->dim * 2 * sizeof(double));
  return d;
}

void gh_gclust_free(gh_gclust *c) {
  if (!c) return;
  free(c->x);
  free(c);
}

void gh_gclust_set_zero(gh_gclust *c) {
  c->count = 0.0;
  memset(c->x, 0, (size_t)c->dim * 2 * sizeof(double));
}

void gh_gclust_add_stats(gh_gclust *c, const float *x, float weight) {
  double w = weight;
  c->count += w;
  if (weight == 1.0f) {
    for (int32_t d = 0; d < c->dim; ++d) {
      c->x[d] += (double)x[d];
      float sq = x[d] * x[d]; /* Kaldi's AddVec2 with alpha 1 squares in float */
      c->x2[d] += (double)sq;
    }
  } else {
    for (int32_t d = 0; d < c->dim; ++d) {
      c->x[d] += w * (double)x[d];
      c->x2[d] += w * (double)x[d] * (double)x[d];
    }
  }
}

static void check_dim(const gh_gclust *c, const gh_gclust *o) {
  if (c->dim != o->dim) gh_die("GaussClusterable: adding statistics of dimension %d to ones of dimension %d", o->dim, c->dim);
}

void gh_gclust_add(gh_gclust *c, const gh_gclust *o) {
  check_dim(c, o);
  c->count += o->count;
  for (int32_t d = 0; d < 2 * c->dim; ++d) c->x[d] += o->x[d];
}

void gh_gclust_sub(gh_gclust *c, const gh_gclust *o) {
  check_dim(c, o);
  c->count -= o->count;
  for (int32_t d = 0; d < 2 * c->dim; ++d) c->x[d] -= o->x[d];
}

void gh_gclust_scale(gh_gclust *c, double f) {
  c->count *= f;
  for (int32_t d = 0; d < 2 * c->dim; ++d) c->x[d] *= f;
}

/* The objective of (count, x, x2): Kaldi's loop, in the same order (the sum
 * of log variances after the -0.5 var/fvar terms). */
static float objf_of(double count, const double *x, const double *x2, int32_t dim, double var_floor) {
  if (count <= 0.0) {
    if (count < -0.1) gh_warn("GaussClusterable objective: count is negative (%g)", count);
    return 0.0f;
  }
  /* Kaldi's SumLog: a running product, its log taken when it leaves
   * [1e-10, 1e10] and at the end. */
  double per_frame = 0.0, sum_log = 0.0, prod = 1.0;
  for (int32_t d = 0; d < dim; ++d) {
    double mean = x[d] / count, var = x2[d] / count - mean * mean;
    double fvar = var < var_floor ? var_floor : var; /* std::max(var, floor) */
    per_frame += -0.5 * var / fvar;
    prod *= fvar;
    if (prod < 1.0e-10 || prod > 1.0e+10) {
      sum_log += log(prod);
      prod = 1.0;
    }
  }
  if (prod != 1.0) sum_log += log(prod);
  per_frame += -0.5 * (sum_log + 1.8378770664093454835606594728112 * dim);
  if (isnan(per_frame)) {
    gh_warn("GaussClusterable objective is NaN");
    return 0.0f;
  }
  return (float)(per_frame * count);
}

float gh_gclust_objf(const gh_gclust *c) { return objf_of(c->count, c->x, c->x2, c->dim, c->var_floor); }

static float objf_signed(const gh_gclust *c, const gh_gclust *o, double sign) {
  check_dim(c, o);
  int32_t n = 2 * c->dim;
  double stack[256], *t = n <= 256 ? stack : gh_malloc((size_t)n * sizeof(double));
  for (int32_t d = 0; d < n; ++d) t[d] = sign > 0 ? c->x[d] + o->x[d] : c->x[d] - o->x[d];
  float r = objf_of(sign > 0 ? c->count + o->count : c->count - o->count, t, t + c->dim, c->dim, c->var_floor);
  if (t != stack) free(t);
  return r;
}

float gh_gclust_objf_plus(const gh_gclust *c, const gh_gclust *o) { return objf_signed(c, o, 1.0); }
float gh_gclust_objf_minus(const gh_gclust *c, const gh_gclust *o) { return objf_signed(c, o, -1.0); }

float gh_gclust_distance(const gh_gclust *c, const gh_gclust *o) {
  float sum = gh_gclust_objf_plus(c, o);
  float ans = gh_gclust_objf(c) + gh_gclust_objf(o) - sum;
  if (ans < 0) {
    if (fabsf(ans) > 0.01f * (1.0f + fabsf(sum)))
      gh_warn("GaussClusterable distance: negative value %g", (double)ans);
    ans = 0;
  }
  return ans;
}

gh_gclust *gh_gclust_read(gh_istream *in, int binary) {
  gh_expect_token(in, binary, "GCL");
  double count = gh_read_double(in, binary);
  double var_floor = gh_read_double(in, binary);
  gh_dmatrix m = {0};
  gh_read_dmatrix(in, binary, &m);
  if (m.rows != 2) gh_istream_fail(in, "reading GaussClusterable: statistics matrix has %d rows, expected 2", m.rows);
  gh_gclust *c = gh_gclust_new(m.cols, var_floor);
  c->count = count;
  memcpy(c->x, m.data, (size_t)m.cols * 2 * sizeof(double));
  gh_dmatrix_free(&m);
  return c;
}

void gh_gclust_write(gh_ostream *out, int binary, const gh_gclust *c) {
  gh_write_token(out, binary, "GCL");
  gh_model_write_double(out, binary, c->count);
  gh_model_write_double(out, binary, c->var_floor);
  if (binary) {
    gh_dmatrix m = {2, c->dim, c->x};
    gh_write_dmatrix(out, 1, &m);
    return;
  }
  /* Kaldi's text matrix layout, each value the shortest text that reads
   * back to the same double (so text converts back to binary exactly) */
  FILE *fp = gh_ostream_fp(out);
  if (c->dim == 0) {
    fputs(" [ ]\n", fp);
    return;
  }
  fputs(" [", fp);
  for (int r = 0; r < 2; ++r) {
    fputs("\n  ", fp);
    for (int32_t d = 0; d < c->dim; ++d) gh_model_write_double(out, 0, c->x[r * c->dim + d]);
  }
  fputs("]\n", fp);
}
