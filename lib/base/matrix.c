/* matrix.c -- allocation helpers for the containers in matrix.h. */
#include "base/matrix.h"
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"

/* Allocates n zeroed elements of size sz, or NULL when n == 0. */
static void *zalloc(int64_t n, size_t sz, const char *what) {
  if (n < 0) gh_die("%s: negative size %lld", what, (long long)n);
  return n ? gh_calloc((size_t)n, sz) : NULL;
}

void gh_matrix_resize(gh_matrix *m, int32_t rows, int32_t cols) {
  gh_matrix_free(m);
  if (rows < 0 || cols < 0) gh_die("matrix resize: bad size %d x %d", rows, cols);
  m->data = zalloc((int64_t)rows * cols, sizeof(float), "matrix resize");
  m->rows = rows; m->cols = cols;
}

void gh_dmatrix_resize(gh_dmatrix *m, int32_t rows, int32_t cols) {
  gh_dmatrix_free(m);
  if (rows < 0 || cols < 0) gh_die("matrix resize: bad size %d x %d", rows, cols);
  m->data = zalloc((int64_t)rows * cols, sizeof(double), "matrix resize");
  m->rows = rows; m->cols = cols;
}

void gh_vector_resize(gh_vector *v, int32_t dim) {
  gh_vector_free(v);
  v->data = zalloc(dim, sizeof(float), "vector resize");
  v->dim = dim;
}

void gh_dvector_resize(gh_dvector *v, int32_t dim) {
  gh_dvector_free(v);
  v->data = zalloc(dim, sizeof(double), "vector resize");
  v->dim = dim;
}

void gh_ivector_resize(gh_ivector *v, int32_t dim) {
  gh_ivector_free(v);
  v->data = zalloc(dim, sizeof(int32_t), "vector resize");
  v->dim = dim;
}

void gh_matrix_free(gh_matrix *m) { free(m->data); memset(m, 0, sizeof *m); }
void gh_dmatrix_free(gh_dmatrix *m) { free(m->data); memset(m, 0, sizeof *m); }
void gh_vector_free(gh_vector *v) { free(v->data); memset(v, 0, sizeof *v); }
void gh_dvector_free(gh_dvector *v) { free(v->data); memset(v, 0, sizeof *v); }
void gh_ivector_free(gh_ivector *v) { free(v->data); memset(v, 0, sizeof *v); }

void gh_ivecvec_free(gh_ivecvec *v) {
  free(v->offsets); free(v->data);
  memset(v, 0, sizeof *v);
}

void gh_posterior_free(gh_posterior *p) {
  free(p->offsets); free(p->pdf); free(p->weight);
  memset(p, 0, sizeof *p);
}
