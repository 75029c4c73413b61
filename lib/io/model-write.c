/* model-write.c -- Kaldi's text and binary writers of model and accumulator
 * values (floats, doubles, vectors, matrices, packed symmetric matrices),
 * shared by the GMM and transition-model writers.  See model-write.h. */
#include "io/model-write.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Shortest "%.Ng" (N >= 7) that reads back to the same float / double. */
static void put_float_rt(FILE *fp, float v) {
  char buf[64];
  for (int prec = 7; prec <= 9; ++prec) {
    snprintf(buf, sizeof buf, "%.*g", prec, (double)v);
    if (prec == 9 || !isfinite(v) || strtof(buf, NULL) == v) break;
  }
  fputs(buf, fp);
  fputc(' ', fp);
}

static void put_double_rt(FILE *fp, double v) {
  char buf[64];
  for (int prec = 7; prec <= 17; ++prec) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (prec == 17 || !isfinite(v) || strtod(buf, NULL) == v) break;
  }
  fputs(buf, fp);
  fputc(' ', fp);
}

void gh_model_write_float(gh_ostream *out, int binary, float v) {
  if (binary) gh_write_float(out, 1, v);
  else put_float_rt(gh_ostream_fp(out), v);
}

void gh_model_write_double(gh_ostream *out, int binary, double v) {
  if (binary) gh_write_double(out, 1, v);
  else put_double_rt(gh_ostream_fp(out), v);
}

void gh_model_write_vector(gh_ostream *out, int binary, int32_t n, const float *v) {
  if (binary) {
    gh_vector t = {n, (float *)v};
    gh_write_vector(out, 1, &t);
    return;
  }
  FILE *fp = gh_ostream_fp(out);
  fputs(" [ ", fp);
  for (int32_t i = 0; i < n; ++i) put_float_rt(fp, v[i]);
  fputs("]\n", fp);
}

void gh_model_write_dvector(gh_ostream *out, int binary, int32_t n, const double *v) {
  if (binary) {
    gh_dvector t = {n, (double *)v};
    gh_write_dvector(out, 1, &t);
    return;
  }
  FILE *fp = gh_ostream_fp(out);
  fputs(" [ ", fp);
  for (int32_t i = 0; i < n; ++i) put_double_rt(fp, v[i]);
  fputs("]\n", fp);
}

void gh_model_write_matrix(gh_ostream *out, int binary, int32_t rows, int32_t cols, const float *m) {
  if (binary) {
    gh_matrix t = {rows, cols, (float *)m};
    gh_write_matrix(out, 1, &t);
    return;
  }
  FILE *fp = gh_ostream_fp(out);
  if (rows == 0 || cols == 0) {
    fputs(" [ ]\n", fp);
    return;
  }
  fputs(" [", fp);
  for (int64_t r = 0; r < rows; ++r) {
    fputs("\n  ", fp);
    for (int64_t c = 0; c < cols; ++c) put_float_rt(fp, m[r * cols + c]);
  }
  fputs("]\n", fp);
}

void gh_model_write_packed(gh_ostream *out, int binary, int32_t n, const float *p) {
  if (binary) {
    gh_write_packed(out, 1, n, p);
    return;
  }
  FILE *fp = gh_ostream_fp(out);
  if (n == 0) {
    fputs("[ ]\n", fp);
    return;
  }
  fputs("[\n", fp);
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t j = 0; j <= i; ++j) put_float_rt(fp, p[gh_packed_index(i, j)]);
    fputs(i + 1 < n ? "\n" : "]\n", fp);
  }
}
